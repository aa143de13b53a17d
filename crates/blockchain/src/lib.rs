#![doc = include_str!("../README.md")]

mod batch;
pub mod builder;
pub mod chain_file;
pub mod consensus;
mod crosscheck;
pub mod error;
pub mod extension;
pub mod fork_choice;
pub mod genesis;
pub mod import;
mod metrics;
mod profile;
pub mod state_root;
pub mod system_contracts;
pub mod validation;

pub use batch::BatchError;
pub use builder::{BuiltBlock, PayloadAttributes, PowAttributes};
pub use error::{BlockError, InvalidBlock, NodeFault, OmmerError, StorageFault};
pub use extension::{ExecutionStrategy, ImportObserver, StrategyInput, StrategyOutput};
pub use import::{parallel_pays, PARALLEL_OVERHEAD_GAS};
pub use import::{
    BlockTimings, Blockchain, Cores, ExecutionPath, ImportOptions, ImportOutcome, Prefetch,
    StateChanges, Threshold,
};
pub use profile::BlockProfile;
