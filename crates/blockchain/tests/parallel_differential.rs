//! Differential tests: the BAL-driven parallel import path against the sequential one.
//!
//! Every block is built once (`Blockchain::build_block` on a builder store) and imported
//! into two fresh stores with the same genesis: one forced onto the parallel path
//! (threshold 0), one sequential. Both must accept valid blocks with identical results
//! (receipts, BAL, head, state root, flat state), and reject invalid ones (mutated BALs)
//! with the same verdict, leaving no trace.

use alloy_eips::eip7928::{AccountChanges, BlockAccessIndex};
use alloy_primitives::{Address, Bytes, TxKind, B256, U256};
use ethrex_blockchain::{BlockError, Blockchain, Cores, ExecutionPath, ImportOutcome};
use ethrex_chaingen::adversarial::*;
use ethrex_common::{compute_block_access_list_hash, AccountState, BlockAccessList, BlockWithBal};
use ethrex_storage::{DbKind, Store};
use std::collections::BTreeMap;

const INVALID_BAL: &str = "BlockException.INVALID_BLOCK_ACCESS_LIST";
const MALFORMED: &str = "BlockException.INCORRECT_BLOCK_FORMAT";
const BAD_BAL_HASH: &str = "BlockException.INVALID_BAL_HASH";

/// The two importers under comparison.
struct Pair {
    parallel: Blockchain,
    sequential: Blockchain,
}

impl Pair {
    fn new(scenario: &Scenario, parallel_store: Store, sequential_store: Store) -> Self {
        scenario.init(&parallel_store);
        scenario.init(&sequential_store);
        Self {
            parallel: scenario.chain(parallel_store, parallel_options()),
            sequential: scenario.chain(sequential_store, sequential_options()),
        }
    }

    fn in_memory(scenario: &Scenario) -> Self {
        Self::new(scenario, Store::in_memory(), Store::in_memory())
    }

    /// Imports a valid block on both paths and checks that they agree on everything.
    fn import_valid(&self, block: &BlockWithBal, what: &str) -> (ImportOutcome, ImportOutcome) {
        let hash = block.hash();
        let par = self.parallel.import_block(block.clone()).unwrap_or_else(|e| {
            panic!("{what}: parallel path rejected a valid block: {e} ({})", e.ef_exception())
        });
        let seq = self.sequential.import_block(block.clone()).unwrap_or_else(|e| {
            panic!("{what}: sequential path rejected a valid block: {e} ({})", e.ef_exception())
        });
        assert_eq!(
            par.path,
            ExecutionPath::Parallel,
            "{what}: parallel store did not take the parallel path"
        );
        assert_eq!(seq.path, ExecutionPath::SequentialDisabled, "{what}");
        assert_eq!((par.hash, seq.hash), (hash, hash), "{what}: outcome hash");
        assert_eq!(par.number, block.number(), "{what}");
        assert_eq!(par.tx_count, block.block.body.transactions.len(), "{what}");
        assert_eq!(par.gas_used, seq.gas_used, "{what}: gas used");
        assert_eq!(par.gas_used, block.block.header.gas_used, "{what}: gas used vs header");

        let (ps, ss) = (&self.parallel.store, &self.sequential.store);
        assert_eq!(ps.head().unwrap(), Some(hash), "{what}: parallel head");
        assert_eq!(ss.head().unwrap(), Some(hash), "{what}: sequential head");
        let (pr, sr) = (block_record(ps, &hash), block_record(ss, &hash));
        assert_eq!(pr.receipts.len(), block.block.body.transactions.len(), "{what}: receipt count");
        assert_eq!(pr.receipts, sr.receipts, "{what}: receipts differ");
        assert_eq!(pr.bal, sr.bal, "{what}: stored BALs differ");
        assert_eq!(pr.bal, block.bal, "{what}: stored BAL is not the block's");
        assert_eq!(pr.header, sr.header, "{what}: headers differ");
        assert_eq!(pr.header.state_root, block.block.header.state_root, "{what}: state root");
        let (psnap, ssnap) = (snapshot(ps), snapshot(ss));
        if psnap != ssnap {
            panic!("{what}: flat states differ:\n{}", diff_snapshots(&psnap, &ssnap));
        }
        (par, seq)
    }
}

/// First differences between two flat states, readable.
fn diff_snapshots(a: &StateSnapshot, b: &StateSnapshot) -> String {
    let mut out = String::new();
    if a.head != b.head {
        out += &format!("head {:?} vs {:?}\n", a.head, b.head);
    }
    let am: BTreeMap<_, _> = a.accounts.iter().map(|x| (x.0, x)).collect();
    let bm: BTreeMap<_, _> = b.accounts.iter().map(|x| (x.0, x)).collect();
    for address in am.keys().chain(bm.keys()).collect::<std::collections::BTreeSet<_>>() {
        if am.get(address) != bm.get(address) {
            out += &format!(
                "{address}:\n  parallel   {:?}\n  sequential {:?}\n",
                am.get(address),
                bm.get(address)
            );
        }
    }
    out
}

/// Runs a generated chain through a pair of importers, block by block. Returns how many
/// blocks the parallel store committed with the state root derived from the BAL.
fn run_differential(chain: &GeneratedChain, pair: &Pair, label: &str) -> usize {
    let mut root_from_bal = 0;
    for (i, block) in chain.blocks.iter().enumerate() {
        let (par, seq) = pair.import_valid(block, &format!("{label} block {}", i + 1));
        assert!(
            !seq.root_from_bal,
            "{label} block {}: sequential path used a BAL-derived root",
            i + 1
        );
        root_from_bal += par.root_from_bal as usize;
    }
    check_model(&pair.parallel.store, &chain.model);
    check_model(&pair.sequential.store, &chain.model);
    root_from_bal
}

