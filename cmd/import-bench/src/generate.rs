//! `ethrex fixture stress`: generates a mainnet-shaped chain with the client's own block
//! builder (the executor the node uses) and writes it in every format the bench and the
//! independent checkers read, and optionally mutated blocks derived from it (`mutate`).
//!
//! With `state_accounts` / `state_slots`, the chain runs on a mainnet-sized cold state
//! (`ethrex_state_filler`): the genesis file keeps the small allocation, and
//! `stress.state.json` beside it says which filler to add (`init_genesis_filled`).
//!
//! The transactions come from the chain generator's mainnet-shaped source
//! (`ethrex_chaingen::mainnet`), and the blocks are built by its core
//! (`ethrex_chaingen::ChainBuilder`); this module picks the chain's parameters (genesis,
//! attributes, withdrawals) and writes the files.

use crate::ef_fixture::blockchain_test_json;
use alloy_eips::eip1559::BaseFeeParams;
use alloy_primitives::{keccak256, Address, B256, U256};
use anyhow::Context;
use ethrex_blockchain::chain_file::{write_bals, write_blocks};
use ethrex_blockchain::genesis::{genesis_header, GenesisAccount};
use ethrex_blockchain::{Blockchain, Cores, ImportOptions, PayloadAttributes};
use ethrex_chaingen::genesis::with_system_contracts;
use ethrex_chaingen::mainnet::{filler_contracts, Workload, WorkloadConfig, WorkloadKind};
use ethrex_chaingen::ChainBuilder;
use ethrex_common::{Block, BlockBody, BlockWithBal, ChainConfig, Fork, Withdrawal};
use ethrex_state_filler::{init_genesis_filled, StateFiller};
use ethrex_storage::Store;
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Chain id 1: `revme btest` runs every fixture with chain id 1.
pub(crate) const STRESS_CHAIN_ID: u64 = 1;
/// A low base fee keeps blob pricing on the plain EIP-4844 curve (EIP-7918's reserve
/// price only applies above 16x the blob base fee), so excess blob gas stays constant.
pub(crate) const GENESIS_BASE_FEE: u64 = 7;
const SECONDS_PER_SLOT: u64 = 12;
const WITHDRAWALS_PER_BLOCK: u64 = 4;

/// What `ethrex fixture stress` generates.
#[derive(Debug, Clone)]
pub struct StressOptions {
    /// Output directory, created if missing; the files written are named `stress.*`.
    pub out: PathBuf,
    /// Number of blocks after genesis.
    pub blocks: u64,
    /// Gas limit of every block, including genesis.
    pub gas_limit: u64,
    /// Fewest transactions per block (inclusive).
    pub min_txs: usize,
    /// Most transactions per block (inclusive); at least `min_txs`.
    pub max_txs: usize,
    /// Workload seed: the same seed (and options) gives the same transactions.
    pub seed: u64,
    /// The fork every block runs under: `Osaka` or `Amsterdam` (with BALs).
    pub fork: Fork,
    /// How many mutated blocks to derive from the chain (`stress.mutations.json`, see
    /// `mutate`); 0 writes none. Not with a state filler.
    pub mutations: usize,
    /// What the blocks do.
    pub workload: StressWorkload,
    /// Filler accounts under the genesis (cold EOAs); 0 for none.
    pub state_accounts: u64,
    /// Filler storage slots under the genesis, spread over the workload's filler
    /// contracts; 0 for none.
    pub state_slots: u64,
}

impl StressOptions {
    /// The defaults of `ethrex fixture stress` (149 blocks of 200-500 transactions at
    /// 100M gas, seed 1, Amsterdam, the mix, no filler) writing to `out`.
    pub fn new(out: PathBuf) -> Self {
        Self {
            out,
            blocks: 149,
            gas_limit: 100_000_000,
            min_txs: 200,
            max_txs: 500,
            seed: 1,
            fork: Fork::Amsterdam,
            mutations: 0,
            workload: StressWorkload::Mix,
            state_accounts: 0,
            state_slots: 0,
        }
    }

