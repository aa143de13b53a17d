//! The BAL design lab on blocks of the stress workload: every design's consumer imports
//! every block to the same state as the plain import, and every lie in a design's BAL
//! (a dropped or added account or slot, a changed value, pre-value or index, accounts
//! out of order) is refused with that design's typed error, identically when repeated,
//! leaving the store as it was.

use alloy_primitives::{Address, U256};
use ethrex_bal::{
    derive_designs, design_error, BalDesign, DesignAccount, DesignBal, DesignBalError,
    DesignConsumer, DesignSlot,
};
use ethrex_blockchain::{Blockchain, ExecutionPath};
use ethrex_common::BlockWithBal;
use ethrex_import_bench::bench::{load_fixture, BenchOptions, LoadedFixture};
use ethrex_import_bench::generate::{generate, StressOptions};
use ethrex_state_filler::init_genesis_filled;
use ethrex_storage::{DbKind, Store};

fn fixture(dir: &std::path::Path) -> LoadedFixture {
    let mut options = StressOptions::new(dir.join("stress"));
    options.blocks = 3;
    options.min_txs = 20;
    options.max_txs = 60;
    options.gas_limit = 30_000_000;
    generate(&options).expect("generating the stress chain");
    load_fixture(&BenchOptions::new(dir.join("stress/stress.rlp"))).expect("loading it")
}

fn chain(fixture: &LoadedFixture) -> Blockchain {
    let store = Store::open(DbKind::Memory, None).unwrap();
    init_genesis_filled(&store, &fixture.genesis, None).unwrap();
    Blockchain::new(store, fixture.config.clone())
}

/// What a rejected import must leave untouched: the head, and every account and slot
/// the block's BAL names.
fn snapshot(store: &Store, block: &BlockWithBal) -> String {
    let mut out = format!("head {:?}\n", store.head().unwrap());
    for a in block.bal.as_ref().unwrap() {
        out += &format!("{} {:?}\n", a.address, store.account(&a.address).unwrap());
        let slots = a.storage_changes.iter().map(|s| s.slot).chain(a.storage_reads.iter().copied());
        for slot in slots {
            out += &format!("  {slot:#x} {}\n", store.storage(&a.address, &slot).unwrap());
        }
    }
    out
}

/// The lies told about `d`, each a name and the mutated BAL's encoding.
fn mutations(d: &DesignBal) -> Vec<(&'static str, Vec<u8>)> {
    let design = d.design;
    let mut out = Vec::new();
    let mut push = |name, bal: DesignBal| out.push((name, bal.encode()));
    let with_slots = d.accounts.iter().position(|a| a.slots.len() >= 2);

    let mut m = d.clone();
    m.accounts.remove(d.accounts.len() / 2);
    push("drop an account", m);

    let mut m = d.clone();
    let mut extra = DesignAccount { address: Address::repeat_byte(0xee), ..Default::default() };
    match design {
        BalDesign::ParallelIo => extra.nonce_changes.push(alloy_eips::eip7928::NonceChange {
            block_access_index: alloy_eips::eip7928::BlockAccessIndex(1),
            new_nonce: 1,
        }),
        BalDesign::Type4 | BalDesign::Full => extra.pre = Some(None),
        _ => {}
    }
    m.accounts.push(extra);
    push("add an account", m);

    if let Some(i) = with_slots {
        let mut m = d.clone();
        m.accounts[i].slots.remove(0);
        push("drop a slot", m);

        let mut m = d.clone();
        let mut slot = DesignSlot { slot: U256::MAX, ..Default::default() };
        if design.carries_pre_block_slots() {
            slot.pre = Some(U256::ZERO);
        }
        if design == BalDesign::ParallelIo {
            slot.changes.push(alloy_eips::eip7928::StorageChange {
                block_access_index: alloy_eips::eip7928::BlockAccessIndex(1),
                new_value: U256::from(1),
            });
        }
        m.accounts[i].slots.push(slot);
        push("add a slot", m);

        let mut m = d.clone();
        m.accounts.swap(0, i.max(1));
        push("accounts out of order", m);
    }

    // A changed value: a carried pre-block slot value, a Type 6 pre-transaction value,
    // or a written value.
    let mut m = d.clone();
    let changed = m.accounts.iter_mut().flat_map(|a| a.slots.iter_mut()).find_map(|s| {
        if let Some(pre) = &mut s.pre {
            *pre ^= U256::from(1);
            Some(())
        } else if let Some(e) = s.pre_tx.first_mut() {
            e.value ^= U256::from(1);
            Some(())
        } else if let Some(c) = s.changes.first_mut() {
            c.new_value ^= U256::from(1);
            Some(())
        } else {
            None
        }
    });
    if changed.is_some() {
        push("change a value", m);
    }

    // A changed pre-block account value (Types 4 and full), or a pre-transaction one.
    let mut m = d.clone();
    let changed = m.accounts.iter_mut().find_map(|a| match &mut a.pre {
        Some(Some(v)) => {
            v.balance += U256::from(1);
            Some(())
        }
        _ => a.pre_tx.iter_mut().find_map(|e| e.value.as_mut()).map(|v| {
            v.nonce += 1;
        }),
    });
    if changed.is_some() {
        push("change a pre-value", m);
    }

    // A changed index: a lone balance change moved to another transaction, or a lone
    // pre-transaction entry moved one transaction earlier.
    let mut m = d.clone();
    let moved = m.accounts.iter_mut().find_map(|a| {
        if let [c] = a.balance_changes.as_mut_slice() {
            c.block_access_index.0 = if c.block_access_index.0 > 1 { 1 } else { 2 };
            return Some(());
        }
        match a.pre_tx.as_mut_slice() {
            [only] if only.index > 1 => {
                only.index -= 1;
                Some(())
            }
            _ => None,
        }
    });
    if moved.is_some() {
        push("change an index", m);
    }
    out
}

