//! The `eth_`, `net_` and `web3_` methods served without authentication. State queries
//! answer for the head block: the flat state holds the head's state only.

use crate::node::Node;
use alloy_primitives::{Address, Bytes, B256, U256};
use ethrex_common::Header;
use jsonrpsee::types::{ErrorObjectOwned, Params};
use jsonrpsee::RpcModule;
use serde_json::{json, Value};
use std::sync::Arc;

use jsonrpsee::types::error::INVALID_PARAMS_CODE as INVALID_PARAMS;
const SERVER_ERROR: i32 = -32000;

fn err(code: i32, message: impl Into<String>) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(code, message.into(), None::<()>)
}

fn internal(e: impl std::fmt::Display) -> ErrorObjectOwned {
    err(-32603, e.to_string())
}

fn q(v: u64) -> String {
    format!("{v:#x}")
}

/// A block tag or number, resolved to a canonical block number.
fn resolve_number(node: &Node, tag: &Value) -> Result<Option<u64>, ErrorObjectOwned> {
    let head =
        node.chain.store.head_header().map_err(internal)?.map(|h| h.number).unwrap_or_default();
    match tag.as_str() {
        Some("latest" | "safe" | "finalized" | "pending") => Ok(Some(head)),
        Some("earliest") => Ok(Some(0)),
        Some(s) if s.starts_with("0x") => u64::from_str_radix(&s[2..], 16)
            .map(Some)
            .map_err(|_| err(INVALID_PARAMS, format!("invalid block number {s}"))),
        _ => Err(err(INVALID_PARAMS, format!("invalid block tag {tag}"))),
    }
}

fn block_json(node: &Node, hash: &B256, full: bool) -> Result<Value, ErrorObjectOwned> {
    let store = &node.chain.store;
    let Some(block) = store.block(hash).map_err(internal)? else { return Ok(Value::Null) };
    let h: &Header = &block.header;
    let txs: Vec<Value> = if full {
        block
            .body
            .transactions
            .iter()
            .map(|tx| serde_json::to_value(tx).unwrap_or(Value::Null))
            .collect()
    } else {
        block.body.transactions.iter().map(|tx| json!(tx.tx_hash())).collect()
    };
    let mut v = json!({
        "hash": hash, "parentHash": h.parent_hash, "sha3Uncles": h.ommers_hash, "miner": h.beneficiary,
        "stateRoot": h.state_root, "transactionsRoot": h.transactions_root, "receiptsRoot": h.receipts_root,
        "logsBloom": h.logs_bloom, "difficulty": format!("{:#x}", h.difficulty), "number": q(h.number),
        "gasLimit": q(h.gas_limit), "gasUsed": q(h.gas_used), "timestamp": q(h.timestamp), "extraData": h.extra_data,
        "mixHash": h.mix_hash, "nonce": h.nonce, "size": q(alloy_rlp::encode(&block).len() as u64),
        "transactions": txs, "uncles": [], "withdrawals": block.body.withdrawals,
    });
    let o = v.as_object_mut().expect("object");
    if let Some(x) = h.base_fee_per_gas {
        o.insert("baseFeePerGas".into(), json!(q(x)));
    }
    if let Some(x) = h.withdrawals_root {
        o.insert("withdrawalsRoot".into(), json!(x));
    }
    if let Some(x) = h.blob_gas_used {
        o.insert("blobGasUsed".into(), json!(q(x)));
    }
    if let Some(x) = h.excess_blob_gas {
        o.insert("excessBlobGas".into(), json!(q(x)));
    }
    if let Some(x) = h.parent_beacon_block_root {
        o.insert("parentBeaconBlockRoot".into(), json!(x));
    }
    if let Some(x) = h.requests_hash {
        o.insert("requestsHash".into(), json!(x));
    }
    if let Some(x) = h.block_access_list_hash {
        o.insert("blockAccessListHash".into(), json!(x));
    }
    if let Some(x) = h.slot_number {
        o.insert("slotNumber".into(), json!(q(x)));
    }
    Ok(v)
}

/// State reads are served for the head only; older blocks' state is not kept flat.
fn require_head_state(node: &Node, tag: Option<&Value>) -> Result<(), ErrorObjectOwned> {
    let Some(tag) = tag else { return Ok(()) };
    let head =
        node.chain.store.head_header().map_err(internal)?.map(|h| h.number).unwrap_or_default();
    match resolve_number(node, tag)? {
        Some(n) if n == head => Ok(()),
        _ => Err(err(
            SERVER_ERROR,
            "historical state is not available: only the head block's state is served",
        )),
    }
}

