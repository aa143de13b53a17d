//! RocksDB backend: one column family per `Table`, one `WriteBatch` per commit.

use crate::backend::{Entries, KvBackend, SortedWrites, Table};
use crate::StoreError;
use rocksdb::{ColumnFamilyDescriptor, Direction, IteratorMode, Options, DB};
use std::path::Path;

/// The RocksDB backend: one column family per `Table`; writes go through the WAL,
/// which `sync` flushes to disk.
pub struct RocksBackend {
    db: DB,
    /// The block cache every column family shares.
    block_cache: rocksdb::Cache,
    path: std::path::PathBuf,
}

/// The capacity of RocksDB's block cache: decompressed blocks of the files, shared by
/// every table.
pub const BLOCK_CACHE_BYTES: usize = 256 << 20;

fn err(e: rocksdb::Error) -> StoreError {
    StoreError::Backend(Box::new(e))
}

impl RocksBackend {
    /// Opens (or creates) the database in directory `path`, with every table's column family.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        std::fs::create_dir_all(path).map_err(|e| StoreError::Io(path.display().to_string(), e))?;
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        opts.increase_parallelism(2);
        let block_cache = rocksdb::Cache::new_lru_cache(BLOCK_CACHE_BYTES);
        let cfs = Table::ALL.iter().map(|t| {
            let mut cf = Options::default();
            // Trie nodes and accounts are read by point lookups only: bloom filters pay.
            let mut block = rocksdb::BlockBasedOptions::default();
            block.set_bloom_filter(10.0, false);
            block.set_block_cache(&block_cache);
            cf.set_block_based_table_factory(&block);
            // Blocks read accounts and slots that do not exist yet (new accounts, fresh
            // slots); without a memtable filter each such miss searches the memtable's
            // skip list. The filter takes this fraction of the memtable's size: 2% of the
            // 64 MiB default is ~20 bits per key for the ~0.5M keys a memtable fills with,
            // plenty for few false positives. Each insert sets bits in it, and at the
            // 10% tried first (6.4 MiB per table) those bits were cache misses: ~2% of an
            // import's CPU (see docs/benchmarks.md).
            cf.set_memtable_prefix_bloom_ratio(0.02);
            cf.set_memtable_whole_key_filtering(true);
            ColumnFamilyDescriptor::new(t.name(), cf)
        });
        // RocksDB opens a database only with every column family it holds: one this
        // version does not declare (a table an older or newer version kept) is opened
        // too, and never read or written.
        let others: Vec<ColumnFamilyDescriptor> = DB::list_cf(&opts, path)
            .unwrap_or_default()
            .into_iter()
            .filter(|name| name != "default" && Table::ALL.iter().all(|t| t.name() != name))
            .map(|name| ColumnFamilyDescriptor::new(name, Options::default()))
            .collect();
        let db = DB::open_cf_descriptors(&opts, path, cfs.chain(others)).map_err(err)?;
        Ok(Self { db, block_cache, path: path.to_path_buf() })
    }

    /// The directory holding the database's files.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open database, for RocksDB operations this type does not wrap; each table is
    /// the column family named `Table::name`.
    pub fn db(&self) -> &DB {
        &self.db
    }

    /// The block cache every table shares (`BLOCK_CACHE_BYTES`); a clone is a handle to
    /// the same cache.
    pub fn block_cache(&self) -> &rocksdb::Cache {
        &self.block_cache
    }

    fn cf(&self, table: Table) -> Result<&rocksdb::ColumnFamily, StoreError> {
        self.db.cf_handle(table.name()).ok_or_else(|| {
            StoreError::Backend(format!("rocksdb: missing column family {}", table.name()).into())
        })
    }
}

impl KvBackend for RocksBackend {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.db.get_cf(self.cf(table)?, key).map_err(err)
    }

    fn scan_prefix(&self, table: Table, prefix: &[u8]) -> Result<Entries, StoreError> {
        let mut out = Vec::new();
        for item in
            self.db.iterator_cf(self.cf(table)?, IteratorMode::From(prefix, Direction::Forward))
        {
            let (k, v) = item.map_err(err)?;
            if !k.starts_with(prefix) {
                break;
            }
            out.push((k.to_vec(), v.to_vec()));
        }
        Ok(out)
    }

    fn write(&self, writes: &SortedWrites<'_>) -> Result<(), StoreError> {
        // RocksDB encodes the batch into one buffer: sized up front (a record is a tag, the
        // column family, two lengths, the key and the value), it is not grown and copied
        // over and over for a group of blocks, each growth touching fresh pages.
        let bytes = 12
            + writes
                .iter()
                .map(|(_, key, value)| 8 + key.len() + value.as_ref().map_or(0, Vec::len))
                .sum::<usize>();
        let mut wb = rocksdb::WriteBatch::with_capacity_bytes(bytes);
        for (table, key, value) in writes.iter() {
            let cf = self.cf(*table)?;
            match value {
                Some(v) => wb.put_cf(cf, key, v),
                None => wb.delete_cf(cf, key),
            }
        }
        // The WAL makes the batch survive a process kill; surviving an OS crash takes
        // `sync`, which the node calls before it reports a head as VALID.
        self.db.write(wb).map_err(err)
    }

    fn sync(&self) -> Result<(), StoreError> {
        self.db.flush_wal(true).map_err(err)
    }

    fn kind(&self) -> &'static str {
        "rocksdb"
    }
}
