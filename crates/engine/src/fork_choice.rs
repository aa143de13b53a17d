//! `engine_forkchoiceUpdated`: the consensus layer names the head, the safe and the
//! finalized block. The head moves there (a reorg takes the pool's transactions of the
//! blocks it unwinds back), is made durable before VALID is answered, and a head the node
//! lacks is fetched from peers (SYNCING meanwhile). A head known invalid, or reached
//! through an invalid side block, is answered INVALID without execution.

use crate::error::EngineError;
use crate::new_payload::{fork_of, no_status, remembered, valid, verdict_text};
use crate::node::{InvalidBlock, Node};
use alloy_primitives::B256;
use alloy_rpc_types_engine::{
    ForkchoiceState, ForkchoiceUpdated, PayloadAttributes as EnginePayloadAttributes,
    PayloadStatus, PayloadStatusEnum,
};
use ethrex_blockchain::fork_choice::ForkChoiceError;
use ethrex_common::Fork;

fn updated(status: PayloadStatus) -> Result<ForkchoiceUpdated, EngineError> {
    Ok(ForkchoiceUpdated::new(status))
}

/// `safe` / `finalized` must be zero (not yet known to the consensus layer) or a block on
/// the canonical chain, which now ends at the head.
fn check_on_head_chain(node: &Node, which: &str, hash: B256) -> Result<(), EngineError> {
    if hash.is_zero() {
        return Ok(());
    }
    let store = &node.chain.store;
    let number = store.block_number(&hash).map_err(EngineError::internal)?;
    let canonical = match number {
        Some(n) => store.canonical_hash(n).map_err(EngineError::internal)? == Some(hash),
        None => false,
    };
    if canonical {
        Ok(())
    } else {
        Err(EngineError::InvalidForkchoiceState(format!(
            "{which} block {hash} is not on the head's chain"
        )))
    }
}

/// The payload attributes the fork at their timestamp requires, checked after the head
/// moved (the spec keeps the fork choice even when the attributes are rejected).
fn check_attributes(
    node: &Node,
    head: &ethrex_common::Header,
    a: &EnginePayloadAttributes,
) -> Result<(), EngineError> {
    let bad = |why: &str| Err(EngineError::InvalidPayloadAttributes(why.to_string()));
    if a.timestamp <= head.timestamp {
        return bad(&format!(
            "timestamp {} is not after the head's {}",
            a.timestamp, head.timestamp
        ));
    }
    let fork = fork_of(node, a.timestamp);
    if fork >= Fork::Shanghai && a.withdrawals.is_none() {
        return bad("withdrawals missing");
    }
    if fork >= Fork::Cancun && a.parent_beacon_block_root.is_none() {
        return bad("parentBeaconBlockRoot missing");
    }
    if fork >= Fork::Amsterdam && a.slot_number.is_none() {
        return bad("slotNumber missing");
    }
    if fork < Fork::Amsterdam && a.slot_number.is_some() {
        return bad(&format!("slotNumber given for a {} payload", fork.name()));
    }
    Ok(())
}

