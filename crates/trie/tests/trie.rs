//! The trie against independent references: known vectors, random key sets checked
//! against `alloy_trie::HashBuilder` and a naive recursive root, incremental and batched
//! updates and deletions over a persistent store, commit contents, and missing, corrupt
//! or failing store reads reported as errors.

use alloy_primitives::{b256, keccak256, B256};
use alloy_rlp::{Encodable, Header};
use ethrex_trie::{
    apply_updates, root_from_scratch, NodeReader, PathStore, Trie, TrieError, TrieUpdates,
    EMPTY_ROOT_HASH,
};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap};

type Store = HashMap<B256, Vec<u8>>;

fn random_key(rng: &mut StdRng) -> B256 {
    B256::from(rng.random::<[u8; 32]>())
}

fn random_value(rng: &mut StdRng) -> Vec<u8> {
    // Mix single bytes (< 0x80 encode as themselves), short and long values.
    let len = match rng.random_range(0..4) {
        0 => 1,
        1 => rng.random_range(1..8),
        2 => rng.random_range(8..40),
        _ => rng.random_range(40..120),
    };
    (0..len).map(|_| rng.random()).collect()
}

fn store_nodes(store: &mut Store, nodes: TrieUpdates) {
    for (hash, rlp) in nodes.into_hashed() {
        assert_eq!(keccak256(&rlp), hash, "emitted node is not content-addressed");
        store.insert(hash, rlp);
    }
}

// ---- independent reference for arbitrary (variable-length) keys ----------

fn unpack(bytes: &[u8]) -> Vec<u8> {
    bytes.iter().flat_map(|b| [b >> 4, b & 0xf]).collect()
}

fn hex_prefix(nibbles: &[u8], leaf: bool) -> Vec<u8> {
    let mut flag = if leaf { 0x20 } else { 0 };
    let mut out = Vec::new();
    let rest = if nibbles.len() % 2 == 1 {
        flag |= 0x10;
        out.push(flag | nibbles[0]);
        &nibbles[1..]
    } else {
        out.push(flag);
        nibbles
    };
    out.extend(rest.chunks(2).map(|p| (p[0] << 4) | p[1]));
    out
}

fn rlp_list(items: &[Vec<u8>]) -> Vec<u8> {
    let payload: usize = items.iter().map(Vec::len).sum();
    let mut out = Vec::new();
    Header { list: true, payload_length: payload }.encode(&mut out);
    for item in items {
        out.extend_from_slice(item);
    }
    out
}

fn rlp_bytes(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    b.encode(&mut out);
    out
}

fn reference(rlp: Vec<u8>) -> Vec<u8> {
    if rlp.len() < 32 {
        rlp
    } else {
        rlp_bytes(keccak256(&rlp).as_slice())
    }
}

/// Straightforward recursive construction following the yellow paper.
fn naive_node(entries: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
    if entries.len() == 1 {
        let (path, value) = &entries[0];
        return rlp_list(&[rlp_bytes(&hex_prefix(path, true)), rlp_bytes(value)]);
    }
    let first = &entries[0].0;
    let last = &entries[entries.len() - 1].0;
    let cp = first.iter().zip(last).take_while(|(a, b)| a == b).count();
    if cp > 0 {
        let sub: Vec<_> = entries.iter().map(|(p, v)| (p[cp..].to_vec(), v.clone())).collect();
        return rlp_list(&[
            rlp_bytes(&hex_prefix(&first[..cp], false)),
            reference(naive_node(&sub)),
        ]);
    }
    let mut items = Vec::new();
    for nibble in 0..16u8 {
        let sub: Vec<_> = entries
            .iter()
            .filter(|(p, _)| p.first() == Some(&nibble))
            .map(|(p, v)| (p[1..].to_vec(), v.clone()))
            .collect();
        items.push(if sub.is_empty() { vec![0x80] } else { reference(naive_node(&sub)) });
    }
    let value = entries.iter().find(|(p, _)| p.is_empty()).map(|(_, v)| v.clone());
    items.push(rlp_bytes(value.as_deref().unwrap_or(&[])));
    rlp_list(&items)
}

