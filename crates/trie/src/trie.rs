//! Lookups and updates on a lazily loaded trie.
//!
//! Every function works on a `Child` slot so that a subtree can be replaced
//! in place (e.g. a leaf turning into a branch) without touching its parent.
//! A node is only read from the store when an operation walks through it.
//!
//! Nodes are stored by position (see [`NodeReader`]). An operation on a key walks with
//! the whole key at hand: the position of a slot whose remaining path is `path` is the
//! key without that suffix. Every position whose stored node an operation makes obsolete
//! (a removed leaf, a child merged into its parent, an emptied trie's root) is recorded,
//! so the commit can delete it.

use crate::{
    hash,
    nibbles::{common_prefix, concat, prepend, unpack},
    node::{decode, Cell, Child, Node, NodeRef},
    prefetch, NodeReader, PreservedTrie, StoredNode, TrieError, TrieUpdates, EMPTY_ROOT_HASH,
};
use alloy_primitives::B256;
use rayon::prelude::*;

/// Below this many pending updates, fanning out over rayon costs more than it
/// saves (a typical storage trie update touches a handful of keys).
const PARALLEL_THRESHOLD: usize = 128;

/// An update keyed by its unpacked nibble path; `None` deletes.
type PathUpdate = (Vec<u8>, Option<Vec<u8>>);

/// A Merkle-Patricia trie opened at some root over a node store.
///
/// Modifications stay in memory until [`Trie::commit`], which returns the new
/// root and the nodes the caller must persist.
pub struct Trie<'a, R: NodeReader + ?Sized> {
    reader: &'a R,
    /// `None` for the account trie, else the hashed address whose storage this is.
    owner: Option<B256>,
    root: Child,
    /// Positions whose stored node the changes so far made obsolete (may repeat, and may
    /// hold a position written again later; `commit` sorts that out).
    removed: Vec<Vec<u8>>,
    /// Changes since the last hash, used to decide whether hashing is worth
    /// parallelising.
    pending: usize,
}

impl<'a, R: NodeReader + ?Sized> Trie<'a, R> {
    /// Opens the account trie (or a standalone one) at `root`; nothing is read until it
    /// is needed.
    pub fn new(reader: &'a R, root: B256) -> Self {
        Self::open(reader, None, root)
    }

    /// Opens the storage trie of the account whose hashed address is `owner`, at `root`.
    pub fn storage(reader: &'a R, owner: B256, root: B256) -> Self {
        Self::open(reader, Some(owner), root)
    }

    /// Opens the trie of `owner` at `root`: the account trie (`None`, as `new`) or the
    /// storage trie of the account whose hashed address it is (as `storage`).
    pub fn open(reader: &'a R, owner: Option<B256>, root: B256) -> Self {
        let root = if root == EMPTY_ROOT_HASH { Child::Empty } else { Child::Hash(root) };
        Trie { reader, owner, root, removed: Vec::new(), pending: 0 }
    }

    /// Opens the trie `preserved` belongs to (the account trie or a storage trie) at its
    /// root, starting from its decoded levels: only nodes below them are read from
    /// `reader`.
    pub fn from_preserved(reader: &'a R, preserved: PreservedTrie) -> Self {
        Trie {
            reader,
            owner: preserved.owner,
            root: Child::Node(preserved.cell),
            removed: Vec::new(),
            pending: 0,
        }
    }

