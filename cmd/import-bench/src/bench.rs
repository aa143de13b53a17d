//! `ethrex import-bench`: imports a chain file through the production import pipeline,
//! once per mode (and once per sweep point), each on its own copy of the genesis
//! database, and reports per-block stage times, whole-run wall clocks and the sweep.
//!
//! The genesis database (with the fixture's filler state, if it has one) is built once
//! into a template; every mode and sweep point starts from a checkpoint of it (hard links
//! on RocksDB), so a multi-gigabyte state costs its build once per run.

use crate::binary::{genesis_trie, BinaryState, Reads, StateScheme, TrieReads};
use crate::report::{BlockRow, ModeReport};
use crate::sweep::{run_sweep, SweepOptions, SweepPoint};
use alloy_primitives::B256;
use anyhow::{bail, Context};
use ethrex_bal::BalDesign;
use ethrex_bal::{derive_designs, DesignConsumer};
use ethrex_bench_storage::latency::SlowReads;
use ethrex_bench_storage::os_cache::{drop_page_cache, CacheDrop};
use ethrex_bench_storage::{BenchBackend, BenchStore};
use ethrex_blockchain::chain_file::{read_chain, read_genesis};
use ethrex_blockchain::{
    Blockchain, Cores, ImportObserver, ImportOptions, ImportOutcome, Prefetch, StateChanges,
    Threshold,
};
use ethrex_common::{BlockWithBal, ChainConfig};
use ethrex_state_filler::{init_genesis_filled, StateFiller};
use ethrex_storage::DbKind;
use ethrex_vm::warmer::warm_from_bal;
use ethrex_vm::{
    run_transactions_parallel, CachingDb, ParallelRun, Schedule, StateSource, StoreDb,
};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How the bench imports the chain; each mode runs on its own copy of the genesis
/// database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every block through the import pipeline with parallel import off: one thread for
    /// everything (recovery, execution, merkleization).
    Sequential,
    /// Transactions one after another, but sender recovery, merkleization and the rest
    /// of the pipeline on the pool: the sequential import a real client runs.
    SequentialPooled,
    /// Every block through the import pipeline with parallel import on (and the given
    /// tuning).
    Parallel,
    /// Parallel execution only, from a fully cached state: no validation against the
    /// header, no merkleization, no storage. The limit the pipeline can approach.
    Ceiling,
    /// Every block through the import pipeline as a BAL design's consumer executes it,
    /// from the design's encoding (derived beforehand, outside the timed region).
    Design(BalDesign),
}

impl Mode {
    /// The mode's name in `--mode`, reports and directory names.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::Sequential => "sequential",
            Mode::SequentialPooled => "sequential-pooled",
            Mode::Parallel => "parallel",
            Mode::Ceiling => "ceiling",
            Mode::Design(d) => match d {
                BalDesign::Type1 => "design:type1",
                BalDesign::Type2 => "design:type2",
                BalDesign::Type3 => "design:type3",
                BalDesign::Type4 => "design:type4",
                BalDesign::Type5 => "design:type5",
                BalDesign::Type6 => "design:type6",
                BalDesign::Full => "design:full",
                BalDesign::ParallelIo => "design:parallel-io",
            },
        }
    }

    /// The import options of this mode, from the bench's tuning.
    fn import_options(self, tuning: ImportOptions) -> ImportOptions {
        match self {
            Mode::Sequential => ImportOptions { cores: Cores::One, ..tuning },
            // Every block executes sequentially, on the pool.
            Mode::SequentialPooled => {
                ImportOptions { cores: Cores::Pool, threshold: Threshold::Never, ..tuning }
            }
            Mode::Parallel | Mode::Ceiling => ImportOptions { cores: Cores::Pool, ..tuning },
            // The design decides what is read ahead and how the block executes.
            Mode::Design(_) => {
                ImportOptions { cores: Cores::Pool, prefetch: Prefetch::Off, ..tuning }
            }
        }
    }
}

