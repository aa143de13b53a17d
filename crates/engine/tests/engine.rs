//! The Engine API's rules called directly, without HTTP: a payload built from the pool
//! and imported back, fork choice moving the head and cleaning the pool, an invalid
//! payload remembered (its descendants answered without execution), and the error codes
//! of calls that fail.

use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope};
use alloy_primitives::{Address, Bytes, TxKind, B256, U256};
use alloy_rpc_types_engine::{
    ExecutionPayloadV3, ForkchoiceState, PayloadAttributes, PayloadId, PayloadStatusEnum,
};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use ethrex_blockchain::genesis::{
    alloc_state_root, genesis_header_at, init_genesis, GenesisAccount,
};
use ethrex_blockchain::Blockchain;
use ethrex_common::{ChainConfig, Fork};
use ethrex_engine::{EngineError, NewPayload, Node};
use ethrex_storage::Store;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn key() -> PrivateKeySigner {
    PrivateKeySigner::from_bytes(&B256::repeat_byte(0x42)).unwrap()
}

fn node() -> Arc<Node> {
    let mut alloc = ethrex_blockchain::system_contracts::system_contracts();
    let funds = GenesisAccount { balance: U256::from(10u128.pow(24)), ..Default::default() };
    alloc.insert(key().address(), funds);
    let config = ChainConfig::all_forks_at_genesis(1, Fork::Amsterdam);
    let header = genesis_header_at(&config, 30_000_000, 7, alloc_state_root(&alloc).unwrap());
    let store = Store::in_memory();
    init_genesis(&store, header, &alloc).unwrap();
    Arc::new(Node::new(Blockchain::new(store, config)))
}

/// A transfer to a new account (Amsterdam charges its creation as state gas).
fn transfer(nonce: u64) -> TxEnvelope {
    let tx = TxEip1559 {
        chain_id: 1,
        nonce,
        gas_limit: 250_000,
        max_fee_per_gas: 1_000,
        max_priority_fee_per_gas: 2,
        to: TxKind::Call(Address::repeat_byte(0xc0)),
        value: U256::from(5),
        ..Default::default()
    };
    let sig = key().sign_hash_sync(&tx.signature_hash()).unwrap();
    tx.into_signed(sig).into()
}

fn state(head: B256) -> ForkchoiceState {
    ForkchoiceState { head_block_hash: head, safe_block_hash: head, finalized_block_hash: head }
}

fn attributes(timestamp: u64) -> PayloadAttributes {
    PayloadAttributes {
        timestamp,
        prev_randao: B256::repeat_byte(3),
        suggested_fee_recipient: Address::repeat_byte(0xfe),
        withdrawals: Some(vec![]),
        parent_beacon_block_root: Some(B256::repeat_byte(1)),
        slot_number: Some(timestamp),
        target_gas_limit: None,
    }
}

fn genesis(node: &Node) -> B256 {
    node.chain.store.genesis_hash().unwrap().unwrap()
}

/// Builds a payload on the head from the pool and returns it as `newPayloadV5` takes it.
fn build(node: &Arc<Node>, head: B256, timestamp: u64) -> (NewPayload, B256) {
    let updated = ethrex_engine::fork_choice(node, state(head), Some(attributes(timestamp)), 4)
        .expect("fork choice with attributes");
    assert_eq!(updated.payload_status.status, PayloadStatusEnum::Valid);
    let id = updated.payload_id.expect("a payload id");
    let (built, payload) = ethrex_engine::built_payload(node, id, 6).unwrap();
    let bal = Bytes::from(alloy_rlp::encode(built.block.bal.clone().unwrap()));
    let hash = built.block.hash();
    let new = NewPayload {
        payload,
        versioned_hashes: vec![],
        parent_beacon_block_root: B256::repeat_byte(1),
        execution_requests: Some(Default::default()),
        amsterdam: Some((bal, timestamp)),
    };
    (new, hash)
}

