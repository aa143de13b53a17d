//! Sender recovery (secp256k1 public-key recovery from each transaction's signature).
//!
//! It costs about as much CPU as executing the transaction, so where it runs matters:
//! the parallel executor recovers each sender in the transaction's own worker (spread
//! over every core, overlapped with execution); elsewhere it runs before execution,
//! either on the rayon pool or on the calling thread.
//!
//! A node's transaction pool has recovered the sender of most transactions a new block
//! carries before the block arrives. `SenderCache` keeps those (transaction hash ->
//! sender, bounded) and recovery looks there first. The hash commits to the signature and
//! everything it signs, so a cached sender is exactly what recovery would compute. There
//! is one cache per process, like a metrics registry: the node installs it
//! (`install_sender_cache`), the pool fills it (`remember_sender`), every recovery reads
//! it; a process that never installs it (tests, the EF runner, the bench by default)
//! recovers every sender.

use crate::error::ExecutionError;
use alloy_consensus::transaction::SignerRecoverable;
use alloy_primitives::{Address, B256};
use dashmap::DashMap;
use ethrex_common::Transaction;
use parking_lot::Mutex;
use rayon::prelude::*;
use std::collections::VecDeque;
use std::sync::OnceLock;

/// Senders recovered before their block arrived, by transaction hash; the oldest go
/// first once `capacity` are held.
pub(crate) struct SenderCache {
    senders: DashMap<B256, Address>,
    order: Mutex<VecDeque<B256>>,
    capacity: usize,
}

static SENDER_CACHE: OnceLock<SenderCache> = OnceLock::new();

/// Installs the process's sender cache, holding up to `capacity` senders (the first call
/// decides; later ones change nothing).
pub fn install_sender_cache(capacity: usize) {
    let _ = SENDER_CACHE.set(SenderCache {
        senders: DashMap::with_capacity(capacity.min(1 << 16)),
        order: Mutex::new(VecDeque::new()),
        capacity: capacity.max(1),
    });
}

/// Remembers that transaction `hash` was signed by `sender` (a no-op without a cache).
pub fn remember_sender(hash: B256, sender: Address) {
    let Some(cache) = SENDER_CACHE.get() else { return };
    if cache.senders.insert(hash, sender).is_some() {
        return;
    }
    let mut order = cache.order.lock();
    order.push_back(hash);
    while order.len() > cache.capacity {
        if let Some(oldest) = order.pop_front() {
            cache.senders.remove(&oldest);
        }
    }
}

/// How many senders the process's cache holds (0 without one).
pub fn cached_senders() -> usize {
    SENDER_CACHE.get().map_or(0, |c| c.senders.len())
}

/// The sender of transaction `index` of a block: from the sender cache if the pool saw
/// the transaction, else recovered from its signature.
pub fn recover_sender(index: usize, tx: &Transaction) -> Result<Address, ExecutionError> {
    if let Some(sender) = SENDER_CACHE.get().and_then(|c| c.senders.get(tx.tx_hash()).map(|s| *s)) {
        return Ok(sender);
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_consensus::{SignableTransaction, TxLegacy};
    use alloy_primitives::Signature;

    fn tx(nonce: u64) -> Transaction {
        let sig =
            Signature::new(alloy_primitives::U256::from(1), alloy_primitives::U256::from(2), false);
        Transaction::from(TxLegacy { nonce, ..Default::default() }.into_signed(sig))
    }

    #[test]
    fn recovery_takes_a_remembered_sender_and_the_cache_keeps_only_its_capacity() {
        install_sender_cache(4);
        // Whatever its made-up signature recovers (if anything), it is not this address.
        let unrecoverable = tx(0);
        let remembered = Address::repeat_byte(9);
        assert_ne!(recover_sender(0, &unrecoverable).ok(), Some(remembered));
        remember_sender(*unrecoverable.tx_hash(), remembered);
        assert_eq!(recover_sender(0, &unrecoverable).unwrap(), remembered);
        for nonce in 1..10 {
            remember_sender(*tx(nonce).tx_hash(), Address::repeat_byte(nonce as u8));
        }
        assert_eq!(cached_senders(), 4);
        // The oldest went first.
        assert_ne!(recover_sender(0, &unrecoverable).ok(), Some(remembered));
    }
}