/// Parses the `--mode` argument: `sequential`, `sequential-pooled`, `parallel`, `both`
/// (sequential and parallel), `all` (the three plus the ceiling) or `none` (only the
/// sweep); any other value is an error.
pub fn modes_for(arg: &str) -> anyhow::Result<Vec<Mode>> {
    Ok(match arg {
        "sequential" => vec![Mode::Sequential],
        "sequential-pooled" => vec![Mode::SequentialPooled],
        "parallel" => vec![Mode::Parallel],
        "both" => vec![Mode::Sequential, Mode::Parallel],
        "all" => vec![Mode::Sequential, Mode::SequentialPooled, Mode::Parallel, Mode::Ceiling],
        "none" => vec![],
        other => bail!(
            "unknown mode '{other}' (expected sequential, sequential-pooled, parallel, both, all or none)"
        ),
    })
}

/// The cold-cache protocol and the emulated drive.
#[derive(Debug, Clone, Copy, Default)]
pub struct IoOptions {
    /// Before every block (or batch): wait for the database writes, empty the store's
    /// and the backend's caches, drop the OS page cache of the database files, then read
    /// the database's index back (`BenchStore::warm_index`): cold data behind a warm index,
    /// as on a node that has been running, on both backends.
    pub cold: bool,
    /// With `cold`, leave the index cold too: MDBX's branch pages stay evicted (RocksDB
    /// keeps its index and filter blocks in its own memory either way, so this is colder
    /// for MDBX than for RocksDB).
    pub cold_index: bool,
    /// Added to every read that reaches the database (a sleep).
    pub read_latency: Duration,
    /// Threads of the pool the BAL prefetch runs on.
    pub io_threads: usize,
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
    /// The filler state on top of the genesis; `None`: `<stem>.state.json` beside the
    /// fixture, if it exists.
    pub state: Option<PathBuf>,
    /// The modes to run, each block in every mode before the next block.
    pub modes: Vec<Mode>,
    /// The database every mode writes to.
    pub db: DbKind,
    /// Keep the databases under this directory (cleared first); `None`: a temporary
    /// directory removed afterwards.
    pub datadir: Option<PathBuf>,
    /// Keep the genesis database (the template every mode copies) here and reuse it on
    /// later runs of the same fixture; `None`: built inside `datadir` for this run only.
    pub genesis_db: Option<PathBuf>,
    /// Pause before each block in each mode, outside the timed region.
    pub sleep: Duration,
    /// How blocks are imported; `parallel` is set per mode.
    pub import: ImportOptions,
    /// Cold caches and emulated latency.
    pub io: IoOptions,
    /// The MPT alone, or the MPT and a binary trie (`--state-scheme`, `--group-depth`).
    pub scheme: StateScheme,
    /// Where execution reads accounts and storage (`--reads`; `Trie` needs the binary
    /// scheme).
    pub reads: Reads,
    /// Bytes of decoded account trie nodes each store keeps between blocks
    /// (`Store::set_trie_memory`).
    pub trie_memory: usize,
}

impl BenchOptions {
    /// Options for `fixture` with the defaults: sequential and parallel modes on RocksDB
    /// in a temporary directory, 100 ms pause, default import options, warm caches.
    pub fn new(fixture: PathBuf) -> Self {
        Self {
            fixture,
            bal: None,
            genesis: None,
            state: None,
            modes: vec![Mode::Sequential, Mode::Parallel],
            db: DbKind::Rocksdb,
            datadir: None,
            genesis_db: None,
            sleep: Duration::from_millis(100),
            import: ImportOptions::default(),
            io: IoOptions { io_threads: DEFAULT_IO_THREADS, ..Default::default() },
            scheme: StateScheme::Mpt,
            reads: Reads::Flat,
            trie_memory: ethrex_storage::TRIE_MEMORY_BYTES,
        }
    }
}

/// The I/O pool's default size. This machine's drive (see `docs/benchmarks.md`) serves
/// about 14k random 4 KiB reads per second at queue depth 1 and ~65k at depth 32, flat
/// beyond: 32 reads in flight saturate it, and at an emulated 100 µs per read 32 threads
/// keep 320k reads/s in flight, more than the import's cores can consume.
pub const DEFAULT_IO_THREADS: usize = 32;

/// `stress.rlp` -> `stress.bal.rlp` / `stress.genesis.json` beside it.
fn sibling(fixture: &Path, suffix: &str) -> PathBuf {
    let name = fixture.file_name().and_then(|n| n.to_str()).unwrap_or("chain.rlp");
    let stem = name.strip_suffix(".rlp").unwrap_or(name);
    fixture.with_file_name(format!("{stem}{suffix}"))
}

