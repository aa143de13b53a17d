//! Why a block could not be executed. Each variant names the consensus rule it breaks,
//! so the import pipeline can map it to the EF fixtures' exception names. Failures of
//! the state underneath (`Database`) keep their typed cause as the error's `source`.
//!
//! Also the translation of revm's errors into these.

use alloy_primitives::Address;
use revm::context_interface::result::{EVMError, InvalidTransaction};
use revm::database_interface::bal::EvmDatabaseError;
use std::sync::Arc;

/// Why a block could not be executed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecutionError {
    /// No sender can be recovered from a transaction's signature.
    #[error("cannot recover sender of transaction {index}: {reason}")]
    InvalidSignature {
        /// Position of the transaction in the block.
        index: usize,
        /// Why recovery failed.
        reason: String,
    },
    /// A transaction fails revm's validation against its pre-state (nonce, funds, fees,
    /// intrinsic gas, type rules...).
    #[error("transaction {index} is invalid: {reason}")]
    InvalidTransaction {
        /// Position of the transaction in the block.
        index: usize,
        /// revm's description of the failure.
        reason: String,
        /// The consensus class of the failure.
        kind: TxErrorKind,
    },
    /// A transaction's gas limit exceeds what is left of the block's gas.
    #[error(
        "transaction {index} reserves {gas_limit} {dimension} gas, over the block's remaining {available}"
    )]
    BlockGasOverflow {
        /// Position of the transaction in the block.
        index: usize,
        /// The block gas dimension that is short.
        dimension: BlockGasDimension,
        /// The gas the transaction reserves in that dimension (its gas limit; for
        /// regular gas capped at EIP-7825's maximum).
        gas_limit: u64,
        /// Gas of that dimension left in the block before the transaction.
        available: u64,
    },
    /// A system call the block requires failed.
    #[error("system call to {address} failed: {reason}")]
    SystemCall {
        /// The system contract called.
        address: Address,
        /// What went wrong.
        reason: String,
    },
    /// A request-producing system contract (EIP-7002, EIP-7251) has no code.
    #[error("system contract {0} has no code")]
    SystemContractMissing(Address),
    /// A DepositEvent log of the deposit contract breaks the layout EIP-6110 requires.
    #[error("deposit event with invalid layout: {0}")]
    InvalidDepositLayout(#[source] DepositLayoutError),
    /// The state the block executes on could not be read: not the block's fault.
    #[error("database error during execution: {0}")]
    Database(#[source] DatabaseError),
    /// The header BAL could not serve as a transaction's pre-state. Only the parallel
    /// executor reads the header BAL, and it hands such blocks to the sequential path,
    /// which decides their verdict: this is never a block's final verdict.
    #[error("BAL error during execution: {0}")]
    Bal(#[source] HeaderBalError),
}

/// Coarse classes of invalid transactions, matching EF `TransactionException` groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxErrorKind {
    /// The transaction's nonce is below the sender's.
    NonceTooLow,
    /// The transaction's nonce is above the sender's (or overflows).
    NonceTooHigh,
    /// The sender cannot pay for gas and value.
    InsufficientFunds,
    /// The gas limit does not cover the intrinsic gas (or the calldata floor).
    IntrinsicGasTooLow,
    /// The gas limit exceeds the per-transaction cap (EIP-7825) or the block's.
    GasLimitExceedsCap,
    /// The fee is below the base fee, or the priority fee above the maximum fee.
    FeeTooLow,
    /// The sender has code that is not a delegation (EIP-3607).
    SenderNotEoa,
    /// A blob transaction rule is broken (EIP-4844).
    Blob,
    /// A set-code transaction rule is broken (EIP-7702).
    Authorization,
    /// The transaction type or one of its fields is not active at this fork.
    TypeNotSupported,
    /// Any other validation failure.
    Other,
}

/// How a DepositEvent log of the deposit contract departs from the layout the deposit
/// contract always produces (EIP-6110 requires exactly that layout).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DepositLayoutError {
    /// The log data is not the 576 bytes of the five fields.
    #[error("data is {0} bytes, not 576")]
    DataLength(usize),
    /// The data ends inside a head or length word.
    #[error("truncated word at byte {0}")]
    TruncatedWord(usize),
    /// A head or length word does not fit in 64 bits.
    #[error("oversized word at byte {0}")]
    OversizedWord(usize),
    /// A field's offset is not where the deposit contract puts it.
    #[error("field {field} offset {offset}, expected {expected}")]
    Offset {
        /// Field number (0 = pubkey ... 4 = index).
        field: usize,
        /// The offset the log gives.
        offset: usize,
        /// The offset the deposit contract writes.
        expected: usize,
    },
    /// A field's length is not the fixed length of that field.
    #[error("field {field} length {length}, expected {expected}")]
    Length {
        /// Field number (0 = pubkey ... 4 = index).
        field: usize,
        /// The length the log gives.
        length: usize,
        /// The field's fixed length.
        expected: usize,
    },
    /// The data ends inside a field's bytes.
    #[error("field {0} truncated")]
    TruncatedField(usize),
}

