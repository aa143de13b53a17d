//! The trie: key-value operations, the state-level API on top, hashing and commit.

use crate::account::{stored_balance, Account, BasicData};
use crate::code::{chunkify_code, unchunkify_code, CHUNK_CODE_BYTES};
use crate::codec::{self, Decoded, GroupExit, GROUP_DEPTHS};
use crate::error::BinTrieError;
use crate::key::{
    account_stem, code_chunk_position, split_key, stem, stem_bit, storage_slot_key, Stem,
    BASIC_DATA_LEAF_KEY, CODE_HASH_LEAF_KEY, STEM_LEN,
};
use crate::node::{InternalNode, Node, StemNode};
use crate::path::NodePath;
use crate::store::{NodeBatch, NodeStore};
use alloy_primitives::{Address, B256, U256};
use std::collections::HashSet;

/// Depth at which no internal node can sit any more: two different stems differ in one of
/// their 248 bits.
const MAX_INTERNAL_DEPTH: usize = STEM_LEN * 8;

/// Node traffic between a trie and its store since it was opened (or the stats reset).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TrieStats {
    /// Stem blobs read.
    pub stems_loaded: u64,
    /// Group blobs read.
    pub groups_loaded: u64,
    /// Bytes of blobs read.
    pub bytes_loaded: u64,
    /// Stem blobs written.
    pub stems_written: u64,
    /// Group blobs written.
    pub groups_written: u64,
    /// Bytes of blobs written (keys not counted).
    pub bytes_written: u64,
    /// Blobs deleted (stems moved deeper whose old path no blob reoccupies).
    pub nodes_deleted: u64,
}

impl TrieStats {
    /// Blobs read.
    pub fn nodes_loaded(&self) -> u64 {
        self.stems_loaded + self.groups_loaded
    }

    /// Blobs written.
    pub fn nodes_written(&self) -> u64 {
        self.stems_written + self.groups_written
    }
}

/// An EIP-7864 binary trie over a [`NodeStore`], computing the roots geth v1.17.10's
/// `trie/bintrie` computes. Nodes load lazily and stay cached; only changed paths are
/// re-hashed; [`commit`](Self::commit) writes the changed nodes, packed `group_depth`
/// levels per blob.
#[derive(Debug)]
pub struct BinaryTrie<S> {
    root: Node,
    ctx: Context<S>,
}

/// Everything but the node tree, so a walk can hold the tree mutably and still load.
#[derive(Debug)]
struct Context<S> {
    store: S,
    group_depth: u8,
    stats: TrieStats,
    /// Keys of blobs left behind by stems that moved deeper since the last commit.
    orphans: HashSet<Vec<u8>>,
}

impl<S: NodeStore> BinaryTrie<S> {
    /// An empty trie (root 0) whose nodes go to `store` in groups of `group_depth` levels
    /// (`1..=8`).
    pub fn new(store: S, group_depth: u8) -> Result<Self, BinTrieError> {
        if !GROUP_DEPTHS.contains(&group_depth) {
            return Err(BinTrieError::InvalidGroupDepth(group_depth));
        }
        let ctx =
            Context { store, group_depth, stats: TrieStats::default(), orphans: HashSet::new() };
        Ok(Self { root: Node::Empty, ctx })
    }

    /// The trie committed to `store` with root `root` (0: empty), written with
    /// `group_depth`. Loads the root node.
    pub fn open(store: S, root: B256, group_depth: u8) -> Result<Self, BinTrieError> {
        let mut trie = Self::new(store, group_depth)?;
        if !root.is_zero() {
            trie.root = Node::Hashed(root);
            trie.ctx.resolve(&mut trie.root, NodePath::ROOT)?;
        }
        Ok(trie)
    }

    /// Levels per stored group.
    pub fn group_depth(&self) -> u8 {
        self.ctx.group_depth
    }

    /// The node store.
    pub fn store(&self) -> &S {
        &self.ctx.store
    }

