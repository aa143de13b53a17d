//! Payload building: a block on the head from the pool's best transactions (the same
//! builder the chain generators use), its blobs bundle and its value for the fee
//! recipient, kept for `engine_getPayload` under an id derived from what makes payloads
//! differ.

use crate::error::EngineError;
use crate::new_payload::fork_of;
use crate::node::{BuiltPayload, Improving, Node};
use alloy_primitives::{keccak256, Bytes};
use alloy_rpc_types_engine::{
    BlobsBundleV1, BlobsBundleV2, ExecutionPayloadV3, PayloadAttributes as EnginePayloadAttributes,
    PayloadId,
};
use ethrex_blockchain::consensus::london::gas_limit_toward;
use ethrex_blockchain::PayloadAttributes;
use ethrex_common::Fork;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Most attempts at building one payload: a transaction that fails in the block is
/// dropped (with its sender's later ones) and the block built again without it.
const MAX_BUILD_ATTEMPTS: usize = 8;

/// The sidecars of a built block's blob transactions, in block order.
pub type Sidecars = Vec<Arc<ethrex_txpool::Sidecar>>;

/// Builds on the head from the pool's best pending transactions: senders by effective
/// tip, each in nonce order, while their gas limits fit the block's and their blobs the
/// block's blob limit (a blob transaction only with a sidecar of the block fork's
/// version). A transaction the block refuses is left out with its sender's later ones,
/// and the block is built again; the last attempt is an empty block.
pub fn build_from_pool(
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
                && sidecar
                    .as_ref()
                    .is_none_or(|s| s.as_ref().is_some_and(|s| s.is_eip7594() == cell_proofs));
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
            Err(e) => match e.transaction_index().and_then(|i| senders.get(i)) {
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
pub fn bundle_v1(sidecars: &Sidecars) -> BlobsBundleV1 {
    let mut bundle = BlobsBundleV1::default();
    for sidecar in sidecars.iter().filter_map(|s| s.as_eip4844()) {
        bundle.commitments.extend_from_slice(&sidecar.commitments);
        bundle.proofs.extend_from_slice(&sidecar.proofs);
        bundle.blobs.extend_from_slice(&sidecar.blobs);
    }
    bundle
}

/// The blobs bundle of an Osaka-on payload: 128 cell proofs per blob.
pub fn bundle_v2(sidecars: &Sidecars) -> BlobsBundleV2 {
    let mut bundle = BlobsBundleV2::default();
    for sidecar in sidecars.iter().filter_map(|s| s.as_eip7594()) {
        bundle.commitments.extend_from_slice(&sidecar.commitments);
        bundle.proofs.extend_from_slice(&sidecar.cell_proofs);
        bundle.blobs.extend_from_slice(&sidecar.blobs);
    }
    bundle
}

/// The gas limit a block built on `parent` for `a` gets: toward Amsterdam's
/// `targetGasLimit` attribute when given, else the node's target, by the protocol's step.
pub(crate) fn gas_limit_for(
    node: &Node,
    parent: &ethrex_common::Header,
    a: &EnginePayloadAttributes,
) -> u64 {
    gas_limit_toward(parent.gas_limit, a.target_gas_limit.unwrap_or(node.target_gas_limit))
}

/// Builds a payload on `parent` (the head) for `a` and keeps it for `getPayload`: its id
/// is a hash of the parent and the attributes that make payloads differ.
pub(crate) fn build_payload(
    node: &Arc<Node>,
    parent: &ethrex_common::Header,
    a: EnginePayloadAttributes,
) -> Result<PayloadId, EngineError> {
    let attributes = PayloadAttributes {
        timestamp: a.timestamp,
        fee_recipient: a.suggested_fee_recipient,
        prev_randao: a.prev_randao,
        // Amsterdam's attributes may name the target (execution-apis PayloadAttributesV4);
        // otherwise the node's own.
        gas_limit: gas_limit_for(node, parent, &a),
        withdrawals: a.withdrawals.clone().unwrap_or_default(),
        parent_beacon_block_root: a.parent_beacon_block_root.unwrap_or_default(),
        slot_number: a.slot_number.unwrap_or_default(),
        extra_data: Bytes::from_static(b"ethrex"),
    };
    let built = build_from_pool(node, &attributes).map_err(EngineError::internal)?;
    let mut id_input = parent.hash_slow().to_vec();
    id_input.extend_from_slice(&a.timestamp.to_be_bytes());
    id_input.extend_from_slice(a.prev_randao.as_slice());
    id_input.extend_from_slice(a.suggested_fee_recipient.as_slice());
    let id = PayloadId::new(keccak256(&id_input)[..8].try_into().expect("8 bytes"));
    let (built, sidecars) = built;
    let job = Improving {
        attributes,
        parent: parent.hash_slow(),
        pool_version: node.pool.version(),
        fees: built.fees,
        delivered: AtomicBool::new(false),
    };
    node.payloads.lock().insert(id, BuiltPayload::new(built, sidecars));
    keep_improving(node, id, job);
    Ok(id)
}

/// How long a payload keeps being improved at most (one slot).
const IMPROVE_FOR: Duration = Duration::from_secs(12);
/// How often the pool is looked at for something new to build from.
const IMPROVE_EVERY: Duration = Duration::from_millis(500);
/// Payloads improved at once at most: each has a thread (a consensus client asking for
/// many payloads gets the rest built once).
const MAX_IMPROVING: usize = 4;

/// Rebuilds payload `id` in the background while the pool takes new transactions, until
/// `getPayload` takes it, the head moves, or a slot has passed; a rebuild that pays the
/// fee recipient more replaces the payload under the same id. A rebuild runs only when
/// the node's write lock is free (never delaying a new payload or a fork choice).
fn keep_improving(node: &Arc<Node>, id: PayloadId, job: Improving) {
    let job = Arc::new(job);
    {
        let mut improving = node.improving.lock();
        if improving.len() >= MAX_IMPROVING || improving.contains_key(&id) {
            return;
        }
        improving.insert(id, job.clone());
    }
    let node = node.clone();
    let spawned = std::thread::Builder::new().name("payload-improver".into()).spawn({
        let node = node.clone();
        move || {
            improve(&node, id, &job);
            node.improving.lock().remove(&id);
        }
    });
    if spawned.is_err() {
        node.improving.lock().remove(&id);
    }
}

fn improve(node: &Node, id: PayloadId, job: &Improving) {
    let deadline = Instant::now() + IMPROVE_FOR;
    let (mut seen, mut best) = (job.pool_version, job.fees);
    while Instant::now() + IMPROVE_EVERY < deadline {
        std::thread::sleep(IMPROVE_EVERY);
        if job.delivered.load(Ordering::Relaxed) {
            return;
        }
        let version = node.pool.version();
        if version == seen {
            continue;
        }
        let Some(_guard) = node.write_lock.try_lock() else { continue };
        if node.chain.store.head().ok().flatten() != Some(job.parent) {
            return;
        }
        seen = version;
        match build_from_pool(node, &job.attributes) {
            Ok((built, sidecars)) if built.fees > best => {
                best = built.fees;
                tracing::debug!(%id, txs = built.block.block.body.transactions.len(), fees = %best, "payload improved");
                node.payloads.lock().insert(id, BuiltPayload::new(built, sidecars));
            }
            Ok(_) => {}
            Err(e) => tracing::debug!(%id, error = %e, "payload rebuild failed"),
        }
    }
}

/// The payload built under `id`, if its fork is the one `engine_getPayloadV{version}`
/// serves (-38001 for an unknown id, -38005 for another fork); with it, its V3 fields.
pub fn built_payload(
    node: &Node,
    id: PayloadId,
    version: u8,
) -> Result<(BuiltPayload, ExecutionPayloadV3), EngineError> {
    let built = node.payloads.lock().get(&id).cloned().ok_or(EngineError::UnknownPayload)?;
    if let Some(job) = node.improving.lock().get(&id) {
        job.delivered.store(true, Ordering::Relaxed);
    }
    let fork = fork_of(node, built.block.block.header.timestamp);
    let expected = match version {
        4 => Fork::Prague,
        5 => Fork::Osaka,
        _ => Fork::Amsterdam,
    };
    if fork != expected {
        return Err(EngineError::UnsupportedFork(format!(
            "payload is {}, engine_getPayloadV{version} serves {}",
            fork.name(),
            expected.name()
        )));
    }
    let block = &built.block.block;
    let payload = ExecutionPayloadV3::from_block_unchecked(block.header.hash_slow(), block);
    Ok((built, payload))
}
