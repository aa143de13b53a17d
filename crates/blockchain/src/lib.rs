//! Block validation and the import pipeline: header and body rules, BAL shape checks,
//! execution through `ethrex-vm`, result checks, state root, and the atomic commit.

pub mod builder;
pub mod chain_file;
pub mod error;
pub mod fork_choice;
pub mod genesis;
pub mod import;
pub mod state_root;
pub mod system_contracts;
pub mod validation;

pub use builder::{BuiltBlock, PayloadAttributes};
pub use error::BlockError;
pub use import::{BlockTimings, Blockchain, ExecutionPath, ImportOptions, ImportOutcome, BAL_PARALLEL_TX_THRESHOLD};
