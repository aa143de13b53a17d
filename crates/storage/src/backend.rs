//! The key-value layer under the store: named tables, point reads, prefix scans and
//! atomic write batches. Each backend (memory, MDBX, RocksDB) implements `KvBackend`;
//! everything above it is backend-agnostic.

use crate::codec::{EncodeValue, Key};
use crate::tables::TypedTable;
use crate::StoreError;

/// The runtime table id; each table is declared once, in `tables`.
pub use crate::tables::Table;

/// One write: `Some(value)` puts, `None` deletes.
pub type WriteOp = (Table, Vec<u8>, Option<Vec<u8>>);

/// Writes applied all-or-nothing by `KvBackend::write`.
#[derive(Debug, Default, Clone)]
pub struct WriteBatch {
    /// The writes, applied in order (a later write of a key wins).
    pub ops: Vec<WriteOp>,
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }
    /// An empty batch with room for `ops` writes.
    pub fn with_capacity(ops: usize) -> Self {
        Self { ops: Vec::with_capacity(ops) }
    }
    /// Puts raw bytes under a raw key.
    pub fn put(&mut self, table: Table, key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) {
        self.ops.push((table, key.into(), Some(value.into())));
    }
    /// Deletes a raw key.
    pub fn delete(&mut self, table: Table, key: impl Into<Vec<u8>>) {
        self.ops.push((table, key.into(), None));
    }
    /// Puts a value under a key of table `T`, both encoded as `T` declares.
    pub fn put_entry<T: TypedTable>(&mut self, key: &T::Key, value: impl EncodeValue<T::Value>) {
        self.ops.push((T::TABLE, key.encode_key().into(), Some(value.encode_value())));
    }
    /// Deletes a key of table `T`.
    pub fn delete_entry<T: TypedTable>(&mut self, key: &T::Key) {
        self.ops.push((T::TABLE, key.encode_key().into(), None));
    }
    /// How many writes the batch holds.
    pub fn len(&self) -> usize {
        self.ops.len()
    }
    /// Whether the batch holds no write.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
    /// The writes in table and key order, for a backend to apply: both backends insert
    /// sorted keys much faster (MDBX walks each B-tree once; RocksDB's memtable skip list
    /// reuses the position of the previous insert instead of searching from the top). The
    /// sort is stable, so of two writes of one key the later still comes later and wins.
    pub fn sorted_ops(&self) -> Vec<&WriteOp> {
        let mut ops: Vec<&WriteOp> = self.ops.iter().collect();
        ops.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        ops
    }
}

/// Key/value pairs in key order, as a prefix scan returns them.
pub type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// A key-value store with one keyspace per `Table`.
pub trait KvBackend: Send + Sync + 'static {
    /// The value stored under `key`, if any.
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError>;
    /// All entries whose key starts with `prefix`, in key order.
    fn scan_prefix(&self, table: Table, prefix: &[u8]) -> Result<Entries, StoreError>;
    /// Applies the whole batch atomically and durably enough to survive a process kill.
    /// Borrowed, so the caller can keep the values (e.g. for its caches) without a copy.
    fn write(&self, batch: &WriteBatch) -> Result<(), StoreError>;
    /// Makes every batch `write` has applied so far survive an OS crash or power loss
    /// (fsync). Backends without a disk have nothing to do.
    fn sync(&self) -> Result<(), StoreError> {
        Ok(())
    }
    /// The backend's name (`memory`, `mdbx`, `rocksdb`).
    fn kind(&self) -> &'static str;
}
