//! `testing_buildBlockV1`: a block built on the head from the given transactions (or
//! the pool's best) and handed back without being imported: the chain is unchanged
//! whatever the outcome.

use crate::build::{build_from_pool, gas_limit_for};
use crate::error::EngineError;
use crate::node::{BuiltPayload, Node};
use alloy_primitives::{Bytes, B256};
use alloy_rpc_types_engine::PayloadAttributes as EnginePayloadAttributes;
use ethrex_blockchain::PayloadAttributes;
use ethrex_common::Transaction;

/// Builds a block on `parent` (which must be the head) for `a` with exactly
/// `transactions` (any that cannot be included fails the call), or from the pool when
/// `None`, with `extra_data` in its header.
///
/// # Errors
/// [`EngineError::InvalidParams`] for a parent that is not the head, the block builder's
/// refusal (an invalid transaction) as [`EngineError::Internal`].
pub fn build_block_for_testing(
    node: &Node,
    parent: B256,
    a: &EnginePayloadAttributes,
    transactions: Option<Vec<Transaction>>,
    extra_data: Bytes,
) -> Result<BuiltPayload, EngineError> {
    let store = &node.chain.store;
    let head = store.head().map_err(EngineError::internal)?;
    if head != Some(parent) {
        return Err(EngineError::InvalidParams(format!(
            "parent {parent} is not the head: blocks are built on the head only"
        )));
    }
    let header = store
        .header(&parent)
        .map_err(EngineError::internal)?
        .ok_or_else(|| EngineError::internal("head header missing"))?;
    let attributes = PayloadAttributes {
        timestamp: a.timestamp,
        fee_recipient: a.suggested_fee_recipient,
        prev_randao: a.prev_randao,
        gas_limit: gas_limit_for(node, &header, a),
        withdrawals: a.withdrawals.clone().unwrap_or_default(),
        parent_beacon_block_root: a.parent_beacon_block_root.unwrap_or_default(),
        slot_number: a.slot_number.unwrap_or_default(),
        extra_data,
    };
    let (built, sidecars) = match transactions {
        None => build_from_pool(node, &attributes),
        Some(txs) => node.chain.build_payload(&attributes, txs).map(|b| (b, vec![])),
    }
    .map_err(EngineError::internal)?;
    Ok(BuiltPayload::new(built, sidecars))
}
