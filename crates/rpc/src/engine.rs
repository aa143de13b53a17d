//! Engine API (Cancun through Amsterdam): payload import, fork choice, payload building.

use crate::node::{BuiltPayload, Node};
use alloy_consensus::Transaction as _;
use alloy_eips::eip7685::Requests;
use alloy_primitives::{keccak256, Bytes, B256, U256};
use alloy_rlp::Decodable;
use alloy_rpc_types_engine::{
    ExecutionPayloadV3, ExecutionPayloadV4, ForkchoiceState,
    PayloadAttributes as EnginePayloadAttributes, PayloadId,
};
use ethrex_blockchain::fork_choice::ForkChoiceError;
use ethrex_blockchain::PayloadAttributes;
use ethrex_common::{Block, BlockAccessList, BlockWithBal, Fork, Transaction};
use jsonrpsee::types::{ErrorObjectOwned, Params};
use jsonrpsee::RpcModule;
use serde_json::{json, Value};
use std::sync::Arc;

pub const UNSUPPORTED_FORK: i32 = -38005;
pub const UNKNOWN_PAYLOAD: i32 = -38001;
pub const INVALID_FORKCHOICE_STATE: i32 = -38002;
pub const INVALID_PAYLOAD_ATTRIBUTES: i32 = -38003;
pub const INVALID_PARAMS: i32 = -32602;
pub const INTERNAL_ERROR: i32 = -32603;

pub const CAPABILITIES: &[&str] = &[
    "engine_exchangeCapabilities",
    "engine_newPayloadV3",
    "engine_newPayloadV4",
    "engine_newPayloadV5",
    "engine_forkchoiceUpdatedV3",
    "engine_forkchoiceUpdatedV4",
    "engine_getPayloadV4",
    "engine_getPayloadV5",
    "engine_getPayloadV6",
    "engine_getPayloadBodiesByHashV2",
    "engine_getPayloadBodiesByRangeV2",
    "engine_getBlobsV1",
];

fn err(code: i32, message: impl Into<String>) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(code, message.into(), None::<()>)
}

fn status(status: &str, latest_valid: Option<B256>, error: Option<String>) -> Value {
    json!({ "status": status, "latestValidHash": latest_valid, "validationError": error })
}

/// The payload fields every version shares, as a block.
struct Incoming {
    block: Block,
    bal: Option<BlockAccessList>,
    expected_hash: B256,
}

fn fork_of(node: &Node, timestamp: u64) -> Fork {
    node.chain.config.fork_at(timestamp)
}

fn require_fork(node: &Node, timestamp: u64, allowed: &[Fork]) -> Result<(), ErrorObjectOwned> {
    let fork = fork_of(node, timestamp);
    if allowed.contains(&fork) {
        Ok(())
    } else {
        Err(err(UNSUPPORTED_FORK, format!("Unsupported fork: {} at timestamp {timestamp}", fork.name())))
    }
}

fn block_from_v3(payload: ExecutionPayloadV3) -> Result<Block, String> {
    payload.try_into_block::<Transaction>().map_err(|e| format!("invalid payload: {e}"))
}

/// Runs the import and turns its outcome into a payload status.
fn import_payload(node: &Node, incoming: Incoming, versioned_hashes: &[B256]) -> Result<Value, ErrorObjectOwned> {
    let Incoming { block, bal, expected_hash } = incoming;
    let hash = block.header.hash_slow();
    if hash != expected_hash {
        // Since engine_newPayloadV2 a wrong block hash is INVALID with no latest valid hash
        // (INVALID_BLOCK_HASH belongs to V1).
        return Ok(status("INVALID", None, Some(format!("block hash {expected_hash} does not match the payload ({hash})"))));
    }
    let parent = block.header.parent_hash;
    let hashes: Vec<B256> = block.body.transactions.iter().flat_map(|tx| tx.blob_versioned_hashes().unwrap_or_default().to_vec()).collect();
    if hashes != versioned_hashes {
        return Ok(status("INVALID", Some(parent), Some("blob versioned hashes do not match the transactions".into())));
    }
    let _guard = node.write_lock.lock();
    if let Some((latest_valid, reason)) = node.invalid.lock().get(&parent).cloned() {
        node.invalid.lock().insert(hash, (latest_valid, reason.clone()));
        return Ok(status("INVALID", Some(latest_valid), Some(format!("descends from an invalid block: {reason}"))));
    }
    let store = &node.chain.store;
    let internal = |e: ethrex_storage::StoreError| err(INTERNAL_ERROR, e.to_string());
    if store.header(&hash).map_err(internal)?.is_some() {
        return Ok(status("VALID", Some(hash), None));
    }
    let parent_known = store.header(&parent).map_err(internal)?.is_some() || node.pending.lock().contains_key(&parent);
    if !parent_known {
        node.pending.lock().insert(hash, BlockWithBal { block, bal });
        return Ok(status("SYNCING", None, None));
    }
    if store.head().map_err(internal)? != Some(parent) {
        node.pending.lock().insert(hash, BlockWithBal { block, bal });
        return Ok(status("ACCEPTED", None, None));
    }
    match node.chain.import_block(BlockWithBal { block, bal }) {
        Ok(_) => Ok(status("VALID", Some(hash), None)),
        Err(e) if e.is_invalid_block() => {
            node.invalid.lock().insert(hash, (parent, e.to_string()));
            Ok(status("INVALID", Some(parent), Some(e.to_string())))
        }
        Err(e) => Err(err(INTERNAL_ERROR, e.to_string())),
    }
}

