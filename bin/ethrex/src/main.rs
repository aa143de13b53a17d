//! `ethrex`: a Rust Ethereum execution client with BAL-driven block import.

mod bench_cmd;
mod ef_test;
mod node_cmd;

use clap::{Parser, Subcommand};

// Block import allocates from many threads at once (one EVM per transaction); glibc's
// allocator showed up at ~10% of CPU in profiles of the parallel path.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "ethrex", version, about = "Ethereum execution client with BAL-driven block import")]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Without a subcommand, `ethrex` runs the node with these options.
    #[command(flatten)]
    node: Option<node_cmd::NodeArgs>,
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
    Fixture(bench_cmd::FixtureCommand),
    /// Import a chain file mode by mode and report per-block stage times.
    ImportBench(bench_cmd::BenchArgs),
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        None => match cli.node {
            Some(args) => node_cmd::run_node(args),
            None => Err(anyhow::anyhow!("nothing to do: give --network to run the node, or a subcommand (see --help)")),
        },
        Some(command) => run(command),
    };
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
        Command::Fixture(cmd) => bench_cmd::run_fixture(cmd),
        Command::ImportBench(args) => bench_cmd::run_bench(args),
    }
}