fn naive_root(map: &BTreeMap<Vec<u8>, Vec<u8>>) -> B256 {
    if map.is_empty() {
        return EMPTY_ROOT_HASH;
    }
    let entries: Vec<_> = map.iter().map(|(k, v)| (unpack(k), v.clone())).collect();
    keccak256(naive_node(&entries))
}

// ---- known vectors --------------------------------------------------------

#[test]
fn known_vector_dogglesworth() {
    let store = Store::new();
    let mut trie = Trie::new(&store, EMPTY_ROOT_HASH);
    trie.insert(b"doe", b"reindeer".to_vec()).unwrap();
    trie.insert(b"dog", b"puppy".to_vec()).unwrap();
    trie.insert(b"dogglesworth", b"cat".to_vec()).unwrap();
    let expected = b256!("8aad789dff2f538bca5d8ea56e8abe10f4c7ba3a5dea95fea4cd6e7c3a1168d3");
    assert_eq!(trie.root_hash().unwrap(), expected);
    assert_eq!(trie.get(b"dog").unwrap(), Some(b"puppy".to_vec()));
    assert_eq!(trie.get(b"do").unwrap(), None);
    assert_eq!(trie.get(b"dogg").unwrap(), None);

    let (root, nodes) = trie.commit().unwrap();
    assert_eq!(root, expected);
    let mut store = Store::new();
    store_nodes(&mut store, nodes);
    let mut trie = Trie::new(&store, root);
    assert_eq!(trie.get(b"doe").unwrap(), Some(b"reindeer".to_vec()));
    assert_eq!(trie.get(b"dogglesworth").unwrap(), Some(b"cat".to_vec()));
}

#[test]
fn known_vector_puppy_any_order() {
    let entries: [(&[u8], &[u8]); 4] =
        [(b"do", b"verb"), (b"horse", b"stallion"), (b"doge", b"coin"), (b"dog", b"puppy")];
    let expected = b256!("5991bb8c6514148a29db676a14ac506cd2cd5775ace63c30a4fe457715e9ac84");
    let mut rng = StdRng::seed_from_u64(7);
    for _ in 0..10 {
        let mut order = entries.to_vec();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.random_range(0..=i));
        }
        let store = Store::new();
        let mut trie = Trie::new(&store, EMPTY_ROOT_HASH);
        for (k, v) in &order {
            trie.insert(k, v.to_vec()).unwrap();
        }
        assert_eq!(trie.root_hash().unwrap(), expected);
    }
    let map: BTreeMap<_, _> = entries.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
    assert_eq!(naive_root(&map), expected);
}

#[test]
fn empty_trie() {
    let store = Store::new();
    let mut trie = Trie::new(&store, EMPTY_ROOT_HASH);
    assert_eq!(trie.get(&[1, 2, 3]).unwrap(), None);
    trie.remove(&[1, 2, 3]).unwrap();
    assert_eq!(trie.root_hash().unwrap(), EMPTY_ROOT_HASH);
    let (root, nodes) = trie.commit().unwrap();
    assert_eq!(root, EMPTY_ROOT_HASH);
    assert!(nodes.is_empty());
    assert_eq!(root_from_scratch(Vec::new()), EMPTY_ROOT_HASH);
}

// ---- random data against alloy's HashBuilder ------------------------------

#[test]
fn random_hashed_keys_match_hash_builder() {
    for seed in 1..=20u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let n = [1, 2, 3, 17, 100, 500, 1000, 3000][seed as usize % 8];
        let entries: Vec<(B256, Vec<u8>)> =
            (0..n).map(|_| (random_key(&mut rng), random_value(&mut rng))).collect();
        let expected = root_from_scratch(entries.clone());

        let store = Store::new();
        let mut trie = Trie::new(&store, EMPTY_ROOT_HASH);
        for (k, v) in &entries {
            trie.insert(k.as_slice(), v.clone()).unwrap();
        }
        assert_eq!(trie.root_hash().unwrap(), expected, "seed {seed}");
        for (k, v) in entries.iter().take(200) {
            assert_eq!(trie.get(k.as_slice()).unwrap().as_ref(), Some(v));
        }

        let updates = entries.iter().map(|(k, v)| (*k, Some(v.clone())));
        let (root, _) = apply_updates(&store, EMPTY_ROOT_HASH, updates).unwrap();
        assert_eq!(root, expected, "seed {seed} (batch)");
    }
}