    /// The walk context for one key of this trie.
    fn walk<'w>(&'w mut self, key: &'w [u8]) -> (Walk<'w, R>, &'w mut Child) {
        let walk = Walk {
            reader: self.reader,
            owner: self.owner.as_ref(),
            key,
            removed: &mut self.removed,
        };
        (walk, &mut self.root)
    }

    /// Reads ahead, through `reader`, every stored node on the paths of `keys` that is not
    /// already in memory, a trie level at a time with each level's reads in parallel (see
    /// [`prefetch_paths`](crate::prefetch_paths)). Returns how many nodes it read. Only a
    /// hint: a node missing from the store ends that walk silently, for the update to meet.
    pub fn prefetch(&self, keys: &[B256]) -> Result<usize, TrieError> {
        let paths: Vec<Vec<u8>> = keys.iter().map(|k| unpack(k.as_slice())).collect();
        let start = paths.iter().enumerate().filter_map(|(key, path)| {
            let (hash, depth) = match &self.root {
                Child::Empty => return None,
                Child::Hash(hash) => (*hash, 0),
                Child::Node(cell) => prefetch::descend(&cell.node, path, 0)?,
            };
            Some((hash, key, depth))
        });
        prefetch::read_levels(self.reader, self.owner.as_ref(), &paths, start)
    }

    /// Value stored under `key`, if any.
    pub fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, TrieError> {
        let key = unpack(key);
        let (walk, root) = self.walk(&key);
        get_at(&walk, root, &key)
    }

    /// Sets `key` to `value`; an empty value removes the key.
    pub fn insert(&mut self, key: &[u8], value: Vec<u8>) -> Result<(), TrieError> {
        if value.is_empty() {
            return self.remove(key);
        }
        let key = unpack(key);
        let (mut walk, root) = self.walk(&key);
        if insert_at(&mut walk, root, &key, value)? {
            self.pending += 1;
        }
        Ok(())
    }

    /// Removes `key`; removing an absent key is a no-op.
    pub fn remove(&mut self, key: &[u8]) -> Result<(), TrieError> {
        let key = unpack(key);
        let (mut walk, root) = self.walk(&key);
        if remove_at(&mut walk, root, &key)? {
            self.pending += 1;
        }
        Ok(())
    }

    /// Applies many `(key, Some(value) | None)` updates. Later duplicates win.
    /// When the root is a branch and the batch is large, the 16 subtrees are
    /// updated in parallel, which overlaps the store reads of each subtree.
    pub fn update_batch(
        &mut self,
        updates: impl IntoIterator<Item = (B256, Option<Vec<u8>>)>,
    ) -> Result<(), TrieError> {
        let mut updates: Vec<(B256, Option<Vec<u8>>)> = updates.into_iter().collect();
        // Stable sort keeps the original order among equal keys, so the last
        // one of each run is the one that must win.
        updates.sort_by_key(|u| u.0);
        let mut deduped: Vec<PathUpdate> = Vec::with_capacity(updates.len());
        let mut iter = updates.into_iter().peekable();
        while let Some((key, value)) = iter.next() {
            if iter.peek().is_some_and(|(next, _)| *next == key) {
                continue;
            }
            deduped.push((unpack(key.as_slice()), value.filter(|v| !v.is_empty())));
        }

        let mut rest = &mut deduped[..];
        while !rest.is_empty() {
            if rest.len() >= PARALLEL_THRESHOLD && self.root_is_branch()? {
                return self.update_subtrees_parallel(rest);
            }
            let (first, tail) = rest.split_first_mut().expect("non-empty");
            let value = first.1.take();
            let (mut walk, root) = self.walk(&first.0);
            let changed = match value {
                Some(v) => insert_at(&mut walk, root, &first.0, v)?,
                None => remove_at(&mut walk, root, &first.0)?,
            };
            self.pending += changed as usize;
            rest = tail;
        }
        Ok(())
    }

    fn root_is_branch(&mut self) -> Result<bool, TrieError> {
        Ok(matches!(
            cell_mut(self.reader, self.owner.as_ref(), &[], &mut self.root)?,
            Some(Cell { node: Node::Branch { .. }, .. })
        ))
    }

    /// `updates` must be sorted, deduplicated and all keys must be non-empty
    /// (they are 64-nibble paths here), and the root must be a branch.
    fn update_subtrees_parallel(&mut self, updates: &mut [PathUpdate]) -> Result<(), TrieError> {
        let reader = self.reader;
        let owner = self.owner.as_ref();
        let Child::Node(cell) = &mut self.root else { unreachable!("root resolved to a branch") };
        let Node::Branch { children, .. } = &mut cell.node else {
            unreachable!("root is a branch")
        };

        // Sorted keys make each first-nibble group contiguous.
        let mut groups: Vec<&mut [PathUpdate]> = Vec::with_capacity(16);
        let mut rest = updates;
        for nibble in 0..16u8 {
            let n = rest.iter().take_while(|(k, _)| k[0] == nibble).count();
            let (group, tail) = rest.split_at_mut(n);
            groups.push(group);
            rest = tail;
        }

        // Per subtree: how many updates changed something, and the positions they emptied.
        type Subtree = Result<(usize, Vec<Vec<u8>>), TrieError>;
        let results: Vec<Subtree> = children
            .par_iter_mut()
            .zip(groups.into_par_iter())
            .map(|(child, group)| {
                let mut changed = 0;
                let mut removed = Vec::new();
                for (key, value) in group.iter_mut() {
                    let mut walk = Walk { reader, owner, key, removed: &mut removed };
                    let hit = match value.take() {
                        Some(v) => insert_at(&mut walk, child, &key[1..], v)?,
                        None => remove_at(&mut walk, child, &key[1..])?,
                    };
                    changed += hit as usize;
                }
                Ok((changed, removed))
            })
            .collect();
        let mut changed = 0;
        for r in results {
            let (n, removed) = r?;
            changed += n;
            self.removed.extend(removed);
        }
        if changed == 0 {
            return Ok(());
        }
        self.pending += changed;
        cell.mark_dirty();
        prepare_collapse(reader, owner, &[], &mut cell.node)?;
        let Child::Node(cell) = std::mem::take(&mut self.root) else { unreachable!() };
        self.root = normalize(cell, &[], &mut self.removed);
        Ok(())
    }

    /// Root hash of the current contents. Hashes only nodes changed since the
    /// last call; the results are cached on the nodes.
    pub fn root_hash(&mut self) -> Result<B256, TrieError> {
        let parallel = std::mem::take(&mut self.pending) >= PARALLEL_THRESHOLD;
        Ok(match &mut self.root {
            Child::Empty => EMPTY_ROOT_HASH,
            Child::Hash(h) => *h,
            Child::Node(cell) => hash::hash_root(cell, None, parallel),
        })
    }

    /// Consumes the trie, returning its root and what changed since it was opened: every
    /// node created or changed, at its position (never nodes already in the store), and
    /// the positions whose stored node is gone. The root node is always stored when
    /// changed, even if shorter than 32 bytes, so the trie can be reopened by its hash.
    pub fn commit(mut self) -> Result<(B256, TrieUpdates), TrieError> {
        Ok(self.hash_and_collect())
    }

    /// As [`commit`](Self::commit), and also returns the trie's upper levels, decoded, up
    /// to about `budget` bytes (see [`PreservedTrie`]) to open the next trie on this root
    /// from. `None` for an empty trie or one never read.
    pub fn commit_preserving(
        mut self,
        budget: usize,
    ) -> Result<(B256, TrieUpdates, Option<PreservedTrie>), TrieError> {
        let (root, nodes) = self.hash_and_collect();
        let preserved = match std::mem::take(&mut self.root) {
            Child::Node(cell) => Some(PreservedTrie::keep(root, self.owner, cell, budget)),
            Child::Empty | Child::Hash(_) => None,
        };
        Ok((root, nodes, preserved))
    }

    fn hash_and_collect(&mut self) -> (B256, TrieUpdates) {
        let parallel = self.pending >= PARALLEL_THRESHOLD;
        let mut nodes: Vec<StoredNode> = Vec::new();
        let mut removed = std::mem::take(&mut self.removed);
        let root = match &mut self.root {
            Child::Empty => {
                // An emptied trie stores nothing, not even its root.
                if !removed.is_empty() {
                    removed.push(Vec::new());
                }
                EMPTY_ROOT_HASH
            }
            Child::Hash(h) => *h,
            Child::Node(cell) => hash::hash_root(cell, Some((&mut nodes, &mut removed)), parallel),
        };
        // A position removed and then written again keeps the written node.
        if !removed.is_empty() {
            removed.sort_unstable();
            removed.dedup();
            if !nodes.is_empty() {
                let written: rustc_hash::FxHashSet<&[u8]> =
                    nodes.iter().map(|n| n.path.as_slice()).collect();
                removed.retain(|path| !written.contains(path.as_slice()));
            }
        }
        (root, TrieUpdates { owner: self.owner, nodes, removed })
    }
}

