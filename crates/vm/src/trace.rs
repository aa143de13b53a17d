//! Tracing stored blocks' transactions as geth's `debug_trace*` methods do, with the
//! tracers of revm-inspectors (the crate reth uses): the struct logger (geth's default),
//! `callTracer`, `prestateTracer` (with `diffMode`), `4byteTracer` and `noopTracer`.
//!
//! A transaction is traced on the state its block gave it: the parent's state, the
//! block's pre-execution system calls, then the block's earlier transactions replayed
//! untraced. Nothing is written.

use crate::db::StoreDbError;
use crate::env::tx_env;
use crate::evm::EvmConfig;
use crate::system::run_pre_block;
use alloy_primitives::{Address, Bytes};
use alloy_rpc_types_trace::geth::{
    FourByteFrame, GethDebugBuiltInTracerType, GethDebugTracerType, GethDebugTracingOptions,
    GethDefaultTracingOptions, GethTrace, NoopFrame,
};
use ethrex_common::{Block, ChainConfig};
use revm::context::result::{EVMError, ExecutionResult};
use revm::database::{State, WrapDatabaseRef};
use revm::database_interface::DatabaseRef;
use revm::{ExecuteCommitEvm, ExecuteEvm, InspectEvm, MainBuilder};
use revm_inspectors::tracing::{FourByteInspector, TracingInspector, TracingInspectorConfig};

/// Why a block or transaction could not be traced.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// A tracer this node does not offer (e.g. a JavaScript tracer).
    #[error("tracer {0} is not supported")]
    UnsupportedTracer(String),
    /// A tracer's configuration does not parse.
    #[error("invalid tracer config: {0}")]
    InvalidConfig(String),
    /// The block did not replay as it was imported.
    #[error("replaying transaction {index}: {reason}")]
    Replay {
        /// The transaction's index.
        index: usize,
        /// What failed.
        reason: String,
    },
    /// The pre-block system calls failed.
    #[error("pre-block system calls: {0}")]
    System(String),
}

/// Traces the transactions of `block` (sent by `senders`) that `wanted` selects, on
/// `parent` (the state after the block's parent). One result per selected transaction,
/// in block order; the replay stops after the last one selected.
///
/// # Errors
/// [`TraceError`].
pub fn trace_block<DB: DatabaseRef<Error = StoreDbError>>(
    parent: DB,
    block: &Block,
    senders: &[Address],
    config: &ChainConfig,
    wanted: &dyn Fn(usize) -> bool,
    opts: &GethDebugTracingOptions,
) -> Result<Vec<GethTrace>, TraceError> {
    let evm_config = EvmConfig::new(config, &block.header);
    let mut state = State::builder().with_database(WrapDatabaseRef(parent)).build();
    run_pre_block(&mut state, &evm_config, config, &block.header)
        .map_err(|e| TraceError::System(e.to_string()))?;
    let last = (0..block.body.transactions.len()).rev().find(|i| wanted(*i));
    let mut out = Vec::new();
    let Some(last) = last else { return Ok(out) };
    for (index, (tx, sender)) in block.body.transactions.iter().zip(senders).enumerate() {
        if index > last {
            break;
        }
        let env = tx_env(tx, *sender);
        if !wanted(index) {
            let mut evm = evm_config.evm(&mut state);
            let result = evm.transact(env).map_err(|e| replay(index, e))?;
            evm.commit(result.state);
            continue;
        }
        out.push(trace_one(&mut state, &evm_config, env, opts, index)?);
    }
    Ok(out)
}

/// Traces one transaction environment (`debug_traceCall`'s call) on `state` with the
/// EVM `evm_config` builds; nothing is written beyond `state`'s cache.
pub(crate) fn trace_env<DB: DatabaseRef<Error = StoreDbError>>(
    state: &mut State<WrapDatabaseRef<DB>>,
    evm_config: &EvmConfig,
    env: revm::context::TxEnv,
    opts: &GethDebugTracingOptions,
) -> Result<GethTrace, TraceError> {
    trace_one(state, evm_config, env, opts, 0)
}

fn replay<E: std::fmt::Display>(index: usize, e: EVMError<E>) -> TraceError {
    TraceError::Replay { index, reason: e.to_string() }
}