/// Fixed-length short keys drawn from a tiny alphabet share long prefixes,
/// exercising extension splits and merges; HashBuilder handles any
/// prefix-free key set, so it is still a valid reference.
#[test]
fn random_short_keys_match_hash_builder() {
    for seed in 1..=20u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let key_len = 1 + seed as usize % 4;
        let alphabet = [0x00u8, 0x01, 0x10, 0x11, 0xff];
        let mut model = BTreeMap::new();
        let store = Store::new();
        let mut trie = Trie::new(&store, EMPTY_ROOT_HASH);
        for _ in 0..400 {
            let key: Vec<u8> =
                (0..key_len).map(|_| alphabet[rng.random_range(0..alphabet.len())]).collect();
            if rng.random_bool(0.25) {
                model.remove(&key);
                trie.remove(&key).unwrap();
            } else {
                let value = random_value(&mut rng);
                model.insert(key.clone(), value.clone());
                trie.insert(&key, value).unwrap();
            }
        }
        let mut builder = alloy_trie::HashBuilder::default();
        for (k, v) in &model {
            builder.add_leaf(alloy_trie::Nibbles::unpack(k), v);
        }
        assert_eq!(trie.root_hash().unwrap(), builder.root(), "seed {seed}");
        assert_eq!(trie.root_hash().unwrap(), naive_root(&model), "seed {seed}");
    }
}

/// Variable-length keys where some keys are prefixes of others, so values
/// also sit in branch nodes (as in transaction/receipt tries).
#[test]
fn random_prefix_keys_match_naive_reference() {
    for seed in 1..=20u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let alphabet = [0x00u8, 0x01, 0x10, 0x80, 0xff];
        let mut model = BTreeMap::new();
        let mut store = Store::new();
        let mut root = EMPTY_ROOT_HASH;
        for round in 0..5 {
            let mut trie = Trie::new(&store, root);
            for _ in 0..150 {
                let len = rng.random_range(0..5);
                let key: Vec<u8> =
                    (0..len).map(|_| alphabet[rng.random_range(0..alphabet.len())]).collect();
                if rng.random_bool(0.3) {
                    model.remove(&key);
                    trie.remove(&key).unwrap();
                } else {
                    let value = random_value(&mut rng);
                    model.insert(key.clone(), value.clone());
                    trie.insert(&key, value).unwrap();
                }
            }
            let (new_root, nodes) = trie.commit().unwrap();
            assert_eq!(new_root, naive_root(&model), "seed {seed} round {round}");
            store_nodes(&mut store, nodes);
            root = new_root;
            let mut trie = Trie::new(&store, root);
            for (k, v) in &model {
                assert_eq!(trie.get(k).unwrap().as_ref(), Some(v), "seed {seed} round {round}");
            }
        }
    }
}

// ---- incremental updates over a persistent store -------------------------

