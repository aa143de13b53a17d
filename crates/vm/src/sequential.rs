//! Sequential block execution: pre-block system calls (BAL index 0), transactions in
//! order (index i+1), withdrawals and request system calls (index n+1). From Amsterdam on
//! it also builds the block-level access list with revm's builder.

use crate::env::{block_env, cfg_env, tx_env};
use crate::error::{ExecutionError, TxErrorKind};
use crate::output::{changes_from_bundle, BlockExecutionOutput};
use crate::system::{
    assemble_requests, deposit_requests, BEACON_ROOTS_ADDRESS, CONSOLIDATION_REQUEST_ADDRESS,
    HISTORY_STORAGE_ADDRESS, WITHDRAWAL_REQUEST_ADDRESS,
};
use alloy_consensus::{Eip658Value, Receipt as PlainReceipt, TxType, Typed2718};
use alloy_primitives::{Address, Bytes, U256};
use alloy_consensus::Transaction as _;
use ethrex_common::{ChainConfig, Fork, Receipt};
use revm::context::{ContextTr, JournalTr};
use revm::context_interface::result::{EVMError, ExecutionResult, InvalidTransaction};
use revm::database::states::bundle_state::BundleRetention;
use revm::database::{State, WrapDatabaseRef};
use revm::database_interface::DatabaseRef;
use revm::handler::EvmTr;
use revm::Database;
use revm::{Context, ExecuteCommitEvm, ExecuteEvm, MainBuilder, MainContext, SystemCallCommitEvm};

const GWEI_TO_WEI: u64 = 1_000_000_000;

/// Classifies revm's transaction validation errors into consensus error kinds.
pub fn classify_invalid_tx(e: &InvalidTransaction) -> TxErrorKind {
    use InvalidTransaction as I;
    match e {
        I::NonceTooLow { .. } => TxErrorKind::NonceTooLow,
        I::NonceTooHigh { .. } | I::NonceOverflowInTransaction => TxErrorKind::NonceTooHigh,
        I::LackOfFundForMaxFee { .. } | I::OverflowPaymentInTransaction => TxErrorKind::InsufficientFunds,
        I::CallGasCostMoreThanGasLimit { .. } | I::GasFloorMoreThanGasLimit { .. } => TxErrorKind::IntrinsicGasTooLow,
        I::TxGasLimitGreaterThanCap { .. } | I::CallerGasLimitMoreThanBlock => TxErrorKind::GasLimitExceedsCap,
        I::GasPriceLessThanBasefee | I::PriorityFeeGreaterThanMaxFee => TxErrorKind::FeeTooLow,
        I::RejectCallerWithCode => TxErrorKind::SenderNotEoa,
        I::BlobGasPriceGreaterThanMax { .. }
        | I::EmptyBlobs
        | I::BlobCreateTransaction
        | I::TooManyBlobs { .. }
        | I::BlobVersionNotSupported => TxErrorKind::Blob,
        I::AuthorizationListInvalidFields | I::EmptyAuthorizationList => TxErrorKind::Authorization,
        I::Eip2930NotSupported
        | I::Eip1559NotSupported
        | I::Eip4844NotSupported
        | I::Eip7702NotSupported
        | I::AccessListNotSupported
        | I::MaxFeePerBlobGasNotSupported
        | I::BlobVersionedHashesNotSupported
        | I::AuthorizationListNotSupported => TxErrorKind::TypeNotSupported,
        _ => TxErrorKind::Other,
    }
}

pub(crate) fn evm_error<DBE: std::fmt::Display>(index: usize, e: EVMError<DBE>) -> ExecutionError {
    match e {
        EVMError::Transaction(t) => ExecutionError::InvalidTransaction {
            index,
            reason: t.to_string(),
            kind: classify_invalid_tx(&t),
        },
        EVMError::Header(h) => ExecutionError::InvalidTransaction { index, reason: h.to_string(), kind: TxErrorKind::Other },
        EVMError::Database(d) => ExecutionError::Database(d.to_string()),
        EVMError::Custom(c) => ExecutionError::Database(c),
        other => ExecutionError::Database(other.to_string()),
    }
}

fn system_error<DBE: std::fmt::Display>(address: Address, e: EVMError<DBE>) -> ExecutionError {
    ExecutionError::SystemCall { address, reason: format!("{e}") }
}

