//! Why a trie operation failed.

use alloy_primitives::B256;

/// A refused group depth, a store failure, or a stored node that cannot be what its
/// parent says it is.
#[derive(Debug, thiserror::Error)]
pub enum BinTrieError {
    /// The group depth is not in `1..=8`.
    #[error("group depth {0} is not in 1..=8")]
    InvalidGroupDepth(u8),
    /// A node referenced by its parent (or the root hash) is not in the store.
    #[error("node at path {path} (hash {hash}) missing from the store")]
    MissingNode {
        /// The node's path: its bits from the root, or `root`.
        path: String,
        /// The hash its parent holds for it.
        hash: B256,
    },
    /// A stored blob does not decode, or decodes to a node that cannot sit at its path.
    #[error("corrupt node at path {path}: {reason}")]
    CorruptNode {
        /// The node's path.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// A group was written with another group depth than the trie was opened with.
    #[error("group at path {path} was written with group depth {found}, the trie uses {expected}")]
    GroupDepthMismatch {
        /// The group's path.
        path: String,
        /// The trie's group depth.
        expected: u8,
        /// The blob's.
        found: u8,
    },
    /// The node store failed.
    #[error("node store: {0}")]
    Store(#[source] Box<dyn std::error::Error + Send + Sync>),
}
