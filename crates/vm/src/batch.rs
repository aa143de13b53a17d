//! The pre-state of every block of a mega block (a batch of consecutive blocks executed
//! as one parallel unit), without executing the blocks before it.
//!
//! A block's BAL states the value every account field and slot it changes ends with, so
//! the state block k starts from is the batch's start state overlaid with the last write
//! each earlier block's BAL names for it. `BatchLayers` indexes those writes once, and
//! `BatchView` reads the state before one block through them: block k's transactions can
//! run as soon as the batch starts, beside block k-1's.
//!
//! A view is only as right as the earlier blocks' BALs. The batch's import checks every
//! block's execution against its own BAL, in block order, before it commits it; a block
//! whose BAL turns out wrong ends the batch there, and the blocks after it (which ran on
//! the wrong view) are imported again one by one.

use alloy_primitives::{keccak256, Address, B256, U256};
use ethrex_common::{BlockAccessList, KECCAK_EMPTY};
use revm::bytecode::Bytecode;
use revm::database_interface::{DBErrorMarker, DatabaseRef};
use revm::state::AccountInfo;
use rustc_hash::FxHashMap;

/// Writes to one field, by the position (in the batch) of the block that made them, in
/// increasing position.
type Writes<T> = Vec<(usize, T)>;

/// The last value a block before `position` wrote, if any.
fn before<T: Clone>(writes: &Writes<T>, position: usize) -> Option<T> {
    writes.iter().rev().find(|(at, _)| *at < position).map(|(_, v)| v.clone())
}

#[derive(Default)]
struct AccountWrites {
    nonce: Writes<u64>,
    balance: Writes<U256>,
    code: Writes<B256>,
    storage: FxHashMap<U256, Writes<U256>>,
}

/// Every write the BALs of a batch's blocks end with, indexed by account, field and
/// block position, and the blocks' hashes (for `BLOCKHASH` within the batch).
#[derive(Default)]
pub struct BatchLayers {
    accounts: FxHashMap<Address, AccountWrites>,
    /// The first position whose BAL names each account, changed or only read.
    first_listed: FxHashMap<Address, usize>,
    codes: FxHashMap<B256, Bytecode>,
    /// Number and hash of each block, by position.
    blocks: Vec<(u64, B256)>,
}

impl BatchLayers {
    /// Indexes the BALs of a batch's blocks, given in block order with each block's
    /// number and hash. Stops before the first BAL whose code changes do not decode as
    /// bytecode (that block cannot be executed from a view); returns how many blocks it
    /// took, which is all of them otherwise.
    pub fn new<'a>(
        blocks: impl IntoIterator<Item = (u64, B256, &'a BlockAccessList)>,
    ) -> (Self, usize) {
        let mut layers = Self::default();
        for (position, (number, hash, bal)) in blocks.into_iter().enumerate() {
            let mut codes = Vec::new();
            for account in bal {
                for change in &account.code_changes {
                    if change.new_code.is_empty() {
                        continue;
                    }
                    match Bytecode::new_raw_checked(change.new_code.clone()) {
                        Ok(code) => codes.push((keccak256(&change.new_code), code)),
                        Err(_) => return (layers, position),
                    }
                }
            }
            layers.codes.extend(codes);
            for account in bal {
                layers.first_listed.entry(account.address).or_insert(position);
                let writes = layers.accounts.entry(account.address).or_default();
                // Each list is in increasing index order in a canonical BAL; the last
                // entry is the block's final value either way, as the maximum index.
                if let Some(c) = account.balance_changes.iter().max_by_key(|c| c.block_access_index)
                {
                    writes.balance.push((position, c.post_balance));
                }
                if let Some(c) = account.nonce_changes.iter().max_by_key(|c| c.block_access_index) {
                    writes.nonce.push((position, c.new_nonce));
                }
                if let Some(c) = account.code_changes.iter().max_by_key(|c| c.block_access_index) {
                    let hash =
                        if c.new_code.is_empty() { KECCAK_EMPTY } else { keccak256(&c.new_code) };
                    writes.code.push((position, hash));
                }
                for slot in &account.storage_changes {
                    if let Some(c) = slot.changes.iter().max_by_key(|c| c.block_access_index) {
                        writes.storage.entry(slot.slot).or_default().push((position, c.new_value));
                    }
                }
            }
            layers.blocks.push((number, hash));
        }
        let taken = layers.blocks.len();
        (layers, taken)
    }

