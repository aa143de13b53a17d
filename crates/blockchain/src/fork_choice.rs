//! Moving the canonical head: forward along imported blocks, or to a side branch by
//! unwinding to the common ancestor (change sets) and executing the branch.

use crate::error::BlockError;
use crate::import::Blockchain;
use alloy_primitives::B256;
use ethrex_common::BlockWithBal;

/// Where a block that is not canonical can be found.
pub trait BlockSource {
    /// The block with this hash, if the source holds it.
    fn block(&self, hash: &B256) -> Option<BlockWithBal>;
}

impl BlockSource for std::collections::HashMap<B256, BlockWithBal> {
    fn block(&self, hash: &B256) -> Option<BlockWithBal> {
        self.get(hash).cloned()
    }
}

/// Why a new head could not be set.
#[derive(Debug, thiserror::Error)]
pub enum ForkChoiceError {
    /// The requested head or one of its ancestors is not known: the node must sync.
    #[error("block {0} is unknown")]
    Unknown(B256),
    /// A block of the new branch breaks a consensus rule; the previous head was restored.
    /// Only block faults (`BlockError::is_invalid_block`) end up here.
    #[error("block {hash} of the new branch is invalid: {error}")]
    InvalidBlock {
        /// The invalid block.
        hash: B256,
        /// Its last valid ancestor (the fork point or a block of the new branch).
        latest_valid: B256,
        /// The rule it breaks (boxed: a verdict is large and this path is rare).
        error: Box<BlockError>,
    },
    /// The node failed (storage, missing state): nothing is known about the block's
    /// validity. The previous head was restored where the store allowed it.
    #[error(transparent)]
    Other(#[from] BlockError),
}

impl From<ethrex_storage::StoreError> for ForkChoiceError {
    fn from(e: ethrex_storage::StoreError) -> Self {
        ForkChoiceError::Other(e.into())
    }
}

impl Blockchain {
    fn is_canonical(&self, hash: &B256) -> Result<bool, BlockError> {
        let Some(number) = self.store.block_number(hash)? else { return Ok(false) };
        Ok(self.store.canonical_hash(number)? == Some(*hash))
    }

    /// A block from the store (a previously imported, valid block) or from `pending`.
    fn find_block(
        &self,
        hash: &B256,
        pending: &dyn BlockSource,
    ) -> Result<Option<BlockWithBal>, BlockError> {
        if let Some(b) = pending.block(hash) {
            return Ok(Some(b));
        }
        match self.store.block(hash)? {
            Some(block) => Ok(Some(BlockWithBal { bal: self.store.bal(hash)?, block })),
            None => Ok(None),
        }
    }

    /// Makes `new_head` the head. Blocks between its canonical ancestor and it are taken
    /// from the store or `pending` and executed in order. If one is invalid, the previous
    /// canonical chain is restored.
    pub fn set_head(
        &self,
        new_head: B256,
        pending: &dyn BlockSource,
    ) -> Result<(), ForkChoiceError> {
        let head = self.store.head()?.ok_or_else(|| BlockError::storage("store has no head"))?;
        if head == new_head {
            return Ok(());
        }
        // The branch from the new head back to the canonical chain, newest first.
        let mut branch = Vec::new();
        let mut cursor = new_head;
        while !self.is_canonical(&cursor)? {
            let block =
                self.find_block(&cursor, pending)?.ok_or(ForkChoiceError::Unknown(cursor))?;
            cursor = block.block.header.parent_hash;
            branch.push(block);
        }
        let ancestor = cursor;
        let old_chain = self.unwind_to(ancestor)?;
        for block in branch.into_iter().rev() {
            let hash = block.hash();
            if let Err(error) = self.import_block(block) {
                let latest_valid = self.store.head()?.unwrap_or(ancestor);
                // Put the old canonical chain back before reporting.
                self.unwind_to(ancestor)?;
                for old in old_chain.into_iter().rev() {
                    self.import_block(old)?;
                }
                if !error.is_invalid_block() {
                    // A local failure says nothing about the block: no verdict.
                    return Err(ForkChoiceError::Other(error));
                }
                return Err(ForkChoiceError::InvalidBlock {
                    hash,
                    latest_valid,
                    error: Box::new(error),
                });
            }
        }
        Ok(())
    }

    /// Unwinds the head back to `ancestor`; returns the unwound blocks, newest first.
    fn unwind_to(&self, ancestor: B256) -> Result<Vec<BlockWithBal>, BlockError> {
        let mut unwound = Vec::new();
        loop {
            let head =
                self.store.head()?.ok_or_else(|| BlockError::storage("store has no head"))?;
            if head == ancestor {
                return Ok(unwound);
            }
            let block = self
                .find_block(&head, &std::collections::HashMap::new())?
                .ok_or_else(|| BlockError::storage(format!("canonical block {head} missing")))?;
            self.store.unwind_head()?;
            unwound.push(block);
        }
    }
}
