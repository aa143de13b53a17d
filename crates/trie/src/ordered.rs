//! Roots of ordered lists: the trie that maps each item's position, RLP-encoded, to the
//! item's bytes. A block's transactions, receipts and withdrawals roots are such roots.
//!
//! `alloy_trie`'s `HashBuilder` (behind `alloy_consensus::proofs`) streams the sorted
//! keys and hashes one node at a time with the scalar Keccak. A block of a few hundred
//! transactions hashes ~1,000 nodes for its two roots (a receipt's leaf, with its 256-byte
//! bloom, takes three permutations). Built in memory with [`Trie`], the list is hashed as
//! every trie here is: level by level, each level one batch for the multi-lane Keccak
//! (see [`keccak`](crate::keccak)).

use crate::{NodeReader, NodeRlp, Trie, TrieError, EMPTY_ROOT_HASH};
use alloy_primitives::B256;

/// The root of the trie mapping `rlp(i)` to `items[i]`: `alloy_trie`'s
/// `ordered_trie_root_encoded(items)`, computed with batched hashing.
pub fn ordered_root<T: AsRef<[u8]>>(items: &[T]) -> B256 {
    // `Trie::insert` takes an empty value as a removal; an ordered list may hold empty
    // items (none of a block's lists does), which the reference stores as empty leaves.
    if items.iter().any(|item| item.as_ref().is_empty()) {
        return alloy_trie::root::ordered_trie_root_encoded(items);
    }
    build(items).unwrap_or_else(|_| alloy_trie::root::ordered_trie_root_encoded(items))
}

fn build<T: AsRef<[u8]>>(items: &[T]) -> Result<B256, TrieError> {
    let mut trie = Trie::new(&NoNodes, EMPTY_ROOT_HASH);
    let mut key = Vec::with_capacity(9);
    for (i, item) in items.iter().enumerate() {
        key.clear();
        alloy_rlp::Encodable::encode(&i, &mut key);
        trie.insert(&key, item.as_ref().to_vec())?;
    }
    trie.root_hash()
}

/// The store of a trie built from empty: it never reads a node (every node it walks is
/// one it made), so any read is answered "not here".
struct NoNodes;

impl NodeReader for NoNodes {
    fn get_node(
        &self,
        _owner: Option<&B256>,
        _path: &[u8],
        _hash: &B256,
    ) -> Result<Option<NodeRlp>, TrieError> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_trie::root::ordered_trie_root_encoded;
    use rand::{Rng, SeedableRng};

    fn random_items(rng: &mut rand::rngs::StdRng, n: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|_| {
                // Short items (embedded leaves) as well as long ones (hashed, several blocks).
                let len = if rng.random_bool(0.3) {
                    rng.random_range(1..30)
                } else {
                    rng.random_range(30..700)
                };
                (0..len).map(|_| rng.random()).collect()
            })
            .collect()
    }

    /// Every list length around the RLP key-length boundaries (1 byte up to 127, then 0x81
    /// xx up to 255, then 0x82 xx xx) and beyond the parallel hashing threshold.
    #[test]
    fn matches_the_reference_hash_builder() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for n in (0..140).chain([200, 255, 256, 257, 300, 1000, 1500]) {
            let items = random_items(&mut rng, n);
            assert_eq!(ordered_root(&items), ordered_trie_root_encoded(&items), "{n} items");
        }
    }

    #[test]
    fn empty_items_fall_back_to_the_reference() {
        let items: Vec<Vec<u8>> = vec![vec![1, 2, 3], vec![], vec![4; 40]];
        assert_eq!(ordered_root(&items), ordered_trie_root_encoded(&items));
        assert_eq!(ordered_root::<Vec<u8>>(&[]), EMPTY_ROOT_HASH);
    }

    /// `cargo test --release -p ethrex-trie ordered::tests::bench -- --ignored --nocapture`:
    /// this module against the reference on a block-sized list of receipt-sized items.
    #[test]
    #[ignore = "a measurement, not a check"]
    fn bench() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let items: Vec<Vec<u8>> = (0..350)
            .map(|_| (0..rng.random_range(300..450)).map(|_| rng.random()).collect())
            .collect();
        let time = |f: &dyn Fn() -> B256| {
            let mut samples: Vec<f64> = (0..51)
                .map(|_| {
                    let t = std::time::Instant::now();
                    std::hint::black_box(f());
                    t.elapsed().as_secs_f64() * 1e6
                })
                .collect();
            samples.sort_by(f64::total_cmp);
            samples[samples.len() / 2]
        };
        for _ in 0..3 {
            let ours = time(&|| ordered_root(&items));
            let reference = time(&|| ordered_trie_root_encoded(&items));
            println!(
                "350 items of 300-450 bytes: ordered_root {ours:.0} us, HashBuilder {reference:.0} us ({:.2}x)",
                ours / reference
            );
        }
    }
}
