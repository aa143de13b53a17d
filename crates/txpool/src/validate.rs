//! The checks a transaction passes before it is pooled: against the rules of the head's
//! next block (type, size, gas, fees, intrinsic gas) and against the sender's account at
//! the head (nonce, balance), after the sender is recovered, once.

use crate::config::PoolConfig;
use crate::error::PoolError;
use alloy_consensus::{Transaction as _, Typed2718 as _};
use alloy_primitives::{Address, B256, U256};
use ethrex_common::{Fork, Transaction};

/// EIP-3860's init code limit.
const MAX_INITCODE_SIZE: usize = 2 * 24_576;
/// EIP-7825's per-transaction gas cap (Osaka on; from Amsterdam the cap on regular gas).
const TX_GAS_CAP: u64 = 1 << 24;
/// EIP-8037's cap on a transaction's whole gas limit (Amsterdam on).
const TX_GAS_CAP_AMSTERDAM: u64 = u32::MAX as u64;

/// What the pool needs to know of the chain's head.
#[derive(Debug, Clone)]
pub struct Head {
    /// The head block's hash.
    pub hash: B256,
    /// The head block's number.
    pub number: u64,
    /// The chain id transactions must sign for.
    pub chain_id: u64,
    /// The fork of the next block.
    pub fork: Fork,
    /// The next block's base fee (0 before London).
    pub base_fee: u64,
    /// The head's gas limit (a transaction must fit a block).
    pub gas_limit: u64,
    /// The next block's blob base fee (0 before Cancun).
    pub blob_base_fee: u128,
    /// Blobs one transaction may carry at the next block (0 before Cancun).
    pub max_blobs_per_tx: usize,
    /// Blobs the next block may carry (0 before Cancun).
    pub max_blobs_per_block: usize,
}

/// An account at the head.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Account {
    /// Its nonce.
    pub nonce: u64,
    /// Its balance (wei).
    pub balance: U256,
    /// Whether it has code (for an account that sends transactions: an EIP-7702
    /// delegation).
    pub has_code: bool,
}

/// The head's accounts (the node's store; a map in tests).
pub trait AccountSource {
    /// The account at `address`, or `None` if it does not exist.
    fn account(&self, address: &Address) -> Option<Account>;
}

impl AccountSource for std::collections::HashMap<Address, Account> {
    fn account(&self, address: &Address) -> Option<Account> {
        self.get(address).copied()
    }
}

/// The most a transaction may cost its sender: gas limit times fee cap, plus its value,
/// plus its blob gas times its blob fee cap.
pub fn max_cost(tx: &Transaction) -> U256 {
    let blob_gas = blob_count(tx) as u64 * alloy_eips::eip4844::DATA_GAS_PER_BLOB;
    let blob_fee_cap = tx.max_fee_per_blob_gas().unwrap_or_default();
    U256::from(tx.gas_limit()) * U256::from(tx.max_fee_per_gas())
        + tx.value()
        + U256::from(blob_gas) * U256::from(blob_fee_cap)
}

/// How many blobs a transaction carries.
pub fn blob_count(tx: &Transaction) -> usize {
    tx.blob_versioned_hashes().map_or(0, |h| h.len())
}

/// The tip a transaction pays per gas over `base_fee` (0 if its fee cap is below it).
pub fn effective_tip(tx: &Transaction, base_fee: u64) -> u128 {
    tx.effective_tip_per_gas(base_fee).unwrap_or(0)
}

/// The checks that need no account: the transaction (consensus form; `size` is its
/// network form's) against the head's next block.
pub(crate) fn check_transaction(
    tx: &Transaction,
    sender: Address,
    size: usize,
    head: &Head,
    config: &PoolConfig,
) -> Result<(), PoolError> {
    let fork = head.fork;
    let allowed = match tx.ty() {
        0 => true,
        1 => fork >= Fork::Berlin,
        2 => fork >= Fork::London,
        3 => fork >= Fork::Cancun,
        4 => fork >= Fork::Prague,
        _ => false,
    };
    if !allowed {
        return Err(PoolError::TypeNotSupported);
    }
    if tx.chain_id().is_some_and(|id| id != head.chain_id) {
        return Err(PoolError::InvalidSender);
    }
    let max_size = if tx.is_eip4844() { config.max_blob_tx_size } else { config.max_tx_size };
    if size > max_size {
        return Err(PoolError::Oversized);
    }
    if tx.is_create() && fork >= Fork::Shanghai && tx.input().len() > MAX_INITCODE_SIZE {
        let (size, limit) = (tx.input().len(), MAX_INITCODE_SIZE);
        return Err(PoolError::InitCodeTooLarge { size, limit });
    }
    let gas = tx.gas_limit();
    if gas > head.gas_limit {
        return Err(PoolError::GasLimit);
    }
    let cap = match fork {
        f if f >= Fork::Amsterdam => Some(TX_GAS_CAP_AMSTERDAM),
        f if f >= Fork::Osaka => Some(TX_GAS_CAP),
        _ => None,
    };
    if let Some(cap) = cap.filter(|cap| gas > *cap) {
        return Err(PoolError::GasLimitTooHigh { cap, got: gas });
    }
    if tx.max_priority_fee_per_gas().is_some_and(|tip| tip > tx.max_fee_per_gas()) {
        return Err(PoolError::TipAboveFeeCap);
    }
    if tx.priority_fee_or_price() < config.min_tip {
        let (tip, min) = (tx.priority_fee_or_price(), config.min_tip);
        return Err(PoolError::TipBelowMinimum { tip, min });
    }
    if tx.ty() == 4 && tx.authorization_list().is_none_or(|l| l.is_empty()) {
        return Err(PoolError::EmptyAuthorizationList);
    }
    let (intrinsic, floor) = ethrex_vm::intrinsic_gas(tx, sender, fork);
    if gas < intrinsic {
        return Err(PoolError::IntrinsicGas);
    }
    if gas < floor {
        return Err(PoolError::FloorDataGas);
    }
    Ok(())
}
