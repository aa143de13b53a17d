//! A design BAL from a block's execution: the EIP-7928 BAL execution produced (diffs and
//! keys), the parent state's values of those keys, and for Type 6 what each transaction
//! accessed. Consumers verify a design by deriving it again from their own execution
//! and comparing (`crate::verify`).

use crate::model::{AccountValue, DesignAccount, DesignBal, DesignSlot, PreTxAccount, PreTxSlot};
use crate::BalDesign;
use alloy_eips::eip7928::{AccountChanges, BlockAccessList};
use alloy_primitives::{keccak256, Address, Bytes, U256};
use ethrex_common::KECCAK_EMPTY;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Values before the block, as far as they are known.
pub trait PreState {
    /// The account before the block (`Some(None)`: it did not exist); `None`: unknown.
    fn account(&self, address: Address) -> Option<Option<AccountValue>>;
    /// The slot before the block; `None`: unknown.
    fn slot(&self, address: Address, slot: U256) -> Option<U256>;
}

/// Pre-block values in maps.
#[derive(Debug, Default, Clone)]
pub struct PreValues {
    /// Accounts (`None`: did not exist).
    pub accounts: HashMap<Address, Option<AccountValue>>,
    /// Slots.
    pub slots: HashMap<(Address, U256), U256>,
}

impl PreState for PreValues {
    fn account(&self, address: Address) -> Option<Option<AccountValue>> {
        self.accounts.get(&address).copied()
    }
    fn slot(&self, address: Address, slot: U256) -> Option<U256> {
        self.slots.get(&(address, slot)).copied()
    }
}

/// What one transaction accessed: accounts, and under each the slots.
pub type TxAccess = BTreeMap<Address, BTreeSet<U256>>;

/// A value a derivation needed and was not given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Missing {
    /// An account's pre-block value.
    #[error("no pre-block value for account {0}")]
    Account(Address),
    /// A slot's pre-block value.
    #[error("no pre-block value for slot {1:#x} of {0}")]
    Slot(Address, U256),
    /// Type 6 needs every transaction's accesses.
    #[error("no per-transaction accesses")]
    TxAccesses,
}

/// The `design` BAL of a block whose execution produced `bal`, on a parent state `pre`
/// answers for; `txs[i]` is what transaction `i` accessed (needed for Type 6 only).
pub fn derive(
    design: BalDesign,
    bal: &BlockAccessList,
    pre: &dyn PreState,
    txs: Option<&[TxAccess]>,
) -> Result<DesignBal, Missing> {
    let readers = match design {
        BalDesign::Type6 => Some(Readers::of(txs.ok_or(Missing::TxAccesses)?)),
        _ => None,
    };
    let mut accounts = Vec::with_capacity(bal.len());
    for a in bal {
        if design == BalDesign::ParallelIo && !has_diff(a) {
            continue;
        }
        let pre_account = || pre.account(a.address).ok_or(Missing::Account(a.address));
        let pre_slot = |slot| pre.slot(a.address, slot).ok_or(Missing::Slot(a.address, slot));
        let mut out = DesignAccount { address: a.address, ..Default::default() };
        if design.carries_diffs() {
            out.balance_changes = a.balance_changes.clone();
            out.nonce_changes = a.nonce_changes.clone();
            out.code_changes = a.code_changes.clone();
        }
        if design.carries_pre_block_accounts() {
            out.pre = Some(pre_account()?);
        }
        let mut slots: Vec<DesignSlot> = a
            .storage_changes
            .iter()
            .map(|s| DesignSlot {
                slot: s.slot,
                changes: if design.carries_diffs() { s.changes.clone() } else { Vec::new() },
                ..Default::default()
            })
            .collect();
        if design.carries_reads() {
            slots.extend(
                a.storage_reads.iter().map(|&slot| DesignSlot { slot, ..Default::default() }),
            );
        }
        slots.sort_by_key(|s| s.slot);
        if design.carries_pre_block_slots() {
            for s in &mut slots {
                s.pre = Some(pre_slot(s.slot)?);
            }
        }
        if let Some(readers) = &readers {
            out.pre_tx = account_entries(a, pre_account, readers.accounts.get(&a.address))?;
            for s in &mut slots {
                let Some(indices) = readers.slots.get(&(a.address, s.slot)) else { continue };
                let changes = a.storage_changes.iter().find(|c| c.slot == s.slot);
                let value_before = |index: u64| -> Result<U256, Missing> {
                    match changes.and_then(|c| {
                        c.changes.iter().rev().find(|c| c.block_access_index.0 < index)
                    }) {
                        Some(c) => Ok(c.new_value),
                        None => pre_slot(s.slot),
                    }
                };
                for &index in indices {
                    let value = value_before(index)?;
                    if s.pre_tx.last().is_none_or(|e| e.value != value) {
                        s.pre_tx.push(PreTxSlot { index, value });
                    }
                }
            }
        }
        out.slots = slots;
        accounts.push(out);
    }
    Ok(DesignBal { design, accounts })
}

