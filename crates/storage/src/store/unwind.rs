//! Moving the head back across a block (reorgs).

use super::commit::put_flat_state;
use super::Store;
use crate::backend::WriteBatch;
use crate::codec::MetaKey;
use crate::tables::{
    corrupt, AccountTrie, CanonicalHashes, ChangeSets, Headers, Meta, StorageTrie, TypedTable,
};
use crate::StoreError;
use alloy_primitives::{keccak256, Address, B256, U256};
use ethrex_common::EMPTY_ROOT_HASH;
use ethrex_trie::Trie;
use std::collections::BTreeMap;

impl Store {
    /// Moves the head back to its parent: restores the flat state from the head block's
    /// change set, puts the overwritten values back into the tries (whose roots must come
    /// out as the parent's: the trie nodes are stored by position, for the head's state
    /// only), and drops the block from the canonical index, in one atomic batch. The block
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
        let parent = self.header(&header.parent_hash)?.ok_or_else(|| {
            corrupt::<Headers>(format!("parent {} of the head has no header", header.parent_hash))
        })?;
        let change_set = self
            .change_set(&head)?
            .ok_or_else(|| corrupt::<ChangeSets>(format!("block {head} has no change set")))?;

        let mut batch = WriteBatch::new();
        let mut slots: BTreeMap<Address, Vec<(U256, U256)>> = BTreeMap::new();
        for (address, slot, value) in &change_set.storage {
            slots.entry(*address).or_default().push((*slot, *value));
        }
        // A node missing at its position or undecodable: the trie table is at fault, not
        // the change set.
        let trie_error = |table: &'static str| {
            move |e: ethrex_trie::TrieError| match e {
                ethrex_trie::TrieError::Store(inner) => match inner.downcast::<StoreError>() {
                    Ok(store) => *store,
                    Err(other) => StoreError::Backend(other),
                },
                other => StoreError::Corrupt {
                    table,
                    reason: format!("unwinding block {head}: {other}"),
                },
            }
        };
        let mut account_updates = Vec::with_capacity(change_set.accounts.len());
        for (address, previous) in &change_set.accounts {
            let hashed = keccak256(address);
            if let Some(slots) = slots.remove(address) {
                let current = self.account(address)?.map_or(EMPTY_ROOT_HASH, |a| a.storage_root);
                let mut trie = Trie::storage(self, hashed, current);
                trie.update_batch(slots.iter().map(|(slot, value)| {
                    let key = keccak256(slot.to_be_bytes::<32>());
                    (key, (!value.is_zero()).then(|| alloy_rlp::encode(value)))
                }))
                .map_err(trie_error(StorageTrie::NAME))?;
                let (root, updates) = trie.commit().map_err(trie_error(StorageTrie::NAME))?;
                let expected = previous.map_or(EMPTY_ROOT_HASH, |a| a.storage_root);
                if root != expected {
                    return Err(corrupt::<ChangeSets>(format!(
                        "block {head}: {address}'s slots before it give storage root {root}, \
                         its account before it says {expected}"
                    )));
                }
                batch.put_trie(updates);
            }
            account_updates.push((hashed, previous.map(alloy_rlp::encode)));
        }
        if let Some(address) = slots.keys().next() {
            return Err(corrupt::<ChangeSets>(format!(
                "block {head}: slots of {address}, whose account it does not record"
            )));
        }
        let mut accounts = match self.take_preserved_trie(header.state_root) {
            Some(levels) => Trie::from_preserved(self, levels),
            None => Trie::new(self, header.state_root),
        };
        accounts.update_batch(account_updates).map_err(trie_error(AccountTrie::NAME))?;
        let (root, updates, levels) = accounts
            .commit_preserving(self.trie_memory())
            .map_err(trie_error(AccountTrie::NAME))?;
        if root != parent.state_root {
            return Err(corrupt::<ChangeSets>(format!(
                "block {head}: the accounts before it give state root {root}, its parent's \
                 header says {}",
                parent.state_root
            )));
        }
        batch.put_trie(updates);
        put_flat_state(&mut batch, &change_set.accounts, &change_set.storage);
        batch.delete_entry::<CanonicalHashes>(&header.number);
        batch.put_entry::<Meta>(&MetaKey::Head, header.parent_hash);
        self.write(batch)?;
        self.preserve_trie(levels);
        Ok(header.parent_hash)
    }
}
