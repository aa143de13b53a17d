//! Roots derived by hand and roots geth v1.17.10 computes (its `trie/bintrie` tests, and
//! its `BinaryTrie` run on the states below).

use alloy_primitives::{address, b256, hex, keccak256, Address, B256, U256};
use ethrex_bintrie::{AccountSpec, BinaryTrie, MemoryStore, StateSpec};
use sha2::{Digest, Sha256};

fn trie() -> BinaryTrie<MemoryStore> {
    BinaryTrie::new(MemoryStore::new(), 8).unwrap()
}

const ADDRESS: Address = address!("1234567890abcdef1234567890abcdef12345678");
/// Keccak-256 of empty code.
const EMPTY_CODE_HASH: B256 =
    b256!("c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470");

#[test]
fn empty_root_is_zero() {
    let mut trie = trie();
    assert_eq!(trie.root_hash(), B256::ZERO);
    assert_eq!(trie.commit().unwrap(), B256::ZERO);
    assert!(trie.store().is_empty());
}

/// geth `TestSingleEntry`.
#[test]
fn geth_single_entry() {
    let mut trie = trie();
    trie.insert(&B256::ZERO, B256::repeat_byte(1)).unwrap();
    assert_eq!(
        trie.root_hash(),
        b256!("aab1060e04cb4f5dc6f697ae93156a95714debbf77d54238766adc5709282b6f")
    );
}

/// geth `TestTwoEntriesDiffFirstBit`.
#[test]
fn geth_two_entries_diff_first_bit() {
    let mut trie = trie();
    trie.insert(&B256::ZERO, B256::repeat_byte(1)).unwrap();
    let mut key = B256::ZERO;
    key[0] = 0x80;
    trie.insert(&key, B256::repeat_byte(2)).unwrap();
    assert_eq!(
        trie.root_hash(),
        b256!("dfc69c94013a8b3c65395625a719a87534a7cfd38719251ad8c8ea7fe79f065e")
    );
}

/// geth `TestMerkleizeMultipleEntries`.
#[test]
fn geth_merkleize_multiple_entries() {
    let mut trie = trie();
    for (i, first) in [0x00u8, 0x80, 0x01, 0x81].into_iter().enumerate() {
        let mut key = B256::ZERO;
        key[0] = first;
        let mut value = B256::ZERO;
        value[..8].copy_from_slice(&(i as u64).to_le_bytes());
        trie.insert(&key, value).unwrap();
    }
    assert_eq!(
        trie.root_hash(),
        b256!("9317155862f7a3867660ddd0966ff799a3d16aa4df1e70a7516eaa4a675191b5")
    );
}

fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
    }
    hasher.finalize().into()
}

/// One account, by the definitions: a single stem at the root, its hash the root.
#[test]
fn one_account_by_hand() {
    let (nonce, balance) = (7u64, 0x0102_0304u64);
    let mut trie = trie();
    trie.update_account(&ADDRESS, nonce, U256::from(balance), 5, EMPTY_CODE_HASH).unwrap();

    let mut input = [0u8; 64];
    input[12..32].copy_from_slice(ADDRESS.as_slice());
    let stem = &sha256(&[&input])[..31];
    let mut basic = [0u8; 32];
    basic[7] = 5;
    basic[8..16].copy_from_slice(&nonce.to_be_bytes());
    basic[24..32].copy_from_slice(&balance.to_be_bytes());
    // Leaves 0 and 1 present, 2..256 absent: the pair (0, 1), then (h, 0) seven times.
    let mut node = sha256(&[&sha256(&[&basic]), &sha256(&[EMPTY_CODE_HASH.as_slice()])]);
    for _ in 0..7 {
        node = sha256(&[&node, &[0u8; 32]]);
    }
    let root = sha256(&[stem, &[0], &node]);
    assert_eq!(trie.root_hash(), B256::from(root));
}

