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
//! The answer is for the chain as it was when the view was made. A head that moves
//! while the view is read (a new block on top, or a reorg that keeps the block) is
//! followed: the view takes the change sets of the new chain since the block and reads
//! again, so a long call or trace keeps reading the block it started on. Only a reorg
//! that takes the block itself off the canonical chain ends the view
//! ([`HistoryError::HeadMoved`]).
//!
//! Why following is sound: the first change set after the block that lists a key holds
//! the key's value after the block on any chain descending from it, canonical or not, so
//! change-set answers never need the head checked; a read of the head's flat state does,
//! and is taken only when the head after the read is the one the change sets lead to.

use crate::{ChangeSet, Store, StoreError};
use alloy_primitives::{Address, B256, U256};
use ethrex_common::AccountState;
use parking_lot::RwLock;
use rustc_hash::FxHashMap;
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
    /// The block left the canonical chain while its state was being read, or the head
    /// kept moving through every catch-up.
    #[error("the head moved while state was being read; retry")]
    HeadMoved,
    /// A block between the asked one and the head has no change set.
    #[error("change set of block {0} missing")]
    MissingChangeSet(B256),
}

/// How many change-set entries (accounts and slots) the store keeps decoded and indexed
/// for history reads (about 100 bytes each): a few hundred blocks of a busy chain, the
/// window a node's RPC users mostly read.
const CACHED_ENTRIES: u64 = 1 << 20;

/// A block's change set with a hash index on its keys: a history read looks a key up in
/// every change set since its block, so a scan per set would make each read cost the
/// size of all of them.
pub(crate) struct IndexedChangeSet {
    accounts: FxHashMap<Address, Option<AccountState>>,
    storage: FxHashMap<(Address, U256), U256>,
}

impl IndexedChangeSet {
    fn new(set: ChangeSet) -> Self {
        let mut accounts = FxHashMap::default();
        accounts.reserve(set.accounts.len());
        for (address, before) in set.accounts {
            accounts.entry(address).or_insert(before);
        }
        let mut storage = FxHashMap::default();
        storage.reserve(set.storage.len());
        for (address, slot, before) in set.storage {
            storage.entry((address, slot)).or_insert(before);
        }
        Self { accounts, storage }
    }

    fn entries(&self) -> usize {
        self.accounts.len() + self.storage.len()
    }
}

/// Weighs a cached change set by its entries.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EntriesWeighter;

impl quick_cache::Weighter<B256, Arc<IndexedChangeSet>> for EntriesWeighter {
    fn weight(&self, _block: &B256, set: &Arc<IndexedChangeSet>) -> u64 {
        set.entries().max(1) as u64
    }
}

/// Indexed change sets by block hash (a block's change set never changes).
pub(crate) type ChangeSetCache =
    quick_cache::sync::Cache<B256, Arc<IndexedChangeSet>, EntriesWeighter>;

/// An empty [`ChangeSetCache`] of [`CACHED_ENTRIES`].
pub(crate) fn change_set_cache() -> ChangeSetCache {
    quick_cache::sync::Cache::with_weighter(1024, CACHED_ENTRIES, EntriesWeighter)
}

/// How many times one read follows a moving head before giving up: a head moves once a
/// slot, so a read that misses this many moves in a row is not going to settle.
const CATCH_UPS: usize = 8;

/// The state after canonical block `number`, following the head (see the module docs).
pub struct HistoricalState {
    store: Store,
    number: u64,
    hash: B256,
    window: RwLock<Arc<Window>>,
}

/// The change sets from the block to one head.
struct Window {
    head: B256,
    /// The change sets of the blocks after `number` up to the head, oldest first, with
    /// their hashes; empty when the block is the head (the flat state answers everything).
    later: Vec<(B256, Arc<IndexedChangeSet>)>,
}

impl Store {
    /// A view of the state after canonical block `hash`, at most [`HISTORY_WINDOW`]
    /// blocks behind the head.
    ///
    /// # Errors
    /// [`HistoryError::NotCanonical`], [`HistoryError::Pruned`], or a store failure.
    pub fn state_at(&self, hash: B256) -> Result<HistoricalState, HistoryError> {
        let number = self.block_number(&hash)?.ok_or(HistoryError::NotCanonical(hash))?;
        let head = self.head()?.ok_or(HistoryError::NotCanonical(hash))?;
        let head_number = self.block_number(&head)?.ok_or(HistoryError::NotCanonical(head))?;
        if number > head_number || self.canonical_hash(number)? != Some(hash) {
            return Err(HistoryError::NotCanonical(hash));
        }
        if head_number - number > HISTORY_WINDOW {
            return Err(HistoryError::Pruned { number, head: head_number, window: HISTORY_WINDOW });
        }
        let empty = Arc::new(Window { head: hash, later: Vec::new() });
        let view =
            HistoricalState { store: self.clone(), number, hash, window: RwLock::new(empty) };
        let window = view.catch_up(&view.window())?;
        *view.window.write() = window;
        Ok(view)
    }

