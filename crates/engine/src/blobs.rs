//! `engine_getBlobs*`: the consensus client asks for blobs by versioned hash; the pool's
//! blob store answers with each blob and its proofs (one per blob before Osaka, 128 cell
//! proofs from Osaka on). V1 answers `null` per missing blob and ends at Osaka; V2 is
//! all or nothing; V3 answers `null` per missing blob. A node that does not follow the
//! chain yet answers V2 and V3 with `null`, as the spec allows.

use crate::error::EngineError;
use crate::node::Node;
use alloy_eips::eip4844::{Blob, Bytes48};
use alloy_primitives::B256;
use alloy_rpc_types_engine::{BlobAndProofV1, BlobAndProofV2};
use ethrex_common::Fork;
use ethrex_txpool::Sidecar;

/// Most versioned hashes one `getBlobs*` request may ask for (the spec's minimum).
pub const MAX_BLOB_REQUEST: usize = 128;

/// The pooled blob with this versioned hash and its proofs, if its sidecar carries
/// cell proofs (`cell_proofs`) or one proof per blob (otherwise).
fn blob_and_proofs(node: &Node, hash: &B256, cell_proofs: bool) -> Option<(Blob, Vec<Bytes48>)> {
    let (sidecar, i) = node.pool.blob_store().blob(hash)?;
    match (&*sidecar, cell_proofs) {
        (Sidecar::Eip7594(s), true) => {
            let per_blob = alloy_eips::eip7594::CELLS_PER_EXT_BLOB;
            Some((s.blobs[i], s.cell_proofs[i * per_blob..(i + 1) * per_blob].to_vec()))
        }
        (Sidecar::Eip4844(s), false) => Some((s.blobs[i], vec![s.proofs[i]])),
        _ => None,
    }
}

/// `engine_getBlobsV1`: each blob with its proof, `None` where missing; unsupported once
/// the head is at Osaka.
pub fn get_blobs_v1(
    node: &Node,
    hashes: &[B256],
) -> Result<Vec<Option<BlobAndProofV1>>, EngineError> {
    if node.pool.head().fork >= Fork::Osaka {
        return Err(EngineError::UnsupportedFork("engine_getBlobsV1 ends at Osaka".into()));
    }
    if hashes.len() > MAX_BLOB_REQUEST {
        return Err(EngineError::TooLargeRequest);
    }
    Ok(hashes
        .iter()
        .map(|h| {
            blob_and_proofs(node, h, false)
                .map(|(blob, proofs)| BlobAndProofV1 { blob: Box::new(blob), proof: proofs[0] })
        })
        .collect())
}

/// `engine_getBlobsV3` (and V2, which takes it only whole): each blob with its cell
/// proofs, `None` where missing; `None` for all while the node does not follow the chain.
pub fn get_blobs_v3(
    node: &Node,
    hashes: &[B256],
) -> Result<Option<Vec<Option<BlobAndProofV2>>>, EngineError> {
    if hashes.len() > MAX_BLOB_REQUEST {
        return Err(EngineError::TooLargeRequest);
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

/// `engine_getBlobsV2`: every blob with its cell proofs, or `None` if any is missing.
pub fn get_blobs_v2(
    node: &Node,
    hashes: &[B256],
) -> Result<Option<Vec<BlobAndProofV2>>, EngineError> {
    Ok(get_blobs_v3(node, hashes)?.and_then(|all| all.into_iter().collect()))
}
