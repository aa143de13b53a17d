//! Tracing stored blocks' transactions as geth's `debug_trace*` methods do, with the
//! tracers of revm-inspectors (the crate reth uses): the struct logger (geth's default),
//! `callTracer`, `prestateTracer` (with `diffMode`), `4byteTracer` and `noopTracer`.
//!
//! A transaction is traced on the state its block gave it: the parent's state, the
//! block's pre-execution system calls, then the block's earlier transactions replayed
//! untraced. Nothing is written.
//!
//! Each traced transaction has the time its tracer options' `timeout` gives it (geth's
//! 5 s by default); past it the run stops and the trace is refused with geth's
//! `execution timeout`, however much it had recorded. A struct-logger trace also has a
//! size budget (`struct_log_budget`): past it the run stops and the trace is refused.

use crate::db::StoreDbError;
use crate::deadline::{parse_go_duration, Deadline, DeadlineInspector, DEFAULT_EVM_TIMEOUT};
use crate::env::tx_env;
use crate::evm::EvmConfig;
use crate::struct_log_budget::{Recorded, StructLogBudget, DEFAULT_STRUCT_LOG_BUDGET};
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
    /// The traced transaction ran past the tracer's time limit (geth's words).
    #[error("execution timeout")]
    Timeout,
    /// The struct-logger trace (of a transaction, or of a whole block's together) grew
    /// past its size budget.
    #[error("trace larger than {} MiB: narrow it with the tracer options (disableStack, disableStorage, no enableMemory) or trace with callTracer", .budget / (1024 * 1024))]
    TooLarge {
        /// The budget, in bytes of the answer.
        budget: usize,
    },
}

/// The time each traced transaction may take: the options' `timeout` (Go notation),
/// [`DEFAULT_EVM_TIMEOUT`] without one.
///
/// # Errors
/// [`TraceError::InvalidConfig`] for a timeout Go would not read.
pub fn tracer_timeout(opts: &GethDebugTracingOptions) -> Result<std::time::Duration, TraceError> {
    match &opts.timeout {
        None => Ok(DEFAULT_EVM_TIMEOUT),
        Some(text) => parse_go_duration(text).map_err(TraceError::InvalidConfig),
    }
}