/// Runs one transaction with the tracer `opts` names and commits its changes.
fn trace_one<DB: DatabaseRef<Error = StoreDbError>>(
    state: &mut State<WrapDatabaseRef<DB>>,
    evm_config: &EvmConfig,
    env: revm::context::TxEnv,
    opts: &GethDebugTracingOptions,
    index: usize,
) -> Result<GethTrace, TraceError> {
    let evm_error = |e: EVMError<_>| replay(index, e);
    let bad_config = |e: serde_json::Error| TraceError::InvalidConfig(e.to_string());
    let tracer = match &opts.tracer {
        None => None,
        Some(GethDebugTracerType::BuiltInTracer(t)) => Some(*t),
        Some(GethDebugTracerType::JsTracer(code)) => {
            return Err(TraceError::UnsupportedTracer(format!("{code:?}")))
        }
    };
    let config = &opts.tracer_config;
    match tracer {
        Some(GethDebugBuiltInTracerType::FourByteTracer) => {
            let mut evm = evm_config
                .context(&mut *state)
                .build_mainnet_with_inspector(FourByteInspector::default());
            let result = evm.inspect_tx(env).map_err(evm_error)?;
            let frame = FourByteFrame::from(&evm.inspector);
            evm.commit(result.state);
            Ok(frame.into())
        }
        Some(GethDebugBuiltInTracerType::NoopTracer) => {
            let mut evm = evm_config.evm(&mut *state);
            let result = evm.transact(env).map_err(evm_error)?;
            evm.commit(result.state);
            Ok(NoopFrame::default().into())
        }
        Some(GethDebugBuiltInTracerType::CallTracer) => {
            let call = config.clone().into_call_config().map_err(bad_config)?;
            let inspector =
                TracingInspector::new(TracingInspectorConfig::from_geth_call_config(&call));
            let mut evm = evm_config.context(&mut *state).build_mainnet_with_inspector(inspector);
            let result = evm.inspect_tx(env).map_err(evm_error)?;
            let gas = gas_of(&result.result);
            let frame = evm.inspector.geth_builder().geth_call_traces_with_result_gas(call, gas);
            evm.commit(result.state);
            Ok(frame.into())
        }
        Some(GethDebugBuiltInTracerType::PreStateTracer) => {
            let prestate = config.clone().into_pre_state_config().map_err(bad_config)?;
            let inspector =
                TracingInspector::new(TracingInspectorConfig::from_geth_prestate_config(&prestate));
            let mut evm = evm_config.context(&mut *state).build_mainnet_with_inspector(inspector);
            let result = evm.inspect_tx(env).map_err(evm_error)?;
            let frame = {
                let (ctx, inspector) = (&evm.ctx, &evm.inspector);
                inspector
                    .geth_builder()
                    .geth_prestate_traces(&result, &prestate, &*ctx.journaled_state.database)
                    .map_err(|e| TraceError::Replay { index, reason: e.to_string() })?
            };
            evm.commit(result.state);
            Ok(frame.into())
        }
        Some(other) => Err(TraceError::UnsupportedTracer(format!("{other:?}"))),
        None => {
            let defaults: GethDefaultTracingOptions = opts.config;
            let inspector =
                TracingInspector::new(TracingInspectorConfig::from_geth_config(&defaults));
            let mut evm = evm_config.context(&mut *state).build_mainnet_with_inspector(inspector);
            let result = evm.inspect_tx(env).map_err(evm_error)?;
            let gas = gas_of(&result.result);
            let output = match &result.result {
                ExecutionResult::Success { output, .. } => output.data().clone(),
                ExecutionResult::Revert { output, .. } => output.clone(),
                ExecutionResult::Halt { .. } => Bytes::new(),
            };
            let frame =
                evm.inspector.geth_builder().geth_traces_with_result_gas(gas, output, defaults);
            evm.commit(result.state);
            Ok(frame.into())
        }
    }
}

fn gas_of(result: &ExecutionResult) -> revm::context::result::ResultGas {
    match result {
        ExecutionResult::Success { gas, .. }
        | ExecutionResult::Revert { gas, .. }
        | ExecutionResult::Halt { gas, .. } => *gas,
    }
}
