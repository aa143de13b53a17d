//! From executed account changes to the new state root, the flat-state writes and the
//! change set. Storage tries of different accounts are independent, so their roots are
//! computed in parallel; the account trie is updated once they are all known.

use crate::error::{BlockError, InvalidBlock, StorageFault};
use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use ethrex_common::{AccountState, EMPTY_ROOT_HASH};
use ethrex_storage::{ChangeSet, StateUpdate, Store};
use ethrex_trie::{keccak::keccak256_all, PreservedTrie, Trie, TrieUpdates};
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
    /// What changed in the account's storage trie.
    trie: Option<TrieUpdates>,
    /// The changed storage trie's upper levels, to keep for the next block.
    kept: Option<PreservedTrie>,
}

/// Deployed code and its hash.
type NewCode = (B256, Bytes);

fn storage_trie_value(value: &U256) -> Option<Vec<u8>> {
    (!value.is_zero()).then(|| alloy_rlp::encode(value))
}

/// Where the pre-block value of a changed slot is read from, for the change set. During
/// import that is the block's execution cache, which already holds every slot the block
/// wrote (execution reads a slot before writing it), so no second store lookup is needed.
pub trait PreBlockSlots: Sync {
    /// The slot's value before the block.
    fn pre_block_slot(&self, address: &Address, slot: &U256) -> Result<U256, BlockError>;
}

impl PreBlockSlots for Store {
    fn pre_block_slot(&self, address: &Address, slot: &U256) -> Result<U256, BlockError> {
        Ok(self.storage(address, slot)?)
    }
}

impl<DB> PreBlockSlots for ethrex_vm::CachingDb<DB>
where
    DB: revm::database_interface::DatabaseRef + Sync,
    DB::Error: std::error::Error + Send + Sync + 'static,
{
    fn pre_block_slot(&self, address: &Address, slot: &U256) -> Result<U256, BlockError> {
        use revm::database_interface::DatabaseRef as _;
        self.storage_ref(*address, *slot).map_err(|e| BlockError::from(StorageFault::new(e)))
    }
}

