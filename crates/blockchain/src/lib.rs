#![doc = include_str!("../README.md")]

pub mod builder;
pub mod chain_file;
mod design;
pub mod error;
pub mod filler;
pub mod fork_choice;
pub mod genesis;
pub mod import;
mod metrics;
pub mod state_root;
pub mod system_contracts;
pub mod validation;

pub use builder::{BuiltBlock, PayloadAttributes};
pub use error::{BlockError, StorageFault};
pub use import::{parallel_pays, PARALLEL_OVERHEAD_GAS};
pub use import::{
    BatchError, BlockTimings, Blockchain, ExecutionPath, ImportOptions, ImportOutcome, Prefetch,
    StateChanges,
};