/// Output of a request-producing system call: it must succeed (EIP-7002, EIP-7251).
fn request_output(address: Address, result: ExecutionResult) -> Result<Bytes, ExecutionError> {
    match result {
        ExecutionResult::Success { output, .. } => Ok(output.into_data()),
        other => Err(ExecutionError::SystemCall { address, reason: format!("{other:?}") }),
    }
}

pub fn build_receipt(tx_type: u8, success: bool, cumulative_gas_used: u64, logs: Vec<alloy_primitives::Log>) -> Receipt {
    let receipt = PlainReceipt { status: Eip658Value::Eip658(success), cumulative_gas_used, logs }.with_bloom();
    let ty = TxType::try_from(tx_type).unwrap_or(TxType::Legacy);
    Receipt::from_typed(ty, receipt)
}

/// Environments and fork of one block, computed once and shared by every stage.
pub(crate) struct BlockEnvs {
    pub block: revm::context::BlockEnv,
    pub cfg: revm::context::CfgEnv,
    pub fork: Fork,
}

impl BlockEnvs {
    pub fn new(config: &ChainConfig, header: &ethrex_common::Header) -> Self {
        Self { block: block_env(config, header), cfg: cfg_env(config, header), fork: config.fork_at(header.timestamp) }
    }
}

/// BAL index 0: the EIP-2935 and EIP-4788 system calls.
pub(crate) fn run_pre_block<DB: revm::Database>(
    state: &mut State<DB>,
    envs: &BlockEnvs,
    header: &ethrex_common::Header,
) -> Result<(), ExecutionError>
where
    DB::Error: std::fmt::Display,
{
    if header.number == 0 {
        return Ok(());
    }
    let mut evm = Context::mainnet()
        .with_block(envs.block.clone())
        .with_cfg(envs.cfg.clone())
        .with_db(&mut *state)
        .build_mainnet();
    if envs.fork >= Fork::Prague {
        evm.system_call_commit(HISTORY_STORAGE_ADDRESS, header.parent_hash.0.into())
            .map_err(|e| system_error(HISTORY_STORAGE_ADDRESS, e))?;
    }
    if envs.fork >= Fork::Cancun {
        if let Some(root) = header.parent_beacon_block_root {
            evm.system_call_commit(BEACON_ROOTS_ADDRESS, root.0.into())
                .map_err(|e| system_error(BEACON_ROOTS_ADDRESS, e))?;
        }
    }
    Ok(())
}

/// BAL index n+1: withdrawals, then the EIP-7002 and EIP-7251 request system calls and
/// the EIP-6110 deposits found in the receipts. Returns the requests (Prague on).
pub(crate) fn run_post_block<DB: revm::Database>(
    state: &mut State<DB>,
    envs: &BlockEnvs,
    block: &ethrex_common::Block,
    config: &ChainConfig,
    receipts: &[Receipt],
) -> Result<Option<alloy_eips::eip7685::Requests>, ExecutionError>
where
    DB::Error: std::fmt::Display,
{
    state.bump_bal_index();
    let mut evm = Context::mainnet()
        .with_block(envs.block.clone())
        .with_cfg(envs.cfg.clone())
        .with_db(&mut *state)
        .build_mainnet();
    if envs.fork >= Fork::Shanghai {
        if let Some(withdrawals) = &block.body.withdrawals {
            for w in withdrawals.iter() {
                let amount = U256::from(w.amount) * U256::from(GWEI_TO_WEI);
                evm.ctx_mut()
                    .journal_mut()
                    .balance_incr(w.address, amount)
                    .map_err(|e| ExecutionError::Database(e.to_string()))?;
            }
            evm.commit_inner();
        }
    }
    if envs.fork < Fork::Prague {
        return Ok(None);
    }
    let deposit_contract = config
        .inner
        .deposit_contract_address
        .unwrap_or(alloy_eips::eip6110::MAINNET_DEPOSIT_CONTRACT_ADDRESS);
    let deposits = deposit_requests(receipts.iter().flat_map(|r| r.logs().iter()), deposit_contract)?;
    let mut outputs = Vec::with_capacity(2);
    for address in [WITHDRAWAL_REQUEST_ADDRESS, CONSOLIDATION_REQUEST_ADDRESS] {
        // Asked of the state cache, not the journal: the check itself must not be
        // recorded as an access in the BAL.
        let has_code = evm
            .db_mut()
            .basic(address)
            .map_err(|e| ExecutionError::Database(e.to_string()))?
            .is_some_and(|info| info.code_hash != ethrex_common::KECCAK_EMPTY);
        if !has_code {
            return Err(ExecutionError::SystemContractMissing(address));
        }
        let result = evm.system_call_commit(address, Bytes::new()).map_err(|e| system_error(address, e))?;
        outputs.push(request_output(address, result)?);
    }
    let consolidations = outputs.pop().unwrap_or_default();
    let withdrawals = outputs.pop().unwrap_or_default();
    Ok(Some(assemble_requests(deposits, withdrawals, consolidations)))
}