    /// Node loads and writes so far.
    pub fn stats(&self) -> TrieStats {
        self.ctx.stats
    }

    /// Zeroes the counters.
    pub fn reset_stats(&mut self) {
        self.ctx.stats = TrieStats::default();
    }

    /// The value under `key`, `None` if none was ever written (a deleted value reads as
    /// zero, see [`delete`](Self::delete)).
    pub fn get(&mut self, key: &B256) -> Result<Option<B256>, BinTrieError> {
        let (stem, index) = split_key(key);
        Ok(self.ctx.find_stem(&mut self.root, 0, &stem)?.and_then(|node| node.get(index)))
    }

    /// Writes `value` under `key`.
    pub fn insert(&mut self, key: &B256, value: B256) -> Result<(), BinTrieError> {
        let (stem, index) = split_key(key);
        self.insert_stem_values(&stem, &[(index, value)])
    }

    /// Writes several values under one stem (later duplicates win; nothing for none).
    pub fn insert_stem_values(
        &mut self,
        stem: &Stem,
        values: &[(u8, B256)],
    ) -> Result<(), BinTrieError> {
        if values.is_empty() {
            return Ok(());
        }
        self.ctx.insert(&mut self.root, 0, stem, values)
    }

    /// "Deletes" `key` the way geth does: writes 32 zero bytes. Nothing is ever removed
    /// from the trie, so the root differs from one where the key was never written, and
    /// deleting a key that was never written adds it.
    pub fn delete(&mut self, key: &B256) -> Result<(), BinTrieError> {
        self.insert(key, B256::ZERO)
    }

    /// Writes the account's basic-data leaf (version 0, `code_size`, `nonce`, `balance`
    /// truncated as in [`stored_balance`]) and code-hash leaf. Storage and code chunks
    /// are untouched.
    pub fn update_account(
        &mut self,
        address: &Address,
        nonce: u64,
        balance: U256,
        code_size: u32,
        code_hash: B256,
    ) -> Result<(), BinTrieError> {
        let basic =
            BasicData { version: 0, code_size, nonce, balance: stored_balance(balance) }.encode();
        self.insert_stem_values(
            &account_stem(address),
            &[(BASIC_DATA_LEAF_KEY, basic), (CODE_HASH_LEAF_KEY, code_hash)],
        )
    }

    /// Writes the chunks of `code` (see [`chunkify_code`]). Like geth, does not touch the
    /// account header (write the code size and hash with
    /// [`update_account`](Self::update_account)) and leaves chunks past the end of shorter
    /// code in place.
    pub fn update_code(&mut self, address: &Address, code: &[u8]) -> Result<(), BinTrieError> {
        let mut pending: Option<(U256, Vec<(u8, B256)>)> = None;
        for (chunk_index, chunk) in chunkify_code(code).into_iter().enumerate() {
            let (tree_index, sub_index) = code_chunk_position(chunk_index as u64);
            if pending.as_ref().is_some_and(|(index, _)| *index != tree_index) {
                let (index, values) = pending.take().expect("checked above");
                self.insert_stem_values(&stem(address, index), &values)?;
            }
            pending
                .get_or_insert_with(|| (tree_index, Vec::new()))
                .1
                .push((sub_index, chunk.into()));
        }
        if let Some((index, values)) = pending {
            self.insert_stem_values(&stem(address, index), &values)?;
        }
        Ok(())
    }

    /// Writes a storage slot. A zero `value` is written as 32 zero bytes, like geth.
    pub fn update_storage(
        &mut self,
        address: &Address,
        slot: U256,
        value: B256,
    ) -> Result<(), BinTrieError> {
        self.insert(&storage_slot_key(address, slot), value)
    }

    /// Deletes an account the way geth does: zeroes its basic-data and code-hash leaves
    /// (storage and code chunks stay). [`get_account`](Self::get_account) then reads `None`.
    pub fn delete_account(&mut self, address: &Address) -> Result<(), BinTrieError> {
        self.insert_stem_values(
            &account_stem(address),
            &[(BASIC_DATA_LEAF_KEY, B256::ZERO), (CODE_HASH_LEAF_KEY, B256::ZERO)],
        )
    }

