#![doc = include_str!("../README.md")]

mod hash;
pub mod keccak;
mod nibbles;
mod node;
mod ordered;
#[cfg(any(test, feature = "test-utils"))]
mod path_store;
mod prefetch;
mod preserved;
mod proof;
mod trie;

use alloy_primitives::B256;
use std::collections::BTreeMap;

pub use alloy_trie::EMPTY_ROOT_HASH;
pub use ordered::ordered_root;
#[cfg(any(test, feature = "test-utils"))]
pub use path_store::PathStore;
pub use prefetch::prefetch_paths;
pub use preserved::PreservedTrie;
pub use proof::proof;
pub use trie::Trie;

/// Why a trie operation failed; every variant comes from reading a node from the store.
#[derive(Debug, thiserror::Error)]
pub enum TrieError {
    /// A node referenced by its parent (or the root hash) is not in the store at its
    /// position, or another node is (the store no longer holds that state).
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

/// Read access to stored nodes. Nodes are stored by position: the trie they belong to
/// (`owner`: `None` for the account trie, the hashed address for a storage trie) and their
/// path from the root, one nibble per byte. A position is overwritten as the state
/// changes, so a reader must return the node only if its hash is `hash` (the reference its
/// parent holds); a store addressed by hash, which can only hold the right node, may
/// ignore the position. With the `test-utils` feature, a `HashMap` of nodes by hash and
/// [`PathStore`] implement it.
pub trait NodeReader: Sync {
    /// The RLP of the node at `path` in `owner`'s trie, if it hashes to `hash`; `None`
    /// if the store has no node there or a different one (a state it no longer holds).
    fn get_node(
        &self,
        owner: Option<&B256>,
        path: &[u8],
        hash: &B256,
    ) -> Result<Option<NodeRlp>, TrieError>;
}

/// A map of nodes by hash as a node store, for tests (feature `test-utils`).
#[cfg(any(test, feature = "test-utils"))]
impl<S: std::hash::BuildHasher + Sync> NodeReader for std::collections::HashMap<B256, Vec<u8>, S> {
    fn get_node(
        &self,
        _owner: Option<&B256>,
        _path: &[u8],
        hash: &B256,
    ) -> Result<Option<NodeRlp>, TrieError> {
        Ok(self.get(hash).map(|node| std::sync::Arc::from(node.as_slice())))
    }
}

impl<T: NodeReader + ?Sized> NodeReader for &T {
    fn get_node(
        &self,
        owner: Option<&B256>,
        path: &[u8],
        hash: &B256,
    ) -> Result<Option<NodeRlp>, TrieError> {
        (**self).get_node(owner, path, hash)
    }
}

/// A node a commit produced, to be stored at its position.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct StoredNode {
    /// Path from the trie's root, one nibble per byte (empty for the root).
    pub path: Vec<u8>,
    /// The node's hash (its parent's reference, or the trie's root hash).
    pub hash: B256,
    /// The node's RLP.
    pub rlp: Vec<u8>,
}

/// What a commit changes in a store of nodes by position, to be applied in the caller's
/// atomic batch: the nodes to write, and the positions whose stored node is gone (the
/// key was removed, the node merged into its parent or became small enough to be
/// embedded in it). A position is never in both lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrieUpdates {
    /// Which trie: `None` for the account trie, else the hashed address.
    pub owner: Option<B256>,
    /// Nodes created or changed, each at its position.
    pub nodes: Vec<StoredNode>,
    /// Positions to delete.
    pub removed: Vec<Vec<u8>>,
}

impl TrieUpdates {
    /// Whether the commit changed nothing.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty() && self.removed.is_empty()
    }

    /// The new nodes by hash, for a store addressed by hash.
    pub fn into_hashed(self) -> impl Iterator<Item = (B256, Vec<u8>)> {
        self.nodes.into_iter().map(|n| (n.hash, n.rlp))
    }
}

/// Applies a batch of `(key, Some(value) | None)` updates (`None` deletes) to
/// the account (or a standalone) trie at `root` and commits. Later duplicates of a key win.
pub fn apply_updates<R: NodeReader + ?Sized>(
    reader: &R,
    root: B256,
    updates: impl IntoIterator<Item = (B256, Option<Vec<u8>>)>,
) -> Result<(B256, TrieUpdates), TrieError> {
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
