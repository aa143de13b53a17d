//! One in-memory form for every design: the union of what any design carries. Which
//! fields a value fills is decided by its design; `codec` writes and reads only those.

use crate::BalDesign;
use alloy_eips::eip7928::{BalanceChange, CodeChange, NonceChange, StorageChange};
use alloy_primitives::{Address, Bytes, B256, U256};

/// An account as it stands at some point (before the block, or before a transaction).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccountValue {
    /// The nonce.
    pub nonce: u64,
    /// The balance in wei.
    pub balance: U256,
    /// keccak256 of the code (`KECCAK_EMPTY` without code).
    pub code_hash: B256,
}

/// A block's access list in `design`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesignBal {
    /// Which design this is; it decides which fields below are filled.
    pub design: BalDesign,
    /// Strictly ascending by address.
    pub accounts: Vec<DesignAccount>,
}

/// Everything one design says about one account.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DesignAccount {
    /// The account's address.
    pub address: Address,
    /// Its value before the block (Type 4, full): `Some(None)` when it did not exist.
    pub pre: Option<Option<AccountValue>>,
    /// The slots named, strictly ascending. With diffs, a slot without changes is one
    /// only read.
    pub slots: Vec<DesignSlot>,
    /// Balance after each index that changed it (designs with diffs).
    pub balance_changes: Vec<BalanceChange>,
    /// Nonce after each index that changed it (designs with diffs).
    pub nonce_changes: Vec<NonceChange>,
    /// Code after each index that changed it (designs with diffs).
    pub code_changes: Vec<CodeChange>,
    /// Type 6: the account before each transaction that accesses it and finds it changed
    /// since the previous entry (the first entry: before the first transaction reading it).
    pub pre_tx: Vec<PreTxAccount>,
}

/// Everything one design says about one slot.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DesignSlot {
    /// The slot key.
    pub slot: U256,
    /// Its value before the block (Types 3, 4, 5, full).
    pub pre: Option<U256>,
    /// Its value after each index that changed it (designs with diffs).
    pub changes: Vec<StorageChange>,
    /// Type 6: its value before each transaction that accesses it and finds it changed.
    pub pre_tx: Vec<PreTxSlot>,
}

/// An account before transaction `index` (a block access index: transaction `i` of the
/// block is index `i + 1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreTxAccount {
    /// The block access index of the transaction.
    pub index: u64,
    /// The account, `None` when it does not exist at that point.
    pub value: Option<AccountValue>,
    /// Its code when an earlier index of the block changed it (the store does not hold
    /// it yet); empty otherwise.
    pub code: Bytes,
}

/// A slot before transaction `index`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreTxSlot {
    /// The block access index of the transaction.
    pub index: u64,
    /// The slot's value.
    pub value: U256,
}

impl DesignAccount {
    /// The account has at least one diff.
    pub fn changed(&self) -> bool {
        !self.balance_changes.is_empty()
            || !self.nonce_changes.is_empty()
            || !self.code_changes.is_empty()
            || self.slots.iter().any(|s| !s.changes.is_empty())
    }
}

impl DesignBal {
    /// Every (address, slot) the design names, in order.
    pub fn slot_keys(&self) -> impl Iterator<Item = (Address, U256)> + '_ {
        self.accounts.iter().flat_map(|a| a.slots.iter().map(move |s| (a.address, s.slot)))
    }
}
