//! Hashing of changed nodes and collection of nodes to persist.
//!
//! Invariant relied on here (kept by `trie.rs`): a node without a cached
//! reference, or a dirty node, only ever has ancestors in the same state, so
//! whole clean subtrees are skipped without being visited.
//!
//! A node's hash needs its children's, but nodes of the same height (distance to
//! the lowest changed node below them) never depend on each other. So the changed
//! nodes are hashed level by level, bottom-up, each level as one batch for
//! [`keccak256_many`](crate::keccak::keccak256_many), which runs eight or four hashes
//! side by side where the CPU allows.

use crate::{
    keccak::keccak256_indexed,
    node::{encode, Cell, Child, Node, NodeRef},
    StoredNode,
};
use alloy_primitives::B256;
use rayon::prelude::*;
use std::ptr::NonNull;

/// Where a commit's hashing puts what it finds: the dirty nodes to store, with their
/// positions, and the positions of dirty nodes now embedded in their parent (whatever
/// was stored there is obsolete).
pub(crate) type Collect<'o> = (&'o mut Vec<StoredNode>, &'o mut Vec<Vec<u8>>);

/// Hashes the root node (and whatever below it changed). With `out`, also
/// emits every dirty node and marks it clean.
pub(crate) fn hash_root(cell: &mut Cell, mut out: Option<Collect<'_>>, parallel: bool) -> B256 {
    let collect = out.is_some();
    if needs_work(cell, collect) {
        if parallel {
            if let Node::Branch { children, .. } = &mut cell.node {
                let emitted: Vec<(Vec<StoredNode>, Vec<Vec<u8>>)> = children
                    .par_iter_mut()
                    .enumerate()
                    .map(|(i, child)| {
                        let (mut nodes, mut inlined) = (Vec::new(), Vec::new());
                        if let Child::Node(cell) = child {
                            let out = collect.then_some((&mut nodes, &mut inlined));
                            hash_subtree(cell, vec![i as u8], out, false);
                        }
                        (nodes, inlined)
                    })
                    .collect();
                if let Some((nodes, inlined)) = out.as_mut() {
                    for (n, i) in emitted {
                        nodes.extend(n);
                        inlined.extend(i);
                    }
                }
            }
        }
        hash_subtree(cell, Vec::new(), out, true);
    }
    cell.cached.expect("just hashed").root_hash()
}

#[inline]
fn needs_work(cell: &Cell, collect: bool) -> bool {
    cell.cached.is_none() || (collect && cell.dirty)
}

/// Buffers `hash_subtree` reuses from call to call on a thread: a block hashes hundreds
/// of small storage tries, and fresh buffers for each showed up in profiles.
#[derive(Default)]
struct Scratch {
    /// Cells by height, each with its position when it is to be emitted.
    levels: Vec<Vec<(NonNull<Cell>, Vec<u8>)>>,
    encoded: Vec<u8>,
    ranges: Vec<std::ops::Range<usize>>,
    to_hash: Vec<usize>,
    hashes: Vec<B256>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}

/// Hashes (and with `out`, emits) every node of the subtree at `top`, which sits at
/// position `path`, that needs it.
fn hash_subtree(top: &mut Cell, path: Vec<u8>, out: Option<Collect<'_>>, top_is_root: bool) {
    if !needs_work(top, out.is_some()) {
        return;
    }
    SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
        Ok(mut scratch) => hash_subtree_with(&mut scratch, top, path, out, top_is_root),
        // Not reentrant today; should that change, a fresh set of buffers stays correct.
        Err(_) => hash_subtree_with(&mut Scratch::default(), top, path, out, top_is_root),
    })
}

