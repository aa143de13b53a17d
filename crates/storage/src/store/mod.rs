//! The `Store` handle: typed access to the tables over a backend, through the caches and
//! the overlay of batches still on their way to the disk.
//!
//! - `kind`: which backend, as named on the command line, and opening it
//! - `cache`: the flat-state caches and how they stay ordered with writes
//! - `chain`: readers of chain data (headers, bodies, receipts, canonical index, head)
//! - `state`: readers of the head's state (accounts, storage, code) and of trie nodes
//! - `commit`: building a block's batch and committing it
//! - `unwind`: moving the head back to its parent

mod cache;
mod chain;
mod commit;
mod kind;
mod state;
mod transactions;
mod trie;
mod unwind;

pub use cache::CacheSizes;
pub use commit::{BlockCommit, PreparedCommit, StateUpdate};
pub use kind::DbKind;
pub use transactions::{StoredReceipt, TxLocation};
pub use trie::{STATE_LAYOUT, TRIE_MEMORY_BYTES};

use crate::backend::{Entries, KvBackend, Table, WriteBatch};
use crate::codec::Key;
use crate::memory::MemoryBackend;
use crate::node_cache::{node_cache, NodeCache};
use crate::persist::{Overlay, PendingBatch, Persister};
use crate::tables::{decode_key, decode_owned, Row, TypedTable};
use crate::StoreError;
use cache::FlatCache;
use std::sync::Arc;

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
    /// While a group is open (`begin_group`), accepted batches are visible to reads but
    /// held back from the persister; `end_group` writes them as one.
    group: Arc<parking_lot::Mutex<Option<Vec<Arc<PendingBatch>>>>>,
    /// The upper levels of the last committed account trie, decoded (see `trie`).
    preserved: Arc<parking_lot::Mutex<Option<ethrex_trie::PreservedTrie>>>,
    /// The upper levels of storage tries recent blocks changed, decoded (see `trie`).
    preserved_storage: Arc<parking_lot::Mutex<trie::KeptStorageTries>>,
    /// How many bytes of decoded account trie nodes `preserved` may hold, and of storage
    /// trie nodes `preserved_storage` (`set_trie_memory`; `TRIE_MEMORY_BYTES` by default).
    trie_memory: Arc<std::sync::atomic::AtomicUsize>,
    /// Change sets decoded and indexed for history reads (`history`).
    pub(crate) change_sets: Arc<crate::history::ChangeSetCache>,
}

impl Store {
    /// A store over `backend` with the default cache sizes.
    pub fn new(backend: Arc<dyn KvBackend>) -> Self {
        Self::with_cache_sizes(backend, CacheSizes::default())
    }

    /// A store over `backend` whose caches hold `sizes` entries.
    pub fn with_cache_sizes(backend: Arc<dyn KvBackend>, sizes: CacheSizes) -> Self {
        let nodes = Arc::new(node_cache(sizes.trie_nodes));
        let overlay = Arc::new(Overlay::default());
        let persister = Persister::start(backend.clone(), overlay.clone());
        Self {
            backend,
            nodes,
            flat: Arc::new(FlatCache::new(sizes)),
            overlay,
            persister: Arc::new(persister),
            write_order: Arc::new(parking_lot::Mutex::new(())),
            group: Arc::new(parking_lot::Mutex::new(None)),
            preserved: Arc::default(),
            preserved_storage: Arc::default(),
            trie_memory: Arc::new(TRIE_MEMORY_BYTES.into()),
            change_sets: Arc::new(crate::history::change_set_cache()),
        }
    }

    /// A store that keeps everything in memory (tests).
    pub fn in_memory() -> Self {
        Self::new(Arc::new(MemoryBackend::new()))
    }

