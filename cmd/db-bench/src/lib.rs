#![doc = include_str!("../README.md")]

mod data;
mod plot;
mod report;
mod run;

pub use plot::svg;
pub use report::{published, text, Published};

use anyhow::{bail, Context};
use ethrex_storage::DbKind;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// What to measure.
#[derive(Debug, Clone)]
pub struct DbBenchOptions {
    /// The backends, measured side by side (a thread count on each before the next).
    pub dbs: Vec<DbKind>,
    /// Entries loaded into each database.
    pub entries: u64,
    /// Bytes per key (at least 8: the entry's index leads the key).
    pub key_size: usize,
    /// Bytes per value.
    pub value_size: usize,
    /// Reader thread counts, one measured point each.
    pub threads: Vec<usize>,
    /// Seconds of reads per point.
    pub seconds: f64,
    /// Drop the page cache (and the backend's caches) before each point, then read the
    /// database's index back (`BenchBackend::warm_index`).
    pub cold: bool,
    /// With `cold`, do not read the index back.
    pub cold_index: bool,
    /// Where the databases live; kept (and reused by a later run with the same entries
    /// and sizes). Without it, a temporary directory removed at the end.
    pub datadir: Option<PathBuf>,
    /// Write phase: batches of new keys inserted at random places, each batch one
    /// `KvBackend::write` (0: no write phase).
    pub write_batches: usize,
    /// Keys per write batch.
    pub write_keys: usize,
    /// How MDBX is opened (read-ahead, page size); the client's defaults unless set.
    pub mdbx: ethrex_storage::mdbx::MdbxOptions,
}

impl DbBenchOptions {
    /// Refuses what cannot be measured, with the reason.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.dbs.is_empty() {
            bail!("no database to measure");
        }
        if self.dbs.contains(&DbKind::Memory) {
            bail!("db-bench measures on-disk backends: mdbx, rocksdb or both");
        }
        if self.entries == 0 {
            bail!("--entries must be at least 1");
        }
        if self.key_size < data::MIN_KEY_SIZE || self.key_size > 511 {
            bail!(
                "--key-size must be {}..=511 bytes (the entry's index takes the first 8; MDBX keys stop at 511 here)",
                data::MIN_KEY_SIZE
            );
        }
        if self.value_size == 0 || self.value_size > 1 << 20 {
            bail!("--value-size must be 1..=1048576 bytes");
        }
        if self.threads.is_empty() || self.threads.iter().any(|&t| t == 0 || t > 1024) {
            bail!("--threads must list counts of 1..=1024");
        }
        if self.write_batches > 0 && !(1..=1_000_000).contains(&self.write_keys) {
            bail!("--write-keys must be 1..=1000000");
        }
        if !(self.seconds > 0.0 && self.seconds <= 3600.0) {
            bail!("--seconds must be in (0, 3600]");
        }
        Ok(())
    }
}

/// One database's load phase.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LoadReport {
    /// Entries in the database.
    pub entries: u64,
    /// Seconds the load took (0 when reused).
    pub seconds: f64,
    /// Bytes its files occupy on disk.
    pub bytes_on_disk: u64,
    /// Loaded by an earlier run with the same parameters.
    pub reused: bool,
}

/// One measured point: a database at a thread count.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Point {
    /// `mdbx` or `rocksdb`.
    pub db: String,
    /// Reader threads.
    pub threads: usize,
    /// Reads completed.
    pub reads: u64,
    /// Reads per second, all threads together.
    pub iops: f64,
    /// Mean read latency.
    pub mean_us: f64,
    /// Median read latency.
    pub p50_us: f64,
    /// 99th-percentile read latency.
    pub p99_us: f64,
    /// Process CPU time over wall time and cores, in percent.
    pub cpu_pct: f64,
    /// Measured after a page-cache drop.
    pub cold: bool,
}

