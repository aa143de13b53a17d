//! Why a block was rejected. Every variant names one consensus rule; `ef_exception`
//! gives the name the EF fixtures use for it (`BlockException.*` / `TransactionException.*`).

use alloy_primitives::{Address, B256};
use ethrex_vm::error::TxErrorKind;
use ethrex_vm::ExecutionError;
use std::sync::Arc;

/// A failure of the node's own storage, kept with its cause. Shared, so that a verdict
/// stays cheap to clone (the Engine API caches them); two are equal when their messages
/// are, which is all a comparison of verdicts needs.
#[derive(Debug, Clone, thiserror::Error)]
#[error(transparent)]
pub struct StorageFault(Arc<dyn std::error::Error + Send + Sync>);

impl StorageFault {
    /// Wraps the failing component's error.
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self(Arc::new(error))
    }

    /// A fault found by the caller itself (an inconsistency in what the store holds),
    /// with no underlying error to keep.
    pub fn message(message: impl Into<String>) -> Self {
        let error: Box<dyn std::error::Error + Send + Sync> = message.into().into();
        Self(Arc::from(error))
    }
}

impl PartialEq for StorageFault {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.to_string() == other.0.to_string()
    }
}

impl Eq for StorageFault {}

/// Why a block was not imported: either a verdict on the block (`Invalid`) or no verdict
/// at all (`Fault`: our storage failed, or we lack what judging it needs). The two are
/// separate types, so every new reason must say which it is; nothing is INVALID by default.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlockError {
    /// The block breaks a consensus rule: it is INVALID, and so is every descendant.
    #[error(transparent)]
    Invalid(#[from] InvalidBlock),
    /// The block was not judged.
    #[error(transparent)]
    Fault(#[from] NodeFault),
}

/// Why the block was not judged: the node's own failure, or a parent it cannot execute on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeFault {
    /// The parent block is not known.
    #[error("unknown parent {0}")]
    UnknownParent(B256),
    /// The parent is known but its state is not the head's, so the block cannot be
    /// executed now.
    #[error("parent {0} is not the current head; its state is not available")]
    ParentStateUnavailable(B256),
    /// The node's storage failed.
    #[error("storage error: {0}")]
    Storage(#[source] StorageFault),
}

/// Why an ommer (uncle) of a proof-of-work block is refused (the ethash ommer rules).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OmmerError {
    /// More than two ommers.
    #[error("{0} ommers, at most 2 allowed")]
    TooMany(usize),
    /// An ommer included twice, or already included by one of the last six ancestors.
    #[error("ommer {0} is included twice")]
    Duplicate(B256),
    /// The ommer is the block itself or one of its ancestors.
    #[error("ommer {0} is an ancestor")]
    IsAncestor(B256),
    /// The ommer's parent is not among the block's last seven ancestors, or is the
    /// block's own parent (a sibling is not an ommer).
    #[error("ommer {0} has no parent among the block's ancestors")]
    Dangling(B256),
    /// The ommer's header breaks a header rule against its parent.
    #[error("ommer {hash} is an invalid header: {reason}")]
    InvalidHeader {
        /// The ommer's hash.
        hash: B256,
        /// The rule its header breaks.
        reason: Box<InvalidBlock>,
    },
    /// Ommers after the merge.
    #[error("ommers in a proof-of-stake block")]
    AfterMerge,
}