fn account_outcome(
    store: &Store,
    pre: &impl PreBlockSlots,
    change: &AccountChange,
    hashed_address: B256,
    levels: KeptLevels,
) -> Result<AccountOutcome, BlockError> {
    let address = change.address;
    let previous = store.account(&address)?;
    let mut outcome = AccountOutcome {
        address,
        previous,
        new: None,
        storage: Vec::new(),
        wiped: Vec::new(),
        previous_storage: Vec::new(),
        trie: None,
        kept: None,
    };
    let previous_root = previous.map(|a| a.storage_root).unwrap_or(EMPTY_ROOT_HASH);
    let wipe = change.storage_wiped || change.info.is_none();
    // A storage trie this block changes starts from the levels an earlier commit kept of
    // it, if it is still at their root (and hands new ones on with this block's commit).
    let changes_trie = wipe || !change.storage.is_empty();
    let kept = match levels {
        KeptLevels::Take if changes_trie && previous_root != EMPTY_ROOT_HASH => {
            store.take_preserved_storage_trie(&hashed_address, previous_root)
        }
        _ => None,
    };
    let mut trie = match kept {
        Some(kept) => Trie::from_preserved(store, kept),
        None => Trie::storage(store, hashed_address, previous_root),
    };
    if wipe && previous_root != EMPTY_ROOT_HASH {
        // The old trie's nodes are stored at positions the new one may not overwrite:
        // removing every slot from it deletes them all.
        let entries = store.storage_entries(&address)?;
        let slot_keys: Vec<[u8; 32]> = entries.iter().map(|(s, _)| s.to_be_bytes()).collect();
        trie.update_batch(keccak256_all(&slot_keys).into_iter().map(|key| (key, None)))?;
        // Left with leaves, the trie held slots the flat state does not: a storage fault,
        // which must not become a wrong storage root (and an INVALID verdict).
        if trie.root_hash()? != EMPTY_ROOT_HASH {
            return Err(BlockError::storage(format!(
                "account {address}: removing its {} stored slots leaves its storage trie \
                 (root {previous_root}) non-empty",
                entries.len()
            )));
        }
        for (slot, value) in entries {
            outcome.wiped.push((address, slot));
            outcome.previous_storage.push((address, slot, value));
        }
    }
    let Some((nonce, balance, code_hash)) = change.info else {
        if previous_root != EMPTY_ROOT_HASH {
            outcome.trie = Some(trie.commit()?.1);
        }
        return Ok(outcome);
    };
    let base_root = if wipe { EMPTY_ROOT_HASH } else { previous_root };
    let mut updates = Vec::with_capacity(change.storage.len());
    let slot_keys: Vec<[u8; 32]> =
        change.storage.iter().map(|(slot, _)| slot.to_be_bytes::<32>()).collect();
    let hashed_keys = keccak256_all(&slot_keys);
    // The update walks each key's path with one dependent read per level; on a cold
    // store, reading the paths' nodes first, a level at a time in parallel, is faster.
    // Only a hint: a failed read here is left for the update to meet and report.
    if hashed_keys.len() > 1 && !wipe {
        let _ = trie.prefetch(&hashed_keys);
    }
    for ((slot, value), hashed_key) in change.storage.iter().zip(hashed_keys) {
        if !wipe {
            let before = pre.pre_block_slot(&address, slot)?;
            outcome.previous_storage.push((address, *slot, before));
        } else if !outcome.wiped.iter().any(|(_, s)| s == slot) {
            // A slot the recreated account writes that the old one did not have: unwinding
            // must clear it.
            outcome.previous_storage.push((address, *slot, U256::ZERO));
        }
        outcome.storage.push((address, *slot, *value));
        updates.push((hashed_key, storage_trie_value(value)));
    }
    let storage_root = if updates.is_empty() && !wipe {
        base_root
    } else {
        trie.update_batch(updates)?;
        let (root, changes, kept) = levels.commit(trie, store.storage_trie_memory())?;
        outcome.trie = Some(changes);
        outcome.kept = kept;
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
    codes: Vec<NewCode>,
) -> Result<(B256, StateUpdate, ChangeSet), BlockError> {
    compute_state_update_with(store, store, parent_root, changes, codes)
}

/// The state root `changes` give on top of the state at `parent_root`, for a block that
/// is built rather than imported: the account trie's kept levels stay where they are, for
/// the import of the block (or another) that follows.
pub fn compute_state_root(
    store: &Store,
    parent_root: B256,
    changes: &[AccountChange],
    codes: Vec<NewCode>,
) -> Result<B256, BlockError> {
    Ok(state_update(store, store, parent_root, changes, codes, KeptLevels::Leave)?.0)
}

/// The state root `changes` give on top of the state at `parent_root` and the trie nodes
/// that state has and the store's do not, for a state that is read rather than committed
/// (an older block's, rebuilt on the head's tries for its proofs). As
/// `compute_state_root`, the kept levels stay where they are.
pub fn compute_state_update_detached(
    store: &Store,
    parent_root: B256,
    changes: &[AccountChange],
) -> Result<(B256, StateUpdate), BlockError> {
    let (root, update, _) =
        state_update(store, store, parent_root, changes, Vec::new(), KeptLevels::Leave)?;
    Ok((root, update))
}

/// As `compute_state_update`, reading pre-block slot values from `pre` (which must hold
/// the same state as the store's flat tables).
pub fn compute_state_update_with(
    store: &Store,
    pre: &impl PreBlockSlots,
    parent_root: B256,
    changes: &[AccountChange],
    codes: Vec<NewCode>,
) -> Result<(B256, StateUpdate, ChangeSet), BlockError> {
    state_update(store, pre, parent_root, changes, codes, KeptLevels::Take)
}

/// Whether a state update starts from the trie levels the store keeps (the account trie's
/// and the changed storage tries', handing the new ones on with its commit) or leaves
/// them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum KeptLevels {
    Take,
    Leave,
}

impl KeptLevels {
    /// Commits `trie`, with its levels (up to `budget` bytes) if they are to be kept.
    fn commit(
        self,
        trie: Trie<'_, Store>,
        budget: usize,
    ) -> Result<(B256, TrieUpdates, Option<PreservedTrie>), ethrex_trie::TrieError> {
        match self {
            KeptLevels::Take => trie.commit_preserving(budget),
            KeptLevels::Leave => trie.commit().map(|(root, nodes)| (root, nodes, None)),
        }
    }
}

