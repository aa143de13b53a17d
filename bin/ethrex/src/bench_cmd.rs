//! `ethrex import-bench`.

use anyhow::Context;
use clap::Args;
use ethrex_import_bench::bench::{load_fixture, modes_for, run_modes, BenchOptions};
use ethrex_import_bench::plot::svg;
use ethrex_import_bench::report::table;
use ethrex_storage::DbKind;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args)]
pub(crate) struct BenchArgs {
    /// Chain file: RLP blocks, concatenated.
    #[arg(long)]
    fixture: PathBuf,
    /// Concatenated RLP BALs (default: <fixture stem>.bal.rlp beside the fixture, if present).
    #[arg(long)]
    bal: Option<PathBuf>,
    /// geth-style genesis (default: <fixture stem>.genesis.json beside the fixture).
    #[arg(long)]
    genesis: Option<PathBuf>,
    /// sequential, parallel, both, or all (both + the ceiling).
    #[arg(long, default_value = "all")]
    mode: String,
    /// Worker threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// rocksdb or mdbx. RocksDB is the default: its log-structured writes suit the
    /// hash-keyed trie nodes a block writes (see the README's benchmark notes).
    #[arg(long, default_value = "rocksdb")]
    db: String,
    /// Keep each mode's database under this directory (default: a temporary directory).
    #[arg(long)]
    datadir: Option<PathBuf>,
    /// Pause between blocks, outside the timed region.
    #[arg(long, default_value_t = 100)]
    sleep_ms: u64,
    #[command(flatten)]
    tuning: crate::node_cmd::ParallelTuning,
    /// Write the report as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Draw per-block stage times and the Ggas/s distribution (SVG).
    #[arg(long)]
    plot: Option<PathBuf>,
}

pub(crate) fn run_bench(a: BenchArgs) -> anyhow::Result<ExitCode> {
    let db: DbKind = a.db.parse().map_err(anyhow::Error::msg)?;
    anyhow::ensure!(
        db != DbKind::Memory,
        "--db must be mdbx or rocksdb (the bench measures a real database)"
    );
    let threads = a
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()
        .context("configuring the thread pool")?;
    let mut options = BenchOptions::new(a.fixture.clone());
    options.bal = a.bal;
    options.genesis = a.genesis;
    options.modes = modes_for(&a.mode)?;
    options.db = db;
    options.datadir = a.datadir;
    options.sleep = Duration::from_millis(a.sleep_ms);
    options.import = a.tuning.options(true);

    let fixture = load_fixture(&options)?;
    let gas: u64 = fixture.blocks.iter().map(|b| b.block.header.gas_used).sum();
    let txs: usize = fixture.blocks.iter().map(|b| b.block.body.transactions.len()).sum();
    eprintln!(
        "{}: {} blocks, {} transactions, {:.1} Mgas; {} threads, {}",
        a.fixture.display(),
        fixture.blocks.len(),
        txs,
        gas as f64 / 1e6,
        threads,
        a.db
    );
    let reports = run_modes(&options, &fixture)?;
    print!("{}", table(&reports));
    if let Some(path) = &a.json {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let modes: serde_json::Map<String, serde_json::Value> = reports
            .iter()
            .map(|r| (r.name.to_string(), serde_json::to_value(r).unwrap_or_default()))
            .collect();
        let json = serde_json::json!({
            "fixture": { "path": a.fixture.display().to_string(), "blocks": fixture.blocks.len(), "transactions": txs, "gas": gas, "db": a.db },
            "machine": { "cores": cores, "threads": threads },
            "modes": modes,
        });
        std::fs::write(path, serde_json::to_string_pretty(&json)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &a.plot {
        std::fs::write(path, svg(&reports))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}
