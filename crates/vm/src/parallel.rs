//! Parallel block execution driven by the header's block-level access list.
//!
//! With a BAL, the state every transaction starts from is known up front: the pre-block
//! state plus the BAL writes with a lower index. Each transaction therefore runs on its own
//! small view (shared cache + the BAL read lazily at its index) on the rayon pool, and its
//! writes are checked against the header BAL inside the worker. After the join, results
//! are committed in block order into one state, which rebuilds the whole BAL exactly as
//! the sequential path does, and the post-block stage runs on top.
//!
//! Senders are recovered inside the workers too, so that
//! work is spread over every core alongside execution; an invalid signature is reported
//! before any other verdict, as sequential import (which recovers first) does.
//!
//! Verdicts: when neither the pre-block system calls' writes (index 0) nor any
//! transaction's writes disagree with the header BAL, every transaction saw its exact
//! pre-state, so the first failure in block order (invalid
//! transaction or block gas overflow) is the same failure the sequential path finds.
//! When some transaction's writes disagree, later transactions may have run on wrong
//! state; the caller must then let the sequential path decide the verdict
//! (`ParallelOutcome::BalMismatch`).

use crate::bal_index::{diff_writes, writes_at_index, writes_by_index, IndexWrites};
use crate::env::tx_env;
use crate::error::ExecutionError;
use crate::output::BlockExecutionOutput;
use crate::senders::recover_sender;
use crate::sequential::{build_receipt, evm_error, finish, run_post_block, run_pre_block, BlockEnvs, GasCounter};
use alloy_consensus::{Transaction as _, Typed2718};
use alloy_primitives::Address;
use ethrex_common::{Block, BlockAccessList, ChainConfig};
use ethrex_common::Receipt;
use revm::context_interface::result::ResultGas;
use revm::database::{State, WrapDatabaseRef};
use revm::database_interface::DatabaseRef;
use revm::state::bal::{Bal, BlockAccessIndex};
use revm::state::EvmState;
use revm::{Context, ExecuteEvm, MainBuilder, MainContext};
use revm::DatabaseCommit;
use rayon::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// What the parallel path concluded.
#[derive(Debug)]
pub enum ParallelOutcome {
    /// Executed; the output's BAL is the one execution produced (compare it with the header).
    Executed { output: BlockExecutionOutput, senders: Vec<Address> },
    /// Some transaction's writes disagree with the header BAL; the verdict must come from
    /// sequential execution. `reason` describes the first disagreement.
    BalMismatch { reason: String },
}

/// One transaction's result, computed on a worker.
struct TxRun {
    sender: Address,
    /// Gas, the receipt (built in the worker, bloom included; its cumulative gas is set
    /// in block order) and the state changes.
    result: Result<(ResultGas, Receipt, EvmState), ExecutionError>,
    /// First disagreement between this transaction's writes and the header BAL.
    bal_mismatch: Option<String>,
}

fn run_one<DB>(
    db: &DB,
    bal: &Arc<Bal>,
    header_writes: &IndexWrites,
    envs: &BlockEnvs,
    index: usize,
    tx: &ethrex_common::Transaction,
    sender: Address,
) -> TxRun
where
    DB: DatabaseRef + Sync,
    DB::Error: std::fmt::Display,
{
    let bal_index = index + 1;
    let mut state = State::builder()
        .with_database(WrapDatabaseRef(db))
        .with_bal(bal.clone())
        .with_bal_builder()
        .build();
    state.set_bal_index(BlockAccessIndex(bal_index as u64));
    let outcome = {
        let mut evm = Context::mainnet()
            .with_block(envs.block.clone())
            .with_cfg(envs.cfg.clone())
            .with_db(&mut state)
            .build_mainnet();
        evm.transact(tx_env(tx, sender))
    };
    match outcome {
        Err(e) => {
            let error = evm_error(index, e);
            // A read of an account or slot the BAL does not list surfaces as a database
            // error of the BAL view: that is the BAL's fault, not the transaction's.
            let bal_mismatch = matches!(error, ExecutionError::Database(_))
                .then(|| format!("index {bal_index}: transaction read state the BAL does not list ({error})"));
            TxRun { sender, result: Err(error), bal_mismatch }
        }
        Ok(r) => {
            state.bal_state.commit(&r.state);
            let produced = state
                .take_built_alloy_bal()
                .map(|partial| writes_at_index(&partial, bal_index as u64))
                .unwrap_or_default();
            let bal_mismatch = diff_writes(bal_index, header_writes, &produced);
            let gas = *r.result.gas();
            let success = r.result.is_success();
            let receipt = build_receipt(tx.ty(), success, 0, r.result.into_logs());
            TxRun { sender, result: Ok((gas, receipt, r.state)), bal_mismatch }
        }
    }
}

