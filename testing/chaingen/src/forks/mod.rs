//! A chain across every fork from Frontier to Amsterdam, built with the client's own
//! block builders: proof of work from genesis (difficulty per era, ommers, the DAO fork,
//! the London transition), the merge by total difficulty, then every timestamp fork, with
//! a reorg before the merge and one after it, each across a fork boundary.
//!
//! The blocks come out in import order, split into segments: a segment after the first
//! starts with the first block of a side branch, which becomes the head as its blocks
//! import (a client importing the segments in order follows them, as geth's `import`
//! does). geth importing the same files is the independent check: it recomputes every
//! root this generator wrote.

mod schedule;
mod txs;

pub use schedule::{Schedule, CHAIN_ID, TIME_FORKS};

use crate::keys::derive;
use alloy_primitives::{Address, Bytes, B256, B64, U256};
use ethrex_blockchain::consensus::dao::{DAO_EXTRA_DATA, DAO_EXTRA_RANGE};
use ethrex_blockchain::consensus::merge::after_merge;
use ethrex_blockchain::fork_choice::ForkChoiceError;
use ethrex_blockchain::genesis::{genesis_header, geth_alloc, open_genesis};
use ethrex_blockchain::system_contracts::system_contracts;
use ethrex_blockchain::{
    BlockError, Blockchain, Cores, ImportOptions, PayloadAttributes, PowAttributes,
};
use ethrex_common::{Block, ChainConfig, Fork, Header, Withdrawal};
use ethrex_storage::{Store, StoreError};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, HashMap, HashSet};
use txs::{BlockEnv, TxMix};

/// How the chain is made.
#[derive(Debug, Clone, Copy)]
pub struct ForksOptions {
    /// Seeds the schedule, the timestamps, the transactions and where ommers and reorgs
    /// go.
    pub seed: u64,
    /// Blocks after the last fork activates.
    pub tail: u64,
    /// Whether to reorg (once before the merge, once after).
    pub reorgs: bool,
}

