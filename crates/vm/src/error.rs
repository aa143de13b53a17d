//! Why a block could not be executed. Each variant names the consensus rule it breaks,
//! so the import pipeline can map it to the EF fixtures' exception names.

use alloy_primitives::Address;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecutionError {
    #[error("cannot recover sender of transaction {index}: {reason}")]
    InvalidSignature { index: usize, reason: String },
    #[error("transaction {index} is invalid: {reason}")]
    InvalidTransaction { index: usize, reason: String, kind: TxErrorKind },
    #[error("transaction {index} gas limit {gas_limit} exceeds the block's remaining gas {available}")]
    BlockGasOverflow { index: usize, gas_limit: u64, available: u64 },
    #[error("system call to {address} failed: {reason}")]
    SystemCall { address: Address, reason: String },
    #[error("system contract {0} has no code")]
    SystemContractMissing(Address),
    #[error("deposit event with invalid layout: {0}")]
    InvalidDepositLayout(String),
    #[error("database error during execution: {0}")]
    Database(String),
    #[error("BAL error during execution: {0}")]
    Bal(String),
}

/// Coarse classes of invalid transactions, matching EF `TransactionException` groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxErrorKind {
    NonceTooLow,
    NonceTooHigh,
    InsufficientFunds,
    IntrinsicGasTooLow,
    GasLimitExceedsCap,
    FeeTooLow,
    SenderNotEoa,
    Blob,
    Authorization,
    TypeNotSupported,
    Other,
}
