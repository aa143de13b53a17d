//! Opening a store on a genesis writes the same block and state as the header-first
//! initialisation, and later opens only check it. Genesis initialisation rejects an allocation whose code revm cannot load (an EIP-7702
//! designator, `0xef01..`, of the wrong length or version) with an error naming the
//! account, instead of storing it for the first block that reads it to panic on.

use alloy_primitives::{Address, Bytes, U256};
use ethrex_blockchain::genesis::{
    alloc_state_root, genesis_header_at, init_genesis, open_genesis, GenesisAccount,
};
use ethrex_common::{ChainConfig, Fork};
use ethrex_storage::Store;
use std::collections::BTreeMap;

const CONTRACT: Address = Address::repeat_byte(0x7d);

/// `0xef0100` followed by `body_len` bytes of address (20 make a valid designator).
fn designator(body_len: usize) -> Bytes {
    let mut code = vec![0xef, 0x01, 0x00];
    code.extend(std::iter::repeat_n(0x11, body_len));
    code.into()
}

fn alloc(code: Bytes) -> BTreeMap<Address, GenesisAccount> {
    let funded = GenesisAccount { balance: U256::from(1_000u64), ..Default::default() };
    BTreeMap::from([
        (Address::repeat_byte(0x01), funded),
        (CONTRACT, GenesisAccount { code, ..Default::default() }),
    ])
}

/// Initialises a fresh store with `alloc` under a header whose state root matches it, so
/// that the code is the only thing that can be wrong.
fn init(
    alloc: &BTreeMap<Address, GenesisAccount>,
) -> (Store, Result<alloy_primitives::B256, String>) {
    let config = ChainConfig::all_forks_at_genesis(1, Fork::Amsterdam);
    let root = alloc_state_root(alloc).expect("the state root of any allocation");
    let header = genesis_header_at(&config, 30_000_000, 7, root);
    let store = Store::in_memory();
    let result = init_genesis(&store, header, alloc).map_err(|e| e.to_string());
    (store, result)
}

#[test]
fn short_delegation_designator_in_genesis_is_an_error() {
    for body_len in [0, 5, 19] {
        let (store, result) = init(&alloc(designator(body_len)));
        let err = result.expect_err("malformed genesis code must be rejected");
        assert!(
            err.contains(&format!("genesis account {CONTRACT}")) && err.contains("malformed code"),
            "{body_len} address bytes: {err}"
        );
        assert_eq!(store.genesis_hash().unwrap(), None, "nothing of the genesis is stored");
    }
}

#[test]
fn unsupported_delegation_version_in_genesis_is_an_error() {
    let mut code = designator(20).to_vec();
    code[2] = 0x01;
    let err = init(&alloc(code.into())).1.expect_err("version 1 designator must be rejected");
    assert!(err.contains("malformed code"), "{err}");
}

#[test]
fn valid_delegation_and_legacy_code_in_genesis_are_accepted() {
    // A well-formed designator, and legacy code that merely starts with 0xef (no 0x01).
    for code in [designator(20), Bytes::from_static(&[0xef, 0x00, 0x01])] {
        let (store, result) = init(&alloc(code.clone()));
        let hash = result.unwrap_or_else(|e| panic!("{code}: {e}"));
        assert_eq!(store.genesis_hash().unwrap(), Some(hash));
        let account = store.account(&CONTRACT).unwrap().expect("the contract is stored");
        assert_eq!(store.code(&account.code_hash).unwrap(), Some(code));
    }
}

#[test]
fn open_genesis_writes_what_init_genesis_does_then_only_checks() {
    let config = ChainConfig::all_forks_at_genesis(1, Fork::Amsterdam);
    let header = |root| genesis_header_at(&config, 30_000_000, 7, root);
    let mut alloc = alloc(designator(20));
    alloc.insert(
        Address::repeat_byte(0x02),
        GenesisAccount {
            balance: U256::from(9u64),
            storage: (1..50u64).map(|s| (U256::from(s), U256::from(s * s))).collect(),
            ..Default::default()
        },
    );
    let (reference, expected) = init(&alloc);
    let expected = expected.unwrap();

    let store = Store::in_memory();
    assert_eq!(open_genesis(&store, &alloc, header).unwrap(), expected);
    assert_eq!(store.all_entries().unwrap(), reference.all_entries().unwrap(), "same writes");
    assert_eq!(store.head_header().unwrap().unwrap().state_root, alloc_state_root(&alloc).unwrap());

    // Opened again: the same genesis is accepted without a write, another is refused.
    assert_eq!(open_genesis(&store, &alloc, header).unwrap(), expected);
    assert_eq!(store.all_entries().unwrap(), reference.all_entries().unwrap());
    alloc.get_mut(&Address::repeat_byte(0x02)).unwrap().balance = U256::from(10u64);
    let err = open_genesis(&store, &alloc, header).unwrap_err().to_string();
    assert!(err.contains("already holds genesis"), "{err}");
    // Malformed code is refused on an empty store too, leaving it empty.
    let empty = Store::in_memory();
    assert!(open_genesis(&empty, &self::alloc(designator(5)), header).is_err());
    assert_eq!(empty.genesis_hash().unwrap(), None);
}
