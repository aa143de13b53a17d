//! Deterministic keys, derived values and signing, shared by both transaction sources.
//!
//! ECDSA here is RFC 6979 (deterministic): equal inputs give byte-identical signed
//! transactions and authorizations.

use alloy_consensus::{SignableTransaction, Signed, TxEnvelope, TypedTransaction};
use alloy_eips::eip7702::{Authorization, SignedAuthorization};
use alloy_primitives::{keccak256, Address, Signature, B256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use ethrex_common::Transaction;

/// keccak256(seed_le ++ label ++ index_le): the one derivation every deterministic value
/// of the mainnet mix (keys, addresses, salts, blob hashes) goes through.
pub fn derive(seed: u64, label: &str, index: u64) -> B256 {
    let mut buf = Vec::with_capacity(16 + label.len());
    buf.extend_from_slice(&seed.to_le_bytes());
    buf.extend_from_slice(label.as_bytes());
    buf.extend_from_slice(&index.to_le_bytes());
    keccak256(buf)
}

/// An address nobody holds a key for (token holders, fresh recipients).
pub fn derive_address(seed: u64, label: &str, index: u64) -> Address {
    Address::from_slice(&derive(seed, label, index)[12..])
}

/// The signing key with secret `key`. A hash is a valid secp256k1 scalar except with
/// probability ~2^-128; the key is rehashed until it is one.
pub fn key_from(mut key: B256) -> PrivateKeySigner {
    loop {
        match PrivateKeySigner::from_bytes(&key) {
            Ok(signer) => return signer,
            Err(_) => key = keccak256(key),
        }
    }
}

/// Signs a typed transaction.
pub fn sign_tx(signer: &PrivateKeySigner, tx: TypedTransaction) -> TxEnvelope {
    let sig =
        signer.sign_hash_sync(&tx.signature_hash()).expect("signing with a local key cannot fail");
    TxEnvelope::from((tx, sig))
}

/// Signs a transaction of any concrete type (legacy, 2930, 1559, 7702, ...).
pub fn sign<T>(signer: &PrivateKeySigner, tx: T) -> Transaction
where
    T: SignableTransaction<Signature>,
    Transaction: From<Signed<T>>,
{
    let sig =
        signer.sign_hash_sync(&tx.signature_hash()).expect("signing with a local key cannot fail");
    Transaction::from(tx.into_signed(sig))
}

/// Signs an EIP-7702 authorization.
pub fn sign_authorization(signer: &PrivateKeySigner, auth: Authorization) -> SignedAuthorization {
    let sig = signer
        .sign_hash_sync(&auth.signature_hash())
        .expect("signing with a local key cannot fail");
    auth.into_signed(sig)
}
