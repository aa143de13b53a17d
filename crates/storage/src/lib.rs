//! Persistent store: chain data (headers, bodies, receipts, BALs, canonical index),
//! flat state of the head block (accounts, storage, code), trie nodes and per-block change
//! sets, over one of three key-value backends chosen at run time.
//!
//! A block is committed with one `WriteBatch`, so a crash or a rejected block never leaves
//! part of a block behind. Batches reach the disk in the background, in order (`persist`).

pub mod backend;
pub mod changeset;
pub mod mdbx;
pub mod memory;
mod node_cache;
pub mod persist;
pub mod rocksdb;
pub mod store;

pub use backend::{KvBackend, Table, WriteBatch};
pub use changeset::ChangeSet;
pub use store::{BlockCommit, CacheSizes, DbKind, PreparedCommit, StateUpdate, Store};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database backend error: {0}")]
    Backend(String),
    #[error("I/O error on {0}: {1}")]
    Io(String, std::io::Error),
    #[error("corrupt {table} entry: {reason}")]
    Corrupt { table: &'static str, reason: String },
    #[error("{0}")]
    Invalid(String),
    #[error("writing to the database failed; blocks after the last written one are only in memory: {0}")]
    Persistence(String),
}

impl From<StoreError> for ethrex_trie::TrieError {
    fn from(e: StoreError) -> Self {
        ethrex_trie::TrieError::Store(e.to_string())
    }
}
