//! Why the pool refused a transaction. The messages are geth's (core/error.go,
//! core/txpool/errors.go) word for word where geth has one: wallets and tools match on
//! them ("nonce too low", "replacement transaction underpriced", ...).

use alloy_primitives::{B256, U256};

/// A refused transaction.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    /// The pool holds this transaction already.
    #[error("already known")]
    AlreadyKnown,
    /// The signature does not recover a sender, or signs for another chain.
    #[error("invalid sender")]
    InvalidSender,
    /// The type is not active at the head's next block.
    #[error("transaction type not supported")]
    TypeNotSupported,
    /// Blob transactions need the blob pool, which this pool is not.
    #[error("blob transactions are not accepted yet (no blob pool)")]
    BlobNotSupported,
    /// Larger than the pool keeps (128 KiB encoded).
    #[error("oversized data")]
    Oversized,
    /// Init code over EIP-3860's limit.
    #[error("max initcode size exceeded: code size {size} limit {limit}")]
    InitCodeTooLarge {
        /// The init code's size.
        size: usize,
        /// The limit (49,152 bytes).
        limit: usize,
    },
    /// More gas than a block may use.
    #[error("exceeds block gas limit")]
    GasLimit,
    /// More gas than a transaction may use from Osaka on (EIP-7825).
    #[error("transaction gas limit too high (cap: {cap}, tx: {got})")]
    GasLimitTooHigh {
        /// The cap.
        cap: u64,
        /// The transaction's gas limit.
        got: u64,
    },
    /// The gas limit does not cover the intrinsic gas.
    #[error("intrinsic gas too low")]
    IntrinsicGas,
    /// The gas limit does not cover EIP-7623's calldata floor.
    #[error("insufficient gas for floor data gas cost")]
    FloorDataGas,
    /// The tip exceeds the fee cap.
    #[error("max priority fee per gas higher than max fee per gas")]
    TipAboveFeeCap,
    /// Below the pool's minimum tip.
    #[error("transaction underpriced")]
    Underpriced,
    /// An EIP-7702 transaction without authorizations.
    #[error("EIP-7702 transaction with empty auth list")]
    EmptyAuthorizationList,
    /// An EIP-7702 transaction that would create a contract.
    #[error("EIP-7702 transaction cannot be used to create contract")]
    SetCodeCreate,
    /// The nonce is below the sender's account nonce.
    #[error("nonce too low: next nonce {next}, tx nonce {got}")]
    NonceTooLow {
        /// The account's nonce at the head.
        next: u64,
        /// The transaction's nonce.
        got: u64,
    },
    /// The nonce is further ahead of the account's than the pool queues.
    #[error("nonce too high: next nonce {next}, tx nonce {got}")]
    NonceTooHigh {
        /// The account's nonce at the head.
        next: u64,
        /// The transaction's nonce.
        got: u64,
    },
    /// The sender cannot pay this transaction after its earlier pooled ones.
    #[error("insufficient funds for gas * price + value: balance {balance}, tx cost {cost}, overshot {overshot}")]
    InsufficientFunds {
        /// The account's balance at the head.
        balance: U256,
        /// What this transaction and the sender's earlier pooled ones may cost.
        cost: U256,
        /// By how much.
        overshot: U256,
    },
    /// A transaction with the same sender and nonce is pooled and this one does not pay
    /// enough more to replace it.
    #[error("replacement transaction underpriced")]
    ReplacementUnderpriced,
    /// The sender has as many transactions pooled as it may.
    #[error("account limit exceeded: {0} transactions pooled")]
    AccountLimit(usize),
    /// The pool is full and this transaction pays no more than the cheapest it holds.
    #[error("txpool is full")]
    PoolFull,
    /// The encoding is not a transaction.
    #[error("rlp: {0}")]
    Decode(String),
}

/// What the pool did with a transaction it accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Added {
    /// Executable now (nonce-contiguous from the sender's account nonce).
    Pending(B256),
    /// Waiting for a nonce gap to fill.
    Queued(B256),
}

impl Added {
    /// The transaction's hash.
    pub fn hash(&self) -> B256 {
        match self {
            Added::Pending(h) | Added::Queued(h) => *h,
        }
    }
}
