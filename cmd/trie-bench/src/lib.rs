//! `ethrex trie-bench`: the binary-trie group-depth study on this client's storage.
//!
//! Every configuration (the MPT, and the EIP-7864 binary trie at each group depth) gets
//! its own database on the chosen backend, prefilled with the same state (see
//! [`workload`]). Then, per workload and run, every configuration runs the same block of
//! transactions (configurations interleaved, so drift on a shared machine hits them
//! alike): reads through the trie, the writes and the re-hash to the new root, the
//! commit of the changed nodes. With `--cold` each run starts on a closed and reopened
//! database whose page cache was dropped (`ethrex_bench_storage::os_cache`). The first run
//! is a warm-up; the report gives medians over the rest, their CV, and Mann-Whitney U
//! p-values of the total times against GD-1 and the neighbouring depth, beside the
//! published figures ([`report::published`]).

pub mod bench;
pub mod report;
pub mod stats;
pub mod store;
pub mod stress;
pub mod workload;

use anyhow::Context;
use bench::{Config, Db, Sample, Scheme};
use ethrex_storage::DbKind;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;
use workload::Workload;

/// Default holders (and sequential slots): sized so the full study (9 configurations,
/// 5 workloads, 10 cold runs) ends within 25 minutes on a 2-core machine.
pub const DEFAULT_ENTRIES: u64 = 1_000_000;
/// Default transactions per run.
pub const DEFAULT_TXS: usize = 500;

/// `ethrex trie-bench` options.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Schemes to measure: mpt, binary (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "mpt,binary")]
    pub scheme: Vec<Scheme>,
    /// Group depths of the binary trie, 1..8 (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1,2,3,4,5,6,7,8",
          value_parser = clap::value_parser!(u8).range(1..=8))]
    pub group_depth: Vec<u8>,
    /// Workloads: erc20-balanceof, erc20-approve, erc20-mixed, sload-seq, sstore-seq.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "erc20-balanceof,erc20-approve,erc20-mixed,sload-seq,sstore-seq"
    )]
    pub workload: Vec<Workload>,
    /// Token holders in the prefilled state (each an account and a balance slot), and as
    /// many sequential slots: 3N values.
    #[arg(long, default_value_t = DEFAULT_ENTRIES)]
    pub entries: u64,
    /// Transactions per run (synthetic workloads: slots per run, 100 per transaction).
    #[arg(long, default_value_t = DEFAULT_TXS)]
    pub txs: usize,
    /// Runs per configuration and workload; the first is a warm-up, not measured.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(2..))]
    pub runs: u64,
    /// Drop the page cache (and reopen the database) before every run.
    #[arg(long)]
    pub cold: bool,
    /// Backend: mdbx, rocksdb or memory.
    #[arg(long, default_value = "mdbx")]
    pub db: DbKind,
    /// Where the databases go (default: a temporary directory, removed at the end).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Write the rows as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write trie-study.md, trie-study.json and the SVG plots into this directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Seed of the transactions' keys.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// The configurations `args` asks for: MPT first, then the depths in order.
pub fn configs(args: &Args) -> anyhow::Result<Vec<Config>> {
    let mut configs = Vec::new();
    if args.scheme.contains(&Scheme::Mpt) {
        configs.push(Config { scheme: Scheme::Mpt, group_depth: None });
    }
    if args.scheme.contains(&Scheme::Binary) {
        let mut depths = args.group_depth.clone();
        depths.sort_unstable();
        depths.dedup();
        anyhow::ensure!(!depths.is_empty(), "--group-depth names no depth");
        configs.extend(
            depths.into_iter().map(|g| Config { scheme: Scheme::Binary, group_depth: Some(g) }),
        );
    }
    anyhow::ensure!(!configs.is_empty(), "--scheme names no scheme");
    Ok(configs)
}

/// Runs the study as `args` says, prints its tables and writes the files asked for.
pub fn run(args: Args) -> anyhow::Result<report::Report> {
    let started = Instant::now();
    let configs = configs(&args)?;
    let mut seen = std::collections::HashSet::new();
    let workloads: Vec<Workload> =
        args.workload.iter().copied().filter(|w| seen.insert(*w)).collect();
    anyhow::ensure!(!workloads.is_empty(), "--workload names no workload");
    anyhow::ensure!(args.entries >= 2, "--entries must be at least 2");
    anyhow::ensure!(args.txs >= 1, "--txs must be at least 1");
    let temp;
    let root = match &args.dir {
        Some(dir) => dir.clone(),
        None => {
            temp = tempfile::Builder::new().prefix("trie-bench-").tempdir()?;
            temp.path().to_path_buf()
        }
    };
    let mut dbs = Vec::new();
    for config in &configs {
        let t = Instant::now();
        let dir = root.join(config.label().to_lowercase());
        if dir.exists() {
            std::fs::remove_dir_all(&dir).with_context(|| format!("clearing {}", dir.display()))?;
        }
        let db = Db::create(*config, args.db, dir, args.entries)
            .with_context(|| format!("prefilling {}", config.label()))?;
        eprintln!(
            "prefilled {} ({} holders): {:.1} s, {:.0} MB",
            config.label(),
            args.entries,
            t.elapsed().as_secs_f64(),
            db.size_bytes as f64 / 1e6
        );
        dbs.push(db);
    }
    let prefill_s = started.elapsed().as_secs_f64();
    let mut samples: BTreeMap<(Workload, Config), Vec<Sample>> = BTreeMap::new();
    let mut cache_drop = None;
    for &workload in &workloads {
        let t = Instant::now();
        for run in 1..=args.runs as usize {
            let txs = workload::transactions(workload, run, args.txs, args.entries, args.seed);
            for db in dbs.iter_mut() {
                let (sample, dropped) = db.run(&txs, args.cold).with_context(|| {
                    format!("{} run {run} on {}", workload.name(), db.config.label())
                })?;
                cache_drop = cache_drop.or(dropped);
                samples.entry((workload, db.config)).or_default().push(sample);
            }
        }
        eprintln!(
            "{}: {} runs x {} configurations, {:.1} s",
            workload.name(),
            args.runs,
            dbs.len(),
            t.elapsed().as_secs_f64()
        );
    }
    let report = report::Report::new(
        &args,
        &configs,
        &workloads,
        &samples,
        report::Meta {
            cache_drop: cache_drop.unwrap_or("none"),
            prefill_s,
            total_s: started.elapsed().as_secs_f64(),
            db_bytes: dbs.iter().map(|db| (db.config.label(), db.size_bytes)).collect(),
        },
    );
    println!("{}", report.markdown());
    if let Some(path) = &args.json {
        std::fs::write(path, report.json()?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(dir) = &args.out {
        report.write_dir(dir)?;
    }
    Ok(report)
}
