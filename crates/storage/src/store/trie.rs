//! The account trie's upper levels, and those of the storage tries blocks keep changing,
//! decoded, kept from one block's commit to the next block's state root (see
//! `ethrex_trie::PreservedTrie`).
//!
//! A block's state update carries the levels of its new account trie and of the storage
//! tries it changed; committing the block's batch makes them the ones kept, so they always
//! belong to a committed state. A block that is never committed (invalid, or built and
//! dropped) leaves nothing behind; the next block whose parent root they do not match
//! (after a reorg, say) just reads its trie from the store. A trie is a function of its
//! root: whenever the head's state has the kept levels' root, the nodes stored at their
//! positions are the ones they reference. The same holds for a storage trie and its
//! account's storage root in the head's state.
//!
//! Storage tries are kept least recently committed first out, within the same byte budget
//! as the account trie's levels (so at most twice `trie_memory` in all): the contracts
//! that nearly every block touches (pools, tokens) stay, a trie written once is dropped
//! when newer ones need the room.
//!
//! Also here: the layout marker. Trie nodes are stored by position (`AccountTrie`,
//! `StorageTrie`); stores written before that kept them by hash, and cannot be read.

use super::Store;
use crate::codec::MetaKey;
use crate::tables::Meta;
use crate::StoreError;
use alloy_primitives::B256;
use ethrex_trie::PreservedTrie;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;

/// The default of `Store::trie_memory`: decoded account trie levels kept between blocks,
/// and as much again of storage tries' levels.
pub const TRIE_MEMORY_BYTES: usize = 256 << 20;

/// The share of the storage tries' budget one storage trie may keep: 16 MiB of the
/// default 256 MiB, enough for the whole trie of a hot contract (a pool, a token).
pub(crate) const STORAGE_TRIE_SHARE: usize = 16;

/// The kept levels of storage tries, by hashed address, within a byte budget.
#[derive(Default)]
pub(crate) struct KeptStorageTries {
    tries: FxHashMap<B256, (PreservedTrie, u64)>,
    /// Owners in the order their levels were kept, with the commit number they were kept
    /// at; an owner kept again later appears again, and its older entry is stale.
    order: VecDeque<(u64, B256)>,
    bytes: usize,
    commits: u64,
}

impl KeptStorageTries {
    fn take(&mut self, owner: &B256, root: B256) -> Option<PreservedTrie> {
        let (levels, _) = self.tries.remove(owner)?;
        self.bytes -= levels.bytes();
        // Levels of another root are of no use now (the account's storage moved on).
        (levels.root() == root).then_some(levels)
    }

    /// Adds `levels`, then drops the least recently kept beyond `budget`; returns what it
    /// dropped, for the caller to free where it costs the import nothing.
    fn keep(&mut self, levels: Vec<PreservedTrie>, budget: usize) -> Vec<PreservedTrie> {
        self.commits += 1;
        let mut dropped = Vec::new();
        for levels in levels {
            let Some(owner) = levels.owner() else { continue };
            self.bytes += levels.bytes();
            self.order.push_back((self.commits, owner));
            if let Some((old, _)) = self.tries.insert(owner, (levels, self.commits)) {
                self.bytes -= old.bytes();
                dropped.push(old);
            }
        }
        while self.bytes > budget {
            let Some((commit, owner)) = self.order.pop_front() else { break };
            if self.tries.get(&owner).is_some_and(|(_, kept_at)| *kept_at == commit) {
                let (old, _) = self.tries.remove(&owner).expect("just found");
                self.bytes -= old.bytes();
                dropped.push(old);
            }
        }
        // Stale order entries are dropped as they reach the front; bound them too.
        if self.order.len() > 2 * self.tries.len() + 1024 {
            let tries = &self.tries;
            self.order.retain(|(commit, owner)| {
                tries.get(owner).is_some_and(|(_, kept_at)| kept_at == commit)
            });
        }
        dropped
    }
}

/// The state layout this build writes and reads: 2 is trie nodes by position. (1, never
/// written, is the earlier layout of nodes by hash.)
pub const STATE_LAYOUT: u8 = 2;

/// `STATE_LAYOUT` as stored under `MetaKey::Layout`.
pub(super) fn layout_marker() -> B256 {
    B256::with_last_byte(STATE_LAYOUT)
}

impl Store {
    /// Refuses a store with a chain whose state is laid out otherwise than this build
    /// reads it (a data directory from before trie nodes were stored by position).
    /// `Store::open` checks it; a store built over a backend directly should too.
    pub fn check_layout(&self) -> Result<(), StoreError> {
        if self.read::<Meta>(&MetaKey::Head)?.is_none() {
            return Ok(());
        }
        match self.read::<Meta>(&MetaKey::Layout)? {
            Some(marker) if marker == layout_marker() => Ok(()),
            found => Err(StoreError::Invalid(format!(
                "the data directory holds a state in layout {}, this build reads layout \
                 {STATE_LAYOUT} (trie nodes by position): remove it and sync or import again",
                found.map_or(1, |m| m[31])
            ))),
        }
    }

