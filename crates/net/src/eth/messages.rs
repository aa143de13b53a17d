//! The eth/69-71 messages: ids, bodies, and the versioned decode/encode of
//! [`EthMessage`].

use super::receipts::{decode_receipt_list, encode_receipt_list, receipt_list_length};
use super::status::{BlockRangeUpdate, Status};
use super::wire::{
    decode, decode_list, decode_vec, finish, list_of, list_payload, outer_list, raw_item, Budget,
};
use super::{
    EthError, MAX_ANNOUNCED_HASHES, MAX_MESSAGE_SIZE, MAX_RECEIPTS_PER_MESSAGE, MAX_REQUEST_ITEMS,
    MAX_RESPONSE_ITEMS, MAX_TRANSACTIONS_PER_MESSAGE,
};
use alloy_eips::eip4895::Withdrawal;
use alloy_primitives::{Bytes, B256};
use alloy_rlp::{Decodable, Encodable, Header as RlpHeader, EMPTY_STRING_CODE};
use ethrex_common::{BlockAccessList, BlockBody, Header, Receipt, Transaction};

/// Message ids, relative to the eth capability's offset.
pub mod codes {
    /// `Status`.
    pub const STATUS: u64 = 0x00;
    /// `NewBlockHashes` (not part of eth/69+).
    pub const NEW_BLOCK_HASHES: u64 = 0x01;
    /// `Transactions`.
    pub const TRANSACTIONS: u64 = 0x02;
    /// `GetBlockHeaders`.
    pub const GET_BLOCK_HEADERS: u64 = 0x03;
    /// `BlockHeaders`.
    pub const BLOCK_HEADERS: u64 = 0x04;
    /// `GetBlockBodies`.
    pub const GET_BLOCK_BODIES: u64 = 0x05;
    /// `BlockBodies`.
    pub const BLOCK_BODIES: u64 = 0x06;
    /// `NewBlock` (not part of eth/69+).
    pub const NEW_BLOCK: u64 = 0x07;
    /// `NewPooledTransactionHashes`.
    pub const NEW_POOLED_TRANSACTION_HASHES: u64 = 0x08;
    /// `GetPooledTransactions`.
    pub const GET_POOLED_TRANSACTIONS: u64 = 0x09;
    /// `PooledTransactions`.
    pub const POOLED_TRANSACTIONS: u64 = 0x0a;
    /// `GetReceipts`.
    pub const GET_RECEIPTS: u64 = 0x0f;
    /// `Receipts`.
    pub const RECEIPTS: u64 = 0x10;
    /// `BlockRangeUpdate` (eth/69+).
    pub const BLOCK_RANGE_UPDATE: u64 = 0x11;
    /// `GetBlockAccessLists` (eth/71+).
    pub const GET_BLOCK_ACCESS_LISTS: u64 = 0x12;
    /// `BlockAccessLists` (eth/71+).
    pub const BLOCK_ACCESS_LISTS: u64 = 0x13;
}

/// The origin of a `GetBlockHeaders` request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashOrNumber {
    /// The block with this hash.
    Hash(B256),
    /// The canonical block with this number.
    Number(u64),
}

impl Encodable for HashOrNumber {
    fn encode(&self, out: &mut dyn alloy_rlp::BufMut) {
        match self {
            HashOrNumber::Hash(h) => h.encode(out),
            HashOrNumber::Number(n) => n.encode(out),
        }
    }

    fn length(&self) -> usize {
        match self {
            HashOrNumber::Hash(h) => h.length(),
            HashOrNumber::Number(n) => n.length(),
        }
    }
}

impl Decodable for HashOrNumber {
    fn decode(buf: &mut &[u8]) -> alloy_rlp::Result<Self> {
        let mut peek = *buf;
        let header = RlpHeader::decode(&mut peek)?;
        if !header.list && header.payload_length == 32 {
            Ok(HashOrNumber::Hash(B256::decode(buf)?))
        } else {
            Ok(HashOrNumber::Number(u64::decode(buf)?))
        }
    }
}

