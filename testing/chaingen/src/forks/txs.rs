//! The transactions of a fork chain: every transaction type once its fork allows it
//! (pre-EIP-155 legacy throughout), sent to contracts that probe what changed from fork
//! to fork: opcodes before and after they exist, precompiles before and after they
//! exist, storage writes and clears (gas and refunds per era), self-destructs (before and
//! after EIP-6780), contract creation, empty-account touches (EIP-161), EIP-7702
//! delegations.

use crate::keys::{derive, derive_address, key_from, sign_tx};
use alloy_consensus::{
    TxEip1559, TxEip2930, TxEip4844, TxEip4844Variant, TxEip7702, TxLegacy, TypedTransaction,
};
use alloy_eips::eip2930::{AccessList, AccessListItem};
use alloy_eips::eip7702::Authorization;
use alloy_primitives::{address, Address, Bytes, TxKind, B256, U256};
use alloy_signer_local::PrivateKeySigner;
use ethrex_blockchain::genesis::GenesisAccount;
use ethrex_common::{Fork, Transaction};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

/// `sstore(calldata[32..64], calldata[0..32])`.
const STORAGE_CODE: &[u8] = &[0x60, 0x00, 0x35, 0x60, 0x20, 0x35, 0x55, 0x00];
/// `call(100000, calldata[0..32], 0, calldata[32..], 0x40 bytes out at 0)` (a fixed gas:
/// before EIP-150 a call asking for more than is left fails the caller), then
/// `sstore(number, success + mload(0))`.
const PRECOMPILE_CALLER_CODE: &[u8] = &[
    0x60, 0x20, 0x36, 0x03, 0x60, 0x20, 0x60, 0x00, 0x37, // calldatacopy(0, 32, size - 32)
    0x60, 0x40, 0x60, 0x00, 0x60, 0x20, 0x36, 0x03, 0x60, 0x00, 0x60, 0x00, // out, in, value
    0x60, 0x00, 0x35, 0x62, 0x01, 0x86, 0xa0, 0xf1, // call(100000, calldataload(0), ...)
    0x60, 0x00, 0x51, 0x01, 0x43, 0x55, 0x00, // sstore(number, success + mload(0))
];
/// `selfdestruct(caller)`.
const SELFDESTRUCT_CODE: &[u8] = &[0x33, 0xff];

/// Opcode probes: each uses an instruction of the fork named in its comment and stores
/// something at slot `number`; before that fork the call fails (all its gas spent), from
/// it on it succeeds.
const PROBES: [&[u8]; 13] = [
    // DELEGATECALL (Homestead) of the storage contract (its sstore(0, 0) runs here),
    // then store 2.
    &[
        0x60, 0x00, 0x60, 0x00, 0x60, 0x00, 0x60, 0x00, 0x73, 0xc0, 0xde, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x62, 0x01, 0x86, 0xa0, 0xf4, 0x60, 0x01, 0x01, 0x43,
        0x55, 0x00,
    ],
    // RETURNDATASIZE, then REVERT (Byzantium).
    &[0x3d, 0x43, 0x55, 0x60, 0x00, 0x60, 0x00, 0xfd],
    // STATICCALL (Byzantium) of the storage contract (its sstore fails), then store 1.
    &[
        0x60, 0x00, 0x60, 0x00, 0x60, 0x00, 0x60, 0x00, 0x73, 0xc0, 0xde, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x62, 0x01, 0x86, 0xa0, 0xfa, 0x60, 0x01, 0x01, 0x43,
        0x55, 0x00,
    ],
    // SHL (Constantinople)
    &[0x60, 0x01, 0x60, 0x04, 0x1b, 0x43, 0x55, 0x00],
    // CREATE2 of empty code (a collision from the second call on), EXTCODEHASH of self
    // (Constantinople).
    &[
        0x60, 0x00, 0x60, 0x00, 0x60, 0x00, 0x60, 0x00, 0xf5, 0x43, 0x55, 0x30, 0x3f, 0x60, 0x00,
        0x55, 0x00,
    ],
    // CHAINID and SELFBALANCE (Istanbul)
    &[0x46, 0x47, 0x01, 0x43, 0x55, 0x00],
    // BASEFEE (London)
    &[0x48, 0x43, 0x55, 0x00],
    // PUSH0 (Shanghai)
    &[0x5f, 0x60, 0x01, 0x01, 0x43, 0x55, 0x00],
    // TSTORE, TLOAD (Cancun)
    &[0x60, 0x07, 0x60, 0x01, 0x5d, 0x60, 0x01, 0x5c, 0x43, 0x55, 0x00],
    // MCOPY (Cancun)
    &[
        0x60, 0x2a, 0x60, 0x00, 0x52, 0x60, 0x20, 0x60, 0x00, 0x60, 0x20, 0x5e, 0x60, 0x20, 0x51,
        0x43, 0x55, 0x00,
    ],
    // BLOBBASEFEE, BLOBHASH(0) (Cancun)
    &[0x4a, 0x60, 0x00, 0x49, 0x01, 0x43, 0x55, 0x00],
    // CLZ (Osaka)
    &[0x60, 0x01, 0x1e, 0x43, 0x55, 0x00],
    // BLOCKHASH of the parent (Frontier)
    &[0x60, 0x01, 0x43, 0x03, 0x40, 0x43, 0x55, 0x00],
];

