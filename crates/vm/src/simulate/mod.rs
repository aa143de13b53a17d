//! `eth_simulateV1`: a chain of blocks nobody proposed, built on the state after a stored
//! block from calls nobody signed, with state and block overrides, as geth simulates
//! them (the execution-apis specification leaves much to geth; the suite checks geth's
//! answers byte for byte, block hashes included).
//!
//! - `chain` fixes each block's number and timestamp (filling gaps with empty blocks)
//!   and its preliminary header;
//! - `overrides` applies state overrides and precompile moves;
//! - `transfers` collects each call's logs (and its ether transfers as logs);
//! - this file runs the blocks: the pre-block system calls, the calls in order (nonce,
//!   base fee and balance checked only in validation mode), withdrawals and requests,
//!   then the header: roots, bloom, gas, requests hash, and the state root of the base
//!   state with everything simulated so far (computed by the caller's `roots`).
//!
//! Nothing is written: the blocks live in revm's state over the stored one.

mod chain;
mod overrides;
mod transfers;

pub use overrides::{apply_state_overrides, OverrideError, PrecompileSet};
pub use transfers::{IndexedLog, TRANSFER_LOG_ADDRESS, TRANSFER_TOPIC};

use crate::call::{call_tx_env, check_call_fields, rejection_message, CallInput};
use crate::db::{StateSource, StoreDb};
use crate::deadline::Deadline;
use crate::env::{block_env, cfg_env, spec_id};
use crate::error::{DatabaseError, ExecutionError};
use crate::evm::EvmConfig;
use crate::output::{build_receipt, changes_of_bundle};
use crate::sequential::IntermediateRoot;
use crate::system::{run_post_block, run_pre_block};
use alloy_consensus::proofs::{calculate_transaction_root, calculate_withdrawals_root};
use alloy_consensus::{
    Eip658Value, Signed, Transaction as _, TxEip1559, TxEip2930, TxEip4844, TxEip4844Variant,
    TxEip7702, TxLegacy, Typed2718,
};
use alloy_eips::eip4844::DATA_GAS_PER_BLOB;
use alloy_primitives::{Address, Bytes, Signature, TxKind, B256, U256};
use alloy_rpc_types_eth::state::StateOverride;
use ethrex_common::{Block, BlockBody, ChainConfig, Fork, Header, Transaction, Withdrawal};
use revm::context::result::{EVMError, ExecutionResult};
use revm::database::states::bundle_state::BundleRetention;
use revm::database::{State, WrapDatabaseRef};
use revm::{Context, Database, ExecuteCommitEvm, InspectEvm, MainBuilder, MainContext};

/// At most this many blocks per request (geth's limit).
pub const MAX_BLOCKS: u64 = 256;
/// At most this many calls in one block.
pub const MAX_CALLS_PER_BLOCK: usize = 5_000;
/// At most this many calls in one request.
pub const MAX_CALLS: usize = 10_000;

/// The header fields a block of the request sets itself.
#[derive(Debug, Clone, Default)]
pub struct BlockOverrides {
    /// The block number (default: the previous block's plus one).
    pub number: Option<u64>,
    /// The difficulty (only before the merge).
    pub difficulty: Option<U256>,
    /// The timestamp (default: the previous block's plus 12).
    pub time: Option<u64>,
    /// The gas limit (default: the base block's).
    pub gas_limit: Option<u64>,
    /// The fee recipient (default: the base block's).
    pub fee_recipient: Option<Address>,
    /// PREVRANDAO (default: zero).
    pub prev_randao: Option<B256>,
    /// The base fee (default: zero, or the parent's next in validation mode).
    pub base_fee: Option<u64>,
    /// The blob base fee the calls see (the header carries none).
    pub blob_base_fee: Option<u128>,
    /// The parent beacon block root (default: zero).
    pub beacon_root: Option<B256>,
    /// The block's withdrawals (default: none).
    pub withdrawals: Option<Vec<Withdrawal>>,
}

