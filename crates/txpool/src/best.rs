//! The best transactions for a block: each sender's pending chain in nonce order, the
//! chains merged by the effective tip of their next transaction (then arrival order).

use crate::pool::PooledTx;
use crate::validate::effective_tip;
use alloy_primitives::Address;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};

/// An iterator over the pool's pending transactions, best first. The block builder
/// calls `skip_sender` when a sender's transaction does not fit or fails, so that its
/// later nonces are not offered.
pub struct BestTransactions {
    chains: Vec<std::vec::IntoIter<PooledTx>>,
    heap: BinaryHeap<(u128, Reverse<u64>, usize)>,
    heads: Vec<Option<PooledTx>>,
    skipped: HashSet<Address>,
    base_fee: u64,
}

impl BestTransactions {
    pub(crate) fn new(chains: Vec<Vec<PooledTx>>, base_fee: u64) -> Self {
        let mut best = Self {
            chains: chains.into_iter().map(Vec::into_iter).collect(),
            heap: BinaryHeap::new(),
            heads: Vec::new(),
            skipped: HashSet::new(),
            base_fee,
        };
        best.heads = vec![None; best.chains.len()];
        for i in 0..best.chains.len() {
            best.advance(i);
        }
        best
    }

    /// Takes chain `i`'s next transaction as its head and queues it.
    fn advance(&mut self, i: usize) {
        if let Some(next) = self.chains[i].next() {
            let key = (effective_tip(&next.tx, self.base_fee), Reverse(next.seq), i);
            self.heads[i] = Some(next);
            self.heap.push(key);
        }
    }

    /// No more transactions of `sender`.
    pub fn skip_sender(&mut self, sender: Address) {
        self.skipped.insert(sender);
    }
}

impl Iterator for BestTransactions {
    type Item = PooledTx;

    fn next(&mut self) -> Option<PooledTx> {
        while let Some((_, _, i)) = self.heap.pop() {
            let tx = self.heads[i].take().expect("a queued chain has a head");
            if self.skipped.contains(&tx.sender) {
                continue;
            }
            self.advance(i);
            return Some(tx);
        }
        None
    }
}
