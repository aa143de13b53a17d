//! A trie's upper levels, decoded, kept in memory from one use to the next.
//!
//! Every block's state root walks the account trie from its root, and the first levels
//! (one branch, then 16, then 256, ...) lie on nearly every block's paths. Reading them
//! from the store again each block costs a lookup and a decode per node, and on a cold
//! store one disk read per level before the next level can be read. After a commit,
//! [`Trie::commit_preserving`](crate::Trie::commit_preserving) keeps the trie's nodes
//! breadth-first up to a byte budget and turns everything below back into hash references;
//! the next trie opened on that root ([`Trie::from_preserved`](crate::Trie::from_preserved))
//! starts from them and reads the store only below.
//!
//! A preserved trie is the trie at its root hash (its nodes are the ones that hashed to
//! it), and every node it references by hash was committed with it or before: it stays
//! valid as long as the store keeps the nodes under those hashes.

use crate::node::{Cell, Child, Measured, Node, NodeRef};
use alloy_primitives::B256;

/// The decoded upper levels of the trie at `root`.
#[derive(Debug, Clone)]
pub struct PreservedTrie {
    pub(crate) root: B256,
    /// `None` for the account trie, else the hashed address whose storage trie this is.
    pub(crate) owner: Option<B256>,
    pub(crate) cell: Box<Cell>,
    nodes: usize,
    bytes: usize,
    /// Whether `keep` cut these levels to the budget.
    cut: bool,
}

impl PreservedTrie {
    /// The root hash of the trie these levels belong to.
    pub fn root(&self) -> B256 {
        self.root
    }

    /// `None` for the account trie, else the hashed address whose storage trie this is.
    pub fn owner(&self) -> Option<B256> {
        self.owner
    }

    /// How many nodes are kept (embedded ones included).
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// About how much memory the kept nodes take.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether these levels hold every node the commit that kept them wrote: true unless
    /// they were cut to the budget (a commit writes only nodes it has decoded). Then
    /// [`holds`](Self::holds) is true of each of those nodes, without a walk.
    pub fn holds_its_commit(&self) -> bool {
        !self.cut
    }

    /// Whether the node at `position` (nibbles from the root, as `StoredNode::path`) is
    /// kept decoded: a trie opened on these levels never reads it from the store.
    pub fn holds(&self, position: &[u8]) -> bool {
        let mut cell: &Cell = &self.cell;
        let mut depth = 0;
        while depth < position.len() {
            match cell.node.child_on(position, depth) {
                Some((Child::Node(inner), below)) => (cell, depth) = (inner, below),
                _ => return false,
            }
        }
        depth == position.len()
    }

    /// Keeps `cell` (the root of the trie at `root`, just committed: every node hashed,
    /// none dirty) and its descendants breadth-first while their estimated size fits in
    /// `budget` bytes; deeper nodes become hash references again. The root is always kept.
    ///
    /// Sizing the kept nodes walks only what changed since the last keep: a subtree no
    /// update walked through still has its size recorded on its top cell. So a trie that
    /// fits its budget costs a walk of the block's paths, not of every kept node; one
    /// over budget is cut breadth-first to three quarters of it (walking what it keeps)
    /// and measured again.
    pub(crate) fn keep(
        root: B256,
        owner: Option<B256>,
        mut cell: Box<Cell>,
        budget: usize,
    ) -> Self {
        let mut size = measure(&mut cell);
        let cut = size.bytes > budget;
        if cut {
            // Cut to three quarters, so the paths the next blocks load fit beside what is
            // kept for a while: a trie cut back to its budget after every block walked all
            // of it each time.
            cut_breadth_first(&mut cell, budget - budget / 4);
            size = measure(&mut cell);
        }
        PreservedTrie { root, owner, cell, nodes: size.nodes, bytes: size.bytes, cut }
    }
}

/// The children slots of `node`.
fn children_mut(node: &mut Node) -> &mut [Child] {
    match node {
        Node::Leaf { .. } => &mut [],
        Node::Extension { child, .. } => std::slice::from_mut(child),
        Node::Branch { children, .. } => &mut children[..],
    }
}

/// The size of `cell`'s subtree (decoded nodes only), recorded on every cell it walks; a
/// cell that has its size recorded is not walked.
fn measure(cell: &mut Cell) -> Measured {
    if let Some(size) = cell.measured {
        return size;
    }
    let mut size = Measured { bytes: node_bytes(&cell.node), nodes: 1 };
    for child in children_mut(&mut cell.node) {
        if let Child::Node(inner) = child {
            let below = measure(inner);
            size.bytes += below.bytes;
            size.nodes += below.nodes;
        }
    }
    cell.measured = Some(size);
    size
}