/// Why the chain could not be made (a bug in the builder or the generator: every block
/// it makes must import).
#[derive(Debug, thiserror::Error)]
pub enum ForksError {
    /// Building or importing a block failed.
    #[error("block {number}: {source}")]
    Block {
        /// The block's number.
        number: u64,
        /// What failed.
        source: BlockError,
    },
    /// Moving the head back for a reorg failed.
    #[error("reorg: {0}")]
    Reorg(#[from] ForkChoiceError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The genesis did not build.
    #[error("genesis: {0}")]
    Genesis(BlockError),
}

/// A reorg the chain contains.
#[derive(Debug, Clone, Copy)]
pub struct Reorg {
    /// The last block both branches share.
    pub fork_point: u64,
    /// How many blocks the abandoned branch had past it.
    pub abandoned: u64,
}

/// The generated chain.
#[derive(Debug, Clone)]
pub struct ForksChain {
    /// The geth-style genesis (its configuration has every fork, the terminal total
    /// difficulty and the blob schedule).
    pub genesis: alloy_genesis::Genesis,
    /// The blocks in import order, split into segments (see the module docs).
    pub segments: Vec<Vec<Block>>,
    /// The head after importing every segment.
    pub head: Header,
    /// Where each fork activated: block forks by number, the merge at the first
    /// proof-of-stake block's number, timestamp forks by timestamp.
    pub activations: Vec<(Fork, u64)>,
    /// How many ommers the canonical and abandoned blocks carry.
    pub ommers: usize,
    /// The reorgs, in order.
    pub reorgs: Vec<Reorg>,
    /// Transactions in all blocks.
    pub transactions: usize,
}

/// Seconds between proof-of-stake blocks.
const SLOT: u64 = 12;
/// Proof-of-work block intervals to draw from: each side of the difficulty formulas'
/// steps (Frontier's 13 s, Homestead's 10 s, Byzantium's 9 s).
const POW_INTERVALS: [u64; 7] = [1, 5, 9, 10, 13, 20, 31];
/// The genesis gas limit (London doubles it).
const GENESIS_GAS_LIMIT: u64 = 8_000_000;
/// DAO drain-list accounts funded in the genesis (the fork moves their balance).
const DAO_FUNDED: usize = 3;

/// The generator's state while it builds.
struct Generator {
    rng: ChaCha8Rng,
    seed: u64,
    store: Store,
    chain: Blockchain,
    schedule: Schedule,
    mix: TxMix,
    /// Headers that may become ommers: siblings built beside canonical blocks, and the
    /// blocks a reorg abandoned.
    candidates: Vec<Header>,
    included: HashSet<B256>,
    segments: Vec<Vec<Block>>,
    ommers: usize,
    reorgs: Vec<Reorg>,
    transactions: usize,
    withdrawal_index: u64,
}

/// Builds the chain `options` describe.
pub fn generate(options: &ForksOptions) -> Result<ForksChain, ForksError> {
    let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
    let schedule = Schedule::plan(&mut rng);
    let mut genesis = genesis(&schedule, options.seed, &mut rng);
    let store = Store::in_memory();
    let alloc = geth_alloc(&genesis);
    open_genesis(&store, &alloc, |root| genesis_header(&genesis, root))
        .map_err(ForksError::Genesis)?;
    let chain = blockchain(&store, &genesis.config);
    let mut g = Generator {
        rng,
        seed: options.seed,
        store,
        chain,
        mix: TxMix::new(options.seed, CHAIN_ID),
        schedule,
        candidates: Vec::new(),
        included: HashSet::new(),
        segments: vec![Vec::new()],
        ommers: 0,
        reorgs: Vec::new(),
        transactions: 0,
        withdrawal_index: 0,
    };

    // Proof of work, with a reorg across the London fork block.
    let london = g.schedule.block_of(Fork::London).expect("London is scheduled");
    let mut reorged = !options.reorgs;
    while g.head()?.number < g.schedule.terminal_block {
        g.pow_block()?;
        if !reorged && g.head()?.number == london + 1 {
            g.reorg(2)?;
            reorged = true;
        }
    }
    // The merge: the terminal total difficulty falls within the last block's difficulty.
    let terminal = g.head()?;
    let terminal_td = g.store.total_difficulty(&terminal.hash_slow())?.unwrap_or_default();
    let terminal_td =
        terminal_td - U256::from(g.rng.random_range(0..terminal.difficulty.to::<u64>()));
    let first_pos_time = terminal.timestamp + SLOT;
    genesis.config = g.schedule.full_config(terminal_td, first_pos_time);
    g.chain = blockchain(&g.store, &genesis.config);

    // Proof of stake to Amsterdam and `tail` blocks past it, with a reorg across the
    // Amsterdam fork block.
    let last_slot = g.schedule.slots.iter().map(|(_, s)| *s).max().unwrap_or(0);
    let end = first_pos_time + (last_slot + options.tail) * SLOT;
    let amsterdam = genesis.config.amsterdam_time.expect("Amsterdam is scheduled");
    let mut reorged = !options.reorgs;
    loop {
        let head = g.head()?;
        if head.timestamp >= end {
            break;
        }
        g.pos_block(head.timestamp.max(first_pos_time - SLOT) + SLOT)?;
        if !reorged && g.head()?.timestamp == amsterdam + SLOT {
            g.reorg(2)?;
            reorged = true;
        }
    }

    let mut activations: Vec<(Fork, u64)> = g.schedule.blocks.clone();
    activations.push((Fork::Paris, g.schedule.terminal_block + 1));
    let config = ChainConfig::new(genesis.config.clone());
    activations.extend(TIME_FORKS.iter().filter_map(|f| Some((*f, config.activation(*f)?))));
    Ok(ForksChain {
        genesis,
        head: g.head()?,
        segments: g.segments,
        activations,
        ommers: g.ommers,
        reorgs: g.reorgs,
        transactions: g.transactions,
    })
}

/// The genesis: `schedule`'s proof-of-work configuration, the transactions' accounts,
/// the system contracts, a few funded DAO drain-list accounts.
fn genesis(schedule: &Schedule, seed: u64, rng: &mut ChaCha8Rng) -> alloy_genesis::Genesis {
    let mut alloc = txs::genesis_accounts(seed);
    alloc.extend(system_contracts());
    let drained = ethrex_vm::proof_of_work::dao_drain_list();
    for (i, address) in drained.iter().take(DAO_FUNDED).enumerate() {
        let account =
            alloc.entry(*address).or_insert_with(|| ethrex_blockchain::genesis::GenesisAccount {
                nonce: 0,
                balance: U256::ZERO,
                code: Bytes::new(),
                storage: BTreeMap::new(),
            });
        account.balance = U256::from(10u64.pow(18) + i as u64);
    }
    let alloc = alloc
        .into_iter()
        .map(|(address, a)| {
            let storage: BTreeMap<B256, B256> =
                a.storage.iter().map(|(k, v)| (B256::from(*k), B256::from(*v))).collect();
            let account = alloy_genesis::GenesisAccount::default()
                .with_nonce(Some(a.nonce))
                .with_balance(a.balance)
                .with_code((!a.code.is_empty()).then_some(a.code))
                .with_storage((!storage.is_empty()).then_some(storage));
            (address, account)
        })
        .collect();
    alloy_genesis::Genesis {
        config: schedule.pow_config(),
        nonce: rng.random(),
        timestamp: 0,
        extra_data: Bytes::from(
            derive(seed, "forks/genesis", 0)[..rng.random_range(0..=32)].to_vec(),
        ),
        gas_limit: GENESIS_GAS_LIMIT,
        difficulty: U256::from(0x20000u64),
        mix_hash: derive(seed, "forks/genesis-mix", 0),
        coinbase: Address::ZERO,
        alloc,
        ..Default::default()
    }
}

/// The chain on `store` under `config`, importing on one thread (the sequential path
/// checks every block the builders make).
fn blockchain(store: &Store, config: &alloy_genesis::ChainConfig) -> Blockchain {
    Blockchain::new(store.clone(), ChainConfig::new(config.clone()))
        .with_options(ImportOptions { cores: Cores::One, ..ImportOptions::default() })
}

impl Generator {
    fn head(&self) -> Result<Header, ForksError> {
        Ok(self.store.head_header()?.expect("the store holds the genesis"))
    }