/// `engine_forkchoiceUpdatedV{version}`: moves the head to `state`'s (executing side
/// blocks on the way, or asking the network for a chain the node lacks), then, with
/// `attributes`, starts building a payload on it.
pub fn fork_choice(
    node: &std::sync::Arc<Node>,
    state: ForkchoiceState,
    attributes: Option<EnginePayloadAttributes>,
    version: u8,
) -> Result<ForkchoiceUpdated, EngineError> {
    if let Some(a) = &attributes {
        let fork = fork_of(node, a.timestamp);
        let ok = match version {
            3 => (Fork::Cancun..=Fork::Osaka).contains(&fork),
            _ => fork >= Fork::Amsterdam,
        };
        if !ok {
            return Err(EngineError::UnsupportedFork(format!(
                "{} for forkchoiceUpdatedV{version}",
                fork.name()
            )));
        }
    }
    let head = state.head_block_hash;
    if head.is_zero() {
        return Err(EngineError::InvalidForkchoiceState("head block hash is zero".into()));
    }
    // Transaction intake waits until the head moved and the payload is started (see
    // `Node::intake`).
    let _priority = node.intake.write();
    let _guard = node.write_lock.lock();
    if let Some(verdict) = node.invalid_verdict(&head) {
        return updated(remembered(verdict));
    }
    // A head whose branch (still unexecuted) runs through a known-invalid block.
    if let Some(verdict) = invalid_ancestor_in_pending(node, head) {
        node.mark_invalid(head, verdict.clone());
        return updated(remembered(verdict));
    }
    let old_head = node.chain.store.head().map_err(EngineError::internal)?;
    let result = {
        let pending = node.pending.lock();
        node.chain.set_head(head, &*pending)
    };
    match result {
        Ok(()) => {
            let unwound = old_head.map(|h| unwound_transactions(node, h)).unwrap_or_default();
            node.pool_on_new_head(unwound);
            node.following.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        Err(ForkChoiceError::Unknown(_)) => {
            // Fetch the missing chain from peers; answered VALID once it is imported.
            if let Some(network) = node.network.get() {
                network.sync_to(head);
            }
            return updated(no_status(PayloadStatusEnum::Syncing));
        }
        Err(ForkChoiceError::InvalidBlock { hash, latest_valid, error }) => {
            let verdict = InvalidBlock { latest_valid, reason: verdict_text(&error) };
            node.mark_invalid(hash, verdict.clone());
            node.mark_invalid(head, verdict.clone());
            return updated(remembered(verdict));
        }
        Err(ForkChoiceError::Other(e)) => return Err(EngineError::internal(e)),
    }
    // Durability: VALID promises the head survives a crash (up to the configured lag).
    node.chain
        .store
        .persist(node.persistence_lag)
        .map_err(|e| EngineError::internal(format!("the head could not be made durable: {e}")))?;
    if let Some(network) = node.network.get() {
        network.announce_head();
    }
    check_on_head_chain(node, "safe", state.safe_block_hash)?;
    check_on_head_chain(node, "finalized", state.finalized_block_hash)?;
    *node.labels.lock() =
        crate::node::Labels { safe: state.safe_block_hash, finalized: state.finalized_block_hash };
    {
        let store = &node.chain.store;
        node.pending.lock().retain(|h, _| store.header(h).ok().flatten().is_none());
    }
    let mut response = ForkchoiceUpdated::new(valid(head));
    if let Some(a) = attributes {
        let header = node
            .chain
            .store
            .header(&head)
            .map_err(EngineError::internal)?
            .ok_or_else(|| EngineError::internal("head header missing"))?;
        check_attributes(node, &header, &a)?;
        response = response.with_payload_id(crate::build::build_payload(node, &header, a)?);
    }
    Ok(response)
}

/// The transactions of the blocks from `old_head` back to the canonical chain: those a
/// reorg took off it, for the pool to take back (at most 64 blocks, as geth).
fn unwound_transactions(node: &Node, old_head: B256) -> Vec<ethrex_common::Transaction> {
    let store = &node.chain.store;
    let mut txs = Vec::new();
    let mut cursor = old_head;
    for _ in 0..64 {
        let Ok(Some(block)) = store.block(&cursor) else { break };
        if store.canonical_hash(block.header.number).ok().flatten() == Some(cursor) {
            break;
        }
        cursor = block.header.parent_hash;
        txs.extend(block.body.transactions);
    }
    txs
}

/// Walks the unexecuted side blocks from `head` towards the canonical chain; returns a
/// verdict if one of them (or the block they attach to) is known invalid.
fn invalid_ancestor_in_pending(node: &Node, head: B256) -> Option<InvalidBlock> {
    let pending = node.pending.lock();
    let mut cursor = head;
    // Bounded by the side-block cache: every step visits a different cached block.
    for _ in 0..=crate::node::MAX_SIDE_BLOCKS {
        let parent = pending.get(&cursor)?.block.header.parent_hash;
        if let Some(ancestor) = node.invalid_verdict(&parent) {
            return Some(InvalidBlock {
                latest_valid: ancestor.latest_valid,
                reason: format!("{} (ancestor {parent} is invalid)", ancestor.reason),
            });
        }
        cursor = parent;
    }
    None
}