/// A consensus rule the block breaks. Every variant names one rule; `ef_exception` gives
/// the name the EF fixtures use for it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidBlock {
    // ---- format ----
    /// The block access list breaks its canonical form (order, duplicates, index range).
    #[error("block access list is malformed: {0}")]
    BalFormat(BalFormError),

    /// A genesis account's code is not bytecode revm can load (an EIP-7702 designator,
    /// `0xef01..`, of the wrong length or version).
    #[error("genesis account {address} has malformed code: {reason}")]
    MalformedGenesisCode {
        /// The account.
        address: Address,
        /// Why revm refuses the code.
        reason: revm::bytecode::BytecodeDecodeError,
    },

    // ---- header against parent ----
    /// The number is not the parent's plus one.
    #[error("block number {got} is not parent number + 1 ({expected})")]
    InvalidNumber {
        /// The parent's number plus one.
        expected: u64,
        /// The header's number.
        got: u64,
    },
    /// The timestamp is not after the parent's.
    #[error("timestamp {got} is not after the parent's {parent}")]
    InvalidTimestamp {
        /// The parent's timestamp.
        parent: u64,
        /// The header's timestamp.
        got: u64,
    },
    /// The gas limit moved more than 1/1024 of the parent's, or is below the minimum.
    #[error("gas limit {got} out of bounds for parent gas limit {parent}")]
    InvalidGasLimit {
        /// The parent's gas limit.
        parent: u64,
        /// The header's gas limit.
        got: u64,
    },
    /// The header's gas used is above its gas limit.
    #[error("gas used {used} exceeds gas limit {limit}")]
    GasUsedOverLimit {
        /// The header's gas used.
        used: u64,
        /// The header's gas limit.
        limit: u64,
    },
    /// The base fee is not the one the parent implies (EIP-1559).
    #[error("base fee {got:?}, expected {expected}")]
    InvalidBaseFee {
        /// The base fee the parent implies.
        expected: u64,
        /// The header's base fee, if any.
        got: Option<u64>,
    },
    /// The excess blob gas is not the one the parent implies (EIP-4844).
    #[error("excess blob gas {got:?}, expected {expected}")]
    InvalidExcessBlobGas {
        /// The excess blob gas the parent implies.
        expected: u64,
        /// The header's excess blob gas, if any.
        got: Option<u64>,
    },
    /// A header field is present before its fork or missing after it.
    #[error("header field {0} is missing or present against the fork rules")]
    HeaderFieldMismatch(&'static str),
    /// The extra data is longer than 32 bytes.
    #[error("extra data is {0} bytes, over 32")]
    ExtraDataTooLong(usize),
    /// A proof-of-work field (difficulty, nonce, ommers) is set after the merge.
    #[error("post-merge header has non-zero difficulty, nonce or ommers")]
    InvalidPowFields,

    // ---- proof of work and the merge ----
    /// The difficulty is not what the fork's formula gives for the parent (ethash's
    /// difficulty adjustment with its bomb delay).
    #[error("difficulty {got}, the {fork} formula gives {expected}")]
    InvalidDifficulty {
        /// The fork whose formula applies.
        fork: &'static str,
        /// What the formula gives.
        expected: alloy_primitives::U256,
        /// The header's difficulty.
        got: alloy_primitives::U256,
    },
    /// A block still claims work although its parent reached the terminal total
    /// difficulty (or is itself proof of stake).
    #[error("proof-of-work block after the merge: parent total difficulty {parent_td} >= terminal {terminal}")]
    PowBlockAfterMerge {
        /// The parent's total difficulty.
        parent_td: alloy_primitives::U256,
        /// The chain's terminal total difficulty.
        terminal: alloy_primitives::U256,
    },
    /// A proof-of-stake block (no difficulty) whose parent has not reached the terminal
    /// total difficulty, or on a chain that never merges.
    #[error("proof-of-stake block before the merge: parent total difficulty {parent_td}, terminal {terminal:?}")]
    PosBlockBeforeMerge {
        /// The parent's total difficulty.
        parent_td: alloy_primitives::U256,
        /// The chain's terminal total difficulty, if it has one.
        terminal: Option<alloy_primitives::U256>,
    },
    /// Within ten blocks of the DAO fork, a chain that supports it requires the extra
    /// data `dao-hard-fork` (EIP-779).
    #[error("block {number} within the DAO fork's range lacks the extra data `dao-hard-fork`")]
    DaoExtraData {
        /// The block's number.
        number: u64,
    },
    /// The ommers do not hash to the header's ommers hash.
    #[error("ommers hash mismatch: header {expected}, body {got}")]
    OmmersHash {
        /// The header's hash.
        expected: B256,
        /// The hash of the body's ommers.
        got: B256,
    },
    /// An ommer breaks the ommer rules.
    #[error("invalid ommer: {0}")]
    InvalidOmmer(#[from] OmmerError),

    // ---- body ----
    /// The transactions do not hash to the header's transactions root.
    #[error("transactions root mismatch: header {expected}, body {got}")]
    TransactionsRoot {
        /// The header's root.
        expected: B256,
        /// The root of the body's transactions.
        got: B256,
    },
    /// The withdrawals do not hash to the header's withdrawals root.
    #[error("withdrawals root mismatch: header {expected}, body {got}")]
    WithdrawalsRoot {
        /// The header's root.
        expected: B256,
        /// The root of the body's withdrawals.
        got: B256,
    },
    /// The blob gas the transactions use is not the header's.
    #[error("blob gas used {got}, header says {expected}")]
    BlobGasUsed {
        /// The header's blob gas used.
        expected: u64,
        /// What the transactions' blobs use.
        got: u64,
    },
    /// The blob gas used is above the fork's per-block maximum (used, maximum).
    #[error("block blob gas {0} exceeds the maximum {1}")]
    BlobGasOverMax(u64, u64),
    /// A transaction's signature does not recover a sender.
    #[error("cannot recover sender of transaction {index}: {reason}")]
    InvalidSignature {
        /// The transaction's index in the block.
        index: usize,
        /// Why recovery failed.
        reason: String,
    },

    // ---- BAL before execution ----
    /// The block access list does not hash to the header's `block_access_list_hash`.
    #[error("block access list hash {got} does not match header {expected}")]
    BalHashMismatch {
        /// The header's hash.
        expected: B256,
        /// The hash of the list that came with the block.
        got: B256,
    },
    /// The block access list has more items than the gas limit allows (EIP-7928 size cap).
    #[error("block access list has {items} items, over the cap for gas limit {gas_limit}")]
    BalTooLarge {
        /// Addresses plus storage keys in the list.
        items: u64,
        /// The block's gas limit.
        gas_limit: u64,
    },

    // ---- execution ----
    /// A transaction or system call broke a rule while executing.
    #[error(transparent)]
    Execution(ExecutionError),

    // ---- results against header ----
    /// Execution used a different amount of gas than the header says.
    #[error("gas used mismatch: header {expected}, executed {got}")]
    GasUsed {
        /// The header's gas used.
        expected: u64,
        /// What execution used.
        got: u64,
    },
    /// The receipts do not hash to the header's receipts root.
    #[error("receipts root mismatch: header {expected}, executed {got}")]
    ReceiptsRoot {
        /// The header's root.
        expected: B256,
        /// The root of the executed receipts.
        got: B256,
    },
    /// The receipts' logs do not fold to the header's bloom.
    #[error("logs bloom mismatch")]
    LogsBloom,
    /// The execution requests do not hash to the header's requests hash (EIP-7685).
    #[error("requests hash mismatch: header {expected:?}, executed {got}")]
    RequestsHash {
        /// The header's requests hash, if any.
        expected: Option<B256>,
        /// The hash of the executed requests.
        got: B256,
    },
    /// The block access list is not the one execution produces.
    #[error("block access list does not match execution: {0}")]
    BalMismatch(BalMismatch),
    /// A caller-supplied execution strategy (`crate::ExecutionStrategy`) rejected what
    /// came with the block, after the block's own checks.
    #[error("rejected by the execution strategy: {0}")]
    Strategy(StrategyRejection),
    /// The post-state does not hash to the header's state root.
    #[error("state root mismatch: header {expected}, computed {got}")]
    StateRoot {
        /// The header's state root.
        expected: B256,
        /// The computed state root.
        got: B256,
    },
}

/// How a block access list breaks its canonical form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BalFormError {
    /// An EIP-7928 rule on the list's entries (order, duplicates, index range).
    #[error(transparent)]
    Entries(#[from] alloy_eips::eip7928::BlockAccessListValidationError),
    /// The account list is not strictly ascending.
    #[error(transparent)]
    AccountOrder(#[from] AccountOrderViolation),
}

/// The first place where a BAL's account list is not strictly ascending.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AccountOrderViolation {
    /// The same account twice in a row.
    #[error("account {0} listed twice")]
    Duplicate(Address),
    /// An account after a greater one.
    #[error("account {later} listed after {earlier}")]
    Descending {
        /// The account listed first.
        earlier: Address,
        /// The smaller account listed after it.
        later: Address,
    },
}

/// How the block's access list differs from the one execution produces.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BalMismatch {
    /// Execution built no BAL to compare with.
    #[error("execution built no BAL")]
    NotBuilt,
    /// An EIP-7928 rule the list's entries break, in a way only execution can settle
    /// (an index beyond the block, say).
    #[error(transparent)]
    Entries(alloy_eips::eip7928::BlockAccessListValidationError),
    /// The account list is out of order and names other accounts than execution touched.
    #[error("{0}; and the accounts listed differ from those execution touched")]
    OrderAndAccounts(AccountOrderViolation),
    /// At entry `index`, the header lists another account than execution touched.
    #[error("entry {index}: header lists account {header}, execution touched {execution}")]
    Account {
        /// The entry's position.
        index: usize,
        /// The header's account.
        header: Address,
        /// Execution's account.
        execution: Address,
    },
    /// The account's changes differ.
    #[error("account {address}: header {header:?}, execution {execution:?}")]
    Changes {
        /// The account.
        address: Address,
        /// The header's entry.
        header: Box<alloy_eips::eip7928::AccountChanges>,
        /// Execution's entry.
        execution: Box<alloy_eips::eip7928::AccountChanges>,
    },
    /// The header lists an account execution did not touch.
    #[error("header lists extra account {0}")]
    Extra(Address),
    /// Execution touched an account the header does not list.
    #[error("execution touched unlisted account {0}")]
    Unlisted(Address),
}

