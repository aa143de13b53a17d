//! Building a block's batch and committing it.

use super::Store;
use crate::backend::WriteBatch;
use crate::changeset::ChangeSet;
use crate::codec::{MetaKey, TxPosition};
use crate::persist::PendingBatch;
use crate::tables::{
    Accounts, Bals, Bodies, CanonicalHashes, ChangeSets, Code, HeaderNumbers, Headers, Meta,
    Receipts, Storage, TotalDifficulties, TxNumbers,
};
use crate::trie_nodes::trie_node_key;
use crate::StoreError;
use alloy_primitives::{Address, Bytes, B256, U256};
use ethrex_common::{AccountState, Block, BlockAccessList, Receipt};
use ethrex_trie::{NodeRlp, PreservedTrie, TrieUpdates};
use rustc_hash::FxHashMap;

/// Flat state and trie changes of one block, ready to be written.
#[derive(Debug, Default, Clone)]
pub struct StateUpdate {
    /// New account records (`None`: the account no longer exists).
    pub accounts: Vec<(Address, Option<AccountState>)>,
    /// New storage values (zero deletes the slot).
    pub storage: Vec<(Address, U256, U256)>,
    /// Storage slots removed because the account was destroyed or recreated.
    pub wiped_storage: Vec<(Address, U256)>,
    /// New contract code by hash.
    pub codes: Vec<(B256, Bytes)>,
    /// What changed in the account trie and in each storage trie: nodes to write at
    /// their positions, positions to delete.
    pub tries: Vec<TrieUpdates>,
    /// The new account trie's upper levels, decoded, for the next block's root to start
    /// from once this state is committed (`Store::take_preserved_trie`).
    pub account_trie: Option<PreservedTrie>,
    /// The changed storage tries' upper levels, likewise
    /// (`Store::take_preserved_storage_trie`).
    pub storage_tries: Vec<PreservedTrie>,
}

/// A block's batch, encoded and indexed, not yet committed (`Store::prepare_block`).
pub struct PreparedCommit {
    batch: PendingBatch,
    account_trie: Option<PreservedTrie>,
    storage_tries: Vec<PreservedTrie>,
    /// The new nodes by hash that the kept levels do not hold, for the node cache once
    /// the batch is committed (`nodes_to_cache`).
    nodes: Vec<(B256, NodeRlp)>,
}

/// Everything one imported block writes, committed in one batch.
pub struct BlockCommit<'a> {
    /// The block's hash.
    pub hash: B256,
    /// The block.
    pub block: &'a Block,
    /// Its block access list, if it came with one.
    pub bal: Option<&'a BlockAccessList>,
    /// Its receipts.
    pub receipts: &'a [Receipt],
    /// The state it leaves.
    pub state: StateUpdate,
    /// What it overwrote.
    pub change_set: ChangeSet,
    /// Its total difficulty: the parent's plus its own difficulty.
    pub total_difficulty: U256,
}

/// Account records (`None` deletes) and slot values (zero deletes) into the flat tables.
pub(super) fn put_flat_state(
    batch: &mut WriteBatch,
    accounts: &[(Address, Option<AccountState>)],
    storage: &[(Address, U256, U256)],
) {
    for (address, account) in accounts {
        match account {
            Some(a) => batch.put_entry::<Accounts>(address, a),
            None => batch.delete_entry::<Accounts>(address),
        }
    }
    for (address, slot, value) in storage {
        if value.is_zero() {
            batch.delete_entry::<Storage>(&(*address, *slot));
        } else {
            batch.put_entry::<Storage>(&(*address, *slot), *value);
        }
    }
}

/// A batch holding exactly `state`'s writes, sized up front (`account_trie` and
/// `storage_tries` are not writes: a caller that keeps them takes them out first).
fn state_batch(state: StateUpdate) -> WriteBatch {
    let trie_ops: usize = state.tries.iter().map(|t| t.nodes.len() + t.removed.len()).sum();
    let ops = state.accounts.len()
        + state.storage.len()
        + state.wiped_storage.len()
        + state.codes.len()
        + trie_ops;
    let mut batch = WriteBatch::with_capacity(ops);
    put_state(&mut batch, state);
    batch
}

fn put_state(batch: &mut WriteBatch, state: StateUpdate) {
    for (address, slot) in &state.wiped_storage {
        batch.delete_entry::<Storage>(&(*address, *slot));
    }
    put_flat_state(batch, &state.accounts, &state.storage);
    for (hash, code) in state.codes {
        batch.put_entry::<Code>(&hash, code);
    }
    for trie in state.tries {
        batch.put_trie(trie);
    }
}

impl WriteBatch {
    /// What a trie commit changed (`Trie::commit`): its deletions, then its writes (a
    /// commit never names a position in both), in the table of its owner's trie.
    pub fn put_trie(&mut self, trie: TrieUpdates) {
        let owner = trie.owner.as_ref();
        for path in trie.removed {
            let (table, key) = trie_node_key(owner, &path);
            self.delete(table, key);
        }
        for node in trie.nodes {
            let (table, key) = trie_node_key(owner, &node.path);
            self.put(table, key, node.rlp);
        }
    }
}