/// `GetBlockHeaders` (0x03): `[request-id, [origin, amount, skip, reverse]]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GetBlockHeaders {
    /// The request id.
    pub request_id: u64,
    /// The first block.
    pub origin: HashOrNumber,
    /// How many headers are asked for.
    pub amount: u64,
    /// How many blocks to skip between consecutive headers.
    pub skip: u64,
    /// Towards lower block numbers.
    pub reverse: bool,
}

/// `BlockHeaders` (0x04): `[request-id, [header...]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockHeaders {
    /// The request id.
    pub request_id: u64,
    /// The headers.
    pub headers: Vec<Header>,
}

/// `GetBlockBodies` (0x05): `[request-id, [hash...]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetBlockBodies {
    /// The request id.
    pub request_id: u64,
    /// The blocks' hashes.
    pub hashes: Vec<B256>,
}

/// `BlockBodies` (0x06): `[request-id, [[txs, ommers, withdrawals?]...]]`. The block
/// access list is not part of the body (it travels in `BlockAccessLists`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockBodies {
    /// The request id.
    pub request_id: u64,
    /// The bodies, in request order (a prefix of it when the server stopped early).
    pub bodies: Vec<BlockBody>,
}

/// `GetReceipts` (0x0f): eth/69 `[request-id, [hash...]]`, eth/70+
/// `[request-id, firstBlockReceiptIndex, [hash...]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetReceipts {
    /// The request id.
    pub request_id: u64,
    /// The index of the first receipt wanted in the first block (eth/70+; 0 on eth/69,
    /// where it is not sent).
    pub first_block_receipt_index: u64,
    /// The blocks' hashes.
    pub hashes: Vec<B256>,
}

/// `Receipts` (0x10): eth/69 `[request-id, [[receipt...]...]]`, eth/70+
/// `[request-id, lastBlockIncomplete, [[receipt...]...]]`; receipts in eth/69 form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipts {
    /// The request id.
    pub request_id: u64,
    /// The last block's list is a prefix of its receipts (eth/70+; false on eth/69).
    pub last_block_incomplete: bool,
    /// One receipt list per block, blooms recomputed.
    pub receipts: Vec<Vec<Receipt>>,
}

/// `GetBlockAccessLists` (0x12, eth/71): `[request-id, [hash...]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetBlockAccessLists {
    /// The request id.
    pub request_id: u64,
    /// The blocks' hashes.
    pub hashes: Vec<B256>,
}

/// `BlockAccessLists` (0x13, eth/71): `[request-id, [bal...]]`, where an unavailable
/// access list is the RLP empty string `0x80` (`None`), distinct from an empty access
/// list `0xc0` (`Some(vec![])`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockAccessLists {
    /// The request id.
    pub request_id: u64,
    /// One entry per requested block, in request order.
    pub access_lists: Vec<Option<BlockAccessList>>,
}

/// `Transactions` (0x02): `[tx...]`, kept as each transaction's raw RLP item (a list
/// for legacy transactions, a string holding `type || payload` for typed ones).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transactions {
    /// The raw transactions.
    pub transactions: Vec<Bytes>,
}

/// `NewPooledTransactionHashes` (0x08): `[types, [size...], [hash...]]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewPooledTransactionHashes {
    /// One transaction type byte per hash.
    pub types: Bytes,
    /// The transactions' encoded sizes.
    pub sizes: Vec<u64>,
    /// The transactions' hashes.
    pub hashes: Vec<B256>,
}

/// `GetPooledTransactions` (0x09): `[request-id, [hash...]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetPooledTransactions {
    /// The request id.
    pub request_id: u64,
    /// The transactions' hashes.
    pub hashes: Vec<B256>,
}

/// `PooledTransactions` (0x0a): `[request-id, [tx...]]`, raw as in [`Transactions`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PooledTransactions {
    /// The request id.
    pub request_id: u64,
    /// The raw transactions.
    pub transactions: Vec<Bytes>,
}

