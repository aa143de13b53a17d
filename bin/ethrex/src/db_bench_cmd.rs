//! `ethrex db-bench`: random point reads on MDBX and RocksDB, the storage study's table.

use anyhow::Context;
use ethrex_db_bench::{DbBenchOptions, Report};
use ethrex_storage::DbKind;
use std::path::PathBuf;

/// Which backends to measure.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum Dbs {
    Mdbx,
    Rocksdb,
    Both,
}

/// Load a database with sorted entries, then read random entries from each thread count.
#[derive(clap::Args, Debug)]
pub(crate) struct DbBenchArgs {
    /// The backends to measure (both: side by side, each thread count on one then the other).
    #[arg(long, value_enum, default_value = "both")]
    db: Dbs,
    /// Entries per database. The default (20 million: about 1 GB of keys and values, 1.1 GB
    /// on RocksDB, 1.5 GB on MDBX) loads in about a minute here and is large enough that a
    /// cold point of a few seconds reads mostly from the disk; the study used 1.6 billion
    /// (85-125 GB), which this machine's 60 GB of free disk cannot hold for both.
    #[arg(long, default_value_t = 20_000_000)]
    entries: u64,
    /// Bytes per key (at least 8).
    #[arg(long, default_value_t = 16)]
    key_size: usize,
    /// Bytes per value.
    #[arg(long, default_value_t = 32)]
    value_size: usize,
    /// Reader thread counts, one point each.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16,32")]
    threads: Vec<usize>,
    /// Seconds of reads per point.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Drop the page cache and the backend's caches before each point, then read the
    /// database's index back (MDBX's branch pages; RocksDB keeps its index and filter
    /// blocks in its own memory through a drop): data cold, index warm on both.
    #[arg(long)]
    cold: bool,
    /// With --cold, leave MDBX's branch pages cold too (colder for MDBX than for RocksDB,
    /// whose index stays in its memory).
    #[arg(long, requires = "cold")]
    cold_index: bool,
    /// Keep the databases here and reuse them in later runs with the same entries and
    /// sizes (default: a temporary directory).
    #[arg(long)]
    datadir: Option<PathBuf>,
    /// After the reads, insert this many batches of new keys at random places, each batch
    /// one write, and report the time per batch (the keys are deleted again afterwards).
    #[arg(long, default_value_t = 0)]
    write_batches: usize,
    /// New keys per write batch (a block's trie nodes and state: a few thousand).
    #[arg(long, default_value_t = 5000)]
    write_keys: usize,
    /// Let the OS read ahead around MDBX's page faults (the client opens MDBX without:
    /// see `ethrex_storage::mdbx::MdbxOptions::readahead`).
    #[arg(long)]
    mdbx_readahead: bool,
    /// MDBX page size in bytes (a power of two, 256..=65536) for a newly loaded database
    /// (default: MDBX's, the OS page size).
    #[arg(long)]
    mdbx_page_size: Option<usize>,
    /// Write the report as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write an SVG plot (IOPS and latency against threads) to this file.
    #[arg(long)]
    plot: Option<PathBuf>,
}

pub(crate) fn run(a: DbBenchArgs) -> anyhow::Result<()> {
    let dbs = match a.db {
        Dbs::Mdbx => vec![DbKind::Mdbx],
        Dbs::Rocksdb => vec![DbKind::Rocksdb],
        Dbs::Both => vec![DbKind::Mdbx, DbKind::Rocksdb],
    };
    let options = DbBenchOptions {
        dbs,
        entries: a.entries,
        key_size: a.key_size,
        value_size: a.value_size,
        threads: a.threads,
        seconds: a.seconds,
        cold: a.cold,
        cold_index: a.cold_index,
        datadir: a.datadir,
        write_batches: a.write_batches,
        write_keys: a.write_keys,
        mdbx: {
            let mut mdbx = ethrex_storage::mdbx::MdbxOptions::from_env()?;
            mdbx.readahead |= a.mdbx_readahead;
            mdbx.page_size = a.mdbx_page_size.or(mdbx.page_size);
            mdbx
        },
    };
    let report: Report = ethrex_db_bench::run(&options)?;
    print!("{}", ethrex_db_bench::text(&report));
    if let Some(path) = &a.json {
        std::fs::write(path, serde_json::to_vec_pretty(&report)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &a.plot {
        std::fs::write(path, ethrex_db_bench::svg(&report))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
