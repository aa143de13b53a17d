//! The tries over the client's key-value backends (MDBX, RocksDB, memory).
//!
//! `KvNodeStore` is `ethrex_bintrie::NodeStore` over the `extension` table; `KvTrieNodes`
//! is `ethrex_trie::NodeReader` over `account_trie` and `storage_trie` (nodes by
//! position, as the client stores them), read straight from the backend. Neither
//! has a cache of its own (the client's `Store` keeps an MPT node cache; left out here so
//! both schemes see the same backend and only what a trie holds in memory during one run).
//!
//! `KvNodeStore` is `ethrex-bintrie`'s (feature `kv`), shared with `ethrex-import-bench`:
//! not in `ethrex-storage`, which would otherwise depend on `ethrex-bintrie` for a
//! research-only table.

use alloy_primitives::B256;
use ethrex_storage::trie_nodes::{checked_node, trie_node_key};
use ethrex_storage::{KvBackend, StoreError, WriteBatch};
use ethrex_trie::{NodeReader, NodeRlp, TrieError, TrieUpdates};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub use ethrex_bintrie::kv::KvNodeStore;

/// The MPT node tables (position -> RLP) of a backend, uncached; counts reads.
#[derive(Clone)]
pub struct KvTrieNodes {
    backend: Arc<dyn KvBackend>,
    reads: Arc<AtomicU64>,
}

impl KvTrieNodes {
    /// The MPT node tables of `backend`.
    pub fn new(backend: Arc<dyn KvBackend>) -> Self {
        Self { backend, reads: Arc::default() }
    }

    /// Nodes read so far.
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// Writes what `tries` (from `Trie::commit`) changed, in one batch.
    pub fn write(&self, tries: Vec<TrieUpdates>) -> Result<(), StoreError> {
        let mut batch = WriteBatch::new();
        for trie in tries {
            batch.put_trie(trie);
        }
        self.backend.write_batch(&batch)
    }
}

/// As the client's store reads them: by position, checked against the parent's hash.
impl NodeReader for KvTrieNodes {
    fn get_node(
        &self,
        owner: Option<&B256>,
        path: &[u8],
        hash: &B256,
    ) -> Result<Option<NodeRlp>, TrieError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        let (table, key) = trie_node_key(owner, path);
        Ok(checked_node(self.backend.get(table, &key)?, hash).map(NodeRlp::from))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::{Address, U256};
    use ethrex_bintrie::{BinaryTrie, MemoryStore, StateSpec};
    use ethrex_storage::DbKind;

    fn spec() -> StateSpec {
        let json = r#"{"accounts": [
            {"address": "0x1111111111111111111111111111111111111111", "nonce": 3,
             "balance": "0x1234", "code": "0x600160020160005500",
             "storage": {"0x1": "0x5", "0x100": "0x7"}},
            {"address": "0x2222222222222222222222222222222222222222", "balance": "0x1"}]}"#;
        StateSpec::from_json(json.as_bytes()).unwrap()
    }

    /// The same state on MDBX, RocksDB and in memory gives the memory store's root at
    /// every depth, and reopens from the backend after it was closed.
    #[test]
    fn binary_trie_on_the_backends_matches_the_memory_store() {
        let spec = spec();
        for depth in 1..=8u8 {
            let reference = {
                let store = MemoryStore::new();
                let mut trie = BinaryTrie::new(&store, depth).unwrap();
                spec.apply(&mut trie).unwrap();
                trie.commit().unwrap()
            };
            assert_eq!(reference, spec.root_in_two_commits(depth).unwrap());
            for backend in [DbKind::Mdbx, DbKind::Rocksdb, DbKind::Memory] {
                let dir = tempfile::tempdir().unwrap();
                let root = {
                    let store = KvNodeStore::new(backend.open_backend(Some(dir.path())).unwrap());
                    let mut trie = BinaryTrie::new(store, depth).unwrap();
                    spec.apply(&mut trie).unwrap();
                    trie.commit().unwrap()
                };
                assert_eq!(root, reference, "{} depth {depth}", backend.name());
                if backend == DbKind::Memory {
                    continue;
                }
                // Closed and reopened: everything is read back from the files.
                let store = KvNodeStore::new(backend.open_backend(Some(dir.path())).unwrap());
                let mut trie = BinaryTrie::open(store, root, depth).unwrap();
                let a = Address::repeat_byte(0x11);
                assert_eq!(trie.get_account(&a).unwrap().unwrap().nonce, 3);
                assert_eq!(
                    trie.get_storage(&a, U256::from(0x100)).unwrap(),
                    Some(B256::from(U256::from(7)))
                );
                assert!(trie.stats().nodes_loaded() > 0);
                trie.update_storage(&a, U256::from(0x100), B256::ZERO).unwrap();
                let changed = trie.commit().unwrap();
                assert_ne!(changed, root);
            }
        }
    }

    #[test]
    fn mpt_nodes_round_trip_through_the_backend() {
        let dir = tempfile::tempdir().unwrap();
        let nodes = KvTrieNodes::new(DbKind::Mdbx.open_backend(Some(dir.path())).unwrap());
        let updates = (0u64..100).map(|i| {
            (alloy_primitives::keccak256(i.to_be_bytes()), Some(alloy_rlp::encode(U256::from(i))))
        });
        let (root, new) =
            ethrex_trie::apply_updates(&nodes, ethrex_trie::EMPTY_ROOT_HASH, updates).unwrap();
        let reference = ethrex_trie::root_from_scratch((0u64..100).map(|i| {
            (alloy_primitives::keccak256(i.to_be_bytes()), alloy_rlp::encode(U256::from(i)))
        }));
        assert_eq!(root, reference);
        nodes.write(vec![new]).unwrap();
        let mut trie = ethrex_trie::Trie::new(&nodes, root);
        let key = alloy_primitives::keccak256(42u64.to_be_bytes());
        assert_eq!(trie.get(key.as_slice()).unwrap(), Some(alloy_rlp::encode(U256::from(42))));
    }
}
