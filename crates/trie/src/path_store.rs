//! Nodes by position in memory, checked like a database-backed store: for tests of what
//! commits write and delete (feature `test-utils`).

use crate::node::{decode, Child, Node};
use crate::{NodeReader, NodeRlp, TrieError, TrieUpdates, EMPTY_ROOT_HASH};
use alloy_primitives::{keccak256, B256};
use std::collections::{BTreeSet, HashMap};

/// Nodes keyed by `(owner, path)`, overwritten in place as commits are applied.
#[derive(Debug, Default, Clone)]
pub struct PathStore {
    nodes: HashMap<(Option<B256>, Vec<u8>), Vec<u8>>,
}

impl PathStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies a commit's deletions, then its writes (a commit never names a position in
    /// both).
    pub fn apply(&mut self, updates: &TrieUpdates) {
        for path in &updates.removed {
            self.nodes.remove(&(updates.owner, path.clone()));
        }
        for node in &updates.nodes {
            self.nodes.insert((updates.owner, node.path.clone()), node.rlp.clone());
        }
    }

    /// How many nodes are stored, over all tries.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The positions stored for `owner`'s trie.
    pub fn positions(&self, owner: Option<B256>) -> BTreeSet<Vec<u8>> {
        self.nodes.keys().filter(|(o, _)| *o == owner).map(|(_, p)| p.clone()).collect()
    }

    /// The positions of the stored nodes the trie at `root` is made of, found by walking
    /// it from its root (each node checked against its parent's reference).
    pub fn reachable(
        &self,
        owner: Option<B256>,
        root: B256,
    ) -> Result<BTreeSet<Vec<u8>>, TrieError> {
        let mut found = BTreeSet::new();
        if root == EMPTY_ROOT_HASH {
            return Ok(found);
        }
        let mut stack = vec![(Vec::new(), root)];
        while let Some((path, hash)) = stack.pop() {
            let rlp =
                self.get_node(owner.as_ref(), &path, &hash)?.ok_or(TrieError::MissingNode(hash))?;
            let node = decode(&rlp, hash)?;
            visit(&node, &path, &mut stack);
            found.insert(path);
        }
        Ok(found)
    }
}

/// Pushes the stored children of `node` (at `path`), walking through embedded ones.
fn visit(node: &Node, path: &[u8], stack: &mut Vec<(Vec<u8>, B256)>) {
    let mut follow = |child: &Child, at: Vec<u8>| match child {
        Child::Empty => {}
        Child::Hash(h) => stack.push((at, *h)),
        Child::Node(cell) => visit(&cell.node, &at, stack),
    };
    match node {
        Node::Leaf { .. } => {}
        Node::Extension { path: extension, child } => {
            follow(child, [path, extension.as_slice()].concat())
        }
        Node::Branch { children, .. } => {
            for (i, child) in children.iter().enumerate() {
                follow(child, [path, &[i as u8]].concat());
            }
        }
    }
}

impl NodeReader for PathStore {
    fn get_node(
        &self,
        owner: Option<&B256>,
        path: &[u8],
        hash: &B256,
    ) -> Result<Option<NodeRlp>, TrieError> {
        Ok(self
            .nodes
            .get(&(owner.copied(), path.to_vec()))
            .filter(|rlp| keccak256(rlp) == *hash)
            .map(|rlp| NodeRlp::from(rlp.as_slice())))
    }
}
