//! `ethrex import-bench` and the stress-fixture generator: a mainnet-shaped workload,
//! the chain files (`geth export` format + concatenated BALs + genesis + EF fixture), and
//! a bench that imports them through the production pipeline mode by mode.

pub mod bench;
pub mod ef_fixture;
pub mod generate;
pub mod plot;
pub mod report;
pub mod workload;
