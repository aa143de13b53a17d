//! The adversarial transaction source, for the differential tests: a genesis (`Scenario`)
//! with the system contracts and a handful of hand-assembled contracts (`asm`), a
//! deterministic random chain generator (`ChainGenerator`) keeping a `Model` of the state
//! the chain must end in, and store snapshots to compare the sequential and the
//! BAL-driven parallel import paths.

use crate::genesis::with_system_contracts;
use crate::keys::{key_from, sign_authorization};
use crate::ChainBuilder;
use alloy_consensus::{TxEip1559, TxEip2930, TxEip7702, TxLegacy};
use alloy_eips::eip2930::{AccessList, AccessListItem};
use alloy_eips::eip7702::{Authorization, SignedAuthorization};
use alloy_primitives::{keccak256, Address, Bytes, TxKind, B256, U256};
use alloy_signer_local::PrivateKeySigner;
use ethrex_blockchain::genesis::{
    alloc_state_root, genesis_header_at, init_genesis, GenesisAccount,
};
use ethrex_blockchain::{Blockchain, Cores, ImportOptions, PayloadAttributes, Prefetch, Threshold};
use ethrex_common::{
    BlockWithBal, ChainConfig, Fork, Header, Transaction, Withdrawal, KECCAK_EMPTY,
};
use ethrex_storage::Store;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::sync::OnceLock;

mod asm;
mod snapshot;

/// Chain id of the scenario.
pub const CHAIN_ID: u64 = 1337;
/// Gas limit of every block.
pub const GAS_LIMIT: u64 = 60_000_000;
/// Seconds between blocks.
pub const BLOCK_TIME: u64 = 12;

// Gas limits generous enough for Amsterdam's state gas (EIP-8037: a new account costs
// 120 * 1530 state gas, a fresh storage slot 64 * 1530); unused gas is refunded.
/// Gas limit of a transfer.
pub const TRANSFER_GAS: u64 = 300_000;
/// Gas limit of a contract call.
pub const CALL_GAS: u64 = 1_000_000;
/// Gas limit of a creation.
pub const CREATE_GAS: u64 = 2_000_000;

// ------------------------------------------------------------------------------------
// System contracts: the genesis accounts the client itself uses (from `alloy-eips`).
// ------------------------------------------------------------------------------------

pub use alloy_eips::eip2935::HISTORY_STORAGE_ADDRESS as HISTORY_STORAGE;
pub use alloy_eips::eip4788::BEACON_ROOTS_ADDRESS as BEACON_ROOTS;

pub use asm::{initcode, op, Asm};

/// storage[calldata word 0] += 1 (slot 0 without calldata). Also the code EOAs delegate to.
pub fn counter_runtime() -> Bytes {
    use op::*;
    Asm::new()
        .ops(&[PUSH0, CALLDATALOAD]) // slot = calldata[0..32]
        .ops(&[DUP1, SLOAD]) // [value, slot]
        .push(1)
        .ops(&[ADD]) // [value + 1, slot]
        .ops(&[SWAP1, SSTORE]) // storage[slot] = value + 1
        .ops(&[STOP])
        .build()
}

/// Forwards the whole call value to the address in calldata word 0, then logs that
/// address's balance (a balance read whose result lands in the receipt).
pub fn forwarder_runtime() -> Bytes {
    use op::*;
    Asm::new()
        .ops(&[PUSH0, PUSH0, PUSH0, PUSH0]) // retSize, retOffset, argsSize, argsOffset
        .ops(&[CALLVALUE]) // value = msg.value
        .ops(&[PUSH0, CALLDATALOAD]) // to = calldata[0..32]
        .ops(&[GAS, CALL, POP]) // call; ignore success (a failed call keeps the value here)
        .ops(&[PUSH0, CALLDATALOAD, BALANCE]) // balance(to)
        .ops(&[PUSH0, PUSH0, LOG1]) // log1(topic = balance), no data
        .ops(&[STOP])
        .build()
}

/// Writes two slots, then reverts: the writes become reads in the BAL.
pub fn reverter_runtime() -> Bytes {
    use op::*;
    Asm::new()
        .ops(&[NUMBER])
        .push(1)
        .ops(&[SSTORE]) // storage[1] = block.number
        .ops(&[CALLVALUE])
        .push(2)
        .ops(&[SSTORE]) // storage[2] = msg.value
        .ops(&[PUSH0, PUSH0, REVERT]) // revert(0, 0)
        .build()
}

/// Writes slot 0 to value+1 and back to its original value, and rewrites slot 1 with the
/// value it already holds: net no-op writes.
pub fn noop_runtime() -> Bytes {
    use op::*;
    Asm::new()
        .ops(&[PUSH0, SLOAD, DUP1]) // [v, v] with v = storage[0]
        .push(1)
        .ops(&[ADD]) // [v + 1, v]
        .ops(&[PUSH0, SSTORE]) // storage[0] = v + 1
        .ops(&[PUSH0, SSTORE]) // storage[0] = v (original again)
        .push(1)
        .ops(&[SLOAD]) // storage[1]
        .push(1)
        .ops(&[SSTORE]) // storage[1] = storage[1]
        .ops(&[STOP])
        .build()
}

