//! Blocks and their transactions in the JSON form `eth_getBlockByHash` /
//! `eth_getBlockByNumber` answer with, byte for byte as geth writes them where the
//! specification leaves the form open: the block's keys in alphabetical order (geth
//! marshals the block as a map), the header fields of the block's own forks only (no base
//! fee before London, no withdrawals before Shanghai...), ommer hashes as `uncles`, no
//! `totalDifficulty`; a full transaction's keys in geth's order, its `gasPrice` the price
//! it paid in the block, `chainId` only where it signed one (EIP-155 or typed).

use alloy_consensus::transaction::SignerRecoverable;
use alloy_consensus::{Transaction as _, Typed2718};
use alloy_primitives::{Address, Bytes, B256, U256};
use ethrex_common::{Block, Transaction};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// A block as the block methods return it (the keys sorted, as geth writes them).
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct RpcBlock(BTreeMap<&'static str, Value>);

impl RpcBlock {
    /// Adds a key beside the block's own (`eth_simulateV1`'s `calls`).
    pub(crate) fn insert(&mut self, key: &'static str, value: Value) {
        self.0.insert(key, value);
    }
}

/// A number as a JSON-RPC quantity (`0x`-prefixed hex, no leading zeros).
pub(crate) fn quantity(n: impl std::fmt::LowerHex) -> Value {
    Value::String(format!("{n:#x}"))
}

fn data(bytes: &[u8]) -> Value {
    Value::String(format!("0x{}", alloy_primitives::hex::encode(bytes)))
}

/// A full transaction at `index` of the block `hash` (number `number`, timestamp
/// `timestamp`, base fee `base_fee`), in geth's field order.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RpcTransaction {
    block_hash: B256,
    block_number: Value,
    block_timestamp: Value,
    from: Address,
    gas: Value,
    gas_price: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_fee_per_gas: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_priority_fee_per_gas: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_fee_per_blob_gas: Option<Value>,
    hash: B256,
    input: Bytes,
    nonce: Value,
    to: Option<Address>,
    transaction_index: Value,
    value: Value,
    #[serde(rename = "type")]
    tx_type: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    access_list: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    chain_id: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    blob_versioned_hashes: Option<Vec<B256>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    authorization_list: Option<Value>,
    v: Value,
    r: Value,
    s: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    y_parity: Option<Value>,
}

/// Where a transaction sits: its block and position.
#[derive(Debug, Clone, Copy)]
pub struct TxLocation {
    /// The block's hash.
    pub block_hash: B256,
    /// The block's number.
    pub block_number: u64,
    /// The block's timestamp.
    pub block_timestamp: u64,
    /// The block's base fee (London on).
    pub base_fee: Option<u64>,
    /// The transaction's index in the block.
    pub index: usize,
}

impl RpcTransaction {
    /// The transaction `tx` at `at`; `None` if its sender cannot be recovered (a stored
    /// block's never fails).
    pub fn new(tx: &Transaction, at: TxLocation) -> Option<Self> {
        Some(Self::with_sender(tx, tx.recover_signer().ok()?, at))
    }

    /// The transaction `tx` at `at`, sent by `from` (a simulated block's transactions
    /// are unsigned: their sender is known, not recovered).
    pub fn with_sender(tx: &Transaction, from: Address, at: TxLocation) -> Self {
        let signature = tx.signature();
        let typed = !tx.is_legacy();
        let dynamic = tx.is_dynamic_fee();
        let gas_price = match (dynamic, at.base_fee) {
            (true, Some(base)) => {
                tx.max_fee_per_gas().min(base as u128 + tx.max_priority_fee_per_gas().unwrap_or(0))
            }
            (true, None) => tx.max_fee_per_gas(),
            (false, _) => tx.gas_price().unwrap_or_default(),
        };
        let y_parity = signature.v() as u64;
        let v = match tx {
            Transaction::Legacy(signed) => match signed.tx().chain_id {
                Some(id) => U256::from(id * 2 + 35 + y_parity),
                None => U256::from(27 + y_parity),
            },
            _ => U256::from(y_parity),
        };
        Self {
            block_hash: at.block_hash,
            block_number: quantity(at.block_number),
            block_timestamp: quantity(at.block_timestamp),
            from,
            gas: quantity(tx.gas_limit()),
            gas_price: quantity(gas_price),
            max_fee_per_gas: dynamic.then(|| quantity(tx.max_fee_per_gas())),
            max_priority_fee_per_gas: dynamic
                .then(|| quantity(tx.max_priority_fee_per_gas().unwrap_or_default())),
            max_fee_per_blob_gas: tx.max_fee_per_blob_gas().map(quantity),
            hash: *tx.tx_hash(),
            input: tx.input().clone(),
            nonce: quantity(tx.nonce()),
            to: tx.to(),
            transaction_index: quantity(at.index),
            value: quantity(tx.value()),
            tx_type: quantity(tx.ty()),
            access_list: typed.then(|| json!(tx.access_list().cloned().unwrap_or_default())),
            chain_id: tx.chain_id().map(quantity),
            blob_versioned_hashes: tx.blob_versioned_hashes().map(<[B256]>::to_vec),
            authorization_list: tx.authorization_list().map(|list| json!(list)),
            v: quantity(v),
            r: quantity(signature.r()),
            s: quantity(signature.s()),
            y_parity: typed.then(|| quantity(y_parity)),
        }
    }
}

