//! Unwinding a block puts its change set back into the flat state and into the tries,
//! whose nodes are stored by position for the head's state only: the state tables must
//! come back byte for byte as they were before the block, and a change set that does not
//! lead back to the parent's state root must be refused without writing anything.

mod support;

use alloy_primitives::{keccak256, Address, B256, U256};
use ethrex_common::{AccountState, EMPTY_ROOT_HASH};
use ethrex_storage::backend::Entries;
use ethrex_storage::{Store, StoreError, Table};
use ethrex_trie::Trie;
use support::{address, block, block_state, commit, Change};

/// The state tables' whole content.
fn state_tables(store: &Store) -> Vec<(Table, Entries)> {
    let state = [Table::Accounts, Table::Storage, Table::AccountTrie, Table::StorageTrie];
    store.all_entries().unwrap().into_iter().filter(|(t, _)| state.contains(t)).collect()
}

/// Every account and slot of `changes`-style state reads back through the trie at `root`.
fn trie_holds(store: &Store, root: B256, address: &Address, slot: u64, value: u64) {
    let mut accounts = Trie::new(store, root);
    let rlp = accounts.get(keccak256(address).as_slice()).unwrap().expect("account in trie");
    let account: AccountState = alloy_rlp::Decodable::decode(&mut rlp.as_slice()).unwrap();
    let mut storage = Trie::storage(store, keccak256(address), account.storage_root);
    let got = storage.get(keccak256(U256::from(slot).to_be_bytes::<32>()).as_slice()).unwrap();
    let want = (value != 0).then(|| alloy_rlp::encode(U256::from(value)));
    assert_eq!(got, want, "{address} slot {slot}");
}

#[test]
fn unwinding_restores_the_state_tables_byte_for_byte() {
    let store = Store::in_memory();
    let genesis_changes: Vec<Change> = (0..60)
        .map(|i| {
            (address(i), Some((1, 1000 + i)), (0..i % 7 * 5).map(|s| (s, s + i + 1)).collect())
        })
        .collect();
    let (root0, state, _) = block_state(&store, EMPTY_ROOT_HASH, &genesis_changes);
    let genesis = block(0, B256::ZERO, root0);
    let genesis_hash = genesis.header.hash_slow();
    store.commit_genesis(genesis_hash, &genesis, state).unwrap();
    let before = state_tables(&store);

    // Balances, slots set and cleared (one account's storage emptied, collapsing its
    // trie to nothing), new accounts with storage, deleted accounts without.
    let mut changes: Vec<Change> = vec![
        (address(6), Some((2, 5)), (0..30).map(|s| (s, 0)).collect()),
        (address(13), Some((2, 5)), vec![(3, 0), (4, 99), (500, 1)]),
        (address(20), Some((9, 9)), vec![]),
        (address(0), None, vec![]),
        (address(7), None, vec![]),
    ];
    changes.extend((100..105).map(|i| (address(i), Some((0, i)), vec![(1, 2), (i, i)])));
    let (root1, state, change_set) = block_state(&store, root0, &changes);
    let block1 = block(1, genesis_hash, root1);
    let hash1 = commit(&store, &block1, state, change_set);
    assert_ne!(state_tables(&store), before);
    trie_holds(&store, root1, &address(13), 4, 99);
    trie_holds(&store, root1, &address(102), 102, 102);

    assert_eq!(store.unwind_head().unwrap(), genesis_hash);
    assert_eq!(state_tables(&store), before, "the unwound state is not the genesis state");
    trie_holds(&store, root0, &address(13), 4, 18);
    trie_holds(&store, root0, &address(6), 29, 36);
    // The unwound block's state is gone from the tables: past the node cache (which is
    // keyed by hash, so it can only ever return the right node), a walk of it finds
    // other nodes at its positions and reports them missing rather than reading them.
    store.clear_caches().unwrap();
    let stale = Trie::new(&store, root1).get(keccak256(address(13)).as_slice());
    assert!(matches!(stale, Err(ethrex_trie::TrieError::MissingNode(_))), "{stale:?}");

    // The block can be applied again over the unwound state, landing on the same root.
    let (again, state, change_set) = block_state(&store, root0, &changes);
    assert_eq!(again, root1);
    assert_eq!(commit(&store, &block1, state, change_set), hash1);
    assert_eq!(store.head().unwrap(), Some(hash1));
}

#[test]
fn a_change_set_that_misses_the_parent_root_is_refused_untouched() {
    let store = Store::in_memory();
    let (root0, state, _) =
        block_state(&store, EMPTY_ROOT_HASH, &[(address(1), Some((1, 1)), vec![(1, 1)])]);
    let genesis = block(0, B256::ZERO, root0);
    let genesis_hash = genesis.header.hash_slow();
    store.commit_genesis(genesis_hash, &genesis, state).unwrap();
    let changes: Vec<Change> =
        vec![(address(1), Some((2, 2)), vec![(1, 5)]), (address(2), Some((1, 1)), vec![])];
    let (root1, state, mut change_set) = block_state(&store, root0, &changes);
    // The change set forgets that the block created account 2.
    change_set.accounts.retain(|(a, _)| *a != address(2));
    let hash1 = commit(&store, &block(1, genesis_hash, root1), state, change_set);
    let everything = store.all_entries().unwrap();

    let err = store.unwind_head().unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { table: "change_sets", .. }), "{err}");
    assert!(err.to_string().contains("state root"), "{err}");
    assert_eq!(store.all_entries().unwrap(), everything, "a refused unwind wrote something");
    assert_eq!(store.head().unwrap(), Some(hash1));
}
