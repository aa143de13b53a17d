//! In-memory backend for tests: one ordered map per table behind a single lock, so a
//! batch is applied atomically with respect to readers.

use crate::backend::{Entries, KvBackend, SortedWrites, Table};
use crate::StoreError;
use parking_lot::RwLock;
use std::collections::BTreeMap;

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

/// Every table as an ordered map in memory; nothing survives the process.
pub struct MemoryBackend {
    tables: RwLock<Vec<Map>>,
}

impl MemoryBackend {
    /// An empty database.
    pub fn new() -> Self {
        Self { tables: RwLock::new(vec![Map::new(); Table::ALL.len()]) }
    }
}

impl Default for MemoryBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl KvBackend for MemoryBackend {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.tables.read()[table.index()].get(key).cloned())
    }

    fn scan_prefix(&self, table: Table, prefix: &[u8]) -> Result<Entries, StoreError> {
        let tables = self.tables.read();
        Ok(tables[table.index()]
            .range(prefix.to_vec()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect())
    }

    fn write(&self, writes: &SortedWrites<'_>) -> Result<(), StoreError> {
        let mut tables = self.tables.write();
        for (table, key, value) in writes.iter() {
            let map = &mut tables[table.index()];
            match value {
                Some(v) => {
                    map.insert(key.clone(), v.clone());
                }
                None => {
                    map.remove(key);
                }
            }
        }
        Ok(())
    }

    fn kind(&self) -> &'static str {
        "memory"
    }
}