/// Keeps `cell` and its descendants breadth-first while their size fits in `budget`;
/// deeper nodes become hash references. Every kept cell's recorded size is dropped (its
/// subtree may have lost nodes).
fn cut_breadth_first(cell: &mut Cell, budget: usize) {
    let mut bytes = node_bytes(&cell.node);
    let mut level: Vec<&mut Cell> = vec![cell];
    while !level.is_empty() {
        let mut next = Vec::new();
        for cell in level {
            cell.measured = None;
            for child in children_mut(&mut cell.node) {
                let Child::Node(inner) = &*child else { continue };
                let size = node_bytes(&inner.node);
                // Embedded nodes (an inline reference) go wherever their parent goes.
                if let Some(NodeRef::Hash(hash)) = inner.cached {
                    if bytes + size > budget {
                        *child = Child::Hash(hash);
                        continue;
                    }
                }
                bytes += size;
                let Child::Node(inner) = child else { unreachable!("matched above") };
                next.push(&mut **inner);
            }
        }
        level = next;
    }
}

/// Estimated heap footprint of one decoded node.
fn node_bytes(node: &Node) -> usize {
    let cell = std::mem::size_of::<Cell>();
    match node {
        Node::Leaf { path, value } => cell + path.capacity() + value.capacity(),
        Node::Extension { path, .. } => cell + path.capacity(),
        Node::Branch { value, .. } => {
            cell + std::mem::size_of::<[Child; 16]>() + value.as_ref().map_or(0, Vec::capacity)
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{root_from_scratch, NodeReader, NodeRlp, Trie, TrieError, EMPTY_ROOT_HASH};
    use alloy_primitives::{keccak256, B256};
    use std::collections::{BTreeMap, HashMap};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A node map counting its reads and recording their positions (and, given
    /// `only_owner`, refusing reads of any other trie).
    #[derive(Default)]
    struct Counting {
        nodes: HashMap<B256, Vec<u8>>,
        reads: AtomicUsize,
        positions: std::sync::Mutex<Vec<Vec<u8>>>,
        only_owner: Option<B256>,
    }

    impl NodeReader for Counting {
        fn get_node(
            &self,
            owner: Option<&B256>,
            path: &[u8],
            hash: &B256,
        ) -> Result<Option<NodeRlp>, TrieError> {
            if let Some(only) = &self.only_owner {
                assert_eq!(owner, Some(only), "a read of another trie");
            }
            self.reads.fetch_add(1, Ordering::Relaxed);
            self.positions.lock().unwrap().push(path.to_vec());
            self.nodes.get_node(owner, path, hash)
        }
    }

    fn key(i: u64) -> B256 {
        keccak256(i.to_be_bytes())
    }

    /// Inserts `range` (value `tag`), removes every `remove_every`-th key of `removed`.
    fn batch(
        range: std::ops::Range<u64>,
        tag: u8,
        removed: std::ops::Range<u64>,
        remove_every: u64,
    ) -> Vec<(B256, Option<Vec<u8>>)> {
        let mut updates: Vec<_> =
            range.map(|i| (key(i), Some(vec![tag; 1 + i as usize % 40]))).collect();
        updates.extend(removed.step_by(remove_every as usize).map(|i| (key(i), None)));
        updates
    }

    fn apply(model: &mut BTreeMap<B256, Vec<u8>>, updates: &[(B256, Option<Vec<u8>>)]) {
        for (k, v) in updates {
            match v {
                Some(v) => model.insert(*k, v.clone()),
                None => model.remove(k),
            };
        }
    }

    #[test]
    fn blocks_from_preserved_levels_match_fresh_tries_and_an_independent_root() {
        let mut store = Counting::default();
        let mut model = BTreeMap::new();
        let genesis = batch(0..4000, 1, 0..0, 1);
        apply(&mut model, &genesis);
        let mut trie = Trie::new(&store, EMPTY_ROOT_HASH);
        trie.update_batch(genesis).unwrap();
        let (mut root, nodes, mut preserved) = trie.commit_preserving(64 << 10).unwrap();
        store.nodes.extend(nodes.into_hashed());

        // Blocks of inserts, overwrites and removals (branches collapsing), big enough
        // for the parallel subtree update and small enough for the serial one.
        let blocks = [
            batch(3900..4300, 2, 0..600, 3),
            batch(10..20, 3, 1000..1100, 7),
            batch(4300..4301, 4, 0..4300, 2),
            batch(0..0, 5, 1..4301, 1),
        ];
        for updates in blocks {
            apply(&mut model, &updates);
            let kept = preserved.take().expect("a non-empty trie keeps its root");
            assert_eq!(kept.root(), root);
            assert!(kept.bytes() <= (64 << 10) + 1024, "{} bytes kept", kept.bytes());

            // The same block on a fresh trie over the store, as the reference.
            let fresh_reads = store.reads.swap(0, Ordering::Relaxed);
            let mut fresh = Trie::new(&store, root);
            fresh.update_batch(updates.clone()).unwrap();
            let (fresh_root, mut fresh_nodes) = fresh.commit().unwrap();
            let reads_fresh = store.reads.swap(fresh_reads, Ordering::Relaxed);

            let mut trie = Trie::from_preserved(&store, kept);
            trie.update_batch(updates).unwrap();
            let (new_root, mut new_nodes, next) = trie.commit_preserving(64 << 10).unwrap();
            let reads_preserved = store.reads.load(Ordering::Relaxed) - fresh_reads;

            assert_eq!(new_root, root_from_scratch(model.clone()));
            assert_eq!(new_root, fresh_root);
            fresh_nodes.nodes.sort();
            new_nodes.nodes.sort();
            assert_eq!(new_nodes, fresh_nodes, "both commits emit the same nodes");
            assert!(
                reads_preserved < reads_fresh,
                "preserved levels read {reads_preserved} nodes, a fresh trie {reads_fresh}"
            );
            store.nodes.extend(new_nodes.into_hashed());
            root = new_root;
            preserved = next;
        }
        assert_eq!(model.len(), 0);
        assert_eq!(root, EMPTY_ROOT_HASH);
        assert!(preserved.is_none(), "an emptied trie keeps nothing");
    }

    #[test]
    fn a_storage_trie_reopened_from_its_levels_stays_that_accounts_trie() {
        let owner = B256::repeat_byte(0x5a);
        let mut store = Counting { only_owner: Some(owner), ..Default::default() };
        let mut model = BTreeMap::new();
        let genesis = batch(0..2000, 1, 0..0, 1);
        apply(&mut model, &genesis);
        let mut trie = Trie::storage(&store, owner, EMPTY_ROOT_HASH);
        trie.update_batch(genesis).unwrap();
        let (root, updates, kept) = trie.commit_preserving(16 << 10).unwrap();
        assert_eq!(updates.owner, Some(owner));
        store.nodes.extend(updates.into_hashed());
        let kept = kept.expect("levels of a non-empty trie");
        assert_eq!((kept.owner(), kept.root()), (Some(owner), root));

        let updates = batch(1990..2100, 2, 0..300, 5);
        apply(&mut model, &updates);
        let mut trie = Trie::from_preserved(&store, kept);
        trie.prefetch(&updates.iter().map(|(k, _)| *k).collect::<Vec<_>>()).unwrap();
        trie.update_batch(updates.clone()).unwrap();
        let (new_root, mut from_levels, next) = trie.commit_preserving(16 << 10).unwrap();
        let mut fresh = Trie::storage(&store, owner, root);
        fresh.update_batch(updates).unwrap();
        let (fresh_root, mut fresh_updates) = fresh.commit().unwrap();
        assert_eq!(new_root, root_from_scratch(model));
        assert_eq!(new_root, fresh_root);
        from_levels.nodes.sort();
        fresh_updates.nodes.sort();
        assert_eq!(from_levels, fresh_updates, "same owner, nodes and removed positions");
        assert_eq!(next.map(|n| n.owner()), Some(Some(owner)));
    }

    /// The size of the decoded subtree under `cell`, counted from scratch.
    fn size_from_scratch(cell: &crate::node::Cell) -> (usize, usize) {
        use crate::node::{Child, Node};
        let children: &[Child] = match &cell.node {
            Node::Leaf { .. } => &[],
            Node::Extension { child, .. } => std::slice::from_ref(child),
            Node::Branch { children, .. } => &children[..],
        };
        children.iter().fold((super::node_bytes(&cell.node), 1), |(b, n), child| match child {
            Child::Node(inner) => {
                let (cb, cn) = size_from_scratch(inner);
                (b + cb, n + cn)
            }
            _ => (b, n),
        })
    }

    #[test]
    fn sizes_kept_from_block_to_block_match_a_count_from_scratch() {
        let mut store = Counting::default();
        let mut trie = Trie::new(&store, EMPTY_ROOT_HASH);
        trie.update_batch(batch(0..3000, 1, 0..0, 1)).unwrap();
        let (_, nodes, mut kept) = trie.commit_preserving(usize::MAX).unwrap();
        store.nodes.extend(nodes.into_hashed());
        // Blocks under the budget (sizes carried over), then ones that must be cut, then
        // one that changes nothing but walks (and loads) paths the cut left on disk.
        let blocks = [
            (batch(2990..3100, 2, 0..500, 4), usize::MAX),
            (batch(5..15, 3, 3000..3050, 1), usize::MAX),
            (batch(0..0, 4, 100..2000, 3), usize::MAX),
            (batch(4000..4400, 5, 0..0, 1), 64 << 10),
            (batch(4400..4410, 6, 0..100, 9), 64 << 10),
            (batch(4400..4410, 6, 0..0, 1), usize::MAX),
        ];
        for (updates, budget) in blocks {
            let levels = kept.take().unwrap();
            let mut trie = Trie::from_preserved(&store, levels);
            trie.update_batch(updates).unwrap();
            let (_, nodes, next) = trie.commit_preserving(budget).unwrap();
            store.nodes.extend(nodes.into_hashed());
            let next = next.unwrap();
            assert_eq!((next.bytes(), next.nodes()), size_from_scratch(&next.cell));
            assert!(next.bytes() <= budget);
            kept = Some(next);
        }
    }

    #[test]
    fn the_budget_bounds_what_is_kept_and_prefetch_starts_below_it() {
        let mut store = Counting::default();
        let mut trie = Trie::new(&store, EMPTY_ROOT_HASH);
        trie.update_batch(batch(0..20_000, 1, 0..0, 1)).unwrap();
        let (root, nodes, _) = trie.commit_preserving(0).unwrap();
        store.nodes.extend(nodes.into_hashed());

        let keys: Vec<B256> = (0..500).map(key).collect();
        let mut kept_nodes = Vec::new();
        let mut reads = Vec::new();
        for budget in [0, 16 << 10, 256 << 10, usize::MAX] {
            // Load every path once, keep up to `budget`, then prefetch the same paths.
            let mut trie = Trie::new(&store, root);
            trie.update_batch(keys.iter().map(|k| (*k, Some(vec![7])))).unwrap();
            let (new_root, nodes, kept) = trie.commit_preserving(budget).unwrap();
            store.nodes.extend(nodes.into_hashed());
            let kept = kept.unwrap();
            assert!(budget == 0 || budget == usize::MAX || kept.bytes() <= budget, "{budget}");
            assert!(kept.nodes() >= 1);
            kept_nodes.push(kept.nodes());
            let trie = Trie::from_preserved(&store, kept);
            store.reads.store(0, Ordering::Relaxed);
            let read = trie.prefetch(&keys).unwrap();
            assert_eq!(read, store.reads.load(Ordering::Relaxed));
            reads.push(store.reads.load(Ordering::Relaxed));
            assert_ne!(new_root, root);
        }
        assert_eq!(kept_nodes[0], 1, "budget 0 keeps the root only");
        assert!(kept_nodes.windows(2).all(|w| w[0] < w[1]), "{kept_nodes:?}");
        // Everything loaded is kept with no bound: nothing is left to read.
        assert_eq!(*reads.last().unwrap(), 0, "{reads:?}");
        assert!(reads.windows(2).all(|w| w[0] >= w[1]), "{reads:?}");
    }

    #[test]
    fn the_levels_hold_exactly_the_nodes_a_trie_opened_on_them_never_reads() {
        for budget in [0, 16 << 10, 64 << 10, usize::MAX] {
            let mut store = Counting::default();
            let mut trie = Trie::new(&store, EMPTY_ROOT_HASH);
            trie.update_batch(batch(0..3000, 1, 0..0, 1)).unwrap();
            let (_, written, kept) = trie.commit_preserving(budget).unwrap();
            let kept = kept.unwrap();
            let held: Vec<bool> = written.nodes.iter().map(|n| kept.holds(&n.path)).collect();
            let holds_its_commit = kept.holds_its_commit();
            assert!(!kept.holds(&[16]) && !kept.holds(&[3, 200]), "positions that are no path");
            store.nodes.extend(written.nodes.iter().map(|n| (n.hash, n.rlp.clone())));
            // Every key overwritten: the walk reaches every stored node, reading from the
            // store exactly those the levels do not hold.
            let mut trie = Trie::from_preserved(&store, kept);
            trie.update_batch(batch(0..3000, 2, 0..0, 1)).unwrap();
            let mut read = store.positions.lock().unwrap().clone();
            let mut not_held: Vec<Vec<u8>> = written
                .nodes
                .iter()
                .zip(&held)
                .filter(|(_, held)| !**held)
                .map(|(n, _)| n.path.clone())
                .collect();
            read.sort();
            not_held.sort();
            assert_eq!(read, not_held, "budget {budget}");
            let held = held.iter().filter(|h| **h).count();
            if holds_its_commit {
                assert_eq!(held, written.nodes.len(), "budget {budget}");
            }
            assert_eq!(holds_its_commit, budget == usize::MAX, "only the unbounded keep is whole");
            match budget {
                0 => assert_eq!(held, 1, "the root only"),
                usize::MAX => assert_eq!(held, written.nodes.len()),
                _ => assert!(held > 1 && held < written.nodes.len(), "{budget}: {held}"),
            }
        }
    }
}
