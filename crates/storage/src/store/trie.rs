//! The account trie's upper levels, decoded, kept from one block's commit to the next
//! block's state root (see `ethrex_trie::PreservedTrie`).
//!
//! A block's state update carries the levels of its new account trie; committing the
//! block's batch makes them the ones kept, so they always belong to a committed state. A
//! block that is never committed (invalid, or built and dropped) leaves nothing behind;
//! the next block whose parent root they do not match (after a reorg, say) just reads its
//! trie from the store. A trie is a function of its root: whenever the head's state has
//! the kept levels' root, the nodes stored at their positions are the ones they reference.
//!
//! Also here: the layout marker. Trie nodes are stored by position (`AccountTrie`,
//! `StorageTrie`); stores written before that kept them by hash, and cannot be read.

use super::Store;
use crate::codec::MetaKey;
use crate::tables::Meta;
use crate::StoreError;
use alloy_primitives::B256;
use ethrex_trie::PreservedTrie;
use std::sync::atomic::Ordering;

/// The decoded upper levels of the account trie kept between blocks, by default.
pub const ACCOUNT_TRIE_BYTES: usize = 32 << 20;

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

    /// How many bytes of decoded account trie nodes a state update may keep for the next
    /// block.
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
        });
        store.commit_prepared(prepared).unwrap();
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
