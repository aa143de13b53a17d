//! Tests of the eth module.
