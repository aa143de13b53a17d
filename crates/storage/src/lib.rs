#![doc = include_str!("../README.md")]

pub mod backend;
pub mod changeset;
pub mod codec;
pub mod history;
pub mod mdbx;
pub mod memory;
mod node_cache;
pub mod persist;
pub mod receipts;
mod rlp_walk;
pub mod rocksdb;
pub mod store;
pub mod tables;
pub mod trie_nodes;

pub use backend::{KvBackend, SortedWrites, Table, WriteBatch};
pub use changeset::ChangeSet;
pub use store::{
    BlockCommit, CacheSizes, DbKind, PreparedCommit, StateUpdate, Store, StoredReceipt, TxLocation,
    STATE_LAYOUT, TRIE_MEMORY_BYTES,
};
pub use tables::TypedTable;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The key-value backend (MDBX, RocksDB) failed; its own error is the source.
    #[error("database backend error: {0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A file-system operation on the named path failed.
    #[error("I/O error on {0}: {1}")]
    Io(String, #[source] std::io::Error),
    /// Stored bytes are not what the table declares.
    #[error("corrupt {table} entry: {reason}")]
    Corrupt {
        /// The table's on-disk name.
        table: &'static str,
        /// What is wrong with the bytes.
        reason: String,
    },
    /// The request cannot be served (no head, unwinding genesis, a missing path).
    #[error("{0}")]
    Invalid(String),
    /// An earlier background write failed; the message is that failure's.
    #[error(
        "writing to the database failed; blocks after the last written one are only in memory: {0}"
    )]
    Persistence(String),
}

impl From<StoreError> for ethrex_trie::TrieError {
    fn from(e: StoreError) -> Self {
        ethrex_trie::TrieError::Store(Box::new(e))
    }
}