#[test]
fn incremental_rounds_match_from_scratch() {
    for seed in 1..=12u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut model: BTreeMap<B256, Vec<u8>> = BTreeMap::new();
        let mut store = Store::new();
        let initial = [10, 300, 2000][seed as usize % 3];
        let updates: Vec<_> = (0..initial)
            .map(|_| {
                let (k, v) = (random_key(&mut rng), random_value(&mut rng));
                model.insert(k, v.clone());
                (k, Some(v))
            })
            .collect();
        let (mut root, nodes) = apply_updates(&store, EMPTY_ROOT_HASH, updates).unwrap();
        store_nodes(&mut store, nodes);
        assert_eq!(root, root_from_scratch(model.clone()));

        for round in 0..8 {
            let keys: Vec<B256> = model.keys().copied().collect();
            let ops = rng.random_range(1..400);
            let mut batch = Vec::new();
            for _ in 0..ops {
                let action = rng.random_range(0..10);
                if action < 3 && !keys.is_empty() {
                    let k = keys[rng.random_range(0..keys.len())];
                    model.remove(&k);
                    batch.push((k, None));
                } else if action < 6 && !keys.is_empty() {
                    let k = keys[rng.random_range(0..keys.len())];
                    let v = random_value(&mut rng);
                    model.insert(k, v.clone());
                    batch.push((k, Some(v)));
                } else if action < 7 {
                    // Deleting an absent key must change nothing.
                    let k = random_key(&mut rng);
                    if !model.contains_key(&k) {
                        batch.push((k, None));
                    }
                } else {
                    let (k, v) = (random_key(&mut rng), random_value(&mut rng));
                    model.insert(k, v.clone());
                    batch.push((k, Some(v)));
                }
            }
            let (new_root, nodes) = if round % 2 == 0 {
                apply_updates(&store, root, batch).unwrap()
            } else {
                let mut trie = Trie::new(&store, root);
                for (k, v) in batch {
                    match v {
                        Some(v) => trie.insert(k.as_slice(), v).unwrap(),
                        None => trie.remove(k.as_slice()).unwrap(),
                    }
                }
                trie.commit().unwrap()
            };
            store_nodes(&mut store, nodes);
            root = new_root;
            assert_eq!(root, root_from_scratch(model.clone()), "seed {seed} round {round}");

            let mut trie = Trie::new(&store, root);
            for (k, v) in model.iter().take(300) {
                assert_eq!(trie.get(k.as_slice()).unwrap().as_ref(), Some(v));
            }
            for _ in 0..20 {
                let k = random_key(&mut rng);
                assert_eq!(trie.get(k.as_slice()).unwrap(), None);
            }
        }
    }
}

#[test]
fn batch_and_sequential_produce_identical_nodes() {
    let mut rng = StdRng::seed_from_u64(99);
    let mut store = Store::new();
    let base: Vec<_> =
        (0..3000).map(|_| (random_key(&mut rng), Some(random_value(&mut rng)))).collect();
    let (root, nodes) = apply_updates(&store, EMPTY_ROOT_HASH, base.clone()).unwrap();
    store_nodes(&mut store, nodes);

    let mut batch: Vec<(B256, Option<Vec<u8>>)> = Vec::new();
    for (i, (k, _)) in base.iter().enumerate().take(1500) {
        batch.push((*k, if i % 3 == 0 { None } else { Some(random_value(&mut rng)) }));
    }
    for _ in 0..500 {
        batch.push((random_key(&mut rng), Some(random_value(&mut rng))));
    }
    let (r1, n1) = apply_updates(&store, root, batch.clone()).unwrap();
    let mut trie = Trie::new(&store, root);
    for (k, v) in batch {
        trie.insert(k.as_slice(), v.unwrap_or_default()).unwrap();
    }
    let (r2, n2) = trie.commit().unwrap();
    assert_eq!(r1, r2);
    // Either order may rebuild a node identical to one already stored (e.g. a
    // leaf merged up by a delete and split back down by a later insert);
    // writing it again is harmless. Everything else must match exactly.
    let fresh = |nodes: TrieUpdates| -> BTreeMap<B256, Vec<u8>> {
        nodes.into_hashed().filter(|(h, _)| !store.contains_key(h)).collect()
    };
    let (f1, f2) = (fresh(n1), fresh(n2));
    assert!(
        f1 == f2,
        "batch and sequential commits differ ({} vs {} fresh nodes)",
        f1.len(),
        f2.len()
    );
}

#[test]
fn batch_duplicates_last_wins() {
    let store = Store::new();
    let k = B256::repeat_byte(1);
    let j = B256::repeat_byte(2);
    let updates = vec![
        (k, Some(vec![1])),
        (j, Some(vec![5])),
        (k, Some(vec![2])),
        (j, None),
        (k, Some(vec![3])),
    ];
    let (root, _) = apply_updates(&store, EMPTY_ROOT_HASH, updates).unwrap();
    assert_eq!(root, root_from_scratch([(k, vec![3])]));
    let (root, _) =
        apply_updates(&store, EMPTY_ROOT_HASH, [(k, Some(vec![1])), (k, Some(vec![]))]).unwrap();
    assert_eq!(root, EMPTY_ROOT_HASH);
}

// ---- deletion ---------------------------------------------------------------