/// Reads the EIP-4788 root of this block and the EIP-2935 hash of the parent (storage
/// reads of what the pre-block system calls wrote at BAL index 0) and the balance of the
/// address in calldata word 0, and logs all three.
pub fn observer_runtime() -> Bytes {
    use op::*;
    Asm::new()
        .ops(&[TIMESTAMP, PUSH0, MSTORE]) // memory[0..32] = block.timestamp
        .push(32) // retSize
        .push(32) // retOffset: memory[32..64]
        .push(32) // argsSize
        .push(0) // argsOffset
        .push_address(BEACON_ROOTS)
        .ops(&[GAS, STATICCALL, POP]) // memory[32..64] = beacon root of this block
        .push(1)
        .ops(&[NUMBER, SUB]) // block.number - 1
        .ops(&[PUSH0, MSTORE]) // memory[0..32] = parent number
        .push(32) // retSize
        .push(64) // retOffset: memory[64..96]
        .push(32) // argsSize
        .push(0) // argsOffset
        .push_address(HISTORY_STORAGE)
        .ops(&[GAS, STATICCALL, POP]) // memory[64..96] = parent hash
        .ops(&[PUSH0, CALLDATALOAD, BALANCE]) // balance(calldata[0..32])
        .push(64)
        .ops(&[MLOAD]) // parent hash
        .push(32)
        .ops(&[MLOAD]) // beacon root
        .ops(&[PUSH0, PUSH0, LOG3]) // log3(root, parent hash, balance), no data
        .ops(&[STOP])
        .build()
}

/// SELFDESTRUCTs to the address in calldata word 0: on a contract (or a delegated EOA)
/// that was not created in the same transaction this only moves its whole balance.
pub fn sweeper_runtime() -> Bytes {
    use op::*;
    Asm::new().ops(&[PUSH0, CALLDATALOAD, SELFDESTRUCT]).build()
}

/// Calldata: word 0 = mode (0: CREATE, otherwise CREATE2), word 1 = salt, then the init
/// code. Creates with the call value and stores the new address (0 on failure) in slot 0.
pub fn factory_runtime() -> Bytes {
    use op::*;
    Asm::new()
        .push(64)
        .ops(&[CALLDATASIZE, SUB]) // size = calldatasize - 64
        .ops(&[DUP1]) // [size, size]
        .push(64)
        .push(0)
        .ops(&[CALLDATACOPY]) // memory[0..size] = calldata[64..]
        .ops(&[PUSH0, CALLDATALOAD, ISZERO]) // mode == 0 ?
        .push_label("create")
        .ops(&[JUMPI])
        // CREATE2(value, offset 0, size, salt)
        .push(32)
        .ops(&[CALLDATALOAD]) // [salt, size]
        .ops(&[SWAP1]) // [size, salt]
        .ops(&[PUSH0, CALLVALUE]) // [value, 0, size, salt]
        .ops(&[CREATE2]) // [address]
        .push_label("store")
        .ops(&[JUMP])
        .label("create")
        // CREATE(value, offset 0, size)
        .ops(&[PUSH0, CALLVALUE]) // [value, 0, size]
        .ops(&[CREATE]) // [address]
        .label("store")
        .ops(&[PUSH0, SSTORE]) // storage[0] = address
        .ops(&[STOP])
        .build()
}

/// Init code deploying the counter.
pub fn counter_initcode() -> Bytes {
    initcode(Asm::new(), &counter_runtime())
}

/// Init code whose constructor writes storage[0] = msg.value + 1, then deploys the counter.
pub fn storing_initcode() -> Bytes {
    use op::*;
    let constructor = Asm::new().ops(&[CALLVALUE]).push(1).ops(&[ADD]).push(0).ops(&[SSTORE]);
    initcode(constructor, &counter_runtime())
}

/// Init code that writes storage, then SELFDESTRUCTs to its creator in the creating
/// transaction (EIP-6780: the account is removed; its balance goes to the caller).
pub fn selfdestruct_initcode() -> Bytes {
    use op::*;
    Asm::new().push(1).push(0).ops(&[SSTORE]).ops(&[CALLER, SELFDESTRUCT]).build()
}

/// A 32-byte big-endian word.
pub fn word(value: U256) -> [u8; 32] {
    value.to_be_bytes::<32>()
}

/// An address as a calldata word (left-padded).
pub fn address_word(address: Address) -> Vec<u8> {
    let mut w = vec![0u8; 12];
    w.extend_from_slice(address.as_slice());
    w
}