/// One block of the request.
#[derive(Debug, Clone, Default)]
pub struct SimBlockInput {
    /// Its header overrides.
    pub overrides: BlockOverrides,
    /// Accounts changed before its calls run.
    pub state: Option<StateOverride>,
    /// Its calls, in order.
    pub calls: Vec<CallInput>,
}

/// How the request runs.
#[derive(Debug, Clone, Copy)]
pub struct SimOptions {
    /// Check nonces, base fees and balances as for a real block.
    pub validation: bool,
    /// Report ether transfers as logs.
    pub trace_transfers: bool,
    /// The gas all calls of the request may use together (0: no limit).
    pub gas_cap: u64,
}

/// A call that ran but did not succeed, as the result reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallFailure {
    /// 3 for a revert, -32015 for any other failure.
    pub code: i32,
    /// geth's words.
    pub message: String,
    /// The revert data.
    pub data: Option<Bytes>,
}

/// What one call did.
#[derive(Debug, Clone)]
pub struct SimulatedCall {
    /// Its return (or revert) data.
    pub return_data: Bytes,
    /// Its logs with their block-wide indices, transfers included when asked for (none
    /// if it failed).
    pub logs: Vec<IndexedLog>,
    /// Gas charged.
    pub gas_used: u64,
    /// Gas consumed at most before refunds (with the calldata floor).
    pub max_used_gas: u64,
    /// Why it failed, `None` if it succeeded.
    pub failure: Option<CallFailure>,
}

/// One simulated block.
#[derive(Debug, Clone)]
pub struct SimulatedBlock {
    /// The block, its transactions unsigned (zero signatures).
    pub block: Block,
    /// Its hash.
    pub hash: B256,
    /// Each transaction's sender.
    pub senders: Vec<Address>,
    /// Each call's outcome.
    pub calls: Vec<SimulatedCall>,
}

/// Why a simulation could not be answered; [`SimulateError::code`] is the JSON-RPC code
/// geth answers with.
#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    /// The request is malformed.
    #[error("{0}")]
    InvalidParams(String),
    /// More blocks or calls than the node runs in one request.
    #[error("{0}")]
    LimitExceeded(String),
    /// A block number not above the previous one.
    #[error("block numbers must be in order: {number} <= {previous}")]
    BlockNumberOrder {
        /// The block's number.
        number: u64,
        /// The previous block's.
        previous: u64,
    },
    /// A timestamp not above the previous block's.
    #[error("block timestamps must be in order: {time} <= {previous}")]
    TimestampOrder {
        /// The block's timestamp.
        time: u64,
        /// The previous block's.
        previous: u64,
    },
    /// A call asks for more gas than the block has left.
    #[error("block gas limit reached: remaining: {remaining}, required: {required}")]
    BlockGasLimitReached {
        /// Gas left in the block.
        remaining: u64,
        /// Gas the call asks for.
        required: u64,
    },
    /// A call is not a valid transaction where it stands (nonce, fees, funds...).
    #[error("{message}")]
    Transaction {
        /// geth's code for the kind of failure (-38010 .. -38025, -32602, -32603).
        code: i32,
        /// geth's words.
        message: String,
    },
    /// The state overrides contradict themselves.
    #[error(transparent)]
    Override(#[from] OverrideError),
    /// A call's fields contradict each other or the chain.
    #[error("{0}")]
    Call(String),
    /// The calls used more gas together than the node's gas cap.
    #[error("RPC gas cap exhausted: need {need}, remaining {remaining}")]
    GasCapExhausted {
        /// Gas the call used.
        need: u64,
        /// Gas left of the cap.
        remaining: u64,
    },
    /// A block stage (system call, requests) failed.
    #[error("{0}")]
    Execution(#[from] ExecutionError),
    /// The state could not be read.
    #[error("reading state: {0}")]
    State(String),
    /// The request's EVM work passed its time limit (geth's words).
    #[error("execution aborted (timeout = {})", crate::deadline::go_duration(*.0))]
    Timeout(std::time::Duration),
}

impl SimulateError {
    /// The JSON-RPC error code (geth's).
    pub fn code(&self) -> i32 {
        match self {
            Self::InvalidParams(_) => -32602,
            Self::LimitExceeded(_) => -38026,
            Self::BlockNumberOrder { .. } => -38020,
            Self::TimestampOrder { .. } => -38021,
            Self::BlockGasLimitReached { .. } => -38015,
            Self::Transaction { code, .. } => *code,
            Self::Override(OverrideError::State(_)) | Self::State(_) => -32603,
            Self::Override(_) | Self::Call(_) | Self::GasCapExhausted { .. } => -32000,
            Self::Execution(_) | Self::Timeout(_) => -32603,
        }
    }
}

/// The JSON-RPC code of a call that failed other than by reverting.
const VM_ERROR: i32 = -32015;
/// The code of a revert.
const REVERTED: i32 = 3;

/// Simulates blocks on the state after `base`.
pub struct Simulator<'a> {
    config: &'a ChainConfig,
    base: &'a Header,
    db: StoreDb,
    roots: IntermediateRoot<'a>,
    options: SimOptions,
    /// When the request's EVM work must stop (all its blocks share it).
    deadline: Deadline,
}

