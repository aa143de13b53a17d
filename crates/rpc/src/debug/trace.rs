//! `debug_traceTransaction`, `debug_traceBlockByNumber`, `debug_traceBlockByHash`: a
//! stored block's transactions replayed on its parent's state with one of
//! revm-inspectors' tracers (`ethrex_vm::trace`), answered in geth's shapes.

use crate::debug::struct_logs::struct_logger_json;
use crate::error::{EthApiError, EthResult};
use crate::eth::call::call_error;
use crate::eth::overrides::BlockOverridesJson;
use crate::handler::EthRpc;
use crate::params::StrictHash;
use alloy_consensus::transaction::SignerRecoverable;
use alloy_consensus::Transaction as _;
use alloy_eips::BlockId;
use alloy_eips::BlockNumberOrTag;
use alloy_primitives::U64;
use alloy_primitives::{Address, B256};
use alloy_rpc_types_eth::TransactionRequest;
use alloy_rpc_types_trace::geth::{
    GethDebugBuiltInTracerType, GethDebugTracerType, GethDebugTracingCallOptions,
    GethDebugTracingOptions, GethTrace,
};
use ethrex_common::Block;
use ethrex_vm::StoreDb;
use jsonrpsee::proc_macros::rpc;
use jsonrpsee::types::ErrorObjectOwned;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::sync::Arc;

/// The `debug_trace*` methods.
#[rpc(server, namespace = "debug")]
pub trait DebugTraceApi {
    /// `debug_traceTransaction`: one canonical transaction.
    #[method(name = "traceTransaction", blocking)]
    fn trace_transaction(
        &self,
        hash: StrictHash,
        opts: Option<GethDebugTracingOptions>,
    ) -> EthResult<Box<RawValue>>;

    /// `debug_traceBlockByNumber`: every transaction of a canonical block.
    #[method(name = "traceBlockByNumber", blocking)]
    fn trace_block_by_number(
        &self,
        number: BlockNumberOrTag,
        opts: Option<GethDebugTracingOptions>,
    ) -> EthResult<Vec<BlockTxTrace>>;

    /// `debug_traceCall`: a call traced on the state after a block (default `latest`),
    /// with state and block overrides.
    #[method(name = "traceCall", blocking)]
    fn trace_call(
        &self,
        request: TransactionRequest,
        block: Option<BlockId>,
        opts: Option<GethDebugTracingCallOptions>,
    ) -> Result<Box<RawValue>, ErrorObjectOwned>;

    /// `debug_traceBlockByHash`: every transaction of a stored block.
    #[method(name = "traceBlockByHash", blocking)]
    fn trace_block_by_hash(
        &self,
        hash: StrictHash,
        opts: Option<GethDebugTracingOptions>,
    ) -> EthResult<Vec<BlockTxTrace>>;
}

impl EthRpc {
    /// Traces the transactions of `block` (hash `hash`) that `wanted` selects.
    fn trace(
        &self,
        block: &Block,
        wanted: impl Fn(usize) -> bool,
        opts: &GethDebugTracingOptions,
    ) -> EthResult<Vec<Result<Box<RawValue>, ethrex_vm::trace::TraceError>>> {
        if block.header.number == 0 {
            return Err(EthApiError::Trace("genesis is not traceable".into()));
        }
        let chain = &self.node().chain;
        let parent = block.header.parent_hash;
        let state = chain.store.state_at(parent)?;
        let db = StoreDb::new(chain.store.clone(), parent, block.header.number - 1)
            .with_source(Some(Arc::new(state)));
        // The senders of the transactions up to the last one traced: the replay stops
        // there.
        let txs = &block.body.transactions;
        let count = (0..txs.len()).rev().find(|i| wanted(*i)).map_or(0, |last| last + 1);
        let senders: Vec<Address> =
            txs[..count].iter().map(|tx| tx.recover_signer()).collect::<Result<_, _>>().map_err(
                |e| EthApiError::Internal(format!("a stored transaction's sender: {e}")),
            )?;
        let traces =
            ethrex_vm::trace::trace_block(db, block, &senders, &chain.config, &wanted, opts)
                .map_err(|e| EthApiError::Trace(e.to_string()))?;
        let indices = (0..block.body.transactions.len()).filter(|i| wanted(*i));
        traces
            .into_iter()
            .zip(indices)
            .map(|(trace, i)| match trace {
                Ok(trace) => geth_json(trace, opts, block.body.transactions[i].gas_limit()).map(Ok),
                Err(e) => Ok(Err(e)),
            })
            .collect()
    }

