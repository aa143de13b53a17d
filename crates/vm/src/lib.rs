//! Block execution on revm: the glue between our store and the EVM (fork rules,
//! transaction and block environments, system calls, requests) and the sequential
//! executor, which also builds the block-level access list (EIP-7928) as it runs.

pub mod bal_index;
pub mod cache;
pub mod db;
pub mod env;
pub mod error;
pub mod output;
pub mod parallel;
pub mod senders;
pub mod sequential;
pub mod system;
pub mod warmer;

pub use db::{StoreDb, StoreDbError};
pub use error::ExecutionError;
pub use output::{AccountChange, BlockExecutionOutput};
pub use cache::CachingDb;
pub use parallel::{execute_block_parallel, run_transactions_parallel, ExecutedTransactions, ParallelOutcome, ParallelRun};
pub use senders::{recover_sender, recover_senders};
pub use sequential::execute_block_sequential;