/// The database the blocks run on: the base state, with revm's cache of everything
/// simulated so far.
type SimState = State<WrapDatabaseRef<StoreDb>>;

impl<'a> Simulator<'a> {
    /// A simulator on the state `source` (exactly the state after `base`), with
    /// `roots` giving the state root of that state with changes applied.
    pub fn new(
        config: &'a ChainConfig,
        base: &'a Header,
        store: ethrex_storage::Store,
        source: std::sync::Arc<dyn StateSource>,
        roots: IntermediateRoot<'a>,
        options: SimOptions,
    ) -> Self {
        let db = StoreDb::new(store, base.hash_slow(), base.number).with_source(Some(source));
        Self { config, base, db, roots, options, deadline: Deadline::default() }
    }

    /// The same simulator with its EVM work bounded by `deadline` instead of geth's
    /// default (5 s from creation).
    pub fn with_deadline(mut self, deadline: Deadline) -> Self {
        self.deadline = deadline;
        self
    }

    /// Runs `blocks` in order.
    ///
    /// # Errors
    /// [`SimulateError`]: the first thing that keeps the request from being answered.
    pub fn run(&self, blocks: Vec<SimBlockInput>) -> Result<Vec<SimulatedBlock>, SimulateError> {
        if blocks.is_empty() {
            return Err(SimulateError::InvalidParams("empty input".into()));
        }
        if blocks.len() as u64 > MAX_BLOCKS {
            return Err(SimulateError::LimitExceeded("too many blocks".into()));
        }
        let mut total = 0;
        for block in &blocks {
            if block.calls.len() > MAX_CALLS_PER_BLOCK {
                return Err(SimulateError::LimitExceeded(format!(
                    "too many calls in block: {} > {MAX_CALLS_PER_BLOCK}",
                    block.calls.len()
                )));
            }
            total += block.calls.len();
            if total > MAX_CALLS {
                return Err(SimulateError::LimitExceeded(format!(
                    "too many calls: {total} > {MAX_CALLS}"
                )));
            }
        }
        let blocks = chain::sanitize(self.base, blocks)?;
        let headers = chain::preliminary_headers(self.config, self.base, &blocks)?;
        let mut state: SimState = State::builder()
            .with_database(WrapDatabaseRef(self.db.clone()))
            .with_bundle_update()
            .build();
        let mut budget = if self.options.gas_cap == 0 { u64::MAX } else { self.options.gas_cap };
        let mut parent = self.base.clone();
        let mut out = Vec::with_capacity(blocks.len());
        for (input, header) in blocks.iter().zip(headers) {
            let simulated = self.block(&mut state, input, header, &parent, &mut budget)?;
            state.block_hashes.insert(simulated.block.header.number, simulated.hash);
            parent = simulated.block.header.clone();
            out.push(simulated);
        }
        Ok(out)
    }