/// The nodes a commit wrote that the node cache should hold: all of them but those its
/// tries' kept levels hold decoded (the next block's tries start from those levels and
/// never read them; caching them too only took the cache's room and the pool's time).
fn nodes_to_cache(
    tries: &[TrieUpdates],
    account_trie: Option<&PreservedTrie>,
    storage_tries: &[PreservedTrie],
) -> Vec<(B256, NodeRlp)> {
    let kept: FxHashMap<Option<B256>, &PreservedTrie> = account_trie
        .into_iter()
        .chain(storage_tries)
        .map(|levels| (levels.owner(), levels))
        .collect();
    let mut nodes = Vec::new();
    for trie in tries {
        let levels = kept.get(&trie.owner).copied();
        if levels.is_some_and(PreservedTrie::holds_its_commit) {
            continue;
        }
        nodes.extend(
            trie.nodes
                .iter()
                .filter(|node| !levels.is_some_and(|levels| levels.holds(&node.path)))
                .map(|node| (node.hash, NodeRlp::from(node.rlp.as_slice()))),
        );
    }
    nodes
}

fn put_block_data(batch: &mut WriteBatch, hash: &B256, block: &Block, total_difficulty: U256) {
    batch.put_entry::<Headers>(hash, &block.header);
    batch.put_entry::<TotalDifficulties>(hash, total_difficulty);
    batch.put_entry::<HeaderNumbers>(hash, block.header.number);
    batch.put_entry::<Bodies>(hash, &block.body);
}

impl Store {
    /// Writes state that belongs to no block: flat accounts and slots, code and trie
    /// nodes, with no change set, and without moving the head. For building a genesis
    /// state too large for one batch in chunks, before
    /// `commit_genesis` writes the block over it; nothing points at this state until then.
    /// Like every write, it is readable at once and reaches the disk in the background.
    /// The batch is sorted by table and key first (a stable sort: of two writes of one
    /// key the later still wins): RocksDB inserts keys in order several times faster.
    pub fn write_state(&self, state: StateUpdate) -> Result<(), StoreError> {
        use rayon::slice::ParallelSliceMut;
        let mut batch = state_batch(state);
        batch.ops.par_sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        self.write(batch)
    }

    /// Writes the genesis block and its state, and makes it the head.
    pub fn commit_genesis(
        &self,
        hash: B256,
        block: &Block,
        mut state: StateUpdate,
    ) -> Result<(), StoreError> {
        let mut batch = WriteBatch::new();
        // The genesis' total difficulty is its own difficulty.
        put_block_data(&mut batch, &hash, block, block.header.difficulty);
        batch.put_entry::<Receipts>(&hash, &[] as &[Receipt]);
        batch.put_entry::<CanonicalHashes>(&0, hash);
        let account_trie = state.account_trie.take();
        let storage_tries = std::mem::take(&mut state.storage_tries);
        put_state(&mut batch, state);
        batch.put_entry::<Meta>(&MetaKey::Genesis, hash);
        batch.put_entry::<Meta>(&MetaKey::Head, hash);
        batch.put_entry::<Meta>(&MetaKey::Layout, super::trie::layout_marker());
        self.write(batch)?;
        self.preserve_trie(account_trie);
        self.preserve_storage_tries(storage_tries);
        Ok(())
    }

    /// Commits a batch built by `prepare_block`: the block, its state changes and change
    /// set, and the block as the canonical head, all at once.
    pub fn commit_prepared(&self, prepared: PreparedCommit) -> Result<(), StoreError> {
        self.accept(prepared.batch)?;
        self.preserve_trie(prepared.account_trie);
        self.preserve_storage_tries(prepared.storage_tries);
        // The next block reads the nodes this one wrote below the kept levels; caching
        // them spares it a read by position and a hash check each. Off the commit's
        // path: until it runs, reads find them in the overlay.
        let cache = self.nodes.clone();
        let nodes = prepared.nodes;
        rayon::spawn(move || {
            for (hash, node) in nodes {
                cache.insert(hash, node);
            }
        });
        Ok(())
    }

    /// Encodes and indexes everything a block writes, without writing it: the import
    /// builds the batch while it still checks the block, and drops it if a check fails.
    pub fn prepare_block(commit: BlockCommit<'_>) -> PreparedCommit {
        let BlockCommit { hash, block, bal, receipts, mut state, change_set, total_difficulty } =
            commit;
        let account_trie = state.account_trie.take();
        let storage_tries = std::mem::take(&mut state.storage_tries);
        // The state part (thousands of trie nodes and slots) and the chain data (large
        // encodings) are built and indexed side by side; they write different tables.
        let ((nodes, state_part), chain_part) = rayon::join(
            || {
                let nodes = nodes_to_cache(&state.tries, account_trie.as_ref(), &storage_tries);
                (nodes, PendingBatch::new(state_batch(state)))
            },
            || {
                let mut batch = WriteBatch::with_capacity(16);
                put_block_data(&mut batch, &hash, block, total_difficulty);
                batch.put_entry::<Receipts>(&hash, receipts);
                if let Some(bal) = bal {
                    batch.put_entry::<Bals>(&hash, bal);
                }
                batch.put_entry::<ChangeSets>(&hash, &change_set);
                batch.put_entry::<CanonicalHashes>(&block.header.number, hash);
                for (index, tx) in block.body.transactions.iter().enumerate() {
                    let at = TxPosition { number: block.header.number, index: Some(index as u32) };
                    batch.put_entry::<TxNumbers>(tx.tx_hash(), at);
                }
                batch.put_entry::<Meta>(&MetaKey::Head, hash);
                PendingBatch::new(batch)
            },
        );
        PreparedCommit {
            batch: PendingBatch::concat(state_part, chain_part),
            account_trie,
            storage_tries,
            nodes,
        }
    }
}