/// Sanity checks that a generated chain exercises what it is meant to.
fn check_coverage(chain: &GeneratedChain, store: &Store) {
    let mut failed = 0;
    let mut succeeded = 0;
    for block in &chain.blocks {
        let receipts = store.receipts(&block.hash()).unwrap().unwrap();
        for r in receipts {
            if r.status() {
                succeeded += 1
            } else {
                failed += 1
            }
        }
    }
    assert!(failed > 0 && succeeded > failed, "failed {failed}, succeeded {succeeded}");
    for kind in [
        "transfer",
        "transfer-new-account",
        "zero-value-transfer",
        "counter",
        "forwarder",
        "reverter",
        "noop-write",
        "observer",
        "sweeper",
        "factory-create",
        "factory-create2",
        "factory-selfdestruct",
        "create-tx-selfdestruct",
        "7702-delegate",
        "call-delegator",
    ] {
        assert!(
            chain.stats.kinds.get(kind).copied().unwrap_or(0) > 0,
            "chain has no {kind} transaction: {:?}",
            chain.stats
        );
    }
    // The factory created something (slot 0 holds the last created address, or 0 when a
    // CREATE2 collided or the constructor self-destructed).
    assert!(
        store.all_accounts().unwrap().iter().any(|(address, a)| *address != COUNTER
            && a.code_hash == alloy_primitives::keccak256(counter_runtime())),
        "no counter was deployed by the chain"
    );
    // Some CREATE2 target of the factory holds a deployed contract.
    assert!(create2_targets().iter().any(|a| store
        .account(a)
        .unwrap()
        .is_some_and(|a| a.code_hash != ethrex_common::KECCAK_EMPTY)));
    // Several transactions from one sender in one block.
    assert!(chain.blocks.iter().any(|b| {
        let mut senders = BTreeMap::new();
        for tx in &b.block.body.transactions {
            use alloy_consensus::transaction::SignerRecoverable;
            *senders.entry(tx.recover_signer().unwrap()).or_insert(0) += 1;
        }
        senders.values().any(|n| *n > 1)
    }));
}

// ------------------------------------------------------------------------------------
// 1. Random differential.
// ------------------------------------------------------------------------------------

#[test]
fn random_blocks_parallel_matches_sequential() {
    let scenario = Scenario::new();
    for seed in [1u64, 2, 3, 4] {
        let chain = generate_chain(seed, 15);
        let pair = Pair::in_memory(&scenario);
        let from_bal = run_differential(&chain, &pair, &format!("seed {seed}"));
        check_coverage(&chain, &pair.parallel.store);
        eprintln!(
            "seed {seed}: {} blocks, {} txs, {} withdrawals, {from_bal} roots from the BAL; {:?}",
            chain.blocks.len(),
            chain.stats.txs,
            chain.stats.withdrawals,
            chain.stats.kinds
        );
    }
}

// ------------------------------------------------------------------------------------
// 4. The same on the on-disk backends.
// ------------------------------------------------------------------------------------

fn disk_differential(kind: DbKind) {
    let scenario = Scenario::new();
    let chain = generate_chain(11, 10);
    let dir = tempfile::tempdir().unwrap();
    let par = Store::open(kind, Some(&dir.path().join("parallel"))).unwrap();
    let seq = Store::open(kind, Some(&dir.path().join("sequential"))).unwrap();
    assert_eq!(par.backend_kind(), seq.backend_kind());
    let pair = Pair::new(&scenario, par, seq);
    run_differential(&chain, &pair, &format!("{kind:?}"));
    // Same final state as an in-memory import.
    let memory = Pair::in_memory(&scenario);
    run_differential(&chain, &memory, &format!("{kind:?} (memory reference)"));
    assert_eq!(snapshot(&pair.parallel.store), snapshot(&memory.parallel.store));
}

#[test]
fn random_blocks_parallel_matches_sequential_on_mdbx() {
    disk_differential(DbKind::Mdbx);
}

#[test]
fn random_blocks_parallel_matches_sequential_on_rocksdb() {
    disk_differential(DbKind::Rocksdb);
}

// ------------------------------------------------------------------------------------
// 3. Thread counts.
// ------------------------------------------------------------------------------------

#[derive(Debug, PartialEq)]
struct ChainResult {
    records: Vec<BlockRecord>,
    state: StateSnapshot,
}

fn import_all(
    scenario: &Scenario,
    chain: &GeneratedChain,
    options: ethrex_blockchain::ImportOptions,
) -> ChainResult {
    let store = scenario.memory_store();
    let importer = scenario.chain(store.clone(), options);
    let records = chain
        .blocks
        .iter()
        .map(|block| {
            let outcome = importer.import_block(block.clone()).expect("valid block");
            if options.cores == Cores::Pool {
                assert_eq!(outcome.path, ExecutionPath::Parallel);
            }
            block_record(&store, &block.hash())
        })
        .collect();
    ChainResult { records, state: snapshot(&store) }
}

