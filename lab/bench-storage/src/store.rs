//! A `Store` opened for a bench, with a typed handle to the backend under it.

use crate::latency::SlowReads;
use crate::BenchBackend;
use ethrex_storage::{DbKind, Store, StoreError};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// A store and the backend it reads and writes, kept as a `BenchBackend` so a bench can
/// copy, compact and cool the database under the store. Cloning shares both.
#[derive(Clone)]
pub struct BenchStore {
    /// The store over `backend`: what the import pipeline and the readers use.
    pub store: Store,
    /// The backend under `store`.
    pub backend: Arc<dyn BenchBackend>,
}

impl BenchStore {
    /// A store over `backend` with the default cache sizes.
    pub fn new(backend: Arc<dyn BenchBackend>) -> Self {
        Self { store: Store::new(backend.clone()), backend }
    }

    /// Opens (creating if needed) a store of `kind`, as `Store::open` does. `path` is
    /// required for on-disk backends.
    pub fn open(kind: DbKind, path: Option<&Path>) -> Result<Self, StoreError> {
        Ok(Self::new(crate::open_backend(kind, path)?))
    }

    /// As `open`, with every read that reaches the backend delayed by `read_latency` and
    /// counted (`backend_reads`): see `latency`.
    pub fn open_with_read_latency(
        kind: DbKind,
        path: Option<&Path>,
        read_latency: Duration,
    ) -> Result<Self, StoreError> {
        let backend = crate::open_backend(kind, path)?;
        Ok(Self::new(Arc::new(SlowReads::new(backend, read_latency))))
    }

    /// Copies the database, every accepted batch included, into `dest` (a new
    /// directory), which `open` can then open as a store of its own.
    pub fn checkpoint(&self, dest: &Path) -> Result<(), StoreError> {
        self.store.with_writes_paused(|| self.backend.checkpoint(dest))
    }

    /// Waits for every accepted batch, then compacts the database's files (see
    /// `BenchBackend::compact`): for a database many copies will be made of.
    pub fn compact(&self) -> Result<(), StoreError> {
        self.store.with_writes_paused(|| self.backend.compact())
    }

    /// Reads the database's index back into memory after a page-cache drop, once every
    /// accepted batch is written (see `BenchBackend::warm_index`); returns its size in
    /// bytes.
    pub fn warm_index(&self) -> Result<u64, StoreError> {
        self.store.with_writes_paused(|| self.backend.warm_index())
    }

    /// Empties the store's caches (trie nodes, accounts, slots, code) and the backend's,
    /// after waiting for every accepted batch to reach the backend: the next reads of the
    /// state go to the database. The OS page cache is dropped separately (`os_cache`).
    pub fn clear_caches(&self) -> Result<(), StoreError> {
        self.store.clear_caches()?;
        self.backend.drop_caches();
        Ok(())
    }

    /// The directory holding the database files (none for the memory backend).
    pub fn directory(&self) -> Option<&Path> {
        self.backend.directory()
    }

    /// Reads that reached the backend so far, when it counts them (a store opened with
    /// `open_with_read_latency`).
    pub fn backend_reads(&self) -> Option<u64> {
        self.backend.reads()
    }
}
