//! The system contracts Prague and later forks call around every block. A chain whose
//! genesis lacks the EIP-7002 / EIP-7251 contracts cannot produce a valid Prague+ block,
//! nor one without EIP-8282's builder deposit and exit contracts a valid Amsterdam block
//! (the end-of-block system calls must succeed), so every genesis built from the workload
//! has all six (the stress workload, the node's tests).
//!
//! The runtime bytecodes are the ones published in the EIPs. They are taken from
//! `alloy-eips` (which carries them as protocol constants) rather than transcribed, so a
//! typo cannot slip in; the test below checks the EIP addresses and the code's prologue.

use crate::genesis::GenesisAccount;
use alloy_eips::{eip2935, eip4788, eip7002, eip7251, eip8282};
use alloy_primitives::{Address, Bytes, U256};
use std::collections::BTreeMap;

/// EIP-2935 (Prague): historical block hashes in state, ring buffer of 8191.
pub fn history_storage() -> (Address, Bytes) {
    (eip2935::HISTORY_STORAGE_ADDRESS, eip2935::HISTORY_STORAGE_CODE.clone())
}

/// EIP-4788 (Cancun): beacon block roots in state.
pub fn beacon_roots() -> (Address, Bytes) {
    (eip4788::BEACON_ROOTS_ADDRESS, eip4788::BEACON_ROOTS_CODE.clone())
}

/// EIP-7002 (Prague): execution-layer triggerable withdrawal requests.
pub fn withdrawal_requests() -> (Address, Bytes) {
    (
        eip7002::WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS,
        eip7002::WITHDRAWAL_REQUEST_PREDEPLOY_CODE.clone(),
    )
}

/// EIP-7251 (Prague): consolidation requests.
pub fn consolidation_requests() -> (Address, Bytes) {
    (
        eip7251::CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS,
        eip7251::CONSOLIDATION_REQUEST_PREDEPLOY_CODE.clone(),
    )
}

/// EIP-8282 (Amsterdam): builder deposit requests.
pub fn builder_deposits() -> (Address, Bytes) {
    (eip8282::BUILDER_DEPOSIT_CONTRACT_ADDRESS, eip8282::BUILDER_DEPOSIT_CONTRACT_CODE.clone())
}

/// EIP-8282 (Amsterdam): builder exit requests.
pub fn builder_exits() -> (Address, Bytes) {
    (eip8282::BUILDER_EXIT_CONTRACT_ADDRESS, eip8282::BUILDER_EXIT_CONTRACT_CODE.clone())
}

/// The six predeploys as genesis accounts: nonce 1 (as they are deployed), no balance,
/// empty storage. A chain before Amsterdam carries the EIP-8282 two unused.
pub fn system_contracts() -> BTreeMap<Address, GenesisAccount> {
    [
        history_storage(),
        beacon_roots(),
        withdrawal_requests(),
        consolidation_requests(),
        builder_deposits(),
        builder_exits(),
    ]
    .into_iter()
    .map(|(address, code)| {
        (address, GenesisAccount { nonce: 1, balance: U256::ZERO, code, storage: BTreeMap::new() })
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::{address, keccak256};

    #[test]
    fn addresses_and_code_hashes() {
        let sc = system_contracts();
        assert_eq!(sc.len(), 6);
        // Addresses as given in the EIPs, and the code must match what the client calls.
        for a in [
            address!("0x0000F90827F1C53a10cb7A02335B175320002935"),
            address!("0x000F3df6D732807Ef1319fB7B8bB8522d0Beac02"),
            address!("0x00000961Ef480Eb55e80D19ad83579A64c007002"),
            address!("0x0000BBdDc7CE488642fb579F8B00f3a590007251"),
            address!("0x0000BFF46984E3725691FA540A8C7589300D8282"),
            address!("0x000064D678505AD48F8CCB093BC65613800E8282"),
        ] {
            let acc = &sc[&a];
            assert!(!acc.code.is_empty());
            // Every one of them starts by checking the caller against SYSTEM_ADDRESS.
            assert!(acc.code.starts_with(&alloy_primitives::hex!(
                "3373fffffffffffffffffffffffffffffffffffffffe"
            )));
            assert_ne!(keccak256(&acc.code), ethrex_common::KECCAK_EMPTY);
        }
    }
}
