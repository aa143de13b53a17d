//! The sweep: the chain imported once per (mode, thread count, batch size) point, each
//! on its own copy of the genesis database, the points taking turns batch by batch so
//! that every point meets the machine in the same state.
//!
//! Per point: Mgas/s over the summed import time, the whole-run wall clock, and the
//! critical path: the sum over blocks (or batches) of the slowest transaction's
//! execution, reads included. Gas over that sum is the Amdahl bound: the throughput if
//! everything but the longest transactions took no time.

use crate::bench::{pool, BenchOptions, Databases, LoadedFixture};
use anyhow::{bail, Context};
use ethrex_bench_storage::BenchStore;
use ethrex_blockchain::{Blockchain, Cores, ExecutionPath, ImportOptions, Prefetch, Threshold};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How the BAL's state is read: the I/O designs of BAL-driven execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Design {
    /// Every transaction reads what it needs when it needs it, the transactions in
    /// parallel: the study's parallel I/O.
    ParallelIo,
    /// The I/O pool reads everything the BAL names first, all at once; then the
    /// transactions run on a warm cache: the study's batched I/O.
    BatchedIo,
    /// Both at once: the transactions start at once and read on demand while the I/O
    /// pool reads everything the BAL names ahead of them.
    OverlappedIo,
}

impl Design {
    /// Every design, as `--bal-design` names them.
    pub const ALL: [Design; 3] = [Design::ParallelIo, Design::BatchedIo, Design::OverlappedIo];

    /// The name in `--bal-design` and reports.
    pub fn name(self) -> &'static str {
        match self {
            Design::ParallelIo => "parallel-io",
            Design::BatchedIo => "batched-io",
            Design::OverlappedIo => "overlapped-io",
        }
    }

    fn prefetch(self) -> Prefetch {
        match self {
            Design::ParallelIo => Prefetch::Off,
            Design::BatchedIo => Prefetch::First,
            Design::OverlappedIo => Prefetch::Beside,
        }
    }
}

impl std::str::FromStr for Design {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Design::ALL.into_iter().find(|d| d.name() == s).ok_or_else(|| {
            let known: Vec<_> = Design::ALL.iter().map(|d| d.name()).collect();
            format!("unknown BAL design '{s}' (expected one of {})", known.join(", "))
        })
    }
}

/// One row kind of the sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepMode {
    /// Transactions one after another in block order. At 1 thread the whole import runs
    /// on one thread; with more, recovery and merkleization use the pool (as
    /// `sequential-pooled`).
    Sequential,
    /// The client's parallel import with the bench's tuning.
    Parallel,
    /// The parallel import reading state as the design says.
    Design(Design),
}

impl SweepMode {
    /// The name in reports: `sequential`, `parallel` or `design:<name>`.
    pub fn name(self) -> String {
        match self {
            SweepMode::Sequential => "sequential".into(),
            SweepMode::Parallel => "parallel".into(),
            SweepMode::Design(d) => format!("design:{}", d.name()),
        }
    }

    fn import_options(self, tuning: ImportOptions, threads: usize) -> ImportOptions {
        match self {
            SweepMode::Sequential if threads == 1 => ImportOptions { cores: Cores::One, ..tuning },
            SweepMode::Sequential => ImportOptions {
                cores: Cores::Pool,
                threshold: Threshold::Never,
                prefetch: Prefetch::Off,
                ..tuning
            },
            SweepMode::Parallel => ImportOptions { cores: Cores::Pool, ..tuning },
            // A design is measured on every block, whatever the cost model would pick.
            SweepMode::Design(d) => ImportOptions {
                cores: Cores::Pool,
                threshold: Threshold::MinTxs(0),
                prefetch: d.prefetch(),
                ..tuning
            },
        }
    }
}

/// Parses `--sweep-modes`: `sequential` and/or `parallel`, comma-separated.
pub fn sweep_modes_for(arg: &str) -> anyhow::Result<Vec<SweepMode>> {
    arg.split(',')
        .filter(|s| !s.is_empty())
        .map(|s| match s {
            "sequential" => Ok(SweepMode::Sequential),
            "parallel" => Ok(SweepMode::Parallel),
            other => bail!("unknown sweep mode '{other}' (expected sequential or parallel)"),
        })
        .collect()
}