    /// Deletes a storage slot: writes zero (see [`delete`](Self::delete)).
    pub fn delete_storage(&mut self, address: &Address, slot: U256) -> Result<(), BinTrieError> {
        self.update_storage(address, slot, B256::ZERO)
    }

    /// The account, `None` if neither header leaf was written or both are zero (deleted).
    pub fn get_account(&mut self, address: &Address) -> Result<Option<Account>, BinTrieError> {
        let Some(node) = self.ctx.find_stem(&mut self.root, 0, &account_stem(address))? else {
            return Ok(None);
        };
        let (basic, code_hash) = (node.get(BASIC_DATA_LEAF_KEY), node.get(CODE_HASH_LEAF_KEY));
        if basic.is_none() && code_hash.is_none()
            || basic == Some(B256::ZERO) && code_hash == Some(B256::ZERO)
        {
            return Ok(None);
        }
        let basic = BasicData::decode(&basic.unwrap_or_default());
        Ok(Some(Account {
            nonce: basic.nonce,
            balance: U256::from(basic.balance),
            code_size: basic.code_size,
            code_hash: code_hash.unwrap_or_default(),
        }))
    }

    /// A storage slot's value, `None` if it was never written.
    pub fn get_storage(
        &mut self,
        address: &Address,
        slot: U256,
    ) -> Result<Option<B256>, BinTrieError> {
        self.get(&storage_slot_key(address, slot))
    }

    /// The account's code, reassembled from its chunks (`code_size` of the basic-data
    /// leaf; a missing chunk reads as zeros); `None` if there is no account.
    pub fn get_code(&mut self, address: &Address) -> Result<Option<Vec<u8>>, BinTrieError> {
        let Some(account) = self.get_account(address)? else {
            return Ok(None);
        };
        let size = account.code_size as usize;
        let count = size.div_ceil(CHUNK_CODE_BYTES);
        let mut chunks = vec![[0u8; 32]; count];
        let mut next = 0;
        while next < count {
            let (tree_index, _) = code_chunk_position(next as u64);
            let node = self.ctx.find_stem(&mut self.root, 0, &stem(address, tree_index))?;
            // Every chunk under this stem.
            while next < count {
                let (index, sub_index) = code_chunk_position(next as u64);
                if index != tree_index {
                    break;
                }
                if let Some(value) = node.and_then(|node| node.get(sub_index)) {
                    chunks[next] = value.0;
                }
                next += 1;
            }
        }
        Ok(Some(unchunkify_code(&chunks, size)))
    }

    /// The root hash, re-hashing only what changed since the last call.
    pub fn root_hash(&mut self) -> B256 {
        self.root.hash(0)
    }

    /// Writes every changed node to the store in one batch (and deletes blobs that stems
    /// moving deeper left behind); returns the root. On a store error nothing is marked
    /// written, so a later commit retries.
    pub fn commit(&mut self) -> Result<B256, BinTrieError> {
        let root = self.root_hash();
        let group_depth = self.ctx.group_depth;
        let mut puts = Vec::new();
        collect(&mut self.root, NodePath::ROOT, group_depth, &mut puts);
        let written: HashSet<&[u8]> = puts.iter().map(|(key, _)| key.as_slice()).collect();
        let deletes: Vec<Vec<u8>> = self
            .ctx
            .orphans
            .iter()
            .filter(|key| !written.contains(key.as_slice()))
            .cloned()
            .collect();
        let mut stats = self.ctx.stats;
        for (_, blob) in &puts {
            match blob.first() {
                Some(&codec::GROUP_TAG) => stats.groups_written += 1,
                _ => stats.stems_written += 1,
            }
            stats.bytes_written += blob.len() as u64;
        }
        stats.nodes_deleted += deletes.len() as u64;
        let batch = NodeBatch { puts, deletes };
        if !batch.is_empty() {
            self.ctx.store.write(batch).map_err(|e| BinTrieError::Store(Box::new(e)))?;
        }
        self.ctx.stats = stats;
        self.ctx.orphans.clear();
        mark_written(&mut self.root);
        Ok(root)
    }
}

