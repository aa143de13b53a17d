//! `eth_subscribe` / `eth_unsubscribe` over WebSocket: `newHeads` (each new canonical
//! block's header), `logs` (the matching logs of each new canonical block, and with
//! `removed: true` those of the blocks a reorg took out) and `newPendingTransactions`
//! (the hashes of transactions the pool takes as executable) and `syncing` (geth's
//! notifications: `{"syncing": true, "status": {..}}` when a sync from peers starts,
//! `false` when it ends; nothing while the state stays as it was at subscription).
//!
//! Each subscription is a task that looks at the head and the pool's admissions every
//! [`POLL`]; between two looks it walks from the head it last saw to the new one (at most
//! [`MAX_WALK`] blocks: a longer jump, a sync, reports only the new head), so no block
//! of the canonical chain is skipped and a reorg reports what it removed. The store's
//! head is the one source of truth; the engine need not know who listens.

use crate::block::rpc_block;
use crate::error::{EthApiError, EthResult};
use crate::eth::logs::LogFilter;
use crate::handler::EthRpc;
use alloy_primitives::B256;
use jsonrpsee::core::SubscriptionResult;
use jsonrpsee::proc_macros::rpc;
use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::{PendingSubscriptionSink, SubscriptionSink};
use serde_json::Value;
use std::time::Duration;

/// How often a subscription looks for news.
pub(crate) const POLL: Duration = Duration::from_millis(200);
/// The most blocks one look walks; past it only the new head is reported.
pub(crate) const MAX_WALK: usize = 128;

/// `eth_subscribe`.
#[rpc(server, namespace = "eth")]
pub trait EthPubSubApi {
    /// Subscribes to `kind` (`newHeads`, `logs` with an optional `{address, topics}`
    /// filter, `newPendingTransactions`, `syncing`).
    #[subscription(name = "subscribe" => "subscription", unsubscribe = "unsubscribe", item = Value)]
    async fn subscribe(&self, kind: String, params: Option<Value>) -> SubscriptionResult;
}

/// What a subscription sends.
#[derive(Clone)]
enum Kind {
    Heads,
    Logs(Box<LogFilter>),
    Pending,
    Syncing,
}

/// The canonical blocks a head move from `last` to `new` removed (newest first) and
/// added (oldest first); `None` when the walk is longer than [`MAX_WALK`].
type HeadChange = Option<(Vec<B256>, Vec<B256>)>;

impl EthRpc {
    fn head_change(&self, last: B256, new: B256) -> EthResult<HeadChange> {
        let store = &self.node().chain.store;
        let header = |hash: B256| store.header(&hash)?.ok_or(EthApiError::HeaderNotFound);
        let (mut added, mut removed) = (Vec::new(), Vec::new());
        let (mut a, mut r) = (new, last);
        let (mut a_header, mut r_header) = (header(a)?, header(r)?);
        while a != r {
            if added.len() + removed.len() > MAX_WALK {
                return Ok(None);
            }
            if a_header.number >= r_header.number {
                added.push(a);
                a = a_header.parent_hash;
                a_header = header(a)?;
            } else {
                removed.push(r);
                r = r_header.parent_hash;
                r_header = header(r)?;
            }
        }
        added.reverse();
        Ok(Some((removed, added)))
    }

    /// The messages for a head move, in order.
    fn head_messages(&self, kind: &Kind, last: B256, new: B256) -> EthResult<Vec<Value>> {
        let (removed, added) = self.head_change(last, new)?.unwrap_or((Vec::new(), vec![new]));
        let store = &self.node().chain.store;
        let mut out = Vec::new();
        match kind {
            Kind::Heads => {
                for hash in added {
                    let Some(block) = store.block(&hash)? else { continue };
                    out.push(header_json(&block, hash));
                }
            }
            Kind::Logs(filter) => {
                for hash in removed {
                    let mut logs = Vec::new();
                    self.block_logs(hash, filter, &mut logs)?;
                    for mut log in logs.into_iter().rev() {
                        log["removed"] = Value::Bool(true);
                        out.push(log);
                    }
                }
                for hash in added {
                    self.block_logs(hash, filter, &mut out)?;
                }
            }
            Kind::Pending | Kind::Syncing => {}
        }
        Ok(out)
    }

