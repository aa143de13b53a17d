//! The mix's senders and their nonces (keys, derivations and signing are `crate::keys`).

use crate::keys::{derive, key_from};
use alloy_primitives::Address;
use alloy_signer_local::PrivateKeySigner;

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
        let signer = key_from(derive(seed, "import-bench/sender", index));
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
