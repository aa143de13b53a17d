//! MDBX backend: one named table per `Table`, one read-write transaction per batch,
//! reads through a pool of renewed read transactions (`reads`).

mod reads;

use crate::backend::{Entries, KvBackend, SortedWrites, Table};
use crate::StoreError;
use libmdbx::{
    Database, DatabaseKind, DatabaseOptions, Mode, NoWriteMap, ReadWriteOptions, SyncMode,
    TableFlags, WriteFlags, WriteMap,
};
use mdbx_sys as ffi;
use std::path::Path;
use std::time::{Duration, Instant};

/// The MDBX backend: one named table per `Table` in a memory-mapped file, committed
/// without sync and made durable at steady points (`SteadyPolicy`) or on `sync`.
pub struct MdbxBackend {
    /// Declared before `db`: its transactions are aborted before the environment closes.
    reads: reads::ReadPool,
    /// Every table's handle, opened once at startup (by `Table::index`).
    dbis: [ffi::MDBX_dbi; Table::ALL.len()],
    db: Env,
    /// Fixed when the file is created; read once (`stat` walks the main table).
    page_size: u64,
    steady: parking_lot::Mutex<SteadyPoint>,
    policy: SteadyPolicy,
    path: std::path::PathBuf,
}

/// When to turn a commit into a steady (synced) point.
///
/// In `SafeNoSync` mode MDBX keeps the last synced commit intact, so it cannot reuse any
/// page freed after it: without new steady points every batch lands in pages the file
/// never used before, so the file grows with every block and each new page is faulted in
/// and zeroed by the writer. A steady point makes the pages freed before it reusable, and
/// bounds what an OS crash can take back.
#[derive(Debug, Clone, Copy)]
pub struct SteadyPolicy {
    /// Sync once the file's used pages grew this much since the last steady point.
    pub max_growth_bytes: u64,
    /// Sync once the last steady point is this old.
    pub max_age: Duration,
}

/// How the environment is opened.
#[derive(Debug, Clone, Copy)]
pub struct MdbxOptions {
    /// When to make steady points.
    pub steady: SteadyPolicy,
    /// Let the OS read ahead around each page fault. Off by default: block import reads
    /// hash-keyed entries at random, so the pages read ahead are rarely the next ones
    /// wanted, and on a state larger than memory they evict pages that are. (On a file
    /// smaller than memory read-ahead brings the whole file into memory within seconds of
    /// a start with nothing cached.)
    pub readahead: bool,
    /// Database page size in bytes (a power of two, 256..=65536), fixed when the file is
    /// created; `None` lets MDBX choose (the OS page size, 4 KiB here).
    pub page_size: Option<usize>,
    /// Commit by writing pages in place in the shared memory map (MDBX's `WRITEMAP`),
    /// or, when off, by building them in memory and writing them to the file.
    pub write_map: bool,
}

impl Default for MdbxOptions {
    fn default() -> Self {
        Self { steady: SteadyPolicy::default(), readahead: false, page_size: None, write_map: true }
    }
}

impl MdbxOptions {
    /// The defaults, with any of `ETHREX_MDBX_WRITE_MAP` (`0`/`1`), `ETHREX_MDBX_PAGE_SIZE`
    /// (bytes) and `ETHREX_MDBX_READAHEAD` (`0`/`1`) set in the environment applied: the
    /// tuning every command that opens MDBX takes. A value that does not
    /// parse is an error, not ignored.
    pub fn from_env() -> Result<Self, StoreError> {
        let mut o = Self::default();
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let flag = |name: &str, v: String| match v.as_str() {
            "0" => Ok(false),
            "1" => Ok(true),
            _ => Err(StoreError::Invalid(format!("{name} must be 0 or 1, not '{v}'"))),
        };
        if let Some(v) = var("ETHREX_MDBX_WRITE_MAP") {
            o.write_map = flag("ETHREX_MDBX_WRITE_MAP", v)?;
        }
        if let Some(v) = var("ETHREX_MDBX_READAHEAD") {
            o.readahead = flag("ETHREX_MDBX_READAHEAD", v)?;
        }
        if let Some(v) = var("ETHREX_MDBX_PAGE_SIZE") {
            o.page_size = Some(v.parse().map_err(|_| {
                StoreError::Invalid(format!(
                    "ETHREX_MDBX_PAGE_SIZE must be a number of bytes, not '{v}'"
                ))
            })?);
        }
        Ok(o)
    }
}