    /// Runs one block on `state` after `parent`.
    fn block(
        &self,
        state: &mut SimState,
        input: &SimBlockInput,
        mut header: Header,
        parent: &Header,
        budget: &mut u64,
    ) -> Result<SimulatedBlock, SimulateError> {
        let config = self.config;
        let validate = self.options.validation;
        header.parent_hash = parent.hash_slow();
        let fork = config.fork_of(&header);
        if fork >= Fork::London && header.base_fee_per_gas.is_none() {
            header.base_fee_per_gas = Some(if validate {
                parent
                    .next_block_base_fee(alloy_eips::eip1559::BaseFeeParams::ethereum())
                    .unwrap_or(alloy_eips::eip1559::INITIAL_BASE_FEE)
            } else {
                0
            });
        }
        if fork >= Fork::Cancun {
            let parent_cancun = parent.excess_blob_gas.is_some();
            header.excess_blob_gas = Some(if parent_cancun {
                config.next_excess_blob_gas(parent, header.timestamp).unwrap_or_default()
            } else {
                0
            });
        }
        let evm_config = EvmConfig::new(config, &header);
        let mut block_env = block_env(config, &header, fork);
        if let (Some(fee), Some(blob)) =
            (input.overrides.blob_base_fee, block_env.blob_excess_gas_and_price.as_mut())
        {
            blob.blob_gasprice = fee;
        }
        let mut cfg = cfg_env(config, &header, fork);
        cfg.disable_nonce_check = !validate;
        cfg.disable_base_fee = !validate;
        cfg.disable_eip3607 = true;
        cfg.disable_block_gas_limit = true;
        cfg.tx_gas_limit_cap = Some(u64::MAX);

        let mut precompiles = PrecompileSet::new(spec_id(fork));
        if let Some(overrides) = &input.state {
            apply_state_overrides(state, overrides, &mut precompiles)?;
        }
        run_pre_block(state, &evm_config, config, &header)?;

        let state_error = |e: &dyn std::fmt::Display| SimulateError::State(e.to_string());
        let chain_id = config.chain_id();
        let london = header.base_fee_per_gas.is_some();
        let mut logs =
            transfers::CallLogs::new(self.options.trace_transfers && fork < Fork::Amsterdam);
        let mut gas = crate::gas::GasCounter::default();
        let mut blob_gas_used = 0u64;
        let mut transactions = Vec::with_capacity(input.calls.len());
        let mut senders = Vec::with_capacity(input.calls.len());
        let mut receipts = Vec::with_capacity(input.calls.len());
        let mut calls = Vec::with_capacity(input.calls.len());
        for call in &input.calls {
            let from = call.from.unwrap_or_default();
            let mut call = call.clone();
            let sender = state.basic(from).map_err(|e| state_error(&e))?.unwrap_or_default();
            let nonce = *call.nonce.get_or_insert(sender.nonce);
            let remaining = header.gas_limit.saturating_sub(gas.block_gas(fork));
            let asked = *call.gas.get_or_insert(remaining);
            if remaining < asked {
                return Err(SimulateError::BlockGasLimitReached { remaining, required: asked });
            }
            let gas_limit = asked.min(*budget);
            let capped = gas_limit < asked;
            call.gas = Some(gas_limit);
            check_call_fields(&call, chain_id, true).map_err(SimulateError::Call)?;
            if validate {
                // geth checks the nonce first; revm checks fees before it.
                check_nonce(from, nonce, sender.nonce, gas_limit)?;
            } else if sender.nonce == u64::MAX {
                // EIP-2681 holds without validation too (geth 1.17.10; the suite's
                // `overflow-nonce` expects the calls to run, see docs/rpc.md).
                return Err(SimulateError::Transaction {
                    code: -32603,
                    message: format!(
                        "nonce has max value: address {from}, nonce: {}",
                        sender.nonce
                    ),
                });
            }
            let tx = unsigned_transaction(&call, nonce, gas_limit, chain_id, london);
            let tx_env = call_tx_env(&call, chain_id, gas_limit, london);
            let result = {
                let mut evm = Context::mainnet()
                    .with_block(block_env.clone())
                    .with_cfg(cfg.clone())
                    .with_db(&mut *state)
                    .build_mainnet_with_inspector((&mut logs, self.deadline.inspector()))
                    .with_precompiles(precompiles.clone());
                let result = evm.inspect_tx(tx_env).map_err(|e| match e {
                    EVMError::Transaction(t) => {
                        let (code, message) = rejection_message(&t, from, nonce, &sender.balance);
                        SimulateError::Transaction {
                            code,
                            message: format!("err: {message} (supplied gas {gas_limit})"),
                        }
                    }
                    EVMError::Database(e) => state_error(&e),
                    other => SimulateError::State(other.to_string()),
                })?;
                if evm.inspector.1.hit() || self.deadline.passed() {
                    return Err(SimulateError::Timeout(self.deadline.limit()));
                }
                evm.commit(result.state);
                result.result
            };
            let call_logs = logs.take();
            gas.add(result.gas());
            let used = result.gas().tx_gas_used();
            if used > *budget {
                return Err(SimulateError::GasCapExhausted { need: used, remaining: *budget });
            }
            *budget -= used;
            let max_used_gas = if fork >= Fork::Prague {
                result.gas().total_gas_spent().max(result.gas().floor_gas())
            } else {
                result.gas().total_gas_spent()
            };
            let status = if fork < Fork::Byzantium {
                state.merge_transitions(BundleRetention::PlainState);
                let (changes, codes) = changes_of_bundle(&state.bundle_state);
                Eip658Value::PostState((self.roots)(&changes, &codes).map_err(|e| state_error(&e))?)
            } else {
                Eip658Value::Eip658(result.is_success())
            };
            blob_gas_used +=
                tx.blob_versioned_hashes().map_or(0, |h| h.len() as u64) * DATA_GAS_PER_BLOB;
            let (return_data, failure) = outcome(&result, capped);
            let receipt_logs = result.into_logs();
            receipts.push(build_receipt(tx.ty(), status, gas.cumulative_tx_gas, receipt_logs));
            calls.push(SimulatedCall {
                return_data,
                logs: if failure.is_none() { call_logs } else { Vec::new() },
                gas_used: used,
                max_used_gas,
                failure,
            });
            transactions.push(tx);
            senders.push(from);
        }

        header.gas_used = gas.block_gas(fork);
        if fork >= Fork::Cancun {
            header.blob_gas_used = Some(blob_gas_used);
        }
        let withdrawals = (fork >= Fork::Shanghai)
            .then(|| input.overrides.withdrawals.clone().unwrap_or_default().into());
        let mut block =
            Block { header, body: BlockBody { transactions, ommers: Vec::new(), withdrawals } };
        let requests = run_post_block(state, &evm_config, &block, config, &receipts)?;
        state.merge_transitions(BundleRetention::PlainState);
        let (changes, codes) = changes_of_bundle(&state.bundle_state);
        let header = &mut block.header;
        header.state_root = (self.roots)(&changes, &codes).map_err(|e| state_error(&e))?;
        header.transactions_root = calculate_transaction_root(&block.body.transactions);
        header.receipts_root = alloy_consensus::proofs::calculate_receipt_root(&receipts);
        header.logs_bloom =
            receipts.iter().fold(Default::default(), |acc, r| acc | *r.logs_bloom());
        header.withdrawals_root =
            block.body.withdrawals.as_ref().map(|w| calculate_withdrawals_root(w));
        header.requests_hash = requests.map(|r| r.requests_hash());
        let hash = header.hash_slow();
        Ok(SimulatedBlock { block, hash, senders, calls })
    }
}

