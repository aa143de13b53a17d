//! Pins the on-disk format: the table names and the exact key and value bytes a genesis
//! and a block leave in every table (`tests/unwind.rs` checks that an unwind restores
//! them). Existing databases (and the chain
//! fixtures) are read with these bytes, so a change here is a format change.

use alloy_primitives::{hex, Address, Bytes, B256, U256};
use ethrex_common::{AccountState, Block, BlockAccessList, BlockBody, Header, Receipt};
use ethrex_storage::memory::MemoryBackend;
use ethrex_storage::{BlockCommit, ChangeSet, KvBackend, StateUpdate, Store, Table};
use ethrex_trie::{StoredNode, TrieUpdates};
use std::sync::Arc;

const A: Address = Address::repeat_byte(0x11);
const B: Address = Address::repeat_byte(0x22);
const GENESIS: B256 = B256::repeat_byte(0x0a);
const BLOCK1: B256 = B256::repeat_byte(0x0b);
/// keccak256(0x6000), the code stored under it (code is checked against its hash on read).
const CODE_HASH: B256 =
    alloy_primitives::b256!("07ad118d6cc8642c86c03827f276d8b791a65e5c99a3845faf186be720a1455d");
const NODE_HASH: B256 = B256::repeat_byte(0xdd);
/// The hashed address owning a storage trie.
const OWNER: B256 = B256::repeat_byte(0x55);

fn node(path: &[u8], rlp: &[u8]) -> StoredNode {
    StoredNode { path: path.to_vec(), hash: NODE_HASH, rlp: rlp.to_vec() }
}

/// Concatenates hex pieces (`"11" * 20` style repetition is spelled out by `rep`).
fn h(parts: &[&str]) -> Vec<u8> {
    hex::decode(parts.concat()).unwrap()
}

fn rep(byte: &str, n: usize) -> String {
    byte.repeat(n)
}

fn account() -> AccountState {
    AccountState {
        nonce: 1,
        balance: U256::from(2u64),
        storage_root: B256::repeat_byte(0x33),
        code_hash: B256::repeat_byte(0x44),
    }
}

/// The account's RLP, written out by hand: a 68-byte list of nonce, balance and the two
/// 32-byte hashes.
fn account_rlp() -> Vec<u8> {
    h(&["f844", "01", "02", "a0", &rep("33", 32), "a0", &rep("44", 32)])
}

fn slot(n: &str) -> String {
    format!("{n:0>64}")
}

fn block(number: u64, parent: B256) -> Block {
    Block {
        header: Header { number, parent_hash: parent, ..Default::default() },
        body: BlockBody::default(),
    }
}

fn table(backend: &MemoryBackend, table: Table) -> Vec<(Vec<u8>, Vec<u8>)> {
    backend.scan_prefix(table, &[]).unwrap()
}

#[test]
fn table_names_and_order_are_fixed() {
    let names: Vec<&str> = Table::ALL.iter().map(|t| t.name()).collect();
    assert_eq!(
        names,
        [
            "headers",
            "header_numbers",
            "canonical_hashes",
            "bodies",
            "receipts",
            "bals",
            "accounts",
            "storage",
            "code",
            "account_trie",
            "storage_trie",
            "change_sets",
            "meta",
            "extension",
            "total_difficulties",
            "tx_numbers"
        ]
    );
    for (i, t) in Table::ALL.iter().enumerate() {
        assert_eq!(t.index(), i);
    }
}

