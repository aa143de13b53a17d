//! `engine_getPayloadBodiesByHash/ByRangeV2`: canonical block bodies (transactions,
//! withdrawals, the block access list) for a consensus client backfilling, bounded per
//! request.

use crate::error::EngineError;
use crate::node::Node;
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{Bytes, B256};
use alloy_rpc_types_engine::ExecutionPayloadBodyV2;

/// Most bodies one `getPayloadBodies*` request may ask for.
pub const MAX_PAYLOAD_BODIES: u64 = 1024;

/// The body of the block `hash`; `None` if the block is unknown.
fn payload_body(node: &Node, hash: &B256) -> Result<Option<ExecutionPayloadBodyV2>, EngineError> {
    let store = &node.chain.store;
    let Some(body) = store.body(hash).map_err(EngineError::internal)? else { return Ok(None) };
    let bal =
        store.bal(hash).map_err(EngineError::internal)?.map(|b| Bytes::from(alloy_rlp::encode(&b)));
    Ok(Some(ExecutionPayloadBodyV2 {
        transactions: body.transactions.iter().map(|tx| tx.encoded_2718().into()).collect(),
        withdrawals: body.withdrawals.map(|w| w.into_inner()),
        block_access_list: bal,
    }))
}

/// The bodies of `hashes`, `None` for unknown blocks.
pub fn bodies_by_hash(
    node: &Node,
    hashes: &[B256],
) -> Result<Vec<Option<ExecutionPayloadBodyV2>>, EngineError> {
    if hashes.len() as u64 > MAX_PAYLOAD_BODIES {
        return Err(EngineError::TooLargeRequest);
    }
    hashes.iter().map(|h| payload_body(node, h)).collect()
}

/// The bodies of the canonical blocks `start..start + count`, ending early at the head.
pub fn bodies_by_range(
    node: &Node,
    start: u64,
    count: u64,
) -> Result<Vec<Option<ExecutionPayloadBodyV2>>, EngineError> {
    if start == 0 || count == 0 {
        return Err(EngineError::InvalidParams("start and count must be positive".into()));
    }
    if count > MAX_PAYLOAD_BODIES {
        return Err(EngineError::TooLargeRequest);
    }
    let mut out = Vec::new();
    for number in start..start.saturating_add(count) {
        match node.chain.store.canonical_hash(number).map_err(EngineError::internal)? {
            Some(h) => out.push(payload_body(node, &h)?),
            None => break,
        }
    }
    Ok(out)
}
