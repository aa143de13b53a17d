//! `engine_newPayload`: a payload becomes a block (or an INVALID status when it does not
//! decode), is checked against what the consensus layer says about it (block hash,
//! blob versioned hashes), and is imported when its parent is the head, kept as a side
//! block when its parent is known, or answered SYNCING when it is not.
//!
//! A block is INVALID only for a fault of its own (`BlockError::is_invalid_block`); the
//! node's own failures (storage, missing state) are errors and leave no verdict, so the
//! consensus client can send the block again.

use crate::error::EngineError;
use crate::node::{InvalidBlock, Node};
use alloy_consensus::Transaction as _;
use alloy_eips::eip7685::Requests;
use alloy_primitives::{keccak256, Bytes, B256};
use alloy_rlp::Decodable;
use alloy_rpc_types_engine::{ExecutionPayloadV3, PayloadStatus, PayloadStatusEnum};
use ethrex_blockchain::BlockError;
use ethrex_common::{Block, BlockAccessList, BlockWithBal, Fork, Transaction};

/// A payload as the consensus layer hands it over, every version's fields.
#[derive(Debug, Clone)]
pub struct NewPayload {
    /// The execution payload (V3 fields).
    pub payload: ExecutionPayloadV3,
    /// The blob versioned hashes the consensus layer expects, in order.
    pub versioned_hashes: Vec<B256>,
    /// The parent beacon block root (the header's, Cancun on).
    pub parent_beacon_block_root: B256,
    /// The execution requests (Prague on).
    pub execution_requests: Option<Requests>,
    /// The block access list's RLP and the slot number (Amsterdam on).
    pub amsterdam: Option<(Bytes, u64)>,
}

pub(crate) fn valid(hash: B256) -> PayloadStatus {
    PayloadStatus::new(PayloadStatusEnum::Valid, Some(hash))
}

/// INVALID. `validation_error` starts with the EF fixtures' exception name for the rule
/// the block breaks (`BlockException.*` / `TransactionException.*`), then `: ` and the
/// details, so a test harness can match verdicts without parsing prose.
pub(crate) fn invalid(latest_valid: Option<B256>, validation_error: String) -> PayloadStatus {
    PayloadStatus::new(PayloadStatusEnum::Invalid { validation_error }, latest_valid)
}

pub(crate) fn verdict_text(error: &BlockError) -> String {
    format!("{}: {error}", error.ef_exception())
}

pub(crate) fn remembered(verdict: InvalidBlock) -> PayloadStatus {
    invalid(Some(verdict.latest_valid), verdict.reason)
}

pub(crate) fn no_status(status: PayloadStatusEnum) -> PayloadStatus {
    PayloadStatus::from_status(status)
}

/// The fork a payload with this timestamp follows, as the Engine API versions see it:
/// the blob-parameter-only forks change blob limits only and use Osaka's methods.
pub fn fork_of(node: &Node, timestamp: u64) -> Fork {
    match node.chain.config.pos_fork_at(timestamp) {
        Fork::Bpo1 | Fork::Bpo2 | Fork::Bpo3 | Fork::Bpo4 | Fork::Bpo5 => Fork::Osaka,
        fork => fork,
    }
}

fn require_fork(node: &Node, timestamp: u64, allowed: &[Fork]) -> Result<(), EngineError> {
    let fork = fork_of(node, timestamp);
    if allowed.contains(&fork) {
        Ok(())
    } else {
        Err(EngineError::UnsupportedFork(format!("{} at timestamp {timestamp}", fork.name())))
    }
}

/// Handles a payload whose method version serves `forks`: the status, or an INVALID
/// status when it does not decode into a block.
pub fn new_payload(
    node: &Node,
    payload: NewPayload,
    forks: &[Fork],
) -> Result<PayloadStatus, EngineError> {
    let NewPayload {
        payload,
        versioned_hashes,
        parent_beacon_block_root,
        execution_requests,
        amsterdam,
    } = payload;
    let inner = &payload.payload_inner.payload_inner;
    require_fork(node, inner.timestamp, forks)?;
    // Transaction intake waits until the verdict is in (see `Node::intake`).
    let _priority = node.intake.write();
    let parent = inner.parent_hash;
    let bal = match &amsterdam {
        None => None,
        Some((bytes, _)) => match BlockAccessList::decode(&mut bytes.as_ref()) {
            Ok(b) => Some(b),
            Err(e) => {
                let reason = format!(
                    "BlockException.INCORRECT_BLOCK_FORMAT: block access list does not decode: {e}"
                );
                return undecodable(node, parent, reason);
            }
        },
    };
    let (mut block, expected_hash) =
        match block_from_payload(payload, parent_beacon_block_root, execution_requests.as_ref()) {
            Ok(b) => b,
            Err(reason) => return undecodable(node, parent, reason),
        };
    if let Some((bytes, slot_number)) = &amsterdam {
        block.header.block_access_list_hash = Some(keccak256(bytes));
        block.header.slot_number = Some(*slot_number);
    }
    import_payload(node, block, bal, expected_hash, &versioned_hashes)
}