impl<S: NodeStore> Context<S> {
    /// Loads `node` from the store if it is [`Node::Hashed`]; `path` is where it sits.
    fn resolve(&mut self, node: &mut Node, path: NodePath) -> Result<(), BinTrieError> {
        let Node::Hashed(hash) = *node else {
            return Ok(());
        };
        let blob = self
            .store
            .get(&path.key())
            .map_err(|e| BinTrieError::Store(Box::new(e)))?
            .ok_or_else(|| BinTrieError::MissingNode { path: path.to_string(), hash })?;
        self.stats.bytes_loaded += blob.len() as u64;
        let corrupt = |reason: String| BinTrieError::CorruptNode { path: path.to_string(), reason };
        match codec::decode(&blob).map_err(corrupt)? {
            Decoded::Stem(mut stem) => {
                if !path.is_prefix_of(&stem.stem) {
                    return Err(corrupt("stem does not extend its path".into()));
                }
                stem.hash = Some(hash);
                self.stats.stems_loaded += 1;
                *node = Node::Stem(stem);
            }
            Decoded::Group { group_depth, mut root } => {
                if group_depth != self.group_depth {
                    return Err(BinTrieError::GroupDepthMismatch {
                        path: path.to_string(),
                        expected: self.group_depth,
                        found: group_depth,
                    });
                }
                if !path.len().is_multiple_of(usize::from(group_depth)) {
                    return Err(corrupt("group below a group boundary".into()));
                }
                root.hash = Some(hash);
                self.stats.groups_loaded += 1;
                *node = Node::Internal(root);
            }
        }
        Ok(())
    }

    /// The stem node of `stem` under `node` (at `depth`), loading what is on the way.
    fn find_stem<'a>(
        &mut self,
        node: &'a mut Node,
        depth: usize,
        stem: &Stem,
    ) -> Result<Option<&'a StemNode>, BinTrieError> {
        if matches!(node, Node::Hashed(_)) {
            self.resolve(node, NodePath::of_stem(stem, depth))?;
        }
        match node {
            Node::Empty => Ok(None),
            Node::Stem(found) => Ok((found.stem == *stem).then_some(&**found)),
            Node::Internal(inner) => {
                check_internal_depth(depth, stem)?;
                self.find_stem(inner.child_mut(stem_bit(stem, depth)), depth + 1, stem)
            }
            Node::Hashed(_) => unreachable!("resolved above"),
        }
    }

    /// Writes `values` into the stem node of `stem` under `node` (at `depth`).
    fn insert(
        &mut self,
        node: &mut Node,
        depth: usize,
        stem: &Stem,
        values: &[(u8, B256)],
    ) -> Result<(), BinTrieError> {
        if matches!(node, Node::Hashed(_)) {
            self.resolve(node, NodePath::of_stem(stem, depth))?;
        }
        match node {
            Node::Empty => *node = Node::Stem(Box::new(StemNode::new(*stem, values))),
            Node::Stem(existing) if existing.stem == *stem => existing.set_values(values),
            Node::Stem(_) => self.split(node, depth, stem, values),
            Node::Internal(inner) => {
                check_internal_depth(depth, stem)?;
                inner.hash = None;
                inner.dirty = true;
                self.insert(inner.child_mut(stem_bit(stem, depth)), depth + 1, stem, values)?;
            }
            Node::Hashed(_) => unreachable!("resolved above"),
        }
        Ok(())
    }

    /// Replaces the stem node at `node` (depth `depth`, another stem than `stem`) with the
    /// internal nodes down to the first bit where the two stems differ, the old stem and
    /// a new one for `values` below.
    fn split(&mut self, node: &mut Node, depth: usize, stem: &Stem, values: &[(u8, B256)]) {
        let Node::Stem(mut existing) = std::mem::take(node) else {
            unreachable!("split is only called on a stem node")
        };
        if existing.stored {
            self.orphans.insert(NodePath::of_stem(&existing.stem, depth).key());
            existing.stored = false;
        }
        // Its blob must be written again at its new, deeper path.
        existing.dirty = true;
        let split_at = first_different_bit(&existing.stem, stem);
        let new = Node::Stem(Box::new(StemNode::new(*stem, values)));
        let old = Node::Stem(existing);
        let mut subtree = if stem_bit(stem, split_at) == 0 {
            InternalNode::new(new, old)
        } else {
            InternalNode::new(old, new)
        };
        for level in (depth..split_at).rev() {
            let below = Node::Internal(Box::new(subtree));
            subtree = if stem_bit(stem, level) == 0 {
                InternalNode::new(below, Node::Empty)
            } else {
                InternalNode::new(Node::Empty, below)
            };
        }
        *node = Node::Internal(Box::new(subtree));
    }
}

