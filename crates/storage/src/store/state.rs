//! Readers of the head's state (accounts, storage, code) and of trie nodes, through the
//! caches (see `cache` for how a miss may fill them).

use super::Store;
use crate::tables::{Accounts, Code, Storage, TypedTable};
use crate::trie_nodes::{checked_node, trie_node_key};
use crate::StoreError;
use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use ethrex_common::AccountState;
use ethrex_trie::{NodeReader, NodeRlp, TrieError};

impl Store {
    /// An account of the head's state (`None`: it does not exist).
    pub fn account(&self, address: &Address) -> Result<Option<AccountState>, StoreError> {
        if let Some(record) = self.flat.unapplied_value::<Accounts>(address) {
            return record;
        }
        if let Some(account) = self.flat.accounts.get(address) {
            return Ok(account);
        }
        let _fill = self.flat.fill_lock.read();
        let account = self.read::<Accounts>(address)?;
        self.flat.accounts.insert(*address, account);
        Ok(account)
    }

    /// A storage slot of the head's state (zero if unset).
    pub fn storage(&self, address: &Address, slot: &U256) -> Result<U256, StoreError> {
        let key = (*address, *slot);
        if let Some(value) = self.flat.unapplied_value::<Storage>(&key) {
            return value.map(Option::unwrap_or_default);
        }
        if let Some(v) = self.flat.storage.get(&key) {
            return Ok(v);
        }
        let _fill = self.flat.fill_lock.read();
        // Through the overlay: an evicted entry may belong to a batch still on its way
        // to the disk.
        let value = self.read::<Storage>(&key)?.unwrap_or_default();
        self.flat.storage.insert(key, value);
        Ok(value)
    }

    /// Every non-zero slot of an account (used when an account's storage is wiped).
    pub fn storage_entries(&self, address: &Address) -> Result<Vec<(U256, U256)>, StoreError> {
        // An account's slots share its address as the key prefix.
        Ok(self
            .scan::<Storage>(address.as_slice())?
            .into_iter()
            .map(|((_, slot), value)| (slot, value))
            .collect())
    }

    /// Contract code by its hash.
    pub fn code(&self, code_hash: &B256) -> Result<Option<Bytes>, StoreError> {
        if let Some(code) = self.flat.code.get(code_hash) {
            return Ok(Some(code));
        }
        let code = self.read::<Code>(code_hash)?;
        if let Some(code) = &code {
            // Code is keyed by its hash, so what the disk returns can be checked: corrupted
            // bytes must be a storage fault, not a contract that behaves differently (which
            // would turn a valid block INVALID) and stays in the cache.
            let hash = keccak256(code);
            if hash != *code_hash {
                return Err(StoreError::Corrupt {
                    table: Code::TABLE.name(),
                    reason: format!("code stored under {code_hash} hashes to {hash}"),
                });
            }
            self.flat.code.insert(*code_hash, code.clone());
        }
        Ok(code)
    }

    /// Every account of the flat state (export, tests; walks the whole table).
    pub fn all_accounts(&self) -> Result<Vec<(Address, AccountState)>, StoreError> {
        self.scan::<Accounts>(&[])
    }
}

/// Nodes are read by position and checked against the hash their parent holds: a
/// position holds the head state's node, so a walk of an older state (or a corrupted
/// node) finds a mismatch and reports the node missing instead of reading wrong data. The
/// node cache is keyed by hash, so what it holds is never stale.
impl NodeReader for Store {
    fn get_node(
        &self,
        owner: Option<&B256>,
        path: &[u8],
        hash: &B256,
    ) -> Result<Option<NodeRlp>, TrieError> {
        if let Some(node) = self.nodes.get(hash) {
            return Ok(Some(node));
        }
        let (table, key) = trie_node_key(owner, path);
        let Some(node) = checked_node(self.get(table, &key)?, hash).map(NodeRlp::from) else {
            return Ok(None);
        };
        self.nodes.insert(*hash, node.clone());
        Ok(Some(node))
    }
}