#[test]
fn delete_everything_gives_empty_root() {
    for seed in 1..=10u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let n = [1, 2, 5, 50, 700][seed as usize % 5];
        let entries: Vec<_> =
            (0..n).map(|_| (random_key(&mut rng), random_value(&mut rng))).collect();

        // Within one in-memory trie.
        let store = Store::new();
        let mut trie = Trie::new(&store, EMPTY_ROOT_HASH);
        for (k, v) in &entries {
            trie.insert(k.as_slice(), v.clone()).unwrap();
        }
        trie.root_hash().unwrap();
        for (k, _) in entries.iter().rev() {
            trie.remove(k.as_slice()).unwrap();
        }
        assert_eq!(trie.root_hash().unwrap(), EMPTY_ROOT_HASH);

        // Across a commit, deleting in random order and checking each step.
        let mut store = Store::new();
        let (root, nodes) = apply_updates(
            &store,
            EMPTY_ROOT_HASH,
            entries.iter().map(|(k, v)| (*k, Some(v.clone()))),
        )
        .unwrap();
        store_nodes(&mut store, nodes);
        let mut model: BTreeMap<B256, Vec<u8>> = entries.iter().cloned().collect();
        let mut trie = Trie::new(&store, root);
        let mut keys: Vec<B256> = model.keys().copied().collect();
        for i in (1..keys.len()).rev() {
            keys.swap(i, rng.random_range(0..=i));
        }
        for (i, k) in keys.iter().enumerate() {
            trie.remove(k.as_slice()).unwrap();
            model.remove(k);
            if i % 37 == 0 || model.len() < 3 {
                assert_eq!(trie.root_hash().unwrap(), root_from_scratch(model.clone()));
            }
        }
        let (root, nodes) = trie.commit().unwrap();
        assert_eq!(root, EMPTY_ROOT_HASH);
        assert!(nodes.nodes.is_empty());
        assert!(nodes.removed.contains(&Vec::new()), "an emptied trie deletes its root");

        let (root, _) = apply_updates(
            &store,
            root_from_scratch(entries.clone()),
            keys.iter().map(|k| (*k, None)),
        )
        .unwrap();
        assert_eq!(root, EMPTY_ROOT_HASH);
    }
}

#[test]
fn delete_collapses_into_extension_and_leaf() {
    // Two keys sharing a long prefix under an extension: removing one must
    // merge extension + branch + leaf back into a single leaf.
    let store = Store::new();
    let mut trie = Trie::new(&store, EMPTY_ROOT_HASH);
    trie.insert(&[0x12, 0x34, 0x56], b"a".to_vec()).unwrap();
    let single = trie.root_hash().unwrap();
    trie.insert(&[0x12, 0x34, 0x57], b"b".to_vec()).unwrap();
    trie.insert(&[0x12], b"c".to_vec()).unwrap();
    trie.insert(&[0x99], vec![0xaa; 50]).unwrap();
    trie.remove(&[0x99]).unwrap();
    trie.remove(&[0x12]).unwrap();
    trie.remove(&[0x12, 0x34, 0x57]).unwrap();
    assert_eq!(trie.root_hash().unwrap(), single);
    assert_eq!(trie.get(&[0x12, 0x34, 0x56]).unwrap(), Some(b"a".to_vec()));
}

// ---- commit contents ------------------------------------------------------------