/// Runs the import and turns its outcome into a payload status.
fn import_payload(
    node: &Node,
    block: Block,
    bal: Option<BlockAccessList>,
    expected_hash: B256,
    versioned_hashes: &[B256],
) -> Result<PayloadStatus, EngineError> {
    let hash = block.header.hash_slow();
    if hash != expected_hash {
        // Since engine_newPayloadV2 a wrong block hash is INVALID with no latest valid hash
        // (INVALID_BLOCK_HASH belongs to V1).
        return Ok(invalid(None, format!("BlockException.INVALID_BLOCK_HASH: block hash {expected_hash} does not match the payload ({hash})")));
    }
    let parent = block.header.parent_hash;
    let hashes: Vec<B256> = block
        .body
        .transactions
        .iter()
        .flat_map(|tx| tx.blob_versioned_hashes().unwrap_or_default().to_vec())
        .collect();
    if hashes != versioned_hashes {
        // The consensus layer's list disagrees with the block: no verdict on the block.
        return Ok(invalid(Some(parent), "BlockException.INVALID_VERSIONED_HASHES: blob versioned hashes do not match the transactions".into()));
    }
    let _guard = node.write_lock.lock();
    if let Some(verdict) = node.invalid_verdict(&hash) {
        return Ok(remembered(verdict));
    }
    // A descendant of an invalid block is invalid: answered without executing it.
    if let Some(ancestor) = node.invalid_verdict(&parent) {
        let verdict = InvalidBlock {
            latest_valid: ancestor.latest_valid,
            reason: format!("{} (ancestor {parent} is invalid)", ancestor.reason),
        };
        node.mark_invalid(hash, verdict.clone());
        return Ok(remembered(verdict));
    }
    let store = &node.chain.store;
    if store.header(&hash).map_err(EngineError::internal)?.is_some() {
        return Ok(valid(hash));
    }
    let parent_known = store.header(&parent).map_err(EngineError::internal)?.is_some()
        || node.pending.lock().contains(&parent);
    if !parent_known {
        node.pending.lock().insert(BlockWithBal { block, bal });
        return Ok(no_status(PayloadStatusEnum::Syncing));
    }
    if store.head().map_err(EngineError::internal)? != Some(parent) {
        node.pending.lock().insert(BlockWithBal { block, bal });
        return Ok(no_status(PayloadStatusEnum::Accepted));
    }
    match node.chain.import_block(BlockWithBal { block, bal }) {
        // The pool catches up with the new head at the fork choice that follows, off
        // this answer's path (a full pool's clean-up would add to every newPayload).
        Ok(_) => Ok(valid(hash)),
        Err(e) if e.is_invalid_block() => {
            let verdict = InvalidBlock { latest_valid: parent, reason: verdict_text(&e) };
            node.mark_invalid(hash, verdict.clone());
            Ok(remembered(verdict))
        }
        Err(e) => Err(EngineError::internal(e)),
    }
}

/// The INVALID status of a payload that does not decode into a block (so its block hash
/// cannot be checked): the `latestValidHash` is its parent if that is a block this node
/// imported, the parent's own latest valid ancestor if the parent is known invalid, and
/// `null` otherwise, as the spec asks when the valid ancestor is not known.
fn undecodable(node: &Node, parent: B256, reason: String) -> Result<PayloadStatus, EngineError> {
    let latest_valid = if node.chain.store.header(&parent).map_err(EngineError::internal)?.is_some()
    {
        Some(parent)
    } else {
        node.invalid_verdict(&parent).map(|verdict| verdict.latest_valid)
    };
    Ok(invalid(latest_valid, reason))
}

/// Turns a V3-shaped payload into a block with the fields the payload leaves out of the
/// header (beacon root; from Prague on, the requests hash), and the block hash the payload
/// claims. The error is the `validationError` of a payload that does not decode: an
/// INVALID status (see [`undecodable`]), not an error.
fn block_from_payload(
    payload: ExecutionPayloadV3,
    root: B256,
    requests: Option<&Requests>,
) -> Result<(Block, B256), String> {
    let expected_hash = payload.payload_inner.payload_inner.block_hash;
    let mut block = payload
        .try_into_block::<Transaction>()
        .map_err(|e| format!("BlockException.INCORRECT_BLOCK_FORMAT: invalid payload: {e}"))?;
    block.header.parent_beacon_block_root = Some(root);
    block.header.requests_hash = requests.map(Requests::requests_hash);
    Ok((block, expected_hash))
}
