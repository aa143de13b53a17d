//! Polling filters: `eth_newFilter`, `eth_newBlockFilter`,
//! `eth_newPendingTransactionFilter`, `eth_getFilterChanges`, `eth_getFilterLogs`,
//! `eth_uninstallFilter`.
//!
//! A pending-transaction filter reports the hashes the pool admitted as executable since
//! its last poll (the last `ADMITTED_KEPT` admissions are kept; a filter polled less often
//! misses the oldest, as geth's does past its own buffer).
//!
//! A filter remembers the last canonical block it reported; each poll answers what the
//! chain added since (block hashes, or the matching logs of those blocks through
//! `eth_getLogs`' matcher). A reorg below that point is not replayed as removed logs
//! (subscriptions will carry those). At most `MAX_FILTERS` filters live at once; one
//! not polled for [`FILTER_TIMEOUT`] is dropped, as geth does after 5 minutes.

use super::filter_registry::{Kind, FILTER_TIMEOUT};
use super::logs::LogFilter;
use crate::error::{EthApiError, EthResult};
use crate::handler::EthRpc;
use alloy_eips::BlockNumberOrTag;
use alloy_primitives::U256;
use jsonrpsee::proc_macros::rpc;
use serde_json::{json, Value};
use std::time::Instant;

/// The most blocks one poll of a block filter reports.
const MAX_BLOCKS_PER_POLL: u64 = 1_024;

/// The `eth_` filter methods.
#[rpc(server, namespace = "eth")]
pub trait EthFiltersApi {
    /// `eth_newFilter`: a log filter; its id.
    #[method(name = "newFilter", blocking)]
    fn new_filter(&self, filter: Value) -> EthResult<U256>;

    /// `eth_newBlockFilter`: a filter of new canonical blocks; its id.
    #[method(name = "newBlockFilter", blocking)]
    fn new_block_filter(&self) -> EthResult<U256>;

    /// `eth_newPendingTransactionFilter`: a filter of the transactions the pool admits
    /// (their hashes, or with `true` the transactions); its id.
    #[method(name = "newPendingTransactionFilter", blocking)]
    fn new_pending_transaction_filter(&self, full: Option<bool>) -> EthResult<U256>;

    /// `eth_getFilterChanges`: what the filter matched since its last poll.
    #[method(name = "getFilterChanges", blocking)]
    fn filter_changes(&self, id: U256) -> EthResult<Vec<Value>>;

    /// `eth_getFilterLogs`: every log a log filter matches over its whole range.
    #[method(name = "getFilterLogs", blocking)]
    fn filter_logs(&self, id: U256) -> EthResult<Vec<Value>>;

    /// `eth_uninstallFilter`: whether the filter existed.
    #[method(name = "uninstallFilter", blocking)]
    fn uninstall_filter(&self, id: U256) -> EthResult<bool>;
}

fn not_found() -> EthApiError {
    EthApiError::Filter("filter not found".into())
}

impl EthRpc {
    fn head_number_now(&self) -> EthResult<u64> {
        Ok(self.node().chain.store.head_header()?.map(|h| h.number).unwrap_or_default())
    }
}

impl EthFiltersApiServer for EthRpc {
    fn new_filter(&self, filter: Value) -> EthResult<U256> {
        LogFilter::from_json(&filter)?;
        let head = self.head_number_now()?;
        self.filters.lock().install(Kind::Logs { filter }, head)
    }

    fn new_block_filter(&self) -> EthResult<U256> {
        let head = self.head_number_now()?;
        self.filters.lock().install(Kind::Blocks, head)
    }

    fn new_pending_transaction_filter(&self, full: Option<bool>) -> EthResult<U256> {
        let head = self.head_number_now()?;
        let (_, next) = self.node().admitted_since(u64::MAX);
        self.filters.lock().install(Kind::Pending { next, full: full.unwrap_or(false) }, head)
    }

    fn filter_changes(&self, id: U256) -> EthResult<Vec<Value>> {
        let id = u64::try_from(id).map_err(|_| not_found())?;
        let head = self.head_number_now()?;
        let (kind_filter, from) = {
            let mut filters = self.filters.lock();
            let f = filters.installed.get_mut(&id).ok_or_else(not_found)?;
            if f.polled.elapsed() >= FILTER_TIMEOUT {
                filters.installed.remove(&id);
                return Err(not_found());
            }
            f.polled = Instant::now();
            if let Kind::Pending { next, full } = &mut f.kind {
                let (hashes, after) = self.node().admitted_since(*next);
                *next = after;
                if !*full {
                    return Ok(hashes.into_iter().map(|h| json!(h)).collect());
                }
                // A transaction already mined or dropped is left out, as geth's pool
                // lookup leaves it.
                let pool = &self.node().pool;
                let base_fee = pool.head().base_fee;
                return Ok(hashes
                    .iter()
                    .filter_map(|h| pool.get(h))
                    .map(|tx| crate::txpool::pending_json(&tx, base_fee))
                    .collect());
            }
            let from = f.last + 1;
            let to = head.min(f.last + MAX_BLOCKS_PER_POLL);
            if from > to {
                return Ok(Vec::new());
            }
            f.last = to;
            let kind = match &f.kind {
                Kind::Blocks | Kind::Pending { .. } => None,
                Kind::Logs { filter } => Some(filter.clone()),
            };
            (kind, (from, to))
        };
        let store = &self.node().chain.store;
        match kind_filter {
            None => (from.0..=from.1)
                .map(|n| Ok(json!(store.canonical_hash(n)?.unwrap_or_default())))
                .collect(),
            Some(filter) => {
                let mut ranged = filter;
                if let Some(object) = ranged.as_object_mut() {
                    object.insert("fromBlock".into(), json!(BlockNumberOrTag::Number(from.0)));
                    object.insert("toBlock".into(), json!(BlockNumberOrTag::Number(from.1)));
                    object.remove("blockHash");
                }
                self.logs_of(&LogFilter::from_json(&ranged)?)
            }
        }
    }

    fn filter_logs(&self, id: U256) -> EthResult<Vec<Value>> {
        let id = u64::try_from(id).map_err(|_| not_found())?;
        let filter = {
            let mut filters = self.filters.lock();
            let f = filters.installed.get_mut(&id).ok_or_else(not_found)?;
            f.polled = Instant::now();
            match &f.kind {
                Kind::Logs { filter } => filter.clone(),
                Kind::Blocks | Kind::Pending { .. } => {
                    return Err(EthApiError::Filter("filter is not a log filter".into()))
                }
            }
        };
        self.logs_of(&LogFilter::from_json(&filter)?)
    }

    fn uninstall_filter(&self, id: U256) -> EthResult<bool> {
        let Ok(id) = u64::try_from(id) else { return Ok(false) };
        Ok(self.filters.lock().installed.remove(&id).is_some())
    }
}
