//! Running a transaction nobody signed against the state after a block, as `eth_call`,
//! `eth_estimateGas` and `eth_createAccessList` do, with geth's rules where callers
//! depend on them:
//!
//! - the block's own environment (number, time, coinbase, base fee), with the base fee
//!   (and the blob base fee) read as zero when the call offers no price, so a priceless
//!   call from an empty account runs;
//! - nonce, EIP-3607 (a sender with code) and the block gas limit are not checked; the
//!   balance is (for the value, and for gas when a price is offered);
//! - gas defaults to the node's gas cap and is clamped to it;
//! - state overrides (`simulate::apply_state_overrides`, precompile moves included) are
//!   committed into a cache over the block's state before anything runs, so the
//!   estimate's balance checks see them too; block overrides change the block's values;
//! - the estimate is geth's search: the whole allowance first, then the gas it used plus
//!   the stipend margin, then a bisection skewed low that stops within 1.5%: the same
//!   answers as geth's, not the exact minimum;
//! - the access list is built by revm-inspectors' `AccessListInspector`, re-run until it
//!   no longer changes (the list changes what the call costs).

use crate::db::{StateSource, StoreDb, StoreDbError};
use crate::deadline::Deadline;
use crate::env::{block_env, cfg_env, spec_id};
use crate::simulate::{apply_state_overrides, BlockOverrides, OverrideError, PrecompileSet};
use alloy_eips::eip2930::AccessList;
use alloy_eips::eip7702::SignedAuthorization;
use alloy_primitives::{Address, Bytes, TxKind, B256, U256};
use alloy_rpc_types_eth::state::StateOverride;
use ethrex_common::{ChainConfig, Fork, Header};
use revm::context::result::{EVMError, ExecutionResult, InvalidTransaction};
use revm::context::{BlockEnv, CfgEnv, TxEnv};
use revm::context_interface::either::Either;
use revm::database::{CacheDB, WrapDatabaseRef};
use revm::database_interface::DatabaseRef;
use revm::{Context, InspectEvm, MainBuilder, MainContext};
use revm_inspectors::access_list::AccessListInspector;

/// The gas a call may use unless the node is configured otherwise (geth's `--rpc.gascap`).
pub const DEFAULT_GAS_CAP: u64 = 50_000_000;
/// How far above the true minimum the estimate may stop (geth's 1.5%).
const ESTIMATE_ERROR_RATIO: f64 = 0.015;
/// A plain transfer's gas.
const TX_GAS: u64 = 21_000;
/// The gas a value-bearing CALL hands its callee for free.
const CALL_STIPEND: u64 = 2_300;
/// EIP-7825's cap on one transaction's gas (Osaka on).
const MAX_TX_GAS: u64 = 1 << 24;
/// How many times the access list is rebuilt before giving up.
const MAX_ACCESS_LIST_ROUNDS: usize = 16;

/// A transaction as a caller describes it: everything optional but the input.
#[derive(Debug, Clone, Default)]
pub struct CallInput {
    /// The sender (zero address when absent).
    pub from: Option<Address>,
    /// The callee; `None` deploys `input` as init code.
    pub to: Option<Address>,
    /// The gas limit.
    pub gas: Option<u64>,
    /// A legacy gas price.
    pub gas_price: Option<u128>,
    /// An EIP-1559 fee cap.
    pub max_fee_per_gas: Option<u128>,
    /// An EIP-1559 tip.
    pub max_priority_fee_per_gas: Option<u128>,
    /// An EIP-4844 blob fee cap.
    pub max_fee_per_blob_gas: Option<u128>,
    /// Wei sent along.
    pub value: Option<U256>,
    /// Call data or init code.
    pub input: Bytes,
    /// The nonce (not checked; used for the created address).
    pub nonce: Option<u64>,
    /// An EIP-2930 access list.
    pub access_list: Option<AccessList>,
    /// EIP-7702 authorizations.
    pub authorization_list: Option<Vec<SignedAuthorization>>,
    /// EIP-4844 versioned hashes.
    pub blob_versioned_hashes: Option<Vec<B256>>,
    /// The chain id the caller expects.
    pub chain_id: Option<u64>,
}

