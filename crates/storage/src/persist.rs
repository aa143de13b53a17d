//! Background persistence.
//!
//! A committed block must be readable at once (the next block executes on it), but it
//! does not have to be on disk before the next block starts: writing a block's batch
//! takes longer than executing it, and doing it inline would put the database on every
//! block's critical path. So `Store::write` hands each batch to one persister thread and
//! keeps it in an in-memory overlay until the backend has applied it. Reads look at the
//! overlay (newest batch first) before the backend.
//!
//! The persister writes several batches at once when they come close together (up to
//! `WRITE_GROUP`, none waiting longer than `WRITE_DELAY`, or at once for a caller that
//! waits for the disk): one atomic write, in which a key several of them write is written
//! once, with its last value. During a sync or an import that is most of the trie nodes
//! and many of the slots a block writes (see `docs/benchmarks.md`).
//!
//! Guarantees:
//! - Batches reach the backend whole and in commit order (a write applies a run of
//!   consecutive batches, all or none of it), so after a crash the database
//!   holds some prefix of the committed blocks, each complete (the head points at the last
//!   one). Blocks committed after that prefix are lost and must be imported again.
//! - The queue is bounded (`MAX_PENDING_BATCHES`): if the disk falls behind, commits wait.
//! - A failed write (full disk, I/O error) is sticky: the batch and every later one stay
//!   off the disk, and every later commit and `flush` report the error; a `FailureWatch`
//!   learns of it at once.
//! - Written is not yet synced: `Store::persist` waits for the queue and then syncs the
//!   backend, for callers that promise durability (the node, before a head is VALID). A
//!   failed sync is sticky like a failed write: after it, what the writes before it made
//!   durable is unknown (the kernel may have dropped the dirty pages), so a retry that
//!   succeeds would promise too much.

use crate::backend::{Entries, KvBackend, SortedWrites, Table, WriteBatch, WriteOp};
use crate::StoreError;
use hashbrown::hash_table::{Entry, HashTable};
use parking_lot::{Condvar, Mutex, RwLock};
use std::collections::VecDeque;
use std::hash::BuildHasher;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Batches (blocks) that may wait for the disk, the ones being written included, before
/// commits block.
pub const MAX_PENDING_BATCHES: usize = 16;

/// The most batches one database write applies. Consecutive blocks rewrite many of the
/// same keys (the trie nodes near the roots, hot slots and accounts), and a key written by
/// several batches of a write is written once.
pub const WRITE_GROUP: usize = 8;

/// How long an accepted batch may wait for others to join its write. Nobody waits on it:
/// `flush` and `persist` have the persister write at once.
pub const WRITE_DELAY: Duration = Duration::from_millis(200);

/// A batch waiting for (or being written to) the backend, indexed for point reads.
pub(crate) struct PendingBatch {
    pub(crate) batch: WriteBatch,
    /// Per table: the position in `batch.ops` of each key's last op, with the key's hash.
    /// The keys stay in `batch`: a block writes thousands, and copying each into the
    /// index cost an allocation to make and another to free.
    index: Vec<HashTable<(u64, usize)>>,
}

fn key_hash(key: &[u8]) -> u64 {
    rustc_hash::FxBuildHasher.hash_one(key)
}

/// Records `pos` as the last op of its key (whose hash is `hash`) in `table`.
fn index_op(table: &mut HashTable<(u64, usize)>, ops: &[WriteOp], hash: u64, pos: usize) {
    let key = &ops[pos].1;
    match table.entry(hash, |&(h, p)| h == hash && ops[p].1 == *key, |&(h, _)| h) {
        Entry::Occupied(mut entry) => entry.get_mut().1 = pos,
        Entry::Vacant(entry) => {
            entry.insert((hash, pos));
        }
    }
}

