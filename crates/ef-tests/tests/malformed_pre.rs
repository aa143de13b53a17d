//! A fixture whose `pre` holds code revm cannot load (an EIP-7702 designator, `0xef01..`,
//! with a short body) fails with a reason naming the account; nothing panics. The fixture
//! is built here (a genesis with no blocks), so this runs without `EEST_FIXTURES`.

use alloy_primitives::{Address, Bytes, U256};
use ethrex_blockchain::genesis::{alloc_state_root, genesis_header_at, GenesisAccount};
use ethrex_common::{Block, BlockBody, ChainConfig, Fork};
use ethrex_ef_tests::{run_file, Mode, Outcome, RunOptions};
use ethrex_storage::DbKind;
use serde_json::json;
use std::collections::BTreeMap;

const CONTRACT: Address = Address::repeat_byte(0x7d);
const FUNDED: Address = Address::repeat_byte(0x01);

/// `0xef0100` followed by `body_len` address bytes (20 make a valid designator).
fn designator(body_len: usize) -> Bytes {
    let mut code = vec![0xef, 0x01, 0x00];
    code.extend(std::iter::repeat_n(0x22, body_len));
    code.into()
}

/// An Amsterdam `blockchain_test` with no blocks whose genesis holds `code` at `CONTRACT`;
/// everything else about it is consistent (state root, hashes, post state).
fn fixture_with_code(code: &Bytes) -> serde_json::Value {
    let alloc = BTreeMap::from([
        (
            FUNDED,
            GenesisAccount {
                balance: U256::from(10u64).pow(U256::from(18u64)),
                ..Default::default()
            },
        ),
        (CONTRACT, GenesisAccount { nonce: 1, code: code.clone(), ..Default::default() }),
    ]);
    let config = ChainConfig::all_forks_at_genesis(1, Fork::Amsterdam);
    let root = alloc_state_root(&alloc).unwrap();
    let header = genesis_header_at(&config, 30_000_000, 7, root);
    let hash = header.hash_slow();
    let block = Block {
        header,
        body: BlockBody {
            transactions: vec![],
            ommers: vec![],
            withdrawals: Some(Default::default()),
        },
    };
    let rlp = Bytes::from(alloy_rlp::encode(&block));
    let state = json!({
        FUNDED.to_string(): { "nonce": "0x0", "balance": "0xde0b6b3a7640000", "code": "0x", "storage": {} },
        CONTRACT.to_string(): { "nonce": "0x1", "balance": "0x0", "code": code.to_string(), "storage": {} },
    });
    json!({
        "t": {
            "network": "Amsterdam",
            "genesisBlockHeader": { "hash": hash.to_string() },
            "genesisRLP": rlp.to_string(),
            "pre": state,
            "postState": state,
            "lastblockhash": hash.to_string(),
            "blocks": [],
        }
    })
}

fn run(code: &Bytes) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("case.json");
    std::fs::write(&path, fixture_with_code(code).to_string()).unwrap();
    let mut results = run_file(&path, &RunOptions::new(DbKind::Memory, Mode::Both));
    assert_eq!(results.len(), 1);
    results.pop().unwrap().outcome
}

#[test]
fn the_built_fixture_passes_with_valid_code() {
    assert_eq!(run(&designator(20)), Outcome::Passed);
    assert_eq!(run(&Bytes::from_static(&[0x60, 0x00, 0x00])), Outcome::Passed);
}

#[test]
fn short_delegation_designator_in_pre_fails_the_test() {
    for body_len in [0, 5, 19] {
        match run(&designator(body_len)) {
            Outcome::Failed(reason) => assert!(
                reason.contains(&format!("genesis account {CONTRACT}"))
                    && reason.contains("malformed code"),
                "{body_len} address bytes: {reason}"
            ),
            other => panic!("{body_len} address bytes: expected a failure, got {other:?}"),
        }
    }
}