#[test]
fn parallel_import_is_independent_of_thread_count() {
    let scenario = Scenario::new();
    let chain = generate_chain(21, 12);
    let reference = import_all(&scenario, &chain, sequential_options());
    for (threads, options) in [
        (1, parallel_options()),
        (2, parallel_options()),
        (8, parallel_options()),
        (1, parallel_plain_options()),
        (8, parallel_plain_options()),
    ] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let result = pool.install(|| import_all(&scenario, &chain, options));
        assert_eq!(result.records.len(), reference.records.len());
        for (i, (a, b)) in result.records.iter().zip(&reference.records).enumerate() {
            assert_eq!(
                a.header.state_root,
                b.header.state_root,
                "{threads} threads, block {}",
                i + 1
            );
            assert_eq!(a.receipts, b.receipts, "{threads} threads, block {}: receipts", i + 1);
            assert_eq!(a.bal, b.bal, "{threads} threads, block {}: BAL", i + 1);
        }
        assert!(result.state == reference.state, "{threads} threads: final state differs");
    }
}

// ------------------------------------------------------------------------------------
// 2. BAL mutations.
// ------------------------------------------------------------------------------------

/// The block with its BAL replaced, and the header's BAL hash fixed up to match it.
fn with_bal(block: &BlockWithBal, bal: BlockAccessList, fix_hash: bool) -> BlockWithBal {
    let mut mutated = block.clone();
    if fix_hash {
        mutated.block.header.block_access_list_hash = Some(compute_block_access_list_hash(&bal));
    }
    mutated.bal = Some(bal);
    mutated
}

/// Imports an invalid block on both paths; both must reject it with the same verdict and
/// leave no trace. Returns the verdict.
fn reject_on_both(pair: &Pair, block: &BlockWithBal, what: &str) -> &'static str {
    let hash = block.hash();
    let mut verdicts = Vec::new();
    for (name, chain) in [("parallel", &pair.parallel), ("sequential", &pair.sequential)] {
        let before_head = chain.store.head().unwrap();
        let before_accounts = chain.store.all_accounts().unwrap();
        let err: BlockError = match chain.import_block(block.clone()) {
            Ok(outcome) => {
                panic!("{what}: {name} path accepted an invalid block ({:?})", outcome.path)
            }
            Err(e) => e,
        };
        assert!(err.is_invalid_block(), "{what}: {name} path: not a block-validity error: {err}");
        assert_eq!(chain.store.head().unwrap(), before_head, "{what}: {name} head moved");
        assert_eq!(
            chain.store.all_accounts().unwrap(),
            before_accounts,
            "{what}: {name} state changed"
        );
        assert_no_trace(&chain.store, &hash, &format!("{what} ({name})"));
        verdicts.push((err.ef_exception(), err));
    }
    let (par, seq) = (&verdicts[0], &verdicts[1]);
    assert_eq!(
        par.0, seq.0,
        "{what}: the paths disagree on the verdict\n  parallel:   {}\n  sequential: {}",
        par.1, seq.1
    );
    par.0
}

/// Index of a BAL change.
fn idx(i: BlockAccessIndex) -> u64 {
    i.0
}

/// Tx indices of the block (BAL indices 1..=n).
fn is_tx_index(i: u64, tx_count: usize) -> bool {
    i >= 1 && i <= tx_count as u64
}

type Mutation = fn(&mut BlockAccessList, usize, &mut rand_chacha::ChaCha8Rng) -> bool;

