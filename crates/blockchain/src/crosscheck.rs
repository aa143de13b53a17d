//! Before an INVALID verdict that depends on execution stands, the pre-block state that
//! execution read is checked against the parent's state trie.
//!
//! Execution reads accounts and storage from the flat tables, which nothing hashes: a
//! corrupted disk read there would make a valid block execute differently and be judged
//! INVALID (and remembered so). The trie holds the same values under the parent's state
//! root, so on that (rare) path every value the block's cache holds is looked up in the
//! trie; a difference is a storage fault, and the verdict is withdrawn.

use crate::error::BlockError;
use alloy_primitives::{keccak256, Address, B256, U256};
use alloy_rlp::Decodable;
use ethrex_common::AccountState;
use ethrex_storage::Store;
use ethrex_trie::Trie;
use ethrex_vm::CachingDb;
use std::collections::HashMap;

/// `Ok` when every account and slot in `cache` equals the parent state's trie value
/// (under `state_root`); the first difference as a storage fault otherwise.
pub(crate) fn check_reads_against_trie<DB>(
    store: &Store,
    state_root: B256,
    cache: &CachingDb<DB>,
) -> Result<(), BlockError> {
    let mut accounts = Trie::new(store, state_root);
    let mut trie_accounts: HashMap<Address, Option<AccountState>> = HashMap::new();
    let mut trie_account = |address: Address| -> Result<Option<AccountState>, BlockError> {
        if let Some(known) = trie_accounts.get(&address) {
            return Ok(*known);
        }
        let account = match accounts.get(keccak256(address).as_slice())? {
            None => None,
            Some(rlp) => Some(AccountState::decode(&mut rlp.as_slice()).map_err(|e| {
                BlockError::storage(format!("account {address} in the state trie: {e}"))
            })?),
        };
        trie_accounts.insert(address, account);
        Ok(account)
    };
    for (address, info) in cache.cached_accounts() {
        let in_trie = trie_account(address)?;
        // The storage root is not part of what execution reads, but the state root starts
        // from the flat record's: a stale one there (a lost write) must not pass.
        let flat_storage_root = store.account(&address)?.map(|a| a.storage_root);
        let same = match (&info, &in_trie) {
            (None, None) => true,
            (Some(read), Some(trie)) => {
                read.nonce == trie.nonce
                    && read.balance == trie.balance
                    && read.code_hash == trie.code_hash
                    && flat_storage_root == Some(trie.storage_root)
            }
            _ => false,
        };
        if !same {
            return Err(BlockError::storage(format!(
                "account {address}: the flat state read {info:?}, the state trie holds {in_trie:?}"
            )));
        }
    }
    // One trie per account: its nodes, once read, serve every slot looked up after.
    let mut storage_tries: HashMap<Address, Trie<'_, Store>> = HashMap::new();
    for ((address, slot), value) in cache.cached_storage() {
        let in_trie = match trie_account(address)? {
            None => U256::ZERO,
            Some(account) => {
                let storage = storage_tries.entry(address).or_insert_with(|| {
                    Trie::storage(store, keccak256(address), account.storage_root)
                });
                match storage.get(keccak256(slot.to_be_bytes::<32>()).as_slice())? {
                    None => U256::ZERO,
                    Some(rlp) => U256::decode(&mut rlp.as_slice()).map_err(|e| {
                        BlockError::storage(format!(
                            "slot {slot:#x} of {address} in the state trie: {e}"
                        ))
                    })?,
                }
            }
        };
        if in_trie != value {
            return Err(BlockError::storage(format!(
                "slot {slot:#x} of {address}: the flat state read {value:#x}, the state trie holds {in_trie:#x}"
            )));
        }
    }
    Ok(())
}
