//! Typed access to the tables, and the atomic block commit.

use crate::backend::{Entries, KvBackend, Table, WriteBatch};
use crate::changeset::ChangeSet;
use crate::memory::MemoryBackend;
use crate::node_cache::{node_cache, NodeCache};
use crate::persist::{Overlay, PendingBatch, Persister};
use crate::StoreError;
use alloy_primitives::{Address, Bytes, B256, U256};
use alloy_rlp::Decodable;
use ethrex_common::{AccountState, Block, BlockAccessList, BlockBody, Header, Receipt};
use ethrex_trie::{NodeReader, TrieError};
use std::path::Path;
use std::sync::Arc;

const HEAD_KEY: &[u8] = b"head";
const GENESIS_KEY: &[u8] = b"genesis";

/// Which key-value backend holds the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DbKind {
    Memory,
    Mdbx,
    Rocksdb,
}

impl std::str::FromStr for DbKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "memory" => Ok(DbKind::Memory),
            "mdbx" => Ok(DbKind::Mdbx),
            "rocksdb" => Ok(DbKind::Rocksdb),
            other => Err(format!("unknown database '{other}' (expected memory, mdbx or rocksdb)")),
        }
    }
}

/// Flat state and trie changes of one block, ready to be written.
#[derive(Debug, Default, Clone)]
pub struct StateUpdate {
    /// New account records (`None`: the account no longer exists).
    pub accounts: Vec<(Address, Option<AccountState>)>,
    /// New storage values (zero deletes the slot).
    pub storage: Vec<(Address, U256, U256)>,
    /// Storage slots removed because the account was destroyed or recreated.
    pub wiped_storage: Vec<(Address, U256)>,
    pub codes: Vec<(B256, Bytes)>,
    pub trie_nodes: Vec<(B256, Vec<u8>)>,
}

/// A block's batch, encoded and indexed, not yet committed (`Store::prepare_block`).
pub struct PreparedCommit(PendingBatch);

/// Everything one imported block writes, committed in one batch.
pub struct BlockCommit<'a> {
    pub hash: B256,
    pub block: &'a Block,
    pub bal: Option<&'a BlockAccessList>,
    pub receipts: &'a [Receipt],
    pub state: StateUpdate,
    pub change_set: ChangeSet,
}

/// Trie nodes kept in memory across blocks (see `node_cache`).
const NODE_CACHE_ENTRIES: usize = 1 << 20;

/// Flat state of the head kept in memory across blocks. Unlike trie nodes these entries
/// change, so every write of the flat tables goes through `Store::write`, which has the
/// caches updated as soon as it has accepted the batch (see `FlatCache::unapplied`).
const ACCOUNT_CACHE_ENTRIES: usize = 1 << 19;
const STORAGE_CACHE_ENTRIES: usize = 1 << 21;
/// Contract code: up to 64 MiB, sized for a few thousand contracts.
const CODE_CACHE_BYTES: u64 = 64 << 20;
const CODE_CACHE_ENTRIES: usize = 4096;

struct FlatCache {
    /// Misses fill the cache under the read side; a batch becomes visible (enters the
    /// overlay) under the write side, so a reader can never put back a value that a batch
    /// accepted meanwhile has replaced: fillers that start later read the batch.
    fill_lock: parking_lot::RwLock<()>,
    /// The last accepted batch while its values are still being put into the caches, on
    /// the pool after `accept` returned: reads consult it before the caches. Putting
    /// ~2,000 values into these caches took ~0.85 ms on the import's critical path (the
    /// inserts are cache misses in large tables); a read of a written key now waits for
    /// nothing, and reads of other keys only check this batch's index meanwhile.
    unapplied: parking_lot::RwLock<Option<Arc<PendingBatch>>>,
    /// Whether `unapplied` may be set (read without touching the lock's cache line).
    has_unapplied: std::sync::atomic::AtomicBool,
    /// Serialises appliers: a batch is applied only while it is the last accepted one.
    apply_lock: parking_lot::Mutex<()>,
    /// Decoded account records (a hit costs no allocation or decode); `None`: the account
    /// does not exist.
    accounts: quick_cache::sync::Cache<Address, Option<AccountState>>,
    storage: quick_cache::sync::Cache<(Address, U256), U256>,
    /// Contract code by hash. Code never changes under its hash, so entries are never
    /// stale and need no lock: every block reads the same few hot contracts again.
    code: quick_cache::sync::Cache<B256, Bytes, CodeWeighter>,
}

