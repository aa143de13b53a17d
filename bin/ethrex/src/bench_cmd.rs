//! `ethrex import-bench`.

use anyhow::Context;
use clap::{Args, ValueEnum};
use ethrex_bal::BalDesign;
use ethrex_blockchain::Cores;
use ethrex_import_bench::bench::{load_fixture, modes_for, run, BenchOptions, IoOptions, Mode};
use ethrex_import_bench::binary::{Reads, StateScheme};
use ethrex_import_bench::plot::svg;
use ethrex_import_bench::report::table;
use ethrex_import_bench::sweep::{sweep_modes_for, sweep_table, Design, SweepMode, SweepOptions};
use ethrex_storage::DbKind;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// The files beside a chain file, each found by name when not given.
#[derive(Args)]
pub(crate) struct ChainFiles {
    /// Concatenated RLP BALs (default: <fixture stem>.bal.rlp beside the fixture, if present).
    #[arg(long)]
    bal: Option<PathBuf>,
    /// geth-style genesis (default: <fixture stem>.genesis.json beside the fixture).
    #[arg(long)]
    genesis: Option<PathBuf>,
    /// Filler state spec written by `fixture stress --state-accounts/--state-slots`
    /// (default: <fixture stem>.state.json beside the fixture, if present).
    #[arg(long)]
    state: Option<PathBuf>,
}

impl ChainFiles {
    /// `BenchOptions` for the chain file `fixture` with these files.
    pub(crate) fn options(self, fixture: PathBuf) -> BenchOptions {
        let mut options = BenchOptions::new(fixture);
        options.bal = self.bal;
        options.genesis = self.genesis;
        options.state = self.state;
        options
    }
}

/// `--state-scheme`.
#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum SchemeArg {
    /// The MPT alone.
    Mpt,
    /// The MPT and an EIP-7864 binary trie.
    Binary,
}

/// `--reads`.
#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum ReadsArg {
    /// From the flat tables.
    Flat,
    /// Through the binary trie.
    Trie,
}

