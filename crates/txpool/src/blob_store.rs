//! Where the pool keeps sidecars: on disk, one file per transaction, when the pool has a
//! directory (a node's datadir), with the most recent ones also in memory up to a byte
//! cap; in memory only otherwise (tests, tools). Sidecars are found by transaction hash
//! (to serve a peer the network form) and by versioned hash (`engine_getBlobs*`).
//!
//! The pool decides what is kept; the store only counts bytes. A sidecar outlives its
//! transaction's inclusion by a few blocks (`BlobStore::retire`), so that a reorg can put
//! the transaction back and a consensus client can still fetch blobs it has just seen
//! in a block.

use crate::blobs::Sidecar;
use alloy_eips::eip7594::{Decodable7594 as _, Encodable7594 as _};
use alloy_primitives::B256;
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;

/// A stored sidecar's bookkeeping.
struct Entry {
    /// Its encoded size.
    size: usize,
    /// Its blobs' versioned hashes, in order.
    hashes: Vec<B256>,
    /// The block that included its transaction, once one did.
    included_at: Option<u64>,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<B256, Entry>,
    by_versioned: HashMap<B256, (B256, usize)>,
    cache: HashMap<B256, Arc<Sidecar>>,
    cache_order: VecDeque<B256>,
    cache_bytes: usize,
    bytes: usize,
}

/// The sidecars of the pool's blob transactions (and of recently included ones).
pub struct BlobStore {
    dir: Option<PathBuf>,
    cache_cap: usize,
    inner: Mutex<Inner>,
}

/// How many blocks a sidecar is kept after its transaction was included.
const KEEP_AFTER_INCLUSION: u64 = 64;

impl BlobStore {
    /// A store in memory only.
    pub fn in_memory() -> Self {
        Self { dir: None, cache_cap: usize::MAX, inner: Mutex::default() }
    }

    /// A store in `dir` (emptied: the pool does not outlive the process), with up to
    /// `cache_cap` bytes of sidecars also kept in memory.
    pub fn on_disk(dir: PathBuf, cache_cap: usize) -> std::io::Result<Self> {
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        std::fs::create_dir_all(&dir)?;
        Ok(Self { dir: Some(dir), cache_cap, inner: Mutex::default() })
    }

    fn path(&self, tx: &B256) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join(format!("{tx:x}")))
    }

    /// Stores `sidecar` for transaction `tx`. A disk failure leaves the sidecar in memory
    /// only (the cap is then exceeded rather than the blob lost).
    pub fn put(&self, tx: B256, sidecar: Sidecar) {
        let mut encoded = Vec::with_capacity(sidecar.encode_7594_len());
        sidecar.encode_7594(&mut encoded);
        let size = encoded.len();
        let hashes: Vec<B256> = sidecar.versioned_hashes().collect();
        let on_disk = self.path(&tx).is_some_and(|p| std::fs::write(p, &encoded).is_ok());
        let mut inner = self.inner.lock();
        if inner.entries.contains_key(&tx) {
            return;
        }
        for (i, h) in hashes.iter().enumerate() {
            inner.by_versioned.insert(*h, (tx, i));
        }
        inner.entries.insert(tx, Entry { size, hashes, included_at: None });
        inner.bytes += size;
        inner.cache.insert(tx, Arc::new(sidecar));
        inner.cache_order.push_back(tx);
        inner.cache_bytes += size;
        if on_disk {
            self.trim_cache(&mut inner);
        }
    }

    /// Drops cached sidecars (oldest first) while the cache is over its cap; they stay on
    /// disk.
    fn trim_cache(&self, inner: &mut Inner) {
        while inner.cache_bytes > self.cache_cap {
            let Some(oldest) = inner.cache_order.pop_front() else { break };
            if inner.cache.remove(&oldest).is_some() {
                inner.cache_bytes -= inner.entries.get(&oldest).map_or(0, |e| e.size);
            }
        }
    }

    /// The sidecar of transaction `tx`.
    pub fn get(&self, tx: &B256) -> Option<Arc<Sidecar>> {
        if let Some(cached) = self.inner.lock().cache.get(tx) {
            return Some(cached.clone());
        }
        if !self.inner.lock().entries.contains_key(tx) {
            return None;
        }
        let bytes = std::fs::read(self.path(tx)?).ok()?;
        Sidecar::decode_7594(&mut bytes.as_slice()).ok().map(Arc::new)
    }

    /// The blob with versioned hash `hash`: the sidecar holding it and its position there.
    pub fn blob(&self, hash: &B256) -> Option<(Arc<Sidecar>, usize)> {
        let (tx, index) = *self.inner.lock().by_versioned.get(hash)?;
        Some((self.get(&tx)?, index))
    }

    /// Forgets the sidecar of transaction `tx`.
    pub fn remove(&self, tx: &B256) {
        let mut inner = self.inner.lock();
        let Some(entry) = inner.entries.remove(tx) else { return };
        inner.bytes -= entry.size;
        for h in &entry.hashes {
            if inner.by_versioned.get(h).is_some_and(|(t, _)| t == tx) {
                inner.by_versioned.remove(h);
            }
        }
        if inner.cache.remove(tx).is_some() {
            inner.cache_bytes -= entry.size;
        }
        drop(inner);
        if let Some(path) = self.path(tx) {
            let _ = std::fs::remove_file(path);
        }
    }

    /// Marks transaction `tx` included at block `number`: its sidecar is kept for
    /// `KEEP_AFTER_INCLUSION` more blocks.
    pub fn retire(&self, tx: &B256, number: u64) {
        if let Some(entry) = self.inner.lock().entries.get_mut(tx) {
            entry.included_at = Some(number);
        }
    }

    /// Marks transaction `tx` pooled again (its block left the canonical chain).
    pub fn revive(&self, tx: &B256) {
        if let Some(entry) = self.inner.lock().entries.get_mut(tx) {
            entry.included_at = None;
        }
    }

    /// Forgets the sidecars of transactions included more than `KEEP_AFTER_INCLUSION`
    /// blocks before `head`.
    pub fn prune(&self, head: u64) {
        let old: Vec<B256> = self
            .inner
            .lock()
            .entries
            .iter()
            .filter(|(_, e)| e.included_at.is_some_and(|n| n + KEEP_AFTER_INCLUSION < head))
            .map(|(tx, _)| *tx)
            .collect();
        for tx in old {
            self.remove(&tx);
        }
    }

    /// Sidecar bytes held.
    pub fn bytes(&self) -> usize {
        self.inner.lock().bytes
    }

    /// Sidecar bytes held in memory.
    pub fn cached_bytes(&self) -> usize {
        self.inner.lock().cache_bytes
    }

    /// How many sidecars are held.
    pub fn len(&self) -> usize {
        self.inner.lock().entries.len()
    }

    /// Whether no sidecar is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
