//! What the VM's integration tests share: signed calls from numbered keys, the chain
//! config, an Amsterdam block on a fixed parent, and the system contracts the pre- and
//! post-block stages call.

use alloy_consensus::crypto::secp256k1::sign_message;
use alloy_consensus::transaction::SignerRecoverable;
use alloy_consensus::{Header, SignableTransaction, TxEip1559};
use alloy_eips::eip2935::HISTORY_STORAGE_ADDRESS;
use alloy_eips::eip7002::WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS;
use alloy_eips::eip7251::CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS;
use alloy_eips::eip8282::{BUILDER_DEPOSIT_CONTRACT_ADDRESS, BUILDER_EXIT_CONTRACT_ADDRESS};
use alloy_primitives::{Address, TxKind, B256, U256};
use ethrex_common::{Block, BlockBody, ChainConfig, Fork, Transaction};

pub(crate) const CHAIN_ID: u64 = 1;
pub(crate) const COINBASE: Address = Address::repeat_byte(0xc0);
pub(crate) const RECEIVER: Address = Address::repeat_byte(0x77);

/// The system contracts the block's pre- and post-block stages call; the tests give them
/// code that only STOPs.
pub(crate) const SYSTEM_CONTRACTS: [Address; 5] = [
    HISTORY_STORAGE_ADDRESS,
    WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS,
    CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS,
    BUILDER_DEPOSIT_CONTRACT_ADDRESS,
    BUILDER_EXIT_CONTRACT_ADDRESS,
];

/// Sender `i`'s key.
pub(crate) fn key(i: u8) -> B256 {
    B256::repeat_byte(i + 1)
}

/// An EIP-1559 call from sender `from`.
pub(crate) fn call(from: u8, nonce: u64, to: Address, value: u64, gas_limit: u64) -> Transaction {
    let tx = TxEip1559 {
        chain_id: CHAIN_ID,
        nonce,
        gas_limit,
        max_fee_per_gas: 100,
        max_priority_fee_per_gas: 1,
        to: TxKind::Call(to),
        value: U256::from(value),
        ..Default::default()
    };
    let signature = sign_message(key(from), tx.signature_hash()).expect("valid key");
    Transaction::Eip1559(tx.into_signed(signature))
}

/// Sender `i`'s address.
pub(crate) fn sender(i: u8) -> Address {
    call(i, 0, RECEIVER, 0, 21_000).recover_signer().unwrap()
}

/// Every fork through Amsterdam at genesis.
pub(crate) fn config() -> ChainConfig {
    ChainConfig::all_forks_at_genesis(CHAIN_ID, Fork::Amsterdam)
}

/// Block 1 on a fixed parent, with `transactions`.
pub(crate) fn block(transactions: Vec<Transaction>) -> Block {
    let header = Header {
        parent_hash: B256::repeat_byte(0x01),
        beneficiary: COINBASE,
        number: 1,
        gas_limit: 30_000_000,
        timestamp: 12,
        mix_hash: B256::repeat_byte(0x02),
        base_fee_per_gas: Some(7),
        blob_gas_used: Some(0),
        excess_blob_gas: Some(0),
        slot_number: Some(1),
        ..Default::default()
    };
    Block {
        header,
        body: BlockBody { transactions, ommers: vec![], withdrawals: Some(Default::default()) },
    }
}
