//! The header BAL reorganised by block access index, so that one transaction's writes can
//! be compared with what the header claims for that index in O(accounts it touched);
//! and the check that the header BAL has the form this reading (and revm's) relies on.

use alloy_primitives::{Address, Bytes, U256};
use ethrex_common::{AccountChanges, BlockAccessList};
use std::collections::BTreeMap;

/// Writes one index makes to one account.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct AccountWrites {
    /// New balance.
    pub(crate) balance: Option<U256>,
    /// New nonce.
    pub(crate) nonce: Option<u64>,
    /// New code.
    pub(crate) code: Option<Bytes>,
    /// New slot values, sorted by slot.
    pub(crate) storage: Vec<(U256, U256)>,
}

/// Every write of one block access index, by account.
pub(crate) type IndexWrites = BTreeMap<Address, AccountWrites>;

/// Why `bal` does not have the canonical form the parallel executor relies on, or
/// `None` when it has it. `len` is the number of block access indices (transactions + 2).
///
/// Both readings of the header BAL assume it: `writes_by_index` files every write under
/// its index, while revm's BAL view keeps the last entry of a repeated account or slot
/// and looks writes up assuming ascending indices. On a BAL without this form the two
/// readings can disagree, so a transaction could run on a pre-state other than the one
/// its predecessors' checked writes describe, and fail where sequential execution would
/// not. Such a BAL is invalid anyway; the sequential path must judge it.
pub(crate) fn parallel_form_violation(bal: &BlockAccessList, len: usize) -> Option<String> {
    if let Some(w) = bal.windows(2).find(|w| w[0].address >= w[1].address) {
        return Some(format!("account {} listed after {}", w[1].address, w[0].address));
    }
    bal.iter().find_map(|account| {
        account_form_violation(account, len as u64)
            .map(|v| format!("account {}: {v}", account.address))
    })
}

fn account_form_violation(account: &AccountChanges, len: u64) -> Option<String> {
    let indices = |what: &str, indices: &mut dyn Iterator<Item = u64>| -> Option<String> {
        let mut previous: Option<u64> = None;
        for index in indices {
            if index >= len {
                return Some(format!(
                    "{what} at index {index}, past the block's last index {}",
                    len - 1
                ));
            }
            if let Some(p) = previous.filter(|p| *p >= index) {
                return Some(format!("{what} at index {index} after one at index {p}"));
            }
            previous = Some(index);
        }
        None
    };
    indices("balance change", &mut account.balance_changes.iter().map(|c| c.block_access_index.0))
        .or_else(|| {
            indices(
                "nonce change",
                &mut account.nonce_changes.iter().map(|c| c.block_access_index.0),
            )
        })
        .or_else(|| {
            indices("code change", &mut account.code_changes.iter().map(|c| c.block_access_index.0))
        })
        .or_else(|| {
            account.storage_changes.iter().find_map(|s| {
                indices(
                    &format!("slot {:#x} change", s.slot),
                    &mut s.changes.iter().map(|c| c.block_access_index.0),
                )
            })
        })
        .or_else(|| {
            let changed = account.storage_changes.iter().map(|s| s.slot);
            ascending_violation("changed slot", changed)
                .or_else(|| ascending_violation("read slot", account.storage_reads.iter().copied()))
        })
        .or_else(|| {
            // Both lists ascend: walk them together to find a slot listed in both.
            let mut reads = account.storage_reads.iter().peekable();
            account.storage_changes.iter().find_map(|s| {
                while reads.next_if(|r| **r < s.slot).is_some() {}
                (reads.peek() == Some(&&s.slot))
                    .then(|| format!("slot {:#x} both changed and only read", s.slot))
            })
        })
}

fn ascending_violation(what: &str, mut slots: impl Iterator<Item = U256>) -> Option<String> {
    let mut previous = slots.next()?;
    for slot in slots {
        if slot <= previous {
            return Some(format!("{what} {slot:#x} listed after {previous:#x}"));
        }
        previous = slot;
    }
    None
}

/// `result[i]` holds every write the BAL records at index `i`, for `i < len`.
/// Writes at indices `>= len` are ignored (`parallel_form_violation` reports them).
pub(crate) fn writes_by_index(bal: &BlockAccessList, len: usize) -> Vec<IndexWrites> {
    let mut out = vec![IndexWrites::new(); len];
    collect_writes(bal, |index| (index < len as u64).then_some(index as usize), &mut out);
    out
}

/// Every write the BAL records at `index` alone: what one transaction's own BAL is
/// reduced to for checking (cheaper than `writes_by_index` up to that index).
pub(crate) fn writes_at_index(bal: &BlockAccessList, index: u64) -> IndexWrites {
    let mut out = [IndexWrites::new()];
    collect_writes(bal, |i| (i == index).then_some(0), &mut out);
    let [writes] = out;
    writes
}

/// Files each write of `bal` under `out[slot(index)]`, skipping indices `slot` maps to
/// `None`; storage writes end up sorted by slot.
fn collect_writes(
    bal: &BlockAccessList,
    slot: impl Fn(u64) -> Option<usize>,
    out: &mut [IndexWrites],
) {
    for account in bal {
        let address = account.address;
        for c in &account.balance_changes {
            if let Some(i) = slot(c.block_access_index.0) {
                out[i].entry(address).or_default().balance = Some(c.post_balance);
            }
        }
        for c in &account.nonce_changes {
            if let Some(i) = slot(c.block_access_index.0) {
                out[i].entry(address).or_default().nonce = Some(c.new_nonce);
            }
        }
        for c in &account.code_changes {
            if let Some(i) = slot(c.block_access_index.0) {
                out[i].entry(address).or_default().code = Some(c.new_code.clone());
            }
        }
        for s in &account.storage_changes {
            for c in &s.changes {
                if let Some(i) = slot(c.block_access_index.0) {
                    out[i].entry(address).or_default().storage.push((s.slot, c.new_value));
                }
            }
        }
    }
    for writes in out.iter_mut() {
        for w in writes.values_mut() {
            w.storage.sort_unstable_by_key(|(k, _)| *k);
        }
    }
}

