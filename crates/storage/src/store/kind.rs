//! Which backend holds the store, as named on the command line, and opening it.

use super::Store;
use crate::StoreError;
use std::path::Path;
use std::sync::Arc;

/// Which key-value backend holds the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DbKind {
    /// Nothing on disk (tests).
    Memory,
    /// MDBX (`libmdbx`).
    Mdbx,
    /// RocksDB.
    Rocksdb,
}

impl std::str::FromStr for DbKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "memory" => Ok(DbKind::Memory),
            "mdbx" => Ok(DbKind::Mdbx),
            "rocksdb" => Ok(DbKind::Rocksdb),
            other => Err(format!("unknown database '{other}' (expected memory, mdbx or rocksdb)")),
        }
    }
}

impl Store {
    /// Opens (creating if needed) a store. `path` is required for on-disk backends. A
    /// store whose state is in another layout than this build's is refused.
    pub fn open(kind: DbKind, path: Option<&Path>) -> Result<Self, StoreError> {
        let store = Self::new(open_backend(kind, path)?);
        store.check_layout()?;
        Ok(store)
    }
}

impl DbKind {
    /// The backend alone, without a `Store` over it. `path` is required for on-disk
    /// backends.
    pub fn open_backend(
        self,
        path: Option<&Path>,
    ) -> Result<Arc<dyn crate::KvBackend>, StoreError> {
        open_backend(self, path)
    }

    /// The name `FromStr` takes.
    pub fn name(self) -> &'static str {
        match self {
            DbKind::Memory => "memory",
            DbKind::Mdbx => "mdbx",
            DbKind::Rocksdb => "rocksdb",
        }
    }
}

fn open_backend(
    kind: DbKind,
    path: Option<&Path>,
) -> Result<Arc<dyn crate::KvBackend>, StoreError> {
    let need_path =
        || path.ok_or_else(|| StoreError::Invalid(format!("{kind:?} needs a data directory")));
    Ok(match kind {
        DbKind::Memory => Arc::new(crate::memory::MemoryBackend::new()),
        DbKind::Mdbx => Arc::new(crate::mdbx::MdbxBackend::open_with(
            need_path()?,
            crate::mdbx::MdbxOptions::from_env()?,
        )?),
        DbKind::Rocksdb => Arc::new(crate::rocksdb::RocksBackend::open(need_path()?)?),
    })
}

#[cfg(test)]
mod tests {
    use super::DbKind;

    #[test]
    fn parses_the_three_names_and_rejects_others() {
        assert_eq!("memory".parse(), Ok(DbKind::Memory));
        assert_eq!("mdbx".parse(), Ok(DbKind::Mdbx));
        assert_eq!("rocksdb".parse(), Ok(DbKind::Rocksdb));
        let err = "sqlite".parse::<DbKind>().unwrap_err();
        assert!(err.contains("unknown database 'sqlite'"), "{err}");
    }
}