/// Running gas totals of a block: receipts count transaction gas (after refunds), the
/// header counts block gas (from Amsterdam on, EIP-7778: before refunds).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct GasCounter {
    pub cumulative_tx_gas: u64,
    pub regular: u64,
    pub state: u64,
}

impl GasCounter {
    pub fn block_gas(&self, fork: Fork) -> u64 {
        if fork >= Fork::Amsterdam {
            self.regular.max(self.state)
        } else {
            self.cumulative_tx_gas
        }
    }

    /// The rule checked before each transaction: it must fit in what is left of the block.
    pub fn check_fits(&self, fork: Fork, gas_limit: u64, index: usize, tx_gas_limit: u64) -> Result<(), ExecutionError> {
        let available = gas_limit.saturating_sub(self.block_gas(fork));
        if tx_gas_limit > available {
            return Err(ExecutionError::BlockGasOverflow { index, gas_limit: tx_gas_limit, available });
        }
        Ok(())
    }

    pub fn add(&mut self, gas: &revm::context_interface::result::ResultGas) {
        self.cumulative_tx_gas += gas.tx_gas_used();
        self.regular += gas.block_regular_gas_used();
        self.state += gas.block_state_gas_used();
    }
}

pub(crate) fn finish<DB: revm::Database>(
    mut state: State<DB>,
    build_bal: bool,
    receipts: Vec<Receipt>,
    gas_used: u64,
    requests: Option<alloy_eips::eip7685::Requests>,
) -> BlockExecutionOutput {
    let bal = if build_bal { state.take_built_alloy_bal() } else { None };
    state.merge_transitions(BundleRetention::PlainState);
    let (accounts, codes) = changes_from_bundle(state.take_bundle());
    BlockExecutionOutput { receipts, gas_used, requests, bal, accounts, codes }
}

/// Executes `block` on top of `db` (the parent's state) one transaction after another.
/// With `build_bal`, also records the block-level access list the block produces.
pub fn execute_block_sequential<DB>(
    db: DB,
    block: &ethrex_common::Block,
    senders: &[alloy_primitives::Address],
    config: &ChainConfig,
    build_bal: bool,
) -> Result<BlockExecutionOutput, ExecutionError>
where
    DB: DatabaseRef,
    DB::Error: std::fmt::Display,
{
    let header = &block.header;
    let envs = BlockEnvs::new(config, header);
    if senders.len() != block.body.transactions.len() {
        return Err(ExecutionError::InvalidSignature {
            index: senders.len().min(block.body.transactions.len()),
            reason: format!("{} senders for {} transactions", senders.len(), block.body.transactions.len()),
        });
    }
    let mut state = State::builder()
        .with_database(WrapDatabaseRef(db))
        .with_bundle_update()
        .with_bal_builder_if(build_bal)
        .build();
    state.reset_bal_index();
    run_pre_block(&mut state, &envs, header)?;

    let mut receipts = Vec::with_capacity(block.body.transactions.len());
    let mut gas = GasCounter::default();
    {
        let mut evm = Context::mainnet()
            .with_block(envs.block.clone())
            .with_cfg(envs.cfg.clone())
            .with_db(&mut state)
            .build_mainnet();
        for (index, (tx, sender)) in block.body.transactions.iter().zip(senders).enumerate() {
            gas.check_fits(envs.fork, header.gas_limit, index, tx.gas_limit())?;
            evm.db_mut().bump_bal_index();
            let result = evm.transact(tx_env(tx, *sender)).map_err(|e| evm_error(index, e))?;
            gas.add(result.result.gas());
            let success = result.result.is_success();
            let logs = result.result.into_logs();
            evm.commit(result.state);
            receipts.push(build_receipt(tx.ty(), success, gas.cumulative_tx_gas, logs));
        }
    }
    let requests = run_post_block(&mut state, &envs, block, config, &receipts)?;
    Ok(finish(state, build_bal, receipts, gas.block_gas(envs.fork), requests))
}
