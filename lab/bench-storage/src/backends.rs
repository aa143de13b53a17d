//! `BenchBackend` for the backends of `ethrex-storage`, through the raw handles they
//! expose (`MdbxBackend::raw_env`, `RocksBackend::db`, `RocksBackend::block_cache`).

use crate::BenchBackend;
use ethrex_storage::mdbx::MdbxBackend;
use ethrex_storage::memory::MemoryBackend;
use ethrex_storage::rocksdb::{RocksBackend, BLOCK_CACHE_BYTES};
use ethrex_storage::{StoreError, Table};
use mdbx_sys as ffi;
use std::path::Path;

/// Nothing on disk: no copies, no caches, no index (the trait's defaults).
impl BenchBackend for MemoryBackend {}

/// Reads `file` from start to end into the page cache, in large sequential reads.
fn read_through(file: &Path) -> Result<(), StoreError> {
    use std::io::Read;
    let io = |e| StoreError::Io(file.display().to_string(), e);
    let mut f = std::fs::File::open(file).map_err(io)?;
    let mut buf = vec![0u8; 16 << 20];
    while f.read(&mut buf).map_err(io)? > 0 {}
    Ok(())
}

impl BenchBackend for MdbxBackend {
    fn checkpoint(&self, dest: &Path) -> Result<(), StoreError> {
        // MDBX's compacting copy of a snapshot: the pages in use only, renumbered in tree
        // order, so the copy leaves out the free pages a file accumulates (a third of the
        // big-state genesis databases) and needs no steady point first. The lock file is
        // per process and not copied.
        use std::os::unix::ffi::OsStrExt;
        std::fs::create_dir_all(dest).map_err(|e| StoreError::Io(dest.display().to_string(), e))?;
        let file = dest.join("mdbx.dat");
        // The copy walks the trees through the map, which faults pages in one at a time
        // without read-ahead (see `MdbxOptions::readahead`): on a cold file, one random
        // read per page (minutes for the 12 GB big-state genesis here). Reading the file
        // through once first makes that one sequential read (`POSIX_FADV_WILLNEED` was
        // tried and left most of it unread).
        read_through(&self.path().join("mdbx.dat"))?;
        let name = std::ffi::CString::new(file.as_os_str().as_bytes())
            .map_err(|_| StoreError::Invalid(format!("{} has a NUL byte", file.display())))?;
        // SAFETY: the environment is open for as long as `self`; `name` is a C string
        // that outlives the call.
        let rc = unsafe {
            ffi::mdbx_env_copy(
                self.raw_env(),
                name.as_ptr(),
                ffi::MDBX_CP_COMPACT | ffi::MDBX_CP_FORCE_DYNAMIC_SIZE,
            )
        };
        if rc != ffi::MDBX_SUCCESS {
            return Err(StoreError::Invalid(format!(
                "copying MDBX to {}: {}",
                file.display(),
                libmdbx::Error::from_err_code(rc)
            )));
        }
        Ok(())
    }

    fn warm_index(&self) -> Result<u64, StoreError> {
        let read =
            crate::mdbx_index::warm(&self.path().join("mdbx.dat"), self.page_size() as usize)?;
        Ok(read.pages * self.page_size())
    }

    fn drop_caches(&self) {
        // MDBX has no cache of its own: its reads are the pages of its memory map, which
        // a page-cache drop cannot evict while they are mapped. Letting go of them here
        // makes a cold run cold for MDBX too.
        if let Err(e) = crate::os_cache::release_mapped_pages(&self.path().join("mdbx.dat")) {
            tracing::warn!(error = %e, "could not release MDBX's mapped pages; its reads stay warm");
        }
    }

    fn directory(&self) -> Option<&Path> {
        Some(self.path())
    }
}

fn rocks_err(e: rocksdb::Error) -> StoreError {
    StoreError::Backend(Box::new(e))
}

/// The column family of `table` in `backend`.
fn cf(backend: &RocksBackend, table: Table) -> Result<&rocksdb::ColumnFamily, StoreError> {
    backend.db().cf_handle(table.name()).ok_or_else(|| {
        StoreError::Backend(format!("rocksdb: missing column family {}", table.name()).into())
    })
}

impl BenchBackend for RocksBackend {
    fn checkpoint(&self, dest: &Path) -> Result<(), StoreError> {
        // Hard links to the immutable table files plus a copy of the live ones: cheap
        // whatever the database's size, when `dest` is on the same file system.
        // With the memtables on disk the copy links table files only, instead of copying
        // the write-ahead log (and replaying it into new tables when it is opened).
        let db = self.db();
        db.flush_wal(true).map_err(rocks_err)?;
        for table in Table::ALL {
            db.flush_cf(cf(self, table)?).map_err(rocks_err)?;
        }
        rocksdb::checkpoint::Checkpoint::new(db)
            .and_then(|c| c.create_checkpoint(dest))
            .map_err(rocks_err)
    }

    fn compact(&self) -> Result<(), StoreError> {
        let db = self.db();
        for table in Table::ALL {
            db.flush_cf(cf(self, table)?).map_err(rocks_err)?;
            db.compact_range_cf(cf(self, table)?, None::<&[u8]>, None::<&[u8]>);
        }
        Ok(())
    }

    fn warm_index(&self) -> Result<u64, StoreError> {
        // Index and filter blocks live in the table readers (not in the block cache:
        // `cache_index_and_filter_blocks` is off), loaded when a file opens.
        let mut bytes = 0;
        for table in Table::ALL {
            bytes += self
                .db()
                .property_int_value_cf(cf(self, table)?, "rocksdb.estimate-table-readers-mem")
                .map_err(rocks_err)?
                .unwrap_or(0);
        }
        Ok(bytes)
    }

    fn drop_caches(&self) {
        // A handle to the shared cache: shrinking it to nothing evicts every block.
        let mut cache = self.block_cache().clone();
        cache.set_capacity(0);
        cache.set_capacity(BLOCK_CACHE_BYTES);
    }

    fn directory(&self) -> Option<&Path> {
        Some(self.path())
    }
}