    /// How many blocks the layers cover.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    /// Whether the layers cover no block.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// The state before the block at `position`, over `base` (the batch's start state).
    pub fn view<'a, DB>(&'a self, base: &'a DB, position: usize) -> BatchView<'a, DB> {
        BatchView { base, layers: self, position }
    }
}

/// The state before one block of a batch: the batch's start state with the earlier
/// blocks' BAL writes on top.
pub struct BatchView<'a, DB> {
    base: &'a DB,
    layers: &'a BatchLayers,
    position: usize,
}

/// A read through a `BatchView` failed.
#[derive(Debug)]
pub enum BatchViewError<E> {
    /// The start state underneath failed.
    Base(E),
    /// The account is empty in the batch's start state and an earlier block of the batch
    /// named it: if that block touched it, EIP-161 deleted it, and a BAL does not say
    /// which. The block is then imported on its own.
    EmptyAccountAccessed(Address),
}

impl<E: std::fmt::Display> std::fmt::Display for BatchViewError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BatchViewError::Base(e) => e.fmt(f),
            BatchViewError::EmptyAccountAccessed(address) => write!(
                f,
                "account {address} is empty in the batch's start state and an earlier block \
                 of the batch accessed it: its existence cannot be told from the BALs"
            ),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for BatchViewError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BatchViewError::Base(e) => Some(e),
            BatchViewError::EmptyAccountAccessed(_) => None,
        }
    }
}

impl<E: DBErrorMarker> DBErrorMarker for BatchViewError<E> {}