/// Every mutation returns false when the BAL offers nothing to mutate. Mutations only
/// touch entries at transaction indices (1..=n): pre-block (index 0) entries are covered
/// by the focused tests further down.
fn mutations() -> Vec<(&'static str, Mutation, &'static str)> {
    vec![
        (
            "wrong balance value",
            |bal, n, _| {
                for a in bal.iter_mut() {
                    if let Some(c) = a
                        .balance_changes
                        .iter_mut()
                        .find(|c| is_tx_index(idx(c.block_access_index), n))
                    {
                        c.post_balance += U256::from(1u64);
                        return true;
                    }
                }
                false
            },
            INVALID_BAL,
        ),
        (
            "wrong nonce",
            |bal, n, _| {
                for a in bal.iter_mut() {
                    if let Some(c) = a
                        .nonce_changes
                        .iter_mut()
                        .find(|c| is_tx_index(idx(c.block_access_index), n))
                    {
                        c.new_nonce += 1;
                        return true;
                    }
                }
                false
            },
            INVALID_BAL,
        ),
        (
            "wrong storage value",
            |bal, n, _| {
                for a in bal.iter_mut() {
                    for s in a.storage_changes.iter_mut() {
                        if let Some(c) =
                            s.changes.iter_mut().find(|c| is_tx_index(idx(c.block_access_index), n))
                        {
                            c.new_value ^= U256::from(0x100u64);
                            return true;
                        }
                    }
                }
                false
            },
            INVALID_BAL,
        ),
        (
            "wrong code",
            |bal, n, _| {
                for a in bal.iter_mut() {
                    if let Some(c) = a
                        .code_changes
                        .iter_mut()
                        .find(|c| is_tx_index(idx(c.block_access_index), n))
                    {
                        let mut code = c.new_code.to_vec();
                        if code.starts_with(&[0xef, 0x01, 0x00]) {
                            // Keep it a well-formed delegation, to another address.
                            let last = code.len() - 1;
                            code[last] ^= 1;
                        } else {
                            code.push(0x00);
                        }
                        c.new_code = Bytes::from(code);
                        return true;
                    }
                }
                false
            },
            INVALID_BAL,
        ),
        (
            "malformed delegation code",
            |bal, n, _| {
                // An EIP-7702 designator one byte short: revm refuses to load such a BAL.
                for a in bal.iter_mut() {
                    if let Some(c) = a.code_changes.iter_mut().find(|c| {
                        is_tx_index(idx(c.block_access_index), n)
                            && c.new_code.starts_with(&[0xef, 0x01, 0x00])
                    }) {
                        c.new_code = Bytes::from(c.new_code[..c.new_code.len() - 1].to_vec());
                        return true;
                    }
                }
                false
            },
            INVALID_BAL,
        ),
        (
            "dropped account read by a transaction",
            |bal, _, _| {
                // The no-op writer only has reads (its writes cancel out).
                let pos = bal.iter().position(|a| a.address == NOOP);
                pos.map(|p| bal.remove(p)).is_some()
            },
            INVALID_BAL,
        ),
        (
            "dropped storage read of a transaction",
            |bal, _, _| {
                let Some(a) = bal.iter_mut().find(|a| a.address == NOOP) else { return false };
                if a.storage_reads.is_empty() {
                    return false;
                }
                a.storage_reads.remove(0);
                true
            },
            INVALID_BAL,
        ),
        (
            "dropped account (written)",
            |bal, n, _| {
                let pos = bal.iter().position(|a| {
                    a.balance_changes.iter().any(|c| is_tx_index(idx(c.block_access_index), n))
                });
                pos.map(|p| bal.remove(p)).is_some()
            },
            INVALID_BAL,
        ),
        (
            "dropped account (read only)",
            |bal, _, _| {
                let pos = bal.iter().position(|a| {
                    a.balance_changes.is_empty()
                        && a.nonce_changes.is_empty()
                        && a.code_changes.is_empty()
                        && a.storage_changes.is_empty()
                });
                pos.map(|p| bal.remove(p)).is_some()
            },
            INVALID_BAL,
        ),
        (
            "dropped storage change",
            |bal, n, _| {
                for a in bal.iter_mut() {
                    if let Some(p) = a.storage_changes.iter().position(|s| {
                        s.changes.iter().any(|c| is_tx_index(idx(c.block_access_index), n))
                    }) {
                        let s = &mut a.storage_changes[p];
                        if s.changes.len() > 1 {
                            let q = s
                                .changes
                                .iter()
                                .position(|c| is_tx_index(idx(c.block_access_index), n))
                                .unwrap();
                            s.changes.remove(q);
                        } else {
                            a.storage_changes.remove(p);
                        }
                        return true;
                    }
                }
                false
            },
            INVALID_BAL,
        ),
        (
            "dropped storage read",
            |bal, _, _| {
                for a in bal.iter_mut() {
                    if !a.storage_reads.is_empty() {
                        a.storage_reads.remove(0);
                        return true;
                    }
                }
                false
            },
            INVALID_BAL,
        ),
        (
            "extra account",
            |bal, _, rng| {
                use rand::Rng;
                let address = Address::from(rng.random::<[u8; 20]>());
                let pos = bal.partition_point(|a| a.address < address);
                bal.insert(pos, AccountChanges { address, ..Default::default() });
                true
            },
            INVALID_BAL,
        ),
        (
            "extra storage read",
            |bal, _, _| {
                // A slot no one touches, on the counter (listed whenever it is called).
                let Some(a) = bal.iter_mut().find(|a| a.address == COUNTER) else { return false };
                let slot = U256::from(0xdead_u64);
                let pos = a.storage_reads.partition_point(|s| *s < slot);
                a.storage_reads.insert(pos, slot);
                true
            },
            INVALID_BAL,
        ),
        (
            "extra balance change",
            |bal, n, _| {
                // The receiver gets a balance change at the last transaction that it never got.
                let Some(a) =
                    bal.iter_mut().find(|a| a.address == COINBASE || a.balance_changes.is_empty())
                else {
                    return false;
                };
                let last = n as u64;
                if a.balance_changes.iter().any(|c| idx(c.block_access_index) >= last) {
                    return false;
                }
                a.balance_changes.push(alloy_eips::eip7928::BalanceChange {
                    block_access_index: BlockAccessIndex(last),
                    post_balance: U256::from(123_456u64),
                });
                true
            },
            INVALID_BAL,
        ),
        (
            "wrong block access index (to another tx)",
            |bal, n, _| {
                // Move a balance change to a neighbouring transaction index that is free.
                for a in bal.iter_mut() {
                    let indices: Vec<u64> =
                        a.balance_changes.iter().map(|c| idx(c.block_access_index)).collect();
                    for (k, i) in indices.iter().enumerate() {
                        if !is_tx_index(*i, n) {
                            continue;
                        }
                        let prev = if k == 0 { 0 } else { indices[k - 1] };
                        let next = indices.get(k + 1).copied().unwrap_or(n as u64 + 2);
                        for target in [i + 1, i.wrapping_sub(1)] {
                            if target > prev && target < next && is_tx_index(target, n) {
                                a.balance_changes[k].block_access_index = BlockAccessIndex(target);
                                return true;
                            }
                        }
                    }
                }
                false
            },
            INVALID_BAL,
        ),
        (
            "wrong block access index (to post-block)",
            |bal, n, _| {
                for a in bal.iter_mut() {
                    if let Some(last) = a.nonce_changes.last_mut() {
                        if is_tx_index(idx(last.block_access_index), n) {
                            last.block_access_index = BlockAccessIndex(n as u64 + 1);
                            return true;
                        }
                    }
                }
                false
            },
            INVALID_BAL,
        ),
        (
            "block access index out of range",
            |bal, n, _| {
                for a in bal.iter_mut() {
                    if let Some(last) = a.balance_changes.last_mut() {
                        last.block_access_index = BlockAccessIndex(n as u64 + 2);
                        return true;
                    }
                }
                false
            },
            INVALID_BAL,
        ),
        (
            "reordered balance changes",
            |bal, _, _| {
                for a in bal.iter_mut() {
                    if a.balance_changes.len() >= 2 {
                        a.balance_changes.swap(0, 1);
                        return true;
                    }
                }
                false
            },
            INVALID_BAL,
        ),
        (
            "reordered storage slots",
            |bal, _, _| {
                for a in bal.iter_mut() {
                    if a.storage_changes.len() >= 2 {
                        a.storage_changes.swap(0, 1);
                        return true;
                    }
                }
                false
            },
            INVALID_BAL,
        ),
        (
            "storage read duplicating a write",
            |bal, _, _| {
                for a in bal.iter_mut() {
                    if let Some(s) = a.storage_changes.first() {
                        let slot = s.slot;
                        let pos = a.storage_reads.partition_point(|r| *r < slot);
                        a.storage_reads.insert(pos, slot);
                        return true;
                    }
                }
                false
            },
            INVALID_BAL,
        ),
        (
            "swapped account order",
            |bal, _, _| {
                if bal.len() < 2 {
                    return false;
                }
                let mid = bal.len() / 2;
                bal.swap(mid - 1, mid);
                true
            },
            MALFORMED,
        ),
        (
            "duplicated account",
            |bal, _, _| {
                let Some(p) = bal
                    .iter()
                    .position(|a| a.address == COUNTER)
                    .or((!bal.is_empty()).then_some(0))
                else {
                    return false;
                };
                let copy = bal[p].clone();
                bal.insert(p + 1, copy);
                true
            },
            MALFORMED,
        ),
    ]
}

