//! Deterministic keys, derived addresses, nonce tracking and signing.

use alloy_consensus::{SignableTransaction, TxEnvelope, TypedTransaction};
use alloy_eips::eip7702::{Authorization, SignedAuthorization};
use alloy_primitives::{keccak256, Address, B256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;

/// keccak256(seed_le ++ label ++ index_le): the one derivation every deterministic value
/// of the workload (keys, addresses, salts, blob hashes) goes through.
pub(crate) fn derive(seed: u64, label: &str, index: u64) -> B256 {
    let mut buf = Vec::with_capacity(16 + label.len());
    buf.extend_from_slice(&seed.to_le_bytes());
    buf.extend_from_slice(label.as_bytes());
    buf.extend_from_slice(&index.to_le_bytes());
    keccak256(buf)
}

/// An address nobody holds a key for (token holders, fresh recipients).
pub(crate) fn derive_address(seed: u64, label: &str, index: u64) -> Address {
    Address::from_slice(&derive(seed, label, index)[12..])
}

/// A funded externally owned account the workload sends from.
#[derive(Debug, Clone)]
pub(crate) struct Sender {
    pub(crate) signer: PrivateKeySigner,
    pub(crate) address: Address,
    /// The nonce the next transaction (or authorization) from this account must carry.
    /// Bumped by every transaction it sends and every authorization it signs that
    /// is included, in block order.
    pub(crate) nonce: u64,
    /// Delegated (EIP-7702) to the Delegate contract: it now runs code when called.
    pub(crate) delegated: bool,
}

impl Sender {
    pub(crate) fn derive(seed: u64, index: u64) -> Self {
        // A hash is a valid secp256k1 scalar except with probability ~2^-128; rehash then.
        let mut key = derive(seed, "import-bench/sender", index);
        let signer = loop {
            match PrivateKeySigner::from_bytes(&key) {
                Ok(s) => break s,
                Err(_) => key = keccak256(key),
            }
        };
        let address = signer.address();
        Self { signer, address, nonce: 0, delegated: false }
    }

    /// Takes the next nonce.
    pub(crate) fn bump(&mut self) -> u64 {
        let n = self.nonce;
        self.nonce += 1;
        n
    }
}

/// Signs a transaction. ECDSA here is RFC 6979 (deterministic), so equal inputs give
/// byte-identical signed transactions.
pub(crate) fn sign_tx(signer: &PrivateKeySigner, tx: TypedTransaction) -> TxEnvelope {
    let sig =
        signer.sign_hash_sync(&tx.signature_hash()).expect("signing with a local key cannot fail");
    TxEnvelope::from((tx, sig))
}

pub(crate) fn sign_authorization(
    signer: &PrivateKeySigner,
    auth: Authorization,
) -> SignedAuthorization {
    let sig = signer
        .sign_hash_sync(&auth.signature_hash())
        .expect("signing with a local key cannot fail");
    auth.into_signed(sig)
}
