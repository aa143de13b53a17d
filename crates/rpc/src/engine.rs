//! Engine API (Cancun through Amsterdam): payload import, fork choice, payload building.

use crate::api::{EngineApiServer, ExecutionPayloadV4Input};
use crate::node::{BuiltPayload, InvalidBlock, Node};
use alloy_consensus::Transaction as _;
use alloy_eips::eip2718::Encodable2718;
use alloy_eips::eip7685::Requests;
use alloy_primitives::{keccak256, Bytes, B256, U64};
use alloy_rlp::Decodable;
use alloy_rpc_types_engine::{
    BlobAndProofV1, BlobAndProofV2, BlobsBundleV1, BlobsBundleV2, ExecutionPayloadBodyV2,
    ExecutionPayloadEnvelopeV3, ExecutionPayloadEnvelopeV4, ExecutionPayloadEnvelopeV5,
    ExecutionPayloadEnvelopeV6, ExecutionPayloadV3, ExecutionPayloadV4, ForkchoiceState,
    ForkchoiceUpdated, PayloadAttributes as EnginePayloadAttributes, PayloadId, PayloadStatus,
    PayloadStatusEnum, INVALID_FORK_CHOICE_STATE_ERROR, INVALID_PAYLOAD_ATTRIBUTES_ERROR,
};
use ethrex_blockchain::consensus::london::gas_limit_toward;
use ethrex_blockchain::fork_choice::ForkChoiceError;
use ethrex_blockchain::{BlockError, PayloadAttributes};
use ethrex_common::{Block, BlockAccessList, BlockWithBal, Fork, Transaction};
use jsonrpsee::core::RpcResult;
use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::RpcModule;
use std::sync::Arc;

// The Engine API's own error codes (execution-apis `src/engine/common.md`). alloy names
// only -38002 and -38003, used from there; JSON-RPC's codes come from jsonrpsee.
use jsonrpsee::types::error::{
    INTERNAL_ERROR_CODE as INTERNAL_ERROR, INVALID_PARAMS_CODE as INVALID_PARAMS,
    INVALID_PARAMS_MSG,
};
/// `-38001 Unknown payload`: no payload is being built under that id.
pub(crate) const UNKNOWN_PAYLOAD: i32 = -38001;
/// `-38004 Too large request`: more bodies asked for than one response may carry.
pub(crate) const TOO_LARGE_REQUEST: i32 = -38004;
/// `-38005 Unsupported fork`: the method version does not serve the payload's fork.
pub(crate) const UNSUPPORTED_FORK: i32 = -38005;

/// The Engine API methods this node serves, as `engine_exchangeCapabilities` lists them.
pub(crate) const CAPABILITIES: &[&str] = &[
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
    "engine_getBlobsV2",
    "engine_getBlobsV3",
];

fn err(code: i32, message: impl Into<String>) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(code, message.into(), None::<()>)
}

fn internal(e: impl std::fmt::Display) -> ErrorObjectOwned {
    err(INTERNAL_ERROR, e.to_string())
}

fn valid(hash: B256) -> PayloadStatus {
    PayloadStatus::new(PayloadStatusEnum::Valid, Some(hash))
}

/// INVALID. `validation_error` starts with the EF fixtures' exception name for the rule
/// the block breaks (`BlockException.*` / `TransactionException.*`), then `: ` and the
/// details, so a test harness can match verdicts without parsing prose.
fn invalid(latest_valid: Option<B256>, validation_error: String) -> PayloadStatus {
    PayloadStatus::new(PayloadStatusEnum::Invalid { validation_error }, latest_valid)
}

fn verdict_text(error: &BlockError) -> String {
    format!("{}: {error}", error.ef_exception())
}

fn remembered(verdict: InvalidBlock) -> PayloadStatus {
    invalid(Some(verdict.latest_valid), verdict.reason)
}