/// Every address the factory's CREATE2 can deploy to (salts 0..3, the three init codes).
pub fn create2_targets() -> &'static [Address] {
    static TARGETS: OnceLock<Vec<Address>> = OnceLock::new();
    TARGETS.get_or_init(|| {
        let mut out = Vec::new();
        for init in [counter_initcode(), storing_initcode(), selfdestruct_initcode()] {
            for salt in 0..3u64 {
                out.push(FACTORY.create2(B256::from(U256::from(salt)), keccak256(&init)));
            }
        }
        out
    })
}

/// Calldata for the factory: mode (CREATE2 if `create2`), salt, init code.
pub fn factory_calldata(create2: bool, salt: u64, init: &[u8]) -> Bytes {
    let mut data = Vec::with_capacity(64 + init.len());
    data.extend_from_slice(&word(U256::from(create2 as u64)));
    data.extend_from_slice(&word(U256::from(salt)));
    data.extend_from_slice(init);
    Bytes::from(data)
}

// ------------------------------------------------------------------------------------
// Genesis.
// ------------------------------------------------------------------------------------

/// The counter (`counter_runtime`).
pub const COUNTER: Address =
    alloy_primitives::address!("0x00000000000000000000000000000000000c0001");
/// The forwarder (`forwarder_runtime`).
pub const FORWARDER: Address =
    alloy_primitives::address!("0x00000000000000000000000000000000000c0002");
/// The reverter (`reverter_runtime`).
pub const REVERTER: Address =
    alloy_primitives::address!("0x00000000000000000000000000000000000c0003");
/// The CREATE/CREATE2 factory (`factory_runtime`).
pub const FACTORY: Address =
    alloy_primitives::address!("0x00000000000000000000000000000000000c0004");
/// The no-op writer (`noop_runtime`).
pub const NOOP: Address = alloy_primitives::address!("0x00000000000000000000000000000000000c0005");
/// The observer of system-contract state (`observer_runtime`).
pub const OBSERVER: Address =
    alloy_primitives::address!("0x00000000000000000000000000000000000c0006");
/// The sweeper (`sweeper_runtime`), holding a balance.
pub const SWEEPER: Address =
    alloy_primitives::address!("0x00000000000000000000000000000000000c0007");
/// An EOA with a balance that never sends.
pub const RECEIVER: Address =
    alloy_primitives::address!("0x00000000000000000000000000000000000e0001");
/// Accounts that exist in genesis but are empty (EIP-161: removed when touched).
pub const EMPTY_ACCOUNTS: [Address; 2] = [
    alloy_primitives::address!("0x00000000000000000000000000000000000e0002"),
    alloy_primitives::address!("0x00000000000000000000000000000000000e0003"),
];
/// The default fee recipient.
pub const COINBASE: Address =
    alloy_primitives::address!("0x00000000000000000000000000000000000fee00");

/// Funded senders.
pub const NUM_SENDERS: usize = 8;
/// EOAs that get delegated (EIP-7702); the last one never sends.
pub const NUM_DELEGATORS: usize = 3;
/// The counter's storage at genesis (slot, value).
pub const COUNTER_GENESIS: [(u64, u64); 2] = [(0, 5), (3, 7)];
/// The no-op writer's storage at genesis (slot, value), which it never changes.
pub const NOOP_GENESIS: [(u64, u64); 2] = [(0, 42), (1, 9)];

/// The `i`-th key of a role (`tag`: "sender", "delegator", ...), derived from its name.
pub fn signer(tag: &str, i: usize) -> PrivateKeySigner {
    key_from(keccak256(format!("ethrex-parallel-differential/{tag}/{i}")))
}

/// The genesis of the adversarial chains: config, header, allocation and keys.
pub struct Scenario {
    /// Every fork up to Amsterdam at genesis.
    pub config: ChainConfig,
    /// The genesis header.
    pub genesis: Header,
    /// The genesis allocation, system contracts included.
    pub alloc: BTreeMap<Address, GenesisAccount>,
    /// Keys of the funded senders.
    pub senders: Vec<PrivateKeySigner>,
    /// Keys of the delegators.
    pub delegators: Vec<PrivateKeySigner>,
}

impl Default for Scenario {
    fn default() -> Self {
        Self::new()
    }
}

