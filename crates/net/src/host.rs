//! What the network needs from the node it runs in.

use alloy_primitives::B256;
use ethrex_blockchain::fork_choice::ForkChoiceError;
use ethrex_blockchain::{BatchError, Blockchain, ImportOutcome};
use ethrex_common::{BlockWithBal, Transaction};
use ethrex_txpool::{Added, PoolError};

/// The chain the network serves from and syncs into. The node implements it so that the
/// sync's writes are serialised with its other writers (the Engine API); a bare
/// `Blockchain` implements it for a node without a consensus client.
pub trait ChainHost: Send + Sync + 'static {
    /// The chain: store (served to peers) and configuration (fork id).
    fn chain(&self) -> &Blockchain;

    /// Imports `blocks` in order through the import pipeline; the first block's parent is
    /// the head. More than one block may be imported as a mega block.
    fn import(&self, blocks: Vec<BlockWithBal>) -> Result<Vec<ImportOutcome>, BatchError>;

    /// Makes `hash`, a canonical ancestor of the head, the head (unwinding the blocks
    /// above it): the sync found a branch that leaves the chain there.
    fn unwind_to(&self, hash: B256) -> Result<(), ForkChoiceError>;

    /// Remembers that the sync found `hash` invalid (its parent `latest_valid` is the last
    /// valid block), so the consensus client is answered INVALID for it.
    fn mark_invalid(&self, hash: B256, latest_valid: B256, reason: String) {
        let _ = (hash, latest_valid, reason);
    }

    /// Whether peers' transactions are taken now: the node has a pool and follows the
    /// chain (a node still syncing drops them, as geth does). Default: no pool.
    fn accepts_transactions(&self) -> bool {
        false
    }

    /// Adds peers' transactions (network form) to the pool: one verdict each, in order.
    /// A verdict that `is_peer_fault` condemns the peer that delivered the transaction.
    fn add_transactions(&self, txs: Vec<Transaction>) -> Vec<Result<Added, PoolError>> {
        txs.iter().map(|_| Err(PoolError::PoolFull)).collect()
    }

    /// Whether the pool holds the transaction with this hash.
    fn has_transaction(&self, hash: &B256) -> bool {
        let _ = hash;
        false
    }

    /// The pooled transaction with this hash in its network form (a blob transaction
    /// with its sidecar), as a peer asking for it is sent it.
    fn pooled_transaction(&self, hash: &B256) -> Option<Transaction> {
        let _ = hash;
        None
    }
}

impl ChainHost for Blockchain {
    fn chain(&self) -> &Blockchain {
        self
    }

    fn import(&self, blocks: Vec<BlockWithBal>) -> Result<Vec<ImportOutcome>, BatchError> {
        import_on(self, blocks)
    }

    fn unwind_to(&self, hash: B256) -> Result<(), ForkChoiceError> {
        self.set_head(hash, &std::collections::HashMap::new())
    }
}

/// `ChainHost::import` for a chain: one block through `import_block`, several through
/// `import_batch` (mega blocks where their BALs allow).
pub fn import_on(
    chain: &Blockchain,
    mut blocks: Vec<BlockWithBal>,
) -> Result<Vec<ImportOutcome>, BatchError> {
    if blocks.len() != 1 {
        return chain.import_batch(&blocks);
    }
    let Some(one) = blocks.pop() else { return Ok(Vec::new()) };
    let number = one.number();
    chain.import_block(one).map(|o| vec![o]).map_err(|e| BatchError {
        number,
        source: Box::new(e),
        imported: Vec::new(),
    })
}
