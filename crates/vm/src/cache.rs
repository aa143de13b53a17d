//! A read cache shared by every execution worker, over any revm `DatabaseRef` (the
//! store). Sharded maps (`DashMap` with the Fx hasher) keep concurrent readers off a
//! global lock; values are immutable for the duration of a block because the cache sits
//! under the pre-block state only.

use alloy_primitives::{Address, B256, U256};
use dashmap::DashMap;
use revm::database_interface::DatabaseRef;
use revm::state::{AccountInfo, Bytecode};
use rustc_hash::FxBuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};

type FxDashMap<K, V> = DashMap<K, V, FxBuildHasher>;

/// How often the cache answered a read itself, and how often it asked the database.
#[derive(Debug, Default, Clone, Copy)]
pub struct CacheStats {
    /// Reads answered from the cache.
    pub hits: u64,
    /// Reads passed on to the database underneath.
    pub misses: u64,
}

/// A read-through cache over `DB`, safe to share between threads; every value it holds
/// is the pre-block value.
pub struct CachingDb<DB> {
    inner: DB,
    accounts: FxDashMap<Address, Option<AccountInfo>>,
    storage: FxDashMap<(Address, U256), U256>,
    code: FxDashMap<B256, Bytecode>,
    block_hashes: FxDashMap<u64, B256>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl<DB> CachingDb<DB> {
    /// An empty cache over `inner`.
    pub fn new(inner: DB) -> Self {
        Self {
            inner,
            accounts: DashMap::with_hasher(FxBuildHasher),
            storage: DashMap::with_hasher(FxBuildHasher),
            code: DashMap::with_hasher(FxBuildHasher),
            block_hashes: DashMap::with_hasher(FxBuildHasher),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// Every account value the cache holds (what execution read, or was seeded with).
    pub fn cached_accounts(&self) -> Vec<(Address, Option<AccountInfo>)> {
        self.accounts.iter().map(|e| (*e.key(), e.value().clone())).collect()
    }

    /// Every storage value the cache holds, by (address, slot).
    pub fn cached_storage(&self) -> Vec<((Address, U256), U256)> {
        self.storage.iter().map(|e| (*e.key(), *e.value())).collect()
    }

    /// Hits and misses so far (block hashes are not counted).
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
        }
    }

    /// Puts an account's pre-block value in the cache, so that no read of it reaches the
    /// database. The caller answers for the value: it must be checked against the parent
    /// state before the block is accepted.
    pub fn seed_account(&self, address: Address, info: Option<AccountInfo>) {
        self.accounts.insert(address, info);
    }

    /// Puts a slot's pre-block value in the cache (see `seed_account`).
    pub fn seed_storage(&self, address: Address, slot: U256, value: U256) {
        self.storage.insert((address, slot), value);
    }

    fn hit(&self) {
        self.hits.fetch_add(1, Ordering::Relaxed);
    }
    fn miss(&self) {
        self.misses.fetch_add(1, Ordering::Relaxed);
    }
}

impl<DB: DatabaseRef> DatabaseRef for CachingDb<DB> {
    type Error = DB::Error;

    fn basic_ref(&self, address: Address) -> Result<Option<AccountInfo>, Self::Error> {
        if let Some(v) = self.accounts.get(&address) {
            self.hit();
            return Ok(v.clone());
        }
        self.miss();
        let v = self.inner.basic_ref(address)?;
        self.accounts.insert(address, v.clone());
        Ok(v)
    }

    fn code_by_hash_ref(&self, code_hash: B256) -> Result<Bytecode, Self::Error> {
        if let Some(v) = self.code.get(&code_hash) {
            self.hit();
            return Ok(v.clone());
        }
        self.miss();
        let v = self.inner.code_by_hash_ref(code_hash)?;
        self.code.insert(code_hash, v.clone());
        Ok(v)
    }

    fn storage_ref(&self, address: Address, index: U256) -> Result<U256, Self::Error> {
        if let Some(v) = self.storage.get(&(address, index)) {
            self.hit();
            return Ok(*v);
        }
        self.miss();
        let v = self.inner.storage_ref(address, index)?;
        self.storage.insert((address, index), v);
        Ok(v)
    }

    fn block_hash_ref(&self, number: u64) -> Result<B256, Self::Error> {
        if let Some(v) = self.block_hashes.get(&number) {
            return Ok(*v);
        }
        let v = self.inner.block_hash_ref(number)?;
        self.block_hashes.insert(number, v);
        Ok(v)
    }
}
