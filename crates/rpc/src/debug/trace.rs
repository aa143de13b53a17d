//! `debug_traceTransaction`, `debug_traceBlockByNumber`, `debug_traceBlockByHash`: a
//! stored block's transactions replayed on its parent's state with one of
//! revm-inspectors' tracers (`ethrex_vm::trace`), answered in geth's shapes.

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
    GethDebugTracingOptions,
};
use ethrex_common::Block;
use ethrex_vm::StoreDb;
use jsonrpsee::proc_macros::rpc;
use jsonrpsee::types::ErrorObjectOwned;
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
    ) -> EthResult<Value>;

    /// `debug_traceBlockByNumber`: every transaction of a canonical block.
    #[method(name = "traceBlockByNumber", blocking)]
    fn trace_block_by_number(
        &self,
        number: BlockNumberOrTag,
        opts: Option<GethDebugTracingOptions>,
    ) -> EthResult<Vec<Value>>;

    /// `debug_traceCall`: a call traced on the state after a block (default `latest`),
    /// with state and block overrides.
    #[method(name = "traceCall", blocking)]
    fn trace_call(
        &self,
        request: TransactionRequest,
        block: Option<BlockId>,
        opts: Option<GethDebugTracingCallOptions>,
    ) -> Result<Value, ErrorObjectOwned>;

    /// `debug_traceBlockByHash`: every transaction of a stored block.
    #[method(name = "traceBlockByHash", blocking)]
    fn trace_block_by_hash(
        &self,
        hash: StrictHash,
        opts: Option<GethDebugTracingOptions>,
    ) -> EthResult<Vec<Value>>;
}

impl EthRpc {
    /// Traces the transactions of `block` (hash `hash`) that `wanted` selects.
    fn trace(
        &self,
        block: &Block,
        wanted: impl Fn(usize) -> bool,
        opts: &GethDebugTracingOptions,
    ) -> EthResult<Vec<Result<Value, ethrex_vm::trace::TraceError>>> {
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
            .map(|(trace, i)| {
                let Ok(trace) = trace else { return Ok(trace.map(|_| Value::Null)) };
                let mut value = serde_json::to_value(trace)
                    .map_err(|e| EthApiError::Internal(e.to_string()))?;
                geth_shape(&mut value, opts, block.body.transactions[i].gas_limit());
                Ok(Ok(value))
            })
            .collect()
    }

