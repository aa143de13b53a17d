//! Readers of chain data: headers, bodies, receipts, BALs, change sets, the canonical
//! index and the head.

use super::Store;
use crate::changeset::ChangeSet;
use crate::codec::MetaKey;
use crate::tables::{
    Bals, Bodies, CanonicalHashes, ChangeSets, HeaderNumbers, Headers, Meta, Receipts,
    TotalDifficulties, TxNumbers,
};
use crate::StoreError;
use alloy_primitives::{B256, U256};
use ethrex_common::{Block, BlockAccessList, BlockBody, Header, Receipt};

impl Store {
    /// The header of a stored block.
    pub fn header(&self, hash: &B256) -> Result<Option<Header>, StoreError> {
        self.read::<Headers>(hash)
    }

    /// The total difficulty of a stored block (`None` for blocks stored before the store
    /// kept it: a proof-of-stake chain's, where it is not needed).
    pub fn total_difficulty(&self, hash: &B256) -> Result<Option<U256>, StoreError> {
        self.read::<TotalDifficulties>(hash)
    }

    /// The number of a stored block.
    pub fn block_number(&self, hash: &B256) -> Result<Option<u64>, StoreError> {
        self.read::<HeaderNumbers>(hash)
    }

    /// The hash of the canonical block at `number`.
    pub fn canonical_hash(&self, number: u64) -> Result<Option<B256>, StoreError> {
        self.read::<CanonicalHashes>(&number)
    }

    /// The body of a stored block.
    pub fn body(&self, hash: &B256) -> Result<Option<BlockBody>, StoreError> {
        self.read::<Bodies>(hash)
    }

    /// A stored block: its header and body.
    pub fn block(&self, hash: &B256) -> Result<Option<Block>, StoreError> {
        let (Some(header), Some(body)) = (self.header(hash)?, self.body(hash)?) else {
            return Ok(None);
        };
        Ok(Some(Block { header, body }))
    }

    /// The receipts of a stored block.
    pub fn receipts(&self, hash: &B256) -> Result<Option<Vec<Receipt>>, StoreError> {
        self.read::<Receipts>(hash)
    }

    /// The block access list of a stored block, if it came with one.
    pub fn bal(&self, hash: &B256) -> Result<Option<BlockAccessList>, StoreError> {
        self.read::<Bals>(hash)
    }

    /// What a stored block overwrote (`unwind_head` restores it).
    pub fn change_set(&self, hash: &B256) -> Result<Option<ChangeSet>, StoreError> {
        self.read::<ChangeSets>(hash)
    }

    /// Hash of the block whose state the flat tables hold.
    pub fn head(&self) -> Result<Option<B256>, StoreError> {
        self.read::<Meta>(&MetaKey::Head)
    }

    /// The header of the head block.
    pub fn head_header(&self) -> Result<Option<Header>, StoreError> {
        match self.head()? {
            None => Ok(None),
            Some(h) => self.header(&h),
        }
    }

    /// The number of the block that held transaction `tx_hash` when that block was
    /// committed; the canonical block at that number may since be another (a reorg), so
    /// a reader checks that it holds the transaction ([`Self::transaction_location`] does).
    pub fn transaction_block_number(&self, tx_hash: &B256) -> Result<Option<u64>, StoreError> {
        self.read::<TxNumbers>(tx_hash)
    }

    /// Where the canonical chain holds transaction `tx_hash`: its block's hash and number,
    /// its index there, and the block's body. `None` when no canonical block holds it
    /// (never included, or included in a block a reorg took away).
    pub fn transaction_location(&self, tx_hash: &B256) -> Result<Option<TxLocation>, StoreError> {
        let Some(number) = self.transaction_block_number(tx_hash)? else { return Ok(None) };
        let Some(block_hash) = self.canonical_hash(number)? else { return Ok(None) };
        let Some(body) = self.body(&block_hash)? else { return Ok(None) };
        let index = body.transactions.iter().position(|tx| tx.tx_hash() == tx_hash);
        Ok(index.map(|index| TxLocation { block_hash, number, index, body }))
    }

    /// Hash of the genesis block.
    pub fn genesis_hash(&self) -> Result<Option<B256>, StoreError> {
        self.read::<Meta>(&MetaKey::Genesis)
    }
}

/// A canonical transaction's place in the chain ([`Store::transaction_location`]).
#[derive(Debug, Clone)]
pub struct TxLocation {
    /// The hash of the block that holds it.
    pub block_hash: B256,
    /// That block's number.
    pub number: u64,
    /// Its index among the block's transactions.
    pub index: usize,
    /// The block's body (the transaction is `body.transactions[index]`).
    pub body: BlockBody,
}
