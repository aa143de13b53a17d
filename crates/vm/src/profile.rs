//! Where the parallel path's time went in one block, piece by piece, each piece timed on
//! the thread that ran it.
//!
//! The import records it on every parallel block (a few `Instant`s and one entry per
//! transaction): it is what the many-core model (`ethrex cores-model`) schedules on N
//! simulated cores, so each piece is one unit of work that runs on one thread.

use std::time::Duration;

/// The pieces of one block's parallel execution.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParallelProfile {
    /// The header BAL prepared for the workers (its form checked, revm's form and the
    /// per-index writes built); beside `pre_block`.
    pub prepare_bal: Duration,
    /// The pre-block system calls; beside `prepare_bal`.
    pub pre_block: Duration,
    /// Each transaction's run on its worker (sender recovery, execution, its writes
    /// checked against the BAL), in block order, with its gas limit (what the
    /// longest-first schedule orders by).
    pub txs: Vec<TxCost>,
    /// The verdicts in block order after the workers joined (one thread).
    pub verdicts: Duration,
    /// The ordered commit of every transaction's changes and the post-block stage (one
    /// thread).
    pub commit: Duration,
}

/// One transaction's run on its worker.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TxCost {
    /// Its gas limit.
    pub gas_limit: u64,
    /// How long its worker spent on it.
    pub took: Duration,
}