/// Describes the first difference between what a transaction wrote and what the header
/// BAL records for its index, or `None` when they agree.
pub(crate) fn diff_writes(
    index: usize,
    header: &IndexWrites,
    produced: &IndexWrites,
) -> Option<String> {
    for (address, writes) in produced {
        match header.get(address) {
            None => {
                return Some(format!(
                    "index {index}: {address} written but not listed at this index"
                ))
            }
            Some(h) if h != writes => {
                return Some(format!(
                    "index {index}: {address} writes {writes:?}, header lists {h:?}"
                ))
            }
            _ => {}
        }
    }
    if let Some(address) = header.keys().find(|a| !produced.contains_key(*a)) {
        return Some(format!(
            "index {index}: header lists writes to {address} that execution did not make"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_eips::eip7928::{
        AccountChanges, BalanceChange, BlockAccessIndex, CodeChange, NonceChange, SlotChanges,
        StorageChange,
    };

    fn bal() -> BlockAccessList {
        let a = Address::repeat_byte(1);
        let b = Address::repeat_byte(2);
        let write = |i: u64, v: u64| StorageChange {
            block_access_index: BlockAccessIndex(i),
            new_value: U256::from(v),
        };
        vec![
            AccountChanges {
                address: a,
                balance_changes: vec![
                    BalanceChange {
                        block_access_index: BlockAccessIndex(0),
                        post_balance: U256::from(5u64),
                    },
                    BalanceChange {
                        block_access_index: BlockAccessIndex(2),
                        post_balance: U256::from(7u64),
                    },
                ],
                nonce_changes: vec![NonceChange {
                    block_access_index: BlockAccessIndex(2),
                    new_nonce: 3,
                }],
                // Slots listed out of order at index 2: the result must sort them.
                storage_changes: vec![
                    SlotChanges { slot: U256::from(9u64), changes: vec![write(1, 1), write(2, 2)] },
                    SlotChanges { slot: U256::from(4u64), changes: vec![write(2, 3)] },
                ],
                ..Default::default()
            },
            AccountChanges {
                address: b,
                code_changes: vec![CodeChange {
                    block_access_index: BlockAccessIndex(1),
                    new_code: Bytes::from_static(&[0x60, 0x00]),
                }],
                ..Default::default()
            },
        ]
    }

    #[test]
    fn writes_at_one_index_match_writes_by_index() {
        let bal = bal();
        let all = writes_by_index(&bal, 4);
        for (index, expected) in all.iter().enumerate() {
            assert_eq!(&writes_at_index(&bal, index as u64), expected, "index {index}");
        }
        let at_two = &all[2][&Address::repeat_byte(1)];
        assert_eq!(
            at_two.storage,
            vec![(U256::from(4u64), U256::from(3u64)), (U256::from(9u64), U256::from(2u64))]
        );
        assert_eq!((at_two.balance, at_two.nonce), (Some(U256::from(7u64)), Some(3)));
        assert!(all[1].contains_key(&Address::repeat_byte(2)) && all[3].is_empty());
        assert!(writes_at_index(&bal, 100).is_empty());
    }

    #[test]
    fn form_violations_are_found() {
        // `bal()` lists slot 9 before slot 4: the only violation of the fixture.
        let mut canonical = bal();
        canonical[0].storage_changes.swap(0, 1);
        assert_eq!(parallel_form_violation(&canonical, 4), None);
        assert!(parallel_form_violation(&bal(), 4).is_some_and(|v| v.contains("changed slot")));
        let violation = |mutate: fn(&mut BlockAccessList)| {
            let mut b = canonical.clone();
            mutate(&mut b);
            parallel_form_violation(&b, 4).expect("a violation")
        };
        assert!(violation(|b| b.swap(0, 1)).contains("listed after"));
        assert!(violation(|b| b.push(b[1].clone())).contains("listed after"));
        assert!(violation(|b| b[0].balance_changes.swap(0, 1))
            .contains("balance change at index 0 after one at index 2"));
        assert!(violation(|b| b[0].nonce_changes[0].block_access_index = BlockAccessIndex(4))
            .contains("past the block's last index 3"));
        assert!(violation(|b| b[0].storage_changes[1].changes.swap(0, 1))
            .contains("slot 0x9 change at index 1"));
        assert!(violation(|b| {
            let copy = b[1].code_changes[0].clone();
            b[1].code_changes.push(copy)
        })
        .contains("code change at index 1 after one at index 1"));
        assert!(violation(|b| b[0].storage_reads = vec![U256::from(5u64), U256::from(4u64)])
            .contains("read slot 0x4 listed after 0x5"));
        assert!(violation(|b| b[0].storage_reads = vec![U256::from(1u64), U256::from(9u64)])
            .contains("slot 0x9 both changed and only read"));
        // Reads that interleave with the changed slots without repeating one are fine.
        let mut reads = canonical.clone();
        reads[0].storage_reads = vec![U256::from(1u64), U256::from(5u64), U256::from(10u64)];
        assert_eq!(parallel_form_violation(&reads, 4), None);
    }
}
