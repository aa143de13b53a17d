//! Reading, ahead of an update, every stored node on the paths of the keys it will
//! touch, with the reads of each trie level in parallel.
//!
//! An update walks each key's path from the root, one dependent read per level, so on a
//! cold store its reads are serial. The paths of many keys are independent below the
//! first levels, though: walking them level by level, every distinct node of a level is
//! read once and all of them at the same time (on the current rayon pool), so the update
//! that follows finds its nodes in the reader's cache. A key's walk stops where the trie
//! diverges from it (a leaf, an empty child, an extension off its path); a node missing
//! from the store ends that walk silently, and the update reports it.

use crate::node::{decode, Child, Node};
use crate::{NodeReader, TrieError};
use alloy_primitives::B256;
use rayon::prelude::*;
use rustc_hash::FxHashMap;

/// Reads every stored node on the paths of `keys` in the trie at `root` through
/// `reader` (which is expected to cache what it reads). Returns how many nodes it read.
pub fn prefetch_paths<R: NodeReader + ?Sized>(
    reader: &R,
    root: B256,
    keys: &[B256],
) -> Result<usize, TrieError> {
    crate::Trie::new(reader, root).prefetch(keys)
}

/// Walks `paths` down from the stored nodes in `start` (`(node, key, nibbles of the key's
/// path consumed to reach it)`), reading each level's distinct nodes once and in parallel.
/// Returns how many nodes it read.
pub(crate) fn read_levels<R: NodeReader + ?Sized>(
    reader: &R,
    owner: Option<&B256>,
    paths: &[Vec<u8>],
    start: impl IntoIterator<Item = (B256, usize, usize)>,
) -> Result<usize, TrieError> {
    // Each stored node still to read, with the walks (key, nibbles consumed) waiting on it.
    let mut level = group(start);
    let mut read = 0;
    while !level.is_empty() {
        read += level.len();
        let next: Vec<(B256, usize, usize)> = level
            .par_iter()
            .map(|(hash, walks)| -> Result<Vec<(B256, usize, usize)>, TrieError> {
                // Every walk waiting on a node reached it by the same position or by one
                // holding the same node; the first one's is as good as any.
                let (key, depth) = walks[0];
                let position = &paths[key][..depth];
                let Some(rlp) = reader.get_node(owner, position, hash)? else {
                    return Ok(Vec::new());
                };
                let node = decode(&rlp, *hash)?;
                Ok(walks
                    .iter()
                    .filter_map(|&(key, depth)| {
                        descend(&node, &paths[key], depth).map(|(child, depth)| (child, key, depth))
                    })
                    .collect())
            })
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .flatten()
            .collect();
        level = group(next);
    }
    Ok(read)
}

/// The walks waiting on each distinct node.
fn group(
    walks: impl IntoIterator<Item = (B256, usize, usize)>,
) -> Vec<(B256, Vec<(usize, usize)>)> {
    let mut grouped: FxHashMap<B256, Vec<(usize, usize)>> = FxHashMap::default();
    for (hash, key, depth) in walks {
        grouped.entry(hash).or_default().push((key, depth));
    }
    grouped.into_iter().collect()
}

/// From `node` (reached after `depth` nibbles of `path`), the next stored node on the
/// path and the nibbles consumed to reach it; `None` where the walk ends. Nodes embedded
/// in their parent are followed without a read.
pub(crate) fn descend(mut node: &Node, path: &[u8], mut depth: usize) -> Option<(B256, usize)> {
    loop {
        let (child, below) = node.child_on(path, depth)?;
        depth = below;
        match child {
            Child::Hash(hash) => return Some((*hash, depth)),
            Child::Node(cell) => node = &cell.node,
            Child::Empty => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{apply_updates, EMPTY_ROOT_HASH};
    use alloy_primitives::keccak256;
    use std::collections::HashMap;
    use std::sync::Mutex;

    /// A node map that records which nodes were read.
    struct Recording {
        nodes: HashMap<B256, Vec<u8>>,
        reads: Mutex<Vec<B256>>,
    }

    impl NodeReader for Recording {
        fn get_node(
            &self,
            owner: Option<&B256>,
            path: &[u8],
            hash: &B256,
        ) -> Result<Option<crate::NodeRlp>, TrieError> {
            self.reads.lock().unwrap().push(*hash);
            self.nodes.get_node(owner, path, hash)
        }
    }

    fn trie(n: u64) -> (B256, HashMap<B256, Vec<u8>>) {
        let empty: HashMap<B256, Vec<u8>> = HashMap::new();
        let updates = (0..n).map(|i| (keccak256(i.to_be_bytes()), Some(vec![1, 2, 3])));
        let (root, nodes) = apply_updates(&empty, EMPTY_ROOT_HASH, updates).unwrap();
        (root, nodes.into_hashed().collect())
    }

    #[test]
    fn reads_exactly_the_nodes_an_update_reads_each_once() {
        let (root, nodes) = trie(5000);
        // Existing keys and new ones, some sharing paths.
        let keys: Vec<B256> = (0..300u64).map(|i| keccak256((i * 17).to_be_bytes())).collect();
        let prefetch = Recording { nodes: nodes.clone(), reads: Mutex::new(Vec::new()) };
        let read = prefetch_paths(&prefetch, root, &keys).unwrap();
        let mut prefetched = prefetch.reads.into_inner().unwrap();
        assert_eq!(read, prefetched.len());
        let before = prefetched.len();
        prefetched.sort();
        prefetched.dedup();
        assert_eq!(prefetched.len(), before, "a node was read twice");

        let update = Recording { nodes, reads: Mutex::new(Vec::new()) };
        apply_updates(&update, root, keys.iter().map(|k| (*k, Some(vec![9])))).unwrap();
        let mut updated = update.reads.into_inner().unwrap();
        updated.sort();
        updated.dedup();
        // Every node the update needed was prefetched; the prefetch read nothing else
        // (the update also reads siblings when collapsing, which inserts never do).
        assert_eq!(prefetched, updated);
    }

    #[test]
    fn empty_tries_and_missing_nodes_read_nothing_or_stop() {
        let empty: HashMap<B256, Vec<u8>> = HashMap::new();
        assert_eq!(prefetch_paths(&empty, EMPTY_ROOT_HASH, &[B256::ZERO]).unwrap(), 0);
        // A root the store does not have: one attempted read, no error (the update reports it).
        assert_eq!(prefetch_paths(&empty, B256::repeat_byte(7), &[B256::ZERO]).unwrap(), 1);
    }
}
