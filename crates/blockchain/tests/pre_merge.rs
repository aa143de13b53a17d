//! A chain from proof of work to the blob-parameter-only forks: the execution-apis test
//! chain that Hive's rpc-compat suite loads (54 blocks made by geth: ethash from genesis
//! with ommers, every block fork, the merge by total difficulty at block 36, then
//! Shanghai to BPO2). geth made it, so every header's state and receipts roots are an
//! independent check of the pre-merge rules: rewards, pre-Byzantium receipts, the London
//! transition, the merge. Then mutated blocks: each is refused with the rule it breaks,
//! and nothing of it is stored.
//!
//! The chain is read from `$EXECUTION_APIS_FIXTURES` (`scripts/test.sh` sets it to
//! `../shared/fixtures/execution-apis`); without it the tests print a skip notice.

use alloy_primitives::{B256, U256};
use ethrex_blockchain::chain_file::{parse_genesis, read_chain, ChainFileError};
use ethrex_blockchain::genesis::{genesis_header, geth_alloc, open_genesis};
use ethrex_blockchain::{BlockError, Blockchain, InvalidBlock, OmmerError};
use ethrex_common::{BlockWithBal, ChainConfig, ChainConfigError};
use ethrex_storage::Store;
use std::path::PathBuf;

fn fixtures() -> Option<PathBuf> {
    match std::env::var_os("EXECUTION_APIS_FIXTURES") {
        Some(dir) => Some(PathBuf::from(dir)),
        None => {
            eprintln!("skipping: EXECUTION_APIS_FIXTURES not set");
            None
        }
    }
}

/// The chain's blocks and a fresh chain on its genesis.
fn open(dir: &std::path::Path) -> (Blockchain, Vec<BlockWithBal>, B256) {
    let path = dir.join("genesis.json");
    let genesis = parse_genesis(&std::fs::read(&path).unwrap(), &path).unwrap();
    let store = Store::in_memory();
    let hash =
        open_genesis(&store, &geth_alloc(&genesis), |root| genesis_header(&genesis, root)).unwrap();
    let blocks = read_chain(&dir.join("chain.rlp"), None).unwrap();
    (Blockchain::new(store, ChainConfig::new(genesis.config)), blocks, hash)
}

/// The head `headfcu.json` names (what Hive sends before its tests).
fn head_of(dir: &std::path::Path) -> B256 {
    let fcu: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("headfcu.json")).unwrap()).unwrap();
    fcu["params"][0]["headBlockHash"].as_str().unwrap().parse().unwrap()
}

#[test]
fn the_rpc_test_chain_imports_from_proof_of_work_to_its_head() {
    let Some(dir) = fixtures() else { return };
    let (chain, blocks, genesis) = open(&dir);
    // geth's genesis hash for this chain (its block 1's parent).
    assert_eq!(genesis, blocks[0].block.header.parent_hash);
    for block in &blocks {
        let number = block.number();
        chain.import_block(block.clone()).unwrap_or_else(|e| panic!("block {number}: {e}"));
    }
    assert_eq!(chain.store.head().unwrap(), Some(head_of(&dir)));
    assert_eq!(blocks.len(), 54);

    // The merge: the last proof-of-work block reached the terminal total difficulty,
    // the one before it had not, and the total difficulty stays put after it.
    let ttd = chain.config.inner.terminal_total_difficulty.unwrap();
    let td = |n: u64| {
        let hash = chain.store.canonical_hash(n).unwrap().unwrap();
        chain.store.total_difficulty(&hash).unwrap().unwrap()
    };
    let header = |n: u64| {
        chain.store.header(&chain.store.canonical_hash(n).unwrap().unwrap()).unwrap().unwrap()
    };
    let last_pow = (1..=54).rev().find(|n| !header(*n).difficulty.is_zero()).unwrap();
    assert!(td(last_pow) >= ttd && td(last_pow - 1) < ttd, "block {last_pow} is terminal");
    assert_eq!(td(54), td(last_pow));
    // Ommers were included and paid for, pre-Byzantium receipts carry state roots.
    assert!(blocks.iter().any(|b| !b.block.body.ommers.is_empty()), "the chain has ommers");
    let receipts = chain.store.receipts(&blocks[0].hash()).unwrap().unwrap();
    assert!(!receipts.is_empty());
    assert!(receipts.iter().all(|r| !r.as_receipt().unwrap().status.is_eip658()));
}

/// Imports the first `n` blocks, then `block`; returns its verdict, after checking that
/// a refused block left the head where it was.
fn verdict_after(n: usize, block: BlockWithBal) -> Option<Result<(), BlockError>> {
    let dir = fixtures()?;
    let (chain, blocks, _) = open(&dir);
    for b in &blocks[..n] {
        chain.import_block(b.clone()).unwrap();
    }
    let head = chain.store.head().unwrap();
    let hash = block.hash();
    let verdict = chain.import_block(block).map(|_| ());
    if verdict.is_err() {
        assert_eq!(chain.store.head().unwrap(), head, "a refused block moves nothing");
        assert_eq!(chain.store.header(&hash).unwrap(), None, "a refused block is not stored");
    }
    Some(verdict)
}