/// The nonce rules in geth's order (too high, too low, at its maximum), before revm's
/// checks so a call breaking several is refused for the same one geth names.
fn check_nonce(from: Address, nonce: u64, state: u64, gas: u64) -> Result<(), SimulateError> {
    let (code, reason) = if nonce > state {
        (-38011, format!("nonce too high: address {from}, tx: {nonce} state: {state}"))
    } else if nonce < state {
        (-38010, format!("nonce too low: address {from}, tx: {nonce} state: {state}"))
    } else if state == u64::MAX {
        (-32603, format!("nonce has max value: address {from}, nonce: {state}"))
    } else {
        return Ok(());
    };
    Err(SimulateError::Transaction { code, message: format!("err: {reason} (supplied gas {gas})") })
}

/// A call's return data and, if it failed, how the result reports it.
fn outcome(result: &ExecutionResult, capped: bool) -> (Bytes, Option<CallFailure>) {
    match result {
        ExecutionResult::Success { output, .. } => (output.data().clone(), None),
        ExecutionResult::Revert { output, .. } => {
            let message = match crate::call::revert_reason(output) {
                Some(reason) => format!("execution reverted: {reason}"),
                None => "execution reverted".to_string(),
            };
            let failure = CallFailure { code: REVERTED, message, data: Some(output.clone()) };
            // The data is the error's; a failed call returns nothing.
            (Bytes::new(), Some(failure))
        }
        ExecutionResult::Halt { reason, .. } => {
            let mut message = crate::call::halt_reason(reason);
            if capped {
                message.push_str(" (gas limit was capped by the RPC server's global gas cap)");
            }
            (Bytes::new(), Some(CallFailure { code: VM_ERROR, message, data: None }))
        }
    }
}