    /// Every transaction of `block` traced, as geth's `{txHash, result}` pairs, or
    /// `{txHash, error}` for one whose trace ran out of time.
    fn trace_all(
        &self,
        block: &Block,
        opts: Option<GethDebugTracingOptions>,
    ) -> EthResult<Vec<Value>> {
        let traces = self.trace(block, |_| true, &opts.unwrap_or_default())?;
        Ok(block
            .body
            .transactions
            .iter()
            .zip(traces)
            .map(|(tx, trace)| match trace {
                Ok(trace) => json!({"txHash": tx.tx_hash(), "result": trace}),
                Err(e) => json!({"txHash": tx.tx_hash(), "error": e.to_string()}),
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
    ) -> Result<Value, ErrorObjectOwned> {
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
            let mut value =
                serde_json::to_value(trace).map_err(|e| EthApiError::Internal(e.to_string()))?;
            geth_shape(&mut value, &tracing, gas);
            Ok(value)
        })
    }

    fn trace_transaction(
        &self,
        StrictHash(hash): StrictHash,
        opts: Option<GethDebugTracingOptions>,
    ) -> EthResult<Value> {
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
    ) -> EthResult<Vec<Value>> {
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
    ) -> EthResult<Vec<Value>> {
        let block = self.stored_block(hash)?;
        self.trace_all(&block, opts)
    }
}

/// Where revm-inspectors' frames differ from what geth writes, geth's form: a struct log
/// omits a zero `refund` and empty `returnData`; the call tracer's top frame has the
/// transaction's gas limit as `gas`; the prestate tracer leaves out accounts that did not
/// exist before the transaction and gives each account with code its `codeHash`.
fn geth_shape(trace: &mut Value, opts: &GethDebugTracingOptions, tx_gas: u64) {
    let tracer = match &opts.tracer {
        Some(GethDebugTracerType::BuiltInTracer(t)) => Some(*t),
        _ => None,
    };
    match tracer {
        None => {
            let logs = trace.get_mut("structLogs").and_then(Value::as_array_mut);
            if let Some(logs) = logs {
                storage_at_access(logs);
            }
            if let Some(frame) = trace.as_object_mut() {
                // geth's field order.
                let mut fields = std::mem::take(frame);
                for key in ["gas", "failed", "returnValue", "structLogs"] {
                    if let Some(value) = fields.remove(key) {
                        frame.insert(key.into(), value);
                    }
                }
                frame.extend(fields);
            }
            let logs = trace.get_mut("structLogs").and_then(Value::as_array_mut);
            for log in logs.into_iter().flatten().filter_map(Value::as_object_mut) {
                if let Some(error) = log.get("error").and_then(Value::as_str) {
                    let geth = geth_step_error(error);
                    if geth == "out of gas" && log.get("gasCost").and_then(Value::as_u64) == Some(0)
                    {
                        let op = log.get("op").and_then(Value::as_str).unwrap_or_default();
                        if let Some(cost) = static_cost(op) {
                            log.insert("gasCost".into(), json!(cost));
                        }
                    }
                    log.insert("error".into(), json!(geth));
                }
                if log.get("refund").and_then(Value::as_u64) == Some(0) {
                    log.shift_remove("refund");
                }
                if log.get("returnData").and_then(Value::as_str) == Some("0x") {
                    log.shift_remove("returnData");
                }
            }
        }
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

/// geth's storage snapshot: at each `SLOAD` and `SSTORE` step, every slot the running
/// contract has loaded or stored so far, this step's included (the value loaded, the
/// top of the next step's stack; or the value stored, the second item of this step's
/// stack). revm-inspectors records a step's slot from the next step on and not the
/// earlier loads, so the snapshots are rebuilt from the logs, one map per call frame
/// (geth keeps one per contract address: the two differ only when a contract's code runs
/// in two frames of one transaction).
fn storage_at_access(logs: &mut [Value]) {
    let word = |v: &Value| -> Option<String> {
        let hex = v.as_str()?.strip_prefix("0x")?;
        (hex.len() <= 64).then(|| format!("0x{hex:0>64}"))
    };
    let mut frames: Vec<serde_json::Map<String, Value>> = Vec::new();
    for i in 0..logs.len() {
        let depth = logs[i].get("depth").and_then(Value::as_u64).unwrap_or(1) as usize;
        frames.resize_with(depth.max(1), Default::default);
        let op = logs[i].get("op").and_then(Value::as_str).unwrap_or_default();
        if (op != "SLOAD" && op != "SSTORE") || logs[i].get("storage").is_none() {
            continue;
        }
        let store = op == "SSTORE";
        let Some(stack) = logs[i].get("stack").and_then(Value::as_array) else { continue };
        let Some(key) = stack.last().and_then(word) else { continue };
        let value = if store {
            stack.len().checked_sub(2).and_then(|j| word(&stack[j]))
        } else {
            logs.get(i + 1)
                .filter(|next| next.get("depth").and_then(Value::as_u64) == Some(depth as u64))
                .and_then(|next| next.get("stack")?.as_array()?.last().and_then(word))
        };
        let Some(value) = value else { continue };
        let frame = &mut frames[depth - 1];
        frame.insert(key, json!(value));
        let snapshot = Value::Object(frame.clone());
        if let Some(log) = logs[i].as_object_mut() {
            log.insert("storage".into(), snapshot);
        }
    }
}

/// The fixed cost of an opcode whose cost has no dynamic part: geth's struct logger shows
/// it on the step that ran out of gas, where revm-inspectors shows 0. (revm keeps gas in
/// its instruction table, which it does not expose by opcode; the Yellow Paper's tiers.)
fn static_cost(op: &str) -> Option<u64> {
    const BASE: &[&str] = &[
        "ADDRESS",
        "ORIGIN",
        "CALLER",
        "CALLVALUE",
        "CALLDATASIZE",
        "CODESIZE",
        "GASPRICE",
        "COINBASE",
        "TIMESTAMP",
        "NUMBER",
        "DIFFICULTY",
        "PREVRANDAO",
        "GASLIMIT",
        "CHAINID",
        "RETURNDATASIZE",
        "POP",
        "PC",
        "MSIZE",
        "GAS",
        "BASEFEE",
        "BLOBBASEFEE",
        "PUSH0",
    ];
    const VERY_LOW: &[&str] = &[
        "ADD",
        "SUB",
        "NOT",
        "LT",
        "GT",
        "SLT",
        "SGT",
        "EQ",
        "ISZERO",
        "AND",
        "OR",
        "XOR",
        "BYTE",
        "SHL",
        "SHR",
        "SAR",
        "CALLDATALOAD",
        "BLOBHASH",
        "CLZ",
    ];
    const LOW: &[&str] = &["MUL", "DIV", "SDIV", "MOD", "SMOD", "SIGNEXTEND", "SELFBALANCE"];
    Some(match op {
        _ if BASE.contains(&op) => 2,
        _ if VERY_LOW.contains(&op) => 3,
        _ if op.starts_with("PUSH") || op.starts_with("DUP") || op.starts_with("SWAP") => 3,
        _ if LOW.contains(&op) => 5,
        "ADDMOD" | "MULMOD" | "JUMP" => 8,
        "JUMPI" => 10,
        "JUMPDEST" => 1,
        _ => return None,
    })
}

/// A step's error in geth's words where revm-inspectors gives revm's debug name.
fn geth_step_error(error: &str) -> String {
    let name = error.strip_prefix("Some(").and_then(|e| e.strip_suffix(')')).unwrap_or(error);
    match name {
        "OutOfGas" | "MemoryOOG" | "MemoryLimitOOG" | "PrecompileOOG" | "InvalidOperandOOG" => {
            "out of gas".into()
        }
        "InvalidJump" => "invalid jump destination".into(),
        "Revert" => "execution reverted".into(),
        "StateChangeDuringStaticCall" => "write protection".into(),
        "CallTooDeep" => "max call depth exceeded".into(),
        other => other.into(),
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
