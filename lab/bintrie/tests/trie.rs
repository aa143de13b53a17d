//! Group-depth independence, persistence, deletes and errors.

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use ethrex_bintrie::{
    AccountSpec, BinTrieError, BinaryTrie, MemoryStore, NodeBatch, NodeStore, StateSpec,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};

/// A random state with header and main slots, code up to two stems, empty accounts.
fn random_state(seed: u64, accounts: usize) -> StateSpec {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let accounts = (0..accounts)
        .map(|_| {
            let mut account = AccountSpec {
                address: Address::from(rng.random::<[u8; 20]>()),
                ..Default::default()
            };
            if rng.random_ratio(1, 10) {
                return account;
            }
            account.nonce = rng.random_range(0..1000);
            account.balance = U256::from(rng.random::<u64>());
            if rng.random_bool(0.5) {
                let len = rng.random_range(1..5000);
                account.code =
                    Bytes::from((0..len).map(|_| rng.random::<u8>()).collect::<Vec<_>>());
            }
            for _ in 0..rng.random_range(0..12) {
                let slot = if rng.random_bool(0.4) {
                    U256::from(rng.random_range(0..70))
                } else {
                    U256::from_be_bytes(rng.random::<[u8; 32]>())
                };
                let value = if rng.random_ratio(1, 10) {
                    U256::ZERO
                } else {
                    U256::from(rng.random::<u64>())
                };
                account.storage.insert(slot, value);
            }
            account
        })
        .collect();
    StateSpec { accounts }
}

fn built<'s>(spec: &StateSpec, store: &'s MemoryStore, depth: u8) -> BinaryTrie<&'s MemoryStore> {
    let mut trie = BinaryTrie::new(store, depth).unwrap();
    spec.apply(&mut trie).unwrap();
    trie
}

#[test]
fn root_does_not_depend_on_group_depth() {
    for seed in 0..4 {
        let spec = random_state(seed, 150);
        let reference = built(&spec, &MemoryStore::new(), 8).root_hash();
        for depth in 1..=8 {
            assert_eq!(
                spec.root_in_two_commits(depth).unwrap(),
                reference,
                "seed {seed} depth {depth}"
            );
            let store = MemoryStore::new();
            let mut trie = built(&spec, &store, depth);
            assert_eq!(trie.commit().unwrap(), reference);
            assert_eq!(BinaryTrie::open(&store, reference, depth).unwrap().root_hash(), reference);
        }
    }
}

#[test]
fn reopened_trie_reads_what_was_written() {
    let spec = random_state(7, 200);
    for depth in [1, 3, 8] {
        let store = MemoryStore::new();
        let root = built(&spec, &store, depth).commit().unwrap();
        let mut trie = BinaryTrie::open(&store, root, depth).unwrap();
        for account in &spec.accounts {
            let read = trie.get_account(&account.address).unwrap().unwrap();
            assert_eq!(read.nonce, account.nonce);
            assert_eq!(read.balance, account.balance);
            assert_eq!(read.code_size as usize, account.code.len());
            assert_eq!(read.code_hash, keccak256(&account.code));
            assert_eq!(trie.get_code(&account.address).unwrap().unwrap(), account.code.to_vec());
            for (slot, value) in &account.storage {
                assert_eq!(
                    trie.get_storage(&account.address, *slot).unwrap(),
                    Some((*value).into())
                );
            }
            assert_eq!(
                trie.get_storage(&account.address, U256::MAX - U256::from(1)).unwrap(),
                None
            );
        }
        assert_eq!(trie.get_account(&Address::repeat_byte(0xee)).unwrap(), None);
        assert_eq!(trie.root_hash(), root);
        assert!(trie.stats().nodes_loaded() > 0);
        assert_eq!(trie.stats().nodes_written(), 0);
    }
}

