//! In-memory nodes and their hashes.
//!
//! - empty: hash 0;
//! - internal: `sha256(left ++ right)`, an empty child counting as 32 zero bytes;
//! - stem: `sha256(stem ++ 0x00 ++ r)`, `r` the root of the 256 values merkleized as a
//!   binary tree whose leaves are `sha256(value)` (0 for an absent value) and whose
//!   inner nodes are `sha256(left ++ right)`, or 0 when both are 0.

use crate::key::Stem;
use alloy_primitives::B256;
use sha2::{Digest, Sha256};

/// Internal nodes shallower than this hash their two children in parallel.
const PARALLEL_HASH_DEPTH: usize = 4;

/// A node of the trie.
#[derive(Debug, Default)]
pub(crate) enum Node {
    /// No node.
    #[default]
    Empty,
    /// A node in the store, not loaded: its hash, as its parent has it.
    Hashed(B256),
    /// Two children.
    Internal(Box<InternalNode>),
    /// A stem and its values.
    Stem(Box<StemNode>),
}

/// An internal node.
#[derive(Debug, Default)]
pub(crate) struct InternalNode {
    pub(crate) left: Node,
    pub(crate) right: Node,
    /// Cached hash; `None` when a change below invalidated it (or not yet computed).
    pub(crate) hash: Option<B256>,
    /// Something at or below this node changed since the last commit (or load): the
    /// group blob containing it must be written again.
    pub(crate) dirty: bool,
}

impl InternalNode {
    /// A new (dirty) internal node.
    pub(crate) fn new(left: Node, right: Node) -> Self {
        Self { left, right, hash: None, dirty: true }
    }

    /// The child on side `bit` (0 = left).
    pub(crate) fn child_mut(&mut self, bit: u8) -> &mut Node {
        if bit == 0 {
            &mut self.left
        } else {
            &mut self.right
        }
    }
}

/// A stem node: up to 256 values.
#[derive(Debug)]
pub(crate) struct StemNode {
    pub(crate) stem: Stem,
    /// Present values by sub-index, sorted, no duplicates.
    pub(crate) values: Vec<(u8, B256)>,
    pub(crate) hash: Option<B256>,
    /// Changed (or moved deeper) since it was last written.
    pub(crate) dirty: bool,
    /// A blob of this node exists in the store at its current path.
    pub(crate) stored: bool,
}

impl StemNode {
    /// A new (dirty, unstored) stem node holding `values`.
    pub(crate) fn new(stem: Stem, values: &[(u8, B256)]) -> Self {
        let mut node = Self {
            stem,
            values: Vec::with_capacity(values.len()),
            hash: None,
            dirty: true,
            stored: false,
        };
        node.set_values(values);
        node
    }

    /// Sets (overwrites) values.
    pub(crate) fn set_values(&mut self, values: &[(u8, B256)]) {
        for &(index, value) in values {
            match self.values.binary_search_by_key(&index, |(i, _)| *i) {
                Ok(position) => self.values[position].1 = value,
                Err(position) => self.values.insert(position, (index, value)),
            }
        }
        self.hash = None;
        self.dirty = true;
    }

    /// The value at `index`, if present.
    pub(crate) fn get(&self, index: u8) -> Option<B256> {
        self.values.binary_search_by_key(&index, |(i, _)| *i).ok().map(|p| self.values[p].1)
    }

    /// The node hash (cached).
    pub(crate) fn hash(&mut self) -> B256 {
        if let Some(hash) = self.hash {
            return hash;
        }
        let mut input = [0u8; 64];
        input[..31].copy_from_slice(&self.stem);
        input[32..].copy_from_slice(values_root(&self.values).as_slice());
        let hash = sha256(&input);
        self.hash = Some(hash);
        hash
    }
}

impl Node {
    /// The node hash at `depth`, computing (and caching) whatever changed below.
    pub(crate) fn hash(&mut self, depth: usize) -> B256 {
        match self {
            Node::Empty => B256::ZERO,
            Node::Hashed(hash) => *hash,
            Node::Stem(stem) => stem.hash(),
            Node::Internal(node) => {
                if let Some(hash) = node.hash {
                    return hash;
                }
                let InternalNode { left, right, .. } = &mut **node;
                let (left, right) = if depth < PARALLEL_HASH_DEPTH {
                    rayon::join(|| left.hash(depth + 1), || right.hash(depth + 1))
                } else {
                    (left.hash(depth + 1), right.hash(depth + 1))
                };
                let hash = hash_pair(&left, &right);
                node.hash = Some(hash);
                hash
            }
        }
    }
}

/// Root of the 256-leaf value tree, computed over the present values only.
pub(crate) fn values_root(values: &[(u8, B256)]) -> B256 {
    // (position in the current level, hash), sorted by position; absent positions are 0.
    let mut level: Vec<(u8, B256)> =
        values.iter().map(|(index, value)| (*index, sha256(value.as_slice()))).collect();
    for _ in 0..8 {
        let mut next = Vec::with_capacity(level.len().div_ceil(2));
        let mut i = 0;
        while i < level.len() {
            let (position, hash) = level[i];
            let (left, right) = if position % 2 == 1 {
                (B256::ZERO, hash)
            } else if level.get(i + 1).is_some_and(|(p, _)| *p == position + 1) {
                i += 1;
                (hash, level[i].1)
            } else {
                (hash, B256::ZERO)
            };
            next.push((position / 2, hash_pair(&left, &right)));
            i += 1;
        }
        level = next;
    }
    level.first().map_or(B256::ZERO, |(_, root)| *root)
}

pub(crate) fn sha256(data: &[u8]) -> B256 {
    B256::new(Sha256::digest(data).into())
}

/// `sha256(left ++ right)`.
pub(crate) fn hash_pair(left: &B256, right: &B256) -> B256 {
    let mut hasher = Sha256::new();
    hasher.update(left);
    hasher.update(right);
    B256::new(hasher.finalize().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dense definition: 256 leaves, pairs of zeros hash to zero.
    fn dense_values_root(values: &[(u8, B256)]) -> B256 {
        let mut level = vec![B256::ZERO; 256];
        for (index, value) in values {
            level[usize::from(*index)] = sha256(value.as_slice());
        }
        while level.len() > 1 {
            level = level
                .chunks(2)
                .map(|pair| {
                    if pair[0].is_zero() && pair[1].is_zero() {
                        B256::ZERO
                    } else {
                        hash_pair(&pair[0], &pair[1])
                    }
                })
                .collect();
        }
        level[0]
    }

    #[test]
    fn sparse_values_root_matches_dense() {
        let cases: Vec<Vec<(u8, B256)>> = vec![
            vec![],
            vec![(0, B256::ZERO)],
            vec![(255, B256::repeat_byte(1))],
            vec![(0, B256::repeat_byte(1)), (1, B256::repeat_byte(2))],
            vec![(1, B256::repeat_byte(1)), (2, B256::repeat_byte(2)), (200, B256::ZERO)],
            (0..=255).map(|i| (i, B256::repeat_byte(i))).collect(),
            (0..=255).step_by(3).map(|i| (i, B256::repeat_byte(i ^ 0x5a))).collect(),
        ];
        for values in cases {
            assert_eq!(values_root(&values), dense_values_root(&values), "{values:?}");
        }
    }
}
