//! `eth_getLogs`: logs of a block range or one block, by address and topics.
//!
//! Blocks are skipped by their header's bloom filter: a block whose bloom lacks every
//! wanted address (or, for a topic position, every wanted topic) cannot hold a match, and
//! its receipts are not read. Ranges are bounded ([`MAX_RANGE`] blocks) and so are
//! answers ([`MAX_RESULTS`] logs), each with an error that says so.

use crate::error::{EthApiError, EthResult};
use crate::handler::EthRpc;
use crate::receipt::log_json;
use alloy_eips::BlockNumberOrTag;
use alloy_primitives::{Address, Bloom, BloomInput, B256};
use jsonrpsee::proc_macros::rpc;
use serde_json::Value;

/// The most blocks one query may cover.
pub(crate) const MAX_RANGE: u64 = 100_000;
/// The most logs one answer may carry.
pub(crate) const MAX_RESULTS: usize = 10_000;
/// The most addresses, and topics per position, a filter may name (geth's limits).
const MAX_ADDRESSES: usize = 1_000;
const MAX_TOPICS: usize = 4;

/// The `eth_` log methods.
#[rpc(server, namespace = "eth")]
pub trait EthLogsApi {
    /// `eth_getLogs`: the logs matching a filter, in chain order.
    #[method(name = "getLogs", blocking)]
    fn logs(&self, filter: Value) -> EthResult<Vec<Value>>;
}

/// A parsed filter.
#[derive(Debug, Default, Clone)]
pub(crate) struct LogFilter {
    /// One block by hash, or else a range.
    pub(crate) block_hash: Option<B256>,
    /// The range's first block (default `latest`).
    pub(crate) from: Option<BlockNumberOrTag>,
    /// The range's last block (default `latest`).
    pub(crate) to: Option<BlockNumberOrTag>,
    /// Any of these emitters (empty: any).
    pub(crate) addresses: Vec<Address>,
    /// Per position, any of these topics (empty: any).
    pub(crate) topics: Vec<Vec<B256>>,
}

fn bad(message: impl Into<String>) -> EthApiError {
    EthApiError::InvalidParams(message.into())
}

fn parse<T: serde::de::DeserializeOwned>(what: &str, value: &Value) -> EthResult<T> {
    serde_json::from_value(value.clone())
        .map_err(|e| bad(format!("invalid argument 0: {what}: {e}")))
}

impl LogFilter {
    /// Reads a filter object (geth's rules: `blockHash` excludes a range).
    pub(crate) fn from_json(value: &Value) -> EthResult<Self> {
        let object =
            value.as_object().ok_or_else(|| bad("invalid argument 0: filter must be an object"))?;
        let field = |name: &str| object.get(name).filter(|v| !v.is_null());
        let mut filter = LogFilter {
            block_hash: field("blockHash").map(|v| parse("blockHash", v)).transpose()?,
            from: field("fromBlock").map(|v| parse("fromBlock", v)).transpose()?,
            to: field("toBlock").map(|v| parse("toBlock", v)).transpose()?,
            ..Default::default()
        };
        if filter.block_hash.is_some() && (filter.from.is_some() || filter.to.is_some()) {
            return Err(bad("invalid argument 0: cannot specify both BlockHash and FromBlock/ToBlock, choose one or the other"));
        }
        match field("address") {
            None => {}
            Some(Value::Array(list)) => {
                filter.addresses =
                    list.iter().map(|a| parse("address", a)).collect::<EthResult<_>>()?
            }
            Some(one) => filter.addresses = vec![parse("address", one)?],
        }
        if filter.addresses.len() > MAX_ADDRESSES {
            return Err(bad(format!("invalid argument 0: more than {MAX_ADDRESSES} addresses")));
        }
        if let Some(topics) = field("topics") {
            let positions = topics
                .as_array()
                .ok_or_else(|| bad("invalid argument 0: topics must be an array"))?;
            if positions.len() > MAX_TOPICS {
                return Err(bad("invalid argument 0: too many topics"));
            }
            for position in positions {
                filter.topics.push(match position {
                    Value::Null => Vec::new(),
                    Value::Array(any) => any
                        .iter()
                        .filter(|t| !t.is_null())
                        .map(|t| parse("topic", t))
                        .collect::<EthResult<_>>()?,
                    one => vec![parse("topic", one)?],
                });
            }
        }
        Ok(filter)
    }

