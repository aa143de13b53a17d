//! A RocksDB database holding a column family this version does not declare (a table an
//! older version kept) still opens, and the table stays as it was.

use ethrex_storage::rocksdb::RocksBackend;
use ethrex_storage::{KvBackend, Table, WriteBatch};

#[test]
fn rocksdb_opens_with_a_column_family_it_does_not_declare() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let mut opts = rocksdb::Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        let db = rocksdb::DB::open_cf(&opts, &path, ["headers", "an_older_table"]).unwrap();
        let cf = db.cf_handle("an_older_table").unwrap();
        db.put_cf(cf, b"key", b"kept").unwrap();
    }
    let backend = RocksBackend::open(&path).expect("opens with the foreign table");
    let mut batch = WriteBatch::new();
    batch.put(Table::Meta, b"k".to_vec(), b"v".to_vec());
    backend.write_batch(&batch).unwrap();
    assert_eq!(backend.get(Table::Meta, b"k").unwrap().as_deref(), Some(&b"v"[..]));
    let foreign = backend.db().cf_handle("an_older_table").expect("still there");
    assert_eq!(backend.db().get_cf(foreign, b"key").unwrap().as_deref(), Some(&b"kept"[..]));
}