fn requests_hash(requests: &[Bytes]) -> B256 {
    Requests::new(requests.to_vec()).requests_hash()
}

/// Turns a V3-shaped payload into a block with the fields the payload leaves out of the
/// header (beacon root; from Prague on, the requests hash). An undecodable payload is an
/// INVALID status, not an error.
fn block_from_payload(payload: ExecutionPayloadV3, root: B256, requests: Option<&[Bytes]>) -> Result<(Block, B256), Value> {
    let expected_hash = payload.payload_inner.payload_inner.block_hash;
    let parent = payload.payload_inner.payload_inner.parent_hash;
    let mut block = block_from_v3(payload).map_err(|e| status("INVALID", Some(parent), Some(e)))?;
    block.header.parent_beacon_block_root = Some(root);
    block.header.requests_hash = requests.map(requests_hash);
    Ok((block, expected_hash))
}

fn new_payload_v3(node: &Node, params: Params) -> Result<Value, ErrorObjectOwned> {
    let (payload, hashes, root): (ExecutionPayloadV3, Vec<B256>, B256) = params.parse()?;
    require_fork(node, payload.payload_inner.payload_inner.timestamp, &[Fork::Cancun])?;
    match block_from_payload(payload, root, None) {
        Ok((block, expected_hash)) => import_payload(node, Incoming { block, bal: None, expected_hash }, &hashes),
        Err(invalid) => Ok(invalid),
    }
}

fn new_payload_v4(node: &Node, params: Params) -> Result<Value, ErrorObjectOwned> {
    let (payload, hashes, root, requests): (ExecutionPayloadV3, Vec<B256>, B256, Vec<Bytes>) = params.parse()?;
    require_fork(node, payload.payload_inner.payload_inner.timestamp, &[Fork::Prague, Fork::Osaka])?;
    match block_from_payload(payload, root, Some(&requests)) {
        Ok((block, expected_hash)) => import_payload(node, Incoming { block, bal: None, expected_hash }, &hashes),
        Err(invalid) => Ok(invalid),
    }
}

fn new_payload_v5(node: &Node, params: Params) -> Result<Value, ErrorObjectOwned> {
    let raw: Vec<Value> = params.parse()?;
    if raw.first().is_some_and(|p| p.get("blockAccessList").is_none()) {
        return Err(err(INVALID_PARAMS, "payload has no blockAccessList"));
    }
    let (payload, hashes, root, requests): (ExecutionPayloadV4, Vec<B256>, B256, Vec<Bytes>) = params.parse()?;
    let inner = &payload.payload_inner.payload_inner.payload_inner;
    require_fork(node, inner.timestamp, &[Fork::Amsterdam])?;
    let parent = inner.parent_hash;
    let bal_bytes = payload.block_access_list.clone();
    let bal = match BlockAccessList::decode(&mut bal_bytes.as_ref()) {
        Ok(b) => b,
        Err(e) => return Ok(status("INVALID", Some(parent), Some(format!("block access list does not decode: {e}")))),
    };
    let (mut block, expected_hash) = match block_from_payload(payload.payload_inner, root, Some(&requests)) {
        Ok(b) => b,
        Err(invalid) => return Ok(invalid),
    };
    block.header.block_access_list_hash = Some(keccak256(&bal_bytes));
    block.header.slot_number = Some(payload.slot_number);
    import_payload(node, Incoming { block, bal: Some(bal), expected_hash }, &hashes)
}