/// What a call did.
#[derive(Debug, Clone)]
pub enum CallOutcome {
    /// It returned `output`.
    Success {
        /// The return data.
        output: Bytes,
        /// Gas charged (after refunds and the calldata floor).
        gas_used: u64,
        /// Gas spent before refunds.
        gas_spent: u64,
    },
    /// It reverted with `output`.
    Revert {
        /// The revert data.
        output: Bytes,
        /// Gas charged.
        gas_used: u64,
    },
    /// It stopped exceptionally.
    Halt {
        /// Why, in geth's words where they differ from revm's.
        reason: String,
        /// Gas charged (all of it).
        gas_used: u64,
    },
}

/// Why a call could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The request contradicts itself or the chain.
    #[error("{0}")]
    InvalidInput(String),
    /// The transaction is not valid against the state (geth's words).
    #[error("{0}")]
    Rejected(String),
    /// No gas limit up to the allowance lets it succeed.
    #[error("gas required exceeds allowance ({0})")]
    GasExceedsAllowance(u64),
    /// The value is more than the sender has.
    #[error("insufficient funds for transfer")]
    InsufficientFundsForTransfer,
    /// The access list did not settle.
    #[error("access list did not settle after {0} rounds")]
    AccessListUnsettled(usize),
    /// The state could not be read.
    #[error("reading state: {0}")]
    State(String),
    /// The call ran but could not be traced (an unsupported tracer, a bad config).
    #[error("{0}")]
    Trace(String),
    /// The request's EVM work passed its time limit (geth's words).
    #[error("execution aborted (timeout = {})", crate::deadline::go_duration(*.0))]
    Timeout(std::time::Duration),
}

/// Why an estimate failed: the call itself failed (its outcome), or it could not run.
#[derive(Debug)]
pub enum EstimateError {
    /// The call reverts or halts even with all the gas it may have.
    Failed(CallOutcome),
    /// It could not run.
    Call(CallError),
}

impl From<CallError> for EstimateError {
    fn from(e: CallError) -> Self {
        Self::Call(e)
    }
}

/// Calls against the state after one block, with the request's overrides applied.
pub struct Caller<'a> {
    config: &'a ChainConfig,
    header: &'a Header,
    /// The state after the block, with the state overrides committed on top.
    db: CacheDB<StoreDb>,
    /// The fork's precompiles, as the state overrides moved them.
    precompiles: PrecompileSet,
    /// The block values the calls see instead of the header's.
    block_overrides: BlockOverrides,
    fork: Fork,
    gas_cap: u64,
    /// When the request's EVM work must stop (every run of an estimate shares it).
    deadline: Deadline,
}

impl<'a> Caller<'a> {
    /// Calls on the state `source` (which must be the state after `header`'s block) read
    /// through `db`, under `config`'s rules for that block; gas clamped to `gas_cap`.
    pub fn new(
        config: &'a ChainConfig,
        header: &'a Header,
        store: ethrex_storage::Store,
        source: std::sync::Arc<dyn StateSource>,
        gas_cap: u64,
    ) -> Self {
        let hash = header.hash_slow();
        let db = StoreDb::new(store, hash, header.number).with_source(Some(source));
        let fork = config.fork_of(header);
        Self {
            config,
            header,
            db: CacheDB::new(db),
            precompiles: PrecompileSet::new(spec_id(fork)),
            block_overrides: BlockOverrides::default(),
            fork,
            gas_cap,
            deadline: Deadline::default(),
        }
    }

    /// The same caller with its EVM work bounded by `deadline` instead of geth's default
    /// (5 s from creation).
    pub fn with_deadline(mut self, deadline: Deadline) -> Self {
        self.deadline = deadline;
        self
    }