fn no_status(status: PayloadStatusEnum) -> PayloadStatus {
    PayloadStatus::from_status(status)
}

/// The payload fields every version shares, as a block.
struct Incoming {
    block: Block,
    bal: Option<BlockAccessList>,
    expected_hash: B256,
}

/// The fork a payload with this timestamp follows, as the Engine API versions see it:
/// the blob-parameter-only forks change blob limits only and use Osaka's methods.
fn fork_of(node: &Node, timestamp: u64) -> Fork {
    match node.chain.config.pos_fork_at(timestamp) {
        Fork::Bpo1 | Fork::Bpo2 | Fork::Bpo3 | Fork::Bpo4 | Fork::Bpo5 => Fork::Osaka,
        fork => fork,
    }
}

fn require_fork(node: &Node, timestamp: u64, allowed: &[Fork]) -> Result<(), ErrorObjectOwned> {
    let fork = fork_of(node, timestamp);
    if allowed.contains(&fork) {
        Ok(())
    } else {
        Err(err(
            UNSUPPORTED_FORK,
            format!("Unsupported fork: {} at timestamp {timestamp}", fork.name()),
        ))
    }
}

fn block_from_v3(payload: ExecutionPayloadV3) -> Result<Block, String> {
    payload
        .try_into_block::<Transaction>()
        .map_err(|e| format!("BlockException.INCORRECT_BLOCK_FORMAT: invalid payload: {e}"))
}

/// Runs the import and turns its outcome into a payload status.
///
/// A block is INVALID only for a fault of its own (`BlockError::is_invalid_block`); the
/// node's own failures (storage, missing state) are JSON-RPC errors and leave no verdict,
/// so the consensus client can send the block again.
fn import_payload(
    node: &Node,
    incoming: Incoming,
    versioned_hashes: &[B256],
) -> Result<PayloadStatus, ErrorObjectOwned> {
    let Incoming { block, bal, expected_hash } = incoming;
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
    if store.header(&hash).map_err(internal)?.is_some() {
        return Ok(valid(hash));
    }
    let parent_known =
        store.header(&parent).map_err(internal)?.is_some() || node.pending.lock().contains(&parent);
    if !parent_known {
        node.pending.lock().insert(BlockWithBal { block, bal });
        return Ok(no_status(PayloadStatusEnum::Syncing));
    }
    if store.head().map_err(internal)? != Some(parent) {
        node.pending.lock().insert(BlockWithBal { block, bal });
        return Ok(no_status(PayloadStatusEnum::Accepted));
    }
    match node.chain.import_block(BlockWithBal { block, bal }) {
        Ok(_) => {
            node.pool_on_new_head(vec![]);
            Ok(valid(hash))
        }
        Err(e) if e.is_invalid_block() => {
            let verdict = InvalidBlock { latest_valid: parent, reason: verdict_text(&e) };
            node.mark_invalid(hash, verdict.clone());
            Ok(remembered(verdict))
        }
        Err(e) => Err(internal(e)),
    }
}

/// The INVALID status of a payload that does not decode into a block (so its block hash
/// cannot be checked): the `latestValidHash` is its parent if that is a block this node
/// imported, the parent's own latest valid ancestor if the parent is known invalid, and
/// `null` otherwise, as the spec asks when the valid ancestor is not known.
fn undecodable(node: &Node, parent: B256, reason: String) -> RpcResult<PayloadStatus> {
    let latest_valid = if node.chain.store.header(&parent).map_err(internal)?.is_some() {
        Some(parent)
    } else {
        node.invalid_verdict(&parent).map(|verdict| verdict.latest_valid)
    };
    Ok(invalid(latest_valid, reason))
}