    /// The backend's name (`memory`, `mdbx`, `rocksdb`).
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
        // Room in the queue and no failure, before the batch becomes visible: from here
        // on the commit cannot fail.
        self.persister.reserve()?;
        // The caches must hold the previous batch before this one can be put over it.
        self.flat.apply_unapplied();
        let pending = Arc::new(pending);
        {
            // No read that started before this batch was visible can fill a cache after
            // it: cache-filling readers hold the read side, and from here on they see the
            // batch in the overlay (so they only ever fill its values).
            let _exclusive = self.flat.fill_lock.write();
            self.overlay.push(pending.clone());
            self.flat.set_unapplied(pending.clone());
        }
        // Only the caches go along: a queued job must not keep the database open.
        let flat = self.flat.clone();
        rayon::spawn(move || flat.apply_unapplied());
        if let Some(held) = self.group.lock().as_mut() {
            held.push(pending);
            return Ok(());
        }
        self.persister.enqueue(pending);
        Ok(())
    }

    /// Opens a write group: the batches accepted from now on are visible to reads at
    /// once, as always, but reach the database together, in one atomic write, at
    /// `end_group` (a mega block's single commit). A crash before then loses the whole
    /// group, never part of it.
    pub fn begin_group(&self) {
        let _order = self.write_order.lock();
        self.group.lock().get_or_insert_with(Vec::new);
    }

    /// Closes the write group: its batches, merged in order, go to the persister as one.
    pub fn end_group(&self) -> Result<(), StoreError> {
        let _order = self.write_order.lock();
        let Some(mut held) = self.group.lock().take() else { return Ok(()) };
        self.persister.reserve()?;
        if held.len() <= 1 {
            // One batch: it is already in the overlay as it should be written.
            if let Some(batch) = held.pop() {
                self.persister.enqueue(batch);
            }
            return Ok(());
        }
        // The caches must not still read a held batch as `unapplied` once it is merged.
        self.flat.apply_unapplied();
        let mut ops = WriteBatch::with_capacity(held.iter().map(|b| b.batch.len()).sum());
        for batch in &held {
            ops.ops.extend(batch.batch.ops.iter().cloned());
        }
        let merged = Arc::new(PendingBatch::new(ops));
        {
            let _exclusive = self.flat.fill_lock.write();
            self.overlay.merge_back(held.len(), merged.clone());
        }
        self.persister.enqueue(merged);
        Ok(())
    }

    /// Empties the store's own caches (trie nodes, accounts, slots, code), after waiting
    /// for every accepted batch to reach the backend: the next reads of the state go to
    /// the backend. The backend's caches, if it has any, are its own.
    pub fn clear_caches(&self) -> Result<(), StoreError> {
        self.flush()?;
        let _order = self.write_order.lock();
        self.flat.apply_unapplied();
        let _exclusive = self.flat.fill_lock.write();
        self.nodes.clear();
        self.flat.accounts.clear();
        self.flat.storage.clear();
        self.flat.code.clear();
        self.change_sets.clear();
        Ok(())
    }

    /// Waits until every accepted batch is in the backend, then runs `f` with new batches
    /// held back until it returns: while `f` runs, the backend holds exactly what was
    /// accepted (for work on the backend's files, such as copying them).
    pub fn with_writes_paused<R>(
        &self,
        f: impl FnOnce() -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        // The write order first: no batch can be accepted between the flush and `f`.
        let _order = self.write_order.lock();
        self.flush()?;
        f()
    }

    /// Every entry of every table, through the overlay of batches not yet on disk, in
    /// table and key order: the store's whole content, for checks that an operation left
    /// it byte for byte unchanged (a rejected block must).
    pub fn all_entries(&self) -> Result<Vec<(Table, Entries)>, StoreError> {
        Table::ALL.iter().map(|&table| Ok((table, self.scan_prefix(table, &[])?))).collect()
    }

    /// Waits until every accepted batch is on disk; reports a failed write.
    pub fn flush(&self) -> Result<(), StoreError> {
        self.persister.flush()
    }

    /// Makes the committed blocks durable up to a bound: waits until at most `lag`
    /// accepted batches are still waiting for the backend, then syncs the backend, so
    /// every batch up to that point survives an OS crash or power loss. `lag` 0 makes
    /// everything committed so far durable. Reports a failed write; a failed sync is
    /// reported and then sticky, like a failed write.
    pub fn persist(&self, lag: u64) -> Result<(), StoreError> {
        self.persister.wait_until_behind(lag)?;
        if let Err(e) = self.backend.sync() {
            let reason = format!("syncing the database failed: {e}");
            self.persister.fail(reason.clone());
            return Err(StoreError::Persistence(reason));
        }
        // A write can fail while we synced; the caller must not report durability then.
        self.persister.check()
    }

    /// Waits for the first failed background write without keeping the store open. A
    /// node uses it to stop instead of serving state it cannot keep.
    pub fn failure_watch(&self) -> crate::persist::FailureWatch {
        self.persister.failure_watch()
    }

    /// The database writes since the last call: how long each took, and how many accepted
    /// batches it applied (the persister writes batches that come close together at once).
    pub fn take_write_times(&self) -> Vec<crate::persist::WriteTime> {
        self.persister.take_write_times()
    }

    /// A point read through the overlay of batches not yet on disk.
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        match self.overlay.get(table, key) {
            Some(value) => Ok(value),
            None => self.backend.get(table, key),
        }
    }

    /// A prefix scan through the overlay of batches not yet on disk, in key order.
    fn scan_prefix(&self, table: Table, prefix: &[u8]) -> Result<Entries, StoreError> {
        let pending = self.overlay.snapshot();
        let base = self.backend.scan_prefix(table, prefix)?;
        Ok(crate::persist::merge_scan(&pending, table, prefix, base))
    }

    /// The value of `key` in table `T` (through the overlay, not the flat caches).
    fn read<T: TypedTable>(&self, key: &T::Key) -> Result<Option<T::Value>, StoreError> {
        self.get(T::TABLE, key.encode_key().as_ref())?.map(decode_owned::<T>).transpose()
    }

    /// Every entry of table `T` whose stored key starts with `prefix`, in key order.
    fn scan<T: TypedTable>(&self, prefix: &[u8]) -> Result<Vec<Row<T>>, StoreError> {
        self.scan_prefix(T::TABLE, prefix)?
            .into_iter()
            .map(|(k, v)| Ok((decode_key::<T>(&k)?, decode_owned::<T>(v)?)))
            .collect()
    }
}