    /// The kept upper levels of the account trie at `root`, handed over (the next commit
    /// puts new ones back); `None` if the levels kept are another root's or none are.
    pub fn take_preserved_trie(&self, root: alloy_primitives::B256) -> Option<PreservedTrie> {
        let mut slot = self.preserved.lock();
        if slot.as_ref().is_some_and(|kept| kept.root() == root) {
            slot.take()
        } else {
            None
        }
    }

    /// The kept upper levels of the storage trie of the account whose hashed address is
    /// `owner`, at `root`, handed over (the commit of the block that changes the trie puts
    /// new ones back); `None` if none are kept for that root.
    pub fn take_preserved_storage_trie(&self, owner: &B256, root: B256) -> Option<PreservedTrie> {
        self.preserved_storage.lock().take(owner, root)
    }

    /// How many bytes of decoded storage trie nodes one storage trie's state update may
    /// keep for the next block.
    pub fn storage_trie_memory(&self) -> usize {
        self.trie_memory() / STORAGE_TRIE_SHARE
    }

    /// How many storage tries have levels kept, and their bytes in all.
    pub fn preserved_storage_tries(&self) -> (usize, usize) {
        let kept = self.preserved_storage.lock();
        (kept.tries.len(), kept.bytes)
    }

    /// How many bytes of decoded account trie nodes a state update may keep for the next
    /// block (and storage tries' levels together, as many).
    pub fn trie_memory(&self) -> usize {
        self.trie_memory.load(Ordering::Relaxed)
    }

    /// Sets `trie_memory`; 0 keeps only the root node.
    pub fn set_trie_memory(&self, bytes: usize) {
        self.trie_memory.store(bytes, Ordering::Relaxed);
    }

    /// Makes `levels` (of a state just committed) the ones kept.
    pub(super) fn preserve_trie(&self, levels: Option<PreservedTrie>) {
        if let Some(levels) = levels {
            *self.preserved.lock() = Some(levels);
        }
    }