impl PendingBatch {
    pub(crate) fn new(batch: WriteBatch) -> Self {
        let mut per_table = [0usize; Table::ALL.len()];
        for (table, _, _) in &batch.ops {
            per_table[table.index()] += 1;
        }
        let mut index: Vec<HashTable<(u64, usize)>> =
            per_table.iter().map(|n| HashTable::with_capacity(*n)).collect();
        for (pos, (table, key, _)) in batch.ops.iter().enumerate() {
            index_op(&mut index[table.index()], &batch.ops, key_hash(key), pos);
        }
        Self { batch, index }
    }

    /// Joins two indexed batches, `first`'s ops first (of a key both write, `second`'s op
    /// is the last). Lets a block's parts (different tables) be encoded and indexed in
    /// parallel.
    pub(crate) fn concat(first: PendingBatch, second: PendingBatch) -> Self {
        let PendingBatch { batch: mut ops, mut index } = first;
        let offset = ops.ops.len();
        ops.ops.extend(second.batch.ops);
        for (table, second_index) in second.index.into_iter().enumerate() {
            let target = &mut index[table];
            if target.is_empty() {
                *target = second_index;
                target.iter_mut().for_each(|(_, pos)| *pos += offset);
                continue;
            }
            target.reserve(second_index.len(), |&(h, _)| h);
            for (hash, pos) in second_index {
                index_op(target, &ops.ops, hash, pos + offset);
            }
        }
        Self { batch: ops, index }
    }

    /// The final op of every key the batch writes in `table` (`(key, None)` deletes it).
    pub(crate) fn table_ops(
        &self,
        table: Table,
    ) -> impl Iterator<Item = (&[u8], Option<&Vec<u8>>)> {
        self.index[table.index()].iter().map(|&(_, pos)| {
            let (_, key, value) = &self.batch.ops[pos];
            (key.as_slice(), value.as_ref())
        })
    }

    /// `Some(None)`: the batch deletes the key; `None`: the batch does not touch it.
    pub(crate) fn get(&self, table: Table, key: &[u8]) -> Option<Option<&[u8]>> {
        let hash = key_hash(key);
        let ops = &self.batch.ops;
        let &(_, pos) =
            self.index[table.index()].find(hash, |&(h, p)| h == hash && ops[p].1 == key)?;
        Some(ops[pos].2.as_deref())
    }
}

/// Batches accepted but not yet applied by the backend, oldest first.
#[derive(Default)]
pub(crate) struct Overlay {
    batches: RwLock<VecDeque<Arc<PendingBatch>>>,
}

impl Overlay {
    /// The newest pending value of a key, if any pending batch writes it.
    pub(crate) fn get(&self, table: Table, key: &[u8]) -> Option<Option<Vec<u8>>> {
        let batches = self.batches.read();
        batches.iter().rev().find_map(|b| b.get(table, key).map(|v| v.map(<[u8]>::to_vec)))
    }

    /// The pending batches, oldest first. Take it before scanning the backend: a batch
    /// written in between is then applied twice (harmless) rather than missed.
    pub(crate) fn snapshot(&self) -> Vec<Arc<PendingBatch>> {
        self.batches.read().iter().cloned().collect()
    }

    pub(crate) fn push(&self, batch: Arc<PendingBatch>) {
        self.batches.write().push_back(batch);
    }

    /// Replaces the `n` newest batches by `merged`, which holds their writes in order:
    /// readers see the same values before and after.
    pub(crate) fn merge_back(&self, n: usize, merged: Arc<PendingBatch>) {
        let mut batches = self.batches.write();
        let keep = batches.len().saturating_sub(n);
        batches.truncate(keep);
        batches.push_back(merged);
    }

    /// Takes the `n` oldest batches out once the backend holds them, under one lock;
    /// returns them (so the caller chooses where they are freed).
    fn pop_written(&self, n: usize) -> Vec<Arc<PendingBatch>> {
        let mut batches = self.batches.write();
        let n = n.min(batches.len());
        batches.drain(..n).collect()
    }
}

/// One database write of the persister: how long the backend took, and for how many
/// accepted batches (blocks, or a write group's merged batch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteTime {
    /// The backend's time for the write.
    pub took: Duration,
    /// Accepted batches the write applied.
    pub batches: usize,
}