    /// [`CallError::Timeout`] once the deadline has passed.
    fn timed_out<T>(&self, hit: bool, result: T) -> Result<T, CallError> {
        if hit || self.deadline.passed() {
            return Err(CallError::Timeout(self.deadline.limit()));
        }
        Ok(result)
    }

    /// The same caller with `state` applied to the state the calls run on and `block`'s
    /// values in their block (geth's overrides for `eth_call` and `eth_estimateGas`; a
    /// beacon root or withdrawals are `eth_simulateV1`'s only).
    ///
    /// # Errors
    /// [`CallError::InvalidInput`] for overrides that contradict themselves or do not
    /// apply to a call.
    pub fn with_overrides(
        mut self,
        state: Option<&StateOverride>,
        block: Option<BlockOverrides>,
    ) -> Result<Self, CallError> {
        if let Some(block) = block {
            for (name, set) in [
                ("beaconRoot", block.beacon_root.is_some()),
                ("withdrawals", block.withdrawals.is_some()),
            ] {
                if set {
                    return Err(CallError::InvalidInput(format!(
                        "block override \"{name}\" is not supported for this RPC method"
                    )));
                }
            }
            self.block_overrides = block;
        }
        if let Some(state) = state {
            apply_state_overrides(&mut self.db, state, &mut self.precompiles).map_err(
                |e| match e {
                    OverrideError::State(e) => CallError::State(e),
                    other => CallError::InvalidInput(other.to_string()),
                },
            )?;
        }
        Ok(self)
    }

    /// The price the call offers per gas (0: none).
    fn price(input: &CallInput) -> u128 {
        input.max_fee_per_gas.or(input.gas_price).unwrap_or_default()
    }

    /// The environments for `input` run with `gas_limit` (geth's call defaults).
    fn envs(
        &self,
        input: &CallInput,
        gas_limit: u64,
    ) -> Result<(BlockEnv, CfgEnv, TxEnv), CallError> {
        let chain_id = self.config.chain_id();
        check_call_fields(input, chain_id, false).map_err(CallError::InvalidInput)?;
        let mut block = block_env(self.config, self.header, self.fork);
        self.override_block(&mut block);
        let mut cfg = cfg_env(self.config, self.header, self.fork);
        cfg.disable_nonce_check = true;
        cfg.disable_eip3607 = true;
        cfg.disable_block_gas_limit = true;
        cfg.tx_gas_limit_cap = Some(u64::MAX);
        cfg.disable_base_fee = true;
        let price = Self::price(input);
        if price == 0 {
            block.basefee = 0;
        }
        let blob_fee_cap = input.max_fee_per_blob_gas.unwrap_or_default();
        if blob_fee_cap == 0 {
            if let Some(blob) = block.blob_excess_gas_and_price.as_mut() {
                blob.blob_gasprice = 0;
            }
        }
        let eip1559 = self.header.base_fee_per_gas.is_some();
        let tx = call_tx_env(input, chain_id, gas_limit, eip1559);
        Ok((block, cfg, tx))
    }

    /// The block's values as the overrides change them.
    fn override_block(&self, block: &mut BlockEnv) {
        let o = &self.block_overrides;
        if let Some(number) = o.number {
            block.number = U256::from(number);
        }
        if let Some(difficulty) = o.difficulty {
            block.difficulty = difficulty;
        }
        if let Some(time) = o.time {
            block.timestamp = U256::from(time);
        }
        if let Some(gas_limit) = o.gas_limit {
            block.gas_limit = gas_limit;
        }
        if let Some(coinbase) = o.fee_recipient {
            block.beneficiary = coinbase;
        }
        if let Some(randao) = o.prev_randao {
            block.prevrandao = Some(randao);
        }
        if let Some(base_fee) = o.base_fee {
            block.basefee = base_fee;
        }
        if let (Some(fee), Some(blob)) = (o.blob_base_fee, block.blob_excess_gas_and_price.as_mut())
        {
            blob.blob_gasprice = fee;
        }
    }