/// An eth/69-71 message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EthMessage {
    /// `Status` (0x00).
    Status(Status),
    /// `Transactions` (0x02).
    Transactions(Transactions),
    /// `GetBlockHeaders` (0x03).
    GetBlockHeaders(GetBlockHeaders),
    /// `BlockHeaders` (0x04).
    BlockHeaders(BlockHeaders),
    /// `GetBlockBodies` (0x05).
    GetBlockBodies(GetBlockBodies),
    /// `BlockBodies` (0x06).
    BlockBodies(BlockBodies),
    /// `NewPooledTransactionHashes` (0x08).
    NewPooledTransactionHashes(NewPooledTransactionHashes),
    /// `GetPooledTransactions` (0x09).
    GetPooledTransactions(GetPooledTransactions),
    /// `PooledTransactions` (0x0a).
    PooledTransactions(PooledTransactions),
    /// `GetReceipts` (0x0f).
    GetReceipts(GetReceipts),
    /// `Receipts` (0x10).
    Receipts(Receipts),
    /// `BlockRangeUpdate` (0x11).
    BlockRangeUpdate(BlockRangeUpdate),
    /// `GetBlockAccessLists` (0x12, eth/71).
    GetBlockAccessLists(GetBlockAccessLists),
    /// `BlockAccessLists` (0x13, eth/71).
    BlockAccessLists(BlockAccessLists),
}

/// The most ommers a body may carry (the consensus limit).
const MAX_OMMERS: usize = 2;

fn request_hashes(buf: &mut &[u8]) -> Result<Vec<B256>, EthError> {
    decode_vec(buf, MAX_REQUEST_ITEMS)
}

fn raw_transactions(buf: &mut &[u8], budget: &mut Budget) -> Result<Vec<Bytes>, EthError> {
    decode_list(buf, usize::MAX, Some(budget), |b| {
        let raw = raw_item(b)?;
        Ok(Bytes::copy_from_slice(raw))
    })
}

fn decode_body(buf: &mut &[u8], tx_budget: &mut Budget) -> Result<BlockBody, EthError> {
    let mut fields = list_payload(buf)?;
    let transactions =
        decode_list(&mut fields, usize::MAX, Some(tx_budget), |b| Ok(Transaction::decode(b)?))?;
    let ommers: Vec<Header> = decode_vec(&mut fields, MAX_OMMERS)?;
    let withdrawals = if fields.is_empty() {
        None
    } else {
        let w: Vec<Withdrawal> = decode_list(&mut fields, usize::MAX, None, decode)?;
        Some(w.into())
    };
    finish(fields)?;
    Ok(BlockBody { transactions, ommers, withdrawals })
}

fn decode_bal_entry(buf: &mut &[u8]) -> Result<Option<BlockAccessList>, EthError> {
    match buf.first() {
        Some(&EMPTY_STRING_CODE) => {
            *buf = &buf[1..];
            Ok(None)
        }
        Some(&b) if b >= alloy_rlp::EMPTY_LIST_CODE => Ok(Some(BlockAccessList::decode(buf)?)),
        Some(_) => Err(EthError::Invalid("block access list entry is neither a list nor 0x80")),
        None => Err(alloy_rlp::Error::InputTooShort.into()),
    }
}

fn name_of(code: u64) -> &'static str {
    match code {
        codes::NEW_BLOCK_HASHES => "NewBlockHashes",
        codes::NEW_BLOCK => "NewBlock",
        codes::GET_BLOCK_ACCESS_LISTS => "GetBlockAccessLists",
        codes::BLOCK_ACCESS_LISTS => "BlockAccessLists",
        _ => "unknown",
    }
}