impl FlatCache {
    /// Puts the values of the last accepted batch into the flat caches, if that has not
    /// been done yet, then stops reads from consulting it first. Runs on one thread and
    /// takes no lock a reader holds: it must not steal (and wait on) work that reads.
    fn apply_unapplied(&self) {
        use std::sync::atomic::Ordering;
        if !self.has_unapplied.load(Ordering::Acquire) {
            return;
        }
        let _applier = self.apply_lock.lock();
        let Some(pending) = self.unapplied.read().clone() else { return };
        for (key, value) in pending.table_ops(Table::Accounts) {
            if let FlatKey::Account(address) = flat_key(key) {
                match value.map(|v| decode::<AccountState>(Table::Accounts, v)).transpose() {
                    Ok(account) => self.accounts.insert(address, account),
                    // Left to a read through the overlay, which reports it.
                    Err(_) => {
                        self.accounts.remove(&address);
                    }
                }
            }
        }
        for (key, value) in pending.table_ops(Table::Storage) {
            if let FlatKey::Slot(address, slot) = flat_key(key) {
                let v = value.and_then(|v| U256::try_from_be_slice(v)).unwrap_or_default();
                self.storage.insert((address, slot), v);
            }
        }
        // Only after the caches hold every value may reads skip the batch.
        *self.unapplied.write() = None;
        self.has_unapplied.store(false, Ordering::Release);
    }
}

/// Weighs code by its length, so the code cache is bounded in bytes.
#[derive(Clone)]
struct CodeWeighter;

impl quick_cache::Weighter<B256, Bytes> for CodeWeighter {
    fn weight(&self, _: &B256, code: &Bytes) -> u64 {
        code.len().max(1) as u64
    }
}

/// Reads see, in order: the last accepted batch while its values are still on their way
/// into the caches, the caches, the batches still waiting for the disk (`Overlay`), the
/// backend. Writes return once the batch is in the overlay; its values enter the caches
/// on the pool just after, and the persister thread puts it on disk (see `persist`).
#[derive(Clone)]
pub struct Store {
    backend: Arc<dyn KvBackend>,
    nodes: Arc<NodeCache>,
    flat: Arc<FlatCache>,
    overlay: Arc<Overlay>,
    persister: Arc<Persister>,
    /// Keeps batches entering the overlay and the persister's queue in the same order.
    write_order: Arc<parking_lot::Mutex<()>>,
}

fn corrupt(table: Table, e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt { table: table.name(), reason: e.to_string() }
}

fn decode<T: Decodable>(table: Table, bytes: &[u8]) -> Result<T, StoreError> {
    let mut buf = bytes;
    T::decode(&mut buf).map_err(|e| corrupt(table, e))
}

/// A slot's key in the storage table: the address, then the slot, big-endian.
fn storage_key(address: &Address, slot: &U256) -> [u8; 52] {
    let mut key = [0u8; 52];
    key[..20].copy_from_slice(address.as_slice());
    key[20..].copy_from_slice(&slot.to_be_bytes::<32>());
    key
}

/// A value of the storage table (big-endian, leading zeros trimmed).
fn decode_slot_value(bytes: &[u8]) -> Result<U256, StoreError> {
    U256::try_from_be_slice(bytes).ok_or_else(|| corrupt(Table::Storage, "value over 32 bytes"))
}