/// What the sweep runs: every mode at every thread count and batch size.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    /// The row kinds.
    pub modes: Vec<SweepMode>,
    /// Worker thread counts.
    pub threads: Vec<usize>,
    /// Blocks per mega block (1: block by block).
    pub batches: Vec<usize>,
}

/// One point's results.
#[derive(Debug, Clone, Serialize)]
pub struct SweepPoint {
    /// `sequential`, `parallel` or `design:<name>`.
    pub mode: String,
    /// Worker threads.
    pub threads: usize,
    /// Blocks per mega block.
    pub batch: usize,
    /// Gas over `total_ms`.
    pub mgas_per_s: f64,
    /// The imports' summed time (cold-cache preparation and pauses excluded).
    pub total_ms: f64,
    /// `total_ms` plus the waits for the database writes, the final flush included.
    pub wall_ms: f64,
    /// Sum over blocks (mega blocks) of the slowest transaction's execution.
    pub longest_tx_ms: f64,
    /// Gas over `longest_tx_ms`: the throughput bound the longest transactions set.
    pub amdahl_mgas_per_s: f64,
    /// The head's state root after the last block.
    pub final_state_root: String,
    /// Blocks imported.
    pub blocks: usize,
    /// Gas imported.
    pub gas: u64,
    /// Blocks that ran on a parallel path (alone or in a mega block).
    pub parallel_blocks: usize,
    /// Reads that reached the database.
    pub backend_reads: u64,
}

struct Point {
    mode: SweepMode,
    threads: usize,
    batch: usize,
    chain: Blockchain,
    /// The store under `chain` and its backend, for the cold protocol and the reads.
    db: BenchStore,
    next: usize,
    total: Duration,
    wall: Duration,
    longest: Duration,
    gas: u64,
    blocks: usize,
    parallel_blocks: usize,
}

