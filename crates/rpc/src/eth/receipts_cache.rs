//! Recent blocks' receipts, decoded, for `eth_getTransactionReceipt`.
//!
//! A receipt's JSON needs the receipts before it in its block (gas used, the logs'
//! block-wide indices) and its transaction (found by hash in the body), so each request
//! decodes the whole block's body and receipts and hashes every transaction: for a block of
//! a few hundred transactions most of the request's time. Wallets and indexers ask for the
//! receipts of the same recent blocks over and over, so the blocks last asked for stay
//! decoded, with their transactions' positions by hash, up to [`CACHED_TRANSACTIONS`]
//! transactions in all (geth keeps such a cache too). A block's body and receipts never
//! change, so entries need no invalidation; a reorg makes the transaction index point at
//! another block, whose own entry is used.

use alloy_primitives::B256;
use ethrex_common::{Block, Receipt};
use ethrex_storage::{Store, StoreError};
use std::collections::HashMap;
use std::sync::Arc;

/// How many transactions (with their receipts) stay decoded: about a kilobyte each, some
/// 160 blocks of mainnet's size.
const CACHED_TRANSACTIONS: u64 = 32 * 1024;

/// One block with its receipts and its transactions' positions.
pub(crate) struct BlockReceipts {
    /// The block.
    pub(crate) block: Block,
    /// Its receipts, one per transaction.
    pub(crate) receipts: Vec<Receipt>,
    /// Each transaction's index by its hash.
    positions: HashMap<B256, usize>,
}

impl BlockReceipts {
    /// The index of transaction `tx_hash` in the block, if it holds it.
    pub(crate) fn position(&self, tx_hash: &B256) -> Option<usize> {
        self.positions.get(tx_hash).copied()
    }
}

/// Weighs a cached block by its transactions.
#[derive(Debug, Clone, Copy)]
struct TransactionsWeighter;

impl quick_cache::Weighter<B256, Arc<BlockReceipts>> for TransactionsWeighter {
    fn weight(&self, _hash: &B256, entry: &Arc<BlockReceipts>) -> u64 {
        entry.receipts.len().max(1) as u64
    }
}

/// The cache (one per server).
pub(crate) struct ReceiptsCache(
    quick_cache::sync::Cache<B256, Arc<BlockReceipts>, TransactionsWeighter>,
);

impl Default for ReceiptsCache {
    fn default() -> Self {
        Self(quick_cache::sync::Cache::with_weighter(
            256,
            CACHED_TRANSACTIONS,
            TransactionsWeighter,
        ))
    }
}

impl ReceiptsCache {
    /// Stored block `hash` with its receipts; `None` if the block or its receipts are not
    /// stored.
    pub(crate) fn get(
        &self,
        store: &Store,
        hash: B256,
    ) -> Result<Option<Arc<BlockReceipts>>, StoreError> {
        if let Some(entry) = self.0.get(&hash) {
            return Ok(Some(entry));
        }
        let Some(block) = store.block(&hash)? else { return Ok(None) };
        let Some(receipts) = store.receipts(&hash)? else { return Ok(None) };
        let positions =
            block.body.transactions.iter().enumerate().map(|(i, tx)| (*tx.tx_hash(), i)).collect();
        let entry = Arc::new(BlockReceipts { block, receipts, positions });
        self.0.insert(hash, entry.clone());
        Ok(Some(entry))
    }
}