/// A root geth computed: `UpdateAccount` (nonce 1, balance 1000, empty-code hash).
#[test]
fn geth_account_and_deletes() {
    let mut trie = trie();
    trie.update_account(&ADDRESS, 1, U256::from(1000), 0, EMPTY_CODE_HASH).unwrap();
    assert_eq!(
        trie.root_hash(),
        b256!("358662478906d37ea6f6070175ad984f2101cceadf8120a1725e3757560df8e0")
    );
    let value = B256::with_last_byte(0x0a);
    let overflowing = U256::from_be_bytes(hex!(
        "ff00000000000000000000000000000000000000000000000000000000000001"
    ));
    trie.update_storage(&ADDRESS, U256::from(5), value).unwrap();
    trie.update_storage(&ADDRESS, overflowing, value).unwrap();
    assert_eq!(
        trie.root_hash(),
        b256!("18ce52b428dd4d191811b87fc20cf6e42915217f7f4d0d4748d86549f8410721")
    );
    trie.delete_storage(&ADDRESS, U256::from(5)).unwrap();
    assert_eq!(
        trie.root_hash(),
        b256!("6b6258382eceade8ae0140c1168472609aafea6145a4d349a43e70fbff0c6828")
    );
    trie.delete_account(&ADDRESS).unwrap();
    assert_eq!(
        trie.root_hash(),
        b256!("3038049cb54539427347578aa626f39074638369dacfafddc206bb79c93f0612")
    );
}

/// geth: deleting an account that never existed writes its zeroed header.
#[test]
fn geth_delete_missing_account() {
    let mut trie = trie();
    trie.delete_account(&ADDRESS).unwrap();
    assert_eq!(
        trie.root_hash(),
        b256!("cdd8a1be077845504a8f3d0debe17462507e84afa50cbe82f3a7499f5b5655df")
    );
    assert_eq!(trie.get_account(&ADDRESS).unwrap(), None);
}

/// geth: a slot written as zero is a present zero leaf.
#[test]
fn geth_zero_storage() {
    let mut trie = trie();
    trie.update_storage(&ADDRESS, U256::from(5), B256::ZERO).unwrap();
    let root = b256!("35e8ca955b3b85b7beb4e458cae49c194e08be2f379ea745ddcb952df98e86d0");
    assert_eq!(trie.root_hash(), root);
    let mut deleted = self::trie();
    deleted.delete_storage(&ADDRESS, U256::from(5)).unwrap();
    assert_eq!(deleted.root_hash(), root);
}

/// geth: balance 2^128 + 0xabcd (17 bytes) keeps only its last byte.
#[test]
fn geth_oversized_balance() {
    let mut trie = trie();
    let balance = (U256::from(1) << 128) + U256::from(0xabcd);
    trie.update_account(&ADDRESS, 0, balance, 0, EMPTY_CODE_HASH).unwrap();
    assert_eq!(
        trie.root_hash(),
        b256!("4b42cb20228fca8733c9fad30d6c6c5d78226294a51e1a7a019d08a35790b59a")
    );
    assert_eq!(trie.get_account(&ADDRESS).unwrap().unwrap().balance, U256::from(0xcd));
}

/// geth: 200 bytes of JUMPDEST with a PUSH32 at offset 30 (data across chunks 0..2).
#[test]
fn geth_code_chunks() {
    let mut code = vec![0x5b; 200];
    code[30] = 0x7f;
    let mut trie = trie();
    trie.update_account(&ADDRESS, 1, U256::ZERO, 200, EMPTY_CODE_HASH).unwrap();
    trie.update_code(&ADDRESS, &code).unwrap();
    assert_eq!(
        trie.root_hash(),
        b256!("4ca65c478ee8f089bbdf2a3884e07c0a11c2aa21ae6d2fb9eb86bc937a831901")
    );
}

/// geth, through `bench/bintrie-ref` (two commits, every group depth): one account with
/// code and a header and a main storage slot.
#[test]
fn geth_state_spec() {
    let spec = StateSpec::from_json(
        br#"{"accounts":[{"address":"0x1234567890abcdef1234567890abcdef12345678","nonce":42,
            "balance":"1000","code":"0x6001600055","storage":{"0x0":"0x1","0x40":"0x2"}}]}"#,
    )
    .unwrap();
    let expected = b256!("16af59b81a8b29759b7587401062bb4f59ef7a7248ff9f88e39a41b1479bac94");
    for depth in 1..=8 {
        assert_eq!(spec.root_in_two_commits(depth).unwrap(), expected, "depth {depth}");
    }
    let account: &AccountSpec = &spec.accounts[0];
    assert_eq!(account.balance, U256::from(1000));
    assert_eq!(keccak256(&account.code), keccak256(hex!("6001600055")));
}
