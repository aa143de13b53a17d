//! `--state-scheme binary`: the binary trie the bench keeps beside the MPT, updated block by
//! block from the executed changes, has after every block the root of a trie built from
//! scratch out of that block's full flat state (dumped from an independent plain import),
//! plus the zero writes geth's deletion semantics leave behind; the roots do not depend on
//! the group depth; and `--reads trie` imports the chain (every header's MPT root checked)
//! reading through the trie.

use alloy_primitives::{Address, B256, U256};
use ethrex_bintrie::{BinaryTrie, MemoryStore, StateSpec};
use ethrex_blockchain::Blockchain;
use ethrex_import_bench::bench::{load_fixture, run, BenchOptions, LoadedFixture, Mode};
use ethrex_import_bench::binary::{dump, Reads, StateScheme};
use ethrex_import_bench::generate::{generate, StressOptions};
use ethrex_import_bench::report::ModeReport;
use ethrex_state_filler::init_genesis_filled;
use ethrex_storage::{DbKind, Store};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

fn fixture(dir: &Path) -> LoadedFixture {
    let mut options = StressOptions::new(dir.join("stress"));
    options.blocks = 4;
    options.min_txs = 20;
    options.max_txs = 60;
    options.gas_limit = 30_000_000;
    generate(&options).expect("generating the stress chain");
    load_fixture(&BenchOptions::new(dir.join("stress/stress.rlp"))).expect("loading it")
}

/// The full flat state at genesis and after every block, from a plain import on a store of
/// its own (no bench, no binary trie).
fn states(fixture: &LoadedFixture) -> Vec<StateSpec> {
    let store = Store::open(DbKind::Memory, None).unwrap();
    init_genesis_filled(&store, &fixture.genesis, None).unwrap();
    let chain = Blockchain::new(store, fixture.config.clone());
    let mut out = vec![dump(&chain.store).unwrap()];
    for block in &fixture.blocks {
        chain.import_block(block.clone()).unwrap();
        out.push(dump(&chain.store).unwrap());
    }
    out
}

/// The root geth's semantics give after `states[n]`, from scratch: `states[n]` written into
/// an empty trie, then a zero for every slot an earlier state held that `states[n]` no
/// longer does (a cleared slot is a zero write, never a removal).
/// Also returns how many slots were cleared.
fn reference_root(states: &[StateSpec], n: usize, group_depth: u8) -> (B256, usize) {
    let now = &states[n];
    let present: BTreeMap<Address, &BTreeMap<U256, U256>> =
        now.accounts.iter().map(|a| (a.address, &a.storage)).collect();
    let mut cleared = BTreeSet::new();
    for earlier in &states[..n] {
        for account in &earlier.accounts {
            // A destroyed account would need geth's leftovers (header zeroed, slots and
            // chunks kept); the chain has none, so the reference need not model it.
            let slots = present
                .get(&account.address)
                .unwrap_or_else(|| panic!("{} disappeared before state {n}", account.address));
            for slot in account.storage.keys() {
                if !slots.contains_key(slot) {
                    cleared.insert((account.address, *slot));
                }
            }
        }
    }
    for pair in states[..=n].windows(2) {
        let before: BTreeMap<_, _> =
            pair[0].accounts.iter().map(|a| (a.address, &a.code)).collect();
        for account in &pair[1].accounts {
            // New code at least as long overwrites every chunk of the old (EIP-7702
            // delegations set on EOAs do); shorter code would leave old chunks behind.
            if let Some(code) = before.get(&account.address) {
                assert!(
                    account.code.len() >= code.len(),
                    "{} replaced its code by shorter code",
                    account.address
                );
            }
        }
    }
    let store = MemoryStore::new();
    let mut trie = BinaryTrie::new(&store, group_depth).unwrap();
    now.apply(&mut trie).unwrap();
    for (address, slot) in &cleared {
        trie.delete_storage(address, *slot).unwrap();
    }
    (trie.commit().unwrap(), cleared.len())
}

fn bench(dir: &Path, group_depth: u8, reads: Reads) -> Vec<ModeReport> {
    let mut options = BenchOptions::new(dir.join("stress/stress.rlp"));
    options.modes = vec![Mode::Sequential, Mode::Parallel];
    options.db = DbKind::Rocksdb;
    options.sleep = Duration::ZERO;
    options.scheme = StateScheme::Binary { group_depth };
    options.reads = reads;
    let fixture = load_fixture(&options).unwrap();
    run(&options, &fixture, 2, None).unwrap().modes
}

#[test]
fn binary_trie_follows_the_chain_at_every_depth() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = fixture(dir.path());
    let states = states(&fixture);
    let (_, cleared) = reference_root(&states, states.len() - 1, 5);

    let mut finals = Vec::new();
    for (group_depth, reads) in [(1, Reads::Flat), (8, Reads::Flat), (5, Reads::Trie)] {
        let reports = bench(dir.path(), group_depth, reads);
        assert_eq!(reports.len(), 2);
        for report in &reports {
            let roots = report.binary_roots();
            assert_eq!(roots.len(), fixture.blocks.len());
            for (k, root) in roots.iter().enumerate() {
                let expected = format!("{:#x}", reference_root(&states, k + 1, group_depth).0);
                assert_eq!(
                    root.as_deref(),
                    Some(expected.as_str()),
                    "{} at depth {group_depth}: block {}",
                    report.name,
                    k + 1
                );
            }
            assert_eq!(report.final_binary_root, roots.last().cloned().flatten());
            match reads {
                // Every account and slot execution read came through the trie.
                Reads::Trie => assert!(report.trie_reads.unwrap() > 100, "{}", report.name),
                Reads::Flat => assert_eq!(report.trie_reads, None),
            }
        }
        finals.push(reports[0].final_binary_root.clone().unwrap());
    }
    // The root is the group depth's business only in how it is stored.
    assert!(finals.iter().all(|r| *r == finals[0]), "{finals:?}");
    // The state really moved.
    assert_ne!(
        finals[0],
        format!("{:#x}", reference_root(&states, 0, 5).0),
        "the chain changed nothing"
    );
    eprintln!("slots cleared during the chain: {cleared}");
}
