//! The mainnet-shaped transaction source: the bench's stress fixture workload.
//!
//! `Workload::genesis_alloc` funds the senders and pre-deploys the contracts (tokens,
//! AMM pools, an NFT, a CREATE/CREATE2 factory, a storage writer, a keccak burner and an
//! EIP-7702 delegation target) with their initial storage; `Workload::next_block` returns
//! the signed transactions of one block, valid in order on top of the previous ones:
//! nonces (including the bumps EIP-7702 authorizations make) are tracked here, balances
//! are large enough never to run out, every gas limit is an upper estimate for the fork
//! (see `gas.rs`), and the gas limits of a block add up to less than its gas limit.
//!
//! Same seed (and same calls) => byte-identical transactions: all randomness comes from
//! ChaCha8 streams seeded per block from the seed, keys and addresses are keccak-derived
//! from it, nothing iterates a hash map, and ECDSA signatures are RFC 6979.
//!
//! With a state filler (`ethrex_state_filler`, `WorkloadConfig::filler`) part of
//! the traffic goes to the filler's cold accounts and slots (`mix::COLD_RECIPIENT_PCT`,
//! `mix::COLD_READ_PCT`), and `WorkloadKind::SloadRandom` replaces the mix with the I/O
//! worst case; without one, the transactions are exactly those of the plain mix.
//!
//! Modules: `zipf` (popularity sampler), `accounts` (senders, nonces), `contracts`
//! (bytecode, addresses, storage layouts, calldata), `gas` (gas limits), `mix` (the
//! transaction builders); keys, derivations and signing are `crate::keys`, and the
//! EIP-2935/4788/7002/7251 predeploys come from `crate::genesis::with_system_contracts`.

mod accounts;
pub(crate) mod contracts;
mod gas;
mod mix;
mod zipf;

#[cfg(test)]
mod tests;

use crate::keys::{derive, derive_address};
pub(crate) use ethrex_state_filler::StateFiller;
pub(crate) use zipf::Zipf;

use accounts::Sender;
use alloy_primitives::{Address, Bytes, U256};
use contracts::Addresses;
use ethrex_blockchain::genesis::GenesisAccount;
use ethrex_common::{Fork, Transaction};
use gas::Costs;
use rayon::prelude::*;
use std::collections::BTreeMap;

/// The contract the sload-random transactions call (it holds the filler's slots).
pub fn sload_random_contract() -> Address {
    Addresses::new().sload_random
}

/// How many filler slots one sload-random transaction reads under `fork`.
pub fn sload_random_reads_per_tx(fork: Fork) -> u64 {
    Workload::sload_reads_for(&Costs::for_fork(fork), SLOAD_RANDOM_TX_GAS)
}

/// The gas an sload-random transaction with calldata `input` making `reads` reads uses
/// under `fork`, counted opcode by opcode.
pub fn sload_random_gas_used(fork: Fork, input: &[u8], reads: u64) -> u64 {
    let calldata: u64 = input.iter().map(|b| if *b == 0 { 4 } else { 16 }).sum();
    Costs::for_fork(fork).call_intrinsic
        + calldata
        + contracts::SLOAD_RANDOM_SETUP_GAS
        + reads * contracts::SLOAD_RANDOM_GAS_PER_READ
}

/// What the blocks do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkloadKind {
    /// The mainnet-shaped mix (`mix.rs`); with a state filler, part of it goes to the
    /// filler's cold accounts and slots (`mix::COLD_RECIPIENT_PCT`, `mix::COLD_READ_PCT`).
    Mix,
    /// The I/O worst case: every transaction only reads random filler slots of one
    /// contract (`contracts::SLOAD_RANDOM_RUNTIME`), `SLOAD_RANDOM_TX_GAS` each, until
    /// the block is full. Needs a filler with slots.
    SloadRandom,
}

/// Gas limit of a SloadRandom transaction: 16M, as in the study "Block-level access
/// lists and parallel I/O" (under EIP-7825's 2^24 cap).
pub const SLOAD_RANDOM_TX_GAS: u64 = 16_000_000;

/// The contracts holding the filler's slots for a workload kind, in the filler's order:
/// the tokens (filler accounts then hold balances that transfers to them rewrite) and
/// the SloadRandom contract for the mix, the SloadRandom contract alone for the worst case.
pub fn filler_contracts(kind: WorkloadKind) -> Vec<Address> {
    let addrs = Addresses::new();
    match kind {
        WorkloadKind::Mix => addrs.tokens.iter().copied().chain([addrs.sload_random]).collect(),
        WorkloadKind::SloadRandom => vec![addrs.sload_random],
    }
}

/// What a `Workload` generates.
#[derive(Debug, Clone)]
pub struct WorkloadConfig {
    /// Seed of every key, address and random choice: same seed, same transactions.
    pub seed: u64,
    /// The fork the transactions are valid under (gas estimates, transaction types).
    pub fork: Fork,
    /// Chain id the transactions are signed for.
    pub chain_id: u64,
    /// Block gas limit the blocks are built with.
    pub gas_limit: u64,
    /// Fewest transactions per block: the count is drawn uniformly from [min_txs, max_txs].
    pub min_txs: usize,
    /// Most transactions per block.
    pub max_txs: usize,
    /// What the blocks do.
    pub kind: WorkloadKind,
    /// The cold state under the genesis, if any (its contracts from `filler_contracts`).
    pub filler: Option<StateFiller>,
}