    /// Whether a block with this bloom may hold a match.
    pub(crate) fn may_match(&self, bloom: &Bloom) -> bool {
        let any = |inputs: &mut dyn Iterator<Item = &[u8]>| {
            let mut empty = true;
            for input in inputs {
                empty = false;
                if bloom.contains_input(BloomInput::Raw(input)) {
                    return true;
                }
            }
            empty
        };
        any(&mut self.addresses.iter().map(|a| a.as_slice()))
            && self.topics.iter().all(|position| any(&mut position.iter().map(|t| t.as_slice())))
    }

    /// Whether this log matches.
    pub(crate) fn matches(&self, log: &alloy_primitives::Log) -> bool {
        if !self.addresses.is_empty() && !self.addresses.contains(&log.address) {
            return false;
        }
        let topics = log.topics();
        self.topics.iter().enumerate().all(|(i, wanted)| {
            wanted.is_empty() || topics.get(i).is_some_and(|t| wanted.contains(t))
        })
    }
}

impl EthRpc {
    /// The matching logs of the canonical block `hash`, appended to `out`.
    pub(crate) fn block_logs(
        &self,
        hash: B256,
        filter: &LogFilter,
        out: &mut Vec<Value>,
    ) -> EthResult<()> {
        let store = &self.node().chain.store;
        let Some(header) = store.header(&hash)? else { return Err(EthApiError::HeaderNotFound) };
        if !filter.may_match(&header.logs_bloom) {
            return Ok(());
        }
        let body = store.body(&hash)?.ok_or(EthApiError::HeaderNotFound)?;
        let receipts = store.receipts(&hash)?.unwrap_or_default();
        let at = self.block_context(hash, &header);
        let mut log_index = 0;
        for (tx_index, (tx, receipt)) in body.transactions.iter().zip(&receipts).enumerate() {
            for log in alloy_consensus::TxReceipt::logs(receipt) {
                if filter.matches(log) {
                    if out.len() == MAX_RESULTS {
                        return Err(EthApiError::LimitExceeded(format!(
                            "query returned more than {MAX_RESULTS} results"
                        )));
                    }
                    out.push(log_json(log, &at, *tx.tx_hash(), tx_index, log_index));
                }
                log_index += 1;
            }
        }
        Ok(())
    }

    /// A range bound as a block number (`latest` and `pending`: the head).
    fn bound(&self, tag: Option<BlockNumberOrTag>, head: u64) -> EthResult<u64> {
        match tag.unwrap_or(BlockNumberOrTag::Latest) {
            BlockNumberOrTag::Latest | BlockNumberOrTag::Pending => Ok(head),
            BlockNumberOrTag::Earliest => Ok(0),
            BlockNumberOrTag::Number(n) => Ok(n),
            label => {
                let hash = self.resolve_tag(label)?.ok_or(EthApiError::HeaderNotFound)?;
                self.node().chain.store.block_number(&hash)?.ok_or(EthApiError::HeaderNotFound)
            }
        }
    }
}

impl EthLogsApiServer for EthRpc {
    fn logs(&self, filter: Value) -> EthResult<Vec<Value>> {
        self.logs_of(&LogFilter::from_json(&filter)?)
    }
}

impl EthRpc {
    /// The logs `filter` matches (`eth_getLogs`, and filters' polls).
    pub(super) fn logs_of(&self, filter: &LogFilter) -> EthResult<Vec<Value>> {
        let store = &self.node().chain.store;
        let mut out = Vec::new();
        if let Some(hash) = filter.block_hash {
            if store.header(&hash)?.is_none() {
                return Err(EthApiError::UnknownBlock);
            }
            self.block_logs(hash, filter, &mut out)?;
            return Ok(out);
        }
        let head = store.head_header()?.ok_or(EthApiError::HeaderNotFound)?.number;
        let (from, to) = (self.bound(filter.from, head)?, self.bound(filter.to, head)?);
        if from > head || to > head {
            return Err(bad("block range extends beyond current head block"));
        }
        if from > to {
            return Err(bad("invalid block range params"));
        }
        if to - from >= MAX_RANGE {
            return Err(EthApiError::LimitExceeded(format!(
                "block range of {} blocks exceeds the limit of {MAX_RANGE}",
                to - from + 1
            )));
        }
        for number in from..=to {
            let hash = store.canonical_hash(number)?.ok_or(EthApiError::HeaderNotFound)?;
            self.block_logs(hash, filter, &mut out)?;
        }
        Ok(out)
    }
}