#[test]
fn mutated_bals_are_rejected_identically() {
    use rand::SeedableRng;
    let scenario = Scenario::new();
    let chain = generate_chain(31, 6);
    let pair = Pair::in_memory(&scenario);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x5eed);
    let mut applied: BTreeMap<&'static str, usize> = BTreeMap::new();
    for (b, block) in chain.blocks.iter().enumerate() {
        let n = block.block.body.transactions.len();
        let bal = block.bal.clone().expect("Amsterdam block has a BAL");
        for (name, mutate, expected) in mutations() {
            let mut mutated = bal.clone();
            if !mutate(&mut mutated, n, &mut rng) {
                continue;
            }
            assert_ne!(mutated, bal, "{name}: mutation changed nothing");
            *applied.entry(name).or_default() += 1;
            let what = format!("block {} mutation '{name}'", b + 1);
            let verdict = reject_on_both(&pair, &with_bal(block, mutated, true), &what);
            assert_eq!(verdict, expected, "{what}");
        }
        // Without fixing the header up: the BAL hash check rejects it on both paths.
        let mut mutated = bal.clone();
        mutated[0].storage_reads.push(U256::MAX);
        let verdict = reject_on_both(
            &pair,
            &with_bal(block, mutated.clone(), false),
            &format!("block {} hash mismatch", b + 1),
        );
        assert_eq!(verdict, BAD_BAL_HASH);
        // No BAL with the block, whose header commits to another one: the BAL execution
        // builds does not hash to the header's.
        let mut missing = with_bal(block, mutated, true);
        missing.bal = None;
        assert_eq!(
            reject_on_both(&pair, &missing, &format!("block {} no BAL, header lies", b + 1)),
            BAD_BAL_HASH
        );

        pair.import_valid(block, &format!("block {} (valid, after mutations)", b + 1));
    }
    for (name, _, _) in mutations() {
        assert!(
            applied.get(name).copied().unwrap_or(0) > 0,
            "mutation '{name}' never applied: {applied:?}"
        );
    }
    check_model(&pair.parallel.store, &chain.model);
}

// ------------------------------------------------------------------------------------
// Focused cases: BAL entries at index 0 (the pre-block system calls).
// ------------------------------------------------------------------------------------

/// A small block on genesis: a transfer, an observer call, a counter call, from two
/// senders. Returns the generator (for more blocks) and the block.
fn small_block() -> (ChainGenerator, BlockWithBal) {
    let mut g = ChainGenerator::new(99);
    let s0 = g.scenario.senders[0].clone();
    let s1 = g.scenario.senders[1].clone();
    let slot0 = Bytes::from(word(U256::ZERO).to_vec());
    let txs = vec![
        eip1559(&s0, 0, TxKind::Call(RECEIVER), U256::from(1000u64), Bytes::new(), TRANSFER_GAS),
        eip1559(
            &s1,
            0,
            TxKind::Call(OBSERVER),
            U256::ZERO,
            Bytes::from(address_word(RECEIVER)),
            CALL_GAS,
        ),
        eip1559(&s0, 1, TxKind::Call(COUNTER), U256::ZERO, slot0, CALL_GAS),
    ];
    let block = g.build(txs, vec![]);
    (g, block)
}

fn account_mut(bal: &mut BlockAccessList, address: Address) -> &mut AccountChanges {
    bal.iter_mut()
        .find(|a| a.address == address)
        .unwrap_or_else(|| panic!("{address} not in the BAL"))
}