fn block(n: usize) -> BlockWithBal {
    let dir = fixtures().unwrap();
    read_chain(&dir.join("chain.rlp"), None).unwrap().swap_remove(n - 1)
}

#[test]
fn a_wrong_difficulty_is_refused_by_the_forks_formula() {
    let Some(_) = fixtures() else { return };
    let mut b = block(10);
    b.block.header.difficulty += U256::from(1);
    let verdict = verdict_after(9, b).unwrap();
    assert!(
        matches!(
            verdict,
            Err(BlockError::Invalid(InvalidBlock::InvalidDifficulty { fork: "Byzantium", .. }))
        ),
        "{verdict:?}"
    );
}

#[test]
fn a_block_after_the_merge_claiming_work_is_refused() {
    let Some(dir) = fixtures() else { return };
    let blocks = read_chain(&dir.join("chain.rlp"), None).unwrap();
    let first_pos = blocks.iter().position(|b| b.block.header.difficulty.is_zero()).unwrap();
    let mut b = blocks[first_pos].clone();
    b.block.header.difficulty = U256::from(131_072);
    let verdict = verdict_after(first_pos, b).unwrap();
    assert!(
        matches!(verdict, Err(BlockError::Invalid(InvalidBlock::PowBlockAfterMerge { .. }))),
        "{verdict:?}"
    );
    // And one before it without work is refused the other way.
    let mut b = blocks[first_pos - 1].clone();
    b.block.header.difficulty = U256::ZERO;
    let verdict = verdict_after(first_pos - 1, b).unwrap();
    assert!(
        matches!(verdict, Err(BlockError::Invalid(InvalidBlock::PosBlockBeforeMerge { .. }))),
        "{verdict:?}"
    );
}

/// `block` with `ommers` instead of its own, its header committing to them.
fn with_ommers(block: &BlockWithBal, ommers: Vec<alloy_consensus::Header>) -> BlockWithBal {
    let mut b = block.clone();
    b.block.header.ommers_hash = alloy_consensus::proofs::calculate_ommers_root(&ommers);
    b.block.body.ommers = ommers;
    b
}

#[test]
fn ommer_rules_refuse_a_sibling_a_duplicate_and_a_wrong_ommers_hash() {
    let Some(dir) = fixtures() else { return };
    let blocks = read_chain(&dir.join("chain.rlp"), None).unwrap();
    let i =
        blocks.iter().position(|b| !b.block.body.ommers.is_empty()).expect("a block with ommers");

    // The same ommer twice (the header commits to the doubled list).
    let ommer = blocks[i].block.body.ommers[0].clone();
    let verdict = verdict_after(i, with_ommers(&blocks[i], vec![ommer.clone(), ommer])).unwrap();
    assert!(
        matches!(
            verdict,
            Err(BlockError::Invalid(InvalidBlock::InvalidOmmer(OmmerError::Duplicate(_))))
        ),
        "{verdict:?}"
    );

    // An ommer whose parent is the block's own parent (a sibling).
    let mut sibling = blocks[i].block.body.ommers[0].clone();
    sibling.parent_hash = blocks[i].block.header.parent_hash;
    let verdict = verdict_after(i, with_ommers(&blocks[i], vec![sibling])).unwrap();
    assert!(
        matches!(
            verdict,
            Err(BlockError::Invalid(InvalidBlock::InvalidOmmer(OmmerError::Dangling(_))))
        ),
        "{verdict:?}"
    );

    // Ommers the header does not commit to.
    let mut b = blocks[i].clone();
    b.block.body.ommers.clear();
    let verdict = verdict_after(i, b).unwrap();
    assert!(
        matches!(verdict, Err(BlockError::Invalid(InvalidBlock::OmmersHash { .. }))),
        "{verdict:?}"
    );
}

#[test]
fn a_reward_to_another_miner_changes_the_state_root_and_is_refused() {
    let Some(_) = fixtures() else { return };
    // A Byzantium block: its receipts carry a status, so only the state root shows it
    // (before Byzantium the receipts' intermediate roots would differ first).
    let mut b = block(10);
    b.block.header.beneficiary = alloy_primitives::Address::repeat_byte(0x42);
    let verdict = verdict_after(9, b).unwrap();
    assert!(
        matches!(verdict, Err(BlockError::Invalid(InvalidBlock::StateRoot { .. }))),
        "{verdict:?}"
    );
}

#[test]
fn a_genesis_with_an_unknown_or_out_of_order_fork_key_is_refused_by_name() {
    let Some(dir) = fixtures() else { return };
    let path = dir.join("genesis.json");
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    json["config"]["pragueBlock"] = serde_json::json!(40);
    let err = parse_genesis(json.to_string().as_bytes(), &path).unwrap_err();
    assert!(
        matches!(&err, ChainFileError::Config { source: ChainConfigError::UnknownForkKey(k), .. } if k == "pragueBlock"),
        "{err}"
    );
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    json["config"]["londonBlock"] = serde_json::json!(2);
    let err = parse_genesis(json.to_string().as_bytes(), &path).unwrap_err();
    assert!(
        matches!(
            &err,
            ChainFileError::Config {
                source: ChainConfigError::OutOfOrder { fork: "London", .. },
                ..
            }
        ),
        "{err}"
    );
}