    /// Every transaction of `block` traced, as geth's `{txHash, result}` pairs, or
    /// `{txHash, error}` for one whose trace ran out of time.
    fn trace_all(
        &self,
        block: &Block,
        opts: Option<GethDebugTracingOptions>,
    ) -> EthResult<Vec<BlockTxTrace>> {
        let traces = self.trace(block, |_| true, &opts.unwrap_or_default())?;
        Ok(block
            .body
            .transactions
            .iter()
            .zip(traces)
            .map(|(tx, trace)| {
                let tx_hash = *tx.tx_hash();
                match trace {
                    Ok(trace) => BlockTxTrace { tx_hash, result: Some(trace), error: None },
                    Err(e) => BlockTxTrace { tx_hash, result: None, error: Some(e.to_string()) },
                }
            })
            .collect())
    }

    fn stored_block(&self, hash: B256) -> EthResult<Block> {
        self.node()
            .chain
            .store
            .block(&hash)?
            .ok_or_else(|| EthApiError::Trace(format!("block {hash} not found")))
    }
}

/// alloy's block overrides (what `debug_traceCall`'s options parse into) in the form the
/// call methods take.
fn block_overrides(o: alloy_rpc_types_eth::BlockOverrides) -> BlockOverridesJson {
    BlockOverridesJson {
        number: o.number,
        difficulty: o.difficulty,
        time: o.time.map(U64::from),
        gas_limit: o.gas_limit.map(U64::from),
        fee_recipient: o.coinbase,
        prev_randao: o.random,
        base_fee_per_gas: o.base_fee,
        blob_base_fee: o.blob_base_fee,
        beacon_root: o.beacon_root,
        withdrawals: None,
    }
}

impl DebugTraceApiServer for EthRpc {
    fn trace_call(
        &self,
        request: TransactionRequest,
        block: Option<BlockId>,
        opts: Option<GethDebugTracingCallOptions>,
    ) -> Result<Box<RawValue>, ErrorObjectOwned> {
        let opts = opts.unwrap_or_default();
        if opts.tx_index.is_some() {
            return Err(EthApiError::Unsupported(
                "txIndex is not supported: a call is traced on the state after the block".into(),
            )
            .into());
        }
        let input = crate::eth::call::input(request)?;
        let tracing = opts.tracing_options;
        let blocks = opts.block_overrides.map(block_overrides);
        self.with_caller(block, opts.state_overrides.as_ref(), blocks, |caller| {
            let (trace, gas) = caller.trace(&input, &tracing).map_err(call_error)?;
            Ok(geth_json(trace, &tracing, gas)?)
        })
    }

    fn trace_transaction(
        &self,
        StrictHash(hash): StrictHash,
        opts: Option<GethDebugTracingOptions>,
    ) -> EthResult<Box<RawValue>> {
        let store = &self.node().chain.store;
        let location = store
            .transaction_location(&hash)?
            .ok_or_else(|| EthApiError::Trace("transaction not found".into()))?;
        let block = self.stored_block(location.block_hash)?;
        let mut traces = self.trace(&block, |i| i == location.index, &opts.unwrap_or_default())?;
        traces
            .pop()
            .ok_or_else(|| EthApiError::Internal("no trace for the transaction".into()))?
            .map_err(|e| EthApiError::Trace(e.to_string()))
    }

    fn trace_block_by_number(
        &self,
        number: BlockNumberOrTag,
        opts: Option<GethDebugTracingOptions>,
    ) -> EthResult<Vec<BlockTxTrace>> {
        let hash = self.resolve_tag(number)?.ok_or_else(|| {
            EthApiError::Trace(format!(
                "block #{} not found",
                number.as_number().unwrap_or_default()
            ))
        })?;
        let block = self.stored_block(hash)?;
        self.trace_all(&block, opts)
    }