    /// The state filler these options ask for (seeded by the workload seed), `None`
    /// without filler accounts or slots.
    pub fn filler(&self) -> Option<StateFiller> {
        (self.state_accounts > 0 || self.state_slots > 0).then(|| StateFiller {
            seed: self.seed,
            accounts: self.state_accounts,
            slots: self.state_slots,
            contracts: filler_contracts(self.workload.kind()),
        })
    }
}

/// What the stress chain's blocks do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StressWorkload {
    /// The mainnet-shaped transaction mix (with a filler, part of it cold).
    Mix,
    /// The I/O worst case: every transaction (16M gas) only reads random filler slots of
    /// one contract, about 7,000 each; needs `state_slots`.
    SloadRandom,
}

impl StressWorkload {
    fn kind(self) -> WorkloadKind {
        match self {
            StressWorkload::Mix => WorkloadKind::Mix,
            StressWorkload::SloadRandom => WorkloadKind::SloadRandom,
        }
    }
}

impl std::str::FromStr for StressWorkload {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "mix" => Ok(StressWorkload::Mix),
            "sload-random" => Ok(StressWorkload::SloadRandom),
            other => Err(format!("unknown workload '{other}' (expected mix or sload-random)")),
        }
    }
}

/// The state filler of a fixture: `<stem>.state.json` beside `<stem>.rlp`.
pub const STATE_FILE: &str = "stress.state.json";

/// The chain configuration the stress fixture runs under: every fork up to `fork` at
/// genesis, the standard blob schedule (Amsterdam with BPO2's parameters).
pub(crate) fn stress_config(fork: Fork) -> ChainConfig {
    use alloy_eips::eip7840::BlobParams;
    let mut config = ChainConfig::all_forks_at_genesis(STRESS_CHAIN_ID, fork);
    let schedule = &mut config.inner.blob_schedule;
    schedule.insert("cancun".into(), BlobParams::cancun());
    schedule.insert("prague".into(), BlobParams::prague());
    schedule.insert("osaka".into(), BlobParams::osaka());
    if fork >= Fork::Amsterdam {
        // glamsterdam-devnet-8 runs Amsterdam with the BPO2 blob parameters (target 14,
        // max 21), as the EF fixtures' and geth's Amsterdam configurations have it.
        schedule.insert("amsterdam".into(), BlobParams::bpo2());
    }
    config
}

/// A fresh in-memory store holding `genesis` (whose allocation is `alloc`), and the
/// genesis block.
pub(crate) fn genesis_in_memory(
    genesis: &alloy_genesis::Genesis,
    alloc: &BTreeMap<Address, GenesisAccount>,
) -> anyhow::Result<(Store, Block)> {
    Ok(ethrex_chaingen::genesis::in_memory(alloc, |root| genesis_header(genesis, root))?)
}