#[test]
fn small_block_is_accepted_identically() {
    let (g, block) = small_block();
    let pair = Pair::in_memory(&g.scenario);
    pair.import_valid(&block, "small block");
    // The observer logged this block's beacon root and the receiver's balance after tx 0.
    let receipts = pair.parallel.store.receipts(&block.hash()).unwrap().unwrap();
    let log = &receipts[1].logs()[0];
    assert_eq!(log.topics()[0], block.block.header.parent_beacon_block_root.unwrap());
    assert_eq!(log.topics()[1], block.block.header.parent_hash);
    assert_eq!(U256::from_be_bytes(log.topics()[2].0), U256::from(1_000_000u64 + 1000));
    assert_eq!(pair.parallel.store.storage(&COUNTER, &U256::ZERO).unwrap(), U256::from(6u64));
}

/// The header BAL moves the first transaction's sender nonce change from index 1 to index
/// 0 (as if a pre-block system call had bumped it). Execution never produces that, so
/// the block's BAL is invalid: INVALID_BLOCK_ACCESS_LIST.
#[test]
fn bal_write_moved_to_pre_block_index_is_rejected_identically() {
    let (g, block) = small_block();
    let pair = Pair::in_memory(&g.scenario);
    let sender = g.scenario.senders[0].address();
    let mut bal = block.bal.clone().unwrap();
    let account = account_mut(&mut bal, sender);
    assert_eq!(idx(account.nonce_changes[0].block_access_index), 1);
    account.nonce_changes[0].block_access_index = BlockAccessIndex(0);
    let verdict =
        reject_on_both(&pair, &with_bal(&block, bal, true), "sender nonce change moved to index 0");
    assert_eq!(verdict, INVALID_BAL);
}

/// Same, with the sender's balance: an index-0 balance change that leaves it unable to
/// pay for its transaction.
#[test]
fn bal_pre_block_balance_change_for_sender_is_rejected_identically() {
    let (g, block) = small_block();
    let pair = Pair::in_memory(&g.scenario);
    let sender = g.scenario.senders[1].address();
    let mut bal = block.bal.clone().unwrap();
    let account = account_mut(&mut bal, sender);
    account.balance_changes.insert(
        0,
        alloy_eips::eip7928::BalanceChange {
            block_access_index: BlockAccessIndex(0),
            post_balance: U256::from(1u64),
        },
    );
    let verdict =
        reject_on_both(&pair, &with_bal(&block, bal, true), "index-0 balance change for a sender");
    assert_eq!(verdict, INVALID_BAL);
}

/// The header BAL claims a wrong value for the EIP-4788 root written by the pre-block
/// system call (index 0), which a transaction of the block reads and logs.
#[test]
fn bal_wrong_pre_block_system_storage_value_is_rejected_identically() {
    let (g, block) = small_block();
    let pair = Pair::in_memory(&g.scenario);
    let root = block.block.header.parent_beacon_block_root.unwrap();
    let mut bal = block.bal.clone().unwrap();
    let account = account_mut(&mut bal, BEACON_ROOTS);
    let change = account
        .storage_changes
        .iter_mut()
        .flat_map(|s| s.changes.iter_mut())
        .find(|c| idx(c.block_access_index) == 0 && c.new_value == U256::from_be_bytes(root.0))
        .expect("the beacon root written at index 0");
    change.new_value = U256::from_be_bytes(B256::repeat_byte(0x42).0);
    let verdict =
        reject_on_both(&pair, &with_bal(&block, bal, true), "wrong EIP-4788 root at index 0");
    assert_eq!(verdict, INVALID_BAL);
}

/// Post-block index (withdrawals): a wrong withdrawal balance.
#[test]
fn bal_wrong_withdrawal_balance_is_rejected_identically() {
    let mut g = ChainGenerator::new(98);
    let s0 = g.scenario.senders[0].clone();
    let txs = vec![eip1559(&s0, 0, TxKind::Call(COUNTER), U256::ZERO, Bytes::new(), CALL_GAS)];
    let withdrawals = vec![ethrex_common::Withdrawal {
        index: 0,
        validator_index: 1,
        address: RECEIVER,
        amount: 5,
    }];
    let block = g.build(txs, withdrawals);
    let pair = Pair::in_memory(&g.scenario);
    let mut bal = block.bal.clone().unwrap();
    let account = account_mut(&mut bal, RECEIVER);
    let change = account
        .balance_changes
        .iter_mut()
        .find(|c| idx(c.block_access_index) == 2)
        .expect("withdrawal at n+1");
    change.post_balance += U256::from(1u64);
    let verdict = reject_on_both(&pair, &with_bal(&block, bal, true), "wrong withdrawal balance");
    assert_eq!(verdict, INVALID_BAL);
    pair.import_valid(&block, "withdrawal block");
    let expected = U256::from(1_000_000u64) + U256::from(5_000_000_000u64);
    assert_eq!(
        pair.sequential.store.account(&RECEIVER).unwrap().map(|a: AccountState| a.balance),
        Some(expected)
    );
}

/// Replaces transaction `index`'s signature with one no sender can be recovered from.
fn break_signature(block: &mut BlockWithBal, index: usize) {
    use alloy_consensus::{Signed, TxEnvelope};
    let TxEnvelope::Eip1559(signed) = block.block.body.transactions[index].clone() else {
        panic!("tx {index} is not EIP-1559")
    };
    let broken = alloy_primitives::Signature::new(U256::ZERO, U256::from(1u64), false);
    block.block.body.transactions[index] = TxEnvelope::Eip1559(Signed::new_unchecked(
        signed.strip_signature(),
        broken,
        B256::repeat_byte(0xee),
    ));
}

