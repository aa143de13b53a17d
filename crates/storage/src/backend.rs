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
}

/// What a backend applies in one atomic write: the writes of one or more batches (oldest
/// first), in table and key order, the last write of each key only. Both backends insert
/// sorted keys much faster (MDBX walks each B-tree once; RocksDB's memtable skip list
/// reuses the position of the previous insert instead of searching from the top). When
/// several blocks are written at once, most of their trie nodes near a root and their hot
/// slots are written once instead of once per block.
pub struct SortedWrites<'a> {
    ops: Vec<&'a WriteOp>,
}

impl<'a> SortedWrites<'a> {
    /// The writes of `batches`, applied in the order given.
    pub fn of(batches: impl IntoIterator<Item = &'a WriteBatch>) -> Self {
        let mut ops: Vec<&'a WriteOp> = batches.into_iter().flat_map(|b| &b.ops).collect();
        // Stable: of two writes of one key, the later stays later and is the one kept.
        ops.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        let mut last: Vec<&'a WriteOp> = Vec::with_capacity(ops.len());
        for op in ops {
            match last.last_mut() {
                Some(prev) if prev.0 == op.0 && prev.1 == op.1 => *prev = op,
                _ => last.push(op),
            }
        }
        Self { ops: last }
    }

    /// The writes, in table and key order, one per key.
    pub fn iter(&self) -> impl Iterator<Item = &'a WriteOp> + '_ {
        self.ops.iter().copied()
    }

    /// How many keys are written.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether nothing is written.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

impl<'a> From<&'a WriteBatch> for SortedWrites<'a> {
    fn from(batch: &'a WriteBatch) -> Self {
        Self::of([batch])
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
    /// Applies the writes atomically and durably enough to survive a process kill.
    /// Borrowed, so the caller can keep the values (e.g. for its caches) without a copy.
    fn write(&self, writes: &SortedWrites<'_>) -> Result<(), StoreError>;
    /// Applies one batch atomically (see `write`).
    fn write_batch(&self, batch: &WriteBatch) -> Result<(), StoreError> {
        self.write(&SortedWrites::from(batch))
    }
    /// Makes every batch `write` has applied so far survive an OS crash or power loss
    /// (fsync). Backends without a disk have nothing to do.
    fn sync(&self) -> Result<(), StoreError> {
        Ok(())
    }
    /// The backend's name (`memory`, `mdbx`, `rocksdb`).
    fn kind(&self) -> &'static str;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_writes_keep_the_last_write_of_each_key_in_key_order() {
        let mut first = WriteBatch::new();
        first.put(Table::Storage, vec![2], vec![1]);
        first.put(Table::Code, vec![9], vec![1]);
        first.delete(Table::Storage, vec![1]);
        first.put(Table::Storage, vec![2], vec![2]);
        let mut second = WriteBatch::new();
        second.put(Table::Storage, vec![1], vec![3]);
        second.delete(Table::Storage, vec![2]);
        second.put(Table::Storage, vec![0], vec![4]);
        let writes = SortedWrites::of([&first, &second]);
        let got: Vec<_> = writes.iter().cloned().collect();
        let mut want = vec![
            (Table::Storage, vec![0], Some(vec![4])),
            (Table::Storage, vec![1], Some(vec![3])),
            (Table::Storage, vec![2], None),
            (Table::Code, vec![9], Some(vec![1])),
        ];
        want.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        assert_eq!(got, want);
        // One batch alone: its own later write wins.
        let alone: Vec<_> = SortedWrites::from(&first).iter().cloned().collect();
        assert!(alone.contains(&(Table::Storage, vec![2], Some(vec![2]))), "{alone:?}");
        assert!(alone.contains(&(Table::Storage, vec![1], None)), "{alone:?}");
        assert_eq!(alone.len(), 3);
    }
}