fn fork_choice(node: &Node, params: Params, version: u8) -> Result<Value, ErrorObjectOwned> {
    let (state, attributes): (ForkchoiceState, Option<EnginePayloadAttributes>) = params.parse()?;
    if let Some(a) = &attributes {
        let fork = fork_of(node, a.timestamp);
        let ok = match version {
            3 => (Fork::Cancun..=Fork::Osaka).contains(&fork),
            _ => fork >= Fork::Amsterdam,
        };
        if !ok {
            return Err(err(UNSUPPORTED_FORK, format!("Unsupported fork: {} for forkchoiceUpdatedV{version}", fork.name())));
        }
    }
    let head = state.head_block_hash;
    if head.is_zero() {
        return Err(err(INVALID_FORKCHOICE_STATE, "head block hash is zero"));
    }
    let _guard = node.write_lock.lock();
    if let Some((latest_valid, reason)) = node.invalid.lock().get(&head).cloned() {
        return Ok(json!({ "payloadStatus": status("INVALID", Some(latest_valid), Some(reason)), "payloadId": null }));
    }
    let result = {
        let pending = node.pending.lock();
        node.chain.set_head(head, &*pending)
    };
    match result {
        Ok(()) => {}
        Err(ForkChoiceError::Unknown(_)) => return Ok(json!({ "payloadStatus": status("SYNCING", None, None), "payloadId": null })),
        Err(ForkChoiceError::InvalidBlock { hash, latest_valid, error }) => {
            node.invalid.lock().insert(hash, (latest_valid, error.to_string()));
            return Ok(json!({ "payloadStatus": status("INVALID", Some(latest_valid), Some(error.to_string())), "payloadId": null }));
        }
        Err(ForkChoiceError::Other(e)) => return Err(err(INTERNAL_ERROR, e.to_string())),
    }
    node.pending.lock().retain(|h, _| node.chain.store.header(h).ok().flatten().is_none());
    let payload_id = match attributes {
        None => None,
        Some(a) => Some(build_payload(node, head, a)?),
    };
    Ok(json!({ "payloadStatus": status("VALID", Some(head), None), "payloadId": payload_id }))
}

fn build_payload(node: &Node, head: B256, a: EnginePayloadAttributes) -> Result<PayloadId, ErrorObjectOwned> {
    let parent = node.chain.store.header(&head).map_err(|e| err(INTERNAL_ERROR, e.to_string()))?.ok_or_else(|| err(INTERNAL_ERROR, "head header missing"))?;
    if a.timestamp <= parent.timestamp {
        return Err(err(INVALID_PAYLOAD_ATTRIBUTES, "payload timestamp must be greater than the head's"));
    }
    let attributes = PayloadAttributes {
        timestamp: a.timestamp,
        fee_recipient: a.suggested_fee_recipient,
        prev_randao: a.prev_randao,
        gas_limit: parent.gas_limit,
        withdrawals: a.withdrawals.clone().unwrap_or_default(),
        parent_beacon_block_root: a.parent_beacon_block_root.unwrap_or_default(),
        slot_number: a.slot_number.unwrap_or_default(),
        extra_data: Bytes::from_static(b"ethrex"),
    };
    // No transaction pool: payloads carry withdrawals and system-call effects only.
    let block = node.chain.build_block(&attributes, vec![]).map_err(|e| err(INVALID_PAYLOAD_ATTRIBUTES, e.to_string()))?;
    let mut id_input = head.to_vec();
    id_input.extend_from_slice(&a.timestamp.to_be_bytes());
    id_input.extend_from_slice(a.prev_randao.as_slice());
    id_input.extend_from_slice(a.suggested_fee_recipient.as_slice());
    let id = PayloadId::new(keccak256(&id_input)[..8].try_into().expect("8 bytes"));
    node.payloads.lock().insert(id, BuiltPayload { block, requests: vec![] });
    Ok(id)
}

fn payload_v3_json(built: &BuiltPayload) -> Result<(Value, Fork), ErrorObjectOwned> {
    let block = &built.block.block;
    let hash = block.header.hash_slow();
    let v3 = ExecutionPayloadV3::from_block_unchecked(hash, block);
    let value = serde_json::to_value(&v3).map_err(|e| err(INTERNAL_ERROR, e.to_string()))?;
    Ok((value, Fork::Paris))
}