/// What a walk down one key's path needs besides the slot it is at: the store, which
/// trie, the whole key (a slot whose remaining path is `path` sits at the key without
/// that suffix) and where obsolete positions are recorded.
pub(crate) struct Walk<'w, R: ?Sized> {
    pub(crate) reader: &'w R,
    pub(crate) owner: Option<&'w B256>,
    pub(crate) key: &'w [u8],
    pub(crate) removed: &'w mut Vec<Vec<u8>>,
}

impl<R: ?Sized> Walk<'_, R> {
    /// The position of the slot whose remaining path is `path` (a suffix of the key).
    fn position(&self, path: &[u8]) -> &[u8] {
        &self.key[..self.key.len() - path.len()]
    }
}

/// Reads and decodes the node stored at `position` under `hash`.
fn load<R: NodeReader + ?Sized>(
    reader: &R,
    owner: Option<&B256>,
    position: &[u8],
    hash: B256,
) -> Result<Box<Cell>, TrieError> {
    let rlp = reader.get_node(owner, position, &hash)?.ok_or(TrieError::MissingNode(hash))?;
    let node = decode(&rlp, hash)?;
    // Only a root can legitimately be stored while shorter than 32 bytes; it
    // keeps its inline form so that, were it ever embedded, its parent would
    // encode it the canonical way.
    let cached = if rlp.len() >= 32 { NodeRef::Hash(hash) } else { NodeRef::from_rlp(&rlp) };
    Ok(Box::new(Cell { node, cached: Some(cached), dirty: false, measured: None }))
}

