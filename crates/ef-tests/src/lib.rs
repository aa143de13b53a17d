//! Runner for the Ethereum Foundation's `blockchain_test` fixtures: each test goes
//! through the same import pipeline as every other block, on a fresh store.

pub mod exceptions;
pub mod fixture;
pub mod report;
pub mod runner;

pub use report::report;
pub use runner::{
    counts_per_file, find_fixture_files, run_file, valid_chain, CaseResult, Counts, Mode, Outcome,
    RunOptions,
};
