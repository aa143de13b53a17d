//! `ethrex import-bench` and the stress-fixture generator.

pub mod workload;