impl EthMessage {
    /// The message's id, relative to the eth offset.
    pub fn code(&self) -> u64 {
        match self {
            EthMessage::Status(_) => codes::STATUS,
            EthMessage::Transactions(_) => codes::TRANSACTIONS,
            EthMessage::GetBlockHeaders(_) => codes::GET_BLOCK_HEADERS,
            EthMessage::BlockHeaders(_) => codes::BLOCK_HEADERS,
            EthMessage::GetBlockBodies(_) => codes::GET_BLOCK_BODIES,
            EthMessage::BlockBodies(_) => codes::BLOCK_BODIES,
            EthMessage::NewPooledTransactionHashes(_) => codes::NEW_POOLED_TRANSACTION_HASHES,
            EthMessage::GetPooledTransactions(_) => codes::GET_POOLED_TRANSACTIONS,
            EthMessage::PooledTransactions(_) => codes::POOLED_TRANSACTIONS,
            EthMessage::GetReceipts(_) => codes::GET_RECEIPTS,
            EthMessage::Receipts(_) => codes::RECEIPTS,
            EthMessage::BlockRangeUpdate(_) => codes::BLOCK_RANGE_UPDATE,
            EthMessage::GetBlockAccessLists(_) => codes::GET_BLOCK_ACCESS_LISTS,
            EthMessage::BlockAccessLists(_) => codes::BLOCK_ACCESS_LISTS,
        }
    }

    /// The request id, for requests and responses.
    pub fn request_id(&self) -> Option<u64> {
        Some(match self {
            EthMessage::GetBlockHeaders(m) => m.request_id,
            EthMessage::BlockHeaders(m) => m.request_id,
            EthMessage::GetBlockBodies(m) => m.request_id,
            EthMessage::BlockBodies(m) => m.request_id,
            EthMessage::GetPooledTransactions(m) => m.request_id,
            EthMessage::PooledTransactions(m) => m.request_id,
            EthMessage::GetReceipts(m) => m.request_id,
            EthMessage::Receipts(m) => m.request_id,
            EthMessage::GetBlockAccessLists(m) => m.request_id,
            EthMessage::BlockAccessLists(m) => m.request_id,
            EthMessage::Status(_)
            | EthMessage::Transactions(_)
            | EthMessage::NewPooledTransactionHashes(_)
            | EthMessage::BlockRangeUpdate(_) => return None,
        })
    }

    /// Decodes a message received on eth/`version` (69, 70 or 71) with id `code`
    /// (relative to the eth offset) and the decompressed `payload`.
    ///
    /// Fails on an unsupported version, an oversized payload, an id that is unknown or
    /// not part of `version` (`NewBlock`/`NewBlockHashes` on any supported version, the
    /// access-list messages before eth/71), malformed RLP, trailing bytes, or lists over
    /// the limits. Never panics.
    pub fn decode(version: u32, code: u64, payload: &[u8]) -> Result<EthMessage, EthError> {
        if !(69..=71).contains(&version) {
            return Err(EthError::UnsupportedVersion(version));
        }
        if payload.len() > MAX_MESSAGE_SIZE {
            return Err(EthError::MessageTooLarge(payload.len()));
        }
        let not_in_version = || EthError::NotInVersion { version, code, name: name_of(code) };
        Ok(match code {
            codes::STATUS => EthMessage::Status(Status::decode(payload)?),
            codes::BLOCK_RANGE_UPDATE => {
                EthMessage::BlockRangeUpdate(BlockRangeUpdate::decode(payload)?)
            }
            codes::NEW_BLOCK_HASHES | codes::NEW_BLOCK => return Err(not_in_version()),
            codes::GET_BLOCK_ACCESS_LISTS | codes::BLOCK_ACCESS_LISTS if version < 71 => {
                return Err(not_in_version())
            }
            _ => {
                let mut buf = outer_list(payload)?;
                let message = Self::decode_fields(version, code, &mut buf)?;
                finish(buf)?;
                message
            }
        })
    }

