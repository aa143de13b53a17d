//! The in-memory cache of trie nodes.
//!
//! Every merkleization reads thousands of nodes through it, nearly all hits on memory
//! that is cold in the CPU caches, so what a hit costs is the number of dependent memory
//! loads on its way: the shard's table, the entry, the node bytes. So values are
//! `Arc<[u8]>`: the bytes sit right after the reference counts, where `Arc<Vec<u8>>` adds
//! a hop to a separate buffer. Keys are hashed with alloy's hasher for fixed-size keys:
//! seeded per process, so nodes cannot be ground (paid for with gas) to collide in the
//! table. A plain fold of the key's bytes, which keccak keys would allow, is faster, but
//! collisions of a fold can be ground.

use alloy_primitives::{map::FbBuildHasher, B256};
use ethrex_trie::NodeRlp;

/// Nodes are addressed by their hash, so a cached node can never be stale: the cache
/// needs no invalidation, only a size bound.
pub(crate) type NodeCache =
    quick_cache::sync::Cache<B256, NodeRlp, quick_cache::UnitWeighter, KeyHasher>;

type KeyHasher = FbBuildHasher<32>;

pub(crate) fn node_cache(entries: usize) -> NodeCache {
    NodeCache::with(
        entries,
        entries as u64,
        quick_cache::UnitWeighter,
        KeyHasher::default(),
        Default::default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::keccak256;
    use std::sync::Arc;

    #[test]
    fn hashes_spread_over_shards_and_buckets() {
        // quick_cache picks the shard from the middle bits and hashbrown the bucket from
        // the low bits and the tag from the top 7: all of them must vary with the key.
        // The hasher is seeded per process; with 16384 keys a byte value is missed by
        // chance with probability ~256 * e^-64, so the exact counts below cannot flake.
        use std::hash::BuildHasher;
        let hasher = KeyHasher::default();
        let hashes: Vec<u64> =
            (0u64..16384).map(|i| hasher.hash_one(keccak256(i.to_le_bytes()))).collect();
        let distinct = |bits: fn(u64) -> u64| {
            hashes.iter().map(|h| bits(*h)).collect::<std::collections::HashSet<_>>().len()
        };
        assert_eq!(distinct(|h| h & 0xff), 256, "low byte");
        assert_eq!(distinct(|h| (h >> 32) & 0xff), 256, "middle byte");
        assert_eq!(distinct(|h| h >> 57), 128, "top 7 bits");
    }

    #[test]
    fn cache_returns_what_was_inserted_and_stays_bounded() {
        let cache = node_cache(1000);
        let keys: Vec<B256> = (0u64..5000).map(|i| keccak256(i.to_be_bytes())).collect();
        for (i, key) in keys.iter().enumerate() {
            cache.insert(*key, Arc::from(vec![i as u8; 40]));
        }
        assert!(cache.len() <= 1100, "{} entries for a bound of 1000", cache.len());
        let mut hits = 0;
        for (i, key) in keys.iter().enumerate() {
            if let Some(node) = cache.get(key) {
                assert_eq!(&node[..], &[i as u8; 40][..]);
                hits += 1;
            }
        }
        assert!(hits >= 500, "only {hits} of the last nodes still cached");
    }
}