impl Scenario {
    /// The scenario (always the same).
    pub fn new() -> Self {
        let mut alloc = BTreeMap::new();
        let senders: Vec<_> = (0..NUM_SENDERS).map(|i| signer("sender", i)).collect();
        let delegators: Vec<_> = (0..NUM_DELEGATORS).map(|i| signer("delegator", i)).collect();
        for s in &senders {
            alloc.insert(
                s.address(),
                GenesisAccount {
                    balance: U256::from(10u64).pow(U256::from(24)),
                    ..Default::default()
                },
            );
        }
        for d in &delegators {
            alloc.insert(
                d.address(),
                GenesisAccount {
                    balance: U256::from(10u64).pow(U256::from(21)),
                    ..Default::default()
                },
            );
        }
        let contract = |code: Bytes, storage: &[(u64, u64)]| GenesisAccount {
            nonce: 1,
            balance: U256::ZERO,
            code,
            storage: storage.iter().map(|(k, v)| (U256::from(*k), U256::from(*v))).collect(),
        };
        alloc.insert(COUNTER, contract(counter_runtime(), &COUNTER_GENESIS));
        alloc.insert(FORWARDER, contract(forwarder_runtime(), &[]));
        alloc.insert(REVERTER, contract(reverter_runtime(), &[(1, 3)]));
        alloc.insert(FACTORY, contract(factory_runtime(), &[]));
        alloc.insert(NOOP, contract(noop_runtime(), &NOOP_GENESIS));
        alloc.insert(OBSERVER, contract(observer_runtime(), &[]));
        alloc.insert(
            SWEEPER,
            GenesisAccount { balance: U256::from(777u64), ..contract(sweeper_runtime(), &[]) },
        );
        alloc.insert(
            RECEIVER,
            GenesisAccount { balance: U256::from(1_000_000u64), ..Default::default() },
        );
        for a in EMPTY_ACCOUNTS {
            alloc.insert(a, GenesisAccount::default());
        }
        let alloc = with_system_contracts(alloc);
        let config = ChainConfig::all_forks_at_genesis(CHAIN_ID, Fork::Amsterdam);
        let genesis = genesis_header_at(
            &config,
            GAS_LIMIT,
            7,
            alloc_state_root(&alloc).expect("genesis state root"),
        );
        Self { config, genesis, alloc, senders, delegators }
    }

    /// Writes the genesis into an empty store.
    pub fn init(&self, store: &Store) -> B256 {
        init_genesis(store, self.genesis.clone(), &self.alloc).expect("init genesis")
    }

    /// A fresh in-memory store holding the genesis.
    pub fn memory_store(&self) -> Store {
        let store = Store::in_memory();
        self.init(&store);
        store
    }

    /// A chain on `store` (which holds the genesis) with `options`.
    pub fn chain(&self, store: Store, options: ImportOptions) -> Blockchain {
        Blockchain::new(store, self.config.clone()).with_options(options)
    }
}

/// The parallel path forced for every block (threshold 0), with the BAL-derived state
/// root computed alongside execution (the default).
pub fn parallel_options() -> ImportOptions {
    ImportOptions {
        cores: Cores::Pool,
        threshold: Threshold::MinTxs(0),
        prefetch: Prefetch::Beside,
        ..ImportOptions::default()
    }
}

/// The parallel path without the BAL-derived state root and without the warmer.
pub fn parallel_plain_options() -> ImportOptions {
    ImportOptions {
        cores: Cores::Pool,
        threshold: Threshold::MinTxs(0),
        prefetch: Prefetch::Off,
        parallel_trie: false,
        ..ImportOptions::default()
    }
}

/// The sequential path, every block (no warmer).
pub fn sequential_options() -> ImportOptions {
    ImportOptions {
        cores: Cores::One,
        threshold: Threshold::MinTxs(0),
        prefetch: Prefetch::Off,
        ..ImportOptions::default()
    }
}

// ------------------------------------------------------------------------------------
// Signing.
// ------------------------------------------------------------------------------------

pub use crate::keys::sign;

/// Signs an EIP-7702 authorization for `CHAIN_ID`.
pub fn sign_auth(key: &PrivateKeySigner, address: Address, nonce: u64) -> SignedAuthorization {
    sign_authorization(key, Authorization { chain_id: U256::from(CHAIN_ID), address, nonce })
}

/// A type-2 transaction with fixed fees well above the base fee.
pub fn eip1559(
    key: &PrivateKeySigner,
    nonce: u64,
    to: TxKind,
    value: U256,
    input: Bytes,
    gas_limit: u64,
) -> Transaction {
    sign(
        key,
        TxEip1559 {
            chain_id: CHAIN_ID,
            nonce,
            gas_limit,
            max_fee_per_gas: 40,
            max_priority_fee_per_gas: 2,
            to,
            value,
            access_list: AccessList::default(),
            input,
        },
    )
}

// ------------------------------------------------------------------------------------
// The random chain generator.
// ------------------------------------------------------------------------------------

#[derive(Debug, Default, Clone)]
/// What a generator generated.
pub struct GenStats {
    /// Transactions per kind ("counter", "7702-delegate", ...).
    pub kinds: BTreeMap<&'static str, usize>,
    /// Transactions in all.
    pub txs: usize,
    /// Withdrawals in all.
    pub withdrawals: usize,
}