/// An execution strategy's reason for rejecting a block (its own error, kept whole).
#[derive(Debug, Clone, thiserror::Error)]
#[error(transparent)]
pub struct StrategyRejection(Arc<dyn std::error::Error + Send + Sync>);

impl StrategyRejection {
    /// Wraps the strategy's error.
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self(Arc::new(error))
    }

    /// The strategy's error, to downcast to its own type.
    pub fn error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }
}

impl PartialEq for StrategyRejection {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.to_string() == other.0.to_string()
    }
}

impl Eq for StrategyRejection {}

impl From<ExecutionError> for BlockError {
    /// A bad signature is the same rejection wherever the sender was recovered; a failing
    /// read of the state underneath is no verdict. Matched exhaustively: a new kind of
    /// execution error must say which it is.
    fn from(e: ExecutionError) -> Self {
        match e {
            ExecutionError::Database(e) => NodeFault::Storage(StorageFault::new(e)).into(),
            ExecutionError::InvalidSignature { index, reason } => {
                InvalidBlock::InvalidSignature { index, reason }.into()
            }
            e @ (ExecutionError::InvalidTransaction { .. }
            | ExecutionError::BlockGasOverflow { .. }
            | ExecutionError::SystemCall { .. }
            | ExecutionError::SystemContractMissing(_)
            | ExecutionError::InvalidDepositLayout(_)
            | ExecutionError::Bal(_)) => InvalidBlock::Execution(e).into(),
        }
    }
}