/// The storage contract (the probes above name it by this address).
pub(super) const STORAGE: Address = address!("c0de000000000000000000000000000000000001");
/// The precompile caller.
pub(super) const PRECOMPILE_CALLER: Address = address!("c0de000000000000000000000000000000000002");
/// The first probe; probe `i` is at this address plus `i`.
const FIRST_PROBE: u64 = 0x10;
/// How many self-destructing contracts the genesis holds.
const SELFDESTRUCTORS: u64 = 6;
/// How many funded senders.
const SENDERS: u64 = 6;

fn contract(n: u64) -> Address {
    let mut bytes = [0u8; 20];
    bytes[0] = 0xc0;
    bytes[1] = 0xde;
    bytes[12..].copy_from_slice(&n.to_be_bytes());
    Address::from(bytes)
}

fn selfdestructor(i: u64) -> Address {
    contract(0x100 + i)
}

/// Precompile inputs: (address, input). Calls before a precompile exists are calls to
/// an empty account (which, before EIP-161, the call creates).
fn precompile_calls() -> Vec<(u64, Vec<u8>)> {
    let zeros = |n: usize| vec![0u8; n];
    let mut modexp = zeros(96);
    modexp[31] = 1;
    modexp[63] = 1;
    modexp[95] = 1;
    modexp.extend_from_slice(&[3, 5, 7]);
    let mut blake = zeros(213);
    blake[3] = 12;
    blake[212] = 1;
    vec![
        (1, derive(7, "ecrecover", 0).to_vec().repeat(4)),
        (2, b"sha256".to_vec()),
        (3, b"ripemd160".to_vec()),
        (4, b"identity".to_vec()),
        (5, modexp),
        (6, zeros(128)),
        (7, zeros(96)),
        (8, vec![]),
        (9, blake),
        (0x0a, zeros(192)),
        (0x0b, zeros(256)),
        (0x100, derive(7, "p256", 0).to_vec().repeat(5)),
    ]
}

/// The deterministic senders, funded in the genesis.
pub(super) fn senders(seed: u64) -> Vec<PrivateKeySigner> {
    (0..SENDERS).map(|i| key_from(derive(seed, "forks/sender", i))).collect()
}

/// The genesis accounts the transactions need: senders, the storage contract, the
/// precompile caller, the probes, the self-destructors.
pub(super) fn genesis_accounts(seed: u64) -> BTreeMap<Address, GenesisAccount> {
    let rich = U256::from(10u128.pow(24));
    let code = |code: &[u8]| GenesisAccount {
        nonce: 1,
        balance: U256::ZERO,
        code: Bytes::copy_from_slice(code),
        storage: BTreeMap::new(),
    };
    let mut alloc: BTreeMap<Address, GenesisAccount> = senders(seed)
        .iter()
        .map(|k| {
            let account = GenesisAccount {
                nonce: 0,
                balance: rich,
                code: Bytes::new(),
                storage: Default::default(),
            };
            (k.address(), account)
        })
        .collect();
    let mut storage = code(STORAGE_CODE);
    storage.storage = (1..=4u64).map(|k| (U256::from(k), U256::from(k * 11))).collect();
    alloc.insert(STORAGE, storage);
    alloc.insert(PRECOMPILE_CALLER, code(PRECOMPILE_CALLER_CODE));
    for (i, probe) in PROBES.iter().enumerate() {
        alloc.insert(contract(FIRST_PROBE + i as u64), code(probe));
    }
    for i in 0..SELFDESTRUCTORS {
        let mut account = code(SELFDESTRUCT_CODE);
        account.balance = U256::from(1_000_000 + i);
        alloc.insert(selfdestructor(i), account);
    }
    alloc
}

/// What a block's transactions depend on.
pub(super) struct BlockEnv {
    /// The fork the block runs under.
    pub(super) fork: Fork,
    /// The block's base fee (London on).
    pub(super) base_fee: Option<u64>,
    /// The blob base fee and the most blobs a block may carry (Cancun on).
    pub(super) blobs: Option<(u128, u64)>,
    /// The block's gas limit.
    pub(super) gas_limit: u64,
}