/// Why the header BAL could not serve as a transaction's pre-state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderBalError {
    /// A code change is not valid bytecode for revm (e.g. an EIP-7702 designator of the
    /// wrong length or version).
    #[error("code change does not decode: {0}")]
    Code(#[source] revm::bytecode::BytecodeDecodeError),
    /// Execution read an account or slot the BAL does not list.
    #[error("read outside the BAL: {0}")]
    Missing(#[source] revm::state::bal::BalError),
}

/// A failure of the state a block executes on (the store, or a cache over it), with
/// the component's own error kept as the `source`; it can be recovered with
/// `downcast_ref` (e.g. to [`crate::StoreDbError`]).
///
/// Two such errors compare equal when they are the same error or say the same thing,
/// so that `ExecutionError` can stay comparable.
#[derive(Debug, Clone)]
pub struct DatabaseError(Arc<dyn std::error::Error + Send + Sync + 'static>);

impl DatabaseError {
    /// Wraps the failing component's error.
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self(Arc::new(error))
    }

    /// A failure found by the executor itself, with no underlying error to keep.
    pub fn message(message: impl Into<String>) -> Self {
        let error: Box<dyn std::error::Error + Send + Sync> = message.into().into();
        Self(Arc::from(error))
    }

    /// The underlying error, if it is a `T`.
    pub fn downcast_ref<T: std::error::Error + 'static>(&self) -> Option<&T> {
        self.0.downcast_ref::<T>()
    }
}

impl std::fmt::Display for DatabaseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for DatabaseError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl PartialEq for DatabaseError {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.to_string() == other.0.to_string()
    }
}

impl Eq for DatabaseError {}

impl ExecutionError {
    /// The position of the transaction this failure is about, if it is about one.
    pub fn transaction_index(&self) -> Option<usize> {
        match self {
            ExecutionError::InvalidSignature { index, .. }
            | ExecutionError::InvalidTransaction { index, .. }
            | ExecutionError::BlockGasOverflow { index, .. } => Some(*index),
            _ => None,
        }
    }
}

/// Classifies revm's transaction validation errors into consensus error kinds.
pub(crate) fn classify_invalid_tx(e: &InvalidTransaction) -> TxErrorKind {
    use InvalidTransaction as I;
    match e {
        I::NonceTooLow { .. } => TxErrorKind::NonceTooLow,
        I::NonceTooHigh { .. } | I::NonceOverflowInTransaction => TxErrorKind::NonceTooHigh,
        I::LackOfFundForMaxFee { .. } | I::OverflowPaymentInTransaction => {
            TxErrorKind::InsufficientFunds
        }
        I::CallGasCostMoreThanGasLimit { .. } | I::GasFloorMoreThanGasLimit { .. } => {
            TxErrorKind::IntrinsicGasTooLow
        }
        I::TxGasLimitGreaterThanCap { .. } | I::CallerGasLimitMoreThanBlock => {
            TxErrorKind::GasLimitExceedsCap
        }
        I::GasPriceLessThanBasefee | I::PriorityFeeGreaterThanMaxFee => TxErrorKind::FeeTooLow,
        I::RejectCallerWithCode => TxErrorKind::SenderNotEoa,
        I::BlobGasPriceGreaterThanMax { .. }
        | I::EmptyBlobs
        | I::BlobCreateTransaction
        | I::TooManyBlobs { .. }
        | I::BlobVersionNotSupported => TxErrorKind::Blob,
        I::AuthorizationListInvalidFields | I::EmptyAuthorizationList => TxErrorKind::Authorization,
        I::Eip2930NotSupported
        | I::Eip1559NotSupported
        | I::Eip4844NotSupported
        | I::Eip7702NotSupported
        | I::AccessListNotSupported
        | I::MaxFeePerBlobGasNotSupported
        | I::BlobVersionedHashesNotSupported
        | I::AuthorizationListNotSupported => TxErrorKind::TypeNotSupported,
        _ => TxErrorKind::Other,
    }
}

/// A read of the block's state (revm's `State`, possibly over the header BAL) failed.
pub(crate) fn state_error<E>(e: EvmDatabaseError<E>) -> ExecutionError
where
    E: std::error::Error + Send + Sync + 'static,
{
    match e {
        EvmDatabaseError::Bal(e) => ExecutionError::Bal(HeaderBalError::Missing(e)),
        EvmDatabaseError::Database(e) => ExecutionError::Database(DatabaseError::new(e)),
    }
}

/// What a transaction's failure to execute (at `index` in the block) means for the block.
pub(crate) fn transaction_error<E>(index: usize, e: EVMError<EvmDatabaseError<E>>) -> ExecutionError
where
    E: std::error::Error + Send + Sync + 'static,
{
    match e {
        EVMError::Transaction(t) => ExecutionError::InvalidTransaction {
            index,
            reason: t.to_string(),
            kind: classify_invalid_tx(&t),
        },
        EVMError::Header(h) => ExecutionError::InvalidTransaction {
            index,
            reason: h.to_string(),
            kind: TxErrorKind::Other,
        },
        EVMError::Database(e) => state_error(e),
        EVMError::Custom(message) => ExecutionError::Database(DatabaseError::message(message)),
        EVMError::CustomAny(e) => ExecutionError::Database(DatabaseError::new(e)),
    }
}

/// The block gas a transaction's admission is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockGasDimension {
    /// Gas used as one total (before Amsterdam).
    Total,
    /// Regular gas (Amsterdam, EIP-8037).
    Regular,
    /// State gas (Amsterdam, EIP-8037).
    State,
}

impl std::fmt::Display for BlockGasDimension {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BlockGasDimension::Total => "block",
            BlockGasDimension::Regular => "regular",
            BlockGasDimension::State => "state",
        })
    }
}