/// Loads the slot (at `position`) if it is an unresolved hash and returns its node. Every
/// walk that may change the trie goes through here, level by level, so the cell's
/// subtree size is dropped: the walk may change what lies below it.
fn cell_mut<'c, R: NodeReader + ?Sized>(
    reader: &R,
    owner: Option<&B256>,
    position: &[u8],
    slot: &'c mut Child,
) -> Result<Option<&'c mut Cell>, TrieError> {
    if let Child::Hash(h) = *slot {
        *slot = Child::Node(load(reader, owner, position, h)?);
    }
    Ok(match slot {
        Child::Node(cell) => {
            cell.measured = None;
            Some(cell)
        }
        _ => None,
    })
}

fn get_at<R: NodeReader + ?Sized>(
    walk: &Walk<'_, R>,
    slot: &mut Child,
    path: &[u8],
) -> Result<Option<Vec<u8>>, TrieError> {
    let Some(cell) = cell_mut(walk.reader, walk.owner, walk.position(path), slot)? else {
        return Ok(None);
    };
    match &mut cell.node {
        Node::Leaf { path: p, value } => Ok((p.as_slice() == path).then(|| value.clone())),
        Node::Extension { path: p, child } => match path.strip_prefix(p.as_slice()) {
            Some(rest) => get_at(walk, child, rest),
            None => Ok(None),
        },
        Node::Branch { children, value } => match path.split_first() {
            None => Ok(value.clone()),
            Some((&n, rest)) => get_at(walk, &mut children[n as usize], rest),
        },
    }
}

fn new_leaf(path: &[u8], value: Vec<u8>) -> Child {
    Child::Node(Cell::new_dirty(Node::Leaf { path: path.to_vec(), value }))
}