impl Default for SteadyPolicy {
    fn default() -> Self {
        Self { max_growth_bytes: 64 << 20, max_age: Duration::from_secs(10) }
    }
}

struct SteadyPoint {
    at: Instant,
    /// Used pages at that point.
    pages: u64,
}

/// The environment, in either write mode (`MdbxOptions::write_map`).
enum Env {
    /// Commits write pages in place in the shared map.
    WriteMap(Database<WriteMap>),
    /// Commits build pages in memory and write them with `pwrite`.
    Copied(Database<NoWriteMap>),
}

/// Runs `$body` with `$db` bound to the environment, whichever its write mode.
macro_rules! with_env {
    ($env:expr, $db:ident => $body:expr) => {
        match $env {
            Env::WriteMap($db) => $body,
            Env::Copied($db) => $body,
        }
    };
}

/// Pages up to the highest one in use.
fn used_pages<E: DatabaseKind>(db: &Database<E>) -> Result<u64, StoreError> {
    Ok(db.info().map_err(err)?.last_pgno() as u64 + 1)
}

impl Env {
    fn used_pages(&self) -> Result<u64, StoreError> {
        with_env!(self, db => used_pages(db))
    }

    fn sync(&self) -> Result<(), StoreError> {
        with_env!(self, db => db.sync(true).map(|_| ()).map_err(err))
    }

    fn ptr(&self) -> *mut mdbx_sys::MDBX_env {
        with_env!(self, db => db.ptr().0)
    }
}

/// Creates (or opens) every table; returns their handles by `Table::index` and the page
/// size.
fn create_tables<E: DatabaseKind>(
    db: &Database<E>,
) -> Result<([ffi::MDBX_dbi; Table::ALL.len()], u64), StoreError> {
    let mut dbis = [0; Table::ALL.len()];
    let txn = db.begin_rw_txn().map_err(err)?;
    for table in Table::ALL {
        let t = txn.create_table(Some(table.name()), TableFlags::default()).map_err(err)?;
        // A handle opened in a committed transaction stays valid for the environment's
        // life, in every later transaction.
        dbis[table.index()] = t.dbi();
    }
    txn.commit().map_err(err)?;
    Ok((dbis, db.stat().map_err(err)?.page_size() as u64))
}

