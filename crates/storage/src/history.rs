//! State as it was after an older canonical block, read from the head's flat state and
//! the change sets of the blocks since.
//!
//! Every committed block keeps a change set: the accounts and slots it overwrote, with
//! their values before it. So the value of a key after block `n` is the value the first
//! block after `n` that wrote it found there, or, when no block since `n` wrote it, the
//! head's. [`HistoricalState`] answers reads that way, walking at most
//! [`HISTORY_WINDOW`] change sets per read (they are kept for every block, but reading
//! further back than that would take one decode per block per read).
//!
//! This relies on what unwinding relies on: a change set lists every key its block
//! changed, the slots a self-destruct cleared included.
//!
//! The answer is for the chain as it was when the view was made: a reorg or a new head
//! between two reads is detected ([`HistoryError::HeadMoved`]), never mixed into one.

use crate::{ChangeSet, Store, StoreError};
use alloy_primitives::{Address, B256, U256};
use ethrex_common::AccountState;
use std::sync::Arc;

/// How many blocks behind the head state can be read.
pub const HISTORY_WINDOW: u64 = 1024;

/// Why a historical read could not be answered.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The block is older than the window of readable history.
    #[error("historical state of block {number} is not available: state is kept for the last {window} blocks (head {head})")]
    Pruned {
        /// The block asked for.
        number: u64,
        /// The head when asked.
        head: u64,
        /// [`HISTORY_WINDOW`].
        window: u64,
    },
    /// The block is not on the canonical chain (or not stored).
    #[error("block {0} is not on the canonical chain")]
    NotCanonical(B256),
    /// The head moved while the view was being read.
    #[error("the head moved while state was being read; retry")]
    HeadMoved,
    /// A block between the asked one and the head has no change set.
    #[error("change set of block {0} missing")]
    MissingChangeSet(B256),
}

/// The state after canonical block `number`, as of the head the view was made at.
pub struct HistoricalState {
    store: Store,
    head: B256,
    /// The change sets of the blocks after `number` up to the head, oldest first; empty
    /// when `number` is the head (the flat state answers everything).
    later: Vec<Arc<ChangeSet>>,
}

impl Store {
    /// A view of the state after canonical block `hash`, at most [`HISTORY_WINDOW`]
    /// blocks behind the head.
    ///
    /// # Errors
    /// [`HistoryError::NotCanonical`], [`HistoryError::Pruned`], or a store failure.
    pub fn state_at(&self, hash: B256) -> Result<HistoricalState, HistoryError> {
        let head = self.head()?.ok_or(HistoryError::NotCanonical(hash))?;
        let head_number = self.block_number(&head)?.ok_or(HistoryError::NotCanonical(head))?;
        let number = self.block_number(&hash)?.ok_or(HistoryError::NotCanonical(hash))?;
        if number > head_number || self.canonical_hash(number)? != Some(hash) {
            return Err(HistoryError::NotCanonical(hash));
        }
        if head_number - number > HISTORY_WINDOW {
            return Err(HistoryError::Pruned { number, head: head_number, window: HISTORY_WINDOW });
        }
        let mut later = Vec::with_capacity((head_number - number) as usize);
        for n in number + 1..=head_number {
            let block = self.canonical_hash(n)?.ok_or(HistoryError::HeadMoved)?;
            let set = self.change_set(&block)?.ok_or(HistoryError::MissingChangeSet(block))?;
            later.push(Arc::new(set));
        }
        let view = HistoricalState { store: self.clone(), head, later };
        view.check_head()?;
        Ok(view)
    }
}

impl HistoricalState {
    /// The account after the block (`None`: it did not exist).
    ///
    /// # Errors
    /// A store failure, or [`HistoryError::HeadMoved`].
    pub fn account(&self, address: &Address) -> Result<Option<AccountState>, HistoryError> {
        for set in &self.later {
            if let Some((_, before)) = set.accounts.iter().find(|(a, _)| a == address) {
                return Ok(*before);
            }
        }
        let account = self.store.account(address)?;
        self.check_head()?;
        Ok(account)
    }

    /// The slot's value after the block (zero: unset).
    ///
    /// # Errors
    /// A store failure, or [`HistoryError::HeadMoved`].
    pub fn storage(&self, address: &Address, slot: &U256) -> Result<U256, HistoryError> {
        for set in &self.later {
            if let Some((_, _, before)) =
                set.storage.iter().find(|(a, s, _)| a == address && s == slot)
            {
                return Ok(*before);
            }
        }
        let value = self.store.storage(address, slot)?;
        self.check_head()?;
        Ok(value)
    }

    /// Everything written between the block and the head, with its value after the
    /// block: the accounts (their values are [`Self::account`]'s) and the slots with
    /// their values then. Reverting these on the head's state gives the block's.
    pub fn changes_since(&self) -> (Vec<Address>, Vec<(Address, U256, U256)>) {
        let mut accounts = std::collections::BTreeSet::new();
        let mut slots = std::collections::BTreeMap::new();
        for set in &self.later {
            accounts.extend(set.accounts.iter().map(|(a, _)| *a));
            for (address, slot, before) in &set.storage {
                slots.entry((*address, *slot)).or_insert(*before);
            }
        }
        let storage = slots.into_iter().map(|((a, s), v)| (a, s, v)).collect();
        (accounts.into_iter().collect(), storage)
    }

    /// Whether this view reads the head's state (no change set in between).
    pub fn is_head(&self) -> bool {
        self.later.is_empty()
    }

    fn check_head(&self) -> Result<(), HistoryError> {
        if self.store.head()? == Some(self.head) {
            Ok(())
        } else {
            Err(HistoryError::HeadMoved)
        }
    }
}