fn hash_subtree_with(
    scratch: &mut Scratch,
    top: &mut Cell,
    mut path: Vec<u8>,
    mut out: Option<Collect<'_>>,
    top_is_root: bool,
) {
    let Scratch { levels, encoded, ranges, to_hash, hashes } = scratch;
    levels.iter_mut().for_each(Vec::clear);
    let top_level = gather(top, out.is_some(), &mut path, levels);
    for (height, level) in levels.iter_mut().enumerate().take(top_level + 1) {
        encoded.clear();
        ranges.clear();
        to_hash.clear();
        for (i, (ptr, _)) in level.iter().enumerate() {
            // SAFETY: `gather` took these pointers from the exclusive borrow of `top`'s
            // subtree, each cell once, and nothing else touches the subtree until this
            // function returns. Levels go bottom-up, so a cell is finished (read or
            // written through its pointer) before its parent reads it as a child, and no
            // pointer is used after that.
            let cell = unsafe { ptr.as_ref() };
            let start = encoded.len();
            encode(&cell.node, encoded);
            ranges.push(start..encoded.len());
            if cell.cached.is_none() && encoded.len() - start >= 32 {
                to_hash.push(i);
            }
        }
        hashes.clear();
        hashes.resize(to_hash.len(), B256::ZERO);
        keccak256_indexed(to_hash.len(), |j| &encoded[ranges[to_hash[j]].clone()], hashes);
        let mut hashed = to_hash.iter().zip(hashes.iter()).peekable();

        for (i, (ptr, position)) in level.iter_mut().enumerate() {
            // SAFETY: as above; the shared borrow taken during encoding has ended.
            let cell = unsafe { &mut *ptr.as_ptr() };
            let rlp = &encoded[ranges[i].clone()];
            let r = match cell.cached {
                Some(r) => r,
                None => {
                    let r = match hashed.peek() {
                        Some((&j, &h)) if j == i => {
                            hashed.next();
                            NodeRef::Hash(h)
                        }
                        _ => NodeRef::from_rlp(rlp),
                    };
                    cell.cached = Some(r);
                    r
                }
            };
            if let Some((nodes, inlined)) = out.as_mut() {
                if cell.dirty {
                    // Nodes under 32 bytes live inside their parent, except the root (`top`
                    // is the only cell of the highest level), which is stored by its hash
                    // either way (`root_hash` hashes an inline reference).
                    let is_root = top_is_root && height == top_level;
                    let path = std::mem::take(position);
                    if rlp.len() >= 32 || is_root {
                        nodes.push(StoredNode { path, hash: r.root_hash(), rlp: rlp.to_vec() });
                    } else {
                        inlined.push(path);
                    }
                    cell.dirty = false;
                }
            }
        }
    }
    // No pointer into the subtree may outlive this call.
    levels.iter_mut().for_each(Vec::clear);
    // A one-off huge trie (a large genesis) must not pin its level buffers to the thread.
    if encoded.capacity() > SCRATCH_KEEP_BYTES {
        *encoded = Vec::new();
    }
    for level in levels.iter_mut().filter(|l| l.capacity() > SCRATCH_KEEP_BYTES / 64) {
        *level = Vec::new();
    }
}

/// Largest encoded level kept between calls. A bench block's busiest storage trie changes
/// up to ~1,700 slots, so its largest level (branches of up to 532 bytes) stays under 1 MiB.
const SCRATCH_KEEP_BYTES: usize = 4 << 20;

/// Puts every cell under `cell` (at position `path`) that needs work into
/// `levels[height]`, where a cell's height is one more than the highest of its children
/// that need work (0 if none), with its position when `collect` will emit it. Returns
/// `cell`'s height.
fn gather(
    cell: &mut Cell,
    collect: bool,
    path: &mut Vec<u8>,
    levels: &mut Vec<Vec<(NonNull<Cell>, Vec<u8>)>>,
) -> usize {
    let mut height = 0;
    let mut visit = |child: &mut Child, path: &mut Vec<u8>| {
        if let Child::Node(c) = child {
            if needs_work(c, collect) {
                height = height.max(gather(c, collect, path, levels) + 1);
            }
        }
    };
    match &mut cell.node {
        Node::Leaf { .. } => {}
        Node::Extension { path: extension, child } => {
            let len = path.len();
            path.extend_from_slice(extension);
            visit(child, path);
            path.truncate(len);
        }
        Node::Branch { children, .. } => {
            for (i, child) in children.iter_mut().enumerate() {
                path.push(i as u8);
                visit(child, path);
                path.pop();
            }
        }
    }
    if levels.len() <= height {
        levels.resize_with(height + 1, Vec::new);
    }
    let position = if collect && cell.dirty { path.clone() } else { Vec::new() };
    levels[height].push((NonNull::from(cell), position));
    height
}