/// Builds one block's transactions. `nonce` gives a sender's next nonce at the head.
pub(super) struct TxMix {
    seed: u64,
    chain_id: u64,
    senders: Vec<PrivateKeySigner>,
    /// A counter for fresh addresses and keys, never reused.
    fresh: u64,
}

impl TxMix {
    /// The mix for `seed` on chain `chain_id`.
    pub(super) fn new(seed: u64, chain_id: u64) -> Self {
        Self { seed, chain_id, senders: senders(seed), fresh: 0 }
    }

    fn fresh(&mut self) -> u64 {
        self.fresh += 1;
        self.fresh
    }

    /// 2-7 transactions valid under `env`, from senders whose next nonces `nonce` gives.
    pub(super) fn block(
        &mut self,
        rng: &mut ChaCha8Rng,
        env: &BlockEnv,
        mut nonce: impl FnMut(Address) -> u64,
    ) -> Vec<Transaction> {
        let count = rng.random_range(2..=7);
        let mut next: BTreeMap<Address, u64> = BTreeMap::new();
        let mut blobs_left = env.blobs.map_or(0, |(_, max)| max);
        let mut gas_left = env.gas_limit;
        let mut txs = Vec::with_capacity(count);
        for _ in 0..count {
            let sender = self.senders[rng.random_range(0..self.senders.len())].clone();
            let n = *next.entry(sender.address()).or_insert_with(|| nonce(sender.address()));
            let (to, input, value, gas) = self.action(rng);
            // Room for the most any type adds (an EIP-7702 authorization).
            if gas + 50_000 > gas_left {
                break;
            }
            let Some(tx) = self.typed(rng, env, n, to, input, value, gas, &mut blobs_left) else {
                continue;
            };
            gas_left -= gas + 50_000;
            next.insert(sender.address(), n + 1);
            txs.push(sign_tx(&sender, tx));
        }
        txs
    }

    /// What a transaction does: (to, input, value, gas limit).
    fn action(&mut self, rng: &mut ChaCha8Rng) -> (TxKind, Bytes, U256, u64) {
        let word = |v: u64| B256::from(U256::from(v)).0;
        match rng.random_range(0..8) {
            // A transfer to a fresh address, sometimes of zero value (an empty account:
            // created before EIP-161, not after).
            0 => {
                let to = derive_address(self.seed, "forks/fresh", self.fresh());
                let value = if rng.random_bool(0.5) { U256::ZERO } else { U256::from(1_000u64) };
                (TxKind::Call(to), Bytes::new(), value, 100_000)
            }
            // A storage write or clear (refunds, EIP-2200/2929/3529).
            1 | 2 => {
                let value = if rng.random_bool(0.3) { 0 } else { rng.random_range(1..1000u64) };
                let key = rng.random_range(0..8u64);
                let input = [word(value), word(key)].concat();
                (TxKind::Call(STORAGE), input.into(), U256::ZERO, 120_000)
            }
            // An opcode probe.
            3 | 4 => {
                let i = rng.random_range(0..PROBES.len() as u64);
                (TxKind::Call(contract(FIRST_PROBE + i)), Bytes::new(), U256::ZERO, 150_000)
            }
            // A precompile, existing or not yet.
            5 => {
                let calls = precompile_calls();
                let (address, input) = &calls[rng.random_range(0..calls.len())];
                let input = [word(*address).as_slice(), input].concat();
                (TxKind::Call(PRECOMPILE_CALLER), input.into(), U256::ZERO, 300_000)
            }
            // A self-destruct (the account is gone before EIP-6780; later calls find it
            // empty), with value.
            6 => {
                let to = selfdestructor(rng.random_range(0..SELFDESTRUCTORS));
                (TxKind::Call(to), Bytes::new(), U256::from(7u64), 100_000)
            }
            // A contract creation: the storage contract's code (init code copies it out),
            // sometimes with value; before Homestead an out-of-gas deposit leaves an empty
            // contract, so the gas is ample.
            _ => {
                let mut init = vec![0x60, STORAGE_CODE.len() as u8, 0x60, 12, 0x60, 0, 0x39];
                init.extend_from_slice(&[0x60, STORAGE_CODE.len() as u8, 0x60, 0, 0xf3]);
                init.extend_from_slice(STORAGE_CODE);
                let value = if rng.random_bool(0.3) { U256::from(5u64) } else { U256::ZERO };
                (TxKind::Create, init.into(), value, 200_000)
            }
        }
    }