/// The block `block` (hash `hash`) with its transactions as hashes or (`full`) whole.
pub fn rpc_block(block: &Block, hash: B256, full: bool) -> RpcBlock {
    rpc_block_with_senders(block, hash, full, None)
}

/// As [`rpc_block`], the full transactions' senders given (`senders[i]` sent transaction
/// `i`) instead of recovered.
pub fn rpc_block_with_senders(
    block: &Block,
    hash: B256,
    full: bool,
    senders: Option<&[Address]>,
) -> RpcBlock {
    let h = &block.header;
    let mut map: BTreeMap<&'static str, Value> = BTreeMap::new();
    map.insert("number", quantity(h.number));
    map.insert("hash", json!(hash));
    map.insert("parentHash", json!(h.parent_hash));
    map.insert("nonce", data(h.nonce.as_slice()));
    map.insert("mixHash", json!(h.mix_hash));
    map.insert("sha3Uncles", json!(h.ommers_hash));
    map.insert("logsBloom", json!(h.logs_bloom));
    map.insert("stateRoot", json!(h.state_root));
    map.insert("miner", json!(h.beneficiary));
    map.insert("difficulty", quantity(h.difficulty));
    map.insert("extraData", data(&h.extra_data));
    map.insert("gasLimit", quantity(h.gas_limit));
    map.insert("gasUsed", quantity(h.gas_used));
    map.insert("timestamp", quantity(h.timestamp));
    map.insert("transactionsRoot", json!(h.transactions_root));
    map.insert("receiptsRoot", json!(h.receipts_root));
    let optional: [(&'static str, Option<Value>); 8] = [
        ("baseFeePerGas", h.base_fee_per_gas.map(quantity)),
        ("withdrawalsRoot", h.withdrawals_root.map(|r| json!(r))),
        ("blobGasUsed", h.blob_gas_used.map(quantity)),
        ("excessBlobGas", h.excess_blob_gas.map(quantity)),
        ("parentBeaconBlockRoot", h.parent_beacon_block_root.map(|r| json!(r))),
        ("requestsHash", h.requests_hash.map(|r| json!(r))),
        ("blockAccessListHash", h.block_access_list_hash.map(|r| json!(r))),
        ("slotNumber", h.slot_number.map(quantity)),
    ];
    for (key, value) in optional {
        if let Some(value) = value {
            map.insert(key, value);
        }
    }
    map.insert("size", quantity(alloy_rlp::encode(block).len()));
    let transactions: Vec<Value> = block
        .body
        .transactions
        .iter()
        .enumerate()
        .map(|(index, tx)| {
            if !full {
                return json!(tx.tx_hash());
            }
            let at = TxLocation {
                block_hash: hash,
                block_number: h.number,
                block_timestamp: h.timestamp,
                base_fee: h.base_fee_per_gas,
                index,
            };
            let transaction = match senders.and_then(|s| s.get(index)) {
                Some(from) => Some(RpcTransaction::with_sender(tx, *from, at)),
                None => RpcTransaction::new(tx, at),
            };
            transaction.map_or(Value::Null, |t| json!(t))
        })
        .collect();
    map.insert("transactions", Value::Array(transactions));
    map.insert(
        "uncles",
        Value::Array(block.body.ommers.iter().map(|o| json!(o.hash_slow())).collect()),
    );
    if let Some(withdrawals) = &block.body.withdrawals {
        map.insert("withdrawals", json!(withdrawals));
    }
    RpcBlock(map)
}