/// What the persister has done so far, and what waits for it.
#[derive(Default)]
struct Progress {
    /// Accepted batches not yet taken for a write, oldest first, with when each came.
    queue: VecDeque<(Arc<PendingBatch>, Instant)>,
    accepted: u64,
    written: u64,
    failure: Option<String>,
    /// Callers waiting for the disk (`wait_until_behind`): the persister writes what it
    /// holds at once instead of waiting for a full group.
    waiters: usize,
    /// No more batches come: write what is queued, then stop.
    closed: bool,
    /// The writes since the last `take_write_times`.
    write_times: Vec<WriteTime>,
}

struct Shared {
    progress: Mutex<Progress>,
    /// Signalled on every change of `progress`.
    changed: Condvar,
}

impl Shared {
    /// Waits until a group of batches is due and takes it: `WRITE_GROUP` of them, or fewer
    /// once the oldest has waited `WRITE_DELAY`, someone waits for the disk, or the store
    /// is closing. `None` once closed and everything is written. After a failure, queued
    /// batches are dropped unwritten (they stay in the overlay, in memory only).
    fn next_group(&self) -> Option<Vec<Arc<PendingBatch>>> {
        let mut progress = self.progress.lock();
        loop {
            if progress.failure.is_some() {
                // Writing later batches over a missing one would break the prefix
                // guarantee.
                progress.queue.clear();
            }
            let Some(oldest) = progress.queue.front().map(|(_, since)| *since) else {
                if progress.closed {
                    return None;
                }
                self.changed.wait(&mut progress);
                continue;
            };
            let waited = oldest.elapsed();
            let due = progress.queue.len() >= WRITE_GROUP
                || progress.waiters > 0
                || progress.closed
                || waited >= WRITE_DELAY;
            if due {
                let n = progress.queue.len().min(WRITE_GROUP);
                return Some(progress.queue.drain(..n).map(|(batch, _)| batch).collect());
            }
            self.changed.wait_for(&mut progress, WRITE_DELAY - waited);
        }
    }
}

/// Owns the persister thread. Dropping it (with the last `Store` clone) writes out
/// everything pending, then stops the thread.
pub(crate) struct Persister {
    thread: Mutex<Option<JoinHandle<()>>>,
    shared: Arc<Shared>,
}

