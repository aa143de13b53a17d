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
    /// A blob transaction without its sidecar (the consensus form, not the network form).
    #[error("missing sidecar in blob transaction")]
    MissingSidecar,
    /// A blob transaction without blobs.
    #[error("blobless blob transaction")]
    Blobless,
    /// More blobs than one transaction may carry.
    #[error("transaction blob limit exceeded: blob count {count}, limit {limit}")]
    TooManyBlobs {
        /// The transaction's blobs.
        count: usize,
        /// The limit at the head's next block.
        limit: usize,
    },
    /// The sidecar's lists disagree with each other or with the transaction, or its
    /// version is not the one the fork wants.
    #[error("Wrong sidecar format: {0}")]
    SidecarFormat(String),
    /// A commitment does not hash to the transaction's versioned hash.
    #[error("blob {index}: computed hash {computed} mismatches transaction one {expected}")]
    VersionedHashMismatch {
        /// The blob's position.
        index: usize,
        /// What the commitment hashes to.
        computed: B256,
        /// What the transaction carries.
        expected: B256,
    },
    /// The KZG proofs do not prove the blobs against the commitments.
    #[error("KZG verification error: {0}")]
    Kzg(String),
    /// The blob fee cap is below the least blob fee (1 wei).
    #[error("transaction gas price below minimum: blob fee cap {0}, minimum needed 1")]
    BlobFeeCapTooLow(u128),
    /// The sender has transactions of the other kind (blob or not) pooled: an account
    /// lives in one sub-pool at a time.
    #[error("address already reserved")]
    AddressReserved,
    /// A blob transaction behind a nonce gap (blob transactions are only pooled in order).
    #[error("nonce too high: tx nonce {got}, gapped nonce {next}")]
    BlobNonceGap {
        /// The nonce the sender's next blob transaction must take.
        next: u64,
        /// The transaction's nonce.
        got: u64,
    },
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
    /// The pool is full and this transaction pays no more than the cheapest it holds.
    #[error("transaction underpriced")]
    Underpriced,
    /// Below the pool's minimum tip.
    #[error("transaction gas price below minimum: gas tip cap {tip}, minimum needed {min}")]
    TipBelowMinimum {
        /// The transaction's tip (its gas price for a legacy transaction).
        tip: u128,
        /// The pool's minimum.
        min: u128,
    },
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
    /// A delegated sender (EIP-7702), or one a pooled authorization names, may only
    /// send its next nonce.
    #[error("gapped-nonce tx from delegated accounts")]
    DelegatedGap,
    /// A delegated sender (EIP-7702), or one a pooled authorization names, has one
    /// transaction in flight already; only its replacement is taken.
    #[error("in-flight transaction limit reached for delegated accounts")]
    DelegatedInFlight,
    /// An authorization names an account that has more than one transaction pooled, or
    /// blob transactions.
    #[error("authority already reserved")]
    AuthorityReserved,
    /// The pool is full and nothing in it may make room (only transactions of the other
    /// kind, or none).
    #[error("txpool is full")]
    PoolFull,
    /// The first byte names no transaction type.
    #[error("transaction type not supported")]
    UnknownType,
    /// A type byte with nothing after it.
    #[error("typed transaction too short")]
    TooShort,
    /// The encoding is not a transaction.
    #[error("rlp: {0}")]
    Decode(String),
}

impl PoolError {
    /// Whether the transaction can never be valid, whatever the pool's or the chain's
    /// state (a bad signature, too little gas, a tip above its fee cap, ...), as opposed
    /// to not acceptable now (nonce, price, balance, a full pool). A peer sending many is
    /// a spammer.
    pub fn is_invalid(&self) -> bool {
        self.is_peer_fault()
            || matches!(
                self,
                PoolError::InvalidSender
                    | PoolError::Oversized
                    | PoolError::InitCodeTooLarge { .. }
                    | PoolError::GasLimitTooHigh { .. }
                    | PoolError::IntrinsicGas
                    | PoolError::FloorDataGas
                    | PoolError::TipAboveFeeCap
                    | PoolError::EmptyAuthorizationList
                    | PoolError::SetCodeCreate
                    | PoolError::TooManyBlobs { .. }
            )
    }

    /// Whether the transaction proves its deliverer broke the protocol (geth drops such a
    /// peer): its sidecar is missing, malformed or does not prove its blobs. Prices,
    /// nonces and balances are not a peer's fault: they depend on the pool's view.
    pub fn is_peer_fault(&self) -> bool {
        matches!(
            self,
            PoolError::MissingSidecar
                | PoolError::Blobless
                | PoolError::SidecarFormat(_)
                | PoolError::VersionedHashMismatch { .. }
                | PoolError::Kzg(_)
                | PoolError::Decode(_)
                | PoolError::UnknownType
                | PoolError::TooShort
        )
    }
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
