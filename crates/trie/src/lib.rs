#![doc = include_str!("../README.md")]

mod hash;
pub mod keccak;
mod nibbles;
mod node;
mod prefetch;
mod preserved;
mod trie;

use alloy_primitives::B256;
use std::collections::BTreeMap;

pub use alloy_trie::EMPTY_ROOT_HASH;
pub use prefetch::prefetch_paths;
pub use preserved::PreservedTrie;
pub use trie::Trie;

/// Why a trie operation failed; every variant comes from reading a node from the store.
#[derive(Debug, thiserror::Error)]
pub enum TrieError {
    /// A node referenced by its parent (or the root hash) is not in the store.
    #[error("trie node {0} missing from store")]
    MissingNode(B256),
    /// A stored node's RLP does not decode as a trie node.
    #[error("corrupt trie node {hash}: {reason}")]
    CorruptNode {
        /// The hash the node was read under.
        hash: B256,
        /// What is wrong with its encoding.
        reason: String,
    },
    /// The store behind the trie failed to read a node.
    #[error("store error: {0}")]
    Store(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// A stored node's RLP, shared: a node cache can hand it out without a copy. A slice
/// rather than a `Vec`, so the bytes are one load away from the reference, not two.
pub type NodeRlp = std::sync::Arc<[u8]>;

/// Read access to stored nodes (the storage crate implements it over its DB;
/// a `HashMap` impl is provided for tests with the `test-utils` feature).
pub trait NodeReader: Sync {
    /// The RLP stored under `hash`, `None` if the store has no such node.
    fn get_node(&self, hash: &B256) -> Result<Option<NodeRlp>, TrieError>;
}

/// A map of nodes by hash as a node store, for tests (feature `test-utils`).
#[cfg(any(test, feature = "test-utils"))]
impl<S: std::hash::BuildHasher + Sync> NodeReader for std::collections::HashMap<B256, Vec<u8>, S> {
    fn get_node(&self, hash: &B256) -> Result<Option<NodeRlp>, TrieError> {
        Ok(self.get(hash).map(|node| std::sync::Arc::from(node.as_slice())))
    }
}

impl<T: NodeReader + ?Sized> NodeReader for &T {
    fn get_node(&self, hash: &B256) -> Result<Option<NodeRlp>, TrieError> {
        (**self).get_node(hash)
    }
}

/// Nodes produced by a commit, to be written to the store in the caller's
/// atomic batch.
pub type NewNodes = Vec<(B256, Vec<u8>)>;

/// Applies a batch of `(key, Some(value) | None)` updates (`None` deletes) to
/// the trie at `root` and commits. Later duplicates of a key win.
pub fn apply_updates<R: NodeReader + ?Sized>(
    reader: &R,
    root: B256,
    updates: impl IntoIterator<Item = (B256, Option<Vec<u8>>)>,
) -> Result<(B256, NewNodes), TrieError> {
    let mut trie = Trie::new(reader, root);
    trie.update_batch(updates)?;
    trie.commit()
}

/// Root of a full key/value set computed with `alloy_trie::HashBuilder`, an
/// independent implementation used as a reference. Input need not be sorted;
/// later duplicates win and empty values count as absent.
pub fn root_from_scratch(entries: impl IntoIterator<Item = (B256, Vec<u8>)>) -> B256 {
    let sorted: BTreeMap<B256, Vec<u8>> = entries.into_iter().collect();
    let mut builder = alloy_trie::HashBuilder::default();
    for (key, value) in sorted.iter().filter(|(_, v)| !v.is_empty()) {
        builder.add_leaf(alloy_trie::Nibbles::unpack(key), value);
    }
    builder.root()
}