impl Persister {
    /// Starts the thread that writes accepted batches to `backend` in order, taking each
    /// out of `overlay` once it is written.
    pub(crate) fn start(backend: Arc<dyn KvBackend>, overlay: Arc<Overlay>) -> Self {
        let shared =
            Arc::new(Shared { progress: Mutex::new(Progress::default()), changed: Condvar::new() });
        let thread_shared = shared.clone();
        let thread = std::thread::Builder::new()
            .name("ethrex-persist".into())
            .spawn(move || {
                while let Some(group) = thread_shared.next_group() {
                    let t = Instant::now();
                    let writes = SortedWrites::of(group.iter().map(|pending| &pending.batch));
                    // A panicking backend must not leave `flush` waiting forever.
                    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| backend.write(&writes)))
                        .unwrap_or_else(|_| Err(StoreError::Backend("the database write panicked".into())));
                    let took = t.elapsed();
                    drop(writes);
                    let batches = group.len();
                    drop(group);
                    match result {
                        Ok(()) => {
                            // Out of the overlay before they count as written: whoever
                            // waits for them (`flush`) then finds them settled. Dropped
                            // here, so freeing large batches stays off the import's threads.
                            drop(overlay.pop_written(batches));
                            let mut progress = thread_shared.progress.lock();
                            progress.written += batches as u64;
                            progress.write_times.push(WriteTime { took, batches });
                        }
                        Err(e) => {
                            tracing::error!(%e, "writing block batches to the database failed; later blocks stay in memory only");
                            // The first failure stays the reason (a failed sync may be).
                            thread_shared.progress.lock().failure.get_or_insert_with(|| e.to_string());
                        }
                    }
                    thread_shared.changed.notify_all();
                }
            })
            .expect("spawning the persister thread");
        Self { thread: Mutex::new(Some(thread)), shared }
    }

    /// Records a failure outside the persister thread (a failed sync) as the sticky one:
    /// later writes stay off the disk, and every later commit, `flush` and the failure
    /// watch report it, as for a failed write.
    pub(crate) fn fail(&self, reason: String) {
        let mut progress = self.shared.progress.lock();
        if progress.failure.is_none() {
            tracing::error!(%reason, "the database failed; later blocks stay in memory only");
            progress.failure = Some(reason);
        }
        drop(progress);
        self.shared.changed.notify_all();
    }

    /// The sticky failure, if a write failed.
    pub(crate) fn check(&self) -> Result<(), StoreError> {
        match &self.shared.progress.lock().failure {
            Some(reason) => Err(StoreError::Persistence(reason.clone())),
            None => Ok(()),
        }
    }

    /// Waits until the queue has room for one more batch (fewer than
    /// `MAX_PENDING_BATCHES` not yet written), then reports a failure or a shut-down
    /// store. Called before a batch becomes visible, under the store's write order, so
    /// that `enqueue` cannot fail after it: a commit that fails leaves no trace.
    pub(crate) fn reserve(&self) -> Result<(), StoreError> {
        let mut progress = self.shared.progress.lock();
        loop {
            if progress.closed {
                return Err(StoreError::Persistence("the store is shut down".into()));
            }
            if let Some(reason) = &progress.failure {
                return Err(StoreError::Persistence(reason.clone()));
            }
            if progress.accepted - progress.written < MAX_PENDING_BATCHES as u64 {
                return Ok(());
            }
            self.shared.changed.wait(&mut progress);
        }
    }

    /// Queues a batch already in the overlay, after `reserve` (under the same write
    /// order). Never fails: a failure since `reserve` makes the persister drop it
    /// unwritten, as it drops every batch after a failed write.
    pub(crate) fn enqueue(&self, pending: Arc<PendingBatch>) {
        let mut progress = self.shared.progress.lock();
        progress.accepted += 1;
        progress.queue.push_back((pending, Instant::now()));
        drop(progress);
        self.shared.changed.notify_all();
    }

    /// Waits until every accepted batch is on the backend.
    pub(crate) fn flush(&self) -> Result<(), StoreError> {
        self.wait_until_behind(0)
    }

    /// Waits until at most `lag` accepted batches are not yet on the backend. The
    /// persister writes what it holds meanwhile, without waiting for a full group.
    pub(crate) fn wait_until_behind(&self, lag: u64) -> Result<(), StoreError> {
        let mut progress = self.shared.progress.lock();
        progress.waiters += 1;
        self.shared.changed.notify_all();
        let result = loop {
            if let Some(reason) = &progress.failure {
                break Err(StoreError::Persistence(reason.clone()));
            }
            if progress.written + lag >= progress.accepted {
                break Ok(());
            }
            self.shared.changed.wait(&mut progress);
        };
        progress.waiters -= 1;
        result
    }

    /// A handle that waits for the first failed write without keeping the store open.
    pub(crate) fn failure_watch(&self) -> FailureWatch {
        FailureWatch { shared: self.shared.clone() }
    }

    pub(crate) fn take_write_times(&self) -> Vec<WriteTime> {
        std::mem::take(&mut self.shared.progress.lock().write_times)
    }
}

/// Waits for the persister's first failed write (see `Store::failure_watch`).
#[derive(Clone)]
pub struct FailureWatch {
    shared: Arc<Shared>,
}

impl FailureWatch {
    /// Blocks until a write fails and returns its reason; never returns while the disk
    /// keeps up (a store that is dropped cleanly never fails).
    pub fn wait(&self) -> String {
        let mut progress = self.shared.progress.lock();
        loop {
            if let Some(reason) = &progress.failure {
                return reason.clone();
            }
            self.shared.changed.wait(&mut progress);
        }
    }

