//! Sequential block execution: pre-block system calls (BAL index 0), transactions in
//! order (index i+1), withdrawals and request system calls (index n+1). From Amsterdam on
//! it also builds the block-level access list with revm's builder.

use crate::env::tx_env;
use crate::error::DatabaseError;
use crate::error::{transaction_error, ExecutionError};
use crate::evm::EvmConfig;
use crate::gas::GasCounter;
use crate::output::{
    access_of, build_receipt, changes_of_bundle, finish, AccountChange, BlockExecutionOutput,
};
use crate::system::{run_post_block, run_pre_block};
use alloy_consensus::Eip658Value;
use alloy_consensus::{Transaction as _, Typed2718};
use alloy_primitives::{Address, Bytes, B256};
use ethrex_common::{Block, ChainConfig};
use revm::context::ContextTr;
use revm::database::states::bundle_state::BundleRetention;
use revm::database::{State, WrapDatabaseRef};
use revm::database_interface::DatabaseRef;
use revm::{ExecuteCommitEvm, ExecuteEvm};

/// Executes `block` on top of `db` (the parent's state) one transaction after another,
/// `senders[i]` being the sender of transaction `i`. From Amsterdam on, also builds the
/// block-level access list the block produces.
pub fn execute_block_sequential<DB: DatabaseRef>(
    db: DB,
    block: &Block,
    senders: &[Address],
    config: &ChainConfig,
) -> Result<BlockExecutionOutput, ExecutionError> {
    execute(db, block, senders, config, Accesses::Block, None)
}

/// The state root of the parent's state with `changes` applied (and `codes` stored):
/// what a pre-Byzantium receipt commits to after its transaction.
pub type IntermediateRoot<'a> =
    &'a dyn Fn(&[AccountChange], &[(B256, Bytes)]) -> Result<B256, DatabaseError>;

/// As `execute_block_sequential`, for blocks of every fork: before Byzantium each
/// receipt carries the state root after its transaction (EIP-658 replaced it with a
/// status), which `roots` computes from the changes so far.
pub fn execute_block_sequential_with_roots<DB: DatabaseRef>(
    db: DB,
    block: &Block,
    senders: &[Address],
    config: &ChainConfig,
    roots: IntermediateRoot<'_>,
) -> Result<BlockExecutionOutput, ExecutionError> {
    execute(db, block, senders, config, Accesses::Block, Some(roots))
}

/// As `execute_block_sequential`, also recording what each transaction accessed
/// (`BlockExecutionOutput::tx_accesses`).
pub fn execute_block_sequential_recording<DB: DatabaseRef>(
    db: DB,
    block: &Block,
    senders: &[Address],
    config: &ChainConfig,
) -> Result<BlockExecutionOutput, ExecutionError> {
    execute(db, block, senders, config, Accesses::PerTransaction, None)
}

/// What execution records of the state it accesses, beyond the BAL.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Accesses {
    /// The block's BAL only (from Amsterdam on).
    Block,
    /// Also each transaction's accesses.
    PerTransaction,
}

fn execute<DB: DatabaseRef>(
    db: DB,
    block: &Block,
    senders: &[Address],
    config: &ChainConfig,
    record: Accesses,
    roots: Option<IntermediateRoot<'_>>,
) -> Result<BlockExecutionOutput, ExecutionError> {
    let header = &block.header;
    let evm_config = EvmConfig::new(config, header);
    let fork = evm_config.fork();
    let post_state_receipts = fork < ethrex_common::Fork::Byzantium;
    if post_state_receipts && roots.is_none() && !block.body.transactions.is_empty() {
        return Err(ExecutionError::Database(DatabaseError::message(
            "a pre-Byzantium block needs intermediate state roots for its receipts",
        )));
    }
    let record_accesses = record == Accesses::PerTransaction;
    let build_bal = fork >= ethrex_common::Fork::Amsterdam;
    if senders.len() != block.body.transactions.len() {
        return Err(ExecutionError::InvalidSignature {
            index: senders.len().min(block.body.transactions.len()),
            reason: format!(
                "{} senders for {} transactions",
                senders.len(),
                block.body.transactions.len()
            ),
        });
    }
    let mut state = State::builder()
        .with_database(WrapDatabaseRef(db))
        .with_bundle_update()
        .with_bal_builder_if(build_bal)
        .build();
    state.reset_bal_index();
    run_pre_block(&mut state, &evm_config, config, header)?;

    let mut receipts = Vec::with_capacity(block.body.transactions.len());
    let mut gas = GasCounter::default();
    let mut longest_tx = std::time::Duration::ZERO;
    let mut accesses = Vec::new();
    {
        let mut evm = evm_config.evm(&mut state);
        for (index, (tx, sender)) in block.body.transactions.iter().zip(senders).enumerate() {
            gas.check_fits(fork, header.gas_limit, index, tx.gas_limit())?;
            evm.db_mut().bump_bal_index();
            let t = std::time::Instant::now();
            let result =
                evm.transact(tx_env(tx, *sender)).map_err(|e| transaction_error(index, e))?;
            longest_tx = longest_tx.max(t.elapsed());
            if record_accesses {
                accesses.push(access_of(&result.state));
            }
            gas.add(result.result.gas());
            let success = result.result.is_success();
            let logs = result.result.into_logs();
            evm.commit(result.state);
            let outcome = match roots.filter(|_| post_state_receipts) {
                Some(roots) => {
                    let state = evm.db_mut();
                    state.merge_transitions(BundleRetention::PlainState);
                    let (changes, codes) = changes_of_bundle(&state.bundle_state);
                    Eip658Value::PostState(
                        roots(&changes, &codes).map_err(ExecutionError::Database)?,
                    )
                }
                None => Eip658Value::Eip658(success),
            };
            receipts.push(build_receipt(tx.ty(), outcome, gas.cumulative_tx_gas, logs));
        }
    }
    let requests = run_post_block(&mut state, &evm_config, block, config, &receipts)?;
    let mut output = finish(state, receipts, gas.block_gas(fork), requests);
    output.longest_tx = longest_tx;
    output.tx_accesses = accesses;
    Ok(output)
}