/// Traces the transactions of `block` (sent by `senders`, given at least up to the last
/// one selected) that `wanted` selects, on `parent` (the state after the block's
/// parent). One result per selected transaction, in block order: its trace, or
/// [`TraceError::Timeout`] for one that ran out of time (replayed again untraced, so the
/// transactions after it see the block's state, as in geth's block traces). The replay
/// stops after the last one selected. The struct logger's size budget is the block's,
/// shared by its traces.
///
/// # Errors
/// [`TraceError`] when the block cannot be replayed at all, or
/// [`TraceError::TooLarge`] when its traces together pass the budget.
pub fn trace_block<DB: DatabaseRef<Error = StoreDbError>>(
    parent: DB,
    block: &Block,
    senders: &[Address],
    config: &ChainConfig,
    wanted: &dyn Fn(usize) -> bool,
    opts: &GethDebugTracingOptions,
) -> Result<Vec<Result<GethTrace, TraceError>>, TraceError> {
    let timeout = tracer_timeout(opts)?;
    let evm_config = EvmConfig::new(config, &block.header);
    let mut state = State::builder().with_database(WrapDatabaseRef(parent)).build();
    run_pre_block(&mut state, &evm_config, config, &block.header)
        .map_err(|e| TraceError::System(e.to_string()))?;
    let last = (0..block.body.transactions.len()).rev().find(|i| wanted(*i));
    let mut out = Vec::new();
    let Some(last) = last else { return Ok(out) };
    let mut budget = DEFAULT_STRUCT_LOG_BUDGET;
    for (index, (tx, sender)) in block.body.transactions.iter().zip(senders).enumerate() {
        if index > last {
            break;
        }
        let env = tx_env(tx, *sender);
        if wanted(index) {
            let deadline = Deadline::after(timeout);
            let traced =
                trace_one(&mut state, &evm_config, env.clone(), opts, index, deadline, &mut budget);
            match traced {
                Err(TraceError::Timeout) => out.push(Err(TraceError::Timeout)),
                traced => {
                    out.push(Ok(traced?));
                    continue;
                }
            }
            if index == last {
                break;
            }
        }
        let mut evm = evm_config.evm(&mut state);
        let result = evm.transact(env).map_err(|e| replay(index, e))?;
        evm.commit(result.state);
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
    deadline: Deadline,
) -> Result<GethTrace, TraceError> {
    let mut budget = DEFAULT_STRUCT_LOG_BUDGET;
    trace_one(state, evm_config, env, opts, 0, deadline, &mut budget)
}

/// The deadline's verdict on a finished run: a run it halted is no trace.
fn in_time<T>(deadline: &DeadlineInspector, value: T) -> Result<T, TraceError> {
    if deadline.hit() {
        return Err(TraceError::Timeout);
    }
    Ok(value)
}

fn replay<E: std::fmt::Display>(index: usize, e: EVMError<E>) -> TraceError {
    TraceError::Replay { index, reason: e.to_string() }
}

/// Runs one transaction with the tracer `opts` names and commits its changes; a struct
/// log trace takes its size out of `budget` (bytes of answer left).
fn trace_one<DB: DatabaseRef<Error = StoreDbError>>(
    state: &mut State<WrapDatabaseRef<DB>>,
    evm_config: &EvmConfig,
    env: revm::context::TxEnv,
    opts: &GethDebugTracingOptions,
    index: usize,
    deadline: Deadline,
    budget: &mut usize,
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
                .build_mainnet_with_inspector((FourByteInspector::default(), deadline.inspector()));
            let result = evm.inspect_tx(env).map_err(evm_error)?;
            let result = in_time(&evm.inspector.1, result)?;
            let frame = FourByteFrame::from(&evm.inspector.0);
            evm.commit(result.state);
            Ok(frame.into())
        }
        Some(GethDebugBuiltInTracerType::NoopTracer) => {
            let mut evm =
                evm_config.context(&mut *state).build_mainnet_with_inspector(deadline.inspector());
            let result = evm.inspect_tx(env).map_err(evm_error)?;
            let result = in_time(&evm.inspector, result)?;
            evm.commit(result.state);
            Ok(NoopFrame::default().into())
        }
        Some(GethDebugBuiltInTracerType::CallTracer) => {
            let call = config.clone().into_call_config().map_err(bad_config)?;
            let inspector =
                TracingInspector::new(TracingInspectorConfig::from_geth_call_config(&call));
            let mut evm = evm_config
                .context(&mut *state)
                .build_mainnet_with_inspector((inspector, deadline.inspector()));
            let result = evm.inspect_tx(env).map_err(evm_error)?;
            let result = in_time(&evm.inspector.1, result)?;
            let gas = gas_of(&result.result);
            let frame = evm.inspector.0.geth_builder().geth_call_traces_with_result_gas(call, gas);
            evm.commit(result.state);
            Ok(frame.into())
        }
        Some(GethDebugBuiltInTracerType::PreStateTracer) => {
            let prestate = config.clone().into_pre_state_config().map_err(bad_config)?;
            let inspector =
                TracingInspector::new(TracingInspectorConfig::from_geth_prestate_config(&prestate));
            let mut evm = evm_config
                .context(&mut *state)
                .build_mainnet_with_inspector((inspector, deadline.inspector()));
            let result = evm.inspect_tx(env).map_err(evm_error)?;
            let result = in_time(&evm.inspector.1, result)?;
            let frame = {
                let (ctx, inspector) = (&evm.ctx, &evm.inspector.0);
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
            let recorded = Recorded {
                stack: defaults.is_stack_enabled(),
                memory: defaults.is_memory_enabled(),
                return_data: defaults.is_return_data_enabled(),
                storage: defaults.is_storage_enabled(),
            };
            let sizer = StructLogBudget::new(*budget, recorded);
            let mut evm = evm_config.context(&mut *state).build_mainnet_with_inspector((
                inspector,
                (StateGasSteps::default(), (deadline.inspector(), sizer)),
            ));
            let result = evm.inspect_tx(env).map_err(evm_error)?;
            let (logger, (state_gas, (deadline, sizer))) = &evm.inspector;
            let result = in_time(deadline, result)?;
            if sizer.hit() {
                return Err(TraceError::TooLarge { budget: DEFAULT_STRUCT_LOG_BUDGET });
            }
            *budget = sizer.left();
            let gas = gas_of(&result.result);
            let output = match &result.result {
                ExecutionResult::Success { output, .. } => output.data().clone(),
                ExecutionResult::Revert { output, .. } => output.clone(),
                ExecutionResult::Halt { .. } => Bytes::new(),
            };
            let mut frame =
                logger.geth_builder().geth_traces_with_result_gas(gas, output, defaults);
            state_gas.leave_out_of(&mut frame.struct_logs);
            evm.commit(result.state);
            Ok(frame.into())
        }
    }
}

/// The EIP-8037 state gas each step charged, in execution order (the struct logger's
/// order). geth's struct logger reports a step's `gasCost` without it (an SSTORE that
/// creates a slot costs its 20,000-less-refund regular gas there, the state gas shows
/// only in the next step's `gas`); revm-inspectors' cost is the whole drop in gas left.
#[derive(Debug, Default)]
struct StateGasSteps {
    before: i64,
    charged: Vec<u64>,
}

impl StateGasSteps {
    /// Takes each step's state gas out of its `gasCost`. Left alone if the logs are not
    /// one per step (a `limit` on them, say), rather than matched to the wrong steps.
    fn leave_out_of(&self, logs: &mut [alloy_rpc_types_trace::geth::StructLog]) {
        if logs.len() != self.charged.len() {
            return;
        }
        for (log, charged) in logs.iter_mut().zip(&self.charged) {
            log.gas_cost = log.gas_cost.saturating_sub(*charged);
        }
    }
}

impl<CTX, INTR: revm::interpreter::InterpreterTypes> revm::Inspector<CTX, INTR> for StateGasSteps {
    fn step(&mut self, interp: &mut revm::interpreter::Interpreter<INTR>, _context: &mut CTX) {
        self.before = interp.gas.state_gas_spent();
    }

    fn step_end(&mut self, interp: &mut revm::interpreter::Interpreter<INTR>, _context: &mut CTX) {
        let charged = interp.gas.state_gas_spent() - self.before;
        self.charged.push(u64::try_from(charged).unwrap_or(0));
    }
}

fn gas_of(result: &ExecutionResult) -> revm::context::result::ResultGas {
    match result {
        ExecutionResult::Success { gas, .. }
        | ExecutionResult::Revert { gas, .. }
        | ExecutionResult::Halt { gas, .. } => *gas,
    }
}
