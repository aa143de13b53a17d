//! The stress fixture on a state filler, end to end: generated, written, read back as an
//! importer does, and imported on both paths.

use alloy_primitives::{Address, B256, U256};
use ethrex_blockchain::{Blockchain, Cores, Threshold};
use ethrex_chaingen::mainnet::{
    sload_random_contract, sload_random_gas_used, sload_random_reads_per_tx, SLOAD_RANDOM_TX_GAS,
};
use ethrex_common::Fork;
use ethrex_state_filler::StateFiller;
use ethrex_storage::Store;

/// A generated fixture read back as an importer does: the chain, the genesis file and
/// `stress.state.json` beside it.
struct FilledFixture {
    fixture: crate::bench::LoadedFixture,
    filler: StateFiller,
    _dir: tempfile::TempDir,
}

fn generate_filled(options: impl FnOnce(&mut crate::generate::StressOptions)) -> FilledFixture {
    let dir = tempfile::tempdir().unwrap();
    let mut stress = crate::generate::StressOptions::new(dir.path().to_path_buf());
    options(&mut stress);
    crate::generate::generate(&stress).expect("the filled fixture generates");
    assert!(!dir.path().join("stress.blockchain_test.json").exists());
    let state = std::fs::read_to_string(dir.path().join(crate::generate::STATE_FILE)).unwrap();
    let filler: StateFiller = serde_json::from_str(&state).unwrap();
    assert_eq!(Some(&filler), stress.filler().as_ref());
    let fixture =
        crate::bench::load_fixture(&crate::bench::BenchOptions::new(dir.path().join("stress.rlp")))
            .unwrap();
    assert_eq!(fixture.blocks.len() as u64, stress.blocks);
    FilledFixture { fixture, filler, _dir: dir }
}

/// Imports the fixture from scratch on a filled genesis (sequential path, then the
/// BAL-driven parallel one on RocksDB); every block must import (its state root holds)
/// with every transaction successful. Returns the receipts' gas per transaction.
fn import_filled(f: &FilledFixture) -> Vec<Vec<u64>> {
    use ethrex_blockchain::ImportOptions;
    use ethrex_state_filler::init_genesis_filled;
    let mut gas = Vec::new();
    for parallel in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let store = if parallel {
            Store::open(ethrex_storage::DbKind::Rocksdb, Some(dir.path())).unwrap()
        } else {
            Store::in_memory()
        };
        let genesis = init_genesis_filled(&store, &f.fixture.genesis, Some(&f.filler)).unwrap();
        assert_eq!(genesis.hash_slow(), f.fixture.blocks[0].block.header.parent_hash);
        let options = ImportOptions {
            cores: if parallel { Cores::Pool } else { Cores::One },
            threshold: Threshold::MinTxs(0),
            ..ImportOptions::default()
        };
        let chain = Blockchain::new(store.clone(), f.fixture.config.clone()).with_options(options);
        gas.clear();
        for block in &f.fixture.blocks {
            let number = block.block.header.number;
            let outcome = chain
                .import_block(block.clone())
                .unwrap_or_else(|e| panic!("block {number} (parallel: {parallel}): {e}"));
            assert_eq!(
                store.head_header().unwrap().unwrap().state_root,
                block.block.header.state_root
            );
            let receipts = store.receipts(&outcome.hash).unwrap().expect("receipts");
            let mut previous = 0;
            let mut per_tx = Vec::new();
            for (i, r) in receipts.iter().enumerate() {
                assert!(r.status(), "block {number} tx {i} failed");
                per_tx.push(r.cumulative_gas_used() - previous);
                previous = r.cumulative_gas_used();
            }
            gas.push(per_tx);
        }
    }
    gas
}

#[test]
fn filled_mix_imports_and_touches_the_cold_state() {
    let f = generate_filled(|o| {
        o.blocks = 3;
        o.seed = 3;
        o.state_accounts = 1_000;
        o.state_slots = 20_000;
    });
    import_filled(&f);
    let filler = &f.filler;
    let accounts: std::collections::HashSet<Address> =
        (0..filler.accounts).map(|i| filler.account(i)).collect();
    let sload = sload_random_contract();
    let (mut cold_accounts, mut cold_token_writes, mut cold_reads) = (0, 0, 0);
    let (mut all_accounts, mut all_slots) = (0, 0);
    for block in &f.fixture.blocks {
        let bal = block.bal.as_ref().expect("Amsterdam blocks carry BALs");
        for a in bal {
            all_accounts += 1;
            all_slots += a.storage_reads.len() + a.storage_changes.len();
            cold_accounts += accounts.contains(&a.address) as usize;
            let Some(k) = filler.contracts.iter().position(|c| *c == a.address) else {
                continue;
            };
            let slots: std::collections::HashSet<U256> =
                (0..filler.slots_of(k)).map(|j| filler.slot(k, j)).collect();
            if a.address == sload {
                assert!(a.storage_changes.is_empty());
                assert!(a.storage_reads.iter().all(|s| slots.contains(s)));
                cold_reads += a.storage_reads.len();
            } else {
                cold_token_writes +=
                    a.storage_changes.iter().filter(|c| slots.contains(&c.slot)).count();
            }
        }
    }
    println!(
        "3 blocks: {cold_accounts} filler accounts of {all_accounts}, {cold_token_writes} \
         filler token slots written and {cold_reads} filler slots read of {all_slots} slots"
    );
    // ~350 transactions a block: ETH transfers (22%) and ERC-20 transfers (44%) go to the
    // filler 30% of the time, cold reads are 3% of the transactions at 16-64 reads each.
    assert!(cold_accounts >= 3 * 10, "{cold_accounts}");
    assert!(cold_token_writes >= 3 * 20, "{cold_token_writes}");
    assert!(cold_reads >= 3 * 100, "{cold_reads}");
}

