//! The flat-state caches: accounts, storage slots and code of the head, kept in memory
//! across blocks.
//!
//! Unlike trie nodes these entries change, so every write of the flat tables goes through
//! `Store::write`, which has the caches updated as soon as it has accepted the batch (see
//! `FlatCache::unapplied`). Three rules keep a cache from answering with a value a batch
//! has replaced:
//! - a read that misses fills the cache under the read side of `fill_lock`, and a batch
//!   becomes visible (enters the overlay) under its write side;
//! - until its values are in the caches, the last accepted batch is `unapplied`, and reads
//!   consult it before the caches;
//! - a batch is accepted only after the previous one's values are in the caches.

use crate::codec::Key;
use crate::persist::PendingBatch;
use crate::tables::{decode_value, Accounts, Storage, TypedTable};
use crate::StoreError;
use alloy_primitives::{Address, Bytes, B256, U256};
use ethrex_common::AccountState;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Trie nodes kept in memory across blocks (see `node_cache`).
const NODE_CACHE_ENTRIES: usize = 1 << 20;
/// Account records of the head kept in memory across blocks.
const ACCOUNT_CACHE_ENTRIES: usize = 1 << 19;
/// Storage slots of the head kept in memory across blocks.
const STORAGE_CACHE_ENTRIES: usize = 1 << 21;
/// Contract code: up to 64 MiB, sized for a few thousand contracts.
const CODE_CACHE_BYTES: u64 = 64 << 20;
const CODE_CACHE_ENTRIES: usize = 4096;

/// How many entries the in-memory caches hold.
#[derive(Debug, Clone, Copy)]
pub struct CacheSizes {
    /// Trie nodes (by hash).
    pub trie_nodes: usize,
    /// Account records of the head.
    pub accounts: usize,
    /// Storage slots of the head.
    pub storage: usize,
}

impl Default for CacheSizes {
    fn default() -> Self {
        Self {
            trie_nodes: NODE_CACHE_ENTRIES,
            accounts: ACCOUNT_CACHE_ENTRIES,
            storage: STORAGE_CACHE_ENTRIES,
        }
    }
}

pub(super) struct FlatCache {
    /// Misses fill the cache under the read side; a batch becomes visible (enters the
    /// overlay) under the write side, so a reader can never put back a value that a batch
    /// accepted meanwhile has replaced: readers that start later see the batch.
    pub(super) fill_lock: parking_lot::RwLock<()>,
    /// The last accepted batch while its values are still being put into the caches, on
    /// the pool after `accept` returned: reads consult it before the caches. Those inserts
    /// are cache misses in large tables, too slow for the import's critical path; this
    /// way a read of a written key waits for nothing, and reads of other keys only check
    /// this batch's index meanwhile.
    unapplied: parking_lot::RwLock<Option<Arc<PendingBatch>>>,
    /// Whether `unapplied` may be set (read without touching the lock's cache line).
    has_unapplied: AtomicBool,
    /// Serialises appliers: a batch is applied only while it is the last accepted one.
    apply_lock: parking_lot::Mutex<()>,
    /// Decoded account records (a hit costs no allocation or decode); `None`: the account
    /// does not exist.
    pub(super) accounts: quick_cache::sync::Cache<Address, Option<AccountState>>,
    /// Slot values; zero: the slot is unset.
    pub(super) storage: quick_cache::sync::Cache<(Address, U256), U256>,
    /// Contract code by hash. Code never changes under its hash, so entries are never
    /// stale and need no lock: every block reads the same few hot contracts again.
    pub(super) code: quick_cache::sync::Cache<B256, Bytes, CodeWeighter>,
}

impl FlatCache {
    pub(super) fn new(sizes: CacheSizes) -> Self {
        Self {
            fill_lock: parking_lot::RwLock::new(()),
            unapplied: parking_lot::RwLock::new(None),
            has_unapplied: AtomicBool::new(false),
            apply_lock: parking_lot::Mutex::new(()),
            accounts: quick_cache::sync::Cache::new(sizes.accounts),
            storage: quick_cache::sync::Cache::new(sizes.storage),
            code: quick_cache::sync::Cache::with_weighter(
                CODE_CACHE_ENTRIES,
                CODE_CACHE_BYTES,
                CodeWeighter,
            ),
        }
    }

    /// Makes `pending` the batch reads consult before the caches. The caller holds the
    /// write side of `fill_lock` and has applied the previous batch (`apply_unapplied`).
    pub(super) fn set_unapplied(&self, pending: Arc<PendingBatch>) {
        *self.unapplied.write() = Some(pending);
        self.has_unapplied.store(true, Ordering::Release);
    }

    /// Puts the values of the last accepted batch into the flat caches, if that has not
    /// been done yet, then stops reads from consulting it first. Runs on one thread and
    /// takes no lock a reader holds: it must not steal (and wait on) work that reads.
    pub(super) fn apply_unapplied(&self) {
        if !self.has_unapplied.load(Ordering::Acquire) {
            return;
        }
        let _applier = self.apply_lock.lock();
        let Some(pending) = self.unapplied.read().clone() else { return };
        for (key, value) in pending.table_ops(Accounts::TABLE) {
            let Ok(address) = Address::decode_key(key) else { continue };
            match value.map(|v| decode_value::<Accounts>(v)).transpose() {
                Ok(account) => self.accounts.insert(address, account),
                // Left to a read through the overlay, which reports it.
                Err(_) => {
                    self.accounts.remove(&address);
                }
            }
        }
        for (key, value) in pending.table_ops(Storage::TABLE) {
            let Ok(slot) = <(Address, U256)>::decode_key(key) else { continue };
            match value.map(|v| decode_value::<Storage>(v)).transpose() {
                Ok(v) => self.storage.insert(slot, v.unwrap_or_default()),
                // Left to a read through the overlay, which reports it.
                Err(_) => {
                    self.storage.remove(&slot);
                }
            }
        }
        // Only after the caches hold every value may reads skip the batch.
        *self.unapplied.write() = None;
        self.has_unapplied.store(false, Ordering::Release);
    }

    /// What the last accepted batch writes for `key` of table `T`, while its values are
    /// not yet in the caches: `Some(Ok(None))` it deletes the key, `None` it does not
    /// touch it (or every batch is applied already).
    pub(super) fn unapplied_value<T: TypedTable>(
        &self,
        key: &T::Key,
    ) -> Option<Result<Option<T::Value>, StoreError>> {
        if !self.has_unapplied.load(Ordering::Acquire) {
            return None;
        }
        let key = key.encode_key();
        let unapplied = self.unapplied.read();
        let value = unapplied.as_ref()?.get(T::TABLE, key.as_ref())?;
        Some(value.map(decode_value::<T>).transpose())
    }
}

/// Weighs code by its length, so the code cache is bounded in bytes.
#[derive(Clone)]
pub(super) struct CodeWeighter;

impl quick_cache::Weighter<B256, Bytes> for CodeWeighter {
    fn weight(&self, _: &B256, code: &Bytes) -> u64 {
        code.len().max(1) as u64
    }
}
