//! Where a parallel block's import spent its time beside the stage timings: the
//! execution's pieces (`ethrex_vm::ParallelProfile`) and the two tasks that run beside
//! them. `ethrex cores-model` schedules these pieces on N simulated cores.

use ethrex_vm::ParallelProfile;
use std::time::Duration;

/// The pieces of one block's import on the parallel path, each timed on its thread.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BlockProfile {
    /// Execution's pieces: the BAL's preparation, the pre-block calls, every
    /// transaction, the verdicts and the ordered commit.
    pub execution: ParallelProfile,
    /// The state root and its update from the BAL (and the BAL prefetch, if on), beside
    /// the transactions; its own work is spread over the pool (per account, then per
    /// subtree of the account trie).
    pub merkle: Duration,
    /// The receipts' root and bloom and the block's batch, beside the ordered commit.
    pub receipts: Duration,
}
