//! From executed account changes to the new state root, the flat-state writes and the
//! change set. Storage tries of different accounts are independent, so their roots are
//! computed in parallel; the account trie is updated once they are all known.

use crate::error::BlockError;
use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use ethrex_common::{AccountState, EMPTY_ROOT_HASH};
use ethrex_storage::{ChangeSet, StateUpdate, Store};
use ethrex_trie::apply_updates;
use ethrex_vm::AccountChange;
use rayon::prelude::*;

/// One account's part of the result, computed independently of the others.
struct AccountOutcome {
    address: Address,
    previous: Option<AccountState>,
    new: Option<AccountState>,
    storage: Vec<(Address, U256, U256)>,
    wiped: Vec<(Address, U256)>,
    previous_storage: Vec<(Address, U256, U256)>,
    nodes: Vec<(B256, Vec<u8>)>,
}

fn storage_trie_value(value: &U256) -> Option<Vec<u8>> {
    (!value.is_zero()).then(|| alloy_rlp::encode(value))
}

fn account_outcome(store: &Store, change: &AccountChange) -> Result<AccountOutcome, BlockError> {
    let address = change.address;
    let previous = store.account(&address)?;
    let mut outcome = AccountOutcome {
        address,
        previous,
        new: None,
        storage: Vec::new(),
        wiped: Vec::new(),
        previous_storage: Vec::new(),
        nodes: Vec::new(),
    };
    let previous_root = previous.map(|a| a.storage_root).unwrap_or(EMPTY_ROOT_HASH);
    let wipe = change.storage_wiped || change.info.is_none();
    if wipe && previous_root != EMPTY_ROOT_HASH {
        for (slot, value) in store.storage_entries(&address)? {
            outcome.wiped.push((address, slot));
            outcome.previous_storage.push((address, slot, value));
        }
    }
    let Some((nonce, balance, code_hash)) = change.info else {
        return Ok(outcome);
    };
    let base_root = if wipe { EMPTY_ROOT_HASH } else { previous_root };
    let mut updates = Vec::with_capacity(change.storage.len());
    for (slot, value) in &change.storage {
        if !wipe {
            let before = store.storage(&address, slot)?;
            outcome.previous_storage.push((address, *slot, before));
        }
        outcome.storage.push((address, *slot, *value));
        updates.push((keccak256(slot.to_be_bytes::<32>()), storage_trie_value(value)));
    }
    let storage_root = if updates.is_empty() {
        base_root
    } else {
        let (root, nodes) = apply_updates(store, base_root, updates)?;
        outcome.nodes = nodes;
        root
    };
    outcome.new = Some(AccountState { nonce, balance, storage_root, code_hash });
    Ok(outcome)
}

/// Applies `changes` on top of the state at `parent_root` (which the store's flat tables
/// must hold). Returns the new root, the writes and the change set; writes nothing.
pub fn compute_state_update(
    store: &Store,
    parent_root: B256,
    changes: &[AccountChange],
    codes: Vec<(B256, Bytes)>,
) -> Result<(B256, StateUpdate, ChangeSet), BlockError> {
    let outcomes: Vec<AccountOutcome> =
        changes.par_iter().map(|c| account_outcome(store, c)).collect::<Result<_, _>>()?;

    let mut update = StateUpdate { codes, ..Default::default() };
    let mut change_set = ChangeSet::default();
    let mut account_updates = Vec::with_capacity(outcomes.len());
    for o in outcomes {
        account_updates.push((keccak256(o.address), o.new.map(|a| alloy_rlp::encode(a))));
        change_set.accounts.push((o.address, o.previous));
        change_set.storage.extend(o.previous_storage);
        update.accounts.push((o.address, o.new));
        update.storage.extend(o.storage);
        update.wiped_storage.extend(o.wiped);
        update.trie_nodes.extend(o.nodes);
    }
    let (root, nodes) = apply_updates(store, parent_root, account_updates)?;
    update.trie_nodes.extend(nodes);
    Ok((root, update, change_set))
}