/// What a key of the cached tables names, told apart by its length.
enum FlatKey {
    Account(Address),
    Slot(Address, U256),
    Node(B256),
    Other,
}

fn flat_key(key: &[u8]) -> FlatKey {
    match key.len() {
        20 => FlatKey::Account(Address::from_slice(key)),
        52 => FlatKey::Slot(Address::from_slice(&key[..20]), U256::from_be_slice(&key[20..])),
        32 => FlatKey::Node(B256::from_slice(key)),
        _ => FlatKey::Other,
    }
}

fn encode_u256(value: &U256) -> Vec<u8> {
    value.to_be_bytes_trimmed_vec()
}

/// How many entries the in-memory caches hold.
#[derive(Debug, Clone, Copy)]
pub struct CacheSizes {
    pub trie_nodes: usize,
    pub accounts: usize,
    pub storage: usize,
}

impl Default for CacheSizes {
    fn default() -> Self {
        Self { trie_nodes: NODE_CACHE_ENTRIES, accounts: ACCOUNT_CACHE_ENTRIES, storage: STORAGE_CACHE_ENTRIES }
    }
}

impl Store {
    pub fn new(backend: Arc<dyn KvBackend>) -> Self {
        Self::with_cache_sizes(backend, CacheSizes::default())
    }

    pub fn with_cache_sizes(backend: Arc<dyn KvBackend>, sizes: CacheSizes) -> Self {
        let nodes = Arc::new(node_cache(sizes.trie_nodes));
        let overlay = Arc::new(Overlay::default());
        let persister_nodes = nodes.clone();
        let persister = Persister::start(backend.clone(), overlay.clone(), move |written| {
            // Trie nodes never change, so they can enter the cache whenever; doing it here
            // keeps the copy (or, usually, the move) off the commit's critical path.
            let batch = match Arc::try_unwrap(written) {
                Ok(pending) => pending.batch,
                Err(shared) => shared.batch.clone(),
            };
            for (table, key, value) in batch.ops {
                if let (Table::TrieNodes, FlatKey::Node(hash), Some(node)) = (table, flat_key(&key), value) {
                    persister_nodes.insert(hash, Arc::from(node));
                }
            }
        });
        Self {
            backend,
            nodes,
            flat: Arc::new(FlatCache {
                fill_lock: parking_lot::RwLock::new(()),
                unapplied: parking_lot::RwLock::new(None),
                has_unapplied: std::sync::atomic::AtomicBool::new(false),
                apply_lock: parking_lot::Mutex::new(()),
                accounts: quick_cache::sync::Cache::new(sizes.accounts),
                storage: quick_cache::sync::Cache::new(sizes.storage),
                code: quick_cache::sync::Cache::with_weighter(CODE_CACHE_ENTRIES, CODE_CACHE_BYTES, CodeWeighter),
            }),
            overlay,
            persister: Arc::new(persister),
            write_order: Arc::new(parking_lot::Mutex::new(())),
        }
    }

    pub fn in_memory() -> Self {
        Self::new(Arc::new(MemoryBackend::new()))
    }

    /// Opens (creating if needed) a store. `path` is required for on-disk backends.
    pub fn open(kind: DbKind, path: Option<&Path>) -> Result<Self, StoreError> {
        let need_path = || path.ok_or_else(|| StoreError::Invalid(format!("{kind:?} needs a data directory")));
        Ok(match kind {
            DbKind::Memory => Self::in_memory(),
            DbKind::Mdbx => Self::new(Arc::new(crate::mdbx::MdbxBackend::open(need_path()?)?)),
            DbKind::Rocksdb => Self::new(Arc::new(crate::rocksdb::RocksBackend::open(need_path()?)?)),
        })
    }