#[test]
fn commit_emits_only_new_nodes() {
    let mut rng = StdRng::seed_from_u64(5);
    let entries: Vec<_> =
        (0..1000).map(|_| (random_key(&mut rng), random_value(&mut rng))).collect();
    let mut store = Store::new();
    let mut trie = Trie::new(&store, EMPTY_ROOT_HASH);
    for (k, v) in &entries {
        trie.insert(k.as_slice(), v.clone()).unwrap();
    }
    let hashed = trie.root_hash().unwrap();
    let (root, nodes) = trie.commit().unwrap();
    assert_eq!(root, hashed);
    let count = nodes.nodes.len();
    store_nodes(&mut store, nodes);
    assert_eq!(store.len(), count, "duplicate nodes in one commit");

    // Untouched, read-only, and no-op writes emit nothing.
    let (r, nodes) = Trie::new(&store, root).commit().unwrap();
    assert_eq!((r, nodes.nodes.len()), (root, 0));
    let mut trie = Trie::new(&store, root);
    for (k, v) in entries.iter().take(100) {
        assert_eq!(trie.get(k.as_slice()).unwrap().as_ref(), Some(v));
        trie.insert(k.as_slice(), v.clone()).unwrap();
        trie.remove(random_key(&mut rng).as_slice()).unwrap();
    }
    assert_eq!(trie.root_hash().unwrap(), root);
    let (r, nodes) = trie.commit().unwrap();
    assert_eq!((r, nodes.nodes.len()), (root, 0));

    // One update rewrites only its path: every emitted node is new.
    let mut trie = Trie::new(&store, root);
    trie.insert(entries[0].0.as_slice(), b"changed".to_vec()).unwrap();
    let (r, nodes) = trie.commit().unwrap();
    assert_ne!(r, root);
    let nodes = nodes.nodes;
    assert!(!nodes.is_empty() && nodes.len() <= 6, "emitted {} nodes", nodes.len());
    assert_eq!(nodes.iter().filter(|n| n.hash == r).count(), 1, "root emitted once");
    for n in &nodes {
        assert!(!store.contains_key(&n.hash));
    }
}

#[test]
fn short_root_is_stored_and_reopens() {
    let mut store = Store::new();
    let mut trie = Trie::new(&store, EMPTY_ROOT_HASH);
    trie.insert(&[1], vec![2]).unwrap();
    let (root, nodes) = trie.commit().unwrap();
    assert_eq!(nodes.nodes.len(), 1);
    assert!(nodes.nodes[0].rlp.len() < 32);
    assert_eq!(nodes.nodes[0].hash, root);
    store_nodes(&mut store, nodes);

    let mut trie = Trie::new(&store, root);
    assert_eq!(trie.get(&[1]).unwrap(), Some(vec![2]));
    trie.insert(&[2], vec![3]).unwrap();
    let (root2, nodes) = trie.commit().unwrap();
    store_nodes(&mut store, nodes);
    let mut trie = Trie::new(&store, root2);
    assert_eq!(trie.get(&[1]).unwrap(), Some(vec![2]));
    trie.remove(&[2]).unwrap();
    assert_eq!(trie.root_hash().unwrap(), root);
}

// ---- bad store contents -----------------------------------------------------------

fn committed_trie(seed: u64, n: usize) -> (Store, B256, Vec<B256>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let entries: Vec<_> =
        (0..n).map(|_| (random_key(&mut rng), Some(random_value(&mut rng)))).collect();
    let mut store = Store::new();
    let (root, nodes) = apply_updates(&store, EMPTY_ROOT_HASH, entries.clone()).unwrap();
    store_nodes(&mut store, nodes);
    (store, root, entries.into_iter().map(|(k, _)| k).collect())
}

#[test]
fn missing_nodes_are_reported() {
    let store = Store::new();
    let root = B256::repeat_byte(0x42);
    let mut trie = Trie::new(&store, root);
    assert!(matches!(trie.get(&[1]), Err(TrieError::MissingNode(h)) if h == root));
    assert!(matches!(trie.insert(&[1], vec![1]), Err(TrieError::MissingNode(h)) if h == root));
    assert!(matches!(
        apply_updates(&store, root, [(B256::ZERO, None)]),
        Err(TrieError::MissingNode(h)) if h == root
    ));

    let (full, root, keys) = committed_trie(3, 500);
    for victim in full.keys().filter(|h| **h != root).take(40) {
        let mut store = full.clone();
        store.remove(victim);
        let mut trie = Trie::new(&store, root);
        let mut hit = false;
        for k in &keys {
            match trie.get(k.as_slice()) {
                Ok(_) => {}
                Err(TrieError::MissingNode(h)) => {
                    assert_eq!(h, *victim);
                    hit = true;
                }
                Err(e) => panic!("unexpected error {e}"),
            }
        }
        assert!(hit, "no lookup reached the removed node");
        // Deleting keys forces sibling loads on collapse; must fail cleanly.
        let res = apply_updates(&store, root, keys.iter().map(|k| (*k, None)));
        assert!(matches!(res, Err(TrieError::MissingNode(h)) if h == *victim));
    }
}