/// A chain read into memory, ready to be imported by every mode.
pub struct LoadedFixture {
    /// The genesis the chain starts from.
    pub genesis: alloy_genesis::Genesis,
    /// Its chain configuration.
    pub config: ChainConfig,
    /// The filler state the genesis database holds besides the allocation.
    pub filler: Option<StateFiller>,
    /// The blocks after genesis, in order, each with its BAL when a BAL file was found.
    pub blocks: Vec<BlockWithBal>,
}

/// Reads the genesis, the filler spec, the chain file and (if given or present beside
/// it) the BAL file. Fails when a file cannot be read or decoded, or the chain holds no
/// blocks.
pub fn load_fixture(options: &BenchOptions) -> anyhow::Result<LoadedFixture> {
    let genesis_path =
        options.genesis.clone().unwrap_or_else(|| sibling(&options.fixture, ".genesis.json"));
    let genesis = read_genesis(&genesis_path)?;
    let bal_path = options
        .bal
        .clone()
        .or_else(|| Some(sibling(&options.fixture, ".bal.rlp")).filter(|p| p.exists()));
    let state_path = options
        .state
        .clone()
        .or_else(|| Some(sibling(&options.fixture, ".state.json")).filter(|p| p.exists()));
    let filler = match state_path {
        Some(path) => {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            Some(
                serde_json::from_str::<StateFiller>(&text)
                    .with_context(|| format!("{} is not a filler state spec", path.display()))?,
            )
        }
        None => None,
    };
    let blocks = read_chain(&options.fixture, bal_path.as_deref())?;
    if blocks.is_empty() {
        bail!("{} holds no blocks", options.fixture.display());
    }
    Ok(LoadedFixture { config: ChainConfig::new(genesis.config.clone()), genesis, filler, blocks })
}

/// The genesis database every mode and sweep point copies, and where the copies go.
pub(crate) struct Databases {
    root: PathBuf,
    template: BenchStore,
    kind: DbKind,
    io: IoOptions,
    trie_memory: usize,
    /// With `--state-scheme binary`: the genesis binary trie's root and group depth.
    binary_genesis: Option<(B256, u8)>,
    _tmp: Option<tempfile::TempDir>,
    /// How the page cache was last dropped.
    pub(crate) cache_drop: Option<CacheDrop>,
    /// The database's index in memory after the last drop, in bytes.
    pub(crate) index_bytes: Option<u64>,
}

impl Databases {
    /// Builds the template: the genesis allocation and the filler state, written and
    /// flushed before any timing starts.
    pub(crate) fn build(options: &BenchOptions, fixture: &LoadedFixture) -> anyhow::Result<Self> {
        let (root, tmp) = match &options.datadir {
            Some(dir) => {
                if dir.exists() {
                    std::fs::remove_dir_all(dir)
                        .with_context(|| format!("clearing {}", dir.display()))?;
                }
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
                (dir.clone(), None)
            }
            None => {
                let tmp = tempfile::Builder::new().prefix("ethrex-bench-").tempdir()?;
                (tmp.path().to_path_buf(), Some(tmp))
            }
        };
        let t = Instant::now();
        let path = options.genesis_db.clone().unwrap_or_else(|| root.join("genesis"));
        let reused = path.exists();
        let template =
            BenchStore::new(ethrex_bench_storage::open_backend(options.db, Some(&path))?);
        // On a kept genesis database this only checks that it holds this genesis and
        // filler (and fails if it holds another).
        init_genesis_filled(&template.store, &fixture.genesis, fixture.filler.as_ref())
            .with_context(|| format!("writing the genesis state to {}", path.display()))?;
        let binary_genesis = match options.scheme.group_depth() {
            Some(depth) => {
                let t = Instant::now();
                template.store.flush()?;
                let root = genesis_trie(&template.store, template.backend.clone(), depth)
                    .with_context(|| format!("the genesis binary trie in {}", path.display()))?;
                eprintln!(
                    "genesis binary trie (group depth {depth}): root {root} in {:.1} s",
                    t.elapsed().as_secs_f64()
                );
                Some((root, depth))
            }
            None => None,
        };
        // Every mode and point copies it: compacted, the copies share all its files and
        // none starts with a compaction of its own (a few GB each on a big state).
        template.compact()?;
        if let Some(f) = &fixture.filler {
            eprintln!(
                "genesis database: {} filler accounts, {} filler slots, {} in {:.1} s",
                f.accounts,
                f.slots,
                if reused { "checked" } else { "built" },
                t.elapsed().as_secs_f64()
            );
        }
        Ok(Self {
            root,
            template,
            kind: options.db,
            io: options.io,
            trie_memory: options.trie_memory,
            binary_genesis,
            _tmp: tmp,
            cache_drop: None,
            index_bytes: None,
        })
    }

