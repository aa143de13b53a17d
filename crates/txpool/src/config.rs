//! The pool's limits and prices (geth's legacypool and blobpool defaults where it has one).

/// Limits and prices (defaults after geth's legacypool, with room for a 2,000-transaction
/// burst from one sender, which devp2p's eth-test sends in one message).
#[derive(Debug, Clone)]
pub struct PoolConfig {
    /// The least tip a transaction must offer (wei).
    pub min_tip: u128,
    /// How much more (percent) a replacement must pay on both its fee cap and its tip.
    pub price_bump: u128,
    /// Transactions the pool holds at most.
    pub max_transactions: usize,
    /// Encoded bytes the pool holds at most.
    pub max_bytes: usize,
    /// Transactions one sender may have pooled.
    pub max_per_sender: usize,
    /// How far ahead of the account nonce a queued transaction may be.
    pub max_nonce_gap: u64,
    /// The largest encoded transaction accepted (blob transactions: without the sidecar).
    pub max_tx_size: usize,
    /// How much more (percent) a blob transaction's replacement must pay on its fee cap,
    /// its tip and its blob fee cap.
    pub blob_price_bump: u128,
    /// Blob transactions one sender may have pooled.
    pub max_blob_txs_per_sender: usize,
    /// The largest blob transaction accepted, sidecar included (network form).
    pub max_blob_tx_size: usize,
    /// Sidecar bytes the blob store holds at most (on disk when the pool has a directory).
    pub blob_datacap: usize,
    /// Sidecar bytes the blob store keeps in memory besides the disk copy.
    pub blob_cache_bytes: usize,
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self {
            min_tip: 1,
            price_bump: 10,
            max_transactions: 10_000,
            max_bytes: 64 << 20,
            max_per_sender: 4096,
            max_nonce_gap: 4096,
            max_tx_size: 128 << 10,
            blob_price_bump: 100,
            max_blob_txs_per_sender: 16,
            max_blob_tx_size: 1 << 20,
            blob_datacap: 2560 << 20,
            blob_cache_bytes: 64 << 20,
        }
    }
}