/// Expected outcomes kept by the generator, to check the chain did what it was meant to.
#[derive(Debug, Clone)]
pub struct Model {
    /// The nonce each sender and delegator must end with.
    pub sender_nonces: BTreeMap<Address, u64>,
    /// Storage of `COUNTER` (only touched through direct calls and the forwarder).
    pub counter: BTreeMap<U256, U256>,
    /// Current delegation target of each delegator (None: no delegation).
    pub delegations: BTreeMap<Address, Option<Address>>,
}

/// A generated chain with what its generator recorded.
pub struct GeneratedChain {
    /// The blocks, in order.
    pub blocks: Vec<BlockWithBal>,
    /// What was generated.
    pub stats: GenStats,
    /// The state the chain must end in.
    pub model: Model,
}

/// Generates transactions that are valid on the head of `builder` and builds blocks with
/// them (then imports each block into `builder` to move its head forward).
pub struct ChainGenerator {
    /// Every random choice comes from here.
    pub rng: ChaCha8Rng,
    /// The genesis the chain starts from.
    pub scenario: Scenario,
    /// The builder chain: its head is the last block built.
    pub builder: ChainBuilder,
    /// The state the chain must end in.
    pub model: Model,
    /// What was generated so far.
    pub stats: GenStats,
    /// Addresses created by the chain so far (value recipients).
    pub fresh: Vec<Address>,
    timestamp: u64,
    number: u64,
    withdrawal_index: u64,
}

impl ChainGenerator {
    /// A generator on a fresh in-memory genesis, its choices seeded by `seed`.
    pub fn new(seed: u64) -> Self {
        let scenario = Scenario::new();
        let store = scenario.memory_store();
        let builder = ChainBuilder::new(scenario.chain(store, ImportOptions::default()));
        let mut sender_nonces = BTreeMap::new();
        for s in scenario.senders.iter().chain(&scenario.delegators) {
            sender_nonces.insert(s.address(), 0);
        }
        let model = Model {
            sender_nonces,
            counter: COUNTER_GENESIS
                .iter()
                .map(|(k, v)| (U256::from(*k), U256::from(*v)))
                .collect(),
            delegations: scenario.delegators.iter().map(|d| (d.address(), None)).collect(),
        };
        Self {
            rng: ChaCha8Rng::seed_from_u64(seed),
            scenario,
            builder,
            model,
            stats: GenStats::default(),
            fresh: Vec::new(),
            timestamp: 0,
            number: 0,
            withdrawal_index: 0,
        }
    }

    fn count(&mut self, kind: &'static str) {
        *self.stats.kinds.entry(kind).or_default() += 1;
    }

    fn next_nonce(&mut self, address: Address) -> u64 {
        let n = self.model.sender_nonces.get_mut(&address).expect("known sender");
        let nonce = *n;
        *n += 1;
        nonce
    }

    fn new_address(&mut self) -> Address {
        let a = Address::from(self.rng.random::<[u8; 20]>());
        self.fresh.push(a);
        a
    }

    /// Any address the chain knows: senders, contracts, fresh accounts, empty accounts,
    /// delegators, the coinbase, or a brand new one.
    fn any_address(&mut self) -> Address {
        match self.rng.random_range(0..8) {
            0 => self.scenario.senders.choose(&mut self.rng).unwrap().address(),
            1 => self.scenario.delegators.choose(&mut self.rng).unwrap().address(),
            2 => *[COUNTER, FORWARDER, REVERTER, FACTORY, NOOP, OBSERVER, SWEEPER]
                .choose(&mut self.rng)
                .unwrap(),
            3 => *EMPTY_ACCOUNTS.choose(&mut self.rng).unwrap(),
            4 if !self.fresh.is_empty() => *self.fresh.choose(&mut self.rng).unwrap(),
            5 => COINBASE,
            6 => RECEIVER,
            // Where the factory's CREATE2 would deploy: funding it first makes creation
            // happen over an existing balance.
            _ if self.rng.random_bool(0.3) => *create2_targets().choose(&mut self.rng).unwrap(),
            _ => self.new_address(),
        }
    }

    fn value(&mut self) -> U256 {
        match self.rng.random_range(0..4) {
            0 => U256::ZERO,
            1 => U256::from(1u64),
            _ => U256::from(self.rng.random_range(1..1_000_000_000_000u64)),
        }
    }