#[derive(Args)]
pub(crate) struct BenchArgs {
    /// Chain file: RLP blocks, concatenated.
    #[arg(long)]
    fixture: PathBuf,
    #[command(flatten)]
    files: ChainFiles,
    /// Import as a node whose transaction pool saw every transaction of the chain: each
    /// sender is recovered once beforehand (untimed) into the sender cache the import
    /// consults, as the pool fills it. Compares with a run without the flag.
    #[arg(long)]
    known_senders: bool,
    /// sequential, sequential-pooled, parallel, both (sequential + parallel), all (the
    /// three + the ceiling) or none (only the sweep).
    #[arg(long, default_value = "all")]
    mode: String,
    /// Worker threads: one count for the modes (default: one per core); a list
    /// (1,2,4,...) also runs the sweep at every count.
    #[arg(long, value_delimiter = ',')]
    threads: Vec<usize>,
    /// Mega-block sizes for the sweep (1,10,50): the transactions of N consecutive
    /// blocks run as one parallel unit, one database write per batch. Runs the sweep.
    #[arg(long, value_delimiter = ',')]
    batch: Vec<usize>,
    /// BAL designs: type1..type6, full, parallel-io, type2's aliases batched-io and
    /// eip7928, or all. Each runs as one more mode (`design:<name>`, its consumer on the
    /// design's encoding, derived beforehand) unless `--mode none`. In a sweep (`--threads
    /// LIST`, `--batch`), the I/O designs parallel-io, batched-io and overlapped-io (both
    /// at once; sweep only) run on the header BAL at every point.
    #[arg(long, value_delimiter = ',')]
    bal_design: Vec<String>,
    /// The sweep's other rows: sequential and/or parallel (default both; empty with
    /// `--sweep-modes ''` to run only the designs).
    #[arg(long)]
    sweep_modes: Option<String>,
    /// Before every block (or batch): empty the store's and the database's caches, drop
    /// the OS page cache (drop_caches as root, else posix_fadvise), then read the
    /// database's index back: MDBX's B-tree branch pages, the counterpart of the index and
    /// filter blocks RocksDB keeps in its own memory through a drop. Data cold, index warm
    /// on both backends, as on a node that has been running.
    #[arg(long)]
    cold: bool,
    /// With --cold, leave the index cold too (MDBX's branch pages are not read back;
    /// RocksDB's index stays in its memory whatever, so this is colder for MDBX).
    #[arg(long, requires = "cold")]
    cold_index: bool,
    /// Add this many microseconds (a sleep) to every read that reaches the database,
    /// emulating a drive's latency (NVMe: ~80-100 µs per random 4 KiB read at QD1).
    #[arg(long, default_value_t = 0)]
    read_latency_us: u64,
    /// Threads of the I/O pool the BAL prefetch runs on.
    #[arg(long, default_value_t = ethrex_import_bench::bench::DEFAULT_IO_THREADS)]
    io_threads: usize,
    #[command(flatten)]
    trie_memory: crate::node_cmd::TrieMemoryArgs,
    /// rocksdb or mdbx. RocksDB is the default, as for the node; which to use for what:
    /// docs/db-study/README.md.
    #[arg(long, default_value = "rocksdb")]
    db: String,
    /// Keep the databases under this directory (default: a temporary directory).
    #[arg(long)]
    datadir: Option<PathBuf>,
    /// Keep the genesis database (with the filler state) here and reuse it on later runs
    /// of the same fixture, instead of building it in every run; a database holding
    /// another genesis is an error.
    #[arg(long)]
    genesis_db: Option<PathBuf>,
    /// Pause between blocks, outside the timed region.
    #[arg(long, default_value_t = 100)]
    sleep_ms: u64,
    #[command(flatten)]
    tuning: crate::node_cmd::ParallelTuning,
    /// mpt: the MPT alone (the client as it is). binary: each mode's database also keeps
    /// an EIP-7864 binary trie (table extension), built from the genesis state, then
    /// updated and committed after every block from the changes execution produced,
    /// timed as its own column (`bintrie`); the JSON gets the per-block and final binary
    /// roots. The MPT root is still computed and checked against every header (the
    /// headers carry MPT roots), so the binary trie is kept beside the MPT, never instead
    /// of it. Modes only (not the sweep).
    #[arg(long, value_enum, default_value_t = SchemeArg::Mpt)]
    state_scheme: SchemeArg,
    /// Binary levels per stored node of the binary trie, 1..=8 (default 5, like geth);
    /// needs --state-scheme binary.
    #[arg(long)]
    group_depth: Option<u8>,
    /// Where execution reads accounts and storage: flat (the flat tables) or trie
    /// (through the binary trie of the parent state; needs --state-scheme binary; code
    /// still comes from the code table, and the MPT merkleization still reads the flat
    /// tables).
    #[arg(long, value_enum, default_value_t = ReadsArg::Flat)]
    reads: ReadsArg,
    /// Write the report as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Draw per-block stage times and the Ggas/s distribution (SVG).
    #[arg(long)]
    plot: Option<PathBuf>,
}

/// Recovers every sender of the chain in `fixture` into the sender cache, as a pool that
/// had seen each transaction would have.
fn remember_chain_senders(fixture: &std::path::Path) -> anyhow::Result<()> {
    let blocks = ethrex_blockchain::chain_file::read_chain(fixture, None)?;
    let txs: Vec<_> = blocks.iter().flat_map(|b| b.block.body.transactions.iter()).collect();
    ethrex_vm::install_sender_cache(txs.len());
    for (i, tx) in txs.iter().enumerate() {
        ethrex_vm::remember_sender(*tx.tx_hash(), ethrex_vm::recover_sender(i, tx)?);
    }
    eprintln!("known senders: {} transactions' senders cached before the import", txs.len());
    Ok(())
}

