//! Where trie nodes are stored: by position (the nibble path from their trie's root), in
//! `account_trie` for the account trie and in `storage_trie` under the hashed address for
//! a storage trie. The tables hold the head state's tries only, so a node read by position
//! is used only if it hashes to the reference its parent holds: walking a state the store
//! no longer holds (or reading a corrupted node) finds a missing node, never wrong data.

use crate::codec::trie_position_key;
use crate::Table;
use alloy_primitives::{keccak256, B256};

/// The table and key of the node at `path` in the trie of `owner` (`None`: the account
/// trie; `Some(hashed address)`: that account's storage trie).
/// The key is built once, straight from `path` (the tables' own codec, `TriePath`).
pub fn trie_node_key(owner: Option<&B256>, path: &[u8]) -> (Table, Vec<u8>) {
    let table = if owner.is_some() { Table::StorageTrie } else { Table::AccountTrie };
    (table, trie_position_key(owner, path))
}

/// What was read at a node's position, if it is the node whose hash is `hash`.
pub fn checked_node(read: Option<Vec<u8>>, hash: &B256) -> Option<Vec<u8>> {
    read.filter(|node| keccak256(node) == *hash)
}