    /// The transaction in a type `env.fork` allows (pre-EIP-155 legacy always), or
    /// `None` if the action cannot go in this type (a blob transaction creates nothing).
    #[allow(clippy::too_many_arguments)]
    fn typed(
        &mut self,
        rng: &mut ChaCha8Rng,
        env: &BlockEnv,
        nonce: u64,
        to: TxKind,
        input: Bytes,
        value: U256,
        gas_limit: u64,
        blobs_left: &mut u64,
    ) -> Option<TypedTransaction> {
        let fork = env.fork;
        let tip = rng.random_range(0..3u128) * 1_000_000_000;
        let base = u128::from(env.base_fee.unwrap_or(0));
        let gas_price = base + tip + 1_000_000_000;
        let chain_id = self.chain_id;
        let mut kinds = vec![0u8];
        if fork >= Fork::SpuriousDragon {
            kinds.push(1);
        }
        if fork >= Fork::Berlin {
            kinds.push(2);
        }
        if fork >= Fork::London {
            kinds.push(3);
        }
        if fork >= Fork::Cancun && *blobs_left > 0 && to.is_call() {
            kinds.push(4);
        }
        if fork >= Fork::Prague && to == TxKind::Call(STORAGE) {
            kinds.push(5);
        }
        let access_list = || {
            AccessList(vec![AccessListItem {
                address: STORAGE,
                storage_keys: vec![B256::from(U256::from(1u64))],
            }])
        };
        Some(match kinds[rng.random_range(0..kinds.len())] {
            // Pre-EIP-155 (no chain id) or EIP-155 legacy.
            kind @ (0 | 1) => TypedTransaction::Legacy(TxLegacy {
                chain_id: (kind == 1).then_some(chain_id),
                nonce,
                gas_price,
                gas_limit,
                to,
                value,
                input,
            }),
            2 => TypedTransaction::Eip2930(TxEip2930 {
                chain_id,
                nonce,
                gas_price,
                gas_limit,
                to,
                value,
                access_list: access_list(),
                input,
            }),
            3 => TypedTransaction::Eip1559(TxEip1559 {
                chain_id,
                nonce,
                gas_limit,
                max_fee_per_gas: gas_price + base,
                max_priority_fee_per_gas: tip,
                to,
                value,
                access_list: if rng.random_bool(0.5) {
                    access_list()
                } else {
                    AccessList::default()
                },
                input,
            }),
            4 => {
                let (blob_fee, _) = env.blobs.expect("blob transactions only with blob parameters");
                let count = rng.random_range(1..=(*blobs_left).min(2));
                *blobs_left -= count;
                let hashes = (0..count)
                    .map(|_| {
                        let mut h = derive(self.seed, "forks/blob", self.fresh());
                        h.0[0] = 0x01;
                        h
                    })
                    .collect();
                TypedTransaction::Eip4844(TxEip4844Variant::TxEip4844(TxEip4844 {
                    chain_id,
                    nonce,
                    gas_limit,
                    max_fee_per_gas: gas_price + base,
                    max_priority_fee_per_gas: tip,
                    to: to.to().copied()?,
                    value,
                    access_list: AccessList::default(),
                    blob_versioned_hashes: hashes,
                    max_fee_per_blob_gas: blob_fee * 2 + 1,
                    input,
                }))
            }
            // A fresh authority delegates to the storage contract; the transaction writes
            // into the authority's own storage through it.
            _ => {
                let authority = key_from(derive(self.seed, "forks/authority", self.fresh()));
                let auth = Authorization {
                    chain_id: U256::from(if rng.random_bool(0.5) { chain_id } else { 0 }),
                    address: STORAGE,
                    nonce: 0,
                };
                TypedTransaction::Eip7702(TxEip7702 {
                    chain_id,
                    nonce,
                    gas_limit: gas_limit + 50_000,
                    max_fee_per_gas: gas_price + base,
                    max_priority_fee_per_gas: tip,
                    to: authority.address(),
                    value,
                    access_list: AccessList::default(),
                    authorization_list: vec![crate::keys::sign_authorization(&authority, auth)],
                    input,
                })
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probes_that_call_the_storage_contract_name_its_address() {
        for probe in PROBES {
            if let Some(at) = probe.iter().position(|&b| b == 0x73) {
                assert_eq!(&probe[at + 1..at + 21], STORAGE.as_slice());
            }
        }
    }

    #[test]
    fn the_contracts_do_not_collide_with_each_other() {
        let accounts = genesis_accounts(1);
        let contracts = accounts.values().filter(|a| !a.code.is_empty()).count();
        assert_eq!(contracts, 2 + PROBES.len() + SELFDESTRUCTORS as usize);
    }
}