fn check_internal_depth(depth: usize, stem: &Stem) -> Result<(), BinTrieError> {
    if depth < MAX_INTERNAL_DEPTH {
        return Ok(());
    }
    Err(BinTrieError::CorruptNode {
        path: NodePath::of_stem(stem, MAX_INTERNAL_DEPTH).to_string(),
        reason: "internal node at depth 248".into(),
    })
}

/// Index of the first bit where two different stems differ.
fn first_different_bit(a: &Stem, b: &Stem) -> usize {
    let byte = a.iter().zip(b).position(|(x, y)| x != y).expect("stems differ");
    byte * 8 + (a[byte] ^ b[byte]).leading_zeros() as usize
}

/// Appends the blobs of the changed nodes at or below `node` (at `path`, where a group
/// starts if `node` is internal) to `puts`, children first.
fn collect(node: &mut Node, path: NodePath, group_depth: u8, puts: &mut Vec<(Vec<u8>, Vec<u8>)>) {
    match node {
        Node::Stem(stem) if stem.dirty => puts.push((path.key(), codec::encode_stem(stem))),
        Node::Internal(inner) if inner.dirty => {
            let mut exits = Vec::new();
            collect_group(inner, path, 0, 0, group_depth, &mut exits, puts);
            puts.push((path.key(), codec::encode_group(group_depth, &exits)));
        }
        _ => {}
    }
}

/// Walks the group levels below `node` (`level` levels below the group root, at
/// `position` in it), gathering the group's exits and collecting below them.
fn collect_group(
    node: &mut InternalNode,
    path: NodePath,
    level: u8,
    position: u16,
    group_depth: u8,
    exits: &mut Vec<GroupExit>,
    puts: &mut Vec<(Vec<u8>, Vec<u8>)>,
) {
    for bit in [0u8, 1] {
        let (child_path, child_level) = (path.child(bit), level + 1);
        let child_position = position << 1 | u16::from(bit);
        let child = node.child_mut(bit);
        match child {
            Node::Empty => {}
            Node::Internal(inner) if child_level < group_depth => collect_group(
                inner,
                child_path,
                child_level,
                child_position,
                group_depth,
                exits,
                puts,
            ),
            _ => {
                let hash = child.hash(child_path.len());
                exits.push(GroupExit { depth: child_level, position: child_position as u8, hash });
                collect(child, child_path, group_depth, puts);
            }
        }
    }
}

/// Clears the dirty flags [`collect`] wrote blobs for.
fn mark_written(node: &mut Node) {
    match node {
        Node::Stem(stem) if stem.dirty => {
            stem.dirty = false;
            stem.stored = true;
        }
        Node::Internal(inner) if inner.dirty => {
            inner.dirty = false;
            mark_written(&mut inner.left);
            mark_written(&mut inner.right);
        }
        _ => {}
    }
}