    pub fn backend_kind(&self) -> &'static str {
        self.backend.kind()
    }

    /// Accepts a batch: once this returns, every read sees it; the persister thread
    /// applies it to the backend atomically, after the batches accepted before it.
    pub fn write(&self, batch: WriteBatch) -> Result<(), StoreError> {
        self.accept(PendingBatch::new(batch))
    }

    fn accept(&self, pending: PendingBatch) -> Result<(), StoreError> {
        let _order = self.write_order.lock();
        self.persister.check()?;
        // The caches must hold the previous batch before this one can be put over it.
        self.flat.apply_unapplied();
        let pending = Arc::new(pending);
        {
            // No read that started before this batch was visible can fill a cache after
            // it: fillers hold the read side, and from here on they see the batch in the
            // overlay (so they only ever fill its values).
            let _exclusive = self.flat.fill_lock.write();
            self.overlay.push(pending.clone());
            *self.flat.unapplied.write() = Some(pending.clone());
            self.flat.has_unapplied.store(true, std::sync::atomic::Ordering::Release);
        }
        // Only the caches go along: a queued job must not keep the database open.
        let flat = self.flat.clone();
        rayon::spawn(move || flat.apply_unapplied());
        self.persister.submit(pending)
    }

    /// The value the last accepted batch writes for `key`, while it is not yet in the
    /// caches: `Some(None)` deletes, `None` does not touch the key.
    fn unapplied_value<T>(&self, table: Table, key: &[u8], read: impl FnOnce(Option<&[u8]>) -> T) -> Option<T> {
        if !self.flat.has_unapplied.load(std::sync::atomic::Ordering::Acquire) {
            return None;
        }
        let unapplied = self.flat.unapplied.read();
        unapplied.as_ref()?.get(table, key).map(read)
    }

    /// Waits until every accepted batch is on disk; reports a failed write.
    pub fn flush(&self) -> Result<(), StoreError> {
        self.persister.flush()
    }

    /// Makes the committed blocks durable up to a bound: waits until at most `lag`
    /// accepted batches are still waiting for the backend, then syncs the backend, so
    /// every batch up to that point survives an OS crash or power loss. `lag` 0 makes
    /// everything committed so far durable. Reports a failed write.
    pub fn persist(&self, lag: u64) -> Result<(), StoreError> {
        self.persister.wait_until_behind(lag)?;
        self.backend.sync()?;
        // A write can fail while we synced; the caller must not report durability then.
        self.persister.check()
    }

    /// Waits for the first failed background write without keeping the store open. A
    /// node uses it to stop instead of serving state it cannot keep.
    pub fn failure_watch(&self) -> crate::persist::FailureWatch {
        self.persister.failure_watch()
    }

    /// How long the backend took for each batch written since the last call.
    pub fn take_write_times(&self) -> Vec<std::time::Duration> {
        self.persister.take_write_times()
    }

    /// A point read through the overlay of batches not yet on disk.
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        match self.overlay.get(table, key) {
            Some(value) => Ok(value),
            None => self.backend.get(table, key),
        }
    }

    fn scan_prefix(&self, table: Table, prefix: &[u8]) -> Result<Entries, StoreError> {
        let pending = self.overlay.snapshot();
        let base = self.backend.scan_prefix(table, prefix)?;
        Ok(crate::persist::merge_scan(&pending, table, prefix, base))
    }

    // ---- chain data ----

    pub fn header(&self, hash: &B256) -> Result<Option<Header>, StoreError> {
        self
            .get(Table::Headers, hash.as_slice())?
            .map(|b| decode(Table::Headers, &b))
            .transpose()
    }

    pub fn block_number(&self, hash: &B256) -> Result<Option<u64>, StoreError> {
        match self.get(Table::HeaderNumbers, hash.as_slice())? {
            None => Ok(None),
            Some(b) => Ok(Some(u64::from_be_bytes(
                b.as_slice().try_into().map_err(|_| corrupt(Table::HeaderNumbers, "not 8 bytes"))?,
            ))),
        }
    }

    pub fn canonical_hash(&self, number: u64) -> Result<Option<B256>, StoreError> {
        match self.get(Table::CanonicalHashes, &number.to_be_bytes())? {
            None => Ok(None),
            Some(b) if b.len() == 32 => Ok(Some(B256::from_slice(&b))),
            Some(_) => Err(corrupt(Table::CanonicalHashes, "not 32 bytes")),
        }
    }

    pub fn body(&self, hash: &B256) -> Result<Option<BlockBody>, StoreError> {
        self.get(Table::Bodies, hash.as_slice())?.map(|b| decode(Table::Bodies, &b)).transpose()
    }

    pub fn block(&self, hash: &B256) -> Result<Option<Block>, StoreError> {
        let (Some(header), Some(body)) = (self.header(hash)?, self.body(hash)?) else {
            return Ok(None);
        };
        Ok(Some(Block { header, body }))
    }

    pub fn receipts(&self, hash: &B256) -> Result<Option<Vec<Receipt>>, StoreError> {
        self.get(Table::Receipts, hash.as_slice())?.map(|b| decode(Table::Receipts, &b)).transpose()
    }

    pub fn bal(&self, hash: &B256) -> Result<Option<BlockAccessList>, StoreError> {
        self.get(Table::Bals, hash.as_slice())?.map(|b| decode(Table::Bals, &b)).transpose()
    }

    pub fn change_set(&self, hash: &B256) -> Result<Option<ChangeSet>, StoreError> {
        self.get(Table::ChangeSets, hash.as_slice())?.map(|b| ChangeSet::decode(&b)).transpose()
    }

    fn meta_hash(&self, key: &[u8]) -> Result<Option<B256>, StoreError> {
        match self.get(Table::Meta, key)? {
            None => Ok(None),
            Some(b) if b.len() == 32 => Ok(Some(B256::from_slice(&b))),
            Some(_) => Err(corrupt(Table::Meta, "hash not 32 bytes")),
        }
    }

    /// Hash of the block whose state the flat tables hold.
    pub fn head(&self) -> Result<Option<B256>, StoreError> {
        self.meta_hash(HEAD_KEY)
    }

    pub fn head_header(&self) -> Result<Option<Header>, StoreError> {
        match self.head()? {
            None => Ok(None),
            Some(h) => self.header(&h),
        }
    }

    pub fn genesis_hash(&self) -> Result<Option<B256>, StoreError> {
        self.meta_hash(GENESIS_KEY)
    }

    // ---- state of the head block ----

    pub fn account(&self, address: &Address) -> Result<Option<AccountState>, StoreError> {
        if let Some(record) = self.unapplied_value(Table::Accounts, address.as_slice(), |v| {
            v.map(|b| decode::<AccountState>(Table::Accounts, b)).transpose()
        }) {
            return record;
        }
        if let Some(account) = self.flat.accounts.get(address) {
            return Ok(account);
        }
        let _fill = self.flat.fill_lock.read();
        let account = self
            .get(Table::Accounts, address.as_slice())?
            .map(|b| decode::<AccountState>(Table::Accounts, &b))
            .transpose()?;
        self.flat.accounts.insert(*address, account);
        Ok(account)
    }

    pub fn storage(&self, address: &Address, slot: &U256) -> Result<U256, StoreError> {
        if self.flat.has_unapplied.load(std::sync::atomic::Ordering::Acquire) {
            let key = storage_key(address, slot);
            if let Some(value) = self.unapplied_value(Table::Storage, &key, |v| {
                v.map(decode_slot_value).transpose().map(Option::unwrap_or_default)
            }) {
                return value;
            }
        }
        if let Some(v) = self.flat.storage.get(&(*address, *slot)) {
            return Ok(v);
        }
        let _fill = self.flat.fill_lock.read();
        // Through the overlay: an evicted entry may belong to a batch still on its way
        // to the disk.
        let value = self
            .get(Table::Storage, &storage_key(address, slot))?
            .map(|b| decode_slot_value(&b))
            .transpose()?
            .unwrap_or_default();
        self.flat.storage.insert((*address, *slot), value);
        Ok(value)
    }

    /// Every non-zero slot of an account (used when an account's storage is wiped).
    pub fn storage_entries(&self, address: &Address) -> Result<Vec<(U256, U256)>, StoreError> {
        self
            .scan_prefix(Table::Storage, address.as_slice())?
            .into_iter()
            .map(|(k, v)| {
                if k.len() != 52 {
                    return Err(corrupt(Table::Storage, "key not 52 bytes"));
                }
                let value = decode_slot_value(&v)?;
                Ok((U256::from_be_slice(&k[20..]), value))
            })
            .collect()
    }

    pub fn code(&self, code_hash: &B256) -> Result<Option<Bytes>, StoreError> {
        if let Some(code) = self.flat.code.get(code_hash) {
            return Ok(Some(code));
        }
        let code = self.get(Table::Code, code_hash.as_slice())?.map(Bytes::from);
        if let Some(code) = &code {
            self.flat.code.insert(*code_hash, code.clone());
        }
        Ok(code)
    }

    /// Every account of the flat state (export, tests; walks the whole table).
    pub fn all_accounts(&self) -> Result<Vec<(Address, AccountState)>, StoreError> {
        self
            .scan_prefix(Table::Accounts, &[])?
            .into_iter()
            .map(|(k, v)| {
                if k.len() != 20 {
                    return Err(corrupt(Table::Accounts, "key not 20 bytes"));
                }
                Ok((Address::from_slice(&k), decode(Table::Accounts, &v)?))
            })
            .collect()
    }

    // ---- writes ----

    /// Account records (`None` deletes) and slot values (zero deletes) into the flat tables.
    fn put_flat_state(batch: &mut WriteBatch, accounts: &[(Address, Option<AccountState>)], storage: &[(Address, U256, U256)]) {
        for (address, account) in accounts {
            match account {
                Some(a) => batch.put(Table::Accounts, address.as_slice(), alloy_rlp::encode(a)),
                None => batch.delete(Table::Accounts, address.as_slice()),
            }
        }
        for (address, slot, value) in storage {
            if value.is_zero() {
                batch.delete(Table::Storage, storage_key(address, slot));
            } else {
                batch.put(Table::Storage, storage_key(address, slot), encode_u256(value));
            }
        }
    }

    fn put_state(batch: &mut WriteBatch, state: StateUpdate) {
        for (address, slot) in &state.wiped_storage {
            batch.delete(Table::Storage, storage_key(address, slot));
        }
        Self::put_flat_state(batch, &state.accounts, &state.storage);
        for (hash, code) in state.codes {
            batch.put(Table::Code, hash.as_slice(), code.to_vec());
        }
        for (hash, node) in state.trie_nodes {
            batch.put(Table::TrieNodes, hash.as_slice(), node);
        }
    }


    fn put_block_data(batch: &mut WriteBatch, hash: &B256, block: &Block) {
        let number = block.header.number;
        batch.put(Table::Headers, hash.as_slice(), alloy_rlp::encode(&block.header));
        batch.put(Table::HeaderNumbers, hash.as_slice(), number.to_be_bytes().to_vec());
        batch.put(Table::Bodies, hash.as_slice(), alloy_rlp::encode(&block.body));
    }

    /// Writes the genesis block and its state, and makes it the head.
    pub fn commit_genesis(&self, hash: B256, block: &Block, state: StateUpdate) -> Result<(), StoreError> {
        let mut batch = WriteBatch::new();
        Self::put_block_data(&mut batch, &hash, block);
        batch.put(Table::Receipts, hash.as_slice(), alloy_rlp::encode(Vec::<Receipt>::new()));
        batch.put(Table::CanonicalHashes, 0u64.to_be_bytes().to_vec(), hash.to_vec());
        Self::put_state(&mut batch, state);
        batch.put(Table::Meta, GENESIS_KEY, hash.to_vec());
        batch.put(Table::Meta, HEAD_KEY, hash.to_vec());
        self.write(batch)
    }

    /// Writes a validated block, its state changes and change set, and makes it the
    /// canonical head — all in one atomic batch.
    pub fn commit_block(&self, commit: BlockCommit<'_>) -> Result<(), StoreError> {
        self.commit_prepared(Self::prepare_block(commit))
    }

    /// Commits a batch built by `prepare_block`.
    pub fn commit_prepared(&self, prepared: PreparedCommit) -> Result<(), StoreError> {
        self.accept(prepared.0)
    }

    /// Encodes and indexes everything a block writes, without writing it: the import
    /// builds the batch while it still checks the block, and drops it if a check fails.
    pub fn prepare_block(commit: BlockCommit<'_>) -> PreparedCommit {
        let BlockCommit { hash, block, bal, receipts, state, change_set } = commit;
        // The state part (thousands of trie nodes and slots) and the chain data (large
        // encodings) are built and indexed side by side; they write different tables.
        let (state_part, chain_part) = rayon::join(
            || {
                let ops = state.accounts.len()
                    + state.storage.len()
                    + state.wiped_storage.len()
                    + state.codes.len()
                    + state.trie_nodes.len();
                let mut batch = WriteBatch::with_capacity(ops);
                Self::put_state(&mut batch, state);
                PendingBatch::new(batch)
            },
            || {
                let mut batch = WriteBatch::with_capacity(16);
                Self::put_block_data(&mut batch, &hash, block);
                let mut receipts_rlp = Vec::new();
                alloy_rlp::encode_list::<_, Receipt>(receipts, &mut receipts_rlp);
                batch.put(Table::Receipts, hash.as_slice(), receipts_rlp);
                if let Some(bal) = bal {
                    batch.put(Table::Bals, hash.as_slice(), alloy_rlp::encode(bal));
                }
                batch.put(Table::ChangeSets, hash.as_slice(), change_set.encode());
                batch.put(Table::CanonicalHashes, block.header.number.to_be_bytes().to_vec(), hash.to_vec());
                batch.put(Table::Meta, HEAD_KEY, hash.to_vec());
                PendingBatch::new(batch)
            },
        );
        PreparedCommit(PendingBatch::concat(state_part, chain_part))
    }
}