    /// Adds `levels` (of storage tries a state just committed changed) to the ones kept,
    /// dropping the least recently kept beyond the budget. This runs on the commit's
    /// path; whole tries dropped (up to 1/16 of the budget each) are freed on the pool.
    pub(super) fn preserve_storage_tries(&self, levels: Vec<PreservedTrie>) {
        if levels.is_empty() {
            return;
        }
        let dropped = self.preserved_storage.lock().keep(levels, self.trie_memory());
        if !dropped.is_empty() {
            rayon::spawn(move || drop(dropped));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{BlockCommit, ChangeSet, StateUpdate, Store};
    use alloy_primitives::{keccak256, B256};
    use ethrex_common::{Block, BlockBody, Header};
    use ethrex_trie::{PreservedTrie, Trie, EMPTY_ROOT_HASH};

    fn block(number: u64, parent: B256) -> Block {
        Block {
            header: Header { number, parent_hash: parent, ..Default::default() },
            body: BlockBody::default(),
        }
    }

    /// A trie on `root` (through `store`) with keys `keys` set, committed with its levels.
    fn update(
        store: &Store,
        levels: Option<PreservedTrie>,
        root: B256,
        keys: std::ops::Range<u64>,
    ) -> (B256, StateUpdate) {
        let mut trie = match levels {
            Some(levels) => Trie::from_preserved(store, levels),
            None => Trie::new(store, root),
        };
        trie.update_batch(keys.map(|i| (keccak256(i.to_be_bytes()), Some(vec![1; 40])))).unwrap();
        let (root, nodes, account_trie) = trie.commit_preserving(1 << 20).unwrap();
        (root, StateUpdate { tries: vec![nodes], account_trie, ..Default::default() })
    }

    fn commit(store: &Store, hash: B256, number: u64, state: StateUpdate) {
        let block = block(number, B256::ZERO);
        let prepared = Store::prepare_block(BlockCommit {
            hash,
            block: &block,
            bal: None,
            receipts: &[],
            state,
            change_set: ChangeSet::default(),
            total_difficulty: Default::default(),
        });
        store.commit_prepared(prepared).unwrap();
    }

    /// Storage trie levels of `owner` with `slots` slots (values differ by owner, so roots
    /// do too), as a block's commit carries them.
    fn storage_levels(store: &Store, owner: B256, slots: u64) -> (B256, PreservedTrie) {
        let mut trie = Trie::storage(store, owner, EMPTY_ROOT_HASH);
        let value = vec![owner[0]; 40];
        trie.update_batch((0..slots).map(|i| (keccak256(i.to_be_bytes()), Some(value.clone()))))
            .unwrap();
        let (root, _, levels) = trie.commit_preserving(usize::MAX).unwrap();
        (root, levels.expect("a non-empty trie"))
    }

    #[test]
    fn storage_trie_levels_are_kept_by_owner_and_root_least_recent_out() {
        let store = Store::in_memory();
        let owners: Vec<B256> = (1..=4u8).map(B256::repeat_byte).collect();
        let levels: Vec<(B256, PreservedTrie)> =
            owners.iter().map(|o| storage_levels(&store, *o, 200)).collect();
        let each = levels[0].1.bytes();
        assert!(levels.iter().all(|(_, l)| l.bytes() == each), "same shape, same size");
        // Room for three of the four.
        store.set_trie_memory(3 * each + each / 2);
        let roots: Vec<B256> = levels.iter().map(|(root, _)| *root).collect();
        let root = |i: usize| roots[i];

        // Committed in two blocks: 0 and 1, then 2 and 3. The first kept goes.
        let mut levels = levels.into_iter().map(|(_, l)| l);
        store.preserve_storage_tries(levels.by_ref().take(2).collect());
        assert_eq!(store.preserved_storage_tries(), (2, 2 * each));
        store.preserve_storage_tries(levels.collect());
        assert_eq!(store.preserved_storage_tries(), (3, 3 * each));
        assert!(store.take_preserved_storage_trie(&owners[0], root(0)).is_none(), "evicted");

        // Handed over once, to the matching owner and root only.
        assert!(store.take_preserved_storage_trie(&owners[3], root(1)).is_none(), "wrong root");
        assert!(store.take_preserved_storage_trie(&owners[3], root(3)).is_none(), "dropped");
        let kept = store.take_preserved_storage_trie(&owners[1], root(1)).expect("kept");
        assert_eq!((kept.owner(), kept.root()), (Some(owners[1]), root(1)));
        assert!(store.take_preserved_storage_trie(&owners[1], root(1)).is_none(), "taken");
        assert_eq!(store.preserved_storage_tries(), (1, each));

        // Owner 1 kept again: now more recent than owner 2, which goes first when a new
        // trie needs room (the stale entry of owner 1's first keep is skipped).
        store.preserve_storage_tries(vec![kept]);
        let (root5, five) = storage_levels(&store, B256::repeat_byte(5), 200);
        store.preserve_storage_tries(vec![five]);
        assert_eq!(store.preserved_storage_tries(), (3, 3 * each));
        store.preserve_storage_tries(vec![storage_levels(&store, owners[3], 200).1]);
        assert_eq!(store.preserved_storage_tries(), (3, 3 * each));
        assert!(store.take_preserved_storage_trie(&owners[2], root(2)).is_none(), "evicted");
        assert!(store.take_preserved_storage_trie(&owners[1], root(1)).is_some());
        assert!(store.take_preserved_storage_trie(&B256::repeat_byte(5), root5).is_some());
        assert!(store.take_preserved_storage_trie(&owners[3], root(3)).is_some());
        assert_eq!(store.preserved_storage_tries(), (0, 0));
    }

    #[test]
    fn only_committed_levels_are_kept_and_each_is_handed_over_once() {
        let store = Store::in_memory();
        let (genesis_root, state) = update(&store, None, EMPTY_ROOT_HASH, 0..300);
        store.commit_genesis(B256::repeat_byte(1), &block(0, B256::ZERO), state).unwrap();
        assert!(store.take_preserved_trie(B256::repeat_byte(9)).is_none(), "another root");

        // Block 1, built on the genesis levels, prepared and then dropped (as an invalid
        // block is): the genesis levels were handed over and nothing replaces them.
        let levels = store.take_preserved_trie(genesis_root).expect("genesis levels");
        assert!(levels.nodes() > 1, "more than the root kept");
        assert!(store.take_preserved_trie(genesis_root).is_none(), "handed over once");
        let (_, state) = update(&store, Some(levels), genesis_root, 300..310);
        drop(Store::prepare_block(BlockCommit {
            hash: B256::repeat_byte(2),
            block: &block(1, B256::ZERO),
            bal: None,
            receipts: &[],
            state,
            change_set: ChangeSet::default(),
            total_difficulty: Default::default(),
        }));
        assert!(store.take_preserved_trie(genesis_root).is_none());

        // Block 1 again, from the store: committed, its levels are kept and start block 2,
        // whose root matches the same block computed without them.
        let (root1, state) = update(&store, None, genesis_root, 300..310);
        commit(&store, B256::repeat_byte(2), 1, state);
        let levels = store.take_preserved_trie(root1).expect("block 1's levels");
        let (root2, _) = update(&store, Some(levels), root1, 310..400);
        let (fresh2, _) = update(&store, None, root1, 310..400);
        assert_eq!(root2, fresh2);
        assert_ne!(root2, root1);
    }
}