    fn trace_block_by_hash(
        &self,
        StrictHash(hash): StrictHash,
        opts: Option<GethDebugTracingOptions>,
    ) -> EthResult<Vec<BlockTxTrace>> {
        let block = self.stored_block(hash)?;
        self.trace_all(&block, opts)
    }
}

/// One transaction's trace in a block's: geth's `{txHash, result}`, or `{txHash, error}`
/// for one whose trace ran out of time.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BlockTxTrace {
    tx_hash: B256,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<Box<RawValue>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// `trace` in geth's JSON: the struct logger's written step by step
/// (`struct_logs`), the other tracers' shaped by [`geth_shape`]; `tx_gas` is the traced
/// transaction's gas limit.
fn geth_json(
    trace: GethTrace,
    opts: &GethDebugTracingOptions,
    tx_gas: u64,
) -> EthResult<Box<RawValue>> {
    let internal = |e: serde_json::Error| EthApiError::Internal(e.to_string());
    match trace {
        GethTrace::Default(frame) => struct_logger_json(frame).map_err(internal),
        other => {
            let mut value = serde_json::to_value(other).map_err(internal)?;
            geth_shape(&mut value, opts, tx_gas);
            serde_json::value::to_raw_value(&value).map_err(internal)
        }
    }
}

/// Where revm-inspectors' frames of the built-in tracers differ from what geth writes,
/// geth's form: the call tracer's top frame has the transaction's gas limit as `gas`;
/// the prestate tracer leaves out accounts that did not exist before the transaction and
/// gives each account with code its `codeHash`.
fn geth_shape(trace: &mut Value, opts: &GethDebugTracingOptions, tx_gas: u64) {
    let tracer = match &opts.tracer {
        Some(GethDebugTracerType::BuiltInTracer(t)) => Some(*t),
        _ => None,
    };
    match tracer {
        Some(GethDebugBuiltInTracerType::CallTracer) => {
            if let Some(frame) = trace.as_object_mut() {
                frame.insert("gas".into(), json!(format!("{tx_gas:#x}")));
                // revm-inspectors sums up an Amsterdam transaction's gas dimensions on the
                // top frame; geth's call tracer does not (the receipt has the gas used).
                for key in ["executionGasUsed", "stateGasUsed", "gasRefund", "stateGasRefund"] {
                    frame.shift_remove(key);
                }
            }
        }
        Some(GethDebugBuiltInTracerType::PreStateTracer) => {
            let diff = trace.get("pre").is_some() && trace.get("post").is_some();
            if diff {
                for side in ["pre", "post"] {
                    if let Some(accounts) = trace.get_mut(side).and_then(Value::as_object_mut) {
                        shape_accounts(accounts, side == "pre");
                    }
                }
            } else if let Some(accounts) = trace.as_object_mut() {
                shape_accounts(accounts, true);
            }
        }
        _ => {}
    }
}

/// Drops (in a pre-state) accounts that did not exist and adds `codeHash` after `code`.
fn shape_accounts(accounts: &mut serde_json::Map<String, Value>, pre: bool) {
    if pre {
        accounts.retain(|_, account| {
            let zero = |k: &str| match account.get(k) {
                None => true,
                Some(v) => {
                    v.as_str().is_some_and(|s| s == "0x0" || s == "0x") || v.as_u64() == Some(0)
                }
            };
            !(zero("balance") && zero("nonce") && zero("code"))
        });
    }
    for account in accounts.values_mut().filter_map(Value::as_object_mut) {
        let Some(code) = account.get("code").and_then(Value::as_str) else { continue };
        let Ok(bytes) = alloy_primitives::hex::decode(code) else { continue };
        if bytes.is_empty() {
            continue;
        }
        let hash = json!(alloy_primitives::keccak256(&bytes));
        // Rebuilt to keep geth's order: balance, code, codeHash, nonce, storage.
        let fields = std::mem::take(account);
        for (key, value) in fields {
            let is_code = key == "code";
            account.insert(key, value);
            if is_code {
                account.insert("codeHash".into(), hash.clone());
            }
        }
    }
}
