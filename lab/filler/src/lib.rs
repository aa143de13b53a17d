//! A mainnet-sized genesis state that no genesis file spells out: the "state filler".
//!
//! A `StateFiller` adds to a genesis allocation `accounts` externally owned accounts and
//! `slots` storage slots spread over some of the allocation's contracts, every address,
//! key and value derived from `seed`, so a chain built on it reads state that is cold (in
//! no cache) the way a mainnet node's does. Only the small specification travels with a
//! fixture (`<stem>.state.json`); `init_genesis_filled` writes the state itself straight
//! into a store.
//!
//! The key space, as the workload addresses it:
//! - filler account `i` is `account(i)`: the low 20 bytes of
//!   `keccak256(account_prefix() ++ pad32(i))`, an EOA with a small balance;
//! - the `j`-th filler slot of contract `k` (for `j < slots_of(k)`) is `slot(k, j)`, the
//!   entry of address `account(j)` in a Solidity `mapping(address => uint256)` declared
//!   first (at slot 0): `keccak256(pad32(account(j)) ++ pad32(0))`. For an ERC-20 that is
//!   `balanceOf[account(j)]`, so a transfer to a filler account rewrites a slot that
//!   really exists cold; a contract that reads random filled keys computes the same two
//!   hashes from `account_prefix()` and `j`. Every contract uses the same keys `j` (its own
//!   storage), so filler account `j` holds a balance in each of them.
//!
//! Building: the allocation is written first (as `ethrex_blockchain::genesis::init_genesis` does), then the
//! filler slots and accounts in rounds of at most `CHUNK_ENTRIES` entries, each round one
//! `compute_state_update` on top of the previous root, written with `Store::write_state`.
//! Keys are visited in trie-key order: each trie's keys are sorted by their hash once (16
//! bytes of index per entry), cut into 16 lanes (one per first nibble, about), and a round
//! takes the next contiguous stretch of every lane. A round then rewrites only the 16
//! paths where its stretches meet the previous round's instead of nearly every upper node
//! of the trie (which random chunks would, leaving most of each round's nodes as garbage
//! in a store that never deletes trie nodes), and the 16 stretches of one trie update and
//! hash in parallel. The root depends on the contents only, not on the chunking, so it is
//! the same on every backend.

use alloy_primitives::{keccak256, Address, B256, U256};
use ethrex_blockchain::error::BlockError;
use ethrex_blockchain::genesis::{
    alloc_changes, alloc_state_root, genesis_header, geth_alloc, init_genesis, GenesisAccount,
};
use ethrex_blockchain::state_root::{
    compute_state_update, compute_state_update_with, PreBlockSlots,
};
use ethrex_common::{AccountState, Block, BlockBody, Header, EMPTY_ROOT_HASH, KECCAK_EMPTY};
use ethrex_storage::{StateUpdate, Store};
use ethrex_trie::keccak::keccak256_all;
use ethrex_vm::AccountChange;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::time::Instant;

/// Entries (slots or accounts) one round puts into the trie at most: bounds the memory a
/// round takes (its updates, new nodes and the store batch).
pub const CHUNK_ENTRIES: u64 = 1 << 20;

/// Contiguous stretches of the sorted keys a round takes, one per lane: 16, so a round's
/// keys fall under every child of a trie's root and update in parallel.
const LANES: u64 = 16;

/// The first 24 bytes of `account_prefix()` (the seed fills the last 8).
const ACCOUNT_TAG: [u8; 24] = *b"ethrex/state-filler/acct";

/// 10^18: token values are whole tokens of 18 decimals.
const ETHER: u128 = 1_000_000_000_000_000_000;

/// A deterministic filler state on top of a genesis allocation: `accounts` EOAs and
/// `slots` storage slots spread over `contracts` (which the allocation must hold). Same
/// value => same state. Serialized as `<stem>.state.json` beside a fixture.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StateFiller {
    /// Seeds every address, key and value.
    pub seed: u64,
    /// Filler accounts: `account(0) .. account(accounts - 1)`.
    pub accounts: u64,
    /// Filler slots in all, spread evenly over `contracts` (see `slots_of`).
    pub slots: u64,
    /// The contracts holding the filler slots, in order (index `k` of `slots_of`, `slot`).
    pub contracts: Vec<Address>,
}