    /// A store of its own for `name`, starting at genesis, reading through the emulated
    /// latency.
    pub(crate) fn copy(&self, name: &str) -> anyhow::Result<BenchStore> {
        Ok(self.copy_backend(name)?.0)
    }

    /// As `copy`, with the binary trie of the genesis state opened in the copy's
    /// database (`--state-scheme binary`; `None` with the MPT alone). The trie reads the
    /// same backend as the store, emulated latency included.
    pub(crate) fn copy_with_trie(
        &self,
        name: &str,
    ) -> anyhow::Result<(BenchStore, Option<Arc<BinaryState>>)> {
        let (db, backend) = self.copy_backend(name)?;
        let trie = match self.binary_genesis {
            Some((root, depth)) => Some(BinaryState::open(backend, root, depth)?),
            None => None,
        };
        Ok((db, trie))
    }

    /// The genesis database copied to `name`, opened as a store (its write times reset,
    /// the trie memory set) over the copy's backend, which is returned too.
    fn copy_backend(&self, name: &str) -> anyhow::Result<(BenchStore, Arc<dyn BenchBackend>)> {
        let path = self.root.join(name);
        self.template
            .checkpoint(&path)
            .with_context(|| format!("copying the genesis database to {}", path.display()))?;
        let backend: Arc<dyn BenchBackend> = Arc::new(SlowReads::new(
            ethrex_bench_storage::open_backend(self.kind, Some(&path))?,
            self.io.read_latency,
        ));
        let db = BenchStore::new(backend.clone());
        db.store.take_write_times();
        db.store.set_trie_memory(self.trie_memory);
        Ok((db, backend))
    }

    /// Before a block (or batch) of `db`: the wait for its earlier writes (returned,
    /// it belongs to the whole-run wall clock), then, with `--cold`, every cache emptied,
    /// the page cache dropped and, unless `cold_index`, the index read back (not timed).
    pub(crate) fn prepare(&mut self, db: &BenchStore) -> anyhow::Result<Duration> {
        if !self.io.cold {
            return Ok(Duration::ZERO);
        }
        let t = Instant::now();
        db.store.flush()?;
        let waited = t.elapsed();
        db.clear_caches()?;
        let dir = db.directory().context("a cold run needs an on-disk database")?;
        self.cache_drop = Some(
            drop_page_cache(dir)
                .with_context(|| format!("dropping the page cache of {}", dir.display()))?,
        );
        if !self.io.cold_index {
            self.index_bytes = Some(db.warm_index().context("reading the index back")?);
        }
        Ok(waited)
    }
}

/// A pool of `threads` workers for one mode or sweep point.
pub(crate) fn pool(threads: usize, name: &'static str) -> anyhow::Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("{name}-{i}"))
        .build()
        .context("building a thread pool")
}

