//! Receipts in the JSON form `eth_getTransactionReceipt` and `eth_getBlockReceipts`
//! answer with, as geth writes them: the receipt's keys in alphabetical order (geth
//! marshals a map), `root` instead of `status` before Byzantium, `contractAddress` null
//! unless the transaction created one, blob gas fields for blob transactions only, and
//! each log with its block, transaction and block-wide index.

use crate::block::quantity;
use alloy_consensus::transaction::SignerRecoverable;
use alloy_consensus::{Eip658Value, Transaction as _, TxReceipt, Typed2718};
use alloy_primitives::{Address, B256};
use ethrex_common::{Block, Receipt, Transaction};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// What every receipt of one block shares.
#[derive(Debug, Clone, Copy)]
pub struct BlockContext {
    /// The block's hash.
    pub hash: B256,
    /// Its number.
    pub number: u64,
    /// Its timestamp.
    pub timestamp: u64,
    /// Its base fee (London on).
    pub base_fee: Option<u64>,
    /// The price of a unit of blob gas in it (Cancun on).
    pub blob_base_fee: Option<u128>,
}

/// The receipts of `block` (its stored `receipts`, one per transaction) in RPC form;
/// `None` if the counts differ or a sender cannot be recovered (neither happens for a
/// stored block).
pub fn block_receipts(block: &Block, receipts: &[Receipt], at: BlockContext) -> Option<Vec<Value>> {
    if block.body.transactions.len() != receipts.len() {
        return None;
    }
    let mut out = Vec::with_capacity(receipts.len());
    let mut previous_gas = 0u64;
    let mut log_index = 0usize;
    for (index, (tx, receipt)) in block.body.transactions.iter().zip(receipts).enumerate() {
        out.push(receipt_json(tx, receipt, index, previous_gas, log_index, &at)?);
        previous_gas = receipt.cumulative_gas_used();
        log_index += receipt.logs().len();
    }
    Some(out)
}

/// The receipt of transaction `index` of block `at` in RPC form, the block's cumulative
/// gas before it being `previous_gas` and its first log the block's `log_index`-th;
/// `None` if its sender cannot be recovered.
pub fn receipt_json(
    tx: &Transaction,
    receipt: &Receipt,
    index: usize,
    previous_gas: u64,
    mut log_index: usize,
    at: &BlockContext,
) -> Option<Value> {
    let from = tx.recover_signer().ok()?;
    let cumulative = receipt.cumulative_gas_used();
    let gas_used = cumulative.saturating_sub(previous_gas);
    let tx_hash = *tx.tx_hash();
    let logs: Vec<Value> = receipt
        .logs()
        .iter()
        .map(|log| {
            let value = log_json(log, at, tx_hash, index, log_index);
            log_index += 1;
            value
        })
        .collect();
    let effective_gas_price = match (tx.is_dynamic_fee(), at.base_fee) {
        (true, Some(base)) => tx.effective_gas_price(Some(base)),
        _ => tx.gas_price().unwrap_or_else(|| tx.max_fee_per_gas()),
    };
    let mut map: BTreeMap<&'static str, Value> = BTreeMap::new();
    map.insert("blockHash", json!(at.hash));
    map.insert("blockNumber", quantity(at.number));
    map.insert("contractAddress", contract_address(tx, from).map_or(Value::Null, |a| json!(a)));
    map.insert("cumulativeGasUsed", quantity(cumulative));
    map.insert("effectiveGasPrice", quantity(effective_gas_price));
    map.insert("from", json!(from));
    map.insert("gasUsed", quantity(gas_used));
    map.insert("logs", Value::Array(logs));
    map.insert("logsBloom", json!(receipt.logs_bloom()));
    match receipt.status_or_post_state() {
        Eip658Value::PostState(root) => map.insert("root", json!(root)),
        Eip658Value::Eip658(ok) => map.insert("status", quantity(u8::from(ok))),
    };
    map.insert("to", tx.to().map_or(Value::Null, |a| json!(a)));
    map.insert("transactionHash", json!(tx_hash));
    map.insert("transactionIndex", quantity(index));
    map.insert("type", quantity(tx.ty()));
    if let Some(hashes) = tx.blob_versioned_hashes() {
        let blob_gas = hashes.len() as u64 * alloy_eips::eip4844::DATA_GAS_PER_BLOB;
        map.insert("blobGasUsed", quantity(blob_gas));
        map.insert("blobGasPrice", quantity(at.blob_base_fee.unwrap_or_default()));
    }
    // Sorted keys, as geth's map.
    Some(Value::Object(map.into_iter().map(|(k, v)| (k.to_string(), v)).collect()))
}

/// A log in RPC form (geth's field order): the `log_index`-th of block `at`, emitted by
/// the transaction `tx_hash` at `tx_index`.
pub fn log_json(
    log: &alloy_primitives::Log,
    at: &BlockContext,
    tx_hash: B256,
    tx_index: usize,
    log_index: usize,
) -> Value {
    json!({
        "address": log.address,
        "topics": log.topics(),
        "data": log.data.data,
        "blockNumber": quantity(at.number),
        "transactionHash": tx_hash,
        "transactionIndex": quantity(tx_index),
        "blockHash": at.hash,
        "blockTimestamp": quantity(at.timestamp),
        "logIndex": quantity(log_index),
        "removed": false,
    })
}

/// The address a contract creation deployed to (sender and nonce), `None` for a call.
fn contract_address(tx: &Transaction, from: Address) -> Option<Address> {
    tx.to().is_none().then(|| from.create(tx.nonce()))
}
