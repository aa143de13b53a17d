//! Sender recovery (secp256k1 public-key recovery from each transaction's signature).
//!
//! It costs about as much CPU as executing the transaction, so where it runs matters:
//! the parallel executor recovers each sender in the transaction's own worker (spread
//! over every core, overlapped with execution); elsewhere it runs before execution,
//! either on the rayon pool or on the calling thread.

use crate::error::ExecutionError;
use alloy_consensus::transaction::SignerRecoverable;
use alloy_primitives::Address;
use ethrex_common::Transaction;
use rayon::prelude::*;

/// The sender of transaction `index` of a block, recovered from its signature.
pub fn recover_sender(index: usize, tx: &Transaction) -> Result<Address, ExecutionError> {
    tx.recover_signer()
        .map_err(|e| ExecutionError::InvalidSignature { index, reason: e.to_string() })
}

/// Where `recover_senders` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovery {
    /// Spread over the rayon pool.
    Pool,
    /// On the calling thread, one after another (the single-core baseline).
    CurrentThread,
}

/// Every sender, in order; the error names the first transaction that fails.
pub fn recover_senders(
    transactions: &[Transaction],
    on: Recovery,
) -> Result<Vec<Address>, ExecutionError> {
    if on == Recovery::Pool {
        transactions.par_iter().enumerate().map(|(i, tx)| recover_sender(i, tx)).collect()
    } else {
        transactions.iter().enumerate().map(|(i, tx)| recover_sender(i, tx)).collect()
    }
}
