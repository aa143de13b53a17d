//! MDBX backend: one named table per `Table`, one read-write transaction per batch.

use crate::backend::{Entries, KvBackend, Table, WriteBatch};
use crate::StoreError;
use libmdbx::{
    Database, DatabaseOptions, Mode, ReadWriteOptions, SyncMode, TableFlags, WriteFlags, WriteMap,
};
use std::path::Path;

pub struct MdbxBackend {
    db: Database<WriteMap>,
}

fn err(e: libmdbx::Error) -> StoreError {
    StoreError::Backend(format!("mdbx: {e}"))
}

impl MdbxBackend {
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        std::fs::create_dir_all(path).map_err(|e| StoreError::Io(path.display().to_string(), e))?;
        let options = DatabaseOptions {
            max_tables: Some(Table::ALL.len() as u64 + 4),
            mode: Mode::ReadWrite(ReadWriteOptions {
                // SafeNoSync keeps every committed transaction across a process kill (the
                // pages are in the OS cache) and rolls back to the last steady commit on an
                // OS crash; the database itself is never left half-written. The write map
                // lets commits write pages in place instead of copying them through write().
                sync_mode: SyncMode::SafeNoSync,
                min_size: None,
                max_size: Some(1 << 40),
                growth_step: Some(256 << 20),
                shrink_threshold: None,
            }),
            ..Default::default()
        };
        let db = Database::<WriteMap>::open_with_options(path, options).map_err(err)?;
        {
            let txn = db.begin_rw_txn().map_err(err)?;
            for table in Table::ALL {
                txn.create_table(Some(table.name()), TableFlags::default()).map_err(err)?;
            }
            txn.commit().map_err(err)?;
        }
        Ok(Self { db })
    }
}

impl KvBackend for MdbxBackend {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        let txn = self.db.begin_ro_txn().map_err(err)?;
        let t = txn.open_table(Some(table.name())).map_err(err)?;
        txn.get::<Vec<u8>>(&t, key).map_err(err)
    }

    fn scan_prefix(&self, table: Table, prefix: &[u8]) -> Result<Entries, StoreError> {
        let txn = self.db.begin_ro_txn().map_err(err)?;
        let t = txn.open_table(Some(table.name())).map_err(err)?;
        let mut cursor = txn.cursor(&t).map_err(err)?;
        let mut out = Vec::new();
        for item in cursor.iter_from::<Vec<u8>, Vec<u8>>(prefix) {
            let (k, v) = item.map_err(err)?;
            if !k.starts_with(prefix) {
                break;
            }
            out.push((k, v));
        }
        Ok(out)
    }

    fn write(&self, batch: &WriteBatch) -> Result<(), StoreError> {
        let txn = self.db.begin_rw_txn().map_err(err)?;
        let mut handles = Vec::with_capacity(Table::ALL.len());
        for table in Table::ALL {
            handles.push(txn.open_table(Some(table.name())).map_err(err)?);
        }
        // Sorted keys walk each B-tree once instead of jumping between random pages.
        let mut ops: Vec<&crate::backend::WriteOp> = batch.ops.iter().collect();
        ops.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        for (table, key, value) in ops {
            let t = &handles[table.index()];
            match value {
                Some(v) => txn.put(t, key, v, WriteFlags::UPSERT).map_err(err)?,
                None => {
                    txn.del(t, key, None).map_err(err)?;
                }
            }
        }
        // Dropping the transaction on any error above aborts it: nothing is applied.
        txn.commit().map_err(err)?;
        Ok(())
    }

    fn kind(&self) -> &'static str {
        "mdbx"
    }
}
