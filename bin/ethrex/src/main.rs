//! `ethrex`: a Rust Ethereum execution client with BAL-driven block import.

mod bal_lab_cmd;
mod bench_cmd;
mod cores_model_cmd;
mod db_bench_cmd;
mod dev;
mod ef_test;
mod fixture_cmd;
mod node_cmd;
mod trie_bench_cmd;

use clap::{Parser, Subcommand};

// Block import allocates from many threads at once (one EVM per transaction); glibc's
// allocator showed up at ~10% of CPU in profiles of the parallel path.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::process::ExitCode;

/// `mi_option_purge_delay` and `mi_option_allow_thp` in mimalloc 3's `mi_option_e`
/// (libmimalloc-sys names no constants for them).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
const MI_OPTION_ALLOW_THP: libmimalloc_sys::mi_option_t = 43;

/// Two allocator settings for block import:
/// - Freed memory stays mapped instead of being returned to the OS a few milliseconds
///   later. Every block allocates much the same working set (EVMs, trie nodes, batches);
///   with mimalloc's default 10 ms delay it was returned between blocks and faulted back
///   in, zeroed, by the next one (import-bench, parallel mode: 133-151k page faults per
///   run with the default, 78k without purging; the kernel's zeroing was a fifth of the
///   state-root stage in profiles).
/// - No transparent huge pages, unless `MIMALLOC_ALLOW_THP` says otherwise. mimalloc asks
///   for them on its arenas, and the kernel then zeroes 2 MiB at the first touch of any
///   byte of one: on the reference machine half of a whole-process import's system time.
///   Without them it takes twice the page faults and more user time (TLB misses), and
///   less wall time: 0.958x over 12 alternating pairs (docs/benchmarks.md, third round).
///   The process flag also covers the arena mimalloc mapped before `main`.
fn tune_allocator() {
    // SAFETY: sets a process-wide allocator option; valid at any time.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
        // SAFETY: as above.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_ALLOW_THP, 0) };
        // SAFETY: PR_SET_THP_DISABLE takes plain integers and only sets a flag of this
        // process; a failure (an old kernel) leaves huge pages as they were.
        unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    }
}

#[derive(Parser)]
#[command(
    name = "ethrex",
    // `ethrex --version` names the consensus rules the binary follows.
    version = concat!(
        env!("CARGO_PKG_VERSION"),
        " (spec: Amsterdam as of glamsterdam-devnet-8, revm 43.0.3)"
    ),
    about = "Ethereum execution client with BAL-driven block import"
)]
#[command(
    after_help = "Without a subcommand, `ethrex --network ...` runs `ethrex node --network ...`."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// `ethrex --network ...` (options first, no subcommand) means `ethrex node --network ...`.
fn args_with_default_command() -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let starts_with_option = args
        .get(1)
        .map(|a| a.to_string_lossy().into_owned())
        .is_some_and(|a| a.starts_with("--") && !matches!(a.as_str(), "--help" | "--version"));
    if starts_with_option {
        args.insert(1, "node".into());
    }
    args
}

#[derive(Subcommand)]
enum Command {
    /// Run the node: Engine API, eth JSON-RPC, metrics.
    Node(node_cmd::NodeArgs),
    /// Import a chain file (resumes after an interruption).
    Import(node_cmd::ImportArgs),
    /// Export the canonical chain to a chain file.
    Export(node_cmd::ExportArgs),
    /// Check that the head's state root matches its flat state (e.g. after a crash).
    VerifyDb(node_cmd::VerifyDbArgs),
    /// Run EF `blockchain_test` fixtures through the import pipeline.
    EfTest(ef_test::EfTestArgs),
    /// Generate test fixtures.
    #[command(subcommand)]
    Fixture(fixture_cmd::FixtureCommand),
    /// Import a chain file mode by mode and report per-block stage times.
    ImportBench(bench_cmd::BenchArgs),
    /// The parallel path's block time on N simulated cores, from a one-core run's pieces.
    CoresModel(cores_model_cmd::CoresModelArgs),
    /// The BAL design lab: the access-list designs of the research, measured on a chain.
    #[command(subcommand)]
    BalLab(bal_lab_cmd::BalLabCommand),
    /// Random point reads on MDBX and RocksDB: IOPS, latency and CPU per thread count.
    DbBench(db_bench_cmd::DbBenchArgs),
    /// The binary-trie group-depth study: MPT and EIP-7864 binary tries at depths 1-8.
    TrieBench(ethrex_trie_bench::Args),
}

fn main() -> ExitCode {
    tune_allocator();
    let cli = Cli::parse_from(args_with_default_command());
    // A node logs one line per block by default; batch tools only warn.
    let default_filter = match cli.command {
        Command::Node(_) | Command::Import(_) => "info",
        _ => "warn",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| default_filter.into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let result = run(cli.command);
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Node(args) => node_cmd::run_node(args),
        Command::Import(args) => node_cmd::run_import(args),
        Command::Export(args) => node_cmd::run_export(args),
        Command::VerifyDb(args) => node_cmd::run_verify_db(args),
        Command::EfTest(args) => ef_test::run(args),
        Command::Fixture(cmd) => fixture_cmd::run_fixture(cmd),
        Command::ImportBench(args) => bench_cmd::run_bench(args),
        Command::BalLab(cmd) => bal_lab_cmd::run_bal_lab(cmd),
        Command::CoresModel(args) => cores_model_cmd::run(args),
        Command::TrieBench(args) => trie_bench_cmd::run(args),
        Command::DbBench(args) => db_bench_cmd::run(args).map(|()| ExitCode::SUCCESS),
    }
}