    /// The nonce a call without one runs with: the sender's (the created address of a
    /// deployment depends on it).
    fn with_nonce(&self, input: &CallInput) -> Result<CallInput, CallError> {
        let mut input = input.clone();
        if input.nonce.is_none() {
            let from = input.from.unwrap_or_default();
            let account = self.db.basic_ref(from).map_err(|e| CallError::State(e.to_string()))?;
            input.nonce = Some(account.map_or(0, |a| a.nonce));
        }
        Ok(input)
    }

    /// Runs `input` with `gas_limit` (nothing is written).
    fn run(&self, input: &CallInput, gas_limit: u64) -> Result<CallOutcome, CallError> {
        let (block, cfg, tx) = self.envs(input, gas_limit)?;
        let mut evm = Context::mainnet()
            .with_block(block)
            .with_cfg(cfg)
            .with_db(CacheDB::new(WrapDatabaseRef(&self.db)))
            .build_mainnet_with_inspector(self.deadline.inspector())
            .with_precompiles(self.precompiles.clone());
        let result = evm.inspect_tx(tx).map_err(rejected)?;
        self.timed_out(evm.inspector.hit(), outcome(result.result))
    }

    /// `eth_call`: the call's outcome with its gas (default: the cap).
    ///
    /// # Errors
    /// [`CallError`] when it cannot run.
    pub fn call(&self, input: &CallInput) -> Result<CallOutcome, CallError> {
        let input = self.with_nonce(input)?;
        let gas = input.gas.map_or(self.gas_cap, |g| g.min(self.gas_cap));
        self.run(&input, gas)
    }