    /// Block `hash`'s change set, indexed, from the cache or decoded into it.
    fn indexed_change_set(&self, hash: B256) -> Result<Arc<IndexedChangeSet>, HistoryError> {
        if let Some(set) = self.change_sets.get(&hash) {
            return Ok(set);
        }
        let set = self.change_set(&hash)?.ok_or(HistoryError::MissingChangeSet(hash))?;
        let set = Arc::new(IndexedChangeSet::new(set));
        self.change_sets.insert(hash, set.clone());
        Ok(set)
    }
}

impl HistoricalState {
    /// The account after the block (`None`: it did not exist).
    ///
    /// # Errors
    /// A store failure, or [`HistoryError::HeadMoved`].
    pub fn account(&self, address: &Address) -> Result<Option<AccountState>, HistoryError> {
        self.read(|set| set.accounts.get(address).copied(), |store| store.account(address))
    }

    /// The slot's value after the block (zero: unset).
    ///
    /// # Errors
    /// A store failure, or [`HistoryError::HeadMoved`].
    pub fn storage(&self, address: &Address, slot: &U256) -> Result<U256, HistoryError> {
        let key = (*address, *slot);
        self.read(|set| set.storage.get(&key).copied(), |store| store.storage(address, slot))
    }

    /// Everything written between the block and the head the view is at, with its value
    /// after the block: the accounts (their values are [`Self::account`]'s) and the slots
    /// with their values then. Reverting these on that head's state gives the block's.
    pub fn changes_since(&self) -> (Vec<Address>, Vec<(Address, U256, U256)>) {
        let window = self.window();
        let mut accounts = std::collections::BTreeSet::new();
        let mut slots = std::collections::BTreeMap::new();
        for (_, set) in &window.later {
            accounts.extend(set.accounts.keys().copied());
            for (key, before) in &set.storage {
                slots.entry(*key).or_insert(*before);
            }
        }
        let storage = slots.into_iter().map(|((a, s), v)| (a, s, v)).collect();
        (accounts.into_iter().collect(), storage)
    }

    /// Whether this view reads the head's state (no change set in between).
    pub fn is_head(&self) -> bool {
        self.window().later.is_empty()
    }

    /// The head the view is at now (it follows the head as it is read).
    pub fn head(&self) -> B256 {
        self.window().head
    }

    fn window(&self) -> Arc<Window> {
        self.window.read().clone()
    }

    /// A key's value: from the first change set after the block that lists it, else from
    /// the head's flat state, read again after catching up if the head moved meanwhile.
    fn read<T>(
        &self,
        in_set: impl Fn(&IndexedChangeSet) -> Option<T>,
        at_head: impl Fn(&Store) -> Result<T, StoreError>,
    ) -> Result<T, HistoryError> {
        let mut window = self.window();
        for _ in 0..CATCH_UPS {
            if let Some(value) = window.later.iter().find_map(|(_, set)| in_set(set)) {
                return Ok(value);
            }
            let value = at_head(&self.store)?;
            if self.store.head()? == Some(window.head) {
                return Ok(value);
            }
            let next = self.catch_up(&window)?;
            *self.window.write() = next.clone();
            window = next;
        }
        Err(HistoryError::HeadMoved)
    }

    /// The window from the block to the current head, keeping what `from` holds of the
    /// chain that is still canonical.
    fn catch_up(&self, from: &Window) -> Result<Arc<Window>, HistoryError> {
        for _ in 0..CATCH_UPS {
            if let Some(window) = self.try_catch_up(from)? {
                return Ok(Arc::new(window));
            }
        }
        Err(HistoryError::HeadMoved)
    }

    /// [`Self::catch_up`] once; `None` if the head moved again while the chain was read.
    fn try_catch_up(&self, from: &Window) -> Result<Option<Window>, HistoryError> {
        let store = &self.store;
        let head = store.head()?.ok_or(HistoryError::HeadMoved)?;
        let head_number = store.block_number(&head)?.ok_or(HistoryError::HeadMoved)?;
        if head_number < self.number || store.canonical_hash(self.number)? != Some(self.hash) {
            return Err(HistoryError::HeadMoved);
        }
        // The change sets `from` holds for blocks that are still canonical.
        let mut later = Vec::with_capacity((head_number - self.number) as usize);
        for (n, (hash, set)) in (self.number + 1..=head_number).zip(&from.later) {
            if store.canonical_hash(n)? != Some(*hash) {
                break;
            }
            later.push((*hash, set.clone()));
        }
        for n in self.number + 1 + later.len() as u64..=head_number {
            let Some(block) = store.canonical_hash(n)? else { return Ok(None) };
            later.push((block, store.indexed_change_set(block)?));
        }
        // What was read must lead to the head, and the head must still be it.
        let reached = later.last().map_or(self.hash, |(hash, _)| *hash);
        if reached != head || store.head()? != Some(head) {
            return Ok(None);
        }
        Ok(Some(Window { head, later }))
    }
}