    /// Signs a call with a random transaction type (legacy, 2930, 1559); sometimes with an
    /// access list naming accounts and slots the call may or may not touch.
    fn signed(
        &mut self,
        key: &PrivateKeySigner,
        to: TxKind,
        value: U256,
        input: Bytes,
        gas_limit: u64,
    ) -> Transaction {
        let nonce = self.next_nonce(key.address());
        let access_list = if self.rng.random_bool(0.25) {
            let address = self.any_address();
            AccessList(vec![AccessListItem {
                address,
                storage_keys: vec![B256::from(U256::from(self.rng.random_range(0..4u64)))],
            }])
        } else {
            AccessList::default()
        };
        let gas_price = self.rng.random_range(10..40u128);
        match self.rng.random_range(0..3) {
            0 => sign(
                key,
                TxLegacy {
                    chain_id: Some(CHAIN_ID),
                    nonce,
                    gas_price,
                    gas_limit,
                    to,
                    value,
                    input,
                },
            ),
            1 => sign(
                key,
                TxEip2930 {
                    chain_id: CHAIN_ID,
                    nonce,
                    gas_price,
                    gas_limit,
                    to,
                    value,
                    access_list,
                    input,
                },
            ),
            _ => sign(
                key,
                TxEip1559 {
                    chain_id: CHAIN_ID,
                    nonce,
                    gas_limit,
                    max_fee_per_gas: gas_price + 20,
                    max_priority_fee_per_gas: self.rng.random_range(0..4u128),
                    to,
                    value,
                    access_list,
                    input,
                },
            ),
        }
    }

    fn counter_slot(&mut self) -> (Bytes, U256) {
        if self.rng.random_bool(0.3) {
            (Bytes::new(), U256::ZERO)
        } else {
            let slot = U256::from(self.rng.random_range(0..4u64));
            (Bytes::from(word(slot).to_vec()), slot)
        }
    }

    fn bump_counter(&mut self, slot: U256) {
        *self.model.counter.entry(slot).or_default() += U256::from(1u64);
    }

    /// One random valid transaction.
    pub fn random_tx(&mut self) -> Transaction {
        let key = self.scenario.senders.choose(&mut self.rng).unwrap().clone();
        match self.rng.random_range(0..100) {
            // Native transfers: to known accounts (incl. contracts, empty accounts), to a new
            // account, zero-value ones.
            0..=9 => {
                self.count("transfer");
                let to = self.any_address();
                if to == COUNTER {
                    self.bump_counter(U256::ZERO);
                }
                let value = self.value();
                self.signed(&key, TxKind::Call(to), value, Bytes::new(), TRANSFER_GAS)
            }
            10..=14 => {
                self.count("transfer-new-account");
                let to = self.new_address();
                let value = U256::from(self.rng.random_range(1..1_000_000u64));
                self.signed(&key, TxKind::Call(to), value, Bytes::new(), TRANSFER_GAS)
            }
            15..=17 => {
                self.count("zero-value-transfer");
                let to = if self.rng.random_bool(0.5) {
                    *EMPTY_ACCOUNTS.choose(&mut self.rng).unwrap()
                } else {
                    Address::from(self.rng.random::<[u8; 20]>())
                };
                self.signed(&key, TxKind::Call(to), U256::ZERO, Bytes::new(), TRANSFER_GAS)
            }
            // Counter: SLOAD / ADD / SSTORE on a shared slot.
            18..=32 => {
                self.count("counter");
                let (input, slot) = self.counter_slot();
                self.bump_counter(slot);
                let value = if self.rng.random_bool(0.2) { self.value() } else { U256::ZERO };
                self.signed(&key, TxKind::Call(COUNTER), value, input, CALL_GAS)
            }
            // Forwarder: balance dependencies between transactions.
            33..=44 => {
                self.count("forwarder");
                let target = self.any_address();
                if target == COUNTER {
                    self.bump_counter(U256::ZERO);
                }
                let value = self.value();
                self.signed(
                    &key,
                    TxKind::Call(FORWARDER),
                    value,
                    Bytes::from(address_word(target)),
                    CALL_GAS,
                )
            }
            45..=46 => {
                self.count("sweeper");
                // SELFDESTRUCT credits the beneficiary without running its code.
                let target = self.any_address();
                let value = self.value();
                self.signed(
                    &key,
                    TxKind::Call(SWEEPER),
                    value,
                    Bytes::from(address_word(target)),
                    CALL_GAS,
                )
            }
            47..=49 => {
                self.count("reverter");
                let value = self.value();
                self.signed(&key, TxKind::Call(REVERTER), value, Bytes::new(), CALL_GAS)
            }
            50..=53 => {
                self.count("noop-write");
                self.signed(&key, TxKind::Call(NOOP), U256::ZERO, Bytes::new(), CALL_GAS)
            }
            54..=58 => {
                self.count("observer");
                let target = self.any_address();
                self.signed(
                    &key,
                    TxKind::Call(OBSERVER),
                    U256::ZERO,
                    Bytes::from(address_word(target)),
                    CALL_GAS,
                )
            }
            // Factory: CREATE / CREATE2 (small salts: CREATE2 collisions happen) of the
            // counter, a storage-writing constructor, or a self-destructing constructor.
            59..=70 => {
                let create2 = self.rng.random_bool(0.5);
                let (kind, init) = match self.rng.random_range(0..3) {
                    0 => ("factory-counter", counter_initcode()),
                    1 => ("factory-storing", storing_initcode()),
                    _ => ("factory-selfdestruct", selfdestruct_initcode()),
                };
                self.count(kind);
                self.count(if create2 { "factory-create2" } else { "factory-create" });
                let salt = self.rng.random_range(0..3u64);
                let value = if self.rng.random_bool(0.3) { self.value() } else { U256::ZERO };
                self.signed(
                    &key,
                    TxKind::Call(FACTORY),
                    value,
                    factory_calldata(create2, salt, &init),
                    CREATE_GAS,
                )
            }
            // Contract-creation transactions; the self-destructing one sends its value back
            // to the sender inside the same transaction.
            71..=76 => {
                let (kind, init) = match self.rng.random_range(0..3) {
                    0 => ("create-tx-counter", counter_initcode()),
                    1 => ("create-tx-storing", storing_initcode()),
                    _ => ("create-tx-selfdestruct", selfdestruct_initcode()),
                };
                self.count(kind);
                let value = self.value();
                self.signed(&key, TxKind::Create, value, init, CREATE_GAS)
            }
            // EIP-7702: delegate an EOA (to the counter, the forwarder, the reverter, or
            // clear it), calling it in the same transaction.
            77..=84 => self.delegation_tx(key),
            // Calls to (possibly) delegated EOAs, with calldata for the delegated code.
            85..=94 => {
                self.count("call-delegator");
                let d = self.scenario.delegators.choose(&mut self.rng).unwrap().address();
                let delegation = self.model.delegations[&d];
                let input = if matches!(delegation, Some(FORWARDER) | Some(SWEEPER)) {
                    let target = self.any_address();
                    if target == COUNTER && delegation == Some(FORWARDER) {
                        self.bump_counter(U256::ZERO);
                    }
                    Bytes::from(address_word(target))
                } else {
                    self.counter_slot().0
                };
                let value = if self.rng.random_bool(0.5) { self.value() } else { U256::ZERO };
                self.signed(&key, TxKind::Call(d), value, input, CALL_GAS)
            }
            // A delegator sends a transaction itself (a delegated EOA can still send).
            _ => {
                self.count("delegator-sends");
                let senders = &self.scenario.delegators[..NUM_DELEGATORS - 1];
                let d = senders.choose(&mut self.rng).unwrap().clone();
                let to = self.any_address();
                if to == COUNTER {
                    self.bump_counter(U256::ZERO);
                }
                let value = U256::from(self.rng.random_range(0..1_000u64));
                self.signed(&d, TxKind::Call(to), value, Bytes::new(), TRANSFER_GAS)
            }
        }
    }

