//! `ethrex import-bench`: imports a chain file through the production import pipeline,
//! once per mode, each from a fresh database, and reports per-block stage times.

use crate::report::{BlockRow, ModeReport};
use anyhow::{bail, Context};
use ethrex_blockchain::chain_file::{read_chain, read_genesis};
use ethrex_blockchain::genesis::{alloc_state_root, genesis_header, geth_alloc, init_genesis};
use ethrex_blockchain::{Blockchain, ImportOptions};
use ethrex_common::{BlockWithBal, ChainConfig};
use ethrex_storage::{DbKind, Store};
use ethrex_vm::warmer::warm_from_bal;
use ethrex_vm::{execute_block_parallel, CachingDb, ParallelOutcome, StoreDb};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How the bench imports the chain; each mode runs on its own fresh database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every block through the import pipeline with parallel import off.
    Sequential,
    /// Every block through the import pipeline with parallel import on (and the given
    /// tuning).
    Parallel,
    /// Parallel execution only, from a fully cached state: no validation against the
    /// header, no merkleization, no storage. The limit the pipeline can approach.
    Ceiling,
}

impl Mode {
    /// The mode's name in `--mode`, reports and directory names.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::Sequential => "sequential",
            Mode::Parallel => "parallel",
            Mode::Ceiling => "ceiling",
        }
    }
}

/// Parses the `--mode` argument: `sequential`, `parallel`, `both` (those two) or `all`
/// (both plus the ceiling); any other value is an error.
pub fn modes_for(arg: &str) -> anyhow::Result<Vec<Mode>> {
    Ok(match arg {
        "sequential" => vec![Mode::Sequential],
        "parallel" => vec![Mode::Parallel],
        "both" => vec![Mode::Sequential, Mode::Parallel],
        "all" => vec![Mode::Sequential, Mode::Parallel, Mode::Ceiling],
        other => bail!("unknown mode '{other}' (expected sequential, parallel, both or all)"),
    })
}

/// What `ethrex import-bench` runs.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// The chain file: concatenated RLP blocks.
    pub fixture: PathBuf,
    /// Concatenated RLP BALs; `None`: `<stem>.bal.rlp` beside the fixture, if it exists.
    pub bal: Option<PathBuf>,
    /// geth-style genesis; `None`: `<stem>.genesis.json` beside the fixture.
    pub genesis: Option<PathBuf>,
    /// The modes to run, each block in every mode before the next block.
    pub modes: Vec<Mode>,
    /// The database the sequential and parallel modes write to (the ceiling uses memory).
    pub db: DbKind,
    /// Keep each mode's database in `<datadir>/<mode>` (cleared first); `None`: a
    /// temporary directory removed afterwards.
    pub datadir: Option<PathBuf>,
    /// Pause before each block in each mode, outside the timed region.
    pub sleep: Duration,
    /// How blocks are imported; `parallel` is set per mode.
    pub import: ImportOptions,
}

impl BenchOptions {
    /// Options for `fixture` with the defaults: sequential and parallel modes on RocksDB
    /// in a temporary directory, 100 ms pause, default import options.
    pub fn new(fixture: PathBuf) -> Self {
        Self {
            fixture,
            bal: None,
            genesis: None,
            modes: vec![Mode::Sequential, Mode::Parallel],
            db: DbKind::Rocksdb,
            datadir: None,
            sleep: Duration::from_millis(100),
            import: ImportOptions::default(),
        }
    }
}

/// `stress.rlp` -> `stress.bal.rlp` / `stress.genesis.json` beside it.
fn sibling(fixture: &Path, suffix: &str) -> PathBuf {
    let name = fixture.file_name().and_then(|n| n.to_str()).unwrap_or("chain.rlp");
    let stem = name.strip_suffix(".rlp").unwrap_or(name);
    fixture.with_file_name(format!("{stem}{suffix}"))
}

/// A chain read into memory, ready to be imported by every mode.
pub struct LoadedFixture {
    pub(crate) genesis: alloy_genesis::Genesis,
    pub(crate) config: ChainConfig,
    /// The blocks after genesis, in order, each with its BAL when a BAL file was found.
    pub blocks: Vec<BlockWithBal>,
}

/// Reads the genesis, the chain file and (if given or present beside it) the BAL file.
/// Fails when a file cannot be read or decoded, or the chain holds no blocks.
pub fn load_fixture(options: &BenchOptions) -> anyhow::Result<LoadedFixture> {
    let genesis_path =
        options.genesis.clone().unwrap_or_else(|| sibling(&options.fixture, ".genesis.json"));
    let genesis = read_genesis(&genesis_path)?;
    let bal_path = options
        .bal
        .clone()
        .or_else(|| Some(sibling(&options.fixture, ".bal.rlp")).filter(|p| p.exists()));
    let blocks = read_chain(&options.fixture, bal_path.as_deref())?;
    if blocks.is_empty() {
        bail!("{} holds no blocks", options.fixture.display());
    }
    Ok(LoadedFixture { config: ChainConfig::new(genesis.config.clone()), genesis, blocks })
}

