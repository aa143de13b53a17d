//! The header BAL reorganised by block access index, so that one transaction's writes can
//! be compared with what the header claims for that index in O(accounts it touched).

use alloy_primitives::{Address, Bytes, U256};
use ethrex_common::BlockAccessList;
use std::collections::BTreeMap;

/// Writes one index makes to one account.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct AccountWrites {
    pub balance: Option<U256>,
    pub nonce: Option<u64>,
    pub code: Option<Bytes>,
    /// Sorted by slot.
    pub storage: Vec<(U256, U256)>,
}

pub type IndexWrites = BTreeMap<Address, AccountWrites>;

/// `result[i]` holds every write the BAL records at index `i`, for `i < len`.
/// Writes at indices `>= len` are ignored (shape validation rejects them earlier).
pub fn writes_by_index(bal: &BlockAccessList, len: usize) -> Vec<IndexWrites> {
    let mut out = vec![IndexWrites::new(); len];
    collect_writes(bal, |index| (index < len as u64).then_some(index as usize), &mut out);
    out
}

/// Every write the BAL records at `index` alone: what one transaction's own BAL is
/// reduced to for checking (cheaper than `writes_by_index` up to that index).
pub fn writes_at_index(bal: &BlockAccessList, index: u64) -> IndexWrites {
    let mut out = [IndexWrites::new()];
    collect_writes(bal, |i| (i == index).then_some(0), &mut out);
    let [writes] = out;
    writes
}

/// Files each write of `bal` under `out[slot(index)]`, skipping indices `slot` maps to
/// `None`; storage writes end up sorted by slot.
fn collect_writes(bal: &BlockAccessList, slot: impl Fn(u64) -> Option<usize>, out: &mut [IndexWrites]) {
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
pub fn diff_writes(index: usize, header: &IndexWrites, produced: &IndexWrites) -> Option<String> {
    for (address, writes) in produced {
        match header.get(address) {
            None => return Some(format!("index {index}: {address} written but not listed at this index")),
            Some(h) if h != writes => {
                return Some(format!("index {index}: {address} writes {writes:?}, header lists {h:?}"))
            }
            _ => {}
        }
    }
    if let Some(address) = header.keys().find(|a| !produced.contains_key(*a)) {
        return Some(format!("index {index}: header lists writes to {address} that execution did not make"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_eips::eip7928::{AccountChanges, BalanceChange, BlockAccessIndex, CodeChange, NonceChange, SlotChanges, StorageChange};

    fn bal() -> BlockAccessList {
        let a = Address::repeat_byte(1);
        let b = Address::repeat_byte(2);
        let write = |i: u64, v: u64| StorageChange { block_access_index: BlockAccessIndex(i), new_value: U256::from(v) };
        vec![
            AccountChanges {
                address: a,
                balance_changes: vec![
                    BalanceChange { block_access_index: BlockAccessIndex(0), post_balance: U256::from(5u64) },
                    BalanceChange { block_access_index: BlockAccessIndex(2), post_balance: U256::from(7u64) },
                ],
                nonce_changes: vec![NonceChange { block_access_index: BlockAccessIndex(2), new_nonce: 3 }],
                // Slots listed out of order at index 2: the result must sort them.
                storage_changes: vec![
                    SlotChanges { slot: U256::from(9u64), changes: vec![write(1, 1), write(2, 2)] },
                    SlotChanges { slot: U256::from(4u64), changes: vec![write(2, 3)] },
                ],
                ..Default::default()
            },
            AccountChanges {
                address: b,
                code_changes: vec![CodeChange { block_access_index: BlockAccessIndex(1), new_code: Bytes::from_static(&[0x60, 0x00]) }],
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
        assert_eq!(at_two.storage, vec![(U256::from(4u64), U256::from(3u64)), (U256::from(9u64), U256::from(2u64))]);
        assert_eq!((at_two.balance, at_two.nonce), (Some(U256::from(7u64)), Some(3)));
        assert!(all[1].contains_key(&Address::repeat_byte(2)) && all[3].is_empty());
        assert!(writes_at_index(&bal, 100).is_empty());
    }
}