    fn delegation_tx(&mut self, sender: PrivateKeySigner) -> Transaction {
        let d = self.scenario.delegators.choose(&mut self.rng).unwrap().clone();
        // Only the last delegator, which never sends transactions itself, may be delegated
        // to the sweeper (which can empty its balance).
        let sweepable = d.address() == self.scenario.delegators.last().unwrap().address();
        let targets: &[Address] = if sweepable {
            &[COUNTER, FORWARDER, REVERTER, SWEEPER, SWEEPER, Address::ZERO]
        } else {
            &[COUNTER, COUNTER, FORWARDER, REVERTER, Address::ZERO]
        };
        let target = *targets.choose(&mut self.rng).unwrap();
        // Sometimes the delegator sends the transaction carrying its own authorization: the
        // authorization nonce is then the one after the transaction's.
        let self_sponsored = !sweepable && self.rng.random_bool(0.2);
        let sender = if self_sponsored { d.clone() } else { sender };
        let nonce = self.next_nonce(sender.address());
        let mut authorization_list = Vec::new();
        let auth_nonce = self.model.sender_nonces[&d.address()];
        if self.rng.random_bool(0.1) {
            // An authorization with a stale nonce: skipped, the transaction stays valid.
            self.count("7702-stale-auth");
            authorization_list.push(sign_auth(&d, target, auth_nonce + 7));
        } else {
            self.count("7702-delegate");
            authorization_list.push(sign_auth(&d, target, auth_nonce));
            *self.model.sender_nonces.get_mut(&d.address()).unwrap() += 1;
            self.model.delegations.insert(d.address(), (target != Address::ZERO).then_some(target));
        }
        // Call the delegator (runs the delegated code on its storage) or the counter.
        let (to, input) = if self.rng.random_bool(0.8) {
            (d.address(), self.counter_slot().0)
        } else {
            let (input, slot) = self.counter_slot();
            self.bump_counter(slot);
            (COUNTER, input)
        };
        let delegation = self.model.delegations[&d.address()];
        let takes_address =
            matches!(delegation, Some(FORWARDER) | Some(SWEEPER)) && to == d.address();
        let input = if takes_address {
            let t = self.any_address();
            if t == COUNTER && delegation == Some(FORWARDER) {
                self.bump_counter(U256::ZERO);
            }
            Bytes::from(address_word(t))
        } else {
            input
        };
        let value = if self.rng.random_bool(0.3) { self.value() } else { U256::ZERO };
        sign(
            &sender,
            TxEip7702 {
                chain_id: CHAIN_ID,
                nonce,
                gas_limit: CALL_GAS,
                max_fee_per_gas: 50,
                max_priority_fee_per_gas: self.rng.random_range(0..4u128),
                to,
                value,
                access_list: AccessList::default(),
                authorization_list,
                input,
            },
        )
    }

