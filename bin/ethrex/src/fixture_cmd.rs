//! `ethrex fixture stress` and `ethrex fixture forks`.

use clap::{Args, Subcommand};
use ethrex_common::Fork;
use ethrex_import_bench::generate::{generate, StressOptions, StressWorkload};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Subcommand)]
pub(crate) enum FixtureCommand {
    /// Generate a mainnet-shaped stress chain with the client's own block builder.
    Stress(StressArgs),
    /// Generate a chain across every fork from Frontier to Amsterdam (proof of work with
    /// ommers and the DAO fork, the merge by total difficulty, every timestamp fork, a
    /// reorg on each side of the merge) with the client's own block builders.
    Forks(ForksArgs),
}

#[derive(Args)]
pub(crate) struct ForksArgs {
    /// Output directory: forks.genesis.json (geth's format), forks.1.rlp .. forks.N.rlp
    /// (the segments, to import in order: each after the first starts a side branch
    /// that becomes the head) and forks.json (the head, activations, counts).
    #[arg(long)]
    out: PathBuf,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Blocks after Amsterdam activates (at least 2: the reorg after the merge needs them).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(2..))]
    tail: u64,
    /// No reorgs: one segment.
    #[arg(long)]
    no_reorgs: bool,
}

fn run_forks(a: ForksArgs) -> anyhow::Result<ExitCode> {
    use anyhow::Context;
    use ethrex_chaingen::forks::{generate, ForksOptions};
    let chain = generate(&ForksOptions { seed: a.seed, tail: a.tail, reorgs: !a.no_reorgs })?;
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    // Stale segments of an earlier, longer run would be imported after these.
    for entry in std::fs::read_dir(&a.out)? {
        let name = entry?.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("forks.") && name.ends_with(".rlp") {
            std::fs::remove_file(a.out.join(&*name))?;
        }
    }
    let mut files = Vec::new();
    for (i, segment) in chain.segments.iter().enumerate() {
        let name = format!("forks.{}.rlp", i + 1);
        let blocks: Vec<_> = segment
            .iter()
            .map(|b| ethrex_common::BlockWithBal { block: b.clone(), bal: None })
            .collect();
        ethrex_blockchain::chain_file::write_blocks(&a.out.join(&name), &blocks)?;
        files.push(serde_json::json!({
            "file": name,
            "first": segment.first().map(|b| b.header.number),
            "last": segment.last().map(|b| b.header.number),
        }));
    }
    std::fs::write(
        a.out.join("forks.genesis.json"),
        serde_json::to_string_pretty(&chain.genesis)?,
    )?;
    let head = &chain.head;
    let summary = serde_json::json!({
        "seed": a.seed,
        "head": { "number": head.number, "hash": head.hash_slow(), "stateRoot": head.state_root },
        "segments": files,
        "activations": chain.activations.iter().map(|(f, at)| (f.name(), at)).collect::<Vec<_>>(),
        "ommers": chain.ommers,
        "reorgs": chain.reorgs.iter().map(|r| serde_json::json!({
            "forkPoint": r.fork_point, "abandoned": r.abandoned })).collect::<Vec<_>>(),
        "transactions": chain.transactions,
    });
    std::fs::write(a.out.join("forks.json"), serde_json::to_string_pretty(&summary)?)?;
    eprintln!(
        "fork chain seed {}: head block {} {} (state root {}); {} segments, {} transactions, \
         {} ommers, {} reorgs -> {}",
        a.seed,
        head.number,
        head.hash_slow(),
        head.state_root,
        chain.segments.len(),
        chain.transactions,
        chain.ommers,
        chain.reorgs.len(),
        a.out.display()
    );
    Ok(ExitCode::SUCCESS)
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
    let a = match cmd {
        FixtureCommand::Stress(a) => a,
        FixtureCommand::Forks(a) => return run_forks(a),
    };
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
