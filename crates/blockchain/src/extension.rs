//! The import's extension points: small traits the core owns, through which other code
//! plugs into the pipeline without the pipeline knowing it.
//!
//! - [`ExecutionStrategy`]: executes a block another way (from another access list, say);
//!   everything else the import checks is still checked, so a strategy can change how
//!   fast a block imports, never whether it does.
//! - [`ImportObserver`]: sees every imported block's outcome (per-stage timings) and its
//!   executed state changes, after the commit.
//! - [`ethrex_vm::StateSource`]: where execution reads the parent's accounts and storage
//!   (`Blockchain::with_state_source`).

use crate::error::BlockError;
use crate::import::{ImportOutcome, StateChanges};
use crate::Blockchain;
use alloy_primitives::Address;
use ethrex_common::{Block, Header};
use ethrex_vm::{BlockExecutionOutput, CachingDb, StoreDb};
use std::time::Duration;

/// What an execution strategy is given: the chain, the block and the parent's state.
pub struct StrategyInput<'a> {
    /// The chain importing the block (its store, config, options and I/O pool).
    pub chain: &'a Blockchain,
    /// The parent's state, as every stage of this block reads it.
    pub cache: &'a CachingDb<StoreDb>,
    /// The block, whose header and body already passed the header checks.
    pub block: &'a Block,
    /// The block's parent (the head).
    pub parent: &'a Header,
}

/// What an execution strategy produced. The output is then checked exactly as the
/// built-in paths' is (gas, receipts, bloom, requests, the header BAL, the state root).
pub struct StrategyOutput {
    /// The transactions' senders, in block order.
    pub senders: Vec<Address>,
    /// The block's execution output, with the BAL it built.
    pub output: BlockExecutionOutput,
    /// The strategy's own execution failed and it executed the block sequentially
    /// instead (logged as `ExecutionPath::SequentialBalUnusable`).
    pub fell_back: bool,
    /// Time spent before execution (reads, seeding).
    pub warmer: Duration,
    /// Execution.
    pub exec: Duration,
    /// The strategy's own checks after execution.
    pub validate: Duration,
}

/// Executes a block in place of the import's own choice of path
/// (`Blockchain::import_block_with`). Errors that are verdicts on the block must be
/// `BlockError::Invalid` (a strategy's own rejection: `InvalidBlock::Strategy`); its own
/// failures `BlockError::Fault`.
pub trait ExecutionStrategy: Sync {
    /// Executes `input.block` on `input.cache`.
    fn execute(&self, input: StrategyInput<'_>) -> Result<StrategyOutput, BlockError>;
}

/// Sees every block the chain imports, once it is committed.
pub trait ImportObserver: Send + Sync {
    /// `outcome` is the import's result (its stage timings included); `changes` the state
    /// changes its root was computed from. Called after the timings were taken.
    fn block_imported(&self, outcome: &ImportOutcome, changes: &StateChanges);
}
