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
    let slot = |index: u64| -> Option<usize> { (index < len as u64).then_some(index as usize) };
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
    for writes in &mut out {
        for w in writes.values_mut() {
            w.storage.sort_unstable_by_key(|(k, _)| *k);
        }
    }
    out
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
