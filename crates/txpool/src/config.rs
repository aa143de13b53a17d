//! The pool's limits and prices.

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
    /// The largest encoded transaction accepted.
    pub max_tx_size: usize,
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
        }
    }
}