#[test]
fn genesis_and_block_write_exactly_these_bytes() {
    let backend = Arc::new(MemoryBackend::new());
    let store = Store::new(backend.clone());

    let genesis = block(0, B256::ZERO);
    let genesis_state = StateUpdate {
        accounts: vec![(A, Some(account()))],
        storage: vec![(A, U256::from(0x0102u64), U256::from(0x0304u64))],
        wiped_storage: vec![],
        codes: vec![(CODE_HASH, Bytes::from_static(&[0x60, 0x00]))],
        tries: vec![
            TrieUpdates { owner: None, nodes: vec![node(&[], &[0xc0])], removed: vec![] },
            TrieUpdates {
                owner: Some(OWNER),
                nodes: vec![node(&[3], &[0xc1, 0x01]), node(&[7], &[0xc1, 0x02])],
                removed: vec![],
            },
        ],
        account_trie: None,
        storage_tries: Vec::new(),
    };
    store.commit_genesis(GENESIS, &genesis, genesis_state).unwrap();

    let block1 = block(1, GENESIS);
    let bal: BlockAccessList = Vec::new();
    let receipts: Vec<Receipt> = Vec::new();
    let change_set = ChangeSet {
        accounts: vec![(B, Some(account()))],
        storage: vec![(A, U256::from(0x0102u64), U256::from(0x0304u64))],
    };
    let prepared = Store::prepare_block(BlockCommit {
        hash: BLOCK1,
        block: &block1,
        bal: Some(&bal),
        receipts: &receipts,
        state: StateUpdate {
            accounts: vec![(B, None)],
            storage: vec![
                (A, U256::from(0x0102u64), U256::ZERO),
                (A, U256::from(5u64), U256::from(0x01_0000u64)),
            ],
            wiped_storage: vec![(A, U256::from(0xffu64))],
            codes: vec![],
            tries: vec![
                TrieUpdates {
                    owner: None,
                    nodes: vec![node(&[0xf], &[0xc1, 0x80])],
                    removed: vec![],
                },
                TrieUpdates {
                    owner: Some(OWNER),
                    nodes: vec![node(&[1, 0xa], &[0xc0])],
                    removed: vec![vec![3]],
                },
            ],
            account_trie: None,
            storage_tries: Vec::new(),
        },
        change_set,
        total_difficulty: U256::from(0x0203u64),
    });
    store.commit_prepared(prepared).unwrap();
    store.flush().unwrap();

    let g = rep("0a", 32);
    let b1 = rep("0b", 32);
    assert_eq!(
        table(&backend, Table::Headers),
        vec![
            (h(&[&g]), alloy_rlp::encode(&genesis.header)),
            (h(&[&b1]), alloy_rlp::encode(&block1.header))
        ]
    );
    assert_eq!(
        table(&backend, Table::HeaderNumbers),
        vec![(h(&[&g]), h(&["0000000000000000"])), (h(&[&b1]), h(&["0000000000000001"]))]
    );
    let canonical =
        vec![(h(&["0000000000000000"]), h(&[&g])), (h(&["0000000000000001"]), h(&[&b1]))];
    assert_eq!(table(&backend, Table::CanonicalHashes), canonical);
    assert_eq!(
        table(&backend, Table::Bodies),
        vec![
            (h(&[&g]), alloy_rlp::encode(&genesis.body)),
            (h(&[&b1]), alloy_rlp::encode(&block1.body))
        ]
    );
    // No receipts: an empty RLP list, for the genesis and for the block.
    assert_eq!(
        table(&backend, Table::Receipts),
        vec![(h(&[&g]), h(&["c0"])), (h(&[&b1]), h(&["c0"]))]
    );
    assert_eq!(table(&backend, Table::Bals), vec![(h(&[&b1]), h(&["c0"]))]);
    // B was deleted by block 1; A is untouched.
    assert_eq!(table(&backend, Table::Accounts), vec![(h(&[&rep("11", 20)]), account_rlp())]);
    // Slot 0x0102 was zeroed (deleted), slot 5 set; values are big-endian without
    // leading zeros.
    assert_eq!(
        table(&backend, Table::Storage),
        vec![(h(&[&rep("11", 20), &slot("5")]), h(&["010000"]))]
    );
    assert_eq!(
        table(&backend, Table::Code),
        vec![(
            h(&["07ad118d6cc8642c86c03827f276d8b791a65e5c99a3845faf186be720a1455d"]),
            h(&["6000"])
        )]
    );
    // Nodes by position: the path's nibbles, one per byte (the root's is empty), after
    // the owner's hashed address for a storage trie; deleted positions are gone.
    assert_eq!(
        table(&backend, Table::AccountTrie),
        vec![(vec![], h(&["c0"])), (h(&["0f"]), h(&["c180"]))]
    );
    assert_eq!(
        table(&backend, Table::StorageTrie),
        vec![
            (h(&[&rep("55", 32), "010a"]), h(&["c0"])),
            (h(&[&rep("55", 32), "07"]), h(&["c102"]))
        ]
    );
    // The account records: B's record before block 1 (both layouts write them alike).
    let accounts = [
        "00000001".to_string(),
        rep("22", 20),
        "01".to_string(),
        "00000046".to_string(),
        hex::encode(account_rlp()),
    ]
    .concat();
    // Version 1: the account records, then one run per address of (slot, value) pairs
    // without leading zero bytes, each after its length.
    let change_set_bytes =
        h(&["01", &accounts, "00000001", &rep("11", 20), "00000001", "020102", "020304"]);
    assert_eq!(table(&backend, Table::ChangeSets), vec![(h(&[&b1]), change_set_bytes.clone())]);
    // What stores wrote before the version byte (fixed-width slots and values) still
    // reads as the same change set.
    let version_0 = h(&[&accounts, "00000001", &rep("11", 20), &slot("0102"), &slot("0304")]);
    assert_eq!(
        ChangeSet::decode(&version_0).unwrap(),
        ChangeSet::decode(&change_set_bytes).unwrap()
    );
    // Total difficulty, big-endian without leading zeros: the genesis' own difficulty,
    // then what the commit named.
    assert_eq!(
        table(&backend, Table::TotalDifficulties),
        vec![
            (h(&[&g]), genesis.header.difficulty.to_be_bytes_trimmed_vec()),
            (h(&[&b1]), h(&["0203"]))
        ]
    );
    // "genesis" sorts before "head", then the layout (2: trie nodes by position).
    assert_eq!(
        table(&backend, Table::Meta),
        vec![
            (b"genesis".to_vec(), h(&[&g])),
            (b"head".to_vec(), h(&[&b1])),
            (b"layout".to_vec(), h(&[&rep("00", 31), "02"]))
        ]
    );

    // And the typed readers read the same bytes back.
    assert_eq!(store.head().unwrap(), Some(BLOCK1));
    assert_eq!(store.genesis_hash().unwrap(), Some(GENESIS));
    assert_eq!(store.block_number(&BLOCK1).unwrap(), Some(1));
    assert_eq!(store.canonical_hash(0).unwrap(), Some(GENESIS));
    assert_eq!(store.canonical_hash(1).unwrap(), Some(BLOCK1));
    assert_eq!(store.account(&B).unwrap(), None);
    assert_eq!(store.storage(&A, &U256::from(0x0102u64)).unwrap(), U256::ZERO);
    assert_eq!(
        store.storage_entries(&A).unwrap(),
        vec![(U256::from(5u64), U256::from(0x01_0000u64))]
    );
    assert_eq!(store.all_accounts().unwrap(), vec![(A, account())]);
    assert_eq!(store.code(&CODE_HASH).unwrap(), Some(Bytes::from_static(&[0x60, 0x00])));
    assert_eq!(store.receipts(&BLOCK1).unwrap(), Some(vec![]));
    assert_eq!(store.bal(&BLOCK1).unwrap(), Some(vec![]));
    assert_eq!(store.block(&BLOCK1).unwrap(), Some(block1));
}