    /// Runs for the estimate: `Ok(None)` when the call fails at this limit, including a
    /// limit below its intrinsic gas (geth raises the limit then).
    fn attempt(&self, input: &CallInput, gas: u64) -> Result<Option<CallOutcome>, CallError> {
        match self.run(input, gas) {
            Ok(o @ CallOutcome::Success { .. }) => Ok(Some(o)),
            Ok(_) => Ok(None),
            Err(CallError::Rejected(reason)) if reason.starts_with(INTRINSIC_GAS) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `debug_traceCall`: the call traced with the tracer `opts` names, its gas as
    /// `eth_call`'s (default: the cap). Moved precompiles are not honoured here (the
    /// tracers' EVM has the fork's own).
    ///
    /// # Errors
    /// [`CallError`] when it cannot run, [`CallError::Trace`] when it cannot be traced.
    pub fn trace(
        &self,
        input: &CallInput,
        opts: &alloy_rpc_types_trace::geth::GethDebugTracingOptions,
    ) -> Result<(alloy_rpc_types_trace::geth::GethTrace, u64), CallError> {
        let input = self.with_nonce(input)?;
        let gas = input.gas.map_or(self.gas_cap, |g| g.min(self.gas_cap));
        let (block, cfg, tx) = self.envs(&input, gas)?;
        let evm_config = crate::evm::EvmConfig::from_parts(block, cfg, self.fork);
        let mut state =
            revm::database::State::builder().with_database(WrapDatabaseRef(&self.db)).build();
        let trace_error = |e: crate::trace::TraceError| CallError::Trace(e.to_string());
        // The tracer's own limit (its `timeout` option), as geth bounds traced calls.
        let deadline = Deadline::after(crate::trace::tracer_timeout(opts).map_err(trace_error)?);
        let trace = crate::trace::trace_env(&mut state, &evm_config, tx, opts, deadline)
            .map_err(trace_error)?;
        Ok((trace, gas))
    }

    /// `eth_estimateGas`: the gas limit to send the call with (geth's search).
    ///
    /// # Errors
    /// [`EstimateError::Failed`] with the outcome at the highest limit when it never
    /// succeeds, [`EstimateError::Call`] when it cannot run.
    pub fn estimate_gas(&self, input: &CallInput) -> Result<u64, EstimateError> {
        let input = self.with_nonce(input)?;
        let mut hi = match input.gas {
            Some(g) if g >= TX_GAS => g,
            _ => self.header.gas_limit,
        };
        if hi > MAX_TX_GAS && self.fork >= Fork::Osaka {
            hi = MAX_TX_GAS;
        }
        let fee_cap = Self::price(&input);
        if fee_cap != 0 {
            let from = input.from.unwrap_or_default();
            let balance = self
                .db
                .basic_ref(from)
                .map_err(|e| CallError::State(e.to_string()))?
                .map_or(U256::ZERO, |a| a.balance);
            let value = input.value.unwrap_or_default();
            if value >= balance && !value.is_zero() {
                return Err(CallError::InsufficientFundsForTransfer.into());
            }
            let mut available = balance.saturating_sub(value);
            let blobs = input.blob_versioned_hashes.as_ref().map_or(0, Vec::len) as u64;
            if blobs > 0 && self.fork >= Fork::Cancun {
                let usage = U256::from(blobs * alloy_eips::eip4844::DATA_GAS_PER_BLOB)
                    * U256::from(input.max_fee_per_blob_gas.unwrap_or_default());
                if usage >= available {
                    return Err(CallError::Rejected(
                        "insufficient funds for gas * price + value".into(),
                    )
                    .into());
                }
                available -= usage;
            }
            let allowance = available / U256::from(fee_cap);
            if let Ok(allowance) = u64::try_from(allowance) {
                hi = hi.min(allowance);
            }
        }
        hi = hi.min(self.gas_cap);
        // A plain transfer to an account without code: try the transfer's gas first.
        if input.input.is_empty() {
            if let Some(to) = input.to {
                let code_empty = self
                    .db
                    .basic_ref(to)
                    .map_err(|e| CallError::State(e.to_string()))?
                    .is_none_or(|a| a.code_hash == ethrex_common::KECCAK_EMPTY);
                if code_empty && self.attempt(&input, TX_GAS)?.is_some() {
                    return Ok(TX_GAS);
                }
            }
        }
        let first = match self.run(&input, hi)? {
            CallOutcome::Success { gas_used, gas_spent, .. } => (gas_used, gas_spent),
            CallOutcome::Halt { ref reason, .. } if reason == OUT_OF_GAS => {
                return Err(CallError::GasExceedsAllowance(hi).into())
            }
            failed => return Err(EstimateError::Failed(failed)),
        };
        let mut lo = first.0.saturating_sub(1);
        let optimistic = (first.1 + CALL_STIPEND) * 64 / 63;
        if optimistic < hi {
            if self.attempt(&input, optimistic)?.is_some() {
                hi = optimistic;
            } else {
                lo = optimistic;
            }
        }
        while lo + 1 < hi {
            if (hi - lo) as f64 / (hi as f64) < ESTIMATE_ERROR_RATIO {
                break;
            }
            let mid = ((hi + lo) / 2).min(lo.saturating_mul(2));
            if self.attempt(&input, mid)?.is_some() {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Ok(hi)
    }

    /// `eth_createAccessList`: the accounts and slots the call touches (beyond sender,
    /// callee and precompiles), the gas it uses with that list, and its failure if any.
    ///
    /// # Errors
    /// [`CallError`] when it cannot run.
    pub fn create_access_list(
        &self,
        input: &CallInput,
    ) -> Result<(AccessList, u64, Option<CallOutcome>), CallError> {
        let mut input = self.with_nonce(input)?;
        if input.gas.is_none() {
            let estimate = match self.estimate_gas(&input) {
                Ok(gas) => gas,
                Err(EstimateError::Call(e)) => return Err(e),
                Err(EstimateError::Failed(_)) => self.gas_cap,
            };
            input.gas = Some(estimate);
        }
        let gas = input.gas.unwrap_or(self.gas_cap).min(self.gas_cap);
        let mut list = input.access_list.clone().unwrap_or_default();
        for _ in 0..MAX_ACCESS_LIST_ROUNDS {
            input.access_list = Some(list.clone());
            let (block, cfg, tx) = self.envs(&input, gas)?;
            let mut evm = Context::mainnet()
                .with_block(block)
                .with_cfg(cfg)
                .with_db(CacheDB::new(WrapDatabaseRef(&self.db)))
                .build_mainnet_with_inspector((
                    AccessListInspector::new(list.clone()),
                    self.deadline.inspector(),
                ))
                .with_precompiles(self.precompiles.clone());
            let result = evm.inspect_tx(tx).map_err(rejected)?;
            let (lister, deadline) = evm.inspector;
            let result = self.timed_out(deadline.hit(), result)?;
            let next = lister.into_access_list();
            if next == list {
                let result = outcome(result.result);
                let gas_used = match &result {
                    CallOutcome::Success { gas_used, .. }
                    | CallOutcome::Revert { gas_used, .. }
                    | CallOutcome::Halt { gas_used, .. } => *gas_used,
                };
                let failed = (!matches!(result, CallOutcome::Success { .. })).then_some(result);
                return Ok((list, gas_used, failed));
            }
            list = next;
        }
        Err(CallError::AccessListUnsettled(MAX_ACCESS_LIST_ROUNDS))
    }
}

/// geth's checks of a call's fields before it runs (its `CallDefaults`), in its order:
/// legacy and EIP-1559 prices together, then (with `creations`, as `eth_simulateV1` asks)
/// a blob or set-code transaction without a recipient, then a chain id not the node's.
pub(crate) fn check_call_fields(
    input: &CallInput,
    chain_id: u64,
    creations: bool,
) -> Result<(), String> {
    if input.gas_price.is_some()
        && (input.max_fee_per_gas.is_some() || input.max_priority_fee_per_gas.is_some())
    {
        return Err("both gasPrice and (maxFeePerGas or maxPriorityFeePerGas) specified".into());
    }
    if creations && input.to.is_none() {
        if input.blob_versioned_hashes.is_some() {
            return Err("blob transaction of type create".into());
        }
        if input.authorization_list.is_some() {
            return Err("set code transaction of type create".into());
        }
    }
    if let Some(asked) = input.chain_id.filter(|id| *id != chain_id) {
        return Err(format!("chainId does not match node's (have={asked}, want={chain_id})"));
    }
    Ok(())
}

/// The transaction `input` stands for as revm runs it, with `gas_limit` (geth's
/// `ToMessage`): a legacy price is both fee cap and tip; from London on, a call without
/// one offers its EIP-1559 fees (zero when absent).
pub(crate) fn call_tx_env(
    input: &CallInput,
    chain_id: u64,
    gas_limit: u64,
    eip1559: bool,
) -> TxEnv {
    let (gas_price, tip) = match (input.gas_price, eip1559) {
        (Some(p), _) => (p, None),
        (None, true) => (
            input.max_fee_per_gas.unwrap_or_default(),
            Some(input.max_priority_fee_per_gas.unwrap_or_default()),
        ),
        (None, false) => (0, None),
    };
    let authorization_list =
        input.authorization_list.iter().flatten().cloned().map(Either::Left).collect::<Vec<_>>();
    let blob_hashes = input.blob_versioned_hashes.clone().unwrap_or_default();
    let tx_type = if !authorization_list.is_empty() {
        4
    } else if !blob_hashes.is_empty() {
        3
    } else if tip.is_some() {
        2
    } else if input.access_list.is_some() {
        1
    } else {
        0
    };
    TxEnv {
        tx_type,
        caller: input.from.unwrap_or_default(),
        gas_limit,
        gas_price,
        kind: input.to.map_or(TxKind::Create, TxKind::Call),
        value: input.value.unwrap_or_default(),
        data: input.input.clone(),
        nonce: input.nonce.unwrap_or_default(),
        chain_id: Some(chain_id),
        access_list: input.access_list.clone().unwrap_or_default(),
        gas_priority_fee: tip,
        blob_hashes,
        max_fee_per_blob_gas: input.max_fee_per_blob_gas.unwrap_or_default(),
        authorization_list,
    }
}

/// A transaction revm refuses, as geth words the refusal, with geth's JSON-RPC code for
/// it (its `txValidationError`): `from` sent it with `nonce`, holding `balance`.
pub(crate) fn rejection_message(
    t: &InvalidTransaction,
    from: Address,
    nonce: u64,
    balance: &U256,
) -> (i32, String) {
    use InvalidTransaction as I;
    let from = from.to_checksum(None);
    match t {
        I::NonceTooHigh { tx, state } => {
            (-38011, format!("nonce too high: address {from}, tx: {tx} state: {state}"))
        }
        I::NonceTooLow { tx, state } => {
            (-38010, format!("nonce too low: address {from}, tx: {tx} state: {state}"))
        }
        I::GasPriceLessThanBasefee => (
            -38012,
            format!("max fee per gas less than block base fee: address {from}, nonce {nonce}"),
        ),
        I::PriorityFeeGreaterThanMaxFee => (
            -32602,
            format!("max priority fee per gas higher than max fee per gas: address {from}"),
        ),
        I::LackOfFundForMaxFee { fee, balance } => (
            -38014,
            format!("insufficient funds for gas * price + value: address {from} have {balance} want {fee}"),
        ),
        I::CallGasCostMoreThanGasLimit { initial_gas, gas_limit } => {
            (-38013, format!("{INTRINSIC_GAS}: have {gas_limit}, want {initial_gas}"))
        }
        I::GasFloorMoreThanGasLimit { gas_floor, gas_limit } => {
            (-38013, format!("{INTRINSIC_GAS}: have {gas_limit}, want {gas_floor}"))
        }
        I::RejectCallerWithCode => {
            (-38024, format!("sender not an eoa: address {from}, codehash: (balance {balance})"))
        }
        I::CreateInitCodeSizeLimit => (-38025, "max initcode size exceeded".into()),
        other => (-32603, other.to_string()),
    }
}

/// The prefix of the refusal for a gas limit below the intrinsic gas.
const INTRINSIC_GAS: &str = "intrinsic gas too low";
/// geth's word for running out of gas.
const OUT_OF_GAS: &str = "out of gas";

fn outcome(result: ExecutionResult) -> CallOutcome {
    match result {
        ExecutionResult::Success { gas, output, .. } => CallOutcome::Success {
            output: output.into_data(),
            gas_used: gas.tx_gas_used(),
            gas_spent: gas.total_gas_spent(),
        },
        ExecutionResult::Revert { gas, output, .. } => {
            CallOutcome::Revert { output, gas_used: gas.tx_gas_used() }
        }
        ExecutionResult::Halt { reason, gas, .. } => {
            CallOutcome::Halt { reason: halt_reason(&reason), gas_used: gas.tx_gas_used() }
        }
    }
}

/// geth's words for the common halts.
pub(crate) fn halt_reason(reason: &revm::context::result::HaltReason) -> String {
    use revm::context::result::{HaltReason as H, OutOfGasError};
    match reason {
        H::OutOfGas(OutOfGasError::Basic | OutOfGasError::Memory | OutOfGasError::MemoryLimit) => {
            OUT_OF_GAS.into()
        }
        H::OutOfGas(_) => OUT_OF_GAS.into(),
        H::OpcodeNotFound | H::InvalidFEOpcode => "invalid opcode".into(),
        H::StackUnderflow => "stack underflow".into(),
        H::StackOverflow => "stack limit reached 1024 (1023)".into(),
        H::InvalidJump => "invalid jump destination".into(),
        H::CallTooDeep => "max call depth exceeded".into(),
        H::OutOfFunds => "insufficient balance for transfer".into(),
        H::CreateContractSizeLimit => "max code size exceeded".into(),
        H::CreateContractStartingWithEF => "invalid code: must not begin with 0xef".into(),
        H::CreateCollision => "contract address collision".into(),
        H::StateChangeDuringStaticCall => "write protection".into(),
        H::NonceOverflow => "nonce uint64 overflow".into(),
        other => format!("{other:?}"),
    }
}

/// A validation error in geth's words.
fn rejected(e: EVMError<StoreDbError>) -> CallError {
    match e {
        EVMError::Transaction(t) => CallError::Rejected(match t {
            InvalidTransaction::CallGasCostMoreThanGasLimit { initial_gas, gas_limit } => {
                format!("{INTRINSIC_GAS}: gas {gas_limit}, minimum needed {initial_gas}")
            }
            InvalidTransaction::GasFloorMoreThanGasLimit { gas_floor, gas_limit } => {
                format!("{INTRINSIC_GAS}: gas {gas_limit}, minimum needed {gas_floor}")
            }
            InvalidTransaction::LackOfFundForMaxFee { fee, balance } => {
                format!("insufficient funds for gas * price + value: have {balance} want {fee}")
            }
            other => other.to_string(),
        }),
        EVMError::Database(e) => CallError::State(e.to_string()),
        other => CallError::Rejected(other.to_string()),
    }
}

/// The reason in a revert's data, as geth appends it to "execution reverted": an
/// `Error(string)`'s text or a `Panic(uint256)`'s meaning.
pub fn revert_reason(output: &[u8]) -> Option<String> {
    const ERROR: [u8; 4] = [0x08, 0xc3, 0x79, 0xa0];
    const PANIC: [u8; 4] = [0x4e, 0x48, 0x7b, 0x71];
    let (selector, body) = (output.get(..4)?, &output[4..]);
    if selector == PANIC {
        let code = U256::from_be_slice(body.get(..32)?);
        let text = match code.to::<u64>() {
            0x00 => "generic panic",
            0x01 => "assert(false)",
            0x11 => "arithmetic underflow or overflow",
            0x12 => "division or modulo by zero",
            0x21 => "enum overflow",
            0x22 => "invalid encoded storage byte array accessed",
            0x31 => "out-of-bounds array access; popping on an empty array",
            0x32 => "out-of-bounds access of an array or bytesArray",
            0x41 => "out of memory",
            0x51 => "uninitialized function",
            _ => return Some(format!("unknown panic code: {code:#x}")),
        };
        return Some(text.into());
    }
    if selector != ERROR {
        return None;
    }
    let offset = usize::try_from(U256::from_be_slice(body.get(..32)?)).ok()?;
    let len_word = body.get(offset..offset.checked_add(32)?)?;
    let len = usize::try_from(U256::from_be_slice(len_word)).ok()?;
    let start = offset + 32;
    let text = body.get(start..start.checked_add(len)?)?;
    String::from_utf8(text.to_vec()).ok()
}

/// The state after an older block as the call's database reads it.
impl StateSource for ethrex_storage::history::HistoricalState {
    fn account(&self, address: &Address) -> Result<Option<(u64, U256, B256)>, StoreDbError> {
        let account = ethrex_storage::history::HistoricalState::account(self, address)
            .map_err(|e| StoreDbError::Source(e.to_string()))?;
        Ok(account.map(|a| (a.nonce, a.balance, a.code_hash)))
    }

    fn storage(&self, address: &Address, slot: &U256) -> Result<U256, StoreDbError> {
        ethrex_storage::history::HistoricalState::storage(self, address, slot)
            .map_err(|e| StoreDbError::Source(e.to_string()))
    }
}