/// The transaction a call stands for, unsigned (a zero signature), of the type geth
/// gives it: EIP-7702 with authorizations, EIP-4844 with blob hashes, legacy (EIP-2930
/// with an access list) with a gas price or before London, EIP-1559 otherwise.
fn unsigned_transaction(
    call: &CallInput,
    nonce: u64,
    gas_limit: u64,
    chain_id: u64,
    london: bool,
) -> Transaction {
    let signature = Signature::new(U256::ZERO, U256::ZERO, false);
    let chain_id = call.chain_id.unwrap_or(chain_id);
    let value = call.value.unwrap_or_default();
    let input = call.input.clone();
    let access_list = call.access_list.clone().unwrap_or_default();
    let max_fee_per_gas = call.max_fee_per_gas.unwrap_or_default();
    let max_priority_fee_per_gas = call.max_priority_fee_per_gas.unwrap_or_default();
    let kind = call.to.map_or(TxKind::Create, TxKind::Call);
    if let (Some(list), Some(to)) = (&call.authorization_list, call.to) {
        let tx = TxEip7702 {
            chain_id,
            nonce,
            gas_limit,
            max_fee_per_gas,
            max_priority_fee_per_gas,
            to,
            value,
            access_list,
            authorization_list: list.clone(),
            input,
        };
        return Transaction::Eip7702(Signed::new_unhashed(tx, signature));
    }
    if let (Some(hashes), Some(to)) = (&call.blob_versioned_hashes, call.to) {
        let tx = TxEip4844 {
            chain_id,
            nonce,
            gas_limit,
            max_fee_per_gas,
            max_priority_fee_per_gas,
            to,
            value,
            access_list,
            blob_versioned_hashes: hashes.clone(),
            max_fee_per_blob_gas: call.max_fee_per_blob_gas.unwrap_or_default(),
            input,
        };
        return Transaction::Eip4844(Signed::new_unhashed(
            TxEip4844Variant::TxEip4844(tx),
            signature,
        ));
    }
    let gas_price = match call.gas_price {
        Some(price) => Some(price),
        None if !london => Some(0),
        None => None,
    };
    match gas_price {
        Some(gas_price) if call.access_list.is_some() => {
            let tx = TxEip2930 {
                chain_id,
                nonce,
                gas_price,
                gas_limit,
                to: kind,
                value,
                access_list,
                input,
            };
            Transaction::Eip2930(Signed::new_unhashed(tx, signature))
        }
        Some(gas_price) => {
            let tx =
                TxLegacy { chain_id: None, nonce, gas_price, gas_limit, to: kind, value, input };
            Transaction::Legacy(Signed::new_unhashed(tx, signature))
        }
        None => {
            let tx = TxEip1559 {
                chain_id,
                nonce,
                gas_limit,
                max_fee_per_gas,
                max_priority_fee_per_gas,
                to: kind,
                value,
                access_list,
                input,
            };
            Transaction::Eip1559(Signed::new_unhashed(tx, signature))
        }
    }
}

impl From<DatabaseError> for SimulateError {
    fn from(e: DatabaseError) -> Self {
        Self::State(e.to_string())
    }
}
