//! placeholder, filled by the eth work
