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
use revm::database_interface::DatabaseRef;
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

impl<DB: DatabaseRef> DatabaseRef for BatchView<'_, DB> {
    type Error = DB::Error;

    fn basic_ref(&self, address: Address) -> Result<Option<AccountInfo>, Self::Error> {
        let base = self.base.basic_ref(address)?;
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
        Ok(Some(info))
    }

    fn code_by_hash_ref(&self, code_hash: B256) -> Result<Bytecode, Self::Error> {
        match self.layers.codes.get(&code_hash) {
            Some(code) => Ok(code.clone()),
            None => self.base.code_by_hash_ref(code_hash),
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
            None => self.base.storage_ref(address, index),
        }
    }

    fn block_hash_ref(&self, number: u64) -> Result<B256, Self::Error> {
        // The earlier blocks of the batch are not in the store yet.
        match self.layers.blocks[..self.position].iter().find(|(n, _)| *n == number) {
            Some((_, hash)) => Ok(*hash),
            None => self.base.block_hash_ref(number),
        }
    }
}
