//! Blocks over a store for the tests: state updates and change sets computed with the
//! trie, and commits.

use alloy_primitives::{keccak256, Address, B256, U256};
use ethrex_common::{AccountState, Block, BlockBody, Header, EMPTY_ROOT_HASH, KECCAK_EMPTY};
use ethrex_storage::{BlockCommit, ChangeSet, StateUpdate, Store};
use ethrex_trie::Trie;

/// One account's change: its new nonce and balance (`None`: deleted) and slot writes.
pub(crate) type Change = (Address, Option<(u64, u64)>, Vec<(u64, u64)>);

pub(crate) fn address(i: u64) -> Address {
    Address::left_padding_from(&i.to_be_bytes())
}

/// The block's state update and change set over the store's head state (at
/// `parent_root`), computed with the trie over the store.
pub(crate) fn block_state(
    store: &Store,
    parent_root: B256,
    changes: &[Change],
) -> (B256, StateUpdate, ChangeSet) {
    let mut update = StateUpdate::default();
    let mut change_set = ChangeSet::default();
    let mut accounts = Trie::new(store, parent_root);
    for (address, new, slots) in changes {
        let previous = store.account(address).unwrap();
        change_set.accounts.push((*address, previous));
        let mut storage_root = previous.map_or(EMPTY_ROOT_HASH, |a| a.storage_root);
        if !slots.is_empty() {
            let mut trie = Trie::storage(store, keccak256(address), storage_root);
            for (slot, value) in slots {
                let (slot, value) = (U256::from(*slot), U256::from(*value));
                change_set.storage.push((*address, slot, store.storage(address, &slot).unwrap()));
                update.storage.push((*address, slot, value));
                let rlp = if value.is_zero() { vec![] } else { alloy_rlp::encode(value) };
                trie.insert(keccak256(slot.to_be_bytes::<32>()).as_slice(), rlp).unwrap();
            }
            let (root, nodes) = trie.commit().unwrap();
            storage_root = root;
            update.tries.push(nodes);
        }
        let account = new.map(|(nonce, balance)| AccountState {
            nonce,
            balance: U256::from(balance),
            storage_root,
            code_hash: KECCAK_EMPTY,
        });
        let rlp = account.map_or(vec![], alloy_rlp::encode);
        accounts.insert(keccak256(address).as_slice(), rlp).unwrap();
        update.accounts.push((*address, account));
    }
    let (root, nodes) = accounts.commit().unwrap();
    update.tries.push(nodes);
    (root, update, change_set)
}

pub(crate) fn block(number: u64, parent_hash: B256, state_root: B256) -> Block {
    Block {
        header: Header { number, parent_hash, state_root, ..Default::default() },
        body: BlockBody::default(),
    }
}

pub(crate) fn commit(
    store: &Store,
    block: &Block,
    state: StateUpdate,
    change_set: ChangeSet,
) -> B256 {
    let hash = block.header.hash_slow();
    let prepared = Store::prepare_block(BlockCommit {
        hash,
        block,
        bal: None,
        receipts: &[],
        state,
        change_set,
        total_difficulty: Default::default(),
    });
    store.commit_prepared(prepared).unwrap();
    hash
}