/// Runs the sweep; fails if any point ends in another state root than the others.
pub(crate) fn run_sweep(
    options: &BenchOptions,
    fixture: &LoadedFixture,
    dbs: &mut Databases,
    sweep: &SweepOptions,
) -> anyhow::Result<Vec<SweepPoint>> {
    let io = Arc::new(pool(options.io.io_threads, "sweep-io")?);
    let mut pools: BTreeMap<usize, rayon::ThreadPool> = BTreeMap::new();
    let mut points = Vec::new();
    for &mode in &sweep.modes {
        for &threads in &sweep.threads {
            if let std::collections::btree_map::Entry::Vacant(e) = pools.entry(threads) {
                e.insert(pool(threads, "sweep")?);
            }
            for &batch in &sweep.batches {
                let name = format!("{}-t{threads}-b{batch}", mode.name().replace(':', "-"));
                let db = dbs.copy(&name)?;
                let chain = Blockchain::new(db.store.clone(), fixture.config.clone())
                    .with_options(mode.import_options(options.import, threads))
                    .with_io_pool(io.clone());
                points.push(Point {
                    mode,
                    threads,
                    batch,
                    chain,
                    db,
                    next: 0,
                    total: Duration::ZERO,
                    wall: Duration::ZERO,
                    longest: Duration::ZERO,
                    gas: 0,
                    blocks: 0,
                    parallel_blocks: 0,
                });
            }
        }
    }
    let steps: usize = points.iter().map(|p| fixture.blocks.len().div_ceil(p.batch)).sum();
    let bar = ProgressBar::new(steps as u64);
    bar.set_style(
        ProgressStyle::with_template("sweep [{bar:40}] {pos}/{len} batches, every point ({eta})")
            .unwrap(),
    );
    let reads_before: Vec<u64> = points.iter().map(|p| p.db.backend_reads().unwrap_or(0)).collect();
    while points.iter().any(|p| p.next < fixture.blocks.len()) {
        for p in points.iter_mut().filter(|p| p.next < fixture.blocks.len()) {
            let end = (p.next + p.batch).min(fixture.blocks.len());
            let blocks = &fixture.blocks[p.next..end];
            std::thread::sleep(options.sleep);
            p.wall += dbs.prepare(&p.db)?;
            let pool = &pools[&p.threads];
            let t = Instant::now();
            let outcomes = pool.install(|| p.chain.import_batch(blocks)).with_context(|| {
                format!("sweep {} at {} threads, batch {}", p.mode.name(), p.threads, p.batch)
            })?;
            let took = t.elapsed();
            p.total += took;
            // The batch's database write lands before the next point runs, so no point's
            // timing absorbs another's background write; a syncing node waits for it too.
            let t = Instant::now();
            p.chain.store.flush()?;
            p.wall += took + t.elapsed();
            for o in &outcomes {
                p.longest += o.timings.longest_tx;
                p.gas += o.gas_used;
                p.blocks += 1;
                if matches!(o.path, ExecutionPath::Parallel | ExecutionPath::ParallelBatch) {
                    p.parallel_blocks += 1;
                }
            }
            p.next = end;
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    let mut results = Vec::with_capacity(points.len());
    for (p, before) in points.into_iter().zip(reads_before) {
        let t = Instant::now();
        p.chain.store.flush()?;
        let wall = p.wall + t.elapsed();
        let head = p.chain.store.head_header()?.context("no head after the sweep")?;
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let per_s = |d: Duration| {
            if d.is_zero() {
                0.0
            } else {
                p.gas as f64 / d.as_secs_f64() / 1e6
            }
        };
        results.push(SweepPoint {
            mode: p.mode.name(),
            threads: p.threads,
            batch: p.batch,
            mgas_per_s: per_s(p.total),
            total_ms: ms(p.total),
            wall_ms: ms(wall),
            longest_tx_ms: ms(p.longest),
            amdahl_mgas_per_s: per_s(p.longest),
            final_state_root: format!("{:#x}", head.state_root),
            blocks: p.blocks,
            gas: p.gas,
            parallel_blocks: p.parallel_blocks,
            backend_reads: p.db.backend_reads().unwrap_or(0) - before,
        });
    }
    if let Some(first) = results.first() {
        if let Some(other) = results.iter().find(|r| r.final_state_root != first.final_state_root) {
            bail!(
                "sweep points disagree on the final state root: {} at {} threads batch {} has {}, {} at {} threads batch {} has {}",
                first.mode, first.threads, first.batch, first.final_state_root,
                other.mode, other.threads, other.batch, other.final_state_root
            );
        }
    }
    Ok(results)
}

/// The sweep as a table: one row per point, with the speedup over the first point.
pub fn sweep_table(points: &[SweepPoint]) -> String {
    let base = points.first().map(|p| p.mgas_per_s).unwrap_or(0.0);
    let mut out = format!(
        "{:<20} {:>7} {:>5} {:>9} {:>8} {:>9} {:>9} {:>11} {:>7} {:>8} {:>10}\n",
        "sweep",
        "threads",
        "batch",
        "Mgas/s",
        "vs first",
        "total s",
        "wall s",
        "longest tx s",
        "crit %",
        "Amdahl",
        "db reads"
    );
    for p in points {
        let vs = if base > 0.0 { format!("{:.2}x", p.mgas_per_s / base) } else { "-".into() };
        let crit = if p.total_ms > 0.0 { 100.0 * p.longest_tx_ms / p.total_ms } else { 0.0 };
        out.push_str(&format!(
            "{:<20} {:>7} {:>5} {:>9.1} {:>8} {:>9.2} {:>9.2} {:>11.2} {:>7.1} {:>8.0} {:>10}\n",
            p.mode,
            p.threads,
            p.batch,
            p.mgas_per_s,
            vs,
            p.total_ms / 1e3,
            p.wall_ms / 1e3,
            p.longest_tx_ms / 1e3,
            crit,
            p.amdahl_mgas_per_s,
            p.backend_reads
        ));
    }
    out.push_str("(crit %: the longest transactions' share of the import time; Amdahl: gas over their sum, Mgas/s)\n");
    out
}
