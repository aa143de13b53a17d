//! Moving the head back across a block (reorgs).

use super::commit::put_flat_state;
use super::Store;
use crate::backend::WriteBatch;
use crate::codec::MetaKey;
use crate::tables::{corrupt, CanonicalHashes, ChangeSets, Headers, Meta};
use crate::StoreError;
use alloy_primitives::B256;

impl Store {
    /// Moves the head back to its parent: restores the flat state from the head block's
    /// change set and drops it from the canonical index, in one atomic batch. The block
    /// itself stays stored (it is valid; a later fork choice may make it canonical again).
    /// Returns the new head.
    pub fn unwind_head(&self) -> Result<B256, StoreError> {
        let head = self.head()?.ok_or_else(|| StoreError::Invalid("store has no head".into()))?;
        let header = self
            .header(&head)?
            .ok_or_else(|| corrupt::<Headers>(format!("head {head} has no header")))?;
        if header.number == 0 {
            return Err(StoreError::Invalid("cannot unwind the genesis block".into()));
        }
        let change_set = self
            .change_set(&head)?
            .ok_or_else(|| corrupt::<ChangeSets>(format!("block {head} has no change set")))?;
        let mut batch = WriteBatch::new();
        put_flat_state(&mut batch, &change_set.accounts, &change_set.storage);
        batch.delete_entry::<CanonicalHashes>(&header.number);
        batch.put_entry::<Meta>(&MetaKey::Head, header.parent_hash);
        self.write(batch)?;
        Ok(header.parent_hash)
    }
}