    fn decode_fields(version: u32, code: u64, buf: &mut &[u8]) -> Result<EthMessage, EthError> {
        Ok(match code {
            codes::TRANSACTIONS => {
                // The outer list is the transaction list itself.
                let mut budget = Budget::new(MAX_TRANSACTIONS_PER_MESSAGE);
                let mut transactions = Vec::new();
                while !buf.is_empty() {
                    budget.charge()?;
                    transactions.push(Bytes::copy_from_slice(raw_item(buf)?));
                }
                EthMessage::Transactions(Transactions { transactions })
            }
            codes::GET_BLOCK_HEADERS => {
                let request_id = decode(buf)?;
                let mut query = list_payload(buf)?;
                let message = GetBlockHeaders {
                    request_id,
                    origin: decode(&mut query)?,
                    amount: decode(&mut query)?,
                    skip: decode(&mut query)?,
                    reverse: decode(&mut query)?,
                };
                finish(query)?;
                EthMessage::GetBlockHeaders(message)
            }
            codes::BLOCK_HEADERS => EthMessage::BlockHeaders(BlockHeaders {
                request_id: decode(buf)?,
                headers: decode_vec(buf, MAX_RESPONSE_ITEMS)?,
            }),
            codes::GET_BLOCK_BODIES => EthMessage::GetBlockBodies(GetBlockBodies {
                request_id: decode(buf)?,
                hashes: request_hashes(buf)?,
            }),
            codes::BLOCK_BODIES => {
                let request_id = decode(buf)?;
                let mut budget = Budget::new(MAX_TRANSACTIONS_PER_MESSAGE);
                let bodies =
                    decode_list(buf, MAX_RESPONSE_ITEMS, None, |b| decode_body(b, &mut budget))?;
                EthMessage::BlockBodies(BlockBodies { request_id, bodies })
            }
            codes::NEW_POOLED_TRANSACTION_HASHES => {
                let types: Bytes = decode(buf)?;
                let sizes: Vec<u64> = decode_vec(buf, MAX_ANNOUNCED_HASHES)?;
                let hashes: Vec<B256> = decode_vec(buf, MAX_ANNOUNCED_HASHES)?;
                if types.len() != hashes.len() || sizes.len() != hashes.len() {
                    return Err(EthError::Invalid("announcement lists of different lengths"));
                }
                EthMessage::NewPooledTransactionHashes(NewPooledTransactionHashes {
                    types,
                    sizes,
                    hashes,
                })
            }
            codes::GET_POOLED_TRANSACTIONS => {
                // Up to an announcement's worth of hashes: peers ask for what was
                // announced (devp2p's eth-test asks 2,000 at once); the answer is capped
                // by the response limits, not the request.
                EthMessage::GetPooledTransactions(GetPooledTransactions {
                    request_id: decode(buf)?,
                    hashes: decode_vec(buf, MAX_ANNOUNCED_HASHES)?,
                })
            }
            codes::POOLED_TRANSACTIONS => {
                let request_id = decode(buf)?;
                let mut budget = Budget::new(MAX_TRANSACTIONS_PER_MESSAGE);
                let transactions = raw_transactions(buf, &mut budget)?;
                EthMessage::PooledTransactions(PooledTransactions { request_id, transactions })
            }
            codes::GET_RECEIPTS => {
                let request_id = decode(buf)?;
                let first_block_receipt_index = if version >= 70 { decode(buf)? } else { 0 };
                EthMessage::GetReceipts(GetReceipts {
                    request_id,
                    first_block_receipt_index,
                    hashes: request_hashes(buf)?,
                })
            }
            codes::RECEIPTS => {
                let request_id = decode(buf)?;
                let last_block_incomplete = if version >= 70 { decode(buf)? } else { false };
                let mut budget = Budget::new(MAX_RECEIPTS_PER_MESSAGE);
                let receipts = decode_list(buf, MAX_RESPONSE_ITEMS, None, |b| {
                    decode_receipt_list(b, &mut budget)
                })?;
                EthMessage::Receipts(Receipts { request_id, last_block_incomplete, receipts })
            }
            codes::GET_BLOCK_ACCESS_LISTS => EthMessage::GetBlockAccessLists(GetBlockAccessLists {
                request_id: decode(buf)?,
                hashes: request_hashes(buf)?,
            }),
            codes::BLOCK_ACCESS_LISTS => EthMessage::BlockAccessLists(BlockAccessLists {
                request_id: decode(buf)?,
                access_lists: decode_list(buf, MAX_RESPONSE_ITEMS, None, decode_bal_entry)?,
            }),
            _ => return Err(EthError::UnknownMessage { code }),
        })
    }

