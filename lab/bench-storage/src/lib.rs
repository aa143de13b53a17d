#![doc = include_str!("../README.md")]

mod backends;
pub mod latency;
pub mod mdbx_index;
pub mod os_cache;
mod store;

pub use store::BenchStore;

use ethrex_storage::{DbKind, KvBackend, StoreError};
use std::path::Path;
use std::sync::Arc;

/// The operations the benches need of a key-value backend beyond what a node does with
/// it: copies, compaction, cache drops, the index read back, and a count of reads.
/// Implemented here for the three backends of `ethrex-storage` and for `SlowReads`.
pub trait BenchBackend: KvBackend {
    /// Writes a copy of the database as it is now into `dest` (which must not exist), a
    /// database `open` can open on its own. Every batch `write` returned from is in it.
    /// Backends without files cannot.
    fn checkpoint(&self, dest: &Path) -> Result<(), StoreError> {
        Err(StoreError::Invalid(format!(
            "the {} backend cannot copy itself to {}",
            self.kind(),
            dest.display()
        )))
    }
    /// Rewrites the files into their most compact form (RocksDB: a full compaction), so
    /// copies made later (`checkpoint`) share them and start without pending work.
    /// Backends without such work have nothing to do.
    fn compact(&self) -> Result<(), StoreError> {
        Ok(())
    }
    /// Empties the backend's own read caches (RocksDB's block cache; MDBX's mapped
    /// pages), so the next reads go to the files. The OS page cache is not the
    /// backend's: see `os_cache`.
    fn drop_caches(&self) {}
    /// Reads the backend's index into memory and returns its size in bytes: what a
    /// running node keeps cached while its data is cold, read back after a page-cache
    /// drop so a cold measurement is cold data behind a warm index on every backend.
    /// MDBX: every branch page of every B-tree (`mdbx_index`), read. RocksDB keeps its
    /// index and filter blocks in its table readers' memory, which neither `drop_caches`
    /// nor a page-cache drop evicts: nothing to read, their size reported. Backends
    /// without files: nothing.
    fn warm_index(&self) -> Result<u64, StoreError> {
        Ok(0)
    }
    /// The directory holding the database's files, if it has any.
    fn directory(&self) -> Option<&Path> {
        None
    }
    /// How many reads reached the backend, for backends that count them (`SlowReads`).
    fn reads(&self) -> Option<u64> {
        None
    }
}

/// Opens (or creates) a backend of `kind` as `DbKind::open_backend` does (MDBX with
/// `MdbxOptions::from_env`), keeping its bench operations. `path` is required for
/// on-disk backends.
pub fn open_backend(
    kind: DbKind,
    path: Option<&Path>,
) -> Result<Arc<dyn BenchBackend>, StoreError> {
    use ethrex_storage::{mdbx, memory, rocksdb};
    let need_path =
        || path.ok_or_else(|| StoreError::Invalid(format!("{kind:?} needs a data directory")));
    Ok(match kind {
        DbKind::Memory => Arc::new(memory::MemoryBackend::new()),
        DbKind::Mdbx => {
            Arc::new(mdbx::MdbxBackend::open_with(need_path()?, mdbx::MdbxOptions::from_env()?)?)
        }
        DbKind::Rocksdb => Arc::new(rocksdb::RocksBackend::open(need_path()?)?),
    })
}
