//! Block execution on revm: the glue between our store and the EVM (fork rules,
//! transaction and block environments, system calls, requests) and two executors that
//! are peers: the sequential one, which also builds the block-level access list
//! (EIP-7928) as it runs, and the parallel one, driven by the header's BAL.
//!
//! Shared by both executors: `evm` (the one place an EVM is built), `system` (the
//! pre- and post-block stages), `gas` (gas accounting), `output` (receipts and the
//! final state flattened into account changes) and `error`.

mod bal_index;
mod batch;
mod cache;
pub mod call;
mod db;
pub mod deadline;
mod env;
pub mod error;
mod evm;
mod gas;
mod output;
mod parallel;
mod profile;
pub mod proof_of_work;
mod requests;
mod senders;
mod sequential;
pub mod simulate;
pub mod struct_log_budget;
mod system;
pub mod trace;
pub mod warmer;

pub use batch::{BatchLayers, BatchView};
pub use cache::{CacheStats, CachingDb};
pub use db::{StateSource, StoreDb, StoreDbError};
pub use env::{intrinsic_gas, spec_id};
pub use error::ExecutionError;
pub use output::{AccountChange, BlockExecutionOutput, TxAccess};
pub use parallel::{
    run_transactions_parallel, run_transactions_parallel_on, BalUnusable, ExecutedTransactions,
    ParallelRun, Schedule, TxOverlay, TxPreState, UnlistedReads,
};
pub use profile::{ParallelProfile, TxCost};
pub use senders::{
    cached_senders, install_sender_cache, recover_sender, recover_senders, remember_sender,
    Recovery,
};
pub use sequential::{
    execute_block_sequential, execute_block_sequential_recording,
    execute_block_sequential_with_roots, IntermediateRoot,
};
