//! Building a configuration's database and timing one run of a workload on it.

use crate::store::{KvNodeStore, KvTrieNodes};
use crate::workload::{self, Tx, FEE_WEI, SEQ, TOKEN};
use alloy_primitives::{keccak256, Address, B256, U256};
use anyhow::Context;
use ethrex_bench_storage::BenchBackend;
use ethrex_bintrie::{
    basic_data_key, code_hash_key, split_key, storage_slot_key, BasicData, BinaryTrie,
};
use ethrex_common::{AccountState, EMPTY_ROOT_HASH, KECCAK_EMPTY};
use ethrex_storage::DbKind;
use ethrex_storage::KvBackend;
use ethrex_trie::Trie;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// A state commitment scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scheme {
    /// The Merkle-Patricia trie (`ethrex-trie`), nodes by hash.
    Mpt,
    /// The EIP-7864 binary trie (`ethrex-bintrie`), nodes by path in groups.
    Binary,
}

impl Scheme {
    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Mpt => "mpt",
            Scheme::Binary => "binary",
        }
    }
}

impl std::str::FromStr for Scheme {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "mpt" => Ok(Scheme::Mpt),
            "binary" => Ok(Scheme::Binary),
            other => Err(format!("unknown scheme '{other}' (expected mpt or binary)")),
        }
    }
}

/// One measured configuration: MPT, or the binary trie at a group depth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Config {
    /// The scheme.
    pub scheme: Scheme,
    /// The group depth (binary only).
    pub group_depth: Option<u8>,
}

impl Config {
    /// `GD-g` or `MPT`.
    pub fn label(&self) -> String {
        match self.group_depth {
            Some(g) => format!("GD-{g}"),
            None => "MPT".into(),
        }
    }
}

/// Times of one run, in milliseconds, and the node loads it took.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sample {
    /// Reading every value the transactions read, through the trie.
    pub state_read: f64,
    /// Applying the writes and re-hashing up to the new root.
    pub trie_update: f64,
    /// Encoding the changed nodes and writing them in one batch.
    pub commit: f64,
    /// Nodes (binary: stem and group blobs; MPT: RLP nodes) read from the backend.
    pub nodes_loaded: u64,
}

impl Sample {
    /// The three phases.
    pub fn total(&self) -> f64 {
        self.state_read + self.trie_update + self.commit
    }
}

/// A configuration's database: its directory, the open backend and the state root.
pub struct Db {
    /// What it holds.
    pub config: Config,
    /// Where its files are.
    pub dir: PathBuf,
    kind: DbKind,
    backend: Option<Arc<dyn BenchBackend>>,
    /// The state root (binary root, or the MPT's account-trie root).
    pub root: B256,
    /// Bytes of the database files after the prefill.
    pub size_bytes: u64,
}

/// Values per commit while prefilling (bounds the memory the trie holds).
const PREFILL_CHUNK: usize = 250_000;

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