impl From<ethrex_storage::StoreError> for BlockError {
    fn from(e: ethrex_storage::StoreError) -> Self {
        NodeFault::Storage(StorageFault::new(e)).into()
    }
}

impl From<ethrex_trie::TrieError> for BlockError {
    fn from(e: ethrex_trie::TrieError) -> Self {
        NodeFault::Storage(StorageFault::new(e)).into()
    }
}

impl From<StorageFault> for BlockError {
    fn from(e: StorageFault) -> Self {
        NodeFault::Storage(e).into()
    }
}

impl BlockError {
    /// A storage fault with `message` (an inconsistency the caller found in the store).
    pub fn storage(message: impl Into<String>) -> Self {
        NodeFault::Storage(StorageFault::message(message)).into()
    }

    /// True when the block itself breaks a rule (as opposed to our storage failing, or
    /// the parent's state being unavailable).
    pub fn is_invalid_block(&self) -> bool {
        matches!(self, BlockError::Invalid(_))
    }

    /// The rule the block breaks, if it was judged invalid.
    pub fn invalid(&self) -> Option<&InvalidBlock> {
        match self {
            BlockError::Invalid(reason) => Some(reason),
            BlockError::Fault(_) => None,
        }
    }

    /// The position of the transaction the block failed on, if it failed on one in
    /// execution (what a block builder leaves out to try again).
    pub fn transaction_index(&self) -> Option<usize> {
        match self {
            BlockError::Invalid(InvalidBlock::Execution(e)) => e.transaction_index(),
            _ => None,
        }
    }

    /// The EF fixtures' exception name for this rejection.
    pub fn ef_exception(&self) -> &'static str {
        match self {
            BlockError::Invalid(reason) => reason.ef_exception(),
            BlockError::Fault(
                NodeFault::UnknownParent(_) | NodeFault::ParentStateUnavailable(_),
            ) => "BlockException.UNKNOWN_PARENT",
            BlockError::Fault(NodeFault::Storage(_)) => "BlockException.UNKNOWN",
        }
    }
}