/// One database's write phase: the time of each batch's `KvBackend::write`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WriteReport {
    /// Batches written.
    pub batches: usize,
    /// New keys per batch.
    pub keys_per_batch: usize,
    /// Mean time per batch.
    pub mean_ms: f64,
    /// Median time per batch.
    pub p50_ms: f64,
    /// 99th-percentile time per batch.
    pub p99_ms: f64,
    /// Mean time per key.
    pub us_per_key: f64,
}

/// A whole run: the `--json` output.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    /// Each database's load, by name.
    pub load: BTreeMap<String, LoadReport>,
    /// Every point, in the order measured.
    pub points: Vec<Point>,
    /// Each database's write phase, by name (empty without one).
    pub writes: BTreeMap<String, WriteReport>,
    /// The parameters, for the record.
    pub params: Params,
}

/// The run's parameters as reported.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Params {
    /// Entries per database.
    pub entries: u64,
    /// Bytes per key.
    pub key_size: usize,
    /// Bytes per value.
    pub value_size: usize,
    /// Seconds per point.
    pub seconds: f64,
    /// Page cache dropped before each point.
    pub cold: bool,
    /// With `cold`: the index left cold (not read back after the drop).
    pub cold_index: bool,
    /// MDBX read-ahead on.
    pub mdbx_readahead: bool,
    /// MDBX page size asked for (`None`: MDBX's default).
    pub mdbx_page_size: Option<usize>,
    /// Cores of this machine.
    pub cores: usize,
}

/// Loads each database (or reuses a loaded one), then measures every thread count on
/// each database in turn, so both see the same machine conditions at about the same time.
pub fn run(o: &DbBenchOptions) -> anyhow::Result<Report> {
    o.validate()?;
    let (root, _tmp) = match &o.datadir {
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            (dir.clone(), None)
        }
        None => {
            let tmp = tempfile::Builder::new().prefix("ethrex-db-bench-").tempdir()?;
            (tmp.path().to_path_buf(), Some(tmp))
        }
    };
    let mut load = BTreeMap::new();
    let mut dbs = Vec::new();
    for &kind in &o.dbs {
        eprintln!("{}: loading {} entries into {}", kind.name(), o.entries, root.display());
        let (db, report) = run::open_loaded(kind, &root, o)?;
        eprintln!(
            "{}: {} in {:.1} s, {:.2} GB on disk",
            kind.name(),
            if report.reused { "reused" } else { "loaded" },
            report.seconds,
            report.bytes_on_disk as f64 / 1e9
        );
        load.insert(kind.name().to_string(), report);
        dbs.push(db);
    }
    let mut points = Vec::new();
    for (n, &threads) in o.threads.iter().enumerate() {
        for db in &dbs {
            let point = run::read_point(db, threads, o, 0x5eed + n as u64)
                .with_context(|| format!("{} at {threads} threads", db.kind.name()))?;
            eprintln!(
                "{:>7} {:>3} threads: {:>10.0} IOPS, mean {:>7.1} µs, p99 {:>8.1} µs, CPU {:>5.1}%",
                point.db, threads, point.iops, point.mean_us, point.p99_us, point.cpu_pct
            );
            points.push(point);
        }
    }
    let mut writes = BTreeMap::new();
    if o.write_batches > 0 {
        for db in &dbs {
            let w = run::write_phase(db, o, 0x3717e)
                .with_context(|| format!("{} write phase", db.kind.name()))?;
            eprintln!(
                "{:>7} writes: {} batches of {} new keys, mean {:.1} ms, p99 {:.1} ms ({:.2} µs per key)",
                db.kind.name(),
                w.batches,
                w.keys_per_batch,
                w.mean_ms,
                w.p99_ms,
                w.us_per_key
            );
            writes.insert(db.kind.name().to_string(), w);
        }
    }
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let params = Params {
        entries: o.entries,
        key_size: o.key_size,
        value_size: o.value_size,
        seconds: o.seconds,
        cold: o.cold,
        cold_index: o.cold && o.cold_index,
        mdbx_readahead: o.mdbx.readahead,
        mdbx_page_size: o.mdbx.page_size,
        cores,
    };
    Ok(Report { load, points, writes, params })
}