pub(crate) fn run_bench(a: BenchArgs) -> anyhow::Result<ExitCode> {
    let db: DbKind = a.db.parse().map_err(anyhow::Error::msg)?;
    let scheme_name = match a.state_scheme {
        SchemeArg::Mpt => "mpt",
        SchemeArg::Binary => "binary",
    };
    let scheme = StateScheme::parse(scheme_name, a.group_depth)?;
    let reads = match a.reads {
        ReadsArg::Flat => Reads::Flat,
        ReadsArg::Trie => Reads::Trie,
    };
    anyhow::ensure!(
        reads == Reads::Flat || scheme != StateScheme::Mpt,
        "--reads trie reads through the binary trie: give --state-scheme binary"
    );
    anyhow::ensure!(
        db != DbKind::Memory,
        "--db must be mdbx or rocksdb (the bench measures a real database)"
    );
    anyhow::ensure!(!a.threads.contains(&0), "--threads counts must be at least 1");
    anyhow::ensure!(!a.batch.contains(&0), "--batch sizes must be at least 1");
    anyhow::ensure!(a.io_threads > 0, "--io-threads must be at least 1");
    if a.known_senders {
        remember_chain_senders(&a.fixture)?;
    }
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let mode_threads = match a.threads.as_slice() {
        [one] => *one,
        _ => cores,
    };
    // Each name is a design the modes run (BalDesign), one the sweep runs (Design), or
    // both; `all` is every design.
    let mut bal_designs: Vec<BalDesign> = Vec::new();
    let mut designs: Vec<Design> = Vec::new();
    for name in &a.bal_design {
        // overlapped-io is the sweep's alone; every other name is a design, and the
        // sweep runs type2 (batched I/O) and parallel-io on the header BAL.
        let as_modes = if name == "overlapped-io" {
            Vec::new()
        } else {
            BalDesign::parse_list(name).map_err(anyhow::Error::msg)?
        };
        let named: Vec<Design> = if name == "overlapped-io" {
            vec![Design::OverlappedIo]
        } else {
            as_modes
                .iter()
                .filter_map(|d| match d {
                    BalDesign::Type2 => Some(Design::BatchedIo),
                    BalDesign::ParallelIo => Some(Design::ParallelIo),
                    _ => None,
                })
                .collect()
        };
        for d in named {
            if !designs.contains(&d) {
                designs.push(d);
            }
        }
        for d in as_modes {
            if !bal_designs.contains(&d) {
                bal_designs.push(d);
            }
        }
    }
    let sweep_wanted = a.threads.len() > 1 || !a.batch.is_empty() || a.sweep_modes.is_some();
    if !sweep_wanted
        && (a.mode == "none" || designs.contains(&Design::OverlappedIo))
        && !designs.is_empty()
    {
        anyhow::bail!(
            "the sweep's I/O designs (and overlapped-io, which runs only there) need a sweep: give --threads LIST, --batch or --sweep-modes"
        );
    }
    anyhow::ensure!(
        !sweep_wanted || scheme == StateScheme::Mpt,
        "--state-scheme binary runs the modes only, not the sweep (--threads LIST, --batch, --sweep-modes)"
    );
    let sweep = if sweep_wanted {
        let mut modes = sweep_modes_for(a.sweep_modes.as_deref().unwrap_or("sequential,parallel"))?;
        modes.extend(designs.iter().map(|d| SweepMode::Design(*d)));
        anyhow::ensure!(
            !modes.is_empty(),
            "the sweep has no mode: give --sweep-modes or --bal-design"
        );
        Some(SweepOptions {
            modes,
            threads: if a.threads.is_empty() { vec![cores] } else { a.threads.clone() },
            batches: if a.batch.is_empty() { vec![1] } else { a.batch.clone() },
        })
    } else {
        None
    };
    let mut options = a.files.options(a.fixture.clone());
    options.modes = modes_for(&a.mode)?;
    if a.mode != "none" {
        options.modes.extend(bal_designs.iter().map(|d| Mode::Design(*d)));
    } else if let Some(d) =
        bal_designs.iter().find(|d| !matches!(d, BalDesign::Type2 | BalDesign::ParallelIo))
    {
        anyhow::bail!("--bal-design {d} runs as a mode, and --mode none runs none (the sweep runs the I/O designs only)");
    }
    anyhow::ensure!(
        !options.modes.is_empty() || sweep.is_some(),
        "--mode none runs nothing without a sweep (--threads LIST, --batch, --bal-design)"
    );
    options.db = db;
    options.scheme = scheme;
    options.reads = reads;
    options.datadir = a.datadir;
    options.genesis_db = a.genesis_db;
    options.sleep = Duration::from_millis(a.sleep_ms);
    options.trie_memory = a.trie_memory.bytes();
    options.import = a.tuning.options(Cores::Pool);
    options.io = IoOptions {
        cold: a.cold,
        cold_index: a.cold_index,
        read_latency: Duration::from_micros(a.read_latency_us),
        io_threads: a.io_threads,
    };

    let fixture = load_fixture(&options)?;
    let gas: u64 = fixture.blocks.iter().map(|b| b.block.header.gas_used).sum();
    let txs: usize = fixture.blocks.iter().map(|b| b.block.body.transactions.len()).sum();
    eprintln!(
        "{}: {} blocks, {} transactions, {:.1} Mgas; {}; I/O: {}, {} µs per database read, {} I/O threads",
        a.fixture.display(),
        fixture.blocks.len(),
        txs,
        gas as f64 / 1e6,
        a.db,
        match (a.cold, a.cold_index) {
            (false, _) => "warm caches",
            (true, false) => "cold before every block/batch (index warm)",
            (true, true) => "cold before every block/batch (index cold too)",
        },
        a.read_latency_us,
        a.io_threads,
    );
    let result = run(&options, &fixture, mode_threads, sweep.as_ref())?;
    let cache_drop = result.cache_drop.map(|d| d.name()).unwrap_or("none");
    if !result.modes.is_empty() {
        println!("modes on {mode_threads} threads:");
        print!("{}", table(&result.modes));
        if let Some(peak) = result.peak_rss_bytes {
            println!(
                "memory: peak RSS {:.0} MB while the {} modes ran side by side (each keeps up to \
                 {} MB of account trie levels, and as much of storage tries')",
                peak as f64 / 1e6,
                result.modes.len(),
                a.trie_memory.trie_memory_mb
            );
        }
    }
    if !result.sweep.is_empty() {
        print!("{}", sweep_table(&result.sweep));
    }
    let index = match result.index_bytes {
        Some(bytes) => format!("index warm after each drop ({:.1} MB)", bytes as f64 / 1e6),
        None if a.cold => "index left cold".to_string(),
        None => "index warm".to_string(),
    };
    println!(
        "I/O: cold {}, page cache dropped by {cache_drop}, {index}, {} µs per database read, {} I/O threads",
        a.cold, a.read_latency_us, a.io_threads
    );
    if let Some(path) = &a.json {
        let modes: serde_json::Map<String, serde_json::Value> = result
            .modes
            .iter()
            .map(|r| (r.name.to_string(), serde_json::to_value(r).unwrap_or_default()))
            .collect();
        let json = serde_json::json!({
            "fixture": {
                "path": a.fixture.display().to_string(),
                "blocks": fixture.blocks.len(),
                "transactions": txs,
                "gas": gas,
                "db": a.db,
                "filler": fixture.filler,
            },
            "machine": { "cores": cores, "threads": mode_threads },
            "io": {
                "cold": a.cold,
                "read_latency_us": a.read_latency_us,
                "io_threads": a.io_threads,
                "cache_drop": cache_drop,
                "index": if a.cold && a.cold_index { "cold" } else { "warm" },
                "index_bytes": result.index_bytes,
            },
            "modes": modes,
            "memory": {
                "peak_rss_bytes": result.peak_rss_bytes,
                "trie_memory_mb": a.trie_memory.trie_memory_mb,
            },
            "sweep": result.sweep,
        });
        let mut json = json;
        if let Some(depth) = scheme.group_depth() {
            // Only with the binary trie, so the MPT-only report stays as it was.
            json["state_scheme"] = serde_json::json!({
                "scheme": "binary",
                "group_depth": depth,
                "reads": if reads == Reads::Trie { "trie" } else { "flat" },
                "mpt_checked": "every block's MPT root is computed and checked against its header",
            });
            let first = result.modes.first().and_then(|r| r.final_binary_root.clone());
            json["final_binary_root"] = serde_json::json!(first);
        }
        std::fs::write(path, serde_json::to_string_pretty(&json)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &a.plot {
        std::fs::write(path, svg(&result.modes))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}
