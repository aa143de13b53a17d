//! Background persistence: a committed batch is readable at once, reaches the backend
//! whole and in order, and a failed write stops everything after it from landing.

use alloy_primitives::{Address, B256, U256};
use ethrex_storage::backend::Entries;
use ethrex_storage::memory::MemoryBackend;
use ethrex_storage::persist::{MAX_PENDING_BATCHES, WRITE_GROUP};
use ethrex_storage::{CacheSizes, KvBackend, SortedWrites, Store, StoreError, Table, WriteBatch};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A memory backend whose writes wait while the test holds `gate`, and which can be told
/// to fail its n-th write.
#[derive(Default)]
struct TestBackend {
    inner: MemoryBackend,
    gate: Mutex<()>,
    writes: AtomicUsize,
    /// Keys written, over all writes.
    ops: AtomicUsize,
    fail_write: Option<usize>,
}

impl KvBackend for TestBackend {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner.get(table, key)
    }
    fn scan_prefix(
        &self,
        table: Table,
        prefix: &[u8],
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>, StoreError> {
        self.inner.scan_prefix(table, prefix)
    }
    fn write(&self, writes: &SortedWrites<'_>) -> Result<(), StoreError> {
        let _open = self.gate.lock().unwrap();
        let n = self.writes.fetch_add(1, Ordering::SeqCst) + 1;
        if self.fail_write == Some(n) {
            return Err(StoreError::Backend("no space left on device".into()));
        }
        self.ops.fetch_add(writes.len(), Ordering::SeqCst);
        self.inner.write(writes)
    }
    fn kind(&self) -> &'static str {
        "test"
    }
}

const ACCOUNT: Address = Address::repeat_byte(0x42);

fn slot_key(slot: u64) -> Vec<u8> {
    let mut key = ACCOUNT.to_vec();
    key.extend_from_slice(&U256::from(slot).to_be_bytes::<32>());
    key
}

fn head_batch(head: u8, puts: &[(u64, u8)], deletes: &[u64]) -> WriteBatch {
    let mut batch = WriteBatch::new();
    for (slot, value) in puts {
        batch.put(Table::Storage, slot_key(*slot), vec![*value]);
    }
    for slot in deletes {
        batch.delete(Table::Storage, slot_key(*slot));
    }
    batch.put(Table::Meta, b"head".to_vec(), vec![head; 32]);
    batch
}

fn entries(store: &Store) -> Vec<(u64, u64)> {
    store
        .storage_entries(&ACCOUNT)
        .unwrap()
        .into_iter()
        .map(|(k, v)| (k.to::<u64>(), v.to::<u64>()))
        .collect()
}

#[test]
fn reads_see_batches_before_they_reach_the_disk() {
    let backend = Arc::new(TestBackend::default());
    let store = Store::new(backend.clone());
    let gate = backend.gate.lock().unwrap();
    store.write(head_batch(1, &[(1, 10), (2, 20), (3, 30)], &[])).unwrap();
    store.write(head_batch(2, &[(3, 31), (4, 40)], &[1])).unwrap();
    // Nothing is on the backend yet; every read answers from the pending batches.
    assert_eq!(backend.inner.get(Table::Meta, b"head").unwrap(), None);
    assert_eq!(store.head().unwrap(), Some(B256::repeat_byte(2)));
    assert_eq!(store.storage(&ACCOUNT, &U256::from(1)).unwrap(), U256::ZERO);
    assert_eq!(store.storage(&ACCOUNT, &U256::from(3)).unwrap(), U256::from(31));
    assert_eq!(entries(&store), vec![(2, 20), (3, 31), (4, 40)]);
    drop(gate);
    store.flush().unwrap();
    // Now the backend holds the same state, and reads (overlay empty) still agree.
    assert_eq!(backend.inner.get(Table::Meta, b"head").unwrap(), Some(vec![2; 32]));
    assert_eq!(backend.inner.get(Table::Storage, &slot_key(1)).unwrap(), None);
    assert_eq!(entries(&store), vec![(2, 20), (3, 31), (4, 40)]);
    let written: usize = store.take_write_times().iter().map(|w| w.batches).sum();
    assert_eq!(written, 2);
}