fn state_update(
    store: &Store,
    pre: &impl PreBlockSlots,
    parent_root: B256,
    changes: &[AccountChange],
    codes: Vec<NewCode>,
    levels: KeptLevels,
) -> Result<(B256, StateUpdate, ChangeSet), BlockError> {
    let hashed_addresses = keccak256_all(&changes.iter().map(|c| c.address).collect::<Vec<_>>());
    // The account trie starts from the levels the parent's commit kept in memory, if it
    // was the last one committed. Its paths are known up front: the nodes below those
    // levels are read beside the storage tries' work (see `Trie::prefetch`).
    let (outcomes, mut account_trie) = rayon::join(
        || {
            changes
                .par_iter()
                .zip(hashed_addresses.par_iter())
                .map(|(c, hashed)| account_outcome(store, pre, c, *hashed, levels))
                .collect::<Result<_, _>>()
        },
        || {
            let kept = match levels {
                KeptLevels::Take => store.take_preserved_trie(parent_root),
                KeptLevels::Leave => None,
            };
            let trie = match kept {
                Some(levels) => Trie::from_preserved(store, levels),
                None => Trie::new(store, parent_root),
            };
            // Only a hint: a failed read is left for the update to meet and report.
            let _ = trie.prefetch(&hashed_addresses);
            trie
        },
    );
    let outcomes: Vec<AccountOutcome> = outcomes?;

    // Sized once: these vectors run to tens of thousands of entries, and growing them by
    // doubling (fresh, page-faulting memory and a copy each time) showed up in profiles.
    let total = |f: fn(&AccountOutcome) -> usize| outcomes.iter().map(f).sum::<usize>();
    let (trie_count, storage_count, wiped_count) = (
        total(|o| o.trie.is_some() as usize),
        total(|o| o.storage.len()),
        total(|o| o.wiped.len()),
    );
    let previous_count = total(|o| o.previous_storage.len());
    let mut update = StateUpdate {
        codes,
        accounts: Vec::with_capacity(outcomes.len()),
        storage: Vec::with_capacity(storage_count),
        wiped_storage: Vec::with_capacity(wiped_count),
        tries: Vec::with_capacity(trie_count + 1),
        account_trie: None,
        storage_tries: Vec::with_capacity(trie_count),
    };
    let mut change_set = ChangeSet::default();
    change_set.accounts.reserve_exact(outcomes.len());
    change_set.storage.reserve_exact(previous_count);
    let mut account_updates = Vec::with_capacity(outcomes.len());
    for (o, hashed_address) in outcomes.into_iter().zip(hashed_addresses) {
        account_updates.push((hashed_address, o.new.map(alloy_rlp::encode)));
        change_set.accounts.push((o.address, o.previous));
        change_set.storage.extend(o.previous_storage);
        update.accounts.push((o.address, o.new));
        update.storage.extend(o.storage);
        update.wiped_storage.extend(o.wiped);
        update.tries.extend(o.trie);
        update.storage_tries.extend(o.kept);
    }
    account_trie.update_batch(account_updates)?;
    let (root, nodes, kept) = levels.commit(account_trie, store.trie_memory())?;
    update.account_trie = kept;
    update.tries.push(nodes);
    Ok((root, update, change_set))
}

