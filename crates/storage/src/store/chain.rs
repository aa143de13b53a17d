//! Readers of chain data: headers, bodies, receipts, BALs, change sets, the canonical
//! index and the head.

use super::Store;
use crate::changeset::ChangeSet;
use crate::codec::MetaKey;
use crate::tables::{
    Bals, Bodies, CanonicalHashes, ChangeSets, HeaderNumbers, Headers, Meta, Receipts,
    TotalDifficulties,
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

    /// Hash of the genesis block.
    pub fn genesis_hash(&self) -> Result<Option<B256>, StoreError> {
        self.read::<Meta>(&MetaKey::Genesis)
    }
}
