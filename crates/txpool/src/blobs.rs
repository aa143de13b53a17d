//! The rules a blob transaction's sidecar passes on entry (EIP-4844, EIP-7594): it is
//! there, its version is the fork's (cell proofs from Osaka on, one proof per blob
//! before), its lists agree with each other and with the transaction, each commitment
//! hashes to the transaction's versioned hash, and the KZG proofs prove the blobs.
//!
//! The cheap checks (`check_sidecar`) come before the pool looks at nonces and prices;
//! the KZG check (`verify_sidecar`, tens of milliseconds per blob) comes last, only for a
//! transaction the pool would otherwise take.

use crate::error::PoolError;
use crate::validate::Head;
use alloy_consensus::{Signed, Transaction as _, TxEip4844Variant, TxEip4844WithSidecar};
use alloy_eips::eip4844::{env_settings::EnvKzgSettings, kzg_to_versioned_hash};
use alloy_eips::eip7594::{BlobTransactionSidecarVariant, CELLS_PER_EXT_BLOB};
use ethrex_common::{Fork, Transaction};

/// A blob transaction's sidecar: blobs, commitments and proofs.
pub type Sidecar = BlobTransactionSidecarVariant;

/// The least blob fee cap a blob transaction may offer (the protocol's least blob fee).
const MIN_BLOB_FEE_CAP: u128 = 1;

/// Splits a transaction into its consensus form (what blocks carry and the hash covers)
/// and the sidecar its network form carried, if any.
pub fn split_sidecar(tx: Transaction) -> (Transaction, Option<Sidecar>) {
    match tx {
        Transaction::Eip4844(signed) => {
            let (variant, signature, hash) = signed.into_parts();
            let (bare, sidecar) = variant.strip_sidecar();
            (Transaction::Eip4844(Signed::new_unchecked(bare, signature, hash)), sidecar)
        }
        other => (other, None),
    }
}

/// The network form of a blob transaction: its consensus form with `sidecar` attached.
/// Other transactions are returned as they are.
pub fn with_sidecar(tx: &Transaction, sidecar: Sidecar) -> Transaction {
    match tx {
        Transaction::Eip4844(signed) => {
            let inner = match signed.tx() {
                TxEip4844Variant::TxEip4844(tx) => tx.clone(),
                TxEip4844Variant::TxEip4844WithSidecar(with) => with.tx.clone(),
            };
            let joined = TxEip4844Variant::TxEip4844WithSidecar(
                TxEip4844WithSidecar::from_tx_and_sidecar(inner, sidecar),
            );
            Transaction::Eip4844(Signed::new_unchecked(joined, *signed.signature(), *signed.hash()))
        }
        other => other.clone(),
    }
}

/// The trusted setup c-kzg embeds, built once (2-3 s of one core, ~100 MB with its
/// precomputed tables) and shared with the EVM's
/// point-evaluation precompile. The node calls this at start-up so that the first blob
/// transaction does not pay for it.
pub fn warm_kzg() {
    let _ = EnvKzgSettings::Default.get();
}

/// The checks that need no KZG work: blob fee cap, sidecar present, lists consistent,
/// version by fork, blob count within the fork's per-transaction limit, and each
/// commitment hashing to the transaction's versioned hash.
pub(crate) fn check_sidecar(
    tx: &Transaction,
    sidecar: Option<&Sidecar>,
    head: &Head,
) -> Result<(), PoolError> {
    let fee_cap = tx.max_fee_per_blob_gas().unwrap_or_default();
    if fee_cap < MIN_BLOB_FEE_CAP {
        return Err(PoolError::BlobFeeCapTooLow(fee_cap));
    }
    let sidecar = sidecar.ok_or(PoolError::MissingSidecar)?;
    let hashes = tx.blob_versioned_hashes().unwrap_or_default();
    let commitments = sidecar.commitments();
    if commitments.len() != hashes.len() {
        return Err(PoolError::SidecarFormat(format!(
            "invalid number of {} blob commitments compared to {} blob hashes",
            commitments.len(),
            hashes.len()
        )));
    }
    if hashes.is_empty() {
        return Err(PoolError::Blobless);
    }
    if hashes.len() > head.max_blobs_per_tx {
        return Err(PoolError::TooManyBlobs { count: hashes.len(), limit: head.max_blobs_per_tx });
    }
    let (want, proofs_per_blob, proofs) = match sidecar {
        Sidecar::Eip7594(s) => (1, CELLS_PER_EXT_BLOB, s.cell_proofs.len()),
        Sidecar::Eip4844(s) => (0, 1, s.proofs.len()),
    };
    let want_version = u8::from(head.fork >= Fork::Osaka);
    if want != want_version {
        return Err(PoolError::SidecarFormat(format!(
            "unexpected sidecar version, want: {want_version}, got: {want}"
        )));
    }
    if sidecar.blobs().len() != hashes.len() {
        return Err(PoolError::SidecarFormat(format!(
            "invalid number of {} blobs compared to {} commitments",
            sidecar.blobs().len(),
            hashes.len()
        )));
    }
    if proofs != hashes.len() * proofs_per_blob {
        return Err(PoolError::SidecarFormat(format!(
            "invalid number of {proofs} blob proofs expected {}",
            hashes.len() * proofs_per_blob
        )));
    }
    for (index, (expected, commitment)) in hashes.iter().zip(commitments).enumerate() {
        let computed = kzg_to_versioned_hash(commitment.as_slice());
        if computed != *expected {
            return Err(PoolError::VersionedHashMismatch { index, computed, expected: *expected });
        }
    }
    Ok(())
}

/// The KZG check: the proofs prove the blobs against the commitments (cell proofs in a
/// batch for a version-1 sidecar, one blob proof each for version 0).
pub(crate) fn verify_sidecar(tx: &Transaction, sidecar: &Sidecar) -> Result<(), PoolError> {
    let hashes = tx.blob_versioned_hashes().unwrap_or_default();
    sidecar
        .validate(hashes, EnvKzgSettings::Default.get())
        .map_err(|e| PoolError::Kzg(e.to_string()))
}
