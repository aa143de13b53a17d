//! `ethrex import-bench`: imports a chain file through the production import pipeline,
//! once per mode, each from a fresh database, and reports per-block stage times.

use ethrex_blockchain::chain_file::{read_chain, read_genesis};
use crate::report::{BlockRow, ModeReport};
use anyhow::{bail, Context};
use ethrex_blockchain::genesis::{alloc_state_root, genesis_header, geth_alloc, init_genesis};
use ethrex_blockchain::{Blockchain, ImportOptions, BAL_PARALLEL_TX_THRESHOLD};
use ethrex_common::{BlockWithBal, ChainConfig};
use ethrex_storage::{DbKind, Store};
use ethrex_vm::warmer::warm_from_bal;
use ethrex_vm::{execute_block_parallel, CachingDb, ParallelOutcome, StoreDb};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Sequential,
    Parallel,
    /// Parallel execution only, from a fully cached state: no validation against the
    /// header, no merkleization, no storage. The limit the pipeline can approach.
    Ceiling,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Sequential => "sequential",
            Mode::Parallel => "parallel",
            Mode::Ceiling => "ceiling",
        }
    }
}

/// The `--mode` argument.
pub fn modes_for(arg: &str) -> anyhow::Result<Vec<Mode>> {
    Ok(match arg {
        "sequential" => vec![Mode::Sequential],
        "parallel" => vec![Mode::Parallel],
        "both" => vec![Mode::Sequential, Mode::Parallel],
        "all" => vec![Mode::Sequential, Mode::Parallel, Mode::Ceiling],
        other => bail!("unknown mode '{other}' (expected sequential, parallel, both or all)"),
    })
}

#[derive(Debug, Clone)]
pub struct BenchOptions {
    pub fixture: PathBuf,
    pub bal: Option<PathBuf>,
    pub genesis: Option<PathBuf>,
    pub modes: Vec<Mode>,
    pub db: DbKind,
    pub datadir: Option<PathBuf>,
    pub sleep: Duration,
    pub parallel_threshold: usize,
    pub warmer: bool,
    pub parallel_trie: bool,
}

impl BenchOptions {
    pub fn new(fixture: PathBuf) -> Self {
        Self {
            fixture,
            bal: None,
            genesis: None,
            modes: vec![Mode::Sequential, Mode::Parallel],
            db: DbKind::Rocksdb,
            datadir: None,
            sleep: Duration::from_millis(100),
            parallel_threshold: BAL_PARALLEL_TX_THRESHOLD,
            warmer: false,
            parallel_trie: true,
        }
    }
}

/// `stress.rlp` -> `stress.bal.rlp` / `stress.genesis.json` beside it.
fn sibling(fixture: &Path, suffix: &str) -> PathBuf {
    let name = fixture.file_name().and_then(|n| n.to_str()).unwrap_or("chain.rlp");
    let stem = name.strip_suffix(".rlp").unwrap_or(name);
    fixture.with_file_name(format!("{stem}{suffix}"))
}

pub struct LoadedFixture {
    pub genesis: alloy_genesis::Genesis,
    pub config: ChainConfig,
    pub blocks: Vec<BlockWithBal>,
}

pub fn load_fixture(options: &BenchOptions) -> anyhow::Result<LoadedFixture> {
    let genesis_path = options.genesis.clone().unwrap_or_else(|| sibling(&options.fixture, ".genesis.json"));
    let genesis = read_genesis(&genesis_path)?;
    let bal_path = options.bal.clone().or_else(|| Some(sibling(&options.fixture, ".bal.rlp")).filter(|p| p.exists()));
    let blocks = read_chain(&options.fixture, bal_path.as_deref())?;
    if blocks.is_empty() {
        bail!("{} holds no blocks", options.fixture.display());
    }
    Ok(LoadedFixture { config: ChainConfig::new(genesis.config.clone()), genesis, blocks })
}

fn fresh_store(options: &BenchOptions, mode: Mode, fixture: &LoadedFixture) -> anyhow::Result<(Store, Option<tempfile::TempDir>)> {
    let (path, tmp) = match &options.datadir {
        Some(dir) => {
            let path = dir.join(mode.name());
            if path.exists() {
                std::fs::remove_dir_all(&path).with_context(|| format!("clearing {}", path.display()))?;
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
pub fn run_modes(options: &BenchOptions, fixture: &LoadedFixture) -> anyhow::Result<Vec<ModeReport>> {
    let mut runs = Vec::with_capacity(options.modes.len());
    for &mode in &options.modes {
        let (store, tmp) = fresh_store(options, mode, fixture)?;
        let import_options = ImportOptions {
            parallel: mode != Mode::Sequential,
            parallel_threshold: options.parallel_threshold,
            warmer: options.warmer,
            parallel_trie: options.parallel_trie,
        };
        let chain = Blockchain::new(store, fixture.config.clone()).with_options(import_options);
        runs.push((mode, chain, tmp, Vec::with_capacity(fixture.blocks.len())));
    }
    let bar = ProgressBar::new(fixture.blocks.len() as u64);
    bar.set_style(ProgressStyle::with_template("importing [{bar:40}] {pos}/{len} blocks, every mode ({eta})").unwrap());
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
        chain.store.flush().with_context(|| format!("{} mode: writing the last blocks", mode.name()))?;
        if mode != Mode::Ceiling {
            let writes = chain.store.take_write_times();
            if writes.len() != rows.len() {
                bail!("{} mode: {} database writes for {} blocks", mode.name(), writes.len(), rows.len());
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
    let cache = CachingDb::new(StoreDb::new(chain.store.clone(), header.parent_hash, parent.number));
    warm_from_bal(&cache, bal).map_err(anyhow::Error::msg)?;
    let t = Instant::now();
    let outcome = execute_block_parallel(&cache, &block.block, &chain.config, bal)?;
    let exec = t.elapsed();
    if let ParallelOutcome::BalMismatch { reason } = outcome {
        bail!("block {}: BAL mismatch in ceiling mode: {reason}", header.number);
    }
    chain.import_block(block.clone())?;
    Ok(BlockRow::ceiling(header.number, block.block.body.transactions.len(), header.gas_used, exec))
}
