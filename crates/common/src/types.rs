//! Block, transaction and receipt types, all alloy types under short names.

use alloy_primitives::{Address, B256};

pub use alloy_consensus::{Header, TxEnvelope as Transaction};
pub use alloy_eips::eip4895::{Withdrawal, Withdrawals};
pub use alloy_eips::eip7928::{compute_block_access_list_hash, AccountChanges, BlockAccessList};
pub use alloy_trie::{TrieAccount as AccountState, EMPTY_ROOT_HASH, KECCAK_EMPTY};

/// A block as received from the network or the Engine API (header + body, no BAL).
pub type Block = alloy_consensus::Block<Transaction>;
/// Transactions, ommers and withdrawals.
pub type BlockBody = alloy_consensus::BlockBody<Transaction>;
/// A receipt with its transaction type, as committed in the receipts trie.
pub type Receipt = alloy_consensus::ReceiptEnvelope;

/// Hash of the RLP of an empty BAL (`0xc0`).
pub const EMPTY_BAL_HASH: B256 = alloy_eips::eip7928::EMPTY_BLOCK_ACCESS_LIST_HASH;

/// A block together with the block-level access list that travels beside it
/// (EIP-7928: the BAL is not part of the body; the header commits to its hash).
#[derive(Debug, Clone)]
pub struct BlockWithBal {
    /// The block itself: header and body.
    pub block: Block,
    /// `None` before Amsterdam, or when the sender did not provide one.
    pub bal: Option<BlockAccessList>,
}

impl BlockWithBal {
    /// The block hash: keccak256 of the RLP-encoded header, recomputed on every call.
    pub fn hash(&self) -> B256 {
        self.block.header.hash_slow()
    }
    /// The block number from the header.
    pub fn number(&self) -> u64 {
        self.block.header.number
    }
}

/// A block whose transactions' senders are known, in transaction order.
#[derive(Debug, Clone)]
pub struct RecoveredBlock {
    /// The block hash (keccak256 of the RLP-encoded header), computed once.
    pub hash: B256,
    /// The block itself: header and body.
    pub block: Block,
    /// The sender of each transaction, `senders[i]` for `block.body.transactions[i]`.
    pub senders: Vec<Address>,
    /// The block-level access list that came with the block, if any.
    pub bal: Option<BlockAccessList>,
}

/// Blob gas the transactions use (EIP-4844): `DATA_GAS_PER_BLOB` for each blob versioned
/// hash they carry; transactions without blobs count zero.
pub fn blob_gas_used(transactions: &[Transaction]) -> u64 {
    use alloy_consensus::Transaction as _;
    transactions
        .iter()
        .map(|tx| {
            tx.blob_versioned_hashes().map_or(0, |h| h.len() as u64)
                * alloy_eips::eip4844::DATA_GAS_PER_BLOB
        })
        .sum()
}