    /// The failure, if a write failed already.
    pub fn failed(&self) -> Option<String> {
        self.shared.progress.lock().failure.clone()
    }
}

impl Drop for Persister {
    fn drop(&mut self) {
        // The thread writes what is queued, then ends.
        self.shared.progress.lock().closed = true;
        self.shared.changed.notify_all();
        if let Some(thread) = self.thread.lock().take() {
            let _ = thread.join();
        }
    }
}

/// Applies pending batches (a `snapshot`, oldest first) over a backend prefix scan.
pub(crate) fn merge_scan(
    snapshot: &[Arc<PendingBatch>],
    table: Table,
    prefix: &[u8],
    base: Entries,
) -> Entries {
    if snapshot.is_empty() {
        return base;
    }
    let mut merged: std::collections::BTreeMap<Vec<u8>, Vec<u8>> = base.into_iter().collect();
    for pending in snapshot {
        for (t, key, value) in &pending.batch.ops {
            if *t != table || !key.starts_with(prefix) {
                continue;
            }
            match value {
                Some(v) => merged.insert(key.clone(), v.clone()),
                None => merged.remove(key),
            };
        }
    }
    merged.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Ops over a few tables with repeated keys (puts and deletes), by a fixed recipe.
    fn ops(seed: u64, n: u64, tables: &[Table]) -> WriteBatch {
        let mut batch = WriteBatch::new();
        for i in 0..n {
            let x = (i ^ seed).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let table = tables[(x >> 7) as usize % tables.len()];
            // 0..40 distinct keys of 1..=40 bytes: many writes of one key.
            let key = vec![(x >> 20) as u8 % 40; 1 + (x >> 28) as usize % 40];
            if x.is_multiple_of(5) {
                batch.delete(table, key);
            } else {
                batch.put(table, key, i.to_be_bytes().to_vec());
            }
        }
        batch
    }

    /// The last op of each key, replayed in order.
    fn model(batches: &[&WriteBatch]) -> BTreeMap<(Table, Vec<u8>), Option<Vec<u8>>> {
        let mut last = BTreeMap::new();
        for (table, key, value) in batches.iter().flat_map(|b| &b.ops) {
            last.insert((*table, key.clone()), value.clone());
        }
        last
    }

    fn check(pending: &PendingBatch, want: &BTreeMap<(Table, Vec<u8>), Option<Vec<u8>>>) {
        let mut listed = BTreeMap::new();
        for table in Table::ALL {
            for (key, value) in pending.table_ops(table) {
                assert!(listed.insert((table, key.to_vec()), value.cloned()).is_none());
            }
            for key in (0u8..45).flat_map(|b| (1..=41).map(move |len| vec![b; len])) {
                let got = pending.get(table, &key).map(|v| v.map(<[u8]>::to_vec));
                assert_eq!(got, want.get(&(table, key.clone())).cloned(), "{table:?} {key:?}");
            }
        }
        assert_eq!(&listed, want, "table_ops lists each key once, with its last op");
    }

    #[test]
    fn a_pending_batch_answers_each_key_with_its_last_op() {
        let state = [Table::Accounts, Table::Storage, Table::StorageTrie];
        let chain = [Table::Headers, Table::Receipts];
        for seed in 0..4 {
            let first = ops(seed, 2000, &state);
            check(&PendingBatch::new(first.clone()), &model(&[&first]));
            // Parts over different tables, as a block's commit joins them, and parts over
            // the same tables (the later part's ops win).
            for tables in [&chain[..], &state[..]] {
                let second = ops(seed + 100, 700, tables);
                let joined = PendingBatch::concat(
                    PendingBatch::new(first.clone()),
                    PendingBatch::new(second.clone()),
                );
                check(&joined, &model(&[&first, &second]));
                assert_eq!(joined.batch.len(), first.len() + second.len());
            }
        }
    }
}