/// Runs every mode over the chain, block by block in turn: block 1 in each mode, then
/// block 2 in each mode, and so on, each mode on its own copy of the genesis database.
/// Interleaving puts every mode under the same machine conditions at the same moment, so
/// the ratios hold even when the machine's speed drifts during the run.
pub(crate) fn run_modes(
    options: &BenchOptions,
    fixture: &LoadedFixture,
    dbs: &mut Databases,
    threads: usize,
) -> anyhow::Result<Vec<ModeReport>> {
    if options.modes.is_empty() {
        return Ok(Vec::new());
    }
    let exec = std::sync::Arc::new(pool(threads, "bench")?);
    let io = std::sync::Arc::new(pool(options.io.io_threads, "bench-io")?);
    let designs: Vec<BalDesign> = options
        .modes
        .iter()
        .filter_map(|m| match m {
            Mode::Design(d) => Some(*d),
            _ => None,
        })
        .collect();
    let derived = if designs.is_empty() {
        Vec::new()
    } else {
        let t = Instant::now();
        let derived: Vec<Vec<Vec<u8>>> = exec
            .install(|| derive_chain_designs(dbs, fixture, &designs))?
            .iter()
            .map(|block| block.iter().map(|d| d.encode()).collect())
            .collect();
        eprintln!(
            "derived {} BAL designs for {} blocks in {:.1} s (not timed)",
            designs.len(),
            fixture.blocks.len(),
            t.elapsed().as_secs_f64()
        );
        derived
    };
    let mut runs = Vec::with_capacity(options.modes.len());
    for &mode in &options.modes {
        let (db, binary) = dbs.copy_with_trie(mode.name().replace(':', "-").as_str())?;
        let mut chain = Blockchain::new(db.store.clone(), fixture.config.clone())
            .with_options(mode.import_options(options.import))
            .with_io_pool(io.clone());
        let kept = binary.as_ref().map(|_| Arc::new(KeptChanges::default()));
        if let Some(kept) = &kept {
            chain = chain.with_observer(kept.clone());
        }
        let source = match (&binary, options.reads) {
            (Some(state), Reads::Trie) => {
                let source: Arc<dyn StateSource> = Arc::new(TrieReads(state.clone()));
                chain = chain.with_state_source(source.clone());
                Some(source)
            }
            (None, Reads::Trie) => bail!("--reads trie needs --state-scheme binary"),
            _ => None,
        };
        let run = Run {
            mode,
            chain,
            db,
            rows: Vec::with_capacity(fixture.blocks.len()),
            wall: Duration::ZERO,
            binary,
            source,
            kept,
        };
        runs.push(run);
    }
    let bar = ProgressBar::new(fixture.blocks.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("importing [{bar:40}] {pos}/{len} blocks, every mode ({eta})")
            .unwrap(),
    );
    for (number, block) in fixture.blocks.iter().enumerate() {
        for Run { mode, chain, db, rows, wall, binary, source, kept } in runs.iter_mut() {
            std::thread::sleep(options.sleep);
            *wall += dbs.prepare(db)?;
            let t = Instant::now();
            let (mut row, outcome) = if *mode == Mode::Ceiling {
                let (row, outcome) = exec.install(|| ceiling_block(chain, block, source))?;
                // The ceiling's run is its execution alone (warming and the untimed
                // import that moves its state on are not part of it).
                *wall += Duration::from_secs_f64(row.stages.total_ms / 1e3);
                (row, outcome)
            } else {
                let (outcome, check_reads) = exec
                    .install(|| match *mode {
                        Mode::Design(d) => {
                            let k = designs.iter().position(|x| *x == d).unwrap_or_default();
                            let consumer = DesignConsumer::new(d, &derived[number][k]);
                            let outcome = chain.import_block_with(block.clone(), &consumer)?;
                            Ok((outcome, consumer.check_reads()))
                        }
                        _ => chain.import_block(block.clone()).map(|o| (o, Duration::ZERO)),
                    })
                    .with_context(|| format!("{} mode: block {}", mode.name(), block.number()))?;
                *wall += t.elapsed();
                (BlockRow::from_outcome(&outcome, check_reads), outcome)
            };
            if let Some(binary) = binary {
                // The binary trie follows the block: its changes applied and committed,
                // on the mode's pool, timed as a stage of its own.
                let changes = kept
                    .as_ref()
                    .and_then(|kept| kept.take(outcome.number))
                    .context("the import kept no changes")?;
                let t = Instant::now();
                let root =
                    exec.install(|| binary.apply(&changes, &chain.store)).with_context(|| {
                        format!("{} mode: binary trie after block {}", mode.name(), block.number())
                    })?;
                let took = t.elapsed();
                if *mode != Mode::Ceiling {
                    *wall += took;
                }
                row.set_binary(took, root);
            }
            rows.push(row);
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let mut reports = Vec::with_capacity(runs.len());
    for Run { mode, chain, mut rows, mut wall, binary, .. } in runs {
        let t = Instant::now();
        chain
            .store
            .flush()
            .with_context(|| format!("{} mode: writing the last blocks", mode.name()))?;
        if mode != Mode::Ceiling {
            wall += t.elapsed();
        }
        if mode != Mode::Ceiling {
            // The persister writes blocks that come close together at once; each block
            // of such a write is charged an equal share of its time.
            let writes = chain.store.take_write_times();
            let written: usize = writes.iter().map(|w| w.batches).sum();
            if written != rows.len() {
                bail!(
                    "{} mode: database writes for {written} blocks, {} blocks imported",
                    mode.name(),
                    rows.len()
                );
            }
            let shares = writes.iter().flat_map(|w| {
                std::iter::repeat_n(w.took.as_secs_f64() * 1e3 / w.batches as f64, w.batches)
            });
            for (row, share) in rows.iter_mut().zip(shares) {
                row.stages.persist_ms = share;
            }
        }
        let head = chain.store.head_header()?.context("no head after the import")?;
        let root = format!("{:#x}", head.state_root);
        let mut report = ModeReport::new(mode.name(), rows, wall, root);
        if let Some(binary) = binary {
            let reads = (options.reads == Reads::Trie).then(|| binary.reads());
            report.set_binary(reads);
        }
        reports.push(report);
    }
    if let Some(first) = reports.first() {
        if let Some(other) = reports.iter().find(|r| r.final_state_root != first.final_state_root) {
            bail!(
                "modes disagree on the final state root: {} has {}, {} has {}",
                first.name,
                first.final_state_root,
                other.name,
                other.final_state_root
            );
        }
        if let Some(other) = reports.iter().find(|r| r.final_binary_root != first.final_binary_root)
        {
            bail!(
                "modes disagree on the final binary root: {} has {:?}, {} has {:?}",
                first.name,
                first.final_binary_root,
                other.name,
                other.final_binary_root
            );
        }
    }
    Ok(reports)
}

/// Every block's `designs`, derived on a copy of the genesis database by executing each
/// block on its parent's state; each block is imported afterwards, so the next one
/// derives on its own parent.
pub(crate) fn derive_chain_designs(
    dbs: &Databases,
    fixture: &LoadedFixture,
    designs: &[BalDesign],
) -> anyhow::Result<Vec<Vec<ethrex_bal::DesignBal>>> {
    let chain = Blockchain::new(dbs.copy("derive")?.store, fixture.config.clone());
    let bar = ProgressBar::new(fixture.blocks.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("deriving BAL designs [{bar:40}] {pos}/{len} blocks ({eta})")
            .unwrap(),
    );
    let out = derive_and_import(&chain, &fixture.blocks, designs, || bar.inc(1));
    bar.finish_and_clear();
    out
}

/// `designs` of each of `blocks` (consecutive, the first a child of `chain`'s head),
/// each derived on its parent's state, then the block imported; `progress` after each.
pub fn derive_and_import(
    chain: &Blockchain,
    blocks: &[BlockWithBal],
    designs: &[BalDesign],
    mut progress: impl FnMut(),
) -> anyhow::Result<Vec<Vec<ethrex_bal::DesignBal>>> {
    let mut out = Vec::with_capacity(blocks.len());
    for block in blocks {
        let derived = derive_designs(chain, block, designs)
            .with_context(|| format!("deriving the BAL designs of block {}", block.number()))?;
        out.push(derived);
        chain
            .import_block(block.clone())
            .with_context(|| format!("importing block {} after deriving", block.number()))?;
        progress();
    }
    Ok(out)
}

/// One mode's import in progress.
struct Run {
    mode: Mode,
    chain: Blockchain,
    /// The store under `chain` and its backend, for the cold protocol (`prepare`).
    db: BenchStore,
    rows: Vec<BlockRow>,
    wall: Duration,
    /// The binary trie kept beside the MPT (`--state-scheme binary`).
    binary: Option<Arc<BinaryState>>,
    /// Execution's reads through the binary trie (`--reads trie`).
    source: Option<Arc<dyn StateSource>>,
    /// The executed changes of the block just imported, for the binary trie.
    kept: Option<Arc<KeptChanges>>,
}

/// Keeps the executed state changes of the block just imported (`ImportObserver`).
#[derive(Default)]
struct KeptChanges(std::sync::Mutex<Option<(u64, StateChanges)>>);

impl KeptChanges {
    /// Block `number`'s changes, if they are the ones kept.
    fn take(&self, number: u64) -> Option<StateChanges> {
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        kept.take().filter(|(n, _)| *n == number).map(|(_, changes)| changes)
    }
}

impl ImportObserver for KeptChanges {
    fn block_imported(&self, outcome: &ImportOutcome, changes: &StateChanges) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some((outcome.number, changes.clone()));
    }
}

/// Times parallel execution alone on a fully warmed cache (read from `source`, if given,
/// instead of the flat tables), then imports the block (untimed) to move to the next
/// state.
fn ceiling_block(
    chain: &Blockchain,
    block: &BlockWithBal,
    source: &Option<Arc<dyn StateSource>>,
) -> anyhow::Result<(BlockRow, ethrex_blockchain::ImportOutcome)> {
    let bal = block.bal.as_ref().context("the ceiling mode needs the BAL file")?;
    let header = &block.block.header;
    let parent = chain.store.header(&header.parent_hash)?.context("unknown parent")?;
    let cache = CachingDb::new(
        StoreDb::new(chain.store.clone(), header.parent_hash, parent.number)
            .with_source(source.clone()),
    );
    warm_from_bal(&cache, bal)?;
    let t = Instant::now();
    let run =
        run_transactions_parallel(&cache, &block.block, &chain.config, bal, Schedule::default())?;
    let output = match run {
        ParallelRun::Ran(executed) => executed.commit(&block.block, &chain.config),
        ParallelRun::BalMismatch(reason) => {
            bail!("block {}: BAL mismatch in ceiling mode: {reason}", header.number)
        }
    };
    let exec = t.elapsed();
    output?;
    let outcome = chain.import_block(block.clone())?;
    let row = BlockRow::ceiling(
        header.number,
        block.block.body.transactions.len(),
        header.gas_used,
        exec,
    );
    Ok((row, outcome))
}

/// Everything one `import-bench` run measured.
pub struct BenchRun {
    /// Per-mode reports (empty with `--mode none`).
    pub modes: Vec<ModeReport>,
    /// One entry per sweep point.
    pub sweep: Vec<SweepPoint>,
    /// How the page cache was dropped, if it was.
    pub cache_drop: Option<CacheDrop>,
    /// The database's index in memory after each drop (the last one), in bytes: MDBX's
    /// branch pages read back, RocksDB's index and filters; `None` when not cold or with
    /// `cold_index`.
    pub index_bytes: Option<u64>,
    /// The process's peak resident memory while the modes ran (every mode's store and
    /// caches at once; building the genesis template before them is not counted), in
    /// bytes; `None` where the kernel does not report it.
    pub peak_rss_bytes: Option<u64>,
}

/// Restarts the kernel's count of the process's peak resident memory (`VmHWM`), so a
/// later `peak_rss_bytes` covers only what follows. Best effort: on a kernel without it,
/// the peak covers the whole process.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The process's peak resident memory since start or the last `reset_peak_rss`.
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Builds the genesis template, then runs the modes (on `threads` workers) and the
/// sweep.
pub fn run(
    options: &BenchOptions,
    fixture: &LoadedFixture,
    threads: usize,
    sweep: Option<&SweepOptions>,
) -> anyhow::Result<BenchRun> {
    if sweep.is_some() && options.scheme != StateScheme::Mpt {
        bail!("--state-scheme binary runs the modes only, not the sweep");
    }
    let mut dbs = Databases::build(options, fixture)?;
    reset_peak_rss();
    let modes = run_modes(options, fixture, &mut dbs, threads)?;
    let peak_rss_bytes = if modes.is_empty() { None } else { peak_rss_bytes() };
    let sweep = match sweep {
        Some(sweep) => run_sweep(options, fixture, &mut dbs, sweep)?,
        None => Vec::new(),
    };
    Ok(BenchRun {
        modes,
        sweep,
        cache_drop: dbs.cache_drop,
        index_bytes: dbs.index_bytes,
        peak_rss_bytes,
    })
}