/// Funded senders (keys known). Mainnet-like: most traffic from a long tail, some from a
/// few hot accounts (see `Workload::pick_sender`).
pub(crate) const SENDERS: usize = 4096;
/// Token holders without keys: the usual recipients of transfers.
pub(crate) const HOLDERS: usize = 12288;
/// 1M ether per sender: no sender can run out over a fixture's length.
const SENDER_ETH: u128 = 1_000_000 * ETHER;
const HOLDER_ETH: u128 = ETHER;
const ETHER: u128 = 1_000_000_000_000_000_000;
/// Each sender's balance of each token (18 decimals): transfers move at most 100 tokens.
const SENDER_TOKENS: u128 = 1_000_000_000_000 * ETHER;
/// Each side of each pool at genesis.
const POOL_RESERVE: u128 = 1_000_000_000 * ETHER;
/// Blob transactions per block carry at most this many blobs together.
pub(crate) const MAX_BLOBS_PER_BLOCK: usize = 6;

/// The mainnet-shaped transaction source: funded senders and pre-deployed contracts
/// (`genesis_alloc`), then the signed transactions of each block (`next_block`).
pub struct Workload {
    config: WorkloadConfig,
    costs: Costs,
    profile: mix::Profile,
    addrs: Addresses,
    senders: Vec<Sender>,
    holders: Vec<Address>,
    /// Hot-sender ranks (over `senders`).
    sender_pop: Zipf,
    token_pop: Zipf,
    holder_pop: Zipf,
    pool_pop: Zipf,
    /// Sender indices delegated by EIP-7702, in the order they were first delegated.
    delegated: Vec<usize>,
    /// Counters for values that must never repeat (fresh addresses, CREATE2 salts, fresh
    /// writer slots, blob hashes).
    fresh_addresses: u64,
    salts: u64,
    writer_cursor: u64,
    blob_hashes: u64,
    /// Kind of each transaction of the last block (diagnostics).
    last_kinds: Vec<&'static str>,
}

impl Workload {
    /// The workload `config` describes. Panics on an empty or inverted transaction count
    /// range, a filler whose contracts are not `filler_contracts(kind)`, or sload-random
    /// without filler slots.
    pub fn new(config: WorkloadConfig) -> Self {
        assert!(config.min_txs <= config.max_txs && config.max_txs > 0, "bad tx count range");
        if let Some(filler) = &config.filler {
            assert_eq!(filler.contracts, filler_contracts(config.kind), "filler contracts");
        }
        assert!(
            config.kind == WorkloadKind::Mix
                || config.filler.as_ref().is_some_and(|f| f.slots_of(0) > 0),
            "the sload-random workload needs filler slots"
        );
        let seed = config.seed;
        let senders: Vec<Sender> =
            (0..SENDERS as u64).into_par_iter().map(|i| Sender::derive(seed, i)).collect();
        let holders =
            (0..HOLDERS as u64).map(|i| derive_address(seed, "import-bench/holder", i)).collect();
        Self {
            costs: Costs::for_fork(config.fork),
            profile: mix::Profile::for_fork(config.fork),
            addrs: Addresses::new(),
            senders,
            holders,
            sender_pop: Zipf::new(SENDERS, 1.0),
            token_pop: Zipf::new(contracts::TOKENS, 1.0),
            holder_pop: Zipf::new(HOLDERS, 1.0),
            pool_pop: Zipf::new(contracts::POOL_PAIRS.len(), 1.0),
            delegated: Vec::new(),
            fresh_addresses: 0,
            salts: 0,
            writer_cursor: contracts::WRITER_FRESH_BASE,
            blob_hashes: 0,
            last_kinds: Vec::new(),
            config,
        }
    }

    /// Where the workload's contracts live.
    #[cfg(test)]
    pub(crate) fn addresses(&self) -> &Addresses {
        &self.addrs
    }

    /// The kind of each transaction `next_block` returned last ("erc20", "swap", ...).
    #[cfg(test)]
    pub(crate) fn last_block_kinds(&self) -> &[&'static str] {
        &self.last_kinds
    }