/// Sets the payload's block hash to what its fields hash to; returns it.
fn rehash(new: &mut NewPayload) -> B256 {
    let mut block = new.payload.clone().try_into_block::<TxEnvelope>().unwrap();
    let (bal, slot) = new.amsterdam.clone().unwrap();
    block.header.parent_beacon_block_root = Some(new.parent_beacon_block_root);
    block.header.requests_hash = new.execution_requests.as_ref().map(|r| r.requests_hash());
    block.header.block_access_list_hash = Some(alloy_primitives::keccak256(&bal));
    block.header.slot_number = Some(slot);
    let hash = block.header.hash_slow();
    new.payload.payload_inner.payload_inner.block_hash = hash;
    hash
}

#[test]
fn a_payload_built_from_the_pool_imports_and_its_fork_choice_empties_the_pool() {
    let node = node();
    let accounts = ethrex_engine::HeadAccounts(&node.chain.store);
    for nonce in 0..3 {
        node.pool.add(transfer(nonce), &accounts).unwrap();
    }
    let (payload, hash) = build(&node, genesis(&node), 12);
    assert_eq!(payload.payload.payload_inner.payload_inner.transactions.len(), 3);
    let status = ethrex_engine::new_payload(&node, payload, &[Fork::Amsterdam]).unwrap();
    assert_eq!(status.status, PayloadStatusEnum::Valid);
    assert_eq!(status.latest_valid_hash, Some(hash));
    let updated = ethrex_engine::fork_choice(&node, state(hash), None, 4).unwrap();
    assert_eq!(updated.payload_status.status, PayloadStatusEnum::Valid);
    assert_eq!(node.chain.store.head().unwrap(), Some(hash));
    assert!(node.pool.is_empty(), "included transactions leave the pool");
}

#[test]
fn an_invalid_payload_is_remembered_and_its_child_is_invalid_without_execution() {
    let node = node();
    let parent = genesis(&node);
    node.pool.add(transfer(0), &ethrex_engine::HeadAccounts(&node.chain.store)).unwrap();
    let (mut bad, _) = build(&node, parent, 12);
    // A wrong state root, under a block hash that matches it: only execution can tell.
    bad.payload.payload_inner.payload_inner.state_root = B256::repeat_byte(0xee);
    let bad_hash = rehash(&mut bad);

    let status = ethrex_engine::new_payload(&node, bad.clone(), &[Fork::Amsterdam]).unwrap();
    assert!(status.status.is_invalid(), "{status:?}");
    assert_eq!(status.latest_valid_hash, Some(parent));
    // A child of the invalid block: INVALID with the same latest valid hash, no parent state.
    let mut child = bad.clone();
    let inner = &mut child.payload.payload_inner.payload_inner;
    inner.parent_hash = bad_hash;
    inner.block_number += 1;
    inner.timestamp += 12;
    rehash(&mut child);
    let status = ethrex_engine::new_payload(&node, child, &[Fork::Amsterdam]).unwrap();
    let PayloadStatusEnum::Invalid { validation_error } = &status.status else {
        panic!("{status:?}")
    };
    assert!(validation_error.contains("is invalid"), "{validation_error}");
    assert_eq!(status.latest_valid_hash, Some(parent));
    // Fork choice to the invalid block: INVALID, the head stays.
    let updated = ethrex_engine::fork_choice(&node, state(bad_hash), None, 4).unwrap();
    assert!(updated.payload_status.status.is_invalid());
    assert_eq!(node.chain.store.head().unwrap(), Some(parent));
}