#[test]
fn sload_random_blocks_read_what_their_gas_buys() {
    const GAS: u64 = 64_000_000;
    let f = generate_filled(|o| {
        o.blocks = 3;
        o.gas_limit = GAS;
        o.workload = crate::generate::StressWorkload::SloadRandom;
        o.state_slots = 20_000;
    });
    let gas = import_filled(&f);
    let filler = &f.filler;
    let sload = sload_random_contract();
    let reads_per_tx = sload_random_reads_per_tx(Fork::Amsterdam);
    for (block, gas) in f.fixture.blocks.iter().zip(gas) {
        let header = &block.block.header;
        let txs = &block.block.body.transactions;
        assert_eq!(txs.len() as u64, GAS / SLOAD_RANDOM_TX_GAS);
        assert!(header.gas_used > GAS - GAS / 1000, "block gas {}", header.gas_used);
        // Every transaction's keys, recomputed from its calldata.
        let mut keys = std::collections::BTreeSet::new();
        for (tx, used) in txs.iter().zip(gas) {
            let input = alloy_consensus::Transaction::input(tx);
            let word = |i: usize| U256::from_be_slice(&input[32 * i..32 * (i + 1)]);
            assert_eq!(B256::from(word(0)), filler.account_prefix());
            let [start, stride, n, m] = [1, 2, 3, 4].map(|i| word(i).to::<u64>());
            assert_eq!((n, m), (reads_per_tx, filler.slots_of(0)));
            // Distinct within the transaction: every read is cold.
            let mut tx_keys = std::collections::BTreeSet::new();
            let mut j = start;
            for _ in 0..n {
                assert!(tx_keys.insert(filler.slot(0, j)), "key {j} read twice");
                j = (j + stride) % m;
            }
            keys.extend(tx_keys);
            // The gas, counted opcode by opcode, is what the transaction used.
            let counted = sload_random_gas_used(Fork::Amsterdam, input, n);
            assert_eq!(used, counted, "block {} tx gas", header.number);
            assert!(used <= alloy_consensus::Transaction::gas_limit(tx));
        }
        let bal = block.bal.as_ref().unwrap();
        let account = bal.iter().find(|a| a.address == sload).expect("the contract is in the BAL");
        assert!(account.storage_changes.is_empty());
        let read: std::collections::BTreeSet<U256> =
            account.storage_reads.iter().copied().collect();
        assert_eq!(read, keys, "block {}: the BAL's reads are the computed keys", header.number);
        println!(
            "sload-random block {}: {} txs, gas {}, {} distinct reads ({} per tx)",
            header.number,
            txs.len(),
            header.gas_used,
            read.len(),
            reads_per_tx
        );
    }
}

#[test]
fn sload_random_needs_filler_slots_and_mutations_no_filler() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = crate::generate::StressOptions::new(dir.path().to_path_buf());
    options.blocks = 1;
    options.workload = crate::generate::StressWorkload::SloadRandom;
    options.state_accounts = 10;
    let err = crate::generate::generate(&options).unwrap_err().to_string();
    assert!(err.contains("--state-slots"), "{err}");
    options.workload = crate::generate::StressWorkload::Mix;
    options.mutations = 1;
    let err = crate::generate::generate(&options).unwrap_err().to_string();
    assert!(err.contains("--mutations cannot be combined"), "{err}");
}

#[test]
fn a_transaction_count_range_that_allows_no_transaction_is_refused_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = crate::generate::StressOptions::new(dir.path().to_path_buf());
    options.blocks = 1;
    options.min_txs = 0;
    options.max_txs = 0;
    let err = crate::generate::generate(&options).unwrap_err().to_string();
    assert!(err.contains("--max-txs must be at least 1"), "{err}");
    options.min_txs = 5;
    options.max_txs = 4;
    let err = crate::generate::generate(&options).unwrap_err().to_string();
    assert!(err.contains("--min-txs must not exceed --max-txs"), "{err}");
}
