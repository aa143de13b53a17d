//! A state description in JSON (accounts with code and storage), the input of the
//! cross-check against geth (`bench/bintrie-ref`).
//!
//! ```json
//! {"accounts": [{"address": "0x…20 bytes", "nonce": 1, "balance": "0x…",
//!                "code": "0x…", "storage": {"0x…slot": "0x…value"}}]}
//! ```
//!
//! `balance`, slots and values are quantities (`0x` hex, at most 256 bits); `nonce` a
//! JSON number. Every field but `address` may be left out (0, no code, no storage).

use crate::error::BinTrieError;
use crate::store::{MemoryStore, NodeStore};
use crate::trie::BinaryTrie;
use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A set of accounts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateSpec {
    /// The accounts, applied in order.
    pub accounts: Vec<AccountSpec>,
}

/// One account.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountSpec {
    /// The address.
    pub address: Address,
    /// The nonce.
    #[serde(default)]
    pub nonce: u64,
    /// The balance.
    #[serde(default)]
    pub balance: U256,
    /// The code (its hash is its Keccak-256).
    #[serde(default)]
    pub code: Bytes,
    /// Storage slots and values; a zero value is written (as geth writes it), not skipped.
    #[serde(default)]
    pub storage: BTreeMap<U256, U256>,
}

impl StateSpec {
    /// Parses the JSON form.
    pub fn from_json(json: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(json)
    }

    /// The JSON form.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(self)
    }

    /// Writes every account into `trie`, in order.
    pub fn apply<S: NodeStore>(&self, trie: &mut BinaryTrie<S>) -> Result<(), BinTrieError> {
        self.accounts.iter().try_for_each(|account| account.apply(trie))
    }

    /// The root built the way the cross-check builds it: the first half of the accounts
    /// into an empty trie, commit to a fresh [`MemoryStore`], reopen from the root, the
    /// rest, commit. Every depth thus writes, reloads and extends grouped nodes.
    pub fn root_in_two_commits(&self, group_depth: u8) -> Result<B256, BinTrieError> {
        let store = MemoryStore::new();
        let (first, second) = self.accounts.split_at(self.accounts.len() / 2);
        let mut trie = BinaryTrie::new(&store, group_depth)?;
        first.iter().try_for_each(|account| account.apply(&mut trie))?;
        let root = trie.commit()?;
        let mut trie = BinaryTrie::open(&store, root, group_depth)?;
        second.iter().try_for_each(|account| account.apply(&mut trie))?;
        trie.commit()
    }
}

impl AccountSpec {
    /// Writes the account as geth's state commit does: header (`UpdateAccount`, code size
    /// as a `u32` like geth's conversion), then code chunks if any (`UpdateContractCode`),
    /// then each slot (`UpdateStorage`).
    pub fn apply<S: NodeStore>(&self, trie: &mut BinaryTrie<S>) -> Result<(), BinTrieError> {
        let code_hash = keccak256(&self.code);
        trie.update_account(
            &self.address,
            self.nonce,
            self.balance,
            self.code.len() as u32,
            code_hash,
        )?;
        if !self.code.is_empty() {
            trie.update_code(&self.address, &self.code)?;
        }
        for (slot, value) in &self.storage {
            trie.update_storage(&self.address, *slot, B256::from(*value))?;
        }
        Ok(())
    }
}
