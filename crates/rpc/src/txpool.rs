//! The `txpool_` methods: the pool's pending and queued transactions in geth's shapes
//! (transactions as `eth_getTransactionByHash` shows a pending one: no block fields).

use crate::api::TxpoolApiServer;
use crate::block::{RpcTransaction, TxLocation};
use crate::handler::EthRpc;
use crate::node::HeadAccounts;
use alloy_primitives::{Address, B256};
use ethrex_txpool::PooledTx;
use jsonrpsee::core::RpcResult;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// A pooled transaction as geth shows one not yet in a block: block hash, number and
/// index `null`, the gas price at the head's next base fee.
pub(crate) fn pending_json(pooled: &PooledTx, base_fee: u64) -> Value {
    let at = TxLocation {
        block_hash: B256::ZERO,
        block_number: 0,
        block_timestamp: 0,
        base_fee: Some(base_fee),
        index: 0,
    };
    let Some(tx) = RpcTransaction::new(&pooled.tx, at) else { return Value::Null };
    let mut value = serde_json::to_value(tx).unwrap_or(Value::Null);
    if let Some(object) = value.as_object_mut() {
        for field in ["blockHash", "blockNumber", "transactionIndex"] {
            object.insert(field.into(), Value::Null);
        }
        object.shift_remove("blockTimestamp");
    }
    value
}

/// `{nonce: tx}` for one sender.
fn by_nonce(txs: &BTreeMap<u64, PooledTx>, base_fee: u64) -> Value {
    Value::Object(txs.iter().map(|(n, p)| (n.to_string(), pending_json(p, base_fee))).collect())
}

/// `{sender: {nonce: tx}}`.
fn by_sender(side: &BTreeMap<Address, BTreeMap<u64, PooledTx>>, base_fee: u64) -> Value {
    let map: Map<String, Value> =
        side.iter().map(|(a, txs)| (a.to_checksum(None), by_nonce(txs, base_fee))).collect();
    Value::Object(map)
}

impl TxpoolApiServer for EthRpc {
    fn status(&self) -> RpcResult<Value> {
        let (pending, queued) = self.node().pool.status(&HeadAccounts(&self.node().chain.store));
        Ok(json!({ "pending": format!("{pending:#x}"), "queued": format!("{queued:#x}") }))
    }

    fn content(&self) -> RpcResult<Value> {
        let pool = &self.node().pool;
        let content = pool.content(&HeadAccounts(&self.node().chain.store));
        let base_fee = pool.head().base_fee;
        Ok(json!({
            "pending": by_sender(&content.pending, base_fee),
            "queued": by_sender(&content.queued, base_fee),
        }))
    }

    fn content_from(&self, address: Address) -> RpcResult<Value> {
        let pool = &self.node().pool;
        let content = pool.content(&HeadAccounts(&self.node().chain.store));
        let base_fee = pool.head().base_fee;
        let side = |s: &BTreeMap<Address, BTreeMap<u64, PooledTx>>| {
            s.get(&address).map_or(json!({}), |txs| by_nonce(txs, base_fee))
        };
        Ok(json!({ "pending": side(&content.pending), "queued": side(&content.queued) }))
    }
}