/// Turns a V3-shaped payload into a block with the fields the payload leaves out of the
/// header (beacon root; from Prague on, the requests hash), and the block hash the payload
/// claims. The error is the `validationError` of a payload that does not decode: an
/// INVALID status (see [`undecodable`]), not a JSON-RPC error.
fn block_from_payload(
    payload: ExecutionPayloadV3,
    root: B256,
    requests: Option<&Requests>,
) -> Result<(Block, B256), String> {
    let expected_hash = payload.payload_inner.payload_inner.block_hash;
    let mut block = block_from_v3(payload)?;
    block.header.parent_beacon_block_root = Some(root);
    block.header.requests_hash = requests.map(Requests::requests_hash);
    Ok((block, expected_hash))
}

fn updated(status: PayloadStatus) -> RpcResult<ForkchoiceUpdated> {
    Ok(ForkchoiceUpdated::new(status))
}

/// `safe` / `finalized` must be zero (not yet known to the consensus layer) or a block on
/// the canonical chain, which now ends at the head.
fn check_on_head_chain(node: &Node, which: &str, hash: B256) -> Result<(), ErrorObjectOwned> {
    if hash.is_zero() {
        return Ok(());
    }
    let store = &node.chain.store;
    let number = store.block_number(&hash).map_err(internal)?;
    let canonical = match number {
        Some(n) => store.canonical_hash(n).map_err(internal)? == Some(hash),
        None => false,
    };
    if canonical {
        Ok(())
    } else {
        Err(err(
            INVALID_FORK_CHOICE_STATE_ERROR,
            format!("Invalid forkchoice state: {which} block {hash} is not on the head's chain"),
        ))
    }
}