impl<DB: DatabaseRef> DatabaseRef for BatchView<'_, DB> {
    type Error = BatchViewError<DB::Error>;

    fn basic_ref(&self, address: Address) -> Result<Option<AccountInfo>, Self::Error> {
        let base = self.base.basic_ref(address).map_err(BatchViewError::Base)?;
        let listed_before =
            self.layers.first_listed.get(&address).is_some_and(|&at| at < self.position);
        if listed_before && base.as_ref().is_some_and(AccountInfo::is_empty) {
            return Err(BatchViewError::EmptyAccountAccessed(address));
        }
        let Some(writes) = self.layers.accounts.get(&address) else { return Ok(base) };
        let (nonce, balance, code) = (
            before(&writes.nonce, self.position),
            before(&writes.balance, self.position),
            before(&writes.code, self.position),
        );
        // As revm reads a BAL within a block: an account absent from the state stays
        // absent unless a write brings it in.
        if nonce.is_none() && balance.is_none() && code.is_none() {
            return Ok(base);
        }
        let mut info = base.unwrap_or_default();
        if let Some(nonce) = nonce {
            info.nonce = nonce;
        }
        if let Some(balance) = balance {
            info.balance = balance;
        }
        if let Some(hash) = code {
            info.code_hash = hash;
            info.code = self.layers.codes.get(&hash).cloned().or(Some(Bytecode::default()));
        }
        // Left empty by an earlier block's writes: EIP-161 deleted it at the end of the
        // transaction that touched it.
        if info.is_empty() {
            return Ok(None);
        }
        Ok(Some(info))
    }

    fn code_by_hash_ref(&self, code_hash: B256) -> Result<Bytecode, Self::Error> {
        match self.layers.codes.get(&code_hash) {
            Some(code) => Ok(code.clone()),
            None => self.base.code_by_hash_ref(code_hash).map_err(BatchViewError::Base),
        }
    }

    fn storage_ref(&self, address: Address, index: U256) -> Result<U256, Self::Error> {
        let written = self
            .layers
            .accounts
            .get(&address)
            .and_then(|w| w.storage.get(&index))
            .and_then(|w| before(w, self.position));
        match written {
            Some(value) => Ok(value),
            None => self.base.storage_ref(address, index).map_err(BatchViewError::Base),
        }
    }

    fn block_hash_ref(&self, number: u64) -> Result<B256, Self::Error> {
        // The earlier blocks of the batch are not in the store yet.
        match self.layers.blocks[..self.position].iter().find(|(n, _)| *n == number) {
            Some((_, hash)) => Ok(*hash),
            None => self.base.block_hash_ref(number).map_err(BatchViewError::Base),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_eips::eip7928::{
        AccountChanges, BalanceChange, BlockAccessIndex, NonceChange, SlotChanges, StorageChange,
    };
    use revm::database::{CacheDB, EmptyDB};

    fn account(address: Address) -> AccountChanges {
        AccountChanges { address, ..Default::default() }
    }

    #[test]
    fn views_see_earlier_blocks_writes_and_only_those() {
        let (a, b, empty) =
            (Address::repeat_byte(0xa), Address::repeat_byte(0xb), Address::repeat_byte(0xe));
        let mut base = CacheDB::new(EmptyDB::default());
        base.insert_account_info(a, AccountInfo { balance: U256::from(10), ..Default::default() });
        base.insert_account_info(b, AccountInfo { balance: U256::from(7), ..Default::default() });
        base.insert_account_info(empty, AccountInfo::default());
        base.insert_account_storage(a, U256::from(1), U256::from(100)).unwrap();

        // Block 0: a's balance 10 -> 3 -> 4, nonce 1, slot 1 -> 5; b emptied; `empty` read.
        let mut a0 = account(a);
        a0.balance_changes = vec![
            BalanceChange { block_access_index: BlockAccessIndex(1), post_balance: U256::from(3) },
            BalanceChange { block_access_index: BlockAccessIndex(2), post_balance: U256::from(4) },
        ];
        a0.nonce_changes =
            vec![NonceChange { block_access_index: BlockAccessIndex(1), new_nonce: 1 }];
        a0.storage_changes = vec![SlotChanges {
            slot: U256::from(1),
            changes: vec![StorageChange {
                block_access_index: BlockAccessIndex(1),
                new_value: U256::from(5),
            }],
        }];
        let mut b0 = account(b);
        b0.balance_changes = vec![BalanceChange {
            block_access_index: BlockAccessIndex(1),
            post_balance: U256::ZERO,
        }];
        let bal0 = vec![a0, b0, account(empty)];
        // Block 1: a's balance 9.
        let mut a1 = account(a);
        a1.balance_changes = vec![BalanceChange {
            block_access_index: BlockAccessIndex(3),
            post_balance: U256::from(9),
        }];
        let bal1 = vec![a1];
        let hashes = [B256::repeat_byte(1), B256::repeat_byte(2)];
        let (layers, taken) = BatchLayers::new([(1, hashes[0], &bal0), (2, hashes[1], &bal1)]);
        assert_eq!(taken, 2);

        let first = layers.view(&base, 0);
        assert_eq!(first.basic_ref(a).unwrap().unwrap().balance, U256::from(10));
        assert_eq!(first.storage_ref(a, U256::from(1)).unwrap(), U256::from(100));
        assert!(first.basic_ref(empty).unwrap().is_some(), "nothing before block 0");
        assert_eq!(first.block_hash_ref(1).unwrap(), base.block_hash_ref(1).unwrap());

        let second = layers.view(&base, 1);
        let info = second.basic_ref(a).unwrap().unwrap();
        assert_eq!((info.balance, info.nonce), (U256::from(4), 1), "block 0's last writes");
        assert_eq!(second.storage_ref(a, U256::from(1)).unwrap(), U256::from(5));
        assert_eq!(second.basic_ref(b).unwrap(), None, "emptied by block 0: deleted (EIP-161)");
        assert!(matches!(
            second.basic_ref(empty),
            Err(BatchViewError::EmptyAccountAccessed(e)) if e == empty
        ));
        assert_eq!(second.block_hash_ref(1).unwrap(), hashes[0]);

        let third = layers.view(&base, 2);
        assert_eq!(third.basic_ref(a).unwrap().unwrap().balance, U256::from(9));
    }
}