#[test]
fn corrupt_nodes_are_reported_without_panicking() {
    let (full, root, keys) = committed_trie(4, 300);
    let mut rng = StdRng::seed_from_u64(11);
    let garbage_for = |rng: &mut StdRng, orig: &[u8]| -> Vec<u8> {
        match rng.random_range(0..5) {
            0 => vec![],
            1 => orig[..orig.len() / 2].to_vec(),
            2 => (0..rng.random_range(1..80)).map(|_| rng.random()).collect(),
            3 => {
                let mut v = orig.to_vec();
                let i = rng.random_range(0..v.len());
                v[i] ^= 0xff;
                v
            }
            _ => rlp_list(&[rlp_bytes(&[0x40]), rlp_bytes(b"x")]),
        }
    };
    let mut corrupt_seen = 0;
    for (victim, orig) in full.iter().take(60) {
        for _ in 0..3 {
            let mut store = full.clone();
            store.insert(*victim, garbage_for(&mut rng, orig));
            let mut trie = Trie::new(&store, root);
            for k in &keys {
                if let Err(TrieError::CorruptNode { hash, .. }) = trie.get(k.as_slice()) {
                    assert_eq!(hash, *victim);
                    corrupt_seen += 1;
                }
            }
            // Whatever the damage, updates and commits return rather than panic.
            let mut trie = Trie::new(&store, root);
            for k in keys.iter().take(100) {
                let _ = trie.remove(k.as_slice());
                let _ = trie.insert(&k[..3], vec![1]);
            }
            let _ = trie.commit();
        }
    }
    assert!(corrupt_seen > 0);

    let mut store = Store::new();
    let bad = B256::repeat_byte(9);
    store.insert(bad, vec![0xde, 0xad, 0xbe, 0xef]);
    assert!(matches!(
        Trie::new(&store, bad).get(&[0]),
        Err(TrieError::CorruptNode { hash, .. }) if hash == bad
    ));
}

#[test]
fn store_errors_propagate() {
    struct Failing;
    impl NodeReader for Failing {
        fn get_node(
            &self,
            _: Option<&B256>,
            _: &[u8],
            _: &B256,
        ) -> Result<Option<ethrex_trie::NodeRlp>, TrieError> {
            Err(TrieError::Store("disk on fire".into()))
        }
    }
    let mut trie = Trie::new(&Failing, B256::repeat_byte(1));
    assert!(matches!(trie.get(&[0]), Err(TrieError::Store(_))));
}

/// Rough throughput check for the block-import pattern; run with
/// `cargo test --release -p ethrex-trie -- --ignored --nocapture`.
#[test]
#[ignore]
fn perf_block_sized_updates() {
    let mut rng = StdRng::seed_from_u64(1);
    let mut store = Store::new();
    let base: Vec<_> =
        (0..200_000).map(|_| (random_key(&mut rng), Some(random_value(&mut rng)))).collect();
    let t = std::time::Instant::now();
    let (mut root, nodes) = apply_updates(&store, EMPTY_ROOT_HASH, base.clone()).unwrap();
    println!("build 200k: {:?}", t.elapsed());
    store_nodes(&mut store, nodes);
    for _ in 0..5 {
        let batch: Vec<_> = (0..5000)
            .map(|i| {
                if i % 2 == 0 {
                    (base[rng.random_range(0..base.len())].0, Some(random_value(&mut rng)))
                } else {
                    (random_key(&mut rng), Some(random_value(&mut rng)))
                }
            })
            .collect();
        let t = std::time::Instant::now();
        let (r, nodes) = apply_updates(&store, root, batch).unwrap();
        println!("5000 updates: {:?}, {} new nodes", t.elapsed(), nodes.nodes.len());
        store_nodes(&mut store, nodes);
        root = r;
    }
}

/// Keys sharing long prefixes (so deletions collapse branches into extensions and leaves)
/// mixed with random ones.
fn clustered_key(rng: &mut StdRng) -> B256 {
    let mut key = random_key(rng);
    if rng.random_bool(0.5) {
        let shared = rng.random_range(1..6);
        key.0[..shared].fill(0xab);
    }
    key
}

