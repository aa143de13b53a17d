//! Hashing of changed nodes and collection of nodes to persist.
//!
//! Invariant relied on here (kept by `trie.rs`): a node without a cached
//! reference, or a dirty node, only ever has ancestors in the same state, so
//! whole clean subtrees are skipped without being visited.

use crate::{
    node::{encode, Cell, Child, Node},
    NewNodes,
};
use alloy_primitives::{keccak256, B256};
use rayon::prelude::*;

/// Hashes the root node (and whatever below it changed). With `out`, also
/// emits every dirty node and marks it clean.
pub(crate) fn hash_root(cell: &mut Cell, mut out: Option<&mut NewNodes>, parallel: bool) -> B256 {
    let collect = out.is_some();
    if needs_work(cell, collect) {
        if parallel {
            if let Node::Branch { children, .. } = &mut cell.node {
                let emitted: Vec<NewNodes> = children
                    .par_iter_mut()
                    .map(|child| {
                        let mut nodes = NewNodes::new();
                        let mut buf = Vec::with_capacity(544);
                        hash_child(child, &mut buf, collect.then_some(&mut nodes));
                        nodes
                    })
                    .collect();
                if let Some(out) = out.as_deref_mut() {
                    out.extend(emitted.into_iter().flatten());
                }
            }
        }
        let mut buf = Vec::with_capacity(544);
        hash_cell(cell, &mut buf, out, true);
    }
    cell.cached.expect("just hashed").root_hash()
}

#[inline]
fn needs_work(cell: &Cell, collect: bool) -> bool {
    cell.cached.is_none() || (collect && cell.dirty)
}

#[inline]
fn hash_child(child: &mut Child, buf: &mut Vec<u8>, out: Option<&mut NewNodes>) {
    if let Child::Node(cell) = child {
        if needs_work(cell, out.is_some()) {
            hash_cell(cell, buf, out, false);
        }
    }
}

fn hash_cell(cell: &mut Cell, buf: &mut Vec<u8>, mut out: Option<&mut NewNodes>, is_root: bool) {
    match &mut cell.node {
        Node::Leaf { .. } => {}
        Node::Extension { child, .. } => hash_child(child, buf, out.as_deref_mut()),
        Node::Branch { children, .. } => {
            for child in children.iter_mut() {
                hash_child(child, buf, out.as_deref_mut());
            }
        }
    }
    // Children are done, so the scratch buffer is free to reuse for this node.
    buf.clear();
    encode(&cell.node, buf);
    let r = match cell.cached {
        Some(r) => r,
        None => {
            let r = crate::node::NodeRef::from_rlp(buf);
            cell.cached = Some(r);
            r
        }
    };
    if let Some(out) = out {
        if cell.dirty {
            if buf.len() >= 32 {
                out.push((r.root_hash(), buf.clone()));
            } else if is_root {
                out.push((keccak256(&buf[..]), buf.clone()));
            }
            cell.dirty = false;
        }
    }
}