    /// Funded EOAs and pre-deployed contracts with their initial storage. The system
    /// contracts are not included (see `system_contracts()`).
    pub fn genesis_alloc(&self) -> BTreeMap<Address, GenesisAccount> {
        use contracts::*;
        let mut alloc = BTreeMap::new();
        for s in &self.senders {
            alloc.insert(
                s.address,
                GenesisAccount { balance: U256::from(SENDER_ETH), ..Default::default() },
            );
        }
        for h in &self.holders {
            alloc.insert(
                *h,
                GenesisAccount { balance: U256::from(HOLDER_ETH), ..Default::default() },
            );
        }
        let contract = |code: &Bytes, storage: BTreeMap<U256, U256>| GenesisAccount {
            nonce: 1,
            balance: U256::ZERO,
            code: code.clone(),
            storage,
        };

        alloc.insert(
            self.addrs.destructor,
            GenesisAccount {
                balance: U256::from(ETHER),
                ..contract(&Bytes::from_static(&SELFDESTRUCT_TO_CALLER), BTreeMap::new())
            },
        );
        for (t, token) in self.addrs.tokens.iter().enumerate() {
            let mut storage = BTreeMap::new();
            let mut supply = U256::ZERO;
            let mut credit = |storage: &mut BTreeMap<U256, U256>, holder: Address, amount: U256| {
                storage.insert(token_balance_slot(holder), amount);
                supply += amount;
            };
            for s in &self.senders {
                credit(&mut storage, s.address, U256::from(SENDER_TOKENS));
            }
            for (i, h) in self.holders.iter().enumerate() {
                // 1 .. 1M tokens, varying by holder and token.
                let r = derive(
                    self.config.seed,
                    "import-bench/holder-balance",
                    (i * TOKENS + t) as u64,
                );
                let units = u64::from_le_bytes(r[..8].try_into().unwrap()) % 1_000_000 + 1;
                credit(&mut storage, *h, U256::from(units) * U256::from(ETHER));
            }
            let router = self.addrs.router;
            let mut in_a_pool = false;
            for (p, &(t0, t1)) in POOL_PAIRS.iter().enumerate() {
                if t0 == t || t1 == t {
                    in_a_pool = true;
                    let pool = self.addrs.pools[p];
                    credit(&mut storage, pool, U256::from(POOL_RESERVE));
                    // Infinite approvals (never decremented by transferFrom) for swaps.
                    for s in &self.senders {
                        storage.insert(token_allowance_slot(s.address, pool), U256::MAX);
                    }
                    storage.insert(token_allowance_slot(router, pool), U256::MAX);
                }
            }
            if in_a_pool {
                for s in &self.senders {
                    storage.insert(token_allowance_slot(s.address, router), U256::MAX);
                }
                credit(&mut storage, router, U256::from(1));
            }
            storage.insert(U256::from(TOKEN_TOTAL_SUPPLY_SLOT), supply);
            alloc.insert(*token, contract(&TOKEN_RUNTIME, storage));
        }
        for (p, &(t0, t1)) in POOL_PAIRS.iter().enumerate() {
            let storage = BTreeMap::from([
                (U256::from(POOL_TOKEN0_SLOT), self.addrs.tokens[t0].into_word().into()),
                (U256::from(POOL_TOKEN1_SLOT), self.addrs.tokens[t1].into_word().into()),
                (U256::from(POOL_RESERVE0_SLOT), U256::from(POOL_RESERVE)),
                (U256::from(POOL_RESERVE1_SLOT), U256::from(POOL_RESERVE)),
            ]);
            alloc.insert(self.addrs.pools[p], contract(&POOL_RUNTIME, storage));
        }
        alloc.insert(self.addrs.router, contract(&ROUTER_RUNTIME, BTreeMap::new()));
        // Counters start non-zero so every later write is an update, as the gas
        // estimates assume.
        let nft = BTreeMap::from([(U256::from(NFT_TOTAL_MINTED_SLOT), U256::from(1))]);
        alloc.insert(self.addrs.nft, contract(&NFT_RUNTIME, nft));
        alloc.insert(
            self.addrs.factory,
            contract(&FACTORY_RUNTIME, BTreeMap::from([(U256::ZERO, U256::from(1))])),
        );
        let writer = (0..WRITER_PREFILLED).map(|i| (U256::from(i), U256::from(i + 1))).collect();
        alloc.insert(self.addrs.writer, contract(&WRITER_RUNTIME, writer));
        let last = U256::from_be_bytes(derive(self.config.seed, "import-bench/burner", 0).0);
        alloc.insert(
            self.addrs.burner,
            contract(&BURNER_RUNTIME, BTreeMap::from([(U256::from(BURNER_LAST_SLOT), last)])),
        );
        alloc.insert(self.addrs.delegate, contract(&DELEGATE_RUNTIME, BTreeMap::new()));
        if self.config.filler.is_some() {
            // Its storage is the filler's.
            alloc.insert(self.addrs.sload_random, contract(&SLOAD_RANDOM_RUNTIME, BTreeMap::new()));
        }
        alloc
    }

    /// Signed transactions for block `number`, given that block's base fee and blob base
    /// fee (wei). Must be called once per block, in order: it advances the nonces.
    pub fn next_block(
        &mut self,
        number: u64,
        base_fee: u64,
        blob_base_fee: u128,
    ) -> Vec<Transaction> {
        let planned = self.plan_block(number, base_fee, blob_base_fee);
        self.last_kinds = planned.iter().map(|p| p.kind).collect();
        let senders = &self.senders;
        planned.into_par_iter().map(|p| p.sign(senders)).collect()
    }
}