    /// Encodes the message for eth/`version`: its id (relative to the eth offset) and
    /// its payload (before compression).
    ///
    /// On eth/69, `GetReceipts::first_block_receipt_index` and
    /// `Receipts::last_block_incomplete` are not sent (paging needs eth/70); a caller must
    /// not send the eth/71 access-list messages to an older peer.
    pub fn encode(&self, version: u32) -> (u64, Vec<u8>) {
        let payload = match self {
            EthMessage::Status(m) => m.encode(),
            EthMessage::BlockRangeUpdate(m) => m.encode(),
            EthMessage::Transactions(m) => list_of(|out| {
                for tx in &m.transactions {
                    out.extend_from_slice(tx);
                }
            }),
            EthMessage::GetBlockHeaders(m) => list_of(|out| {
                m.request_id.encode(out);
                let query = list_of(|q| {
                    m.origin.encode(q);
                    m.amount.encode(q);
                    m.skip.encode(q);
                    m.reverse.encode(q);
                });
                out.extend_from_slice(&query);
            }),
            EthMessage::BlockHeaders(m) => list_of(|out| {
                m.request_id.encode(out);
                alloy_rlp::encode_list(&m.headers, out);
            }),
            EthMessage::GetBlockBodies(m) => list_of(|out| {
                m.request_id.encode(out);
                alloy_rlp::encode_list::<_, B256>(&m.hashes, out);
            }),
            EthMessage::BlockBodies(m) => list_of(|out| {
                m.request_id.encode(out);
                alloy_rlp::encode_list(&m.bodies, out);
            }),
            EthMessage::NewPooledTransactionHashes(m) => list_of(|out| {
                m.types.encode(out);
                alloy_rlp::encode_list(&m.sizes, out);
                alloy_rlp::encode_list::<_, B256>(&m.hashes, out);
            }),
            EthMessage::GetPooledTransactions(m) => list_of(|out| {
                m.request_id.encode(out);
                alloy_rlp::encode_list::<_, B256>(&m.hashes, out);
            }),
            EthMessage::PooledTransactions(m) => list_of(|out| {
                m.request_id.encode(out);
                let txs = list_of(|t| {
                    for tx in &m.transactions {
                        t.extend_from_slice(tx);
                    }
                });
                out.extend_from_slice(&txs);
            }),
            EthMessage::GetReceipts(m) => list_of(|out| {
                m.request_id.encode(out);
                if version >= 70 {
                    m.first_block_receipt_index.encode(out);
                }
                alloy_rlp::encode_list::<_, B256>(&m.hashes, out);
            }),
            EthMessage::Receipts(m) => list_of(|out| {
                m.request_id.encode(out);
                if version >= 70 {
                    m.last_block_incomplete.encode(out);
                }
                let payload_length: usize = m.receipts.iter().map(|r| receipt_list_length(r)).sum();
                RlpHeader { list: true, payload_length }.encode(out);
                for block in &m.receipts {
                    encode_receipt_list(block, out);
                }
            }),
            EthMessage::GetBlockAccessLists(m) => list_of(|out| {
                m.request_id.encode(out);
                alloy_rlp::encode_list::<_, B256>(&m.hashes, out);
            }),
            EthMessage::BlockAccessLists(m) => list_of(|out| {
                m.request_id.encode(out);
                let entries = list_of(|e| {
                    for bal in &m.access_lists {
                        match bal {
                            Some(bal) => bal.encode(e),
                            None => e.push(EMPTY_STRING_CODE),
                        }
                    }
                });
                out.extend_from_slice(&entries);
            }),
        };
        (self.code(), payload)
    }
}