fn get_payload(node: &Node, params: Params, version: u8) -> Result<Value, ErrorObjectOwned> {
    let (id,): (PayloadId,) = params.parse()?;
    let built = node.payloads.lock().get(&id).cloned().ok_or_else(|| err(UNKNOWN_PAYLOAD, "Unknown payload"))?;
    let fork = fork_of(node, built.block.block.header.timestamp);
    let expected = match version {
        4 => Fork::Prague,
        5 => Fork::Osaka,
        _ => Fork::Amsterdam,
    };
    if fork != expected {
        return Err(err(UNSUPPORTED_FORK, format!("Unsupported fork: payload is {}, engine_getPayloadV{version} serves {}", fork.name(), expected.name())));
    }
    let (mut payload, _) = payload_v3_json(&built)?;
    if version >= 6 {
        let bal = built.block.bal.clone().unwrap_or_default();
        payload["blockAccessList"] = json!(Bytes::from(alloy_rlp::encode(&bal)));
        payload["slotNumber"] = json!(format!("{:#x}", built.block.block.header.slot_number.unwrap_or_default()));
    }
    // Payloads carry no blob transactions (there is no blob pool), so the bundle is empty.
    let blobs_bundle = json!({"commitments": [], "proofs": [], "blobs": []});
    Ok(json!({
        "executionPayload": payload,
        "blockValue": format!("{:#x}", U256::ZERO),
        "blobsBundle": blobs_bundle,
        "shouldOverrideBuilder": false,
        "executionRequests": built.requests,
    }))
}

fn body_json(node: &Node, hash: &B256) -> Result<Value, ErrorObjectOwned> {
    let store = &node.chain.store;
    let internal = |e: ethrex_storage::StoreError| err(INTERNAL_ERROR, e.to_string());
    let Some(body) = store.body(hash).map_err(internal)? else { return Ok(Value::Null) };
    let txs: Vec<Bytes> = body.transactions.iter().map(|tx| Bytes::from(alloy_eips::eip2718::Encodable2718::encoded_2718(tx))).collect();
    let bal = store.bal(hash).map_err(internal)?.map(|b| Bytes::from(alloy_rlp::encode(&b)));
    Ok(json!({ "transactions": txs, "withdrawals": body.withdrawals, "blockAccessList": bal }))
}

pub fn module(node: Arc<Node>) -> RpcModule<Arc<Node>> {
    let mut m = RpcModule::new(node);
    let reg = |m: &mut RpcModule<Arc<Node>>, name: &'static str, f: fn(&Node, Params) -> Result<Value, ErrorObjectOwned>| {
        m.register_blocking_method(name, move |params, node, _| f(&node, params)).expect("method names are unique");
    };
    reg(&mut m, "engine_exchangeCapabilities", |_, _| Ok(json!(CAPABILITIES)));
    reg(&mut m, "engine_newPayloadV3", new_payload_v3);
    reg(&mut m, "engine_newPayloadV4", new_payload_v4);
    reg(&mut m, "engine_newPayloadV5", new_payload_v5);
    reg(&mut m, "engine_forkchoiceUpdatedV3", |n, p| fork_choice(n, p, 3));
    reg(&mut m, "engine_forkchoiceUpdatedV4", |n, p| fork_choice(n, p, 4));
    reg(&mut m, "engine_getPayloadV4", |n, p| get_payload(n, p, 4));
    reg(&mut m, "engine_getPayloadV5", |n, p| get_payload(n, p, 5));
    reg(&mut m, "engine_getPayloadV6", |n, p| get_payload(n, p, 6));
    reg(&mut m, "engine_getPayloadBodiesByHashV2", |n, p| {
        let (hashes,): (Vec<B256>,) = p.parse()?;
        if hashes.len() > 1024 {
            return Err(err(-38004, "Too large request"));
        }
        Ok(Value::Array(hashes.iter().map(|h| body_json(n, h)).collect::<Result<_, _>>()?))
    });
    reg(&mut m, "engine_getPayloadBodiesByRangeV2", |n, p| {
        let (start, count): (alloy_primitives::U64, alloy_primitives::U64) = p.parse()?;
        let (start, count) = (start.to::<u64>(), count.to::<u64>());
        if start == 0 || count == 0 {
            return Err(err(INVALID_PARAMS, "start and count must be positive"));
        }
        if count > 1024 {
            return Err(err(-38004, "Too large request"));
        }
        let mut out = Vec::new();
        for number in start..start.saturating_add(count) {
            match n.chain.store.canonical_hash(number).map_err(|e| err(INTERNAL_ERROR, e.to_string()))? {
                Some(h) => out.push(body_json(n, &h)?),
                None => break,
            }
        }
        Ok(Value::Array(out))
    });
    reg(&mut m, "engine_getBlobsV1", |_, p| {
        let (hashes,): (Vec<B256>,) = p.parse()?;
        // No blob pool: every blob is unknown.
        Ok(Value::Array(vec![Value::Null; hashes.len()]))
    });
    m
}