    fn random_withdrawals(&mut self) -> Vec<Withdrawal> {
        if self.rng.random_bool(0.5) {
            return Vec::new();
        }
        let n = self.rng.random_range(1..=3);
        (0..n)
            .map(|_| {
                let address = self.any_address();
                let w = Withdrawal {
                    index: self.withdrawal_index,
                    validator_index: self.rng.random_range(0..100),
                    address,
                    amount: self.rng.random_range(1..1_000u64),
                };
                self.withdrawal_index += 1;
                self.stats.withdrawals += 1;
                w
            })
            .collect()
    }

    /// The attributes of the next block (timestamp, fee recipient, randomness).
    pub fn attributes(&mut self, withdrawals: Vec<Withdrawal>) -> PayloadAttributes {
        self.timestamp += BLOCK_TIME;
        let fee_recipient = match self.rng.random_range(0..4) {
            0 => self.scenario.senders.choose(&mut self.rng).unwrap().address(),
            1 if !self.fresh.is_empty() => *self.fresh.choose(&mut self.rng).unwrap(),
            _ => COINBASE,
        };
        PayloadAttributes {
            timestamp: self.timestamp,
            fee_recipient,
            prev_randao: B256::from(self.rng.random::<[u8; 32]>()),
            gas_limit: GAS_LIMIT,
            withdrawals,
            parent_beacon_block_root: B256::from(self.rng.random::<[u8; 32]>()),
            slot_number: self.number + 1,
            extra_data: Bytes::new(),
        }
    }

    /// Builds a block with exactly `txs` on the builder head and imports it there.
    pub fn build(&mut self, txs: Vec<Transaction>, withdrawals: Vec<Withdrawal>) -> BlockWithBal {
        let attributes = self.attributes(withdrawals);
        self.stats.txs += txs.len();
        let block = self
            .builder
            .build(&attributes, txs)
            .unwrap_or_else(|e| panic!("generated block {}: {e}", self.number + 1));
        self.number += 1;
        block
    }

    /// Builds a random block of `min..=max` transactions.
    pub fn random_block(&mut self, min: usize, max: usize) -> BlockWithBal {
        let n = self.rng.random_range(min..=max);
        let txs: Vec<Transaction> = (0..n).map(|_| self.random_tx()).collect();
        let withdrawals = self.random_withdrawals();
        self.build(txs, withdrawals)
    }
}

/// A random chain of `blocks` Amsterdam blocks with 5..=40 transactions each.
pub fn generate_chain(seed: u64, blocks: usize) -> GeneratedChain {
    let mut generator = ChainGenerator::new(seed);
    let blocks = (0..blocks).map(|_| generator.random_block(5, 40)).collect();
    GeneratedChain { blocks, stats: generator.stats, model: generator.model }
}

pub use snapshot::{
    assert_no_trace, block_record, snapshot, AccountSnapshot, BlockRecord, StateSnapshot,
};

/// Checks the model the generator kept against a store's final state.
pub fn check_model(store: &Store, model: &Model) {
    for (address, nonce) in &model.sender_nonces {
        let account = store.account(address).unwrap().expect("sender exists");
        assert_eq!(account.nonce, *nonce, "nonce of {address}");
    }
    for (slot, value) in &model.counter {
        assert_eq!(store.storage(&COUNTER, slot).unwrap(), *value, "counter slot {slot}");
    }
    for (address, delegate) in &model.delegations {
        let account = store.account(address).unwrap().expect("delegator exists");
        match delegate {
            None => {
                assert_eq!(account.code_hash, KECCAK_EMPTY, "{address} should not be delegated")
            }
            Some(target) => {
                let code = store.code(&account.code_hash).unwrap().expect("delegation code stored");
                let mut expected = vec![0xef, 0x01, 0x00];
                expected.extend_from_slice(target.as_slice());
                assert_eq!(code.as_ref(), expected.as_slice(), "delegation of {address}");
            }
        }
    }
    // The no-op writer never changes its storage.
    for (slot, value) in NOOP_GENESIS {
        assert_eq!(
            store.storage(&NOOP, &U256::from(slot)).unwrap(),
            U256::from(value),
            "noop slot {slot}"
        );
    }
    // The reverter's writes never land.
    assert_eq!(store.storage(&REVERTER, &U256::from(1u64)).unwrap(), U256::from(3u64));
    assert_eq!(store.storage(&REVERTER, &U256::from(2u64)).unwrap(), U256::ZERO);
}