fn fresh_store(
    options: &BenchOptions,
    mode: Mode,
    fixture: &LoadedFixture,
) -> anyhow::Result<(Store, Option<tempfile::TempDir>)> {
    let (path, tmp) = match &options.datadir {
        Some(dir) => {
            let path = dir.join(mode.name());
            if path.exists() {
                std::fs::remove_dir_all(&path)
                    .with_context(|| format!("clearing {}", path.display()))?;
            }
            (path, None)
        }
        None => {
            let tmp = tempfile::Builder::new().prefix("ethrex-bench-").tempdir()?;
            (tmp.path().to_path_buf(), Some(tmp))
        }
    };
    let kind = if mode == Mode::Ceiling { DbKind::Memory } else { options.db };
    let store = Store::open(kind, Some(&path))?;
    let alloc = geth_alloc(&fixture.genesis);
    let header = genesis_header(&fixture.genesis, alloc_state_root(&alloc)?);
    init_genesis(&store, header, &alloc)?;
    // The genesis batch is written before timing starts and is not a block's write.
    store.flush()?;
    store.take_write_times();
    Ok((store, tmp))
}

/// Runs every mode over the chain, block by block in turn: block 1 in each mode, then
/// block 2 in each mode, and so on, each mode on its own fresh database. Interleaving puts
/// every mode under the same machine conditions at the same moment, so the ratios hold
/// even when the machine's speed drifts during the run.
pub fn run_modes(
    options: &BenchOptions,
    fixture: &LoadedFixture,
) -> anyhow::Result<Vec<ModeReport>> {
    let mut runs = Vec::with_capacity(options.modes.len());
    for &mode in &options.modes {
        let (store, tmp) = fresh_store(options, mode, fixture)?;
        let import_options = ImportOptions { parallel: mode != Mode::Sequential, ..options.import };
        let chain = Blockchain::new(store, fixture.config.clone()).with_options(import_options);
        runs.push((mode, chain, tmp, Vec::with_capacity(fixture.blocks.len())));
    }
    let bar = ProgressBar::new(fixture.blocks.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("importing [{bar:40}] {pos}/{len} blocks, every mode ({eta})")
            .unwrap(),
    );
    for block in &fixture.blocks {
        for (mode, chain, _, rows) in runs.iter_mut() {
            std::thread::sleep(options.sleep);
            let row = if *mode == Mode::Ceiling {
                ceiling_block(chain, block)?
            } else {
                let outcome = chain
                    .import_block(block.clone())
                    .with_context(|| format!("{} mode: block {}", mode.name(), block.number()))?;
                BlockRow::from_outcome(&outcome)
            };
            rows.push(row);
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let mut reports = Vec::with_capacity(runs.len());
    for (mode, chain, _tmp, mut rows) in runs {
        chain
            .store
            .flush()
            .with_context(|| format!("{} mode: writing the last blocks", mode.name()))?;
        if mode != Mode::Ceiling {
            let writes = chain.store.take_write_times();
            if writes.len() != rows.len() {
                bail!(
                    "{} mode: {} database writes for {} blocks",
                    mode.name(),
                    writes.len(),
                    rows.len()
                );
            }
            for (row, write) in rows.iter_mut().zip(writes) {
                row.stages.persist_ms = write.as_secs_f64() * 1e3;
            }
        }
        reports.push(ModeReport::new(mode.name(), rows));
    }
    Ok(reports)
}

/// Times parallel execution alone on a fully warmed in-memory cache, then imports the
/// block (untimed) to move to the next state.
fn ceiling_block(chain: &Blockchain, block: &BlockWithBal) -> anyhow::Result<BlockRow> {
    let bal = block.bal.as_ref().context("the ceiling mode needs the BAL file")?;
    let header = &block.block.header;
    let parent = chain.store.header(&header.parent_hash)?.context("unknown parent")?;
    let cache =
        CachingDb::new(StoreDb::new(chain.store.clone(), header.parent_hash, parent.number));
    warm_from_bal(&cache, bal)?;
    let t = Instant::now();
    let outcome = execute_block_parallel(&cache, &block.block, &chain.config, bal)?;
    let exec = t.elapsed();
    if let ParallelOutcome::BalMismatch { reason } = outcome {
        bail!("block {}: BAL mismatch in ceiling mode: {reason}", header.number);
    }
    chain.import_block(block.clone())?;
    Ok(BlockRow::ceiling(header.number, block.block.body.transactions.len(), header.gas_used, exec))
}