/// Makes the header commit to the (edited) transactions again, so only the edit is wrong.
fn refresh_transactions_root(block: &mut BlockWithBal) {
    block.block.header.transactions_root =
        alloy_consensus::proofs::calculate_transaction_root(&block.block.body.transactions);
}

/// Transaction 1 has a wrong nonce and transaction 2 a signature no sender can be
/// recovered from. Sequential import recovers every sender before executing anything, so
/// its verdict is the signature; the parallel path recovers each sender in its worker and
/// sees transaction 1 fail first in block order, yet must give the same verdict.
#[test]
fn unrecoverable_signature_is_rejected_identically() {
    let (g, block) = small_block();
    let pair = Pair::in_memory(&g.scenario);
    let mut bad = block.clone();
    let s1 = g.scenario.senders[1].clone();
    bad.block.body.transactions[1] = eip1559(
        &s1,
        7,
        TxKind::Call(OBSERVER),
        U256::ZERO,
        Bytes::from(address_word(RECEIVER)),
        CALL_GAS,
    );
    break_signature(&mut bad, 2);
    refresh_transactions_root(&mut bad);
    let verdict = reject_on_both(&pair, &bad, "wrong nonce, then an unrecoverable signature");
    assert_eq!(verdict, "TransactionException.INVALID_SIGNATURE_VRS");
}

/// The same in a bigger block: 40 transfers, transaction 3 with a wrong nonce and
/// transaction 37, far after it, with a signature no sender can be recovered from.
#[test]
fn bad_signature_far_after_an_invalid_transaction_is_the_verdict() {
    let mut g = ChainGenerator::new(7);
    let senders = g.scenario.senders.clone();
    let transfer = |i: u64, nonce: u64| {
        eip1559(
            &senders[i as usize % senders.len()],
            nonce,
            TxKind::Call(RECEIVER),
            U256::from(1 + i),
            Bytes::new(),
            TRANSFER_GAS,
        )
    };
    let txs: Vec<_> = (0..40u64).map(|i| transfer(i, i / senders.len() as u64)).collect();
    let block = g.build(txs, vec![]);
    let pair = Pair::in_memory(&g.scenario);

    let mut nonce_only = block.clone();
    nonce_only.block.body.transactions[3] = transfer(3, 99);
    refresh_transactions_root(&mut nonce_only);
    let mut bad = nonce_only.clone();
    break_signature(&mut bad, 37);
    refresh_transactions_root(&mut bad);
    let verdict = reject_on_both(&pair, &bad, "bad signature far after a wrong nonce");
    assert_eq!(verdict, "TransactionException.INVALID_SIGNATURE_VRS");
    // Without the bad signature, the wrong nonce is the verdict on both paths.
    assert_eq!(
        reject_on_both(&pair, &nonce_only, "wrong nonce"),
        "TransactionException.NONCE_MISMATCH_TOO_HIGH"
    );
    pair.import_valid(&block, "40 transfers");
}

// ------------------------------------------------------------------------------------
// 5. Mega blocks: consecutive blocks executed as one parallel unit.
// ------------------------------------------------------------------------------------

fn import_batches(
    scenario: &Scenario,
    chain: &GeneratedChain,
    options: ethrex_blockchain::ImportOptions,
    batch: usize,
) -> ChainResult {
    let store = scenario.memory_store();
    let importer = scenario.chain(store.clone(), options);
    let mut records = Vec::new();
    let mut in_units = 0;
    for blocks in chain.blocks.chunks(batch) {
        let outcomes = importer.import_batch(blocks).expect("valid blocks");
        assert_eq!(outcomes.len(), blocks.len());
        for (outcome, block) in outcomes.iter().zip(blocks) {
            assert_eq!(outcome.hash, block.hash());
            // In a unit, or (a batch of one, or after a block that ended the unit) alone.
            assert!(
                matches!(outcome.path, ExecutionPath::ParallelBatch | ExecutionPath::Parallel),
                "{:?}",
                outcome.path
            );
            in_units += (outcome.path == ExecutionPath::ParallelBatch) as usize;
            records.push(block_record(&store, &block.hash()));
        }
    }
    // The scenario's genesis holds an empty account some blocks touch, which ends a unit
    // (a view cannot tell whether EIP-161 deleted it); most blocks still run in units.
    if batch > 1 {
        assert!(in_units * 2 >= chain.blocks.len(), "batch {batch}: {in_units} blocks in units");
    }
    ChainResult { records, state: snapshot(&store) }
}

#[test]
fn mega_blocks_match_block_by_block_import() {
    use ethrex_blockchain::Prefetch;
    let scenario = Scenario::new();
    let chain = generate_chain(41, 12);
    let reference = import_all(&scenario, &chain, sequential_options());
    for (threads, batch, prefetch) in [
        (1, 2, Prefetch::Off),
        (4, 3, Prefetch::First),
        (2, 5, Prefetch::Beside),
        (8, 12, Prefetch::First),
        (3, 12, Prefetch::Off),
    ] {
        let options = ethrex_blockchain::ImportOptions { prefetch, ..parallel_options() };
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let result = pool.install(|| import_batches(&scenario, &chain, options, batch));
        let what = format!("{threads} threads, batch {batch}, {prefetch:?}");
        for (i, (a, b)) in result.records.iter().zip(&reference.records).enumerate() {
            assert_eq!(a.header.state_root, b.header.state_root, "{what}: block {}", i + 1);
            assert_eq!(a.receipts, b.receipts, "{what}: block {}: receipts", i + 1);
            assert_eq!(a.bal, b.bal, "{what}: block {}: BAL", i + 1);
        }
        assert!(result.state == reference.state, "{what}: final state differs");
    }
}