/// Builds the stress chain with the client's block builder, importing each block, and
/// writes `stress.rlp`, `stress.bal.rlp` (Amsterdam only; a stale one is removed
/// otherwise), `stress.genesis.json` and, without a state filler,
/// `stress.blockchain_test.json`, with one `stress.state.json` (each removing the other's
/// stale file) under `options.out`. Fails on an unsupported fork, `min_txs > max_txs`,
/// `max_txs == 0`, sload-random without filler slots, mutations with a filler, or any
/// build, import or write error.
pub fn generate(options: &StressOptions) -> anyhow::Result<()> {
    anyhow::ensure!(
        matches!(options.fork, Fork::Osaka | Fork::Amsterdam),
        "--fork must be osaka or amsterdam"
    );
    anyhow::ensure!(options.min_txs <= options.max_txs, "--min-txs must not exceed --max-txs");
    anyhow::ensure!(options.max_txs > 0, "--max-txs must be at least 1");
    let filler = options.filler();
    if options.workload == StressWorkload::SloadRandom {
        anyhow::ensure!(
            options.state_slots > 0,
            "--workload sload-random reads filler slots: give --state-slots (e.g. 20000000)"
        );
    }
    anyhow::ensure!(
        filler.is_none() || options.mutations == 0,
        "--mutations cannot be combined with --state-accounts/--state-slots: the mutated \
         blocks go into a blockchain_test, which cannot carry a state that is not in its JSON"
    );
    std::fs::create_dir_all(&options.out)
        .with_context(|| format!("creating {}", options.out.display()))?;
    let fork = options.fork;
    let config = stress_config(fork);
    let mut workload = Workload::new(WorkloadConfig {
        seed: options.seed,
        fork,
        chain_id: STRESS_CHAIN_ID,
        gas_limit: options.gas_limit,
        min_txs: options.min_txs,
        max_txs: options.max_txs,
        kind: options.workload.kind(),
        filler: filler.clone(),
    });
    let alloc: BTreeMap<Address, GenesisAccount> = with_system_contracts(workload.genesis_alloc());

    let genesis = alloy_genesis::Genesis {
        config: config.inner.clone(),
        nonce: 0,
        timestamp: 0,
        extra_data: Default::default(),
        gas_limit: options.gas_limit,
        difficulty: U256::ZERO,
        mix_hash: B256::ZERO,
        coinbase: Address::ZERO,
        alloc: alloc
            .iter()
            .map(|(a, acc)| {
                let storage = acc
                    .storage
                    .iter()
                    .map(|(k, v)| (B256::from(*k), B256::from(*v)))
                    .collect::<BTreeMap<_, _>>();
                let account = alloy_genesis::GenesisAccount::default()
                    .with_nonce(Some(acc.nonce))
                    .with_balance(acc.balance)
                    .with_code((!acc.code.is_empty()).then(|| acc.code.clone()))
                    .with_storage((!storage.is_empty()).then_some(storage));
                (*a, account)
            })
            .collect(),
        base_fee_per_gas: Some(GENESIS_BASE_FEE as u128),
        excess_blob_gas: Some(0),
        blob_gas_used: Some(0),
        number: Some(0),
        parent_hash: None,
        slot_number: None,
    };
    // A filled state is built on disk (RocksDB, in a temporary directory removed at the
    // end, after the store: declared first, dropped last); the plain genesis in memory,
    // as before.
    let state_dir = match &filler {
        Some(_) => Some(tempfile::Builder::new().prefix("ethrex-fixture-state-").tempdir()?),
        None => None,
    };
    let (store, genesis_block) = match (&filler, &state_dir) {
        (Some(filler), Some(dir)) => {
            let store = Store::open(ethrex_storage::DbKind::Rocksdb, Some(dir.path()))?;
            let started = std::time::Instant::now();
            eprintln!(
                "writing the filled genesis state ({} accounts, {} slots) to {}",
                filler.accounts,
                filler.slots,
                dir.path().display()
            );
            let header = init_genesis_filled(&store, &genesis, Some(filler))?;
            eprintln!("filled genesis state written in {:.1?}", started.elapsed());
            let body = BlockBody {
                transactions: vec![],
                ommers: vec![],
                withdrawals: Some(Default::default()),
            };
            (store, Block { header, body })
        }
        _ => genesis_in_memory(&genesis, &alloc)?,
    };
    // Built blocks are imported through the sequential path: it checks the builder's
    // output with nothing taken from the BAL.
    let builder = ChainBuilder::new(
        Blockchain::new(store.clone(), config.clone())
            .with_options(ImportOptions { cores: Cores::One, ..ImportOptions::default() }),
    );

    let progress = ProgressBar::new(options.blocks);
    progress.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} blocks ({eta})").unwrap(),
    );
    progress.set_message("building");
    let mut blocks: Vec<BlockWithBal> = Vec::with_capacity(options.blocks as usize);
    let mut withdrawal_index = 0u64;
    for number in 1..=options.blocks {
        let parent = store.head_header()?.context("store has no head")?;
        let timestamp = number * SECONDS_PER_SLOT;
        let base_fee =
            parent.next_block_base_fee(BaseFeeParams::ethereum()).unwrap_or(GENESIS_BASE_FEE);
        let blob_base_fee = match (
            config.blob_params_at(timestamp),
            config.next_excess_blob_gas(&parent, timestamp),
        ) {
            (Some(p), Some(excess)) => p.calc_blob_fee(excess),
            _ => 1,
        };
        let transactions = workload.next_block(number, base_fee, blob_base_fee);
        let withdrawals = (0..WITHDRAWALS_PER_BLOCK)
            .map(|i| {
                withdrawal_index += 1;
                Withdrawal {
                    index: withdrawal_index,
                    validator_index: 1000 + (number * 7 + i) % 500,
                    address: Address::from_word(keccak256(
                        [b"validator".as_slice(), &((number + i) % 64).to_be_bytes()].concat(),
                    )),
                    amount: 10_000_000 + number * 1000 + i,
                }
            })
            .collect();
        let attributes = PayloadAttributes {
            timestamp,
            fee_recipient: Address::from_word(keccak256(b"ethrex stress coinbase")),
            prev_randao: keccak256(number.to_be_bytes()),
            gas_limit: options.gas_limit,
            withdrawals,
            parent_beacon_block_root: keccak256(
                [b"beacon".as_slice(), &number.to_be_bytes()].concat(),
            ),
            slot_number: number,
            extra_data: Default::default(),
        };
        let block =
            builder.build(&attributes, transactions).with_context(|| format!("block {number}"))?;
        blocks.push(block);
        progress.inc(1);
    }
    progress.finish_and_clear();

    let out = &options.out;
    write_blocks(&out.join("stress.rlp"), &blocks)?;
    if fork >= Fork::Amsterdam {
        write_bals(&out.join("stress.bal.rlp"), &blocks)?;
    } else {
        let _ = std::fs::remove_file(out.join("stress.bal.rlp"));
    }
    std::fs::write(out.join("stress.genesis.json"), serde_json::to_string_pretty(&genesis)?)?;
    let test_path = out.join("stress.blockchain_test.json");
    if let Some(filler) = &filler {
        std::fs::write(out.join(STATE_FILE), serde_json::to_string_pretty(filler)?)?;
        // A stale test from an earlier run would not match this chain.
        let _ = std::fs::remove_file(&test_path);
        eprintln!(
            "note: no stress.blockchain_test.json: the independent checkers load the whole \
             pre-state from the test's JSON, and the filler's state is not in it; importing \
             needs {STATE_FILE} beside the chain"
        );
    } else {
        // A stale filler from an earlier run would make readers build the wrong genesis.
        let _ = std::fs::remove_file(out.join(STATE_FILE));
        let name = format!(
            "ethrex_stress_{}_seed{}_{}blocks",
            fork.name().to_lowercase(),
            options.seed,
            options.blocks
        );
        let test =
            blockchain_test_json(&name, fork, &config, &genesis_block, &alloc, &blocks, &store)?;
        std::fs::write(&test_path, serde_json::to_string(&test)?)?;
    }

    if options.mutations > 0 {
        let fixture =
            crate::bench::LoadedFixture { genesis, config, filler: None, blocks: blocks.clone() };
        let (outcomes, tests) =
            crate::mutate::mutations(&fixture, fork, options.mutations, options.seed)?;
        std::fs::write(out.join("stress.mutations.json"), serde_json::to_string(&tests)?)?;
        eprintln!(
            "wrote {} mutated blocks to {}, each rejected by this client and leaving no trace",
            outcomes.len(),
            out.join("stress.mutations.json").display()
        );
    }

    let gas: Vec<u64> = blocks.iter().map(|b| b.block.header.gas_used).collect();
    let txs: usize = blocks.iter().map(|b| b.block.body.transactions.len()).sum();
    let mut sorted = gas.clone();
    sorted.sort_unstable();
    eprintln!(
        "wrote {} blocks ({} transactions, median block gas {:.1}M) to {}",
        blocks.len(),
        txs,
        sorted.get(sorted.len() / 2).copied().unwrap_or_default() as f64 / 1e6,
        out.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests;