/// Random keys sharing long prefixes, written over several commits (stems pushed deeper
/// after they were stored), end in exactly the store a single commit of the final
/// key-value set writes: no blob is left behind.
#[test]
fn incremental_commits_leave_the_store_a_fresh_build_writes() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for depth in 1..=8 {
        let store = MemoryStore::new();
        let mut root = B256::ZERO;
        let mut all = BTreeMap::new();
        let mut deleted = 0;
        for _round in 0..6 {
            let mut trie = BinaryTrie::open(&store, root, depth).unwrap();
            for _ in 0..rng.random_range(1..40) {
                // Few distinct leading bits so stems collide deep in the tree.
                let mut key: [u8; 32] = rng.random();
                key[0] &= 0x83;
                key[1] = if rng.random_bool(0.7) { 0 } else { key[1] };
                let (key, value) = (B256::from(key), B256::from(rng.random::<[u8; 32]>()));
                trie.insert(&key, value).unwrap();
                all.insert(key, value);
            }
            root = trie.commit().unwrap();
            deleted += trie.stats().nodes_deleted;
        }
        // With one level per group every path is a group boundary: a new group
        // reoccupies the key of every stem moved deeper.
        assert_eq!(deleted > 0, depth > 1, "depth {depth}: {deleted} blobs deleted");
        let fresh = MemoryStore::new();
        let mut trie = BinaryTrie::new(&fresh, depth).unwrap();
        for (key, value) in &all {
            trie.insert(key, *value).unwrap();
        }
        assert_eq!(trie.commit().unwrap(), root, "depth {depth}");
        assert_eq!(store.entries(), fresh.entries(), "depth {depth}");
        let mut reopened = BinaryTrie::open(&store, root, depth).unwrap();
        for (key, value) in &all {
            assert_eq!(reopened.get(key).unwrap(), Some(*value));
        }
    }
}

#[test]
fn deletes_write_zero() {
    let store = MemoryStore::new();
    let mut trie = BinaryTrie::new(&store, 4).unwrap();
    let address = Address::repeat_byte(0x11);
    let (header, main) = (U256::from(3), U256::from(1000));
    trie.update_account(&address, 5, U256::from(9), 0, keccak256([])).unwrap();
    trie.update_storage(&address, header, B256::repeat_byte(1)).unwrap();
    trie.update_storage(&address, main, B256::repeat_byte(2)).unwrap();
    let before = trie.root_hash();

    trie.delete_storage(&address, main).unwrap();
    assert_eq!(trie.get_storage(&address, main).unwrap(), Some(B256::ZERO));
    assert_ne!(trie.root_hash(), before);
    trie.update_storage(&address, main, B256::repeat_byte(2)).unwrap();
    assert_eq!(trie.root_hash(), before, "rewriting the value restores the root");

    trie.delete_account(&address).unwrap();
    assert_eq!(trie.get_account(&address).unwrap(), None);
    // Storage survives an account deletion, as in geth.
    assert_eq!(trie.get_storage(&address, header).unwrap(), Some(B256::repeat_byte(1)));
    let root = trie.commit().unwrap();

    let mut trie = BinaryTrie::open(&store, root, 4).unwrap();
    assert_eq!(trie.get_account(&address).unwrap(), None);
    trie.update_account(&address, 1, U256::ZERO, 0, keccak256([])).unwrap();
    assert_eq!(trie.get_account(&address).unwrap().unwrap().nonce, 1);

    // Never written and deleted differ.
    let mut never = BinaryTrie::new(MemoryStore::new(), 4).unwrap();
    let mut deleted = BinaryTrie::new(MemoryStore::new(), 4).unwrap();
    deleted.delete(&B256::repeat_byte(5)).unwrap();
    assert_ne!(never.root_hash(), deleted.root_hash());
    assert_eq!(deleted.get(&B256::repeat_byte(5)).unwrap(), Some(B256::ZERO));
}

#[test]
fn shorter_code_leaves_old_chunks_like_geth() {
    let address = Address::repeat_byte(0x22);
    let mut trie = BinaryTrie::new(MemoryStore::new(), 8).unwrap();
    trie.update_code(&address, &[0x5b; 100]).unwrap();
    trie.update_code(&address, &[0x00; 10]).unwrap();
    let mut expected = BinaryTrie::new(MemoryStore::new(), 8).unwrap();
    // The new code's one chunk replaces chunk 0 whole (zero-padded); chunks 1..3 stay.
    let mut code = vec![0x5b; 100];
    code[..31].fill(0);
    expected.update_code(&address, &code).unwrap();
    assert_eq!(trie.root_hash(), expected.root_hash());
}