/// Runs every transaction on the pool and returns the results in block order.
///
/// The block's wall time is bounded below by its longest transaction, and a long one
/// picked up last leaves the other cores idle while it runs. So the workers take
/// transactions from one shared queue ordered by gas limit, largest first (greedy
/// longest-processing-time scheduling; the gas limit stands in for the unknown cost).
fn run_longest_first<F>(txs: &[ethrex_common::Transaction], run: F) -> Result<Vec<TxRun>, ExecutionError>
where
    F: Fn(usize, &ethrex_common::Transaction) -> TxRun + Sync,
{
    let mut order: Vec<usize> = (0..txs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(txs[i].gas_limit()));
    let next = AtomicUsize::new(0);
    let workers = rayon::current_num_threads().clamp(1, txs.len().max(1));
    let done: Vec<Vec<(usize, TxRun)>> = (0..workers)
        .into_par_iter()
        .with_max_len(1)
        .map(|_| {
            let mut mine = Vec::new();
            while let Some(&index) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
                mine.push((index, run(index, &txs[index])));
            }
            mine
        })
        .collect();
    let mut slots: Vec<Option<TxRun>> = std::iter::repeat_with(|| None).take(txs.len()).collect();
    for (index, result) in done.into_iter().flatten() {
        slots[index] = Some(result);
    }
    slots
        .into_iter()
        .enumerate()
        .map(|(index, slot)| slot.ok_or_else(|| ExecutionError::Database(format!("transaction {index} was never run"))))
        .collect()
}

/// The transactions of a block, run in parallel and checked, but not yet committed:
/// their receipts are final (cumulative gas included), so they can be hashed and stored
/// while `commit` folds the state changes into the block's state in block order.
pub struct ExecutedTransactions<'a, DB: DatabaseRef> {
    state: State<WrapDatabaseRef<&'a DB>>,
    envs: BlockEnvs,
    changes: Vec<EvmState>,
    gas: GasCounter,
    /// In block order, cumulative gas set. A caller that takes them out (to hash them
    /// beside the commit) hands them back through `commit_without_receipts`.
    pub receipts: Vec<Receipt>,
    /// Recovered in the workers, in block order.
    pub senders: Vec<Address>,
}

/// What the transaction phase of the parallel path concluded.
// Returned once per block and unpacked at once: boxing the large variant would only add
// an allocation.
#[allow(clippy::large_enum_variant)]
pub enum ParallelRun<'a, DB: DatabaseRef> {
    Ran(ExecutedTransactions<'a, DB>),
    /// As `ParallelOutcome::BalMismatch`.
    BalMismatch { reason: String },
}

/// Executes `block` with its transactions in parallel, reading through `db` (the shared
/// cache over the parent's state) and the header `bal` (already shape-checked).
pub fn execute_block_parallel<DB>(
    db: &DB,
    block: &Block,
    config: &ChainConfig,
    bal: &BlockAccessList,
) -> Result<ParallelOutcome, ExecutionError>
where
    DB: DatabaseRef + Sync,
    DB::Error: std::fmt::Display,
{
    match run_transactions_parallel(db, block, config, bal)? {
        ParallelRun::BalMismatch { reason } => Ok(ParallelOutcome::BalMismatch { reason }),
        ParallelRun::Ran(mut executed) => {
            let senders = std::mem::take(&mut executed.senders);
            let output = executed.commit(block, config)?;
            Ok(ParallelOutcome::Executed { output, senders })
        }
    }
}

