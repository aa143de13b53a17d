//! Runner for the Ethereum Foundation's `blockchain_test` fixtures: each test goes
//! through the same import pipeline as every other block, on a fresh store.

pub mod fixture;
pub mod runner;

pub use runner::{find_fixture_files, run_file, CaseResult, Mode, RunOptions};
