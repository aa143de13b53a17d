//! The stages of a block around its transactions: the pre-block system calls (EIP-4788,
//! EIP-2935; BAL index 0) and the post-block stage (withdrawals, then the request system
//! calls: EIP-7002 and EIP-7251, from Amsterdam on also EIP-8282's builder deposits and
//! exits; and the EIP-6110 deposits; BAL index n+1). Both executors run them the same way,
//! on the state the block is committed into.

use crate::error::{state_error, ExecutionError};
use crate::evm::EvmConfig;
use crate::requests::{
    assemble_requests, deposit_requests, CONSOLIDATION_REQUEST_TYPE, DEPOSIT_REQUEST_TYPE,
    WITHDRAWAL_REQUEST_TYPE,
};
use alloy_eips::eip7685::Requests;
use alloy_primitives::{Address, Bytes, U256};
use ethrex_common::{Block, ChainConfig, Fork, Header, Receipt};
use revm::context::{ContextTr, JournalTr};
use revm::context_interface::result::{EVMError, ExecutionResult};
use revm::database::State;
use revm::database_interface::bal::EvmDatabaseError;
use revm::handler::EvmTr;
use revm::{Database, ExecuteCommitEvm, SystemCallCommitEvm};

// The system contracts' addresses, as the EIPs give them (one definition, in alloy-eips).
use alloy_eips::eip2935::HISTORY_STORAGE_ADDRESS;
use alloy_eips::eip4788::BEACON_ROOTS_ADDRESS;
use alloy_eips::eip7002::WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS as WITHDRAWAL_REQUEST_ADDRESS;
use alloy_eips::eip7251::CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS as CONSOLIDATION_REQUEST_ADDRESS;
use alloy_eips::eip8282::{
    BUILDER_DEPOSIT_CONTRACT_ADDRESS, BUILDER_DEPOSIT_REQUEST_TYPE, BUILDER_EXIT_CONTRACT_ADDRESS,
    BUILDER_EXIT_REQUEST_TYPE,
};

const GWEI_TO_WEI: u64 = 1_000_000_000;

/// A failed system call: the block's fault, unless the state underneath failed.
fn system_error<E>(address: Address, e: EVMError<EvmDatabaseError<E>>) -> ExecutionError
where
    E: std::error::Error + Send + Sync + 'static,
{
    match e {
        EVMError::Database(e) => state_error(e),
        other => ExecutionError::SystemCall { address, reason: other.to_string() },
    }
}

/// Output of a request-producing system call: it must succeed (EIP-7002, EIP-7251).
fn request_output(address: Address, result: ExecutionResult) -> Result<Bytes, ExecutionError> {
    match result {
        ExecutionResult::Success { output, .. } => Ok(output.into_data()),
        other => Err(ExecutionError::SystemCall { address, reason: format!("{other:?}") }),
    }
}

/// BAL index 0: the DAO fork's state change at its block, then the EIP-4788 and
/// EIP-2935 system calls, in the execution specs' order.
pub(crate) fn run_pre_block<DB: Database>(
    state: &mut State<DB>,
    evm_config: &EvmConfig,
    config: &ChainConfig,
    header: &Header,
) -> Result<(), ExecutionError> {
    if header.number == 0 {
        return Ok(());
    }
    crate::proof_of_work::apply_dao_fork(state, evm_config, config, header)?;
    let fork = evm_config.fork();
    let mut evm = evm_config.evm(&mut *state);
    if fork >= Fork::Cancun {
        if let Some(root) = header.parent_beacon_block_root {
            evm.system_call_commit(BEACON_ROOTS_ADDRESS, root.0.into())
                .map_err(|e| system_error(BEACON_ROOTS_ADDRESS, e))?;
        }
    }
    if fork >= Fork::Prague {
        evm.system_call_commit(HISTORY_STORAGE_ADDRESS, header.parent_hash.0.into())
            .map_err(|e| system_error(HISTORY_STORAGE_ADDRESS, e))?;
    }
    Ok(())
}

/// BAL index n+1: the proof-of-work rewards (before the merge), withdrawals, then the request system calls (EIP-7002, EIP-7251; from
/// Amsterdam on EIP-8282's builder deposit and exit contracts, in that order) and the
/// EIP-6110 deposits found in the receipts. Returns the requests (Prague on).
pub(crate) fn run_post_block<DB: Database>(
    state: &mut State<DB>,
    evm_config: &EvmConfig,
    block: &Block,
    config: &ChainConfig,
    receipts: &[Receipt],
) -> Result<Option<Requests>, ExecutionError> {
    state.bump_bal_index();
    crate::proof_of_work::apply_rewards(state, evm_config, &block.header, &block.body.ommers)?;
    let fork = evm_config.fork();
    let mut evm = evm_config.evm(&mut *state);
    if fork >= Fork::Shanghai {
        if let Some(withdrawals) = &block.body.withdrawals {
            for w in withdrawals.iter() {
                let amount = U256::from(w.amount) * U256::from(GWEI_TO_WEI);
                evm.ctx_mut().journal_mut().balance_incr(w.address, amount).map_err(state_error)?;
            }
            evm.commit_inner();
        }
    }
    if fork < Fork::Prague {
        return Ok(None);
    }
    let deposit_contract = config
        .inner
        .deposit_contract_address
        .unwrap_or(alloy_eips::eip6110::MAINNET_DEPOSIT_CONTRACT_ADDRESS);
    let deposits =
        deposit_requests(receipts.iter().flat_map(|r| r.logs().iter()), deposit_contract)?;
    let mut contracts = vec![
        (WITHDRAWAL_REQUEST_ADDRESS, WITHDRAWAL_REQUEST_TYPE),
        (CONSOLIDATION_REQUEST_ADDRESS, CONSOLIDATION_REQUEST_TYPE),
    ];
    if fork >= Fork::Amsterdam {
        contracts.push((BUILDER_DEPOSIT_CONTRACT_ADDRESS, BUILDER_DEPOSIT_REQUEST_TYPE));
        contracts.push((BUILDER_EXIT_CONTRACT_ADDRESS, BUILDER_EXIT_REQUEST_TYPE));
    }
    let mut typed = Vec::with_capacity(contracts.len() + 1);
    typed.push((DEPOSIT_REQUEST_TYPE, Bytes::from(deposits)));
    for (address, request_type) in contracts {
        // Asked of the state cache, not the journal: the check itself must not be
        // recorded as an access in the BAL.
        let has_code = evm
            .db_mut()
            .basic(address)
            .map_err(state_error)?
            .is_some_and(|info| info.code_hash != ethrex_common::KECCAK_EMPTY);
        if !has_code {
            return Err(ExecutionError::SystemContractMissing(address));
        }
        let result =
            evm.system_call_commit(address, Bytes::new()).map_err(|e| system_error(address, e))?;
        typed.push((request_type, request_output(address, result)?));
    }
    Ok(Some(assemble_requests(typed)))
}