/// The payload attributes the fork at their timestamp requires, checked after the head
/// moved (the spec keeps the fork choice even when the attributes are rejected).
fn check_attributes(
    node: &Node,
    head: &ethrex_common::Header,
    a: &EnginePayloadAttributes,
) -> Result<(), ErrorObjectOwned> {
    let bad = |why: &str| {
        Err(err(INVALID_PAYLOAD_ATTRIBUTES_ERROR, format!("Invalid payload attributes: {why}")))
    };
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

fn fork_choice(
    node: &Node,
    state: ForkchoiceState,
    attributes: Option<EnginePayloadAttributes>,
    version: u8,
) -> RpcResult<ForkchoiceUpdated> {
    if let Some(a) = &attributes {
        let fork = fork_of(node, a.timestamp);
        let ok = match version {
            3 => (Fork::Cancun..=Fork::Osaka).contains(&fork),
            _ => fork >= Fork::Amsterdam,
        };
        if !ok {
            return Err(err(
                UNSUPPORTED_FORK,
                format!("Unsupported fork: {} for forkchoiceUpdatedV{version}", fork.name()),
            ));
        }
    }
    let head = state.head_block_hash;
    if head.is_zero() {
        return Err(err(
            INVALID_FORK_CHOICE_STATE_ERROR,
            "Invalid forkchoice state: head block hash is zero",
        ));
    }
    let _guard = node.write_lock.lock();
    if let Some(verdict) = node.invalid_verdict(&head) {
        return updated(remembered(verdict));
    }
    // A head whose branch (still unexecuted) runs through a known-invalid block.
    if let Some(verdict) = invalid_ancestor_in_pending(node, head) {
        node.mark_invalid(head, verdict.clone());
        return updated(remembered(verdict));
    }
    let old_head = node.chain.store.head().map_err(internal)?;
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
        Err(ForkChoiceError::Other(e)) => return Err(internal(e)),
    }
    // Durability: VALID promises the head survives a crash (up to the configured lag).
    node.chain
        .store
        .persist(node.persistence_lag)
        .map_err(|e| internal(format!("the head could not be made durable: {e}")))?;
    if let Some(network) = node.network.get() {
        network.announce_head();
    }
    check_on_head_chain(node, "safe", state.safe_block_hash)?;
    check_on_head_chain(node, "finalized", state.finalized_block_hash)?;
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
            .map_err(internal)?
            .ok_or_else(|| internal("head header missing"))?;
        check_attributes(node, &header, &a)?;
        response = response.with_payload_id(build_payload(node, &header, a)?);
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

/// Most attempts at building one payload: a transaction that fails in the block is
/// dropped (with its sender's later ones) and the block built again without it.
const MAX_BUILD_ATTEMPTS: usize = 8;

/// The sidecars of a built block's blob transactions, in block order.
pub(crate) type Sidecars = Vec<Arc<ethrex_txpool::Sidecar>>;

/// Builds on the head from the pool's best pending transactions: senders by effective
/// tip, each in nonce order, while their gas limits fit the block's and their blobs the
/// block's blob limit (a blob transaction only with a sidecar of the block fork's
/// version). A transaction the block refuses is left out with its sender's later ones,
/// and the block is built again; the last attempt is an empty block.
pub(crate) fn build_from_pool(
    node: &Node,
    attributes: &PayloadAttributes,
) -> Result<(ethrex_blockchain::BuiltBlock, Sidecars), ethrex_blockchain::BlockError> {
    let accounts = crate::node::HeadAccounts(&node.chain.store);
    let config = &node.chain.config;
    let max_blobs = config.blob_params_at(attributes.timestamp).map_or(0, |p| p.max_blob_count);
    let cell_proofs = config.pos_fork_at(attributes.timestamp) >= Fork::Osaka;
    let mut excluded: std::collections::HashSet<alloy_primitives::Address> = Default::default();
    for _ in 0..MAX_BUILD_ATTEMPTS {
        let mut best = node.pool.best(&accounts);
        let mut gas_left = attributes.gas_limit;
        let mut blobs_left = max_blobs as usize;
        let mut chosen: Vec<(alloy_primitives::Address, ethrex_common::Transaction)> = Vec::new();
        let mut sidecars = Vec::new();
        while let Some(pooled) = best.next() {
            let gas = alloy_consensus::Transaction::gas_limit(&*pooled.tx);
            let blobs = ethrex_txpool::blob_count(&pooled.tx);
            let sidecar = (blobs > 0).then(|| node.pool.sidecar(&pooled.hash));
            let fits = gas <= gas_left
                && blobs <= blobs_left
                && sidecar.as_ref().is_none_or(|s| s.as_ref().is_some_and(|s| s.is_eip7594() == cell_proofs));
            if excluded.contains(&pooled.sender) || !fits {
                best.skip_sender(pooled.sender);
                continue;
            }
            gas_left -= gas;
            blobs_left -= blobs;
            sidecars.extend(sidecar.flatten());
            chosen.push((pooled.sender, (*pooled.tx).clone()));
            if gas_left < 21_000 {
                break;
            }
        }
        let senders: Vec<_> = chosen.iter().map(|(s, _)| *s).collect();
        let txs = chosen.into_iter().map(|(_, tx)| tx).collect();
        match node.chain.build_payload(attributes, txs) {
            Ok(built) => return Ok((built, sidecars)),
            Err(e) => match failing_transaction(&e).and_then(|i| senders.get(i)) {
                Some(sender) => {
                    tracing::debug!(%sender, error = %e, "payload building left a sender out");
                    excluded.insert(*sender);
                }
                None => return Err(e),
            },
        }
    }
    Ok((node.chain.build_payload(attributes, vec![])?, vec![]))
}

/// The blobs bundle of a pre-Osaka payload: one proof per blob.
fn bundle_v1(sidecars: &Sidecars) -> BlobsBundleV1 {
    let mut bundle = BlobsBundleV1::default();
    for sidecar in sidecars.iter().filter_map(|s| s.as_eip4844()) {
        bundle.commitments.extend_from_slice(&sidecar.commitments);
        bundle.proofs.extend_from_slice(&sidecar.proofs);
        bundle.blobs.extend_from_slice(&sidecar.blobs);
    }
    bundle
}

/// The blobs bundle of an Osaka-on payload: 128 cell proofs per blob.
fn bundle_v2(sidecars: &Sidecars) -> BlobsBundleV2 {
    let mut bundle = BlobsBundleV2::default();
    for sidecar in sidecars.iter().filter_map(|s| s.as_eip7594()) {
        bundle.commitments.extend_from_slice(&sidecar.commitments);
        bundle.proofs.extend_from_slice(&sidecar.cell_proofs);
        bundle.blobs.extend_from_slice(&sidecar.blobs);
    }
    bundle
}

/// Most versioned hashes one `getBlobs*` request may ask for (the spec's minimum).
const MAX_BLOB_REQUEST: usize = 128;

/// The pooled blob with this versioned hash and its proofs, if its sidecar carries
/// cell proofs (`cell_proofs`) or one proof per blob (otherwise).
fn blob_and_proofs(
    node: &Node,
    hash: &B256,
    cell_proofs: bool,
) -> Option<(alloy_eips::eip4844::Blob, Vec<alloy_eips::eip4844::Bytes48>)> {
    let (sidecar, i) = node.pool.blob_store().blob(hash)?;
    match (&*sidecar, cell_proofs) {
        (ethrex_txpool::Sidecar::Eip7594(s), true) => {
            let per_blob = alloy_eips::eip7594::CELLS_PER_EXT_BLOB;
            Some((s.blobs[i], s.cell_proofs[i * per_blob..(i + 1) * per_blob].to_vec()))
        }
        (ethrex_txpool::Sidecar::Eip4844(s), false) => Some((s.blobs[i], vec![s.proofs[i]])),
        _ => None,
    }
}

/// The head's fork is Osaka or later (getBlobsV1 is then unsupported).
fn osaka_active(node: &Node) -> bool {
    node.pool.head().fork >= Fork::Osaka
}

/// The `getBlobsV2`/`V3` answer: each blob with its cell proofs, `None` where missing.
fn blobs_v2(node: &Node, hashes: &[B256]) -> RpcResult<Option<Vec<Option<BlobAndProofV2>>>> {
    if hashes.len() > MAX_BLOB_REQUEST {
        return Err(err(TOO_LARGE_REQUEST, "Too large request"));
    }
    if !node.following.load(std::sync::atomic::Ordering::Relaxed) {
        return Ok(None);
    }
    Ok(Some(
        hashes
            .iter()
            .map(|h| {
                blob_and_proofs(node, h, true)
                    .map(|(blob, proofs)| BlobAndProofV2 { blob: Box::new(blob), proofs })
            })
            .collect(),
    ))
}

/// The index of the transaction a build failed on, if it failed on one.
fn failing_transaction(error: &ethrex_blockchain::BlockError) -> Option<usize> {
    error.transaction_index()
}

fn build_payload(
    node: &Node,
    parent: &ethrex_common::Header,
    a: EnginePayloadAttributes,
) -> Result<PayloadId, ErrorObjectOwned> {
    let attributes = PayloadAttributes {
        timestamp: a.timestamp,
        fee_recipient: a.suggested_fee_recipient,
        prev_randao: a.prev_randao,
        gas_limit: gas_limit_toward(parent.gas_limit, node.target_gas_limit),
        withdrawals: a.withdrawals.clone().unwrap_or_default(),
        parent_beacon_block_root: a.parent_beacon_block_root.unwrap_or_default(),
        slot_number: a.slot_number.unwrap_or_default(),
        extra_data: Bytes::from_static(b"ethrex"),
    };
    let built = build_from_pool(node, &attributes).map_err(internal)?;
    let mut id_input = parent.hash_slow().to_vec();
    id_input.extend_from_slice(&a.timestamp.to_be_bytes());
    id_input.extend_from_slice(a.prev_randao.as_slice());
    id_input.extend_from_slice(a.suggested_fee_recipient.as_slice());
    let id = PayloadId::new(keccak256(&id_input)[..8].try_into().expect("8 bytes"));
    let (built, sidecars) = built;
    node.payloads.lock().insert(id, BuiltPayload::new(built, sidecars));
    Ok(id)
}

/// The payload built under `id`, if its fork is the one `engine_getPayloadV{version}`
/// serves (-38001 for an unknown id, -38005 for another fork); with it, its V3 fields.
fn built_payload(
    node: &Node,
    id: PayloadId,
    version: u8,
) -> RpcResult<(BuiltPayload, ExecutionPayloadV3)> {
    let built = node
        .payloads
        .lock()
        .get(&id)
        .cloned()
        .ok_or_else(|| err(UNKNOWN_PAYLOAD, "Unknown payload"))?;
    let fork = fork_of(node, built.block.block.header.timestamp);
    let expected = match version {
        4 => Fork::Prague,
        5 => Fork::Osaka,
        _ => Fork::Amsterdam,
    };
    if fork != expected {
        return Err(err(
            UNSUPPORTED_FORK,
            format!(
                "Unsupported fork: payload is {}, engine_getPayloadV{version} serves {}",
                fork.name(),
                expected.name()
            ),
        ));
    }
    let block = &built.block.block;
    let payload = ExecutionPayloadV3::from_block_unchecked(block.header.hash_slow(), block);
    Ok((built, payload))
}

/// The node builds its own payloads: it never asks the consensus client to prefer a
/// builder's.
const SHOULD_OVERRIDE_BUILDER: bool = false;

/// The body of the block `hash` for `getPayloadBodies*V2`; `None` if the block is unknown.
fn payload_body(node: &Node, hash: &B256) -> RpcResult<Option<ExecutionPayloadBodyV2>> {
    let store = &node.chain.store;
    let Some(body) = store.body(hash).map_err(internal)? else { return Ok(None) };
    let bal = store.bal(hash).map_err(internal)?.map(|b| Bytes::from(alloy_rlp::encode(&b)));
    Ok(Some(ExecutionPayloadBodyV2 {
        transactions: body.transactions.iter().map(|tx| tx.encoded_2718().into()).collect(),
        withdrawals: body.withdrawals.map(|w| w.into_inner()),
        block_access_list: bal,
    }))
}

/// Most bodies one `getPayloadBodies*` request may ask for.
const MAX_PAYLOAD_BODIES: u64 = 1024;

/// The Engine API over the shared node state.
#[derive(Clone)]
pub(crate) struct EngineRpc {
    node: Arc<Node>,
}

impl EngineRpc {
    /// An Engine API server's handlers over `node`.
    pub(crate) fn new(node: Arc<Node>) -> Self {
        Self { node }
    }

    /// Checks the V3-shaped payload against the fork and imports it: the status, or an
    /// INVALID status when it does not decode into a block.
    fn new_payload_v3_shaped(
        &self,
        payload: ExecutionPayloadV3,
        versioned_hashes: &[B256],
        root: B256,
        requests: Option<&Requests>,
        forks: &[Fork],
    ) -> RpcResult<PayloadStatus> {
        let node = &*self.node;
        let inner = &payload.payload_inner.payload_inner;
        require_fork(node, inner.timestamp, forks)?;
        let parent = inner.parent_hash;
        match block_from_payload(payload, root, requests) {
            Ok((block, expected_hash)) => {
                import_payload(node, Incoming { block, bal: None, expected_hash }, versioned_hashes)
            }
            Err(reason) => undecodable(node, parent, reason),
        }
    }
}

impl EngineApiServer for EngineRpc {
    fn exchange_capabilities(&self, _capabilities: Option<Vec<String>>) -> RpcResult<Vec<String>> {
        Ok(CAPABILITIES.iter().map(|c| c.to_string()).collect())
    }

    fn new_payload_v3(
        &self,
        payload: ExecutionPayloadV3,
        versioned_hashes: Vec<B256>,
        parent_beacon_block_root: B256,
    ) -> RpcResult<PayloadStatus> {
        self.new_payload_v3_shaped(
            payload,
            &versioned_hashes,
            parent_beacon_block_root,
            None,
            &[Fork::Cancun],
        )
    }

    fn new_payload_v4(
        &self,
        payload: ExecutionPayloadV3,
        versioned_hashes: Vec<B256>,
        parent_beacon_block_root: B256,
        execution_requests: Requests,
    ) -> RpcResult<PayloadStatus> {
        self.new_payload_v3_shaped(
            payload,
            &versioned_hashes,
            parent_beacon_block_root,
            Some(&execution_requests),
            &[Fork::Prague, Fork::Osaka],
        )
    }

    fn new_payload_v5(
        &self,
        payload: ExecutionPayloadV4Input,
        versioned_hashes: Vec<B256>,
        parent_beacon_block_root: B256,
        execution_requests: Requests,
    ) -> RpcResult<PayloadStatus> {
        let node = &*self.node;
        let ExecutionPayloadV4Input { payload_inner, block_access_list, slot_number } = payload;
        let Some(bal_bytes) = block_access_list else {
            return Err(err(INVALID_PARAMS, "payload has no blockAccessList"));
        };
        let Some(slot_number) = slot_number else {
            // As the parser reports any other missing field.
            return Err(ErrorObjectOwned::owned(
                INVALID_PARAMS,
                INVALID_PARAMS_MSG,
                Some("missing field `slotNumber`"),
            ));
        };
        let inner = &payload_inner.payload_inner.payload_inner;
        require_fork(node, inner.timestamp, &[Fork::Amsterdam])?;
        let parent = inner.parent_hash;
        let bal = match BlockAccessList::decode(&mut bal_bytes.as_ref()) {
            Ok(b) => b,
            Err(e) => {
                let reason = format!(
                    "BlockException.INCORRECT_BLOCK_FORMAT: block access list does not decode: {e}"
                );
                return undecodable(node, parent, reason);
            }
        };
        let (mut block, expected_hash) = match block_from_payload(
            payload_inner,
            parent_beacon_block_root,
            Some(&execution_requests),
        ) {
            Ok(b) => b,
            Err(reason) => return undecodable(node, parent, reason),
        };
        block.header.block_access_list_hash = Some(keccak256(&bal_bytes));
        block.header.slot_number = Some(slot_number.to());
        import_payload(node, Incoming { block, bal: Some(bal), expected_hash }, &versioned_hashes)
    }

    fn forkchoice_updated_v3(
        &self,
        state: ForkchoiceState,
        attributes: Option<EnginePayloadAttributes>,
    ) -> RpcResult<ForkchoiceUpdated> {
        fork_choice(&self.node, state, attributes, 3)
    }

    fn forkchoice_updated_v4(
        &self,
        state: ForkchoiceState,
        attributes: Option<EnginePayloadAttributes>,
    ) -> RpcResult<ForkchoiceUpdated> {
        fork_choice(&self.node, state, attributes, 4)
    }

    fn get_payload_v4(&self, payload_id: PayloadId) -> RpcResult<ExecutionPayloadEnvelopeV4> {
        let (built, execution_payload) = built_payload(&self.node, payload_id, 4)?;
        Ok(ExecutionPayloadEnvelopeV4 {
            envelope_inner: ExecutionPayloadEnvelopeV3 {
                blobs_bundle: bundle_v1(&built.sidecars),
                execution_payload,
                block_value: built.fees,
                should_override_builder: SHOULD_OVERRIDE_BUILDER,
            },
            execution_requests: Requests::new(built.requests),
        })
    }

    fn get_payload_v5(&self, payload_id: PayloadId) -> RpcResult<ExecutionPayloadEnvelopeV5> {
        let (built, execution_payload) = built_payload(&self.node, payload_id, 5)?;
        Ok(ExecutionPayloadEnvelopeV5 {
            blobs_bundle: bundle_v2(&built.sidecars),
            execution_payload,
            block_value: built.fees,
            should_override_builder: SHOULD_OVERRIDE_BUILDER,
            execution_requests: Requests::new(built.requests),
        })
    }

    fn get_payload_v6(&self, payload_id: PayloadId) -> RpcResult<ExecutionPayloadEnvelopeV6> {
        let (built, payload_inner) = built_payload(&self.node, payload_id, 6)?;
        let header = &built.block.block.header;
        let execution_payload = ExecutionPayloadV4 {
            payload_inner,
            block_access_list: alloy_rlp::encode(built.block.bal.clone().unwrap_or_default())
                .into(),
            slot_number: header.slot_number.unwrap_or_default(),
        };
        Ok(ExecutionPayloadEnvelopeV6 {
            blobs_bundle: bundle_v2(&built.sidecars),
            execution_payload,
            block_value: built.fees,
            should_override_builder: SHOULD_OVERRIDE_BUILDER,
            execution_requests: Requests::new(built.requests),
        })
    }

    fn get_payload_bodies_by_hash_v2(
        &self,
        block_hashes: Vec<B256>,
    ) -> RpcResult<Vec<Option<ExecutionPayloadBodyV2>>> {
        if block_hashes.len() as u64 > MAX_PAYLOAD_BODIES {
            return Err(err(TOO_LARGE_REQUEST, "Too large request"));
        }
        block_hashes.iter().map(|h| payload_body(&self.node, h)).collect()
    }

    fn get_payload_bodies_by_range_v2(
        &self,
        start: U64,
        count: U64,
    ) -> RpcResult<Vec<Option<ExecutionPayloadBodyV2>>> {
        let (start, count) = (start.to::<u64>(), count.to::<u64>());
        if start == 0 || count == 0 {
            return Err(err(INVALID_PARAMS, "start and count must be positive"));
        }
        if count > MAX_PAYLOAD_BODIES {
            return Err(err(TOO_LARGE_REQUEST, "Too large request"));
        }
        let mut out = Vec::new();
        for number in start..start.saturating_add(count) {
            match self.node.chain.store.canonical_hash(number).map_err(internal)? {
                Some(h) => out.push(payload_body(&self.node, &h)?),
                None => break,
            }
        }
        Ok(out)
    }

    fn get_blobs_v1(&self, versioned_hashes: Vec<B256>) -> RpcResult<Vec<Option<BlobAndProofV1>>> {
        if osaka_active(&self.node) {
            return Err(err(UNSUPPORTED_FORK, "Unsupported fork: engine_getBlobsV1 ends at Osaka"));
        }
        if versioned_hashes.len() > MAX_BLOB_REQUEST {
            return Err(err(TOO_LARGE_REQUEST, "Too large request"));
        }
        Ok(versioned_hashes
            .iter()
            .map(|h| {
                blob_and_proofs(&self.node, h, false)
                    .map(|(blob, proofs)| BlobAndProofV1 { blob: Box::new(blob), proof: proofs[0] })
            })
            .collect())
    }

    fn get_blobs_v2(&self, versioned_hashes: Vec<B256>) -> RpcResult<Option<Vec<BlobAndProofV2>>> {
        // All or nothing.
        Ok(blobs_v2(&self.node, &versioned_hashes)?.and_then(|all| all.into_iter().collect()))
    }

    fn get_blobs_v3(
        &self,
        versioned_hashes: Vec<B256>,
    ) -> RpcResult<Option<Vec<Option<BlobAndProofV2>>>> {
        blobs_v2(&self.node, &versioned_hashes)
    }
}

/// The Engine API methods (the ones in [`CAPABILITIES`]) over the shared node state.
pub(crate) fn module(node: Arc<Node>) -> RpcModule<EngineRpc> {
    EngineRpc::new(node).into_rpc()
}