/// Applies `writes` in one read-write transaction.
fn write_batch<E: DatabaseKind>(
    db: &Database<E>,
    writes: &SortedWrites<'_>,
) -> Result<(), StoreError> {
    let txn = db.begin_rw_txn().map_err(err)?;
    let mut handles = Vec::with_capacity(Table::ALL.len());
    for table in Table::ALL {
        handles.push(txn.open_table(Some(table.name())).map_err(err)?);
    }
    for (table, key, value) in writes.iter() {
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

fn err(e: libmdbx::Error) -> StoreError {
    StoreError::Backend(Box::new(e))
}

impl MdbxBackend {
    /// Opens (or creates) the database in directory `path` with the default options.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Self::open_with(path, MdbxOptions::default())
    }

    /// Opens (or creates) the database in directory `path`, making steady points as
    /// `policy` says.
    pub fn open_with_policy(path: &Path, policy: SteadyPolicy) -> Result<Self, StoreError> {
        Self::open_with(path, MdbxOptions { steady: policy, ..MdbxOptions::default() })
    }

    /// Opens (or creates) the database in directory `path` with `options`.
    pub fn open_with(path: &Path, options: MdbxOptions) -> Result<Self, StoreError> {
        let MdbxOptions { steady: policy, readahead, page_size, write_map } = options;
        if let Some(size) = page_size {
            if !(256..=65536).contains(&size) || !size.is_power_of_two() {
                return Err(StoreError::Invalid(format!(
                    "MDBX page size {size} is not a power of two in 256..=65536"
                )));
            }
        }
        std::fs::create_dir_all(path).map_err(|e| StoreError::Io(path.display().to_string(), e))?;
        let options = DatabaseOptions {
            max_tables: Some(Table::ALL.len() as u64 + 4),
            // Room for every slot of the read pool plus transactions of other handles.
            max_readers: Some(reads::SLOTS as u32 + 64),
            mode: Mode::ReadWrite(ReadWriteOptions {
                // SafeNoSync keeps every committed transaction across a process kill (the
                // pages are in the OS cache) and rolls back to the last steady commit (see
                // `SteadyPolicy`) on an OS crash; the database is never left half-written.
                sync_mode: SyncMode::SafeNoSync,
                min_size: None,
                max_size: Some(1 << 40),
                growth_step: Some(256 << 20),
                shrink_threshold: None,
            }),
            no_rdahead: !readahead,
            page_size: page_size.map(libmdbx::PageSize::Set),
            ..Default::default()
        };
        let (db, (dbis, page_size)) = if write_map {
            let db = Database::<WriteMap>::open_with_options(path, options).map_err(err)?;
            let tables = create_tables(&db)?;
            (Env::WriteMap(db), tables)
        } else {
            let db = Database::<NoWriteMap>::open_with_options(path, options).map_err(err)?;
            let tables = create_tables(&db)?;
            (Env::Copied(db), tables)
        };
        let steady = SteadyPoint { at: Instant::now(), pages: db.used_pages()? };
        Ok(Self {
            reads: reads::ReadPool::new(db.ptr()),
            dbis,
            db,
            page_size,
            steady: parking_lot::Mutex::new(steady),
            policy,
            path: path.to_path_buf(),
        })
    }

    /// Bytes the file's used pages span (up to the highest page in use).
    pub fn used_bytes(&self) -> Result<u64, StoreError> {
        Ok(self.db.used_pages()? * self.page_size)
    }

    /// The directory holding the database; its data file is `mdbx.dat` in it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The database page size in bytes, fixed when the file was created.
    pub fn page_size(&self) -> u64 {
        self.page_size
    }

    /// The environment's raw handle, for operations of MDBX's C API (`mdbx-sys`) this
    /// type does not wrap. Valid for as long as `self`; the caller must not close it.
    pub fn raw_env(&self) -> *mut ffi::MDBX_env {
        self.db.ptr()
    }

    /// Called after each commit: syncs when the policy says a steady point is due.
    fn maybe_sync(&self) -> Result<(), StoreError> {
        let mut steady = self.steady.lock();
        let pages = self.db.used_pages()?;
        let grown = pages.saturating_sub(steady.pages) * self.page_size;
        if grown >= self.policy.max_growth_bytes || steady.at.elapsed() >= self.policy.max_age {
            self.db.sync()?;
            *steady = SteadyPoint { at: Instant::now(), pages };
        }
        Ok(())
    }
}

impl KvBackend for MdbxBackend {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.reads.get(self.dbis[table.index()], key)
    }

    fn scan_prefix(&self, table: Table, prefix: &[u8]) -> Result<Entries, StoreError> {
        self.reads.scan_prefix(self.dbis[table.index()], prefix)
    }

    fn write(&self, writes: &SortedWrites<'_>) -> Result<(), StoreError> {
        with_env!(&self.db, db => write_batch(db, writes))?;
        self.reads.committed();
        self.maybe_sync()
    }

    fn sync(&self) -> Result<(), StoreError> {
        let mut steady = self.steady.lock();
        self.db.sync()?;
        *steady = SteadyPoint { at: Instant::now(), pages: self.db.used_pages()? };
        Ok(())
    }

    fn kind(&self) -> &'static str {
        "mdbx"
    }
}
