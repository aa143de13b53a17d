//! The eth/69 Status handshake (EIP-7642) and `BlockRangeUpdate`, with their validation.

use super::wire::{decode, finish, list_of, outer_list};
use super::EthError;
use alloy_eips::eip2124::{ForkFilter, ForkId, ValidationError};
use alloy_primitives::B256;
use alloy_rlp::Encodable;

/// The eth/69+ Status message:
/// `[version, networkid, genesis, forkid, earliestBlock, latestBlock, latestBlockHash]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    /// The eth protocol version the sender negotiated.
    pub version: u32,
    /// The network id (by default the chain id).
    pub network_id: u64,
    /// The genesis block hash.
    pub genesis: B256,
    /// The sender's EIP-2124 fork id at its head.
    pub fork_id: ForkId,
    /// The oldest block the sender serves.
    pub earliest_block: u64,
    /// The sender's head block number.
    pub latest_block: u64,
    /// The sender's head block hash.
    pub latest_block_hash: B256,
}

impl Status {
    /// The block range the status announces.
    pub fn block_range(&self) -> BlockRangeUpdate {
        BlockRangeUpdate {
            earliest_block: self.earliest_block,
            latest_block: self.latest_block,
            latest_block_hash: self.latest_block_hash,
        }
    }

    /// The message body's RLP.
    pub fn encode(&self) -> Vec<u8> {
        list_of(|out| {
            self.version.encode(out);
            self.network_id.encode(out);
            self.genesis.encode(out);
            self.fork_id.encode(out);
            self.earliest_block.encode(out);
            self.latest_block.encode(out);
            self.latest_block_hash.encode(out);
        })
    }

    /// Decodes the message body.
    pub fn decode(payload: &[u8]) -> Result<Self, EthError> {
        let mut buf = outer_list(payload)?;
        let status = Status {
            version: decode(&mut buf)?,
            network_id: decode(&mut buf)?,
            genesis: decode(&mut buf)?,
            fork_id: decode(&mut buf)?,
            earliest_block: decode(&mut buf)?,
            latest_block: decode(&mut buf)?,
            latest_block_hash: decode(&mut buf)?,
        };
        finish(buf)?;
        Ok(status)
    }
}

/// `BlockRangeUpdate` (eth/69+, 0x11): `[earliestBlock, latestBlock, latestBlockHash]`,
/// the range of blocks the sender serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockRangeUpdate {
    /// The oldest block the sender serves.
    pub earliest_block: u64,
    /// The sender's head block number.
    pub latest_block: u64,
    /// The sender's head block hash.
    pub latest_block_hash: B256,
}

impl BlockRangeUpdate {
    /// The message body's RLP.
    pub fn encode(&self) -> Vec<u8> {
        list_of(|out| {
            self.earliest_block.encode(out);
            self.latest_block.encode(out);
            self.latest_block_hash.encode(out);
        })
    }

    /// Decodes the message body (no validation: see [`validate_block_range`]).
    pub fn decode(payload: &[u8]) -> Result<Self, EthError> {
        let mut buf = outer_list(payload)?;
        let update = BlockRangeUpdate {
            earliest_block: decode(&mut buf)?,
            latest_block: decode(&mut buf)?,
            latest_block_hash: decode(&mut buf)?,
        };
        finish(buf)?;
        Ok(update)
    }
}

/// Why an announced block range is invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BlockRangeError {
    /// The earliest block is after the latest.
    #[error("earliest block {earliest} is after latest block {latest}")]
    EarliestAfterLatest {
        /// The announced earliest block.
        earliest: u64,
        /// The announced latest block.
        latest: u64,
    },
    /// The latest block hash is zero.
    #[error("zero latest block hash")]
    ZeroLatestHash,
}

/// Checks an announced block range (from a Status or a `BlockRangeUpdate`): earliest <=
/// latest and a non-zero latest hash. A range beyond our head, or one that starts after
/// our earliest block (expired history), is valid. A peer that sends an invalid one is
/// disconnected.
pub fn validate_block_range(range: &BlockRangeUpdate) -> Result<(), BlockRangeError> {
    if range.earliest_block > range.latest_block {
        return Err(BlockRangeError::EarliestAfterLatest {
            earliest: range.earliest_block,
            latest: range.latest_block,
        });
    }
    if range.latest_block_hash.is_zero() {
        return Err(BlockRangeError::ZeroLatestHash);
    }
    Ok(())
}

/// Why a peer's Status was rejected. Every variant ends the connection (geth sends
/// `SubprotocolError` for all of them, `UselessPeer` being reserved for other cases).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StatusError {
    /// The peer's status carries another protocol version than the negotiated one.
    #[error("protocol version mismatch: ours {ours}, theirs {theirs}")]
    VersionMismatch {
        /// Our version.
        ours: u32,
        /// The peer's version.
        theirs: u32,
    },
    /// Another network.
    #[error("network id mismatch: ours {ours}, theirs {theirs}")]
    NetworkIdMismatch {
        /// Our network id.
        ours: u64,
        /// The peer's network id.
        theirs: u64,
    },
    /// Another genesis block.
    #[error("genesis mismatch: ours {ours}, theirs {theirs}")]
    GenesisMismatch {
        /// Our genesis hash.
        ours: B256,
        /// The peer's genesis hash.
        theirs: B256,
    },
    /// The fork id is incompatible (EIP-2124).
    #[error("incompatible fork id: {0}")]
    ForkId(#[from] ValidationError),
    /// The announced block range is invalid.
    #[error("invalid block range: {0}")]
    BlockRange(#[from] BlockRangeError),
}

/// Checks a peer's Status against ours: same version, network id and genesis, a fork id
/// that `filter` (ours, at our head) accepts by the EIP-2124 rules, and a valid block
/// range.
pub fn validate_status(
    ours: &Status,
    theirs: &Status,
    filter: &ForkFilter,
) -> Result<(), StatusError> {
    if theirs.version != ours.version {
        return Err(StatusError::VersionMismatch { ours: ours.version, theirs: theirs.version });
    }
    if theirs.network_id != ours.network_id {
        return Err(StatusError::NetworkIdMismatch {
            ours: ours.network_id,
            theirs: theirs.network_id,
        });
    }
    if theirs.genesis != ours.genesis {
        return Err(StatusError::GenesisMismatch { ours: ours.genesis, theirs: theirs.genesis });
    }
    filter.validate(theirs.fork_id)?;
    validate_block_range(&theirs.block_range())?;
    Ok(())
}
