//! `ethrex fixture stress`.

use clap::{Args, Subcommand};
use ethrex_common::Fork;
use ethrex_import_bench::generate::{generate, StressOptions};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Subcommand)]
pub(crate) enum FixtureCommand {
    /// Generate a mainnet-shaped stress chain with the client's own block builder.
    Stress(StressArgs),
}

#[derive(Args)]
pub(crate) struct StressArgs {
    /// Output directory (stress.rlp, stress.bal.rlp, stress.genesis.json, stress.blockchain_test.json).
    #[arg(long)]
    out: PathBuf,
    #[arg(long, default_value_t = 149)]
    blocks: u64,
    #[arg(long, default_value_t = 100_000_000)]
    gas_limit: u64,
    #[arg(long, default_value_t = 200)]
    min_txs: usize,
    #[arg(long, default_value_t = 500)]
    max_txs: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// amsterdam (with BALs) or osaka (no BALs).
    #[arg(long, default_value = "amsterdam")]
    fork: String,
    /// Also derive this many mutated blocks (stress.mutations.json), each checked to be
    /// rejected by this client; for differential testing against other clients.
    #[arg(long, default_value_t = 0)]
    mutations: usize,
}

pub(crate) fn run_fixture(cmd: FixtureCommand) -> anyhow::Result<ExitCode> {
    let FixtureCommand::Stress(a) = cmd;
    let fork = match a.fork.as_str() {
        "amsterdam" => Fork::Amsterdam,
        "osaka" => Fork::Osaka,
        other => anyhow::bail!("unsupported --fork {other} (expected amsterdam or osaka)"),
    };
    generate(&StressOptions {
        out: a.out,
        blocks: a.blocks,
        gas_limit: a.gas_limit,
        min_txs: a.min_txs,
        max_txs: a.max_txs,
        seed: a.seed,
        fork,
        mutations: a.mutations,
    })?;
    Ok(ExitCode::SUCCESS)
}