impl InvalidBlock {
    /// The EF fixtures' exception name for this rejection.
    pub fn ef_exception(&self) -> &'static str {
        use InvalidBlock as E;
        match self {
            E::BalFormat(_) | E::MalformedGenesisCode { .. } => {
                "BlockException.INCORRECT_BLOCK_FORMAT"
            }
            E::InvalidNumber { .. } => "BlockException.INVALID_BLOCK_NUMBER",
            E::InvalidTimestamp { .. } => {
                "BlockException.INVALID_BLOCK_TIMESTAMP_OLDER_THAN_PARENT"
            }
            E::InvalidGasLimit { .. } => "BlockException.INVALID_GASLIMIT",
            E::GasUsedOverLimit { .. } => "BlockException.GAS_USED_OVERFLOW",
            E::InvalidBaseFee { .. } => "BlockException.INVALID_BASEFEE_PER_GAS",
            E::InvalidExcessBlobGas { .. } => "BlockException.INCORRECT_EXCESS_BLOB_GAS",
            E::HeaderFieldMismatch(_) | E::ExtraDataTooLong(_) | E::InvalidPowFields => {
                "BlockException.INCORRECT_BLOCK_FORMAT"
            }
            E::InvalidDifficulty { .. } => "BlockException.INVALID_DIFFICULTY",
            // A post-merge header with a difficulty is a format error to the EF fixtures,
            // as the other proof-of-work fields are.
            E::PowBlockAfterMerge { .. } => "BlockException.INCORRECT_BLOCK_FORMAT",
            E::PosBlockBeforeMerge { .. } => "BlockException.INVALID_DIFFICULTY",
            E::DaoExtraData { .. } => "BlockException.EXTRA_DATA_INVALID_DAO",
            E::OmmersHash { .. } => "BlockException.INVALID_UNCLES_HASH",
            E::InvalidOmmer(_) => "BlockException.IMPORT_IMPOSSIBLE_UNCLE",
            E::TransactionsRoot { .. } => "BlockException.INVALID_TRANSACTIONS_ROOT",
            E::WithdrawalsRoot { .. } => "BlockException.INVALID_WITHDRAWALS_ROOT",
            E::BlobGasUsed { .. } => "BlockException.INCORRECT_BLOB_GAS_USED",
            E::BlobGasOverMax(..) => "BlockException.BLOB_GAS_USED_ABOVE_LIMIT",
            E::InvalidSignature { .. } => "TransactionException.INVALID_SIGNATURE_VRS",
            E::BalHashMismatch { .. } => "BlockException.INVALID_BAL_HASH",
            E::BalTooLarge { .. } => "BlockException.BLOCK_ACCESS_LIST_GAS_LIMIT_EXCEEDED",
            E::Execution(e) => match e {
                ExecutionError::InvalidTransaction { kind, .. } => match kind {
                    TxErrorKind::NonceTooLow => "TransactionException.NONCE_MISMATCH_TOO_LOW",
                    TxErrorKind::NonceTooHigh => "TransactionException.NONCE_MISMATCH_TOO_HIGH",
                    TxErrorKind::InsufficientFunds => {
                        "TransactionException.INSUFFICIENT_ACCOUNT_FUNDS"
                    }
                    TxErrorKind::IntrinsicGasTooLow => "TransactionException.INTRINSIC_GAS_TOO_LOW",
                    TxErrorKind::GasLimitExceedsCap => {
                        "TransactionException.GAS_LIMIT_EXCEEDS_MAXIMUM"
                    }
                    TxErrorKind::FeeTooLow => "TransactionException.INSUFFICIENT_MAX_FEE_PER_GAS",
                    TxErrorKind::SenderNotEoa => "TransactionException.SENDER_NOT_EOA",
                    TxErrorKind::Blob => {
                        "TransactionException.TYPE_3_TX_INVALID_BLOB_VERSIONED_HASH"
                    }
                    TxErrorKind::Authorization => {
                        "TransactionException.TYPE_4_TX_CONTRACT_CREATION"
                    }
                    TxErrorKind::TypeNotSupported => "TransactionException.TYPE_NOT_SUPPORTED",
                    TxErrorKind::Other => "TransactionException.INVALID_TRANSACTION",
                },
                ExecutionError::BlockGasOverflow { .. } => {
                    "TransactionException.GAS_ALLOWANCE_EXCEEDED"
                }
                ExecutionError::SystemCall { .. } | ExecutionError::SystemContractMissing(_) => {
                    "BlockException.SYSTEM_CONTRACT_CALL_FAILED"
                }
                ExecutionError::InvalidDepositLayout(_) => {
                    "BlockException.INVALID_DEPOSIT_EVENT_LAYOUT"
                }
                ExecutionError::Bal(_) => "BlockException.INVALID_BLOCK_ACCESS_LIST",
                // Never an invalid block (`From<ExecutionError>` makes it a fault).
                ExecutionError::Database(_) => "BlockException.UNKNOWN",
                ExecutionError::InvalidSignature { .. } => {
                    "TransactionException.INVALID_SIGNATURE_VRS"
                }
            },
            E::GasUsed { .. } => "BlockException.INVALID_GAS_USED",
            E::ReceiptsRoot { .. } => "BlockException.INVALID_RECEIPTS_ROOT",
            E::LogsBloom => "BlockException.INVALID_LOG_BLOOM",
            E::RequestsHash { .. } => "BlockException.INVALID_REQUESTS",
            E::BalMismatch(_) | E::Strategy(_) => "BlockException.INVALID_BLOCK_ACCESS_LIST",
            E::StateRoot { .. } => "BlockException.INVALID_STATE_ROOT",
        }
    }
}
