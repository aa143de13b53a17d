//! `ethrex fixture stress`.

use clap::{Args, Subcommand};
use ethrex_common::Fork;
use ethrex_import_bench::generate::{generate, StressOptions, StressWorkload};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Subcommand)]
pub(crate) enum FixtureCommand {
    /// Generate a mainnet-shaped stress chain with the client's own block builder.
    Stress(StressArgs),
}

#[derive(Args)]
pub(crate) struct StressArgs {
    /// Output directory (stress.rlp, stress.bal.rlp, stress.genesis.json, and
    /// stress.blockchain_test.json or, with a state filler, stress.state.json).
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
    /// mix (mainnet-shaped transactions) or sload-random (the I/O worst case: every
    /// 16M-gas transaction only reads random filler slots of one contract; needs
    /// --state-slots; use with --gas-limit 64000000 for 64M-gas blocks).
    #[arg(long, default_value = "mix")]
    workload: StressWorkload,
    /// Add this many cold filler accounts (EOAs) to the genesis state. With a filler the
    /// genesis JSON keeps only the small allocation: importing the chain needs
    /// stress.state.json beside it (ethrex's import-bench reads it; readers of the genesis
    /// alone, and the blockchain_test checkers, cannot import it, so no
    /// stress.blockchain_test.json is written). The state is built in a temporary
    /// RocksDB directory ($TMPDIR), about 0.45 GB per million filler accounts and slots
    /// (10 GB and 3 minutes for 2M accounts and 20M slots on 2 cores).
    #[arg(long, default_value_t = 0)]
    state_accounts: u64,
    /// Add this many filler storage slots to the genesis state, spread over the tokens
    /// and the cold-read contract (mix) or all in the sload-random contract.
    #[arg(long, default_value_t = 0)]
    state_slots: u64,
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
        workload: a.workload,
        state_accounts: a.state_accounts,
        state_slots: a.state_slots,
    })?;
    Ok(ExitCode::SUCCESS)
}