#[test]
fn a_batch_is_one_database_write() {
    let scenario = Scenario::new();
    let chain = generate_chain(43, 6);
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(DbKind::Rocksdb, Some(dir.path())).unwrap();
    scenario.init(&store);
    store.flush().unwrap();
    store.take_write_times();
    let importer = scenario.chain(store.clone(), parallel_options());
    importer.import_batch(&chain.blocks[..4]).unwrap();
    importer.import_batch(&chain.blocks[4..]).unwrap();
    store.flush().unwrap();
    let batches: usize = store.take_write_times().iter().map(|w| w.batches).sum();
    assert_eq!(batches, 2, "two mega blocks, two batches for the disk");
    let memory = import_all(&scenario, &chain, sequential_options());
    assert!(snapshot(&store) == memory.state, "RocksDB batches end in another state");
}

#[test]
fn an_invalid_block_in_a_batch_gets_the_block_by_block_verdict_and_leaves_no_trace() {
    use rand::SeedableRng;
    let scenario = Scenario::new();
    let chain = generate_chain(47, 5);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0xba7c);
    let mut checked = 0;
    for (name, mutate, _) in mutations() {
        let bad = 2;
        let block = &chain.blocks[bad];
        let mut bal = block.bal.clone().unwrap();
        if !mutate(&mut bal, block.block.body.transactions.len(), &mut rng) {
            continue;
        }
        let mut blocks = chain.blocks.clone();
        blocks[bad] = with_bal(block, bal, true);
        // The verdict block by block, on a store that holds the blocks before it.
        let single = scenario.chain(scenario.memory_store(), parallel_options());
        for b in &blocks[..bad] {
            single.import_block(b.clone()).unwrap();
        }
        let expected = single.import_block(blocks[bad].clone()).unwrap_err();

        let store = scenario.memory_store();
        let importer = scenario.chain(store.clone(), parallel_options());
        let err = importer.import_batch(&blocks).unwrap_err();
        assert_eq!(err.number, blocks[bad].number(), "{name}");
        assert_eq!(err.source.to_string(), expected.to_string(), "{name}");
        assert_eq!(err.imported.len(), bad, "{name}");
        assert!(
            err.imported.iter().all(|o| {
                matches!(o.path, ExecutionPath::ParallelBatch | ExecutionPath::Parallel)
            }),
            "{name}: the blocks before the bad one did not run in parallel"
        );
        assert_eq!(store.head().unwrap(), Some(blocks[bad - 1].hash()), "{name}: head moved");
        assert!(snapshot(&store) == snapshot(&single.store), "{name}: the bad block left a trace");
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} mutations applied");
}

// ------------------------------------------------------------------------------------
// 6. The cost model that picks the path per block.
// ------------------------------------------------------------------------------------

#[test]
fn the_cost_model_picks_the_parallel_path_when_the_work_spreads() {
    use ethrex_blockchain::parallel_pays;
    let key = signer("cost", 0);
    let to = TxKind::Call(Address::repeat_byte(0x42));
    let txs = |n: usize, gas: u64| -> Vec<_> {
        (0..n).map(|i| eip1559(&key, i as u64, to, U256::ZERO, Bytes::new(), gas)).collect()
    };
    // A few plain transfers: the parallel path's fixed cost outweighs the work.
    assert!(!parallel_pays(&txs(5, 21_000), 2));
    assert!(!parallel_pays(&txs(5, 21_000), 16));
    // Many of them spread well.
    assert!(parallel_pays(&txs(40, 21_000), 2));
    // Four heavy transactions: worth it even below the old 5-transaction threshold.
    assert!(parallel_pays(&txs(4, 16_000_000), 2));
    // One heavy transaction among light ones bounds the parallel time from below.
    let mut lopsided = txs(1, 30_000_000);
    lopsided.extend((1..10).map(|i| eip1559(&key, i, to, U256::ZERO, Bytes::new(), 21_000)));
    assert!(!parallel_pays(&lopsided, 16));
    // One worker, or one transaction: never.
    assert!(!parallel_pays(&txs(100, 1_000_000), 1));
    assert!(!parallel_pays(&txs(1, 30_000_000), 16));
}

/// Building a block leaves the account trie levels the head's commit kept in memory: the
/// import that follows (of the built block or another) starts from them, not from the
/// store. The built block's root is still the one the import computes.
#[test]
fn building_a_block_leaves_the_kept_trie_levels() {
    let (mut g, _) = small_block();
    let store = g.builder.chain.store.clone();
    let head_root = store.head_header().unwrap().unwrap().state_root;
    let attributes = g.attributes(vec![]);
    let s0 = g.scenario.senders[0].clone();
    let transfer =
        eip1559(&s0, 2, TxKind::Call(RECEIVER), U256::from(7u64), Bytes::new(), TRANSFER_GAS);
    let built = g.builder.chain.build_block(&attributes, vec![transfer]).unwrap();
    let levels = store.take_preserved_trie(head_root).expect("building took the head's levels");
    assert_eq!(levels.root(), head_root);
    // Taken here, so the import reads the account trie from the store: it still arrives
    // at the builder's root.
    g.builder.chain.import_block(built.clone()).unwrap();
    assert_eq!(store.head_header().unwrap().unwrap().state_root, built.block.header.state_root);
}