/// A 64-bit mix (SplitMix64's finalizer) of three words: cheap per-entry values, the
/// same on every platform.
fn mix(seed: u64, a: u64, b: u64) -> u64 {
    let mut z = seed
        ^ a.wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ b.wrapping_mul(0xc2b2_ae3d_27d4_eb4f).rotate_left(31);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The slot of `holder`'s entry in a Solidity `mapping(address => uint256)` at slot 0.
pub fn balance_slot(holder: Address) -> U256 {
    let mut buf = [0u8; 64];
    buf[12..32].copy_from_slice(holder.as_slice());
    U256::from_be_bytes(keccak256(buf).0)
}

impl StateFiller {
    /// Whether the filler adds nothing (the plain genesis).
    pub fn is_empty(&self) -> bool {
        self.accounts == 0 && self.slots == 0
    }

    /// The first word hashed into every filler address: a fixed tag, then the seed
    /// (8 bytes, big-endian). A contract computing `account(j)` takes it as an argument.
    pub fn account_prefix(&self) -> B256 {
        let mut word = [0u8; 32];
        word[..24].copy_from_slice(&ACCOUNT_TAG);
        word[24..].copy_from_slice(&self.seed.to_be_bytes());
        B256::from(word)
    }

    fn account_message(&self, i: u64) -> [u8; 64] {
        let mut msg = [0u8; 64];
        msg[..32].copy_from_slice(self.account_prefix().as_slice());
        msg[56..].copy_from_slice(&i.to_be_bytes());
        msg
    }

    /// Filler account `i`: the low 20 bytes of `keccak256(account_prefix() ++ pad32(i))`.
    /// Accounts exist for `i < accounts`; larger `i` name the holders of filler slots
    /// beyond the accounts (addresses with no account).
    pub fn account(&self, i: u64) -> Address {
        Address::from_slice(&keccak256(self.account_message(i))[12..])
    }

    /// Filler account `i`'s nonce (0..15) and balance (10^12 .. 10^18 wei).
    pub fn account_info(&self, i: u64) -> (u64, U256) {
        let r = mix(self.seed, 0, i);
        (r >> 60, U256::from((r % 1_000_000 + 1) as u128 * 1_000_000_000_000))
    }

    /// How many filler slots contract `k` holds: `slots` spread evenly, the first
    /// `slots % contracts.len()` contracts holding one more. 0 for `k` out of range.
    pub fn slots_of(&self, k: usize) -> u64 {
        let n = self.contracts.len() as u64;
        if k as u64 >= n {
            return 0;
        }
        self.slots / n + u64::from((k as u64) < self.slots % n)
    }

    /// The key of contract `k`'s `j`-th filler slot: `balance_slot(account(j))`, the same
    /// key for every `k` (each contract has its own storage). Exists for `j < slots_of(k)`.
    pub fn slot(&self, k: usize, j: u64) -> U256 {
        let _ = k;
        balance_slot(self.account(j))
    }

    /// The value of contract `k`'s `j`-th filler slot: 1 .. 10^6 tokens of 18 decimals.
    pub fn slot_value(&self, k: usize, j: u64) -> U256 {
        let r = mix(self.seed, k as u64 + 1, j);
        U256::from((r % 1_000_000 + 1) as u128) * U256::from(ETHER)
    }

    /// The account record of filler account `i`.
    fn account_state(&self, i: u64) -> AccountState {
        let (nonce, balance) = self.account_info(i);
        AccountState { nonce, balance, storage_root: EMPTY_ROOT_HASH, code_hash: KECCAK_EMPTY }
    }

    /// Most slots any contract holds.
    fn max_slots(&self) -> u64 {
        self.slots_of(0)
    }
}

fn spec_error(message: String) -> BlockError {
    BlockError::storage(message)
}

/// Writes `genesis` (its allocation) plus `filler` into `store` and commits the genesis
/// block; returns its header. Without a filler (or an empty one) this is exactly
/// `init_genesis` with `genesis_header(genesis, alloc_state_root(alloc))`. Idempotent: a
/// store already holding this genesis (its header, and the filler's first and last
/// accounts and slots, spot-checked) is left as it is. Fails if the store holds another
/// genesis, holds state but no genesis (an interrupted build: start from an empty
/// directory), or a filler contract is not in the allocation.
///
/// Memory stays bounded: 16 bytes of index per filler account and per slot of the
/// contract holding the most, plus two rounds of at most `CHUNK_ENTRIES` entries (one
/// being computed, one on its way to the disk). Measured on 2 cores with RocksDB: 200k
/// accounts and 2M slots in 14 s (0.42 GB of tables); 2M accounts and 20M slots in
/// 150-170 s, 4 GB resident with the store's caches, 9.6 GB on disk at the end (tables
/// and the write-ahead log RocksDB has not dropped yet).
pub fn init_genesis_filled(
    store: &Store,
    genesis: &alloy_genesis::Genesis,
    filler: Option<&StateFiller>,
) -> Result<Header, BlockError> {
    init_genesis_filled_in_rounds(store, genesis, filler, CHUNK_ENTRIES)
}

/// `init_genesis_filled` with rounds of at most `chunk` entries (tests use small ones).
pub fn init_genesis_filled_in_rounds(
    store: &Store,
    genesis: &alloy_genesis::Genesis,
    filler: Option<&StateFiller>,
    chunk: u64,
) -> Result<Header, BlockError> {
    let alloc = geth_alloc(genesis);
    let Some(filler) = filler.filter(|f| !f.is_empty()) else {
        let header = genesis_header(genesis, alloc_state_root(&alloc)?);
        init_genesis(store, header.clone(), &alloc)?;
        return Ok(header);
    };
    check_spec(filler, &alloc)?;
    store.check_layout()?;
    if let Some(existing) = store.genesis_hash()? {
        return check_existing(store, genesis, filler, existing);
    }
    let probe = alloc.keys().next().copied().unwrap_or_else(|| filler.account(0));
    if store.account(&probe)?.is_some() {
        return Err(spec_error(format!(
            "the store holds state ({probe} exists) but no genesis: an interrupted build? \
             use an empty data directory"
        )));
    }
    let started = Instant::now();

    // The allocation, as `init_genesis` writes it.
    let (changes, codes) = alloc_changes(&alloc);
    let (mut root, update, _) = compute_state_update(store, EMPTY_ROOT_HASH, &changes, codes)?;
    store.write_state(update)?;

    if filler.slots > 0 {
        root = fill_slots(store, filler, &alloc, root, chunk)?;
        tracing::info!(
            slots = filler.slots,
            elapsed = ?started.elapsed(),
            "state filler: slots written"
        );
    }
    if filler.accounts > 0 {
        root = fill_accounts(store, filler, root, chunk)?;
        tracing::info!(
            accounts = filler.accounts,
            elapsed = ?started.elapsed(),
            "state filler: accounts written"
        );
    }

    let header = genesis_header(genesis, root);
    let hash = header.hash_slow();
    let withdrawals = header.withdrawals_root.map(|_| Default::default());
    let block = Block {
        header: header.clone(),
        body: BlockBody { transactions: vec![], ommers: vec![], withdrawals },
    };
    store.commit_genesis(hash, &block, StateUpdate::default())?;
    store.flush()?;
    Ok(header)
}

/// Every filler contract is in the allocation, once.
fn check_spec(
    filler: &StateFiller,
    alloc: &BTreeMap<Address, GenesisAccount>,
) -> Result<(), BlockError> {
    if filler.slots > 0 && filler.contracts.is_empty() {
        return Err(spec_error("the state filler has slots but no contract to hold them".into()));
    }
    for (k, c) in filler.contracts.iter().enumerate() {
        if !alloc.contains_key(c) {
            return Err(spec_error(format!("state filler contract {c} is not in the genesis")));
        }
        if filler.contracts[..k].contains(c) {
            return Err(spec_error(format!("state filler contract {c} is listed twice")));
        }
    }
    Ok(())
}

/// A store that already has a genesis: it must be this one, header and filler.
fn check_existing(
    store: &Store,
    genesis: &alloy_genesis::Genesis,
    filler: &StateFiller,
    existing: B256,
) -> Result<Header, BlockError> {
    let header = store
        .header(&existing)?
        .ok_or_else(|| spec_error(format!("the store's genesis {existing} has no header")))?;
    let expected = genesis_header(genesis, header.state_root);
    if expected.hash_slow() != existing {
        return Err(spec_error(format!(
            "store already holds genesis {existing}, not {}: use another data directory",
            expected.hash_slow()
        )));
    }
    let mismatch = |what: String| {
        spec_error(format!("the store's genesis state differs from the filler: {what}"))
    };
    if filler.accounts > 0 {
        for i in [0, filler.accounts - 1] {
            let got = store.account(&filler.account(i))?;
            if got != Some(filler.account_state(i)) {
                return Err(mismatch(format!("account {i} is {got:?}")));
            }
        }
        if store.account(&filler.account(filler.accounts))?.is_some() {
            return Err(mismatch(format!("account {} exists", filler.accounts)));
        }
    }
    for (k, contract) in filler.contracts.iter().enumerate() {
        let n = filler.slots_of(k);
        for j in [0, n.saturating_sub(1)].into_iter().filter(|_| n > 0) {
            let got = store.storage(contract, &filler.slot(k, j))?;
            if got != filler.slot_value(k, j) {
                return Err(mismatch(format!("slot {j} of {contract} is {got}")));
            }
        }
        if !store.storage(contract, &filler.slot(k, n))?.is_zero() {
            return Err(mismatch(format!("slot {n} of {contract} is set")));
        }
    }
    Ok(header)
}

/// The filled state is new: every slot it writes was zero (the change set, which needs
/// the previous values, is dropped), so nothing is read for it.
struct NothingBefore;

impl PreBlockSlots for NothingBefore {
    fn pre_block_slot(&self, _: &Address, _: &U256) -> Result<U256, BlockError> {
        Ok(U256::ZERO)
    }
}

/// `(first 8 bytes of the trie key, i)` for every `i < n`, sorted: the order in which
/// the entries sit in their trie. `trie_keys` hashes a batch of indices.
fn sorted_index(n: u64, trie_keys: impl Fn(&[u64]) -> Vec<B256> + Sync) -> Vec<(u64, u64)> {
    const BATCH: u64 = 4096;
    let mut index: Vec<(u64, u64)> = (0..n.div_ceil(BATCH))
        .into_par_iter()
        .flat_map_iter(|b| {
            let ids: Vec<u64> = (b * BATCH..((b + 1) * BATCH).min(n)).collect();
            let keys = trie_keys(&ids);
            ids.into_iter()
                .zip(keys)
                .map(|(i, key)| (u64::from_be_bytes(key[..8].try_into().expect("8 bytes")), i))
                .collect::<Vec<_>>()
        })
        .collect();
    index.par_sort_unstable();
    index
}

/// Filler addresses of a batch of indices, hashed side by side.
fn accounts_of(filler: &StateFiller, ids: &[u64]) -> Vec<Address> {
    let msgs: Vec<[u8; 64]> = ids.iter().map(|&i| filler.account_message(i)).collect();
    keccak256_all(&msgs).into_iter().map(|h| Address::from_slice(&h[12..])).collect()
}

/// Filler slot keys (`balance_slot(account(j))`) of a batch of indices.
fn slot_keys_of(filler: &StateFiller, ids: &[u64]) -> Vec<B256> {
    let msgs: Vec<[u8; 64]> = accounts_of(filler, ids)
        .into_iter()
        .map(|a| {
            let mut buf = [0u8; 64];
            buf[12..32].copy_from_slice(a.as_slice());
            buf
        })
        .collect();
    keccak256_all(&msgs)
}

/// Positions `[start, end)` of the sorted index (`n` entries) that round `round` of
/// `rounds` takes from `lane`.
fn lane_range(n: u64, lane: u64, round: u64, rounds: u64) -> std::ops::Range<usize> {
    let at = |lane: u64, round: u64| -> u64 {
        let (n, lane, round, rounds) = (n as u128, lane as u128, round as u128, rounds as u128);
        let start = n * lane / LANES as u128;
        let len = n * (lane + 1) / LANES as u128 - start;
        (start + len * round / rounds) as u64
    };
    at(lane, round) as usize..at(lane, round + 1) as usize
}

/// Writes every contract's filler slots on top of `root`; returns the new root.
fn fill_slots(
    store: &Store,
    filler: &StateFiller,
    alloc: &BTreeMap<Address, GenesisAccount>,
    mut root: B256,
    chunk: u64,
) -> Result<B256, BlockError> {
    // Contract k holds keys 0 .. slots_of(k) and the keys are the same for every
    // contract, so one index over the largest range serves them all.
    let t = Instant::now();
    let index = sorted_index(filler.max_slots(), |ids| {
        let keys = slot_keys_of(filler, ids);
        keccak256_all(&keys)
    });
    tracing::info!(keys = index.len(), elapsed = ?t.elapsed(), "state filler: slot keys sorted");
    let n = index.len() as u64;
    let rounds = filler.slots.div_ceil(chunk).max(1);
    for round in 0..rounds {
        let ids: Vec<u64> = (0..LANES)
            .flat_map(|lane| index[lane_range(n, lane, round, rounds)].iter().map(|(_, j)| *j))
            .collect();
        let keys = slot_keys_of(filler, &ids);
        let changes: Vec<AccountChange> = filler
            .contracts
            .iter()
            .enumerate()
            .map(|(k, contract)| {
                let account = &alloc[contract];
                let code_hash =
                    if account.code.is_empty() { KECCAK_EMPTY } else { keccak256(&account.code) };
                let limit = filler.slots_of(k);
                let storage = ids
                    .iter()
                    .zip(&keys)
                    .filter(|(j, _)| **j < limit)
                    .map(|(j, key)| (U256::from_be_bytes(key.0), filler.slot_value(k, *j)))
                    .collect();
                AccountChange {
                    address: *contract,
                    info: Some((account.nonce, account.balance, code_hash)),
                    storage_wiped: false,
                    storage,
                }
            })
            .collect();
        root = write_round(store, root, &changes)?;
        tracing::debug!(round, rounds, elapsed = ?t.elapsed(), "state filler: slot round");
    }
    Ok(root)
}

/// Writes the filler accounts on top of `root`; returns the new root.
fn fill_accounts(
    store: &Store,
    filler: &StateFiller,
    mut root: B256,
    chunk: u64,
) -> Result<B256, BlockError> {
    let t = Instant::now();
    let index = sorted_index(filler.accounts, |ids| keccak256_all(&accounts_of(filler, ids)));
    tracing::info!(keys = index.len(), elapsed = ?t.elapsed(), "state filler: accounts sorted");
    let n = index.len() as u64;
    let rounds = n.div_ceil(chunk).max(1);
    for round in 0..rounds {
        let ids: Vec<u64> = (0..LANES)
            .flat_map(|lane| index[lane_range(n, lane, round, rounds)].iter().map(|(_, i)| *i))
            .collect();
        let addresses = accounts_of(filler, &ids);
        let changes: Vec<AccountChange> = ids
            .iter()
            .zip(addresses)
            .map(|(&i, address)| {
                let (nonce, balance) = filler.account_info(i);
                AccountChange {
                    address,
                    info: Some((nonce, balance, KECCAK_EMPTY)),
                    storage_wiped: false,
                    storage: Vec::new(),
                }
            })
            .collect();
        root = write_round(store, root, &changes)?;
        tracing::debug!(round, rounds, elapsed = ?t.elapsed(), "state filler: account round");
    }
    Ok(root)
}

/// One round: the changes on top of `root`, written; returns the new root. Waits until
/// the round before has reached the backend, so at most two rounds are in memory while
/// the next one is computed.
fn write_round(store: &Store, root: B256, changes: &[AccountChange]) -> Result<B256, BlockError> {
    let (root, update, _) =
        compute_state_update_with(store, &NothingBefore, root, changes, vec![])?;
    store.write_state(update)?;
    store.persist(1)?;
    Ok(root)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::Bytes;
    use ethrex_common::{ChainConfig, Fork};
    use ethrex_storage::DbKind;

    /// A genesis with two contracts (with some storage of their own) and two EOAs.
    fn small_genesis() -> (alloy_genesis::Genesis, Vec<Address>) {
        let config = ChainConfig::all_forks_at_genesis(1, Fork::Amsterdam);
        let contracts = vec![Address::repeat_byte(0xc1), Address::repeat_byte(0xc2)];
        let mut alloc = BTreeMap::new();
        for (n, c) in contracts.iter().enumerate() {
            let storage = BTreeMap::from([
                (B256::from(U256::from(2)), B256::from(U256::from(1000 + n))),
                // A slot the filler also writes (holder 0 of contract 0): the filler wins.
                (B256::from(balance_slot(filler_spec(0, 0).account(0))), B256::from(U256::from(7))),
            ]);
            alloc.insert(
                *c,
                alloy_genesis::GenesisAccount::default()
                    .with_nonce(Some(1))
                    .with_code(Some(Bytes::from(vec![0x60, n as u8, 0x00])))
                    .with_storage(Some(storage)),
            );
        }
        for b in [0xe1u8, 0xe2] {
            alloc.insert(
                Address::repeat_byte(b),
                alloy_genesis::GenesisAccount::default().with_balance(U256::from(b)),
            );
        }
        let genesis = alloy_genesis::Genesis {
            config: config.inner.clone(),
            gas_limit: 30_000_000,
            base_fee_per_gas: Some(7),
            alloc,
            ..Default::default()
        };
        (genesis, contracts)
    }

    fn filler_spec(accounts: u64, slots: u64) -> StateFiller {
        let contracts = vec![Address::repeat_byte(0xc1), Address::repeat_byte(0xc2)];
        StateFiller { seed: 9, accounts, slots, contracts }
    }

    /// The state root of genesis + filler, from every account and slot listed in full and
    /// hashed with `alloy_trie`'s `HashBuilder` (`root_from_scratch`).
    fn reference_root(genesis: &alloy_genesis::Genesis, filler: &StateFiller) -> B256 {
        let mut accounts: BTreeMap<Address, (u64, U256, B256, BTreeMap<U256, U256>)> =
            BTreeMap::new();
        for (address, a) in geth_alloc(genesis) {
            let code_hash = if a.code.is_empty() { KECCAK_EMPTY } else { keccak256(&a.code) };
            accounts.insert(address, (a.nonce, a.balance, code_hash, a.storage));
        }
        for (k, contract) in filler.contracts.iter().enumerate() {
            for j in 0..filler.slots_of(k) {
                let slot = U256::from_be_bytes(
                    keccak256(
                        [[0u8; 12].as_slice(), filler.account(j).as_slice(), &[0u8; 32]].concat(),
                    )
                    .0,
                );
                accounts.get_mut(contract).unwrap().3.insert(slot, filler.slot_value(k, j));
            }
        }
        for i in 0..filler.accounts {
            let (nonce, balance) = filler.account_info(i);
            accounts.insert(filler.account(i), (nonce, balance, KECCAK_EMPTY, BTreeMap::new()));
        }
        let leaves = accounts.into_iter().map(|(address, (nonce, balance, code_hash, storage))| {
            let storage_root = ethrex_trie::root_from_scratch(
                storage
                    .into_iter()
                    .map(|(k, v)| (keccak256(k.to_be_bytes::<32>()), alloy_rlp::encode(v))),
            );
            let account = AccountState { nonce, balance, storage_root, code_hash };
            (keccak256(address), alloy_rlp::encode(account))
        });
        ethrex_trie::root_from_scratch(leaves)
    }

    #[test]
    fn filled_root_matches_an_independent_computation() {
        let (genesis, _) = small_genesis();
        let filler = filler_spec(3_000, 10_001);
        let expected = reference_root(&genesis, &filler);
        // One round, several rounds, and rounds smaller than the lanes.
        for chunk in [CHUNK_ENTRIES, 1_000, 7] {
            let store = Store::in_memory();
            let header =
                init_genesis_filled_in_rounds(&store, &genesis, Some(&filler), chunk).unwrap();
            assert_eq!(header.state_root, expected, "chunk {chunk}");
            assert_eq!(store.head_header().unwrap().unwrap(), header);
            // The flat state agrees with the trie (every account, every slot).
            assert_eq!(ethrex_blockchain::state_root::verify_head_state(&store).unwrap(), expected);
        }
    }

    #[test]
    fn the_filler_overrides_a_colliding_genesis_slot() {
        let (genesis, contracts) = small_genesis();
        let filler = filler_spec(0, 4);
        let store = Store::in_memory();
        init_genesis_filled(&store, &genesis, Some(&filler)).unwrap();
        let key = filler.slot(0, 0);
        assert_eq!(store.storage(&contracts[0], &key).unwrap(), filler.slot_value(0, 0));
        assert_eq!(store.storage(&contracts[0], &U256::from(2)).unwrap(), U256::from(1000));
    }

    #[test]
    fn no_filler_is_the_plain_genesis() {
        let (genesis, _) = small_genesis();
        let alloc = geth_alloc(&genesis);
        let plain = genesis_header(&genesis, alloc_state_root(&alloc).unwrap());
        for filler in [None, Some(filler_spec(0, 0))] {
            let store = Store::in_memory();
            let header = init_genesis_filled(&store, &genesis, filler.as_ref()).unwrap();
            assert_eq!(header, plain);
            assert_eq!(store.genesis_hash().unwrap(), Some(plain.hash_slow()));
        }
    }

    #[test]
    fn deterministic_across_builds_and_backends_and_idempotent() {
        let (genesis, contracts) = small_genesis();
        let filler = filler_spec(2_000, 5_000);
        let memory =
            init_genesis_filled_in_rounds(&Store::in_memory(), &genesis, Some(&filler), 999)
                .unwrap();
        let again = init_genesis_filled(&Store::in_memory(), &genesis, Some(&filler)).unwrap();
        assert_eq!(memory, again);
        for kind in [DbKind::Rocksdb, DbKind::Mdbx] {
            let dir = tempfile::tempdir().unwrap();
            let header = {
                let store = Store::open(kind, Some(dir.path())).unwrap();
                init_genesis_filled_in_rounds(&store, &genesis, Some(&filler), 1_500).unwrap()
            };
            assert_eq!(header, memory, "{kind:?}");
            // Reopened: the same genesis is accepted, another filler or genesis is not.
            let store = Store::open(kind, Some(dir.path())).unwrap();
            assert_eq!(init_genesis_filled(&store, &genesis, Some(&filler)).unwrap(), header);
            let fewer = StateFiller { accounts: 1_999, ..filler.clone() };
            let err = init_genesis_filled(&store, &genesis, Some(&fewer)).unwrap_err();
            assert!(err.to_string().contains("differs from the filler"), "{err}");
            let other_seed = StateFiller { seed: 10, ..filler.clone() };
            assert!(init_genesis_filled(&store, &genesis, Some(&other_seed)).is_err());
            assert!(init_genesis_filled(&store, &genesis, None).is_err());
            assert_eq!(
                store.storage(&contracts[1], &filler.slot(1, 2_499)).unwrap(),
                filler.slot_value(1, 2_499)
            );
        }
        assert_ne!(
            init_genesis_filled(
                &Store::in_memory(),
                &genesis,
                Some(&StateFiller { seed: 10, ..filler })
            )
            .unwrap()
            .state_root,
            memory.state_root
        );
    }

    #[test]
    fn rejects_a_contract_outside_the_genesis_and_a_half_built_store() {
        let (genesis, _) = small_genesis();
        let filler = StateFiller {
            seed: 1,
            accounts: 0,
            slots: 10,
            contracts: vec![Address::repeat_byte(0x99)],
        };
        let err = init_genesis_filled(&Store::in_memory(), &genesis, Some(&filler)).unwrap_err();
        assert!(err.to_string().contains("not in the genesis"), "{err}");

        let store = Store::in_memory();
        let filler = filler_spec(10, 10);
        let (changes, codes) = alloc_changes(&geth_alloc(&genesis));
        let (_, update, _) =
            compute_state_update(&store, EMPTY_ROOT_HASH, &changes, codes).unwrap();
        store.write_state(update).unwrap();
        let err = init_genesis_filled(&store, &genesis, Some(&filler)).unwrap_err();
        assert!(err.to_string().contains("no genesis"), "{err}");
    }

    #[test]
    fn key_space_accessors() {
        let filler = StateFiller {
            seed: 3,
            accounts: 5,
            slots: 11,
            contracts: vec![Address::ZERO, Address::repeat_byte(1), Address::repeat_byte(2)],
        };
        assert_eq!((0..4).map(|k| filler.slots_of(k)).collect::<Vec<_>>(), vec![4, 4, 3, 0]);
        assert_ne!(filler.account(0), filler.account(1));
        let json = serde_json::to_string(&filler).unwrap();
        assert_eq!(serde_json::from_str::<StateFiller>(&json).unwrap(), filler);
        // The documented derivations.
        let mut msg = filler.account_prefix().to_vec();
        msg.extend_from_slice(&U256::from(4).to_be_bytes::<32>());
        assert_eq!(filler.account(4), Address::from_slice(&keccak256(&msg)[12..]));
        assert_eq!(&filler.account_prefix()[24..], &3u64.to_be_bytes());
        let mut slot = [0u8; 64];
        slot[12..32].copy_from_slice(filler.account(4).as_slice());
        assert_eq!(filler.slot(2, 4), U256::from_be_bytes(keccak256(slot).0));
        assert_eq!(slot_keys_of(&filler, &[4])[0], B256::from(filler.slot(0, 4)));
        assert_eq!(accounts_of(&filler, &[0, 4]), vec![filler.account(0), filler.account(4)]);
        // Lanes cover every position once, in order, for any round count.
        for (n, rounds) in [(0u64, 1u64), (5, 3), (1_000, 7), (17, 40)] {
            let mut covered = Vec::new();
            for round in 0..rounds {
                for lane in 0..LANES {
                    covered.extend(lane_range(n, lane, round, rounds));
                }
            }
            covered.sort_unstable();
            assert_eq!(covered, (0..n as usize).collect::<Vec<_>>(), "{n} in {rounds}");
        }
    }

    /// Build time and size of a large filled state on RocksDB (run with `--ignored
    /// --nocapture`; `FILLER_ACCOUNTS`, `FILLER_SLOTS`, `FILLER_CONTRACTS`, `FILLER_DIR`).
    #[test]
    #[ignore]
    fn measure_a_large_build() {
        let var = |name: &str, default: u64| {
            std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
        };
        let (mut genesis, _) = small_genesis();
        let contracts: Vec<Address> = (0..var("FILLER_CONTRACTS", 8))
            .map(|k| Address::left_padding_from(&(k + 0x1000).to_be_bytes()))
            .collect();
        for c in &contracts {
            genesis.alloc.insert(
                *c,
                alloy_genesis::GenesisAccount::default()
                    .with_nonce(Some(1))
                    .with_code(Some(Bytes::from_static(&[0x00]))),
            );
        }
        let filler = StateFiller {
            seed: 1,
            accounts: var("FILLER_ACCOUNTS", 200_000),
            slots: var("FILLER_SLOTS", 2_000_000),
            contracts,
        };
        let dir = match std::env::var("FILLER_DIR") {
            Ok(d) => tempfile::tempdir_in(d).unwrap(),
            Err(_) => tempfile::tempdir().unwrap(),
        };
        let t = Instant::now();
        let header = {
            let store = Store::open(DbKind::Rocksdb, Some(dir.path())).unwrap();
            init_genesis_filled(&store, &genesis, Some(&filler)).unwrap()
        };
        let elapsed = t.elapsed();
        let (mut tables, mut other) = (0u64, 0u64);
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let entry = entry.unwrap();
            let len = entry.metadata().unwrap().len();
            if entry.file_name().to_string_lossy().ends_with(".sst") {
                tables += len;
            } else {
                other += len;
            }
        }
        println!(
            "{} accounts, {} slots over {} contracts: {elapsed:.1?}, {:.2} GB of tables + \
             {:.2} GB of logs on disk, root {}",
            filler.accounts,
            filler.slots,
            filler.contracts.len(),
            tables as f64 / 1e9,
            other as f64 / 1e9,
            header.state_root
        );
    }
}
