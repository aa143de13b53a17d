//! The Kademlia routing table.
//!
//! Distance is `keccak256(id₁) XOR keccak256(id₂)`; a node's bucket is chosen by the log
//! distance (index of the highest set bit + 1, 1..=256). Nearly all nodes fall at log
//! distance ≥ 240 from us, so, as usual for discv4, distances ≤ 240 share the first bucket
//! and 241..=256 get one bucket each: [`BUCKETS`] buckets of [`BUCKET_SIZE`] live entries,
//! each with up to [`REPLACEMENTS`] spare nodes, so the table is bounded.
//!
//! Only bonded nodes (which answered our ping) are meant to be inserted; the table itself
//! does not check that. Entries are ordered least recently seen first.

use crate::enode::{NodeId, NodeRecord};
use alloy_primitives::B256;
use std::collections::VecDeque;

/// Live entries per bucket (`k`).
pub const BUCKET_SIZE: usize = 16;
/// Number of buckets.
pub const BUCKETS: usize = 17;
/// Spare nodes kept per bucket for when an entry dies.
pub const REPLACEMENTS: usize = 10;
/// Log distances up to this share bucket 0.
const FIRST_BUCKET_MAX_DISTANCE: usize = 256 - BUCKETS + 1;

/// `a XOR b` as a big-endian 256-bit number.
pub fn distance(a: &B256, b: &B256) -> B256 {
    *a ^ *b
}

/// The log distance: bit length of `a XOR b` (0 when equal, up to 256).
pub fn log_distance(a: &B256, b: &B256) -> usize {
    let d = distance(a, b);
    for (i, byte) in d.iter().enumerate() {
        if *byte != 0 {
            return (32 - i) * 8 - byte.leading_zeros() as usize;
        }
    }
    0
}

#[derive(Debug, Clone)]
struct Entry {
    record: NodeRecord,
    hash: B256,
}

#[derive(Debug, Default)]
struct Bucket {
    /// Least recently seen at the front.
    entries: VecDeque<Entry>,
    /// Most recently seen at the back.
    replacements: VecDeque<Entry>,
}

/// What [`Table::insert`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Insert {
    /// Added as a new live entry.
    Added,
    /// Already present: endpoint updated and moved to most recently seen.
    Updated,
    /// The bucket is full: the node was kept as a replacement, and this least recently
    /// seen entry should be pinged and [`Table::remove`]d if it does not answer.
    Full(NodeRecord),
    /// Our own id: ignored.
    Local,
}

/// The routing table.
#[derive(Debug)]
pub struct Table {
    local: B256,
    buckets: Vec<Bucket>,
}

impl Table {
    /// An empty table around `local`.
    pub fn new(local: NodeId) -> Self {
        Table { local: local.hash(), buckets: (0..BUCKETS).map(|_| Bucket::default()).collect() }
    }

    fn bucket_index(&self, hash: &B256) -> usize {
        log_distance(&self.local, hash).saturating_sub(FIRST_BUCKET_MAX_DISTANCE)
    }

    /// Inserts (or refreshes) a node.
    pub fn insert(&mut self, record: NodeRecord) -> Insert {
        let hash = record.id.hash();
        if hash == self.local {
            return Insert::Local;
        }
        let index = self.bucket_index(&hash);
        let bucket = &mut self.buckets[index];
        if let Some(pos) = bucket.entries.iter().position(|e| e.record.id == record.id) {
            bucket.entries.remove(pos);
            bucket.entries.push_back(Entry { record, hash });
            return Insert::Updated;
        }
        if bucket.entries.len() < BUCKET_SIZE {
            bucket.replacements.retain(|e| e.record.id != record.id);
            bucket.entries.push_back(Entry { record, hash });
            return Insert::Added;
        }
        bucket.replacements.retain(|e| e.record.id != record.id);
        if bucket.replacements.len() >= REPLACEMENTS {
            bucket.replacements.pop_front();
        }
        bucket.replacements.push_back(Entry { record, hash });
        Insert::Full(bucket.entries[0].record)
    }

    /// Removes a live entry (a dead node), promoting the freshest replacement, which is
    /// returned.
    pub fn remove(&mut self, id: &NodeId) -> Option<NodeRecord> {
        let hash = id.hash();
        let index = self.bucket_index(&hash);
        let bucket = &mut self.buckets[index];
        bucket.replacements.retain(|e| e.record.id != *id);
        let pos = bucket.entries.iter().position(|e| e.record.id == *id)?;
        bucket.entries.remove(pos);
        let promoted = bucket.replacements.pop_back()?;
        let record = promoted.record;
        bucket.entries.push_back(promoted);
        Some(record)
    }

    /// Whether `id` is a live entry.
    pub fn contains(&self, id: &NodeId) -> bool {
        let hash = id.hash();
        self.buckets[self.bucket_index(&hash)].entries.iter().any(|e| e.record.id == *id)
    }

    /// The live entry for `id`.
    pub fn get(&self, id: &NodeId) -> Option<NodeRecord> {
        let hash = id.hash();
        self.buckets[self.bucket_index(&hash)]
            .entries
            .iter()
            .find(|e| e.record.id == *id)
            .map(|e| e.record)
    }

    /// Number of live entries.
    pub fn len(&self) -> usize {
        self.buckets.iter().map(|b| b.entries.len()).sum()
    }

    /// Whether there are no live entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// All live entries.
    pub fn nodes(&self) -> Vec<NodeRecord> {
        self.buckets.iter().flat_map(|b| b.entries.iter().map(|e| e.record)).collect()
    }

    /// The `n` live entries closest to `target` (a keccak256 node-id hash), closest first.
    pub fn closest(&self, target: &B256, n: usize) -> Vec<NodeRecord> {
        let mut all: Vec<&Entry> = self.buckets.iter().flat_map(|b| b.entries.iter()).collect();
        all.sort_by_key(|e| distance(&e.hash, target));
        all.into_iter().take(n).map(|e| e.record).collect()
    }

    /// The least recently seen entry of the `n`th non-empty bucket (cycling), the next to
    /// revalidate.
    pub fn least_recent(&self, n: usize) -> Option<NodeRecord> {
        let non_empty: Vec<&Bucket> =
            self.buckets.iter().filter(|b| !b.entries.is_empty()).collect();
        if non_empty.is_empty() {
            return None;
        }
        non_empty[n % non_empty.len()].entries.front().map(|e| e.record)
    }
}
