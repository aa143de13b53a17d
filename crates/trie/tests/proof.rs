//! Merkle proofs checked by alloy-trie's verifier (an independent implementation of
//! EIP-1186 proof checking): for keys present and absent, in tries of many sizes with
//! short values (so that some nodes are embedded in their parents).

use alloy_primitives::{keccak256, B256};
use alloy_trie::{proof::verify_proof, Nibbles};
use ethrex_trie::{proof, Trie, EMPTY_ROOT_HASH};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::HashMap;

type Store = HashMap<B256, Vec<u8>>;

fn build(rng: &mut StdRng, n: usize) -> (Store, B256, Vec<(B256, Vec<u8>)>) {
    let mut store = Store::new();
    let mut trie = Trie::new(&store, EMPTY_ROOT_HASH);
    let mut entries = Vec::new();
    for _ in 0..n {
        let key = keccak256(rng.random::<[u8; 8]>());
        let len = rng.random_range(1..40);
        let value: Vec<u8> = (0..len).map(|_| rng.random_range(1..255)).collect();
        trie.insert(key.as_slice(), value.clone()).unwrap();
        entries.push((key, value));
    }
    let (root, updates) = trie.commit().unwrap();
    let mut filled = Store::new();
    for (hash, rlp) in updates.into_hashed() {
        filled.insert(hash, rlp);
    }
    store.extend(filled);
    (store, root, entries)
}

#[test]
fn proofs_of_present_keys_verify_with_their_values() {
    let mut rng = StdRng::seed_from_u64(7);
    for n in [1, 2, 3, 17, 100, 1000] {
        let (store, root, entries) = build(&mut rng, n);
        for (key, value) in entries.iter().take(50) {
            let nodes = proof(&store, None, root, key.as_slice()).unwrap();
            verify_proof(root, Nibbles::unpack(key), Some(value.clone()), &nodes)
                .unwrap_or_else(|e| panic!("n={n}: {e:?}"));
        }
    }
}

#[test]
fn proofs_of_absent_keys_verify_as_absent() {
    let mut rng = StdRng::seed_from_u64(8);
    for n in [1, 5, 300] {
        let (store, root, _) = build(&mut rng, n);
        for _ in 0..20 {
            let key = keccak256(rng.random::<[u8; 16]>());
            let nodes = proof(&store, None, root, key.as_slice()).unwrap();
            verify_proof(root, Nibbles::unpack(key), None, &nodes)
                .unwrap_or_else(|e| panic!("n={n}: {e:?}"));
        }
    }
}

#[test]
fn the_empty_trie_has_an_empty_proof() {
    let store = Store::new();
    assert!(proof(&store, None, EMPTY_ROOT_HASH, &[1u8; 32]).unwrap().is_empty());
}

#[test]
fn a_missing_node_is_an_error() {
    let mut rng = StdRng::seed_from_u64(9);
    let (_, root, entries) = build(&mut rng, 10);
    let empty = Store::new();
    assert!(proof(&empty, None, root, entries[0].0.as_slice()).is_err());
}
