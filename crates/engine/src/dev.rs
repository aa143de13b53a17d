//! A one-node chain's block producer (`ethrex node --dev`): the node proposes its own
//! blocks from its pool, with no consensus client, the way geth's and reth's dev modes do.

use crate::node::Node;
use alloy_primitives::{keccak256, Address, Bytes, B256};
use ethrex_blockchain::{BlockError, PayloadAttributes};

impl Node {
    /// Whether the pool holds a transaction the next block could take (queued ones
    /// behind a nonce gap do not count: they would make only empty blocks).
    pub fn has_pending_transactions(&self) -> bool {
        self.pool.best(&crate::node::HeadAccounts(&self.chain.store)).next().is_some()
    }

    /// Builds a block on the head from the pool (as a payload for the consensus client
    /// would be), imports it as the new head, makes it durable and updates the pool.
    /// `now` is the wall clock in seconds (the block's timestamp, or the parent's plus
    /// one if that is later). Returns the block's hash and its transaction count.
    pub fn produce_block(
        &self,
        now: u64,
        fee_recipient: Address,
    ) -> Result<(B256, usize), BlockError> {
        let _guard = self.write_lock.lock();
        let parent = self
            .chain
            .store
            .head_header()?
            .ok_or_else(|| BlockError::storage("the store holds no chain"))?;
        let number = parent.number + 1;
        let attributes = PayloadAttributes {
            timestamp: now.max(parent.timestamp + 1),
            fee_recipient,
            prev_randao: keccak256(number.to_be_bytes()),
            gas_limit: ethrex_blockchain::consensus::london::gas_limit_toward(
                parent.gas_limit,
                self.target_gas_limit,
            ),
            withdrawals: vec![],
            parent_beacon_block_root: keccak256(
                [b"dev beacon".as_slice(), &number.to_be_bytes()].concat(),
            ),
            slot_number: number,
            extra_data: Bytes::from_static(b"ethrex dev"),
        };
        let (built, _sidecars) = crate::build::build_from_pool(self, &attributes)?;
        let hash = built.block.hash();
        let count = built.block.block.body.transactions.len();
        self.chain.import_block(built.block)?;
        self.chain.store.persist(self.persistence_lag)?;
        self.pool_on_new_head(vec![]);
        Ok((hash, count))
    }
}