impl Store {
    /// Moves the head back to its parent: restores the flat state from the head block's
    /// change set and drops it from the canonical index, in one atomic batch. The block
    /// itself stays stored (it is valid; a later fork choice may make it canonical again).
    /// Returns the new head.
    pub fn unwind_head(&self) -> Result<B256, StoreError> {
        let head = self.head()?.ok_or_else(|| StoreError::Invalid("store has no head".into()))?;
        let header = self.header(&head)?.ok_or_else(|| corrupt(Table::Headers, format!("head {head} has no header")))?;
        if header.number == 0 {
            return Err(StoreError::Invalid("cannot unwind the genesis block".into()));
        }
        let change_set = self.change_set(&head)?.ok_or_else(|| corrupt(Table::ChangeSets, format!("block {head} has no change set")))?;
        let mut batch = WriteBatch::new();
        Self::put_flat_state(&mut batch, &change_set.accounts, &change_set.storage);
        batch.delete(Table::CanonicalHashes, header.number.to_be_bytes().to_vec());
        batch.put(Table::Meta, HEAD_KEY, header.parent_hash.to_vec());
        self.write(batch)?;
        Ok(header.parent_hash)
    }
}

impl NodeReader for Store {
    fn get_node(&self, hash: &B256) -> Result<Option<ethrex_trie::NodeRlp>, TrieError> {
        if let Some(node) = self.nodes.get(hash) {
            return Ok(Some(node));
        }
        let Some(node) = self.get(Table::TrieNodes, hash.as_slice())? else {
            return Ok(None);
        };
        let node: ethrex_trie::NodeRlp = Arc::from(node);
        self.nodes.insert(*hash, node.clone());
        Ok(Some(node))
    }
}
