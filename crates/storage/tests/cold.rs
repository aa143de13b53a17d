//! What the import bench's cold-state protocol relies on: write groups reach the
//! database as one write, checkpoints open as stores of their own, and clearing the
//! caches sends the next reads to the (slow) backend.

use alloy_primitives::{Address, U256};
use ethrex_storage::memory::MemoryBackend;
use ethrex_storage::{DbKind, KvBackend, Store, Table, WriteBatch};
use std::sync::Arc;
use std::time::Duration;

fn slot_batch(address: Address, slot: u64, value: u8) -> WriteBatch {
    let mut key = address.to_vec();
    key.extend_from_slice(&U256::from(slot).to_be_bytes::<32>());
    let mut batch = WriteBatch::new();
    batch.put(Table::Storage, key, vec![value]);
    batch
}

#[test]
fn a_write_group_is_visible_at_once_and_written_as_one() {
    let backend = Arc::new(MemoryBackend::new());
    let store = Store::new(backend.clone());
    let a = Address::repeat_byte(0xaa);
    store.write(slot_batch(a, 0, 1)).unwrap();
    store.flush().unwrap();
    store.take_write_times();

    store.begin_group();
    for slot in 1..=3u64 {
        store.write(slot_batch(a, slot, slot as u8 + 1)).unwrap();
    }
    // Overwrite inside the group: the later value wins, before and after the merge.
    store.write(slot_batch(a, 2, 9)).unwrap();
    store.flush().unwrap();
    assert_eq!(store.storage(&a, &U256::from(3)).unwrap(), U256::from(4));
    let mut key = a.to_vec();
    key.extend_from_slice(&U256::from(3).to_be_bytes::<32>());
    assert_eq!(backend.get(Table::Storage, &key).unwrap(), None, "a held batch reached the disk");
    assert!(store.take_write_times().is_empty());

    store.end_group().unwrap();
    assert_eq!(store.storage(&a, &U256::from(2)).unwrap(), U256::from(9));
    store.flush().unwrap();
    assert_eq!(store.take_write_times().len(), 1, "the group took one write");
    assert_eq!(backend.get(Table::Storage, &key).unwrap(), Some(vec![4]));
    let mut key2 = a.to_vec();
    key2.extend_from_slice(&U256::from(2).to_be_bytes::<32>());
    assert_eq!(backend.get(Table::Storage, &key2).unwrap(), Some(vec![9]));
    // No group open: writes go one by one again.
    store.end_group().unwrap();
    store.write(slot_batch(a, 4, 5)).unwrap();
    store.flush().unwrap();
    assert_eq!(store.take_write_times().len(), 1);
}

#[test]
fn checkpoints_open_as_their_own_store() {
    for kind in [DbKind::Rocksdb, DbKind::Mdbx] {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(kind, Some(&dir.path().join("db"))).unwrap();
        let a = Address::repeat_byte(0x11);
        store.write(slot_batch(a, 7, 3)).unwrap();
        store.checkpoint(&dir.path().join("copy")).unwrap();
        // Later writes to the original do not reach the copy.
        store.write(slot_batch(a, 8, 4)).unwrap();
        store.flush().unwrap();
        let copy = Store::open(kind, Some(&dir.path().join("copy"))).unwrap();
        assert_eq!(copy.storage(&a, &U256::from(7)).unwrap(), U256::from(3), "{kind:?}");
        assert_eq!(copy.storage(&a, &U256::from(8)).unwrap(), U256::ZERO, "{kind:?}");
        assert_eq!(store.directory().as_deref(), Some(dir.path().join("db").as_path()));
    }
    let err = Store::in_memory().checkpoint(std::path::Path::new("/tmp/x")).unwrap_err();
    assert!(err.to_string().contains("memory backend cannot copy"), "{err}");
}

#[test]
fn clearing_the_caches_sends_reads_back_to_the_slow_backend() {
    let dir = tempfile::tempdir().unwrap();
    let store =
        Store::open_with_read_latency(DbKind::Rocksdb, Some(dir.path()), Duration::from_millis(2))
            .unwrap();
    let a = Address::repeat_byte(0x22);
    store.write(slot_batch(a, 1, 1)).unwrap();
    store.flush().unwrap();
    store.clear_caches().unwrap();
    let before = store.backend_reads().unwrap();
    assert_eq!(store.storage(&a, &U256::from(1)).unwrap(), U256::from(1));
    assert_eq!(store.backend_reads().unwrap(), before + 1);
    // Cached now: no backend read.
    assert_eq!(store.storage(&a, &U256::from(1)).unwrap(), U256::from(1));
    assert_eq!(store.backend_reads().unwrap(), before + 1);
    store.clear_caches().unwrap();
    let t = std::time::Instant::now();
    assert_eq!(store.storage(&a, &U256::from(1)).unwrap(), U256::from(1));
    assert!(t.elapsed() >= Duration::from_millis(2));
    assert_eq!(store.backend_reads().unwrap(), before + 2);
    assert_eq!(Store::in_memory().backend_reads(), None);
}