fn has_diff(a: &AccountChanges) -> bool {
    !a.balance_changes.is_empty()
        || !a.nonce_changes.is_empty()
        || !a.code_changes.is_empty()
        || !a.storage_changes.is_empty()
}

/// For every account and slot, the block access indices of the transactions that
/// accessed it, ascending.
struct Readers {
    accounts: HashMap<Address, Vec<u64>>,
    slots: HashMap<(Address, U256), Vec<u64>>,
}

impl Readers {
    fn of(txs: &[TxAccess]) -> Self {
        let mut accounts: HashMap<Address, Vec<u64>> = HashMap::new();
        let mut slots: HashMap<(Address, U256), Vec<u64>> = HashMap::new();
        for (i, access) in txs.iter().enumerate() {
            let index = i as u64 + 1;
            for (address, keys) in access {
                accounts.entry(*address).or_default().push(index);
                for slot in keys {
                    slots.entry((*address, *slot)).or_default().push(index);
                }
            }
        }
        Self { accounts, slots }
    }
}

/// The account before each transaction that accessed it, where it changed since the
/// previous entry: the pre-block value with the block's changes at lower indices applied.
fn account_entries(
    a: &AccountChanges,
    pre_account: impl Fn() -> Result<Option<AccountValue>, Missing>,
    indices: Option<&Vec<u64>>,
) -> Result<Vec<PreTxAccount>, Missing> {
    let Some(indices) = indices else { return Ok(Vec::new()) };
    let pre = pre_account()?;
    let mut out: Vec<PreTxAccount> = Vec::new();
    for &index in indices {
        let balance = a.balance_changes.iter().rev().find(|c| c.block_access_index.0 < index);
        let nonce = a.nonce_changes.iter().rev().find(|c| c.block_access_index.0 < index);
        let code = a.code_changes.iter().rev().find(|c| c.block_access_index.0 < index);
        let value = if pre.is_none() && balance.is_none() && nonce.is_none() && code.is_none() {
            None
        } else {
            let base = pre.unwrap_or(AccountValue {
                nonce: 0,
                balance: U256::ZERO,
                code_hash: KECCAK_EMPTY,
            });
            Some(AccountValue {
                nonce: nonce.map_or(base.nonce, |c| c.new_nonce),
                balance: balance.map_or(base.balance, |c| c.post_balance),
                code_hash: code.map_or(base.code_hash, |c| code_hash(&c.new_code)),
            })
        };
        let code = code.map(|c| c.new_code.clone()).unwrap_or_default();
        if out.last().is_none_or(|e| e.value != value || e.code != code) {
            out.push(PreTxAccount { index, value, code });
        }
    }
    Ok(out)
}

fn code_hash(code: &Bytes) -> alloy_primitives::B256 {
    if code.is_empty() {
        KECCAK_EMPTY
    } else {
        keccak256(code)
    }
}