#[test]
fn a_value_evicted_from_the_cache_is_read_from_its_pending_batch() {
    let backend = Arc::new(TestBackend::default());
    // Far fewer cache entries than slots written: most reads miss the cache.
    let store = Store::with_cache_sizes(
        backend.clone(),
        CacheSizes { trie_nodes: 16, accounts: 16, storage: 16 },
    );
    let puts: Vec<(u64, u8)> = (0..200).map(|slot| (slot, (slot % 250) as u8 + 1)).collect();
    let gate = backend.gate.lock().unwrap();
    store.write(head_batch(1, &puts, &[])).unwrap();
    for (slot, value) in &puts {
        assert_eq!(
            store.storage(&ACCOUNT, &U256::from(*slot)).unwrap(),
            U256::from(*value),
            "slot {slot}"
        );
    }
    drop(gate);
    store.flush().unwrap();
}

#[test]
fn a_failed_write_is_sticky_and_nothing_after_it_lands() {
    let backend = Arc::new(TestBackend { fail_write: Some(2), ..Default::default() });
    let store = Store::new(backend.clone());
    store.write(head_batch(1, &[(1, 10)], &[])).unwrap();
    store.flush().unwrap();
    // The second write fails on the persister thread. It holds block 2 and at most
    // `WRITE_GROUP - 1` more, so at least the last of these blocks is still queued behind
    // it: it must be dropped, not written over the gap.
    let last = WRITE_GROUP as u64 + 2;
    let gate = backend.gate.lock().unwrap();
    for block in 2..=last {
        store.write(head_batch(block as u8, &[(block, block as u8 * 10)], &[])).unwrap();
    }
    drop(gate);
    assert!(matches!(store.flush(), Err(StoreError::Persistence(_))));
    // A commit after the failure is refused and leaves no trace, not even in memory.
    let refused = last as u8 + 1;
    assert!(matches!(store.write(head_batch(refused, &[], &[])), Err(StoreError::Persistence(_))));
    assert_eq!(store.head().unwrap(), Some(B256::repeat_byte(last as u8)));
    assert_eq!(
        backend.inner.get(Table::Meta, b"head").unwrap(),
        Some(vec![1; 32]),
        "the disk keeps block 1"
    );
    for block in 2..=last {
        assert_eq!(backend.inner.get(Table::Storage, &slot_key(block)).unwrap(), None, "{block}");
    }
    assert_eq!(backend.writes.load(Ordering::SeqCst), 2, "nothing was attempted after the failure");
}