/// Puts `(path, value)` directly under a fresh branch.
fn place_in_branch(branch: &mut Node, path: &[u8], value: Vec<u8>) {
    let Node::Branch { children, value: bv } = branch else { unreachable!() };
    match path.split_first() {
        None => *bv = Some(value),
        Some((&n, rest)) => children[n as usize] = new_leaf(rest, value),
    }
}

/// Prefixes `branch` with an extension when the split point is below the
/// current node.
fn over_branch(prefix: &[u8], branch: Node) -> Node {
    if prefix.is_empty() {
        branch
    } else {
        Node::Extension { path: prefix.to_vec(), child: Child::Node(Cell::new_dirty(branch)) }
    }
}

/// Returns whether anything changed, so unchanged writes do not dirty nodes.
pub(crate) fn insert_at<R: NodeReader + ?Sized>(
    walk: &mut Walk<'_, R>,
    slot: &mut Child,
    path: &[u8],
    value: Vec<u8>,
) -> Result<bool, TrieError> {
    let Some(cell) = cell_mut(walk.reader, walk.owner, walk.position(path), slot)? else {
        *slot = new_leaf(path, value);
        return Ok(true);
    };
    match &mut cell.node {
        Node::Leaf { path: lp, value: lv } => {
            if lp.as_slice() == path {
                if *lv == value {
                    return Ok(false);
                }
                *lv = value;
            } else {
                let c = common_prefix(lp, path);
                let old_value = std::mem::take(lv);
                let mut branch = Node::empty_branch();
                place_in_branch(&mut branch, &lp[c..], old_value);
                place_in_branch(&mut branch, &path[c..], value);
                cell.node = over_branch(&path[..c], branch);
            }
        }
        Node::Extension { path: ep, child } => {
            let c = common_prefix(ep, path);
            if c == ep.len() {
                if !insert_at(walk, child, &path[c..], value)? {
                    return Ok(false);
                }
            } else {
                let old_child = std::mem::take(child);
                let mut branch = Node::empty_branch();
                let Node::Branch { children, .. } = &mut branch else { unreachable!() };
                let tail = &ep[c + 1..];
                children[ep[c] as usize] = if tail.is_empty() {
                    old_child
                } else {
                    Child::Node(Cell::new_dirty(Node::Extension {
                        path: tail.to_vec(),
                        child: old_child,
                    }))
                };
                place_in_branch(&mut branch, &path[c..], value);
                cell.node = over_branch(&path[..c], branch);
            }
        }
        Node::Branch { children, value: bv } => match path.split_first() {
            None => {
                if bv.as_ref() == Some(&value) {
                    return Ok(false);
                }
                *bv = Some(value);
            }
            Some((&n, rest)) => {
                if !insert_at(walk, &mut children[n as usize], rest, value)? {
                    return Ok(false);
                }
            }
        },
    }
    cell.mark_dirty();
    Ok(true)
}

/// Returns whether the key existed.
pub(crate) fn remove_at<R: NodeReader + ?Sized>(
    walk: &mut Walk<'_, R>,
    slot: &mut Child,
    path: &[u8],
) -> Result<bool, TrieError> {
    let Some(cell) = cell_mut(walk.reader, walk.owner, walk.position(path), slot)? else {
        return Ok(false);
    };
    match &mut cell.node {
        Node::Leaf { path: lp, .. } => {
            if lp.as_slice() != path {
                return Ok(false);
            }
            *slot = Child::Empty;
            let position = walk.position(path).to_vec();
            walk.removed.push(position);
            return Ok(true);
        }
        Node::Extension { path: ep, child } => {
            let Some(rest) = path.strip_prefix(ep.as_slice()) else {
                return Ok(false);
            };
            if !remove_at(walk, child, rest)? {
                return Ok(false);
            }
        }
        Node::Branch { children, value } => {
            match path.split_first() {
                None => {
                    if value.take().is_none() {
                        return Ok(false);
                    }
                }
                Some((&n, rest)) => {
                    if !remove_at(walk, &mut children[n as usize], rest)? {
                        return Ok(false);
                    }
                }
            }
            prepare_collapse(walk.reader, walk.owner, walk.position(path), &mut cell.node)?;
        }
    }
    cell.mark_dirty();
    let Child::Node(cell) = std::mem::take(slot) else { unreachable!() };
    let position = walk.key.len() - path.len();
    *slot = normalize(cell, &walk.key[..position], walk.removed);
    Ok(true)
}