/// Commits applied to a store of nodes by position leave it holding exactly the nodes of
/// the current trie: every write lands where a later walk looks for it, and every
/// position a change made obsolete is deleted.
#[test]
fn path_store_holds_exactly_the_current_trie() {
    for (seed, owner) in [(1u64, None), (2, Some(B256::repeat_byte(9)))] {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut store = PathStore::new();
        let mut model: BTreeMap<B256, Vec<u8>> = BTreeMap::new();
        let mut root = EMPTY_ROOT_HASH;
        for round in 0..40 {
            let mut trie = Trie::open(&store, owner, root);
            // Big batches take the parallel subtree update, small ones the serial one;
            // the last rounds delete everything.
            let size = if round % 3 == 0 { 400 } else { rng.random_range(1..40) };
            let mut batch = Vec::new();
            for _ in 0..size {
                let existing = model.keys().nth(rng.random_range(0..model.len().max(1))).copied();
                let update = match (existing, round >= 34 || rng.random_bool(0.3)) {
                    (Some(key), true) => (key, None),
                    (Some(key), false) if rng.random_bool(0.3) => {
                        (key, Some(random_value(&mut rng)))
                    }
                    _ => (clustered_key(&mut rng), Some(random_value(&mut rng))),
                };
                match &update.1 {
                    Some(v) => model.insert(update.0, v.clone()),
                    None => model.remove(&update.0),
                };
                batch.push(update);
            }
            if round % 2 == 0 {
                trie.update_batch(batch).unwrap();
            } else {
                for (k, v) in batch {
                    trie.insert(k.as_slice(), v.unwrap_or_default()).unwrap();
                }
            }
            let (new_root, updates) = trie.commit().unwrap();
            assert_eq!(updates.owner, owner);
            assert_eq!(new_root, root_from_scratch(model.clone()), "round {round}");
            let written: Vec<&Vec<u8>> = updates.nodes.iter().map(|n| &n.path).collect();
            assert!(updates.removed.iter().all(|p| !written.contains(&p)), "round {round}");
            store.apply(&updates);
            root = new_root;
            assert_eq!(
                store.positions(owner),
                store.reachable(owner, root).unwrap(),
                "round {round}: stored positions are not the trie's"
            );
            let mut reopened = Trie::open(&store, owner, root);
            for (k, v) in model.iter().take(50) {
                assert_eq!(reopened.get(k.as_slice()).unwrap().as_ref(), Some(v));
            }
        }
        while let Some((key, _)) = model.pop_first() {
            let mut trie = Trie::open(&store, owner, root);
            trie.remove(key.as_slice()).unwrap();
            let (new_root, updates) = trie.commit().unwrap();
            store.apply(&updates);
            root = new_root;
        }
        assert_eq!(root, EMPTY_ROOT_HASH);
        assert!(store.is_empty(), "{} nodes left after deleting every key", store.len());
    }
}

/// A store of nodes by position holds one state: the trie at an older root reads as
/// missing nodes, never as another state's values, and tries of different owners do not
/// see each other's nodes.
#[test]
fn path_store_reads_only_the_state_it_holds() {
    let mut rng = StdRng::seed_from_u64(3);
    let entries: Vec<_> = (0..500).map(|_| (random_key(&mut rng), Some(vec![1u8; 40]))).collect();
    let mut store = PathStore::new();
    let (old_root, updates) = apply_updates(&store, EMPTY_ROOT_HASH, entries.clone()).unwrap();
    store.apply(&updates);
    let changed: Vec<_> = entries.iter().map(|(k, _)| (*k, Some(vec![2u8; 40]))).collect();
    let (new_root, updates) = apply_updates(&store, old_root, changed).unwrap();
    store.apply(&updates);

    let mut old = Trie::new(&store, old_root);
    assert!(matches!(old.get(entries[0].0.as_slice()), Err(TrieError::MissingNode(_))));
    let mut new = Trie::new(&store, new_root);
    assert_eq!(new.get(entries[0].0.as_slice()).unwrap(), Some(vec![2u8; 40]));
    let mut other = Trie::storage(&store, B256::repeat_byte(1), new_root);
    assert!(matches!(other.get(entries[0].0.as_slice()), Err(TrieError::MissingNode(_))));
}