fn address_and_tag(params: &Params) -> Result<(Address, Option<Value>), ErrorObjectOwned> {
    let raw: Vec<Value> = params.parse()?;
    let address: Address = serde_json::from_value(raw.first().cloned().unwrap_or(Value::Null))
        .map_err(|e| err(INVALID_PARAMS, format!("invalid address: {e}")))?;
    Ok((address, raw.get(1).cloned()))
}

/// The unauthenticated `eth_`, `net_` and `web3_` methods over the shared node state.
pub(crate) fn module(node: Arc<Node>) -> RpcModule<Arc<Node>> {
    let mut m = RpcModule::new(node);
    let reg = |m: &mut RpcModule<Arc<Node>>,
               name: &'static str,
               f: fn(&Node, Params) -> Result<Value, ErrorObjectOwned>| {
        m.register_blocking_method(name, move |params, node, _| f(&node, params))
            .expect("method names are unique");
    };
    reg(&mut m, "eth_chainId", |n, _| Ok(json!(q(n.chain.config.chain_id()))));
    reg(&mut m, "net_version", |n, _| Ok(json!(n.chain.config.chain_id().to_string())));
    reg(&mut m, "web3_clientVersion", |_, _| {
        Ok(json!(format!(
            "ethrex/v{}/{}-{}/rust",
            env!("CARGO_PKG_VERSION"),
            std::env::consts::OS,
            std::env::consts::ARCH
        )))
    });
    reg(&mut m, "eth_syncing", |_, _| Ok(json!(false)));
    reg(&mut m, "eth_blockNumber", |n, _| {
        Ok(json!(q(n
            .chain
            .store
            .head_header()
            .map_err(internal)?
            .map(|h| h.number)
            .unwrap_or_default())))
    });
    reg(&mut m, "eth_getBlockByNumber", |n, p| {
        let raw: Vec<Value> = p.parse()?;
        let full = raw.get(1).and_then(Value::as_bool).unwrap_or(false);
        let Some(number) = resolve_number(n, raw.first().unwrap_or(&Value::Null))? else {
            return Ok(Value::Null);
        };
        match n.chain.store.canonical_hash(number).map_err(internal)? {
            Some(hash) => block_json(n, &hash, full),
            None => Ok(Value::Null),
        }
    });
    reg(&mut m, "eth_getBlockByHash", |n, p| {
        let (hash, full): (B256, Option<bool>) = p.parse()?;
        block_json(n, &hash, full.unwrap_or(false))
    });
    reg(&mut m, "eth_getBalance", |n, p| {
        let (address, tag) = address_and_tag(&p)?;
        require_head_state(n, tag.as_ref())?;
        let balance = n
            .chain
            .store
            .account(&address)
            .map_err(internal)?
            .map(|a| a.balance)
            .unwrap_or_default();
        Ok(json!(format!("{balance:#x}")))
    });
    reg(&mut m, "eth_getTransactionCount", |n, p| {
        let (address, tag) = address_and_tag(&p)?;
        require_head_state(n, tag.as_ref())?;
        Ok(json!(q(n
            .chain
            .store
            .account(&address)
            .map_err(internal)?
            .map(|a| a.nonce)
            .unwrap_or_default())))
    });
    reg(&mut m, "eth_getCode", |n, p| {
        let (address, tag) = address_and_tag(&p)?;
        require_head_state(n, tag.as_ref())?;
        let store = &n.chain.store;
        let code = match store.account(&address).map_err(internal)? {
            Some(a) => store.code(&a.code_hash).map_err(internal)?.unwrap_or_default(),
            None => Bytes::new(),
        };
        Ok(json!(code))
    });
    reg(&mut m, "eth_getStorageAt", |n, p| {
        let raw: Vec<Value> = p.parse()?;
        let address: Address = serde_json::from_value(raw.first().cloned().unwrap_or(Value::Null))
            .map_err(|e| err(INVALID_PARAMS, format!("invalid address: {e}")))?;
        let slot: U256 = serde_json::from_value(raw.get(1).cloned().unwrap_or(Value::Null))
            .map_err(|e| err(INVALID_PARAMS, format!("invalid slot: {e}")))?;
        require_head_state(n, raw.get(2))?;
        let value = n.chain.store.storage(&address, &slot).map_err(internal)?;
        Ok(json!(B256::from(value)))
    });
    m
}