/// A branch left with a single child must merge with it, which requires
/// knowing whether that child is a leaf, extension or branch. Loading it here,
/// before anything is restructured, keeps `normalize` infallible so an I/O
/// error never leaves a half-rewritten subtree.
fn prepare_collapse<R: NodeReader + ?Sized>(
    reader: &R,
    owner: Option<&B256>,
    position: &[u8],
    node: &mut Node,
) -> Result<(), TrieError> {
    let Node::Branch { children, value: None } = node else {
        return Ok(());
    };
    let mut occupied = children.iter_mut().enumerate().filter(|(_, c)| !matches!(c, Child::Empty));
    if let (Some((index, only)), None) = (occupied.next(), occupied.next()) {
        cell_mut(reader, owner, &concat(position, &[index as u8]), only)?;
    }
    Ok(())
}

/// Restores the canonical shape of the node at `position` after a removal below it:
/// a branch with one entry merges into its remaining child, and an extension absorbs a
/// child that stopped being a branch. Records the positions left without a node.
fn normalize(mut cell: Box<Cell>, position: &[u8], removed: &mut Vec<Vec<u8>>) -> Child {
    let replacement = match &mut cell.node {
        Node::Leaf { .. } => None,
        Node::Extension { path, child } => match child {
            Child::Empty => {
                removed.push(position.to_vec());
                return Child::Empty;
            }
            Child::Hash(_) => None,
            Child::Node(inner) => match &mut inner.node {
                Node::Leaf { path: ip, value } => {
                    removed.push(concat(position, path));
                    Some(Node::Leaf { path: concat(path, ip), value: std::mem::take(value) })
                }
                Node::Extension { path: ip, child: ic } => {
                    removed.push(concat(position, path));
                    Some(Node::Extension { path: concat(path, ip), child: std::mem::take(ic) })
                }
                Node::Branch { .. } => None,
            },
        },
        Node::Branch { children, value } => {
            let mut occupied = children
                .iter()
                .enumerate()
                .filter(|(_, c)| !matches!(c, Child::Empty))
                .map(|(i, _)| i);
            match (occupied.next(), occupied.next(), value.is_some()) {
                (None, _, false) => {
                    removed.push(position.to_vec());
                    return Child::Empty;
                }
                (None, _, true) => {
                    Some(Node::Leaf { path: Vec::new(), value: value.take().expect("checked") })
                }
                (Some(i), None, false) => {
                    let child = std::mem::take(&mut children[i]);
                    if matches!(&child, Child::Node(inner) if !matches!(inner.node, Node::Branch { .. }))
                    {
                        // The child merges into this node: its own position empties.
                        removed.push(concat(position, &[i as u8]));
                    }
                    Some(collapse_into(i as u8, child))
                }
                _ => None,
            }
        }
    };
    if let Some(node) = replacement {
        cell.node = node;
        cell.mark_dirty();
    }
    Child::Node(cell)
}

/// The node replacing a branch whose only entry is `child` at `index`.
fn collapse_into(index: u8, child: Child) -> Node {
    match child {
        Child::Node(inner) if !matches!(inner.node, Node::Branch { .. }) => match inner.node {
            Node::Leaf { path, value } => Node::Leaf { path: prepend(index, &path), value },
            Node::Extension { path, child } => {
                Node::Extension { path: prepend(index, &path), child }
            }
            Node::Branch { .. } => unreachable!(),
        },
        // A branch child (or, defensively, an unresolved one) stays a
        // separate node behind a one-nibble extension, keeping its cached hash.
        other => Node::Extension { path: vec![index], child: other },
    }
}
