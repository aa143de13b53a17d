//! The `eth` wire protocol, versions 69 to 71: message ids and bodies, the Status
//! handshake, EIP-2124 fork ids, eth/69 receipts and the serving limits.
//!
//! - eth/69 (EIP-7642): Status without total difficulty, receipts without bloom,
//!   `BlockRangeUpdate`; `NewBlock`/`NewBlockHashes` are gone.
//! - eth/70 (EIP-7975): paged receipts (`firstBlockReceiptIndex`, `lastBlockIncomplete`).
//! - eth/71 (EIP-8159): `GetBlockAccessLists`/`BlockAccessLists`.
//!
//! Every decoder here is fed bytes from the network: none of them panics, and each bounds
//! what it allocates (see [`MAX_MESSAGE_SIZE`], [`MAX_REQUEST_ITEMS`],
//! [`MAX_RESPONSE_ITEMS`], [`MAX_TRANSACTIONS_PER_MESSAGE`], [`MAX_RECEIPTS_PER_MESSAGE`]).

mod error;
mod forkid;
mod messages;
mod receipts;
mod serve;
mod status;
mod wire;

#[cfg(test)]
mod tests;

pub use error::EthError;
pub use forkid::{chain_forks, fork_filter, fork_id};
pub use messages::{
    codes, BlockAccessLists, BlockBodies, BlockHeaders, EthMessage, GetBlockAccessLists,
    GetBlockBodies, GetBlockHeaders, GetPooledTransactions, GetReceipts, HashOrNumber,
    NewPooledTransactionHashes, PooledTransactions, Receipts, Transactions,
};
pub use receipts::{decode_receipt_69, encode_receipt_69, receipt_69_length};
pub use serve::{fill_response, resolve_header_request};
pub use status::{
    validate_block_range, validate_status, BlockRangeError, BlockRangeUpdate, Status, StatusError,
};

/// The eth protocol versions this implementation speaks, newest first.
pub const SUPPORTED_VERSIONS: [u32; 3] = [71, 70, 69];

/// The number of message ids the eth protocol reserves in the RLPx capability space
/// (ids `0x00..=0x13` on eth/71; the offset of the next capability is the eth offset
/// plus this).
pub const fn message_id_space(version: u32) -> u64 {
    if version >= 71 {
        0x14
    } else {
        0x12
    }
}

/// The largest eth message payload (after decompression) this implementation accepts.
pub const MAX_MESSAGE_SIZE: usize = 16 * 1024 * 1024;

/// The most items a request may ask for (headers, bodies, receipts, access lists, pooled
/// transactions), and the most items a response built here carries: larger requests are
/// rejected when decoded.
pub const MAX_REQUEST_ITEMS: usize = 1024;

/// The most top-level items (headers, bodies, per-block receipt lists, access lists) a
/// decoded response may carry: peers serve at most [`MAX_REQUEST_ITEMS`], so more is a
/// protocol violation.
pub const MAX_RESPONSE_ITEMS: usize = MAX_REQUEST_ITEMS;

/// The most transactions (in bodies, broadcasts or pooled-transaction answers) one
/// message may carry once decoded: bounds what a small but dense payload can make us
/// allocate.
pub const MAX_TRANSACTIONS_PER_MESSAGE: usize = 1 << 17;

/// The most receipts (over all blocks) one `Receipts` message may carry once decoded.
pub const MAX_RECEIPTS_PER_MESSAGE: usize = 1 << 17;

/// The most hashes one `NewPooledTransactionHashes` announcement may carry.
pub const MAX_ANNOUNCED_HASHES: usize = 4096;

/// The soft size limit of a response: serving stops adding items once the encoded items
/// reach this many bytes (the item that crosses it is still included, as geth does).
pub const SOFT_RESPONSE_LIMIT: usize = 2 * 1024 * 1024;