/// The state changes a block makes, derived from its BAL alone (last write of every field
/// and slot), normalised like the executor's output: slots whose final value equals the
/// pre-block value and accounts left as they were are dropped, and accounts left empty
/// are deleted (EIP-161). Reads of the pre-block state go through `db` (the warmed
/// cache); an account whose nonce, balance and code the BAL all rewrites is not read.
pub fn changes_from_bal<DB>(
    db: &DB,
    bal: &ethrex_common::BlockAccessList,
) -> Result<(Vec<AccountChange>, Vec<NewCode>), BlockError>
where
    DB: revm::database_interface::DatabaseRef + Sync,
    DB::Error: std::error::Error + Send + Sync + 'static,
{
    let db_err = |e: DB::Error| BlockError::from(StorageFault::new(e));
    let per_account: Vec<(Option<AccountChange>, Vec<NewCode>)> = bal
        .par_iter()
        .filter(|a| {
            !a.balance_changes.is_empty()
                || !a.nonce_changes.is_empty()
                || !a.code_changes.is_empty()
                || !a.storage_changes.is_empty()
        })
        .map(|a| {
            let address = a.address;
            let codes: Vec<NewCode> = a
                .code_changes
                .iter()
                .map(|c| (keccak256(&c.new_code), c.new_code.clone()))
                .collect();
            let covers_all = !a.balance_changes.is_empty()
                && !a.nonce_changes.is_empty()
                && !a.code_changes.is_empty();
            let pre = if covers_all { None } else { db.basic_ref(address).map_err(db_err)? };
            let pre_info = pre.as_ref().map(|i| (i.nonce, i.balance, i.code_hash));
            let nonce = a
                .nonce_changes
                .last()
                .map(|c| c.new_nonce)
                .or(pre_info.map(|p| p.0))
                .unwrap_or_default();
            let balance = a
                .balance_changes
                .last()
                .map(|c| c.post_balance)
                .or(pre_info.map(|p| p.1))
                .unwrap_or_default();
            let code_hash = codes
                .last()
                .map(|(h, _)| *h)
                .or(pre_info.map(|p| p.2))
                .unwrap_or(ethrex_common::KECCAK_EMPTY);
            let mut storage = Vec::with_capacity(a.storage_changes.len());
            for slot in &a.storage_changes {
                let Some(last) = slot.changes.last() else { continue };
                if db.storage_ref(address, slot.slot).map_err(db_err)? != last.new_value {
                    storage.push((slot.slot, last.new_value));
                }
            }
            storage.sort_unstable_by_key(|(k, _)| *k);
            let empty = nonce == 0 && balance.is_zero() && code_hash == ethrex_common::KECCAK_EMPTY;
            let info = (!empty).then_some((nonce, balance, code_hash));
            let unchanged =
                info == pre_info && storage.is_empty() && (pre.is_some() || !covers_all);
            let change = (!unchanged).then_some(AccountChange {
                address,
                info,
                storage_wiped: false,
                storage,
            });
            Ok((change, codes))
        })
        .collect::<Result<_, BlockError>>()?;
    let mut changes = Vec::with_capacity(per_account.len());
    let mut codes = Vec::new();
    for (change, c) in per_account {
        changes.extend(change);
        codes.extend(c);
    }
    changes.sort_unstable_by_key(|c| c.address);
    Ok((changes, codes))
}