    /// Sends `kind`'s news on `sink` until the subscriber leaves.
    async fn run_subscription(self, sink: SubscriptionSink, kind: Kind) {
        let store = self.node().chain.store.clone();
        let mut head = store.head().ok().flatten().unwrap_or_default();
        let mut admitted = self.node().admitted_since(u64::MAX).1;
        let mut syncing = self.sync_info().is_some();
        loop {
            tokio::time::sleep(POLL).await;
            if sink.is_closed() {
                return;
            }
            let messages = match &kind {
                Kind::Syncing => {
                    let info = self.sync_info();
                    if info.is_some() == syncing {
                        continue;
                    }
                    syncing = info.is_some();
                    match info {
                        Some(status) => {
                            vec![serde_json::json!({"syncing": true, "status": status})]
                        }
                        None => vec![Value::Bool(false)],
                    }
                }
                Kind::Pending => {
                    let (hashes, next) = self.node().admitted_since(admitted);
                    admitted = next;
                    hashes.into_iter().map(|h| serde_json::json!(h)).collect()
                }
                _ => {
                    let Ok(Some(new)) = store.head() else { continue };
                    if new == head {
                        continue;
                    }
                    let rpc = self.clone();
                    let kind = kind.clone();
                    let last = head;
                    head = new;
                    let work =
                        tokio::task::spawn_blocking(move || rpc.head_messages(&kind, last, new));
                    match work.await {
                        Ok(Ok(messages)) => messages,
                        _ => continue,
                    }
                }
            };
            for message in messages {
                let Ok(raw) = serde_json::value::to_raw_value(&message) else { continue };
                if sink.send(raw).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// The header fields a fork may lack: `newHeads` sends them as `null` then (geth sends
/// its header type whole).
const OPTIONAL_HEADER_FIELDS: [&str; 8] = [
    "baseFeePerGas",
    "withdrawalsRoot",
    "blobGasUsed",
    "excessBlobGas",
    "parentBeaconBlockRoot",
    "requestsHash",
    "blockAccessListHash",
    "slotNumber",
];

/// A block's header as `newHeads` sends it (geth's: the block's fields without its
/// transactions, ommers, withdrawals and size, every optional field present).
fn header_json(block: &ethrex_common::Block, hash: B256) -> Value {
    let mut value = serde_json::json!(rpc_block(block, hash, false));
    if let Some(map) = value.as_object_mut() {
        for key in ["transactions", "uncles", "withdrawals", "size"] {
            map.remove(key);
        }
        for key in OPTIONAL_HEADER_FIELDS {
            map.entry(key).or_insert(Value::Null);
        }
    }
    value
}

#[jsonrpsee::core::async_trait]
impl EthPubSubApiServer for EthRpc {
    async fn subscribe(
        &self,
        pending: PendingSubscriptionSink,
        kind: String,
        params: Option<Value>,
    ) -> SubscriptionResult {
        let kind = match (kind.as_str(), params) {
            ("newHeads", None) => Kind::Heads,
            ("newPendingTransactions", None) => Kind::Pending,
            ("syncing", None) => Kind::Syncing,
            ("logs", params) => {
                let filter = params.unwrap_or_else(|| serde_json::json!({}));
                match LogFilter::from_json(&filter) {
                    Ok(filter) => Kind::Logs(Box::new(filter)),
                    Err(e) => {
                        pending.reject(ErrorObjectOwned::from(e)).await;
                        return Ok(());
                    }
                }
            }
            (other, _) => {
                let message = match other {
                    "newHeads" | "newPendingTransactions" | "syncing" => {
                        format!("{other} takes no parameters")
                    }
                    _ => format!("no \"{other}\" subscription in eth namespace"),
                };
                pending.reject(ErrorObjectOwned::from(EthApiError::InvalidParams(message))).await;
                return Ok(());
            }
        };
        let sink = pending.accept().await?;
        tokio::spawn(self.clone().run_subscription(sink, kind));
        Ok(())
    }
}
