//! What the import bench's cold-state protocol relies on: checkpoints open as stores of
//! their own, and clearing the caches sends the next reads to the (slow) backend.

use alloy_primitives::{Address, U256};
use ethrex_bench_storage::BenchStore;
use ethrex_storage::{DbKind, Store, Table, WriteBatch};
use std::time::Duration;

fn slot_batch(address: Address, slot: u64, value: u8) -> WriteBatch {
    let mut key = address.to_vec();
    key.extend_from_slice(&U256::from(slot).to_be_bytes::<32>());
    let mut batch = WriteBatch::new();
    batch.put(Table::Storage, key, vec![value]);
    batch
}

#[test]
fn checkpoints_open_as_their_own_store() {
    for kind in [DbKind::Rocksdb, DbKind::Mdbx] {
        let dir = tempfile::tempdir().unwrap();
        let bench = BenchStore::open(kind, Some(&dir.path().join("db"))).unwrap();
        let store = &bench.store;
        let a = Address::repeat_byte(0x11);
        store.write(slot_batch(a, 7, 3)).unwrap();
        bench.checkpoint(&dir.path().join("copy")).unwrap();
        // Later writes to the original do not reach the copy.
        store.write(slot_batch(a, 8, 4)).unwrap();
        store.flush().unwrap();
        let copy = Store::open(kind, Some(&dir.path().join("copy"))).unwrap();
        assert_eq!(copy.storage(&a, &U256::from(7)).unwrap(), U256::from(3), "{kind:?}");
        assert_eq!(copy.storage(&a, &U256::from(8)).unwrap(), U256::ZERO, "{kind:?}");
        assert_eq!(bench.directory(), Some(dir.path().join("db").as_path()));
    }
    let memory = BenchStore::open(DbKind::Memory, None).unwrap();
    assert_eq!(memory.directory(), None);
    let err = memory.checkpoint(std::path::Path::new("/tmp/x")).unwrap_err();
    assert!(err.to_string().contains("memory backend cannot copy"), "{err}");
}

#[test]
fn clearing_the_caches_sends_reads_back_to_the_slow_backend() {
    let dir = tempfile::tempdir().unwrap();
    let bench = BenchStore::open_with_read_latency(
        DbKind::Rocksdb,
        Some(dir.path()),
        Duration::from_millis(2),
    )
    .unwrap();
    let store = &bench.store;
    let a = Address::repeat_byte(0x22);
    store.write(slot_batch(a, 1, 1)).unwrap();
    store.flush().unwrap();
    bench.clear_caches().unwrap();
    let before = bench.backend_reads().unwrap();
    assert_eq!(store.storage(&a, &U256::from(1)).unwrap(), U256::from(1));
    assert_eq!(bench.backend_reads().unwrap(), before + 1);
    // Cached now: no backend read.
    assert_eq!(store.storage(&a, &U256::from(1)).unwrap(), U256::from(1));
    assert_eq!(bench.backend_reads().unwrap(), before + 1);
    bench.clear_caches().unwrap();
    let t = std::time::Instant::now();
    assert_eq!(store.storage(&a, &U256::from(1)).unwrap(), U256::from(1));
    assert!(t.elapsed() >= Duration::from_millis(2));
    assert_eq!(bench.backend_reads().unwrap(), before + 2);
    assert_eq!(BenchStore::open(DbKind::Memory, None).unwrap().backend_reads(), None);
}

#[test]
fn dropping_the_backends_caches_empties_rocksdbs_block_cache() {
    use ethrex_bench_storage::BenchBackend;
    use ethrex_storage::KvBackend;
    let dir = tempfile::tempdir().unwrap();
    let rocks = ethrex_storage::rocksdb::RocksBackend::open(dir.path()).unwrap();
    let mut batch = WriteBatch::new();
    for i in 0..20_000u32 {
        batch.put(Table::StorageTrie, i.to_be_bytes().repeat(8), vec![i as u8; 100]);
    }
    rocks.write_batch(&batch).unwrap();
    // On disk in table files, whose blocks the reads below bring into the block cache.
    rocks.compact().unwrap();
    for i in (0..20_000u32).step_by(7) {
        assert_eq!(
            rocks.get(Table::StorageTrie, &i.to_be_bytes().repeat(8)).unwrap().unwrap()[0],
            i as u8
        );
    }
    let before = rocks.block_cache().get_usage();
    assert!(before > 100_000, "the reads cached {before} bytes");
    rocks.drop_caches();
    // What stays is the cache's own bookkeeping, not blocks.
    let after = rocks.block_cache().get_usage();
    assert!(after < 1024, "{after} of {before} bytes left in the cache");
    // The cache works again at its full size.
    assert!(rocks.get(Table::StorageTrie, &7u32.to_be_bytes().repeat(8)).unwrap().is_some());
    assert!(rocks.block_cache().get_usage() > 0);
    assert!(rocks.warm_index().unwrap() > 0, "the table readers hold an index");
}