#[test]
fn failed_calls_carry_the_engine_apis_error_codes() {
    let node = node();
    let Err(unknown) = ethrex_engine::built_payload(&node, PayloadId::new([9; 8]), 6) else {
        panic!("a payload under an id never handed out")
    };
    assert_eq!((unknown.code(), unknown.to_string()), (-38001, "Unknown payload".into()));
    let zero = ethrex_engine::fork_choice(&node, state(B256::ZERO), None, 4).unwrap_err();
    assert_eq!(zero.code(), -38002);
    // Amsterdam attributes on the Osaka method version.
    let head = genesis(&node);
    let wrong = ethrex_engine::fork_choice(&node, state(head), Some(attributes(12)), 3);
    assert!(matches!(wrong, Err(EngineError::UnsupportedFork(_))), "{wrong:?}");
    // Attributes that do not fit the fork: no slot number from Amsterdam on.
    let mut no_slot = attributes(12);
    no_slot.slot_number = None;
    let err = ethrex_engine::fork_choice(&node, state(head), Some(no_slot), 4).unwrap_err();
    assert_eq!(err.code(), -38003);
    let too_many = vec![B256::ZERO; ethrex_engine::MAX_BLOB_REQUEST + 1];
    assert_eq!(ethrex_engine::get_blobs_v3(&node, &too_many).unwrap_err().code(), -38004);
    // A V3-shaped payload for an Amsterdam timestamp: the method does not serve the fork.
    let payload = NewPayload {
        payload: ExecutionPayloadV3::from_block_unchecked(
            B256::ZERO,
            &alloy_consensus::Block::<TxEnvelope>::default(),
        ),
        versioned_hashes: vec![],
        parent_beacon_block_root: B256::ZERO,
        execution_requests: None,
        amsterdam: None,
    };
    let err = ethrex_engine::new_payload(&node, payload, &[Fork::Cancun]).unwrap_err();
    assert_eq!(err.code(), -38005);
}

#[test]
fn amsterdam_attributes_name_the_gas_limit_target_and_the_node_default_applies_otherwise() {
    let node = node();
    let head = genesis(&node);
    let step = 30_000_000 / 1024 - 1;
    let mut down = attributes(12);
    down.target_gas_limit = Some(20_000_000);
    for (attributes, expected) in [(down, 30_000_000 - step), (attributes(13), 30_000_000 + step)] {
        let updated = ethrex_engine::fork_choice(&node, state(head), Some(attributes), 4).unwrap();
        let (_, payload) =
            ethrex_engine::built_payload(&node, updated.payload_id.unwrap(), 6).unwrap();
        assert_eq!(payload.payload_inner.payload_inner.gas_limit, expected);
    }
}

#[test]
fn a_payload_keeps_improving_from_the_pool_until_it_is_taken() {
    let node = node();
    let head = genesis(&node);
    let updated = ethrex_engine::fork_choice(&node, state(head), Some(attributes(12)), 4).unwrap();
    let id = updated.payload_id.unwrap();
    let txs =
        |node: &Node| node.payloads.lock().peek(&id).unwrap().block.block.body.transactions.len();
    assert_eq!(txs(&node), 0, "built from an empty pool");
    node.pool.add(transfer(0), &ethrex_engine::HeadAccounts(&node.chain.store)).unwrap();
    // Rebuilt in the background (every half second); bounded wait, not a speed claim.
    let deadline = Instant::now() + Duration::from_secs(10);
    while txs(&node) == 0 {
        assert!(
            Instant::now() < deadline,
            "the payload was never rebuilt with the new transaction"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let (built, payload) = ethrex_engine::built_payload(&node, id, 6).unwrap();
    assert_eq!(payload.payload_inner.payload_inner.transactions.len(), 1);
    assert!(built.fees > U256::ZERO);
    // The improved payload is a valid block.
    let bal = Bytes::from(alloy_rlp::encode(built.block.bal.clone().unwrap()));
    let new = NewPayload {
        payload,
        versioned_hashes: vec![],
        parent_beacon_block_root: B256::repeat_byte(1),
        execution_requests: Some(Default::default()),
        amsterdam: Some((bal, 12)),
    };
    let status = ethrex_engine::new_payload(&node, new, &[Fork::Amsterdam]).unwrap();
    assert_eq!(status.status, PayloadStatusEnum::Valid);
}
