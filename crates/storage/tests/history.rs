//! A view of an older block's state answers as of that block while blocks land on top of
//! it and while a reorg replaces the blocks after it; it ends only when the block itself
//! leaves the canonical chain.

mod support;

use alloy_primitives::{B256, U256};
use ethrex_common::{Block, EMPTY_ROOT_HASH};
use ethrex_storage::history::HistoryError;
use ethrex_storage::Store;
use support::{address, block, block_state, commit, Change};

/// Commits a block with `changes` on the head and returns it with its hash.
fn extend(store: &Store, changes: &[Change]) -> (Block, B256) {
    let parent = store.head_header().unwrap().unwrap();
    let (root, state, change_set) = block_state(store, parent.state_root, changes);
    let block = block(parent.number + 1, parent.hash_slow(), root);
    let hash = commit(store, &block, state, change_set);
    (block, hash)
}

fn balance(view: &ethrex_storage::history::HistoricalState, i: u64) -> Option<u64> {
    view.account(&address(i)).unwrap().map(|a| a.balance.to::<u64>())
}

#[test]
fn a_view_follows_new_blocks_and_reorgs_above_its_block() {
    let store = Store::in_memory();
    let (root0, state, _) = block_state(
        &store,
        EMPTY_ROOT_HASH,
        &[(address(1), Some((0, 10)), vec![(7, 70)]), (address(2), Some((0, 20)), vec![])],
    );
    let genesis = block(0, B256::ZERO, root0);
    let genesis_hash = genesis.header.hash_slow();
    store.commit_genesis(genesis_hash, &genesis, state).unwrap();
    let (_, hash1) = extend(&store, &[(address(1), Some((1, 11)), vec![(7, 71)])]);

    let at_genesis = store.state_at(genesis_hash).unwrap();
    let at_one = store.state_at(hash1).unwrap();
    assert!(at_one.is_head());
    assert_eq!(balance(&at_one, 1), Some(11));

    // A block lands on top: both views keep answering as of their block, for keys the
    // new block wrote and for keys it did not (read from the head's flat state).
    extend(
        &store,
        &[(address(1), Some((2, 12)), vec![(7, 72)]), (address(3), Some((0, 30)), vec![])],
    );
    assert_eq!(balance(&at_one, 1), Some(11));
    assert_eq!(at_one.storage(&address(1), &U256::from(7)).unwrap(), U256::from(71));
    assert_eq!(balance(&at_one, 3), None);
    assert_eq!(balance(&at_one, 2), Some(20));
    assert!(!at_one.is_head(), "the view did not take the new block's change set");
    assert_eq!(balance(&at_genesis, 1), Some(10));
    assert_eq!(at_genesis.storage(&address(1), &U256::from(7)).unwrap(), U256::from(70));

    // A reorg replaces block 2 with another that writes other keys.
    store.unwind_head().unwrap();
    let (_, other2) = extend(&store, &[(address(2), Some((1, 25)), vec![(9, 90)])]);
    assert_eq!(balance(&at_one, 2), Some(20));
    assert_eq!(balance(&at_one, 3), None);
    assert_eq!(at_one.storage(&address(2), &U256::from(9)).unwrap(), U256::ZERO);
    assert_eq!(at_one.head(), other2);
    assert_eq!(balance(&at_genesis, 1), Some(10));

    // Block 1 itself leaves the canonical chain: its view ends, the genesis view goes on.
    store.unwind_head().unwrap();
    store.unwind_head().unwrap();
    extend(&store, &[(address(4), Some((0, 40)), vec![])]);
    assert!(matches!(at_one.account(&address(4)), Err(HistoryError::HeadMoved)));
    assert_eq!(balance(&at_genesis, 4), None);
    assert_eq!(balance(&at_genesis, 1), Some(10));
}