#[test]
fn every_design_imports_the_stress_blocks_and_refuses_every_lie() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = fixture(dir.path());
    let reference = chain(&fixture);
    let chains: Vec<(BalDesign, Blockchain)> =
        BalDesign::ALL.iter().map(|&d| (d, chain(&fixture))).collect();
    let mut refused = 0;
    for block in &fixture.blocks {
        let derived = derive_designs(&reference, block, &BalDesign::ALL).unwrap();
        reference.import_block(block.clone()).unwrap();
        let want = reference.store.head_header().unwrap().unwrap();
        for ((design, chain), given) in chains.iter().zip(&derived) {
            assert_eq!(given.design, *design);
            let before = snapshot(&chain.store, block);
            let lies = mutations(given);
            assert!(lies.len() >= 5, "{design}: only {} mutations apply", lies.len());
            for (name, bytes) in &lies {
                let verdicts: Vec<String> = (0..2)
                    .map(|_| {
                        let error = chain
                            .import_block_with(block.clone(), &DesignConsumer::new(*design, bytes))
                            .map(|_| ())
                            .expect_err(&format!("{design}: '{name}' was accepted"));
                        match design_error(&error) {
                            Some(e) => assert_eq!(e.design(), *design, "{name}"),
                            None => panic!(
                                "{design}: '{name}' refused with {error:?}, not the design's error"
                            ),
                        }
                        assert!(error.is_invalid_block());
                        assert_eq!(
                            snapshot(&chain.store, block),
                            before,
                            "{design}: '{name}' left a trace"
                        );
                        error.to_string()
                    })
                    .collect();
                assert_eq!(
                    verdicts[0], verdicts[1],
                    "{design}: '{name}' judged differently on repeat"
                );
                refused += 1;
            }
            let encoded = given.encode();
            let outcome = chain
                .import_block_with(block.clone(), &DesignConsumer::new(*design, &encoded))
                .unwrap_or_else(|e| panic!("{design}: the true design was refused: {e}"));
            assert_eq!(outcome.path, ExecutionPath::Strategy);
            let head = chain.store.head_header().unwrap().unwrap();
            assert_eq!(head, want, "{design}: another head than the plain import's");
            assert_eq!(
                chain.store.receipts(&head.hash_slow()).unwrap(),
                reference.store.receipts(&head.hash_slow()).unwrap(),
                "{design}: other receipts"
            );
            assert_eq!(
                snapshot(&chain.store, block),
                snapshot(&reference.store, block),
                "{design}: other post state"
            );
        }
    }
    assert!(refused >= 3 * 8 * 5, "only {refused} lies were tried");
}

#[test]
fn undecodable_design_bals_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = fixture(dir.path());
    let chain = chain(&fixture);
    let block = &fixture.blocks[0];
    for design in BalDesign::ALL {
        for bytes in [&[][..], &[0xc0, 0x00][..], &[0x80][..], &[0xf8, 0xff][..]] {
            let outcome =
                chain.import_block_with(block.clone(), &DesignConsumer::new(design, bytes));
            let error = outcome.expect_err("an undecodable design BAL was accepted");
            match design_error(&error) {
                Some(DesignBalError::Rlp { .. } | DesignBalError::NotCanonical { .. }) => {}
                _ => panic!("{design} {bytes:?}: {error:?}"),
            }
            assert!(error.is_invalid_block());
            assert_eq!(chain.store.head().unwrap(), Some(block.block.header.parent_hash));
        }
    }
}