    /// Imports a built block (it becomes the head) and records it in the current segment.
    fn import(&mut self, block: ethrex_common::BlockWithBal) -> Result<(), ForksError> {
        let number = block.block.header.number;
        self.chain
            .import_block(block.clone())
            .map_err(|source| ForksError::Block { number, source })?;
        self.transactions += block.block.body.transactions.len();
        self.ommers += block.block.body.ommers.len();
        self.segments.last_mut().expect("one segment at least").push(block.block);
        Ok(())
    }

    /// One proof-of-work block on the head: sometimes a sibling beside it first (an
    /// ommer for a later block), up to two ommers, a few transactions.
    fn pow_block(&mut self) -> Result<(), ForksError> {
        let parent = self.head()?;
        let number = parent.number + 1;
        let timestamp =
            parent.timestamp + POW_INTERVALS[self.rng.random_range(0..POW_INTERVALS.len())];
        let config = self.chain.config.clone();
        let fork = config.fork_at(number, timestamp);
        let gas_limit = self.gas_limit(&config, &parent, number);
        let extra_data = self.extra_data(number);
        let seed = self.seed;
        let attributes =
            |beneficiary: Address, timestamp: u64, ommers: Vec<Header>| PowAttributes {
                timestamp,
                beneficiary,
                gas_limit,
                extra_data: extra_data.clone(),
                ommers,
                nonce: B64::from(number.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
                mix_hash: derive(seed, "forks/mix", number),
            };
        if self.rng.random_bool(0.4) {
            let sibling = attributes(
                crate::keys::derive_address(seed, "forks/ommer-miner", number),
                timestamp + self.rng.random_range(0..3),
                vec![],
            );
            let block = self
                .chain
                .build_pow_block(&sibling, vec![])
                .map_err(|source| ForksError::Block { number, source })?;
            self.candidates.push(block.block.header);
        }
        let ommers = self.pick_ommers(number)?;
        let base_fee =
            ethrex_blockchain::consensus::london::expected_base_fee(&config, number, &parent)
                .map_err(|e| ForksError::Block { number, source: e.into() })?;
        let env = BlockEnv { fork, base_fee, blobs: None, gas_limit };
        let store = self.store.clone();
        let txs = self.mix.block(&mut self.rng, &env, |a| {
            store.account(&a).ok().flatten().map_or(0, |acc| acc.nonce)
        });
        let miner = crate::keys::derive_address(self.seed, "forks/miner", number % 3);
        let block = self
            .chain
            .build_pow_block(&attributes(miner, timestamp, ommers), txs)
            .map_err(|source| ForksError::Block { number, source })?;
        self.import(block)
    }

    /// Up to two candidates that are valid ommers for block `number` on the current
    /// chain: at most six generations back, their parent canonical, not canonical
    /// themselves, never included before.
    fn pick_ommers(&mut self, number: u64) -> Result<Vec<Header>, ForksError> {
        let mut picked = Vec::new();
        for candidate in &self.candidates {
            let hash = candidate.hash_slow();
            let in_range = candidate.number + 6 >= number && candidate.number < number;
            if picked.len() == 2 || !in_range || self.included.contains(&hash) {
                continue;
            }
            let parent_canonical =
                self.store.canonical_hash(candidate.number - 1)? == Some(candidate.parent_hash);
            let canonical = self.store.canonical_hash(candidate.number)? == Some(hash);
            if parent_canonical && !canonical && self.rng.random_bool(0.7) {
                picked.push(candidate.clone());
            }
        }
        for ommer in &picked {
            self.included.insert(ommer.hash_slow());
        }
        Ok(picked)
    }

    /// One proof-of-stake block at `timestamp`.
    fn pos_block(&mut self, timestamp: u64) -> Result<(), ForksError> {
        let parent = self.head()?;
        let number = parent.number + 1;
        let config = self.chain.config.clone();
        let parent_td = self.store.total_difficulty(&parent.hash_slow())?.unwrap_or_default();
        debug_assert!(after_merge(&config, &parent, parent_td));
        let fork = config.pos_fork_at(timestamp);
        let blobs = config.blob_params_at(timestamp).and_then(|p| {
            let excess = config.next_excess_blob_gas(&parent, timestamp)?;
            Some((
                p.calc_blob_fee(excess),
                p.max_blob_gas_per_block() / alloy_eips::eip4844::DATA_GAS_PER_BLOB,
            ))
        });
        let gas_limit = self.gas_limit(&config, &parent, number);
        let env = BlockEnv {
            fork,
            base_fee: parent.next_block_base_fee(alloy_eips::eip1559::BaseFeeParams::ethereum()),
            blobs,
            gas_limit,
        };
        let store = self.store.clone();
        let txs = self.mix.block(&mut self.rng, &env, |a| {
            store.account(&a).ok().flatten().map_or(0, |acc| acc.nonce)
        });
        let withdrawals = (0..self.rng.random_range(0..=3u64))
            .map(|i| {
                self.withdrawal_index += 1;
                Withdrawal {
                    index: self.withdrawal_index,
                    validator_index: i,
                    address: if i == 0 {
                        txs::STORAGE
                    } else {
                        crate::keys::derive_address(self.seed, "forks/validator", i)
                    },
                    amount: self.rng.random_range(1..1_000_000),
                }
            })
            .collect();
        let attributes = PayloadAttributes {
            timestamp,
            fee_recipient: crate::keys::derive_address(self.seed, "forks/proposer", number % 4),
            prev_randao: derive(self.seed, "forks/randao", self.rng.random()),
            gas_limit,
            withdrawals,
            parent_beacon_block_root: derive(self.seed, "forks/beacon", number),
            slot_number: timestamp / SLOT,
            extra_data: self.extra_data(number),
        };
        let block = self
            .chain
            .build_payload(&attributes, txs)
            .map_err(|source| ForksError::Block { number, source })?;
        self.import(block.block)
    }

    /// The head's last `depth` blocks abandoned: the head moves back to their parent and
    /// a new segment starts there (the next blocks built form the side branch, one
    /// longer). Abandoned proof-of-work blocks become ommer candidates.
    fn reorg(&mut self, depth: u64) -> Result<(), ForksError> {
        let head = self.head()?;
        let fork_point = head.number - depth;
        let hash = self.store.canonical_hash(fork_point)?.expect("canonical ancestors are stored");
        for number in fork_point + 1..=head.number {
            let abandoned = self.store.canonical_hash(number)?.expect("canonical");
            let header = self.store.header(&abandoned)?.expect("stored");
            if !header.difficulty.is_zero() {
                self.candidates.push(header);
            }
        }
        self.chain.set_head(hash, &HashMap::new())?;
        self.reorgs.push(Reorg { fork_point, abandoned: depth });
        self.segments.push(Vec::new());
        Ok(())
    }

    /// The gas limit: twice the parent's at London's fork block (the elasticity
    /// multiplier), else the parent's moved by a random step within the bound.
    fn gas_limit(&mut self, config: &ChainConfig, parent: &Header, number: u64) -> u64 {
        use ethrex_blockchain::consensus::london::is_london;
        let base = if is_london(config, number) && !is_london(config, parent.number) {
            parent.gas_limit * 2
        } else {
            parent.gas_limit
        };
        let step = base / 1024 - 1;
        let up = self.rng.random_bool(0.5);
        let by = self.rng.random_range(0..=step / 4);
        if up {
            base + by
        } else {
            base - by
        }
    }

    /// The extra data: `dao-hard-fork` where the DAO fork requires it, else up to 32
    /// random bytes.
    fn extra_data(&mut self, number: u64) -> Bytes {
        let dao = self.schedule.block_of(Fork::Dao).expect("the DAO fork is scheduled");
        if (dao..dao + DAO_EXTRA_RANGE).contains(&number) {
            return Bytes::from_static(DAO_EXTRA_DATA);
        }
        let len = self.rng.random_range(0..=32);
        Bytes::from(derive(self.seed, "forks/extra", number)[..len].to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_consensus::Transaction as _;
    use alloy_consensus::Typed2718 as _;

    #[test]
    fn a_fork_chain_crosses_every_fork_with_ommers_reorgs_and_every_transaction_type() {
        let chain = generate(&ForksOptions { seed: 7, tail: 3, reorgs: true }).unwrap();
        let activated: Vec<Fork> = chain.activations.iter().map(|(f, _)| *f).collect();
        for fork in Fork::ALL {
            // Frontier is the genesis' own; Petersburg shares Constantinople's block; the
            // schedule stops at BPO2 before Amsterdam.
            let skipped = matches!(
                fork,
                Fork::Frontier | Fork::Petersburg | Fork::Bpo3 | Fork::Bpo4 | Fork::Bpo5
            );
            assert!(skipped || activated.contains(&fork), "{fork:?} never activates");
        }
        assert_eq!(chain.reorgs.len(), 2);
        assert_eq!(chain.segments.len(), 3);
        assert!(chain.ommers > 0);
        let mut types = std::collections::BTreeSet::new();
        let mut pre_eip155 = 0;
        for block in chain.segments.iter().flatten() {
            for tx in &block.body.transactions {
                types.insert(tx.ty());
                pre_eip155 += usize::from(tx.chain_id().is_none());
            }
        }
        assert_eq!(types.into_iter().collect::<Vec<u8>>(), [0, 1, 2, 3, 4]);
        assert!(pre_eip155 > 0);
        let last = chain.segments.last().and_then(|s| s.last()).unwrap();
        assert_eq!(chain.head.hash_slow(), last.header.hash_slow());
    }

    #[test]
    fn a_fork_chain_imports_segment_by_segment_into_a_fresh_chain_to_the_same_head() {
        let chain = generate(&ForksOptions { seed: 11, tail: 2, reorgs: true }).unwrap();
        let store = Store::in_memory();
        let alloc = geth_alloc(&chain.genesis);
        open_genesis(&store, &alloc, |root| genesis_header(&chain.genesis, root)).unwrap();
        let fresh = blockchain(&store, &chain.genesis.config);
        for block in chain.segments.iter().flatten() {
            let parent = block.header.parent_hash;
            if store.head().unwrap() != Some(parent) {
                fresh.set_head(parent, &HashMap::new()).unwrap();
            }
            let block = ethrex_common::BlockWithBal { block: block.clone(), bal: None };
            fresh.import_block(block).unwrap();
        }
        assert_eq!(store.head().unwrap(), Some(chain.head.hash_slow()));
    }
}
