//! Where nodes are kept: a key-value table keyed by node path.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, PoisonError, RwLock};

/// A batch of node writes, applied atomically by [`NodeStore::write`].
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct NodeBatch {
    /// `(key, blob)` pairs to store, replacing any previous blob under the key.
    pub puts: Vec<(Vec<u8>, Vec<u8>)>,
    /// Keys to remove (never also in `puts`).
    pub deletes: Vec<Vec<u8>>,
}

impl NodeBatch {
    /// No puts and no deletes.
    pub fn is_empty(&self) -> bool {
        self.puts.is_empty() && self.deletes.is_empty()
    }
}

/// A table of node blobs keyed by node path (see the crate docs for the key format), e.g.
/// an MDBX or RocksDB table.
pub trait NodeStore {
    /// What a failed read or write reports.
    type Error: std::error::Error + Send + Sync + 'static;

    /// The blob stored under `key`, `None` if there is none.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, Self::Error>;

    /// Applies `batch` atomically.
    fn write(&self, batch: NodeBatch) -> Result<(), Self::Error>;
}

impl<T: NodeStore + ?Sized> NodeStore for &T {
    type Error = T::Error;

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, Self::Error> {
        (**self).get(key)
    }

    fn write(&self, batch: NodeBatch) -> Result<(), Self::Error> {
        (**self).write(batch)
    }
}

impl<T: NodeStore + ?Sized> NodeStore for Arc<T> {
    type Error = T::Error;

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, Self::Error> {
        (**self).get(key)
    }

    fn write(&self, batch: NodeBatch) -> Result<(), Self::Error> {
        (**self).write(batch)
    }
}

/// A node store in a `HashMap`.
#[derive(Debug, Default)]
pub struct MemoryStore {
    nodes: RwLock<HashMap<Vec<u8>, Vec<u8>>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of stored blobs.
    pub fn len(&self) -> usize {
        self.nodes.read().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Total bytes of keys and blobs.
    pub fn size_bytes(&self) -> usize {
        let nodes = self.nodes.read().unwrap_or_else(PoisonError::into_inner);
        nodes.iter().map(|(key, blob)| key.len() + blob.len()).sum()
    }

    /// A copy of every `(key, blob)` pair, sorted by key.
    pub fn entries(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let nodes = self.nodes.read().unwrap_or_else(PoisonError::into_inner);
        let mut entries: Vec<_> = nodes.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        entries.sort();
        entries
    }
}

impl NodeStore for MemoryStore {
    type Error = Infallible;

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, Infallible> {
        Ok(self.nodes.read().unwrap_or_else(PoisonError::into_inner).get(key).cloned())
    }

    fn write(&self, batch: NodeBatch) -> Result<(), Infallible> {
        let mut nodes = self.nodes.write().unwrap_or_else(PoisonError::into_inner);
        for key in batch.deletes {
            nodes.remove(&key);
        }
        nodes.extend(batch.puts);
        Ok(())
    }
}
