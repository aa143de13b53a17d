//! Why a block was rejected. Every variant names one consensus rule; `ef_exception`
//! gives the name the EF fixtures use for it (`BlockException.*` / `TransactionException.*`).

use alloy_primitives::B256;
use ethrex_vm::error::TxErrorKind;
use ethrex_vm::ExecutionError;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlockError {
    // ---- decoding / format ----
    #[error("malformed block: {0}")]
    Malformed(String),
    #[error("block access list is malformed: {0}")]
    BalFormat(String),

    // ---- header against parent ----
    #[error("unknown parent {0}")]
    UnknownParent(B256),
    #[error("parent {0} is not the current head; its state is not available")]
    ParentStateUnavailable(B256),
    #[error("block number {got} is not parent number + 1 ({expected})")]
    InvalidNumber { expected: u64, got: u64 },
    #[error("timestamp {got} is not after the parent's {parent}")]
    InvalidTimestamp { parent: u64, got: u64 },
    #[error("gas limit {got} out of bounds for parent gas limit {parent}")]
    InvalidGasLimit { parent: u64, got: u64 },
    #[error("gas used {used} exceeds gas limit {limit}")]
    GasUsedOverLimit { used: u64, limit: u64 },
    #[error("base fee {got:?}, expected {expected}")]
    InvalidBaseFee { expected: u64, got: Option<u64> },
    #[error("excess blob gas {got:?}, expected {expected}")]
    InvalidExcessBlobGas { expected: u64, got: Option<u64> },
    #[error("header field {0} is missing or present against the fork rules")]
    HeaderFieldMismatch(&'static str),
    #[error("extra data is {0} bytes, over 32")]
    ExtraDataTooLong(usize),
    #[error("post-merge header has non-zero difficulty, nonce or ommers")]
    InvalidPowFields,

    // ---- body ----
    #[error("transactions root mismatch: header {expected}, body {got}")]
    TransactionsRoot { expected: B256, got: B256 },
    #[error("withdrawals root mismatch: header {expected}, body {got}")]
    WithdrawalsRoot { expected: B256, got: B256 },
    #[error("blob gas used {got}, header says {expected}")]
    BlobGasUsed { expected: u64, got: u64 },
    #[error("block blob gas {0} exceeds the maximum {1}")]
    BlobGasOverMax(u64, u64),
    #[error("cannot recover sender of transaction {index}: {reason}")]
    InvalidSignature { index: usize, reason: String },

    // ---- BAL before execution ----
    #[error("block access list hash {got} does not match header {expected}")]
    BalHashMismatch { expected: B256, got: B256 },
    #[error("block access list missing for an Amsterdam block")]
    BalMissing,
    #[error("block access list has {items} items, over the cap for gas limit {gas_limit}")]
    BalTooLarge { items: u64, gas_limit: u64 },

    // ---- execution ----
    #[error(transparent)]
    Execution(ExecutionError),

    // ---- results against header ----
    #[error("gas used mismatch: header {expected}, executed {got}")]
    GasUsed { expected: u64, got: u64 },
    #[error("receipts root mismatch: header {expected}, executed {got}")]
    ReceiptsRoot { expected: B256, got: B256 },
    #[error("logs bloom mismatch")]
    LogsBloom,
    #[error("requests hash mismatch: header {expected:?}, executed {got}")]
    RequestsHash { expected: Option<B256>, got: B256 },
    #[error("block access list does not match execution: {0}")]
    BalMismatch(String),
    #[error("state root mismatch: header {expected}, computed {got}")]
    StateRoot { expected: B256, got: B256 },

    // ---- not the block's fault ----
    #[error("storage error: {0}")]
    Storage(String),
}

impl From<ExecutionError> for BlockError {
    /// A bad signature is the same rejection wherever the sender was recovered.
    fn from(e: ExecutionError) -> Self {
        match e {
            ExecutionError::InvalidSignature { index, reason } => BlockError::InvalidSignature { index, reason },
            other => BlockError::Execution(other),
        }
    }
}

impl From<ethrex_storage::StoreError> for BlockError {
    fn from(e: ethrex_storage::StoreError) -> Self {
        BlockError::Storage(e.to_string())
    }
}

impl From<ethrex_trie::TrieError> for BlockError {
    fn from(e: ethrex_trie::TrieError) -> Self {
        BlockError::Storage(e.to_string())
    }
}

impl BlockError {
    /// True when the block itself breaks a rule (as opposed to our storage failing, or
    /// the parent's state being unavailable).
    pub fn is_invalid_block(&self) -> bool {
        !matches!(
            self,
            BlockError::Storage(_)
                | BlockError::ParentStateUnavailable(_)
                | BlockError::UnknownParent(_)
                | BlockError::Execution(ExecutionError::Database(_))
        )
    }

    /// The EF fixtures' exception name for this rejection.
    pub fn ef_exception(&self) -> &'static str {
        use BlockError as E;
        match self {
            E::Malformed(_) | E::BalFormat(_) => "BlockException.INCORRECT_BLOCK_FORMAT",
            E::UnknownParent(_) | E::ParentStateUnavailable(_) => "BlockException.UNKNOWN_PARENT",
            E::InvalidNumber { .. } => "BlockException.INVALID_BLOCK_NUMBER",
            E::InvalidTimestamp { .. } => "BlockException.INVALID_BLOCK_TIMESTAMP_OLDER_THAN_PARENT",
            E::InvalidGasLimit { .. } => "BlockException.INVALID_GASLIMIT",
            E::GasUsedOverLimit { .. } => "BlockException.GAS_USED_OVERFLOW",
            E::InvalidBaseFee { .. } => "BlockException.INVALID_BASEFEE_PER_GAS",
            E::InvalidExcessBlobGas { .. } => "BlockException.INCORRECT_EXCESS_BLOB_GAS",
            E::HeaderFieldMismatch(_) | E::ExtraDataTooLong(_) | E::InvalidPowFields => {
                "BlockException.INCORRECT_BLOCK_FORMAT"
            }
            E::TransactionsRoot { .. } => "BlockException.INVALID_TRANSACTIONS_ROOT",
            E::WithdrawalsRoot { .. } => "BlockException.INVALID_WITHDRAWALS_ROOT",
            E::BlobGasUsed { .. } => "BlockException.INCORRECT_BLOB_GAS_USED",
            E::BlobGasOverMax(..) => "BlockException.BLOB_GAS_USED_ABOVE_LIMIT",
            E::InvalidSignature { .. } => "TransactionException.INVALID_SIGNATURE_VRS",
            E::BalHashMismatch { .. } | E::BalMissing => "BlockException.INVALID_BAL_HASH",
            E::BalTooLarge { .. } => "BlockException.BLOCK_ACCESS_LIST_GAS_LIMIT_EXCEEDED",
            E::Execution(e) => match e {
                ExecutionError::InvalidTransaction { kind, .. } => match kind {
                    TxErrorKind::NonceTooLow => "TransactionException.NONCE_MISMATCH_TOO_LOW",
                    TxErrorKind::NonceTooHigh => "TransactionException.NONCE_MISMATCH_TOO_HIGH",
                    TxErrorKind::InsufficientFunds => "TransactionException.INSUFFICIENT_ACCOUNT_FUNDS",
                    TxErrorKind::IntrinsicGasTooLow => "TransactionException.INTRINSIC_GAS_TOO_LOW",
                    TxErrorKind::GasLimitExceedsCap => "TransactionException.GAS_LIMIT_EXCEEDS_MAXIMUM",
                    TxErrorKind::FeeTooLow => "TransactionException.INSUFFICIENT_MAX_FEE_PER_GAS",
                    TxErrorKind::SenderNotEoa => "TransactionException.SENDER_NOT_EOA",
                    TxErrorKind::Blob => "TransactionException.TYPE_3_TX_INVALID_BLOB_VERSIONED_HASH",
                    TxErrorKind::Authorization => "TransactionException.TYPE_4_TX_CONTRACT_CREATION",
                    TxErrorKind::TypeNotSupported => "TransactionException.TYPE_NOT_SUPPORTED",
                    TxErrorKind::Other => "TransactionException.INVALID_TRANSACTION",
                },
                ExecutionError::BlockGasOverflow { .. } => "TransactionException.GAS_ALLOWANCE_EXCEEDED",
                ExecutionError::SystemCall { .. } | ExecutionError::SystemContractMissing(_) => {
                    "BlockException.SYSTEM_CONTRACT_CALL_FAILED"
                }
                ExecutionError::InvalidDepositLayout(_) => "BlockException.INVALID_DEPOSIT_EVENT_LAYOUT",
                ExecutionError::Bal(_) => "BlockException.INVALID_BLOCK_ACCESS_LIST",
                ExecutionError::Database(_) => "BlockException.UNKNOWN",
                ExecutionError::InvalidSignature { .. } => "TransactionException.INVALID_SIGNATURE_VRS",
            },
            E::GasUsed { .. } => "BlockException.INVALID_GAS_USED",
            E::ReceiptsRoot { .. } => "BlockException.INVALID_RECEIPTS_ROOT",
            E::LogsBloom => "BlockException.INVALID_LOG_BLOOM",
            E::RequestsHash { .. } => "BlockException.INVALID_REQUESTS",
            E::BalMismatch(_) => "BlockException.INVALID_BLOCK_ACCESS_LIST",
            E::StateRoot { .. } => "BlockException.INVALID_STATE_ROOT",
            E::Storage(_) => "BlockException.UNKNOWN",
        }
    }
}