/// Recomputes the state root from the flat state alone (every account, every slot, from
/// scratch, ignoring stored trie nodes) and compares it with the head header's. Used after
/// a crash to prove the head and its state are consistent.
pub fn verify_head_state(store: &Store) -> Result<B256, BlockError> {
    let head = store.head_header()?.ok_or_else(|| BlockError::storage("store has no head"))?;
    let accounts = store.all_accounts()?;
    let leaves = accounts
        .par_iter()
        .map(|(address, account)| {
            let slots = store.storage_entries(address)?;
            let storage_root = ethrex_trie::root_from_scratch(
                slots.iter().map(|(k, v)| (keccak256(k.to_be_bytes::<32>()), alloy_rlp::encode(v))),
            );
            if storage_root != account.storage_root {
                return Err(BlockError::storage(format!(
                    "account {address}: storage root {} in its record, {storage_root} from its slots",
                    account.storage_root
                )));
            }
            Ok((keccak256(address), alloy_rlp::encode(account)))
        })
        .collect::<Result<Vec<_>, BlockError>>()?;
    let root = ethrex_trie::root_from_scratch(leaves);
    if root != head.state_root {
        return Err(InvalidBlock::StateRoot { expected: head.state_root, got: root }.into());
    }
    Ok(root)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::NodeFault;
    use ethrex_common::{Block, KECCAK_EMPTY};
    use ethrex_storage::tables::Storage;
    use ethrex_storage::WriteBatch;

    const A: Address = Address::repeat_byte(0xaa);

    fn change(info: Option<(u64, U256, B256)>, wiped: bool, slots: &[(u64, u64)]) -> AccountChange {
        AccountChange {
            address: A,
            info,
            storage_wiped: wiped,
            storage: slots.iter().map(|(s, v)| (U256::from(*s), U256::from(*v))).collect(),
        }
    }

    /// A store whose head state has `A` with slots 1..=20, committed as a genesis.
    fn store_with_storage() -> (Store, B256) {
        let store = Store::in_memory();
        let slots: Vec<(u64, u64)> = (1..=20).map(|s| (s, s * 3)).collect();
        let genesis = [change(Some((1, U256::from(5u64), KECCAK_EMPTY)), false, &slots)];
        let (root, update, _) =
            compute_state_update(&store, EMPTY_ROOT_HASH, &genesis, vec![]).unwrap();
        store.commit_genesis(B256::repeat_byte(1), &Block::default(), update).unwrap();
        (store, root)
    }

    #[test]
    fn a_destroyed_or_recreated_account_deletes_its_old_storage_trie() {
        let (store, root) = store_with_storage();
        for (info, slots) in [(None, vec![]), (Some((1, U256::ZERO, KECCAK_EMPTY)), vec![(7, 1)])] {
            let (new_root, update, _) =
                compute_state_update(&store, root, &[change(info, true, &slots)], vec![]).unwrap();
            let storage: Vec<_> = update.tries.iter().filter(|t| t.owner.is_some()).collect();
            assert_eq!(storage.len(), 1);
            // Every stored node of the old trie is deleted or overwritten.
            let old = store.all_entries().unwrap();
            let (_, rows) = old
                .iter()
                .find(|(t, _)| *t == ethrex_storage::Table::StorageTrie)
                .expect("storage trie table");
            assert!(rows.len() > 1, "the old trie has stored nodes");
            let written: Vec<&Vec<u8>> = storage[0].nodes.iter().map(|n| &n.path).collect();
            for (key, _) in rows {
                let path = key[32..].to_vec();
                assert!(
                    storage[0].removed.contains(&path) || written.contains(&&path),
                    "position {path:?} of the old trie left behind"
                );
            }
            let reference = match &slots[..] {
                [] => EMPTY_ROOT_HASH,
                slots => ethrex_trie::root_from_scratch(slots.iter().map(|(s, v)| {
                    (
                        keccak256(U256::from(*s).to_be_bytes::<32>()),
                        alloy_rlp::encode(U256::from(*v)),
                    )
                })),
            };
            let account = update.accounts[0].1;
            assert_eq!(account.map_or(EMPTY_ROOT_HASH, |a| a.storage_root), reference);
            assert_ne!(new_root, root);
        }
    }

    #[test]
    fn a_storage_trie_starts_from_the_levels_its_last_commit_kept() {
        let (store, root) = store_with_storage();
        assert_eq!(store.preserved_storage_tries().0, 1, "the genesis commit kept A's levels");
        let block = [change(Some((2, U256::from(5u64), KECCAK_EMPTY)), false, &[(3, 0), (40, 1)])];
        // Built (levels left in place) and imported (levels taken): the same root, and
        // the same as A's slots give from scratch.
        let built = compute_state_root(&store, root, &block, vec![]).unwrap();
        assert_eq!(store.preserved_storage_tries().0, 1, "building leaves the levels");
        let (imported, update, _) = compute_state_update(&store, root, &block, vec![]).unwrap();
        assert_eq!(store.preserved_storage_tries(), (0, 0), "importing takes them");
        assert_eq!(imported, built);
        let slots = (1..=20u64).filter(|s| *s != 3).map(|s| (s, s * 3)).chain([(40, 1)]);
        let expected = ethrex_trie::root_from_scratch(slots.map(|(s, v)| {
            (keccak256(U256::from(s).to_be_bytes::<32>()), alloy_rlp::encode(U256::from(v)))
        }));
        assert_eq!(update.accounts[0].1.map(|a| a.storage_root), Some(expected));
        assert_eq!(update.storage_tries.len(), 1);
        assert_eq!(update.storage_tries[0].root(), expected);
        assert_eq!(update.storage_tries[0].owner(), Some(keccak256(A)));
    }

    #[test]
    fn a_trie_with_slots_the_flat_state_lacks_is_a_storage_fault_not_a_wrong_root() {
        let (store, root) = store_with_storage();
        let mut batch = WriteBatch::new();
        batch.delete_entry::<Storage>(&(A, U256::from(20u64)));
        store.write(batch).unwrap();
        let err = compute_state_update(&store, root, &[change(None, true, &[])], vec![])
            .expect_err("a destroyed account whose trie keeps a slot");
        assert!(matches!(err, BlockError::Fault(NodeFault::Storage(_))), "{err}");
        assert!(err.to_string().contains("non-empty"), "{err}");
    }
}
