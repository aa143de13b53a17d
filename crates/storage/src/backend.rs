//! The key-value layer under the store: named tables, point reads, prefix scans and
//! atomic write batches. Each backend (memory, MDBX, RocksDB) implements `KvBackend`;
//! everything above it is backend-agnostic.

use crate::StoreError;

/// Every table the client keeps. The discriminant order is the on-disk table list order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Table {
    /// block hash -> RLP header
    Headers,
    /// block hash -> block number (8 bytes big-endian)
    HeaderNumbers,
    /// block number (8 bytes BE) -> canonical block hash
    CanonicalHashes,
    /// block hash -> RLP body (transactions, ommers, withdrawals)
    Bodies,
    /// block hash -> RLP list of EIP-2718 receipts
    Receipts,
    /// block hash -> RLP block access list (EIP-7928)
    Bals,
    /// address -> RLP trie account (flat state of the head block)
    Accounts,
    /// address ++ slot (32 bytes) -> value (big-endian, no leading zeros)
    Storage,
    /// code hash -> bytecode
    Code,
    /// node hash -> RLP trie node (accounts trie and all storage tries share it)
    TrieNodes,
    /// block hash -> RLP change set: the values the block overwrote, to unwind it
    ChangeSets,
    /// fixed keys -> chain metadata (head, genesis)
    Meta,
}

impl Table {
    pub const ALL: [Table; 12] = [
        Table::Headers,
        Table::HeaderNumbers,
        Table::CanonicalHashes,
        Table::Bodies,
        Table::Receipts,
        Table::Bals,
        Table::Accounts,
        Table::Storage,
        Table::Code,
        Table::TrieNodes,
        Table::ChangeSets,
        Table::Meta,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Table::Headers => "headers",
            Table::HeaderNumbers => "header_numbers",
            Table::CanonicalHashes => "canonical_hashes",
            Table::Bodies => "bodies",
            Table::Receipts => "receipts",
            Table::Bals => "bals",
            Table::Accounts => "accounts",
            Table::Storage => "storage",
            Table::Code => "code",
            Table::TrieNodes => "trie_nodes",
            Table::ChangeSets => "change_sets",
            Table::Meta => "meta",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

/// One write: `Some(value)` puts, `None` deletes.
pub type WriteOp = (Table, Vec<u8>, Option<Vec<u8>>);

/// Writes applied all-or-nothing by `KvBackend::write`.
#[derive(Debug, Default, Clone)]
pub struct WriteBatch {
    pub ops: Vec<WriteOp>,
}

impl WriteBatch {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn with_capacity(ops: usize) -> Self {
        Self { ops: Vec::with_capacity(ops) }
    }
    pub fn put(&mut self, table: Table, key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) {
        self.ops.push((table, key.into(), Some(value.into())));
    }
    pub fn delete(&mut self, table: Table, key: impl Into<Vec<u8>>) {
        self.ops.push((table, key.into(), None));
    }
    pub fn len(&self) -> usize {
        self.ops.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

/// Key/value pairs in key order, as a prefix scan returns them.
pub type Entries = Vec<(Vec<u8>, Vec<u8>)>;

pub trait KvBackend: Send + Sync + 'static {
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
    fn kind(&self) -> &'static str;
}