#[test]
fn bad_group_depths_are_refused() {
    for depth in [0, 9, 255] {
        assert!(matches!(
            BinaryTrie::new(MemoryStore::new(), depth),
            Err(BinTrieError::InvalidGroupDepth(d)) if d == depth
        ));
    }
    let spec = random_state(1, 20);
    let store = MemoryStore::new();
    let root = built(&spec, &store, 4).commit().unwrap();
    assert!(matches!(
        BinaryTrie::open(&store, root, 5),
        Err(BinTrieError::GroupDepthMismatch { expected: 5, found: 4, .. })
    ));
}

#[test]
fn missing_and_corrupt_nodes_are_errors() {
    let missing = BinaryTrie::open(MemoryStore::new(), B256::repeat_byte(1), 8);
    assert!(matches!(missing, Err(BinTrieError::MissingNode { .. })));

    let spec = random_state(2, 50);
    let store = MemoryStore::new();
    let root = built(&spec, &store, 2).commit().unwrap();
    // Truncate every non-root blob: the first load below the root fails cleanly.
    let broken = MemoryStore::new();
    let puts = store
        .entries()
        .into_iter()
        .map(|(key, blob)| {
            let keep = if key == [0] { blob.len() } else { blob.len() - 1 };
            (key, blob[..keep].to_vec())
        })
        .collect();
    broken.write(NodeBatch { puts, deletes: vec![] }).unwrap();
    let mut trie = BinaryTrie::open(&broken, root, 2).unwrap();
    let address = spec.accounts[0].address;
    assert!(matches!(trie.get_account(&address), Err(BinTrieError::CorruptNode { .. })));
}

#[test]
fn group_depth_trades_loads_for_blob_size() {
    let spec = random_state(4, 300);
    let mut loads = Vec::new();
    for depth in [1, 8] {
        let store = MemoryStore::new();
        let root = built(&spec, &store, depth).commit().unwrap();
        let mut trie = BinaryTrie::open(&store, root, depth).unwrap();
        trie.reset_stats();
        trie.get_account(&spec.accounts[0].address).unwrap();
        loads.push(trie.stats().nodes_loaded());
    }
    assert!(loads[0] > loads[1], "depth 1 loads {} nodes, depth 8 {}", loads[0], loads[1]);
}

/// A store whose writes fail while `fail` is set.
#[derive(Default)]
struct FlakyStore {
    inner: MemoryStore,
    fail: AtomicBool,
}

#[derive(Debug, thiserror::Error)]
#[error("write refused")]
struct Refused;

impl NodeStore for FlakyStore {
    type Error = Refused;

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, Refused> {
        Ok(self.inner.get(key).unwrap())
    }

    fn write(&self, batch: NodeBatch) -> Result<(), Refused> {
        if self.fail.load(Ordering::Relaxed) {
            return Err(Refused);
        }
        self.inner.write(batch).unwrap();
        Ok(())
    }
}

#[test]
fn failed_commit_is_retried_whole() {
    let spec = random_state(5, 60);
    let (first, second) = spec.accounts.split_at(30);
    let store = FlakyStore::default();
    let mut trie = BinaryTrie::new(&store, 3).unwrap();
    first.iter().try_for_each(|account| account.apply(&mut trie)).unwrap();
    let root = trie.commit().unwrap();
    let mut trie = BinaryTrie::open(&store, root, 3).unwrap();
    second.iter().try_for_each(|account| account.apply(&mut trie)).unwrap();
    store.fail.store(true, Ordering::Relaxed);
    assert!(matches!(trie.commit(), Err(BinTrieError::Store(_))));
    store.fail.store(false, Ordering::Relaxed);
    let root = trie.commit().unwrap();

    let fresh = MemoryStore::new();
    assert_eq!(built(&spec, &fresh, 3).commit().unwrap(), root);
    let ours: HashMap<_, _> = store.inner.entries().into_iter().collect();
    let theirs: HashMap<_, _> = fresh.entries().into_iter().collect();
    assert_eq!(ours, theirs);
}

#[test]
fn bad_json_is_an_error() {
    assert!(StateSpec::from_json(b"{").is_err());
    assert!(StateSpec::from_json(br#"{"accounts":[{"address":"0x12"}]}"#).is_err());
    assert!(StateSpec::from_json(br#"{"accounts":[{"address":"0x1111111111111111111111111111111111111111","balance":"0xzz"}]}"#).is_err());
    let spec = random_state(6, 5);
    assert_eq!(StateSpec::from_json(spec.to_json().unwrap().as_bytes()).unwrap(), spec);
}