fn dir_size(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| {
                    let path = e.path();
                    if path.is_dir() {
                        dir_size(&path)
                    } else {
                        e.metadata().map(|m| m.len()).unwrap_or(0)
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

impl Db {
    /// Creates the database in `dir` and prefills it with `entries` holders and slots.
    pub fn create(
        config: Config,
        kind: DbKind,
        dir: PathBuf,
        entries: u64,
    ) -> anyhow::Result<Self> {
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let backend = ethrex_bench_storage::open_backend(kind, Some(&dir))?;
        let kv: Arc<dyn KvBackend> = backend.clone();
        let root = match config.group_depth {
            Some(g) => prefill_binary(&kv, g, entries)?,
            None => prefill_mpt(&kv, entries)?,
        };
        backend.sync()?;
        let size_bytes = dir_size(&dir);
        Ok(Self { config, dir, kind, backend: Some(backend), root, size_bytes })
    }

    /// The open backend; with `cold`, first closed, the page cache of its files dropped,
    /// reopened and its own caches emptied. Returns how the page cache was dropped.
    fn backend(
        &mut self,
        cold: bool,
    ) -> anyhow::Result<(Arc<dyn KvBackend>, Option<&'static str>)> {
        let mut dropped = None;
        if cold && self.kind != DbKind::Memory {
            if let Some(backend) = self.backend.take() {
                backend.sync()?;
                drop(backend);
            }
            let how = ethrex_bench_storage::os_cache::drop_page_cache(&self.dir)
                .with_context(|| format!("dropping the page cache of {}", self.dir.display()))?;
            dropped = Some(how.name());
        }
        let backend = match &self.backend {
            Some(b) => b.clone(),
            None => {
                let b = ethrex_bench_storage::open_backend(self.kind, Some(&self.dir))?;
                self.backend = Some(b.clone());
                b
            }
        };
        if cold {
            backend.drop_caches();
        }
        Ok((backend as Arc<dyn KvBackend>, dropped))
    }

    /// One timed run of `txs` on this database, which then holds its writes.
    pub fn run(
        &mut self,
        txs: &[Tx],
        cold: bool,
    ) -> anyhow::Result<(Sample, Option<&'static str>)> {
        let (backend, dropped) = self.backend(cold)?;
        let sample = match self.config.group_depth {
            Some(g) => {
                let (sample, root) = run_binary(backend, g, self.root, txs)?;
                self.root = root;
                sample
            }
            None => {
                let (sample, root) = run_mpt(backend, self.root, txs)?;
                self.root = root;
                sample
            }
        };
        Ok((sample, dropped))
    }
}

/// Every value of the prefilled state as binary-trie `(key, value)` pairs.
fn binary_leaves(entries: u64) -> Vec<(B256, B256)> {
    let mut leaves = Vec::with_capacity(entries as usize * 3 + 16);
    for i in 0..entries {
        let address = workload::holder(i);
        let (nonce, balance) = workload::holder_account(i);
        let basic = BasicData { version: 0, code_size: 0, nonce, balance: balance.to::<u128>() };
        leaves.push((basic_data_key(&address), basic.encode()));
        leaves.push((code_hash_key(&address), KECCAK_EMPTY));
        leaves.push((
            storage_slot_key(&TOKEN, workload::balance_slot(&address)),
            B256::from(workload::holder_tokens(i)),
        ));
        leaves.push((storage_slot_key(&SEQ, U256::from(i)), B256::from(workload::seq_value(i))));
    }
    leaves
}

fn prefill_binary(backend: &Arc<dyn KvBackend>, g: u8, entries: u64) -> anyhow::Result<B256> {
    let store = KvNodeStore::new(backend.clone());
    let mut trie = BinaryTrie::new(store.clone(), g)?;
    for (address, code) in [(TOKEN, workload::token_code()), (SEQ, workload::seq_code())] {
        trie.update_account(&address, 1, U256::ZERO, code.len() as u32, keccak256(&code))?;
        trie.update_code(&address, &code)?;
    }
    let mut leaves = binary_leaves(entries);
    // In key order, each chunk extends the committed tree on one side only, so a reopened
    // trie loads just the boundary path.
    leaves.sort_unstable_by_key(|leaf| leaf.0);
    let mut root = trie.commit()?;
    for chunk in leaves.chunks(PREFILL_CHUNK) {
        let mut trie = BinaryTrie::open(store.clone(), root, g)?;
        let mut i = 0;
        while i < chunk.len() {
            let (stem, _) = split_key(&chunk[i].0);
            let mut values = Vec::new();
            while i < chunk.len() && split_key(&chunk[i].0).0 == stem {
                values.push((split_key(&chunk[i].0).1, chunk[i].1));
                i += 1;
            }
            trie.insert_stem_values(&stem, &values)?;
        }
        root = trie.commit()?;
    }
    Ok(root)
}

fn account_rlp(account: &AccountState) -> Vec<u8> {
    alloy_rlp::encode(account)
}

fn storage_rlp(value: U256) -> Vec<u8> {
    alloy_rlp::encode(value)
}

/// Builds a trie of `updates` from empty, a chunk of keys at a time in key order (a
/// chunk loads only the committed boundary path), writing its nodes; returns its root.
fn build_mpt(
    nodes: &KvTrieNodes,
    owner: Option<B256>,
    mut updates: Vec<(B256, Option<Vec<u8>>)>,
) -> anyhow::Result<B256> {
    updates.sort_unstable_by_key(|update| update.0);
    let mut root = EMPTY_ROOT_HASH;
    while !updates.is_empty() {
        let rest = updates.split_off(updates.len().min(PREFILL_CHUNK));
        let chunk = std::mem::replace(&mut updates, rest);
        let mut trie = Trie::open(nodes, owner, root);
        trie.update_batch(chunk)?;
        let (new_root, new) = trie.commit()?;
        nodes.write(vec![new])?;
        root = new_root;
    }
    Ok(root)
}

fn prefill_mpt(backend: &Arc<dyn KvBackend>, entries: u64) -> anyhow::Result<B256> {
    let nodes = KvTrieNodes::new(backend.clone());
    let token_root = build_mpt(
        &nodes,
        Some(keccak256(TOKEN)),
        (0..entries)
            .map(|i| {
                let slot = workload::balance_slot(&workload::holder(i));
                (keccak256(slot.to_be_bytes::<32>()), Some(storage_rlp(workload::holder_tokens(i))))
            })
            .collect(),
    )?;
    let seq_root = build_mpt(
        &nodes,
        Some(keccak256(SEQ)),
        (0..entries)
            .map(|s| {
                let slot = U256::from(s);
                (keccak256(slot.to_be_bytes::<32>()), Some(storage_rlp(workload::seq_value(s))))
            })
            .collect(),
    )?;
    let mut accounts: Vec<(B256, Option<Vec<u8>>)> = (0..entries)
        .map(|i| {
            let (nonce, balance) = workload::holder_account(i);
            let account = AccountState {
                nonce,
                balance,
                storage_root: EMPTY_ROOT_HASH,
                code_hash: KECCAK_EMPTY,
            };
            (keccak256(workload::holder(i)), Some(account_rlp(&account)))
        })
        .collect();
    for (address, code, storage_root) in
        [(TOKEN, workload::token_code(), token_root), (SEQ, workload::seq_code(), seq_root)]
    {
        let account = AccountState {
            nonce: 1,
            balance: U256::ZERO,
            storage_root,
            code_hash: keccak256(&code),
        };
        accounts.push((keccak256(address), Some(account_rlp(&account))));
    }
    build_mpt(&nodes, None, accounts)
}

/// Where a transaction's reads and writes land, for both schemes.
enum Access {
    /// A storage slot of `contract`.
    Slot(Address, U256),
    /// An account.
    Account(Address),
}

fn reads(tx: &Tx) -> Vec<Access> {
    match *tx {
        Tx::BalanceOf { holder } => {
            vec![Access::Slot(TOKEN, workload::balance_slot(&workload::holder(holder)))]
        }
        Tx::Approve { owner, spender, .. } => {
            let (o, s) = (workload::holder(owner), workload::holder(spender));
            vec![Access::Account(o), Access::Slot(TOKEN, workload::allowance_slot(&o, &s))]
        }
        Tx::Sload { slot } | Tx::Sstore { slot, .. } => vec![Access::Slot(SEQ, U256::from(slot))],
    }
}

fn run_binary(
    backend: Arc<dyn KvBackend>,
    g: u8,
    root: B256,
    txs: &[Tx],
) -> anyhow::Result<(Sample, B256)> {
    let store = KvNodeStore::new(backend);
    let started = Instant::now();
    let mut trie = BinaryTrie::open(store, root, g)?;
    // Accounts read by approvals, for their new nonce and balance.
    let mut senders = Vec::new();
    let mut checksum = 0u64;
    for tx in txs {
        for access in reads(tx) {
            match access {
                Access::Slot(contract, slot) => {
                    let value = trie.get_storage(&contract, slot)?;
                    checksum = checksum.wrapping_add(value.map_or(0, |v| v[31] as u64));
                }
                Access::Account(address) => {
                    let account = trie
                        .get_account(&address)?
                        .with_context(|| format!("sender {address} missing"))?;
                    senders.push((address, account));
                }
            }
        }
    }
    std::hint::black_box(checksum);
    let state_read = ms(started);

    let started = Instant::now();
    let mut senders = senders.into_iter();
    for tx in txs {
        match *tx {
            Tx::Approve { owner, spender, amount } => {
                let (address, account) = senders.next().expect("one sender per approval");
                trie.update_account(
                    &address,
                    account.nonce + 1,
                    account.balance - U256::from(FEE_WEI),
                    account.code_size,
                    account.code_hash,
                )?;
                let (o, s) = (workload::holder(owner), workload::holder(spender));
                trie.update_storage(&TOKEN, workload::allowance_slot(&o, &s), B256::from(amount))?;
            }
            Tx::Sstore { slot, value } => {
                trie.update_storage(&SEQ, U256::from(slot), B256::from(value))?;
            }
            Tx::BalanceOf { .. } | Tx::Sload { .. } => {}
        }
    }
    let new_root = trie.root_hash();
    let trie_update = ms(started);

    let started = Instant::now();
    let committed = trie.commit()?;
    let commit = ms(started);
    debug_assert_eq!(committed, new_root);
    let nodes_loaded = trie.stats().nodes_loaded();
    Ok((Sample { state_read, trie_update, commit, nodes_loaded }, committed))
}

fn decode_account(rlp: &[u8]) -> anyhow::Result<AccountState> {
    let mut buf = rlp;
    Ok(<AccountState as alloy_rlp::Decodable>::decode(&mut buf)?)
}

fn run_mpt(backend: Arc<dyn KvBackend>, root: B256, txs: &[Tx]) -> anyhow::Result<(Sample, B256)> {
    let nodes = KvTrieNodes::new(backend);
    let started = Instant::now();
    let mut accounts = Trie::new(&nodes, root);
    let token_key = keccak256(TOKEN);
    let seq_key = keccak256(SEQ);
    let mut token = decode_account(&accounts.get(token_key.as_slice())?.context("no token")?)?;
    let mut seq = decode_account(&accounts.get(seq_key.as_slice())?.context("no seq")?)?;
    let mut token_storage = Trie::storage(&nodes, token_key, token.storage_root);
    let mut seq_storage = Trie::storage(&nodes, seq_key, seq.storage_root);
    let mut senders = Vec::new();
    let mut checksum = 0u64;
    for tx in txs {
        for access in reads(tx) {
            match access {
                Access::Slot(contract, slot) => {
                    let trie =
                        if contract == TOKEN { &mut token_storage } else { &mut seq_storage };
                    let value = trie.get(keccak256(slot.to_be_bytes::<32>()).as_slice())?;
                    checksum = checksum.wrapping_add(value.map_or(0, |v| v.len() as u64));
                }
                Access::Account(address) => {
                    let rlp = accounts
                        .get(keccak256(address).as_slice())?
                        .with_context(|| format!("sender {address} missing"))?;
                    senders.push((address, decode_account(&rlp)?));
                }
            }
        }
    }
    std::hint::black_box(checksum);
    let state_read = ms(started);

    let started = Instant::now();
    let mut senders = senders.into_iter();
    let (mut token_changed, mut seq_changed) = (false, false);
    for tx in txs {
        match *tx {
            Tx::Approve { owner, spender, amount } => {
                let (address, mut account) = senders.next().expect("one sender per approval");
                account.nonce += 1;
                account.balance -= U256::from(FEE_WEI);
                accounts.insert(keccak256(address).as_slice(), account_rlp(&account))?;
                let (o, s) = (workload::holder(owner), workload::holder(spender));
                let slot = workload::allowance_slot(&o, &s);
                token_storage
                    .insert(keccak256(slot.to_be_bytes::<32>()).as_slice(), storage_rlp(amount))?;
                token_changed = true;
            }
            Tx::Sstore { slot, value } => {
                let key = keccak256(U256::from(slot).to_be_bytes::<32>());
                seq_storage.insert(key.as_slice(), storage_rlp(value))?;
                seq_changed = true;
            }
            Tx::BalanceOf { .. } | Tx::Sload { .. } => {}
        }
    }
    if token_changed {
        token.storage_root = token_storage.root_hash()?;
        accounts.insert(token_key.as_slice(), account_rlp(&token))?;
    }
    if seq_changed {
        seq.storage_root = seq_storage.root_hash()?;
        accounts.insert(seq_key.as_slice(), account_rlp(&seq))?;
    }
    accounts.root_hash()?;
    let trie_update = ms(started);

    let started = Instant::now();
    let (_, token_nodes) = token_storage.commit()?;
    let (_, seq_nodes) = seq_storage.commit()?;
    let (new_root, account_nodes) = accounts.commit()?;
    let new = vec![token_nodes, seq_nodes, account_nodes];
    if new.iter().any(|trie| !trie.is_empty()) {
        nodes.write(new)?;
    }
    let commit = ms(started);
    let nodes_loaded = nodes.reads();
    Ok((Sample { state_read, trie_update, commit, nodes_loaded }, new_root))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{transactions, Workload};

    /// Both schemes read what the prefill wrote and agree on what approvals and stores
    /// change: after the same runs, the values read back are the same.
    #[test]
    fn runs_read_and_write_the_same_state_in_both_schemes() {
        let entries = 300;
        let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
        let configs = [
            Config { scheme: Scheme::Mpt, group_depth: None },
            Config { scheme: Scheme::Binary, group_depth: Some(1) },
            Config { scheme: Scheme::Binary, group_depth: Some(8) },
        ];
        let mut dbs: Vec<Db> = configs
            .iter()
            .zip(&dirs)
            .map(|(c, d)| Db::create(*c, DbKind::Mdbx, d.path().join("db"), entries).unwrap())
            .collect();
        // The two binary depths commit to the same root.
        assert_eq!(dbs[1].root, dbs[2].root);
        for (run, workload) in Workload::ALL.into_iter().enumerate() {
            let txs = transactions(workload, run, 40, entries, 1);
            for db in dbs.iter_mut() {
                let before = db.root;
                // Cold (closed, page cache dropped, reopened) once per database.
                let (sample, _) = db.run(&txs, run == 0).unwrap();
                assert!(sample.nodes_loaded > 0, "{workload:?} {}", db.config.label());
                assert!(sample.total() > 0.0);
                assert_eq!(
                    db.root != before,
                    workload.writes(),
                    "{workload:?} {}",
                    db.config.label()
                );
            }
            assert_eq!(dbs[1].root, dbs[2].root, "{workload:?}");
        }
        // The last approvals and stores are visible through both schemes.
        let txs = transactions(Workload::Erc20Approve, 1, 40, entries, 1);
        let Tx::Approve { owner, spender, amount } = txs[39] else { panic!() };
        let slot = workload::allowance_slot(&workload::holder(owner), &workload::holder(spender));
        let (backend, _) = dbs[1].backend(false).unwrap();
        let mut trie = BinaryTrie::open(KvNodeStore::new(backend), dbs[1].root, 1).unwrap();
        let mpt_backend = dbs[0].backend(false).unwrap().0;
        let nodes = KvTrieNodes::new(mpt_backend);
        let mut accounts = Trie::new(&nodes, dbs[0].root);
        let token =
            decode_account(&accounts.get(keccak256(TOKEN).as_slice()).unwrap().unwrap()).unwrap();
        let mut storage = Trie::storage(&nodes, keccak256(TOKEN), token.storage_root);
        // Approve ran before mixed, whose approvals use other keys: the value is still
        // approve run 1's.
        let binary = trie.get_storage(&TOKEN, slot).unwrap();
        let mpt = storage.get(keccak256(slot.to_be_bytes::<32>()).as_slice()).unwrap();
        assert_eq!(binary, Some(B256::from(amount)));
        assert_eq!(mpt, Some(storage_rlp(amount)));
    }
}