/// The first phase of `execute_block_parallel`: pre-block system calls, every
/// transaction on the pool, and the verdicts in block order. Nothing is committed yet.
pub fn run_transactions_parallel<'a, DB>(
    db: &'a DB,
    block: &Block,
    config: &ChainConfig,
    bal: &BlockAccessList,
) -> Result<ParallelRun<'a, DB>, ExecutionError>
where
    DB: DatabaseRef + Sync,
    DB::Error: std::fmt::Display,
{
    let header = &block.header;
    let envs = BlockEnvs::new(config, header);
    let txs = &block.body.transactions;
    // Three independent preparations, side by side: revm's form of the header BAL (what
    // the workers read), the header's writes by index (what they are checked against),
    // and the pre-block system calls on the state everything is finally committed into.
    let t_setup = std::time::Instant::now();
    let ((revm_bal, header_writes), state) = rayon::join(
        || {
            rayon::join(
                || Bal::try_from(bal.clone()).map(Arc::new).map_err(|e| ExecutionError::Bal(format!("{e:?}"))),
                || writes_by_index(bal, txs.len() + 2),
            )
        },
        || -> Result<_, ExecutionError> {
            let mut state = State::builder()
                .with_database(WrapDatabaseRef(db))
                .with_bundle_update()
                .with_bal_builder()
                .build();
            state.reset_bal_index();
            run_pre_block(&mut state, &envs, header)?;
            Ok(state)
        },
    );
    let (revm_bal, state) = (revm_bal?, state?);
    let setup_time = t_setup.elapsed();
    // Every transaction reads the header's index-0 writes as its starting state, so they
    // must be exactly what the system calls wrote before anything else is trusted.
    let pre_block_writes = state
        .bal_state
        .bal_builder
        .clone()
        .map(|b| writes_at_index(&b.into_alloy_bal(), 0))
        .unwrap_or_default();
    if let Some(reason) = diff_writes(0, &header_writes[0], &pre_block_writes) {
        return Ok(ParallelRun::BalMismatch { reason });
    }

    let t_parallel = std::time::Instant::now();
    let runs = run_longest_first(txs, |index, tx| match recover_sender(index, tx) {
        Ok(sender) => run_one(db, &revm_bal, &header_writes[index + 1], &envs, index, tx, sender),
        Err(e) => TxRun { sender: Address::ZERO, result: Err(e), bal_mismatch: None },
    })?;
    // Sequential import recovers every sender before executing anything, so a bad
    // signature is the verdict whatever else is wrong with the block.
    if let Some(e) = runs.iter().find_map(|r| match &r.result {
        Err(e @ ExecutionError::InvalidSignature { .. }) => Some(e.clone()),
        _ => None,
    }) {
        return Err(e);
    }
    let parallel_time = t_parallel.elapsed();

    // Verdicts in block order, as the sequential path meets them; committing the state
    // changes cannot fail, so it is left to `commit`.
    let mut receipts = Vec::with_capacity(txs.len());
    let mut senders = Vec::with_capacity(txs.len());
    let mut changes = Vec::with_capacity(txs.len());
    let mut gas = GasCounter::default();
    for (index, (tx, run)) in txs.iter().zip(runs).enumerate() {
        senders.push(run.sender);
        // Same order as the sequential path: the gas check comes before the transaction.
        gas.check_fits(envs.fork, header.gas_limit, index, tx.gas_limit())?;
        if let Some(reason) = run.bal_mismatch {
            return Ok(ParallelRun::BalMismatch { reason });
        }
        let (tx_gas, mut receipt, evm_state) = run.result?;
        gas.add(&tx_gas);
        if let Some(r) = receipt.as_receipt_with_bloom_mut() {
            r.receipt.cumulative_gas_used = gas.cumulative_tx_gas;
        }
        receipts.push(receipt);
        changes.push(evm_state);
    }
    tracing::trace!(
        block = header.number,
        bal_setup_ms = setup_time.as_secs_f64() * 1e3,
        parallel_ms = parallel_time.as_secs_f64() * 1e3,
        "parallel execution phases"
    );
    Ok(ParallelRun::Ran(ExecutedTransactions { state, envs, changes, gas, receipts, senders }))
}

impl<DB> ExecutedTransactions<'_, DB>
where
    DB: DatabaseRef,
    DB::Error: std::fmt::Display,
{
    /// Commits the transactions' changes in block order (which rebuilds the whole BAL
    /// exactly as the sequential path does) and runs the post-block stage on top.
    pub fn commit(mut self, block: &Block, config: &ChainConfig) -> Result<BlockExecutionOutput, ExecutionError> {
        let receipts = std::mem::take(&mut self.receipts);
        let mut output = self.commit_without_receipts(block, config, &receipts)?;
        output.receipts = receipts;
        Ok(output)
    }

    /// As `commit`, but leaves the receipts with the caller (who may be hashing them
    /// meanwhile): the returned output's `receipts` is empty.
    pub fn commit_without_receipts(self, block: &Block, config: &ChainConfig, receipts: &[Receipt]) -> Result<BlockExecutionOutput, ExecutionError> {
        let ExecutedTransactions { mut state, envs, changes, gas, .. } = self;
        let t_commit = std::time::Instant::now();
        for evm_state in changes {
            state.bump_bal_index();
            state.commit(evm_state);
        }
        let commit_time = t_commit.elapsed();
        let t_post = std::time::Instant::now();
        let requests = run_post_block(&mut state, &envs, block, config, receipts)?;
        let output = finish(state, true, Vec::new(), gas.block_gas(envs.fork), requests);
        tracing::trace!(
            block = block.header.number,
            ordered_commit_ms = commit_time.as_secs_f64() * 1e3,
            post_and_bundle_ms = t_post.elapsed().as_secs_f64() * 1e3,
            "parallel commit phases"
        );
        Ok(output)
    }
}
