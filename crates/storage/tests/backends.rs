//! Every backend: batches are applied whole, reads see them, prefix scans are ordered,
//! and on-disk backends keep everything across a reopen.

use ethrex_storage::{DbKind, Store, Table, WriteBatch};
use ethrex_storage::KvBackend;
use std::sync::Arc;

fn backends(dir: &std::path::Path) -> Vec<(DbKind, Arc<dyn KvBackend>)> {
    vec![
        (DbKind::Memory, Arc::new(ethrex_storage::memory::MemoryBackend::new())),
        (DbKind::Mdbx, Arc::new(ethrex_storage::mdbx::MdbxBackend::open(&dir.join("mdbx")).unwrap())),
        (DbKind::Rocksdb, Arc::new(ethrex_storage::rocksdb::RocksBackend::open(&dir.join("rocks")).unwrap())),
    ]
}

#[test]
fn put_get_delete_and_scan() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, db) in backends(dir.path()) {
        let mut batch = WriteBatch::new();
        for i in [3u8, 1, 2] {
            batch.put(Table::Storage, vec![7, i], vec![i; 3]);
        }
        batch.put(Table::Storage, vec![8, 0], vec![9]);
        batch.put(Table::Accounts, vec![7, 1], vec![1]);
        db.write(&batch).unwrap();
        assert_eq!(db.get(Table::Storage, &[7, 2]).unwrap(), Some(vec![2; 3]), "{kind:?}");
        assert_eq!(db.get(Table::Accounts, &[7, 2]).unwrap(), None, "{kind:?}: tables are separate");
        let scan = db.scan_prefix(Table::Storage, &[7]).unwrap();
        assert_eq!(scan.iter().map(|(k, _)| k[1]).collect::<Vec<_>>(), vec![1, 2, 3], "{kind:?}");
        let mut batch = WriteBatch::new();
        batch.delete(Table::Storage, vec![7, 1]);
        batch.put(Table::Storage, vec![7, 3], vec![0]);
        db.write(&batch).unwrap();
        assert_eq!(db.get(Table::Storage, &[7, 1]).unwrap(), None, "{kind:?}");
        assert_eq!(db.get(Table::Storage, &[7, 3]).unwrap(), Some(vec![0]), "{kind:?}");
    }
}

#[test]
fn on_disk_backends_persist_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    for kind in [DbKind::Mdbx, DbKind::Rocksdb] {
        let path = dir.path().join(format!("{kind:?}"));
        {
            let store = Store::open(kind, Some(&path)).unwrap();
            let mut batch = WriteBatch::new();
            batch.put(Table::Meta, b"head".to_vec(), vec![0xab; 32]);
            store.write(batch).unwrap();
        }
        let store = Store::open(kind, Some(&path)).unwrap();
        assert_eq!(store.head().unwrap(), Some(alloy_primitives::B256::repeat_byte(0xab)), "{kind:?}");
    }
}

#[test]
fn corrupt_values_are_errors_not_panics() {
    let store = Store::in_memory();
    let mut batch = WriteBatch::new();
    batch.put(Table::Meta, b"head".to_vec(), vec![1, 2, 3]);
    batch.put(Table::Accounts, vec![0x11; 20], vec![0xff, 0x00]);
    store.write(batch).unwrap();
    assert!(store.head().is_err());
    assert!(store.account(&alloy_primitives::Address::repeat_byte(0x11)).is_err());
}

#[test]
fn disk_backends_need_a_path() {
    assert!(Store::open(DbKind::Mdbx, None).is_err());
    assert!(Store::open(DbKind::Rocksdb, None).is_err());
}