#[test]
fn commits_wait_when_the_disk_falls_behind() {
    let backend = Arc::new(TestBackend::default());
    let store = Store::new(backend.clone());
    let gate = backend.gate.lock().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let writer = {
        let (store, accepted) = (store.clone(), accepted.clone());
        std::thread::spawn(move || {
            for i in 0..(MAX_PENDING_BATCHES + 10) {
                store.write(head_batch(i as u8, &[(i as u64, 1)], &[])).unwrap();
                accepted.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    // The bound counts the batches with the (blocked) backend too: the writer gets that
    // far, whatever the machine's speed, and then waits. Polled, with a deadline far
    // above any scheduling delay, rather than a fixed sleep.
    let bound = MAX_PENDING_BATCHES;
    let deadline = Instant::now() + Duration::from_secs(30);
    while accepted.load(Ordering::SeqCst) < bound {
        assert!(Instant::now() < deadline, "the writer never filled the queue");
        std::thread::sleep(Duration::from_millis(1));
    }
    let waiting = accepted.load(Ordering::SeqCst);
    assert!(waiting <= MAX_PENDING_BATCHES + 1, "{waiting} batches accepted with the disk stalled");
    assert!(!writer.is_finished(), "every write was accepted with the disk stalled");
    assert_eq!(backend.writes.load(Ordering::SeqCst), 0, "the backend is still blocked");
    drop(gate);
    writer.join().unwrap();
    store.flush().unwrap();
    assert_eq!(entries(&store).len(), MAX_PENDING_BATCHES + 10);
    let writes = store.take_write_times();
    assert_eq!(writes.iter().map(|w| w.batches).sum::<usize>(), MAX_PENDING_BATCHES + 10);
    assert!(writes.iter().all(|w| (1..=WRITE_GROUP).contains(&w.batches)), "{writes:?}");
    assert_eq!(backend.writes.load(Ordering::SeqCst), writes.len());
}

/// Every key of every table, straight from a backend.
fn backend_entries(backend: &dyn KvBackend) -> Vec<(Table, Entries)> {
    Table::ALL.iter().map(|&table| (table, backend.scan_prefix(table, &[]).unwrap())).collect()
}

#[test]
fn batches_written_together_end_as_if_written_one_by_one() {
    let backend = Arc::new(TestBackend::default());
    let store = Store::new(backend.clone());
    let reference = MemoryBackend::new();
    // Batches that overwrite and delete each other's slots, and all write the head.
    let batches: Vec<WriteBatch> = (0..MAX_PENDING_BATCHES as u64)
        .map(|i| {
            let puts: Vec<(u64, u8)> =
                (0..6).map(|k| ((i * 7 + k * 3) % 11, (i * 13 + k) as u8)).collect();
            let deletes: Vec<u64> = (0..2)
                .map(|k| (i * 5 + k * 4) % 11)
                .filter(|s| !puts.iter().any(|(p, _)| p == s))
                .collect();
            head_batch(i as u8 + 1, &puts, &deletes)
        })
        .collect();
    let ops: usize = batches.iter().map(WriteBatch::len).sum();
    // With the disk stalled every batch is accepted (the bound is not reached), and the
    // persister holds at most one group with the backend: the rest wait together.
    let gate = backend.gate.lock().unwrap();
    for batch in &batches {
        reference.write_batch(batch).unwrap();
        store.write(batch.clone()).unwrap();
    }
    drop(gate);
    store.flush().unwrap();
    let writes = store.take_write_times();
    assert_eq!(writes.iter().map(|w| w.batches).sum::<usize>(), batches.len());
    assert!(writes.len() < batches.len(), "no two batches were written together: {writes:?}");
    assert!(
        backend.ops.load(Ordering::SeqCst) < ops,
        "a key written by several batches of one write was written more than once"
    );
    assert_eq!(backend_entries(&backend.inner), backend_entries(&reference));
}

#[test]
fn cached_accounts_and_code_follow_writes() {
    use ethrex_common::AccountState;
    let backend = Arc::new(TestBackend::default());
    let store = Store::new(backend.clone());
    let (a, b) = (Address::repeat_byte(1), Address::repeat_byte(2));
    let account =
        |balance: u64| AccountState { balance: U256::from(balance), ..Default::default() };
    let mut first = WriteBatch::new();
    first.put(Table::Accounts, a.to_vec(), alloy_rlp::encode(account(1)));
    first.put(Table::Accounts, b.to_vec(), alloy_rlp::encode(account(2)));
    // Code is keyed (and checked on read) by its hash.
    let code_hash = alloy_primitives::keccak256([0x60, 0x00]);
    first.put(Table::Code, code_hash.to_vec(), vec![0x60, 0x00]);
    store.write(first).unwrap();
    // First reads fill the caches; the second ones are served from them.
    for _ in 0..2 {
        assert_eq!(store.account(&a).unwrap(), Some(account(1)));
        assert_eq!(store.account(&b).unwrap(), Some(account(2)));
        assert_eq!(store.code(&code_hash).unwrap().map(|c| c.to_vec()), Some(vec![0x60, 0x00]));
    }
    let mut second = WriteBatch::new();
    second.put(Table::Accounts, a.to_vec(), alloy_rlp::encode(account(3)));
    second.delete(Table::Accounts, b.to_vec());
    store.write(second).unwrap();
    assert_eq!(store.account(&a).unwrap(), Some(account(3)));
    assert_eq!(store.account(&b).unwrap(), None);
    // A record that does not decode is reported, never answered with the cached value.
    let mut corrupt = WriteBatch::new();
    corrupt.put(Table::Accounts, a.to_vec(), vec![0xff, 0x01]);
    store.write(corrupt).unwrap();
    assert!(
        matches!(store.account(&a), Err(StoreError::Corrupt { .. })),
        "{:?}",
        store.account(&a)
    );
    store.flush().unwrap();
}

#[test]
fn reads_see_a_batch_before_its_values_reach_the_caches() {
    let backend = Arc::new(TestBackend::default());
    let store = Store::new(backend.clone());
    let a = Address::repeat_byte(7);
    let account = |balance: u64| ethrex_common::AccountState {
        balance: U256::from(balance),
        ..Default::default()
    };
    let mut first = head_batch(1, &[(1, 10), (2, 20)], &[]);
    first.put(Table::Accounts, a.to_vec(), alloy_rlp::encode(account(1)));
    store.write(first).unwrap();
    // Read everything once, so the caches hold the old values.
    assert_eq!(store.storage(&ACCOUNT, &U256::from(1)).unwrap(), U256::from(10));
    assert_eq!(store.storage(&ACCOUNT, &U256::from(2)).unwrap(), U256::from(20));
    assert_eq!(store.account(&a).unwrap(), Some(account(1)));
    store.flush().unwrap();

    // Occupy every thread of the pool the cache updates run on, so the next batch's
    // values cannot reach the caches until the reads below are done.
    let threads = rayon::current_num_threads();
    let (started, release) = (
        Arc::new(std::sync::Barrier::new(threads + 1)),
        Arc::new(std::sync::Barrier::new(threads + 1)),
    );
    for _ in 0..threads {
        let (started, release) = (started.clone(), release.clone());
        rayon::spawn(move || {
            started.wait();
            release.wait();
        });
    }
    started.wait();
    let mut second = head_batch(2, &[(1, 11)], &[2]);
    second.put(Table::Accounts, a.to_vec(), alloy_rlp::encode(account(2)));
    store.write(second).unwrap();
    // The caches still hold the old values; every read must answer with the new ones.
    assert_eq!(store.storage(&ACCOUNT, &U256::from(1)).unwrap(), U256::from(11));
    assert_eq!(store.storage(&ACCOUNT, &U256::from(2)).unwrap(), U256::ZERO);
    assert_eq!(store.storage(&ACCOUNT, &U256::from(3)).unwrap(), U256::ZERO);
    assert_eq!(store.account(&a).unwrap(), Some(account(2)));
    // A third batch puts the second's values into the caches first.
    store.write(head_batch(3, &[(3, 30)], &[])).unwrap();
    assert_eq!(store.storage(&ACCOUNT, &U256::from(1)).unwrap(), U256::from(11));
    assert_eq!(store.storage(&ACCOUNT, &U256::from(3)).unwrap(), U256::from(30));
    release.wait();
    store.flush().unwrap();
    assert_eq!(store.storage(&ACCOUNT, &U256::from(1)).unwrap(), U256::from(11));
    assert_eq!(store.storage(&ACCOUNT, &U256::from(2)).unwrap(), U256::ZERO);
    assert_eq!(store.storage(&ACCOUNT, &U256::from(3)).unwrap(), U256::from(30));
    assert_eq!(store.account(&a).unwrap(), Some(account(2)));
}

#[test]
fn a_corrupt_slot_value_is_reported_not_cached_as_zero() {
    let backend = Arc::new(TestBackend::default());
    let store = Store::new(backend.clone());
    let mut batch = head_batch(1, &[], &[]);
    // A storage value is at most 32 bytes.
    batch.put(Table::Storage, slot_key(1), vec![1; 33]);
    store.write(batch).unwrap();
    assert!(matches!(
        store.storage(&ACCOUNT, &U256::from(1)),
        Err(StoreError::Corrupt { table: "storage", .. })
    ));
    // The next batch has the first one's values put into the caches first; the corrupt
    // one must not become a cached zero.
    store.write(head_batch(2, &[(2, 20)], &[])).unwrap();
    store.flush().unwrap();
    assert!(matches!(
        store.storage(&ACCOUNT, &U256::from(1)),
        Err(StoreError::Corrupt { table: "storage", .. })
    ));
    assert_eq!(store.storage(&ACCOUNT, &U256::from(2)).unwrap(), U256::from(20));
    assert!(store.storage_entries(&ACCOUNT).is_err());
}
