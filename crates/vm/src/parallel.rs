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
//! Verdicts: the parallel path names a block's error only when it is sure to be the one
//! the sequential path names. When neither the pre-block system calls' writes (index 0)
//! nor any transaction's writes disagree with the header BAL, every transaction saw its
//! exact pre-state, so the first failure in block order (invalid transaction or block
//! gas overflow) is the same failure the sequential path finds. Whenever the header BAL
//! cannot be trusted that far, the caller must let the sequential path decide
//! (`ParallelRun::BalMismatch`): when it does not have the canonical form both
//! readings of it rely on (`bal_index::parallel_form_violation`), when revm cannot load
//! it (a code change that is not valid bytecode, such as a malformed EIP-7702
//! designator), when a transaction reads state it does not list, or when some writes
//! disagree with it (later transactions may then have run on wrong state). Failures that
//! do not depend on the BAL are reported in the sequential path's order: a bad signature
//! anywhere in the block before anything else, then the pre-block system calls.

use crate::bal_index::{
    diff_writes, parallel_form_violation, writes_at_index, writes_by_index, IndexWrites,
};
use crate::env::tx_env;
use crate::error::{transaction_error, DatabaseError, ExecutionError, HeaderBalError};
use crate::evm::EvmConfig;
use crate::gas::GasCounter;
use crate::output::{access_of, build_receipt, finish, BlockExecutionOutput, TxAccess};
use crate::profile::{ParallelProfile, TxCost};
use crate::senders::{recover_sender, recover_senders, Recovery};
use crate::system::{run_post_block, run_pre_block};
use alloy_consensus::{Eip658Value, Transaction as _, Typed2718};
use alloy_primitives::{Address, B256, U256};
use ethrex_common::{Block, BlockAccessList, ChainConfig, Receipt, Transaction};
use rayon::prelude::*;
use revm::context_interface::result::ResultGas;
use revm::database::{State, WrapDatabaseRef};
use revm::database_interface::DatabaseRef;
use revm::state::bal::{Bal, BlockAccessIndex};
use revm::state::{AccountInfo, Bytecode, EvmState};
use revm::{DatabaseCommit, ExecuteEvm};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// One transaction's result, computed on a worker.
struct TxRun {
    sender: Address,
    /// Gas, the receipt (built in the worker, bloom included; its cumulative gas is set
    /// in block order) and the state changes.
    result: Result<(ResultGas, Receipt, EvmState), ExecutionError>,
    /// First disagreement between this transaction's run and the header BAL.
    bal_mismatch: Option<BalUnusable>,
    /// What it accessed (recorded on the per-transaction path only).
    access: Option<TxAccess>,
}

/// Where each transaction's pre-state comes from on the parallel path
/// (`run_transactions_parallel_on`; `run_transactions_parallel` is the header BAL's case).
#[derive(Clone, Copy)]
pub enum TxPreState<'b> {
    /// An EIP-7928 BAL: the pre-block state plus the BAL's writes at lower indices, every
    /// transaction's writes checked against the BAL's.
    Bal {
        /// The BAL.
        bal: &'b BlockAccessList,
        /// What a read of state the BAL does not list is.
        unlisted: UnlistedReads,
    },
    /// An overlay the caller gives per transaction over the pre-block state. Nothing
    /// checks it here: the caller must check the execution's outcome itself.
    Overlay(&'b dyn TxOverlay),
}

/// What a transaction's read of state its BAL does not list is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnlistedReads {
    /// The BAL's fault (EIP-7928: a BAL lists everything a block reads).
    Mismatch,
    /// Read from the database (a BAL that carries writes only).
    FromDatabase,
}

/// The state each transaction starts from, as far as an overlay gives it.
pub trait TxOverlay: Sync {
    /// The account as the transaction at block access index `index` finds it:
    /// `Some(None)` when it does not exist, `None` when not given. An `AccountInfo` may
    /// carry its code (code the block itself deployed, which the store does not hold).
    fn account(&self, index: u64, address: Address) -> Option<Option<AccountInfo>>;
    /// The slot as the transaction at `index` finds it; `None` when not given.
    fn slot(&self, index: u64, address: Address, slot: U256) -> Option<U256>;
}

/// The database as one transaction of the per-transaction path sees it.
struct PreTxView<'a, DB> {
    db: &'a DB,
    values: &'a dyn TxOverlay,
    index: u64,
}

impl<DB: DatabaseRef> DatabaseRef for PreTxView<'_, DB> {
    type Error = DB::Error;

    fn basic_ref(&self, address: Address) -> Result<Option<AccountInfo>, Self::Error> {
        match self.values.account(self.index, address) {
            Some(value) => Ok(value),
            None => self.db.basic_ref(address),
        }
    }

    fn code_by_hash_ref(&self, code_hash: B256) -> Result<Bytecode, Self::Error> {
        self.db.code_by_hash_ref(code_hash)
    }

    fn storage_ref(&self, address: Address, index: U256) -> Result<U256, Self::Error> {
        match self.values.slot(self.index, address, index) {
            Some(value) => Ok(value),
            None => self.db.storage_ref(address, index),
        }
    }

    fn block_hash_ref(&self, number: u64) -> Result<B256, Self::Error> {
        self.db.block_hash_ref(number)
    }
}

/// Where the workers' transactions read their pre-state.
enum Source<'b> {
    Bal { bal: Arc<Bal>, header_writes: Vec<IndexWrites>, fallback: bool },
    Overlay(&'b dyn TxOverlay),
}

/// What every worker shares: the block's EVM configuration and the header BAL, in
/// revm's form (what transactions read) and by index (what their writes are checked
/// against).
struct Shared<'a, DB> {
    db: &'a DB,
    evm_config: &'a EvmConfig,
    source: Source<'a>,
}

impl<DB: DatabaseRef + Sync> Shared<'_, DB> {
    fn run_one(&self, index: usize, tx: &Transaction, sender: Address) -> TxRun {
        match &self.source {
            Source::Bal { bal, header_writes, fallback } => {
                self.run_on_bal(index, tx, sender, bal, header_writes, *fallback)
            }
            Source::Overlay(values) => self.run_per_tx(index, tx, sender, *values),
        }
    }

    /// One transaction on the pre-state the values give it; its accesses recorded.
    fn run_per_tx(
        &self,
        index: usize,
        tx: &Transaction,
        sender: Address,
        values: &dyn TxOverlay,
    ) -> TxRun {
        let view = PreTxView { db: self.db, values, index: index as u64 + 1 };
        let mut state = State::builder().with_database(WrapDatabaseRef(&view)).build();
        match self.evm_config.evm(&mut state).transact(tx_env(tx, sender)) {
            Err(e) => TxRun {
                sender,
                result: Err(transaction_error(index, e)),
                bal_mismatch: None,
                access: None,
            },
            Ok(r) => {
                let access = access_of(&r.state);
                let gas = *r.result.gas();
                let success = r.result.is_success();
                let receipt =
                    build_receipt(tx.ty(), Eip658Value::Eip658(success), 0, r.result.into_logs());
                TxRun {
                    sender,
                    result: Ok((gas, receipt, r.state)),
                    bal_mismatch: None,
                    access: Some(access),
                }
            }
        }
    }

    fn run_on_bal(
        &self,
        index: usize,
        tx: &Transaction,
        sender: Address,
        bal: &Arc<Bal>,
        header_writes: &[IndexWrites],
        fallback: bool,
    ) -> TxRun {
        let bal_index = index + 1;
        let mut state = State::builder()
            .with_database(WrapDatabaseRef(self.db))
            .with_bal(bal.clone())
            .with_bal_builder()
            .build();
        state.set_allow_bal_db_fallback(fallback);
        state.set_bal_index(BlockAccessIndex(bal_index as u64));
        let outcome = self.evm_config.evm(&mut state).transact(tx_env(tx, sender));
        match outcome {
            Err(e) => {
                let error = transaction_error(index, e);
                // A read of an account or slot the BAL does not list is the BAL's fault, not
                // the transaction's; a failing read of the state underneath is retried by
                // the sequential path, which then decides.
                let bal_mismatch = match &error {
                    ExecutionError::Bal(e) => {
                        Some(BalUnusable::Read { index: bal_index, error: e.clone() })
                    }
                    ExecutionError::Database(e) => {
                        Some(BalUnusable::StateRead { index: bal_index, error: e.clone() })
                    }
                    _ => None,
                };
                TxRun { sender, result: Err(error), bal_mismatch, access: None }
            }
            Ok(r) => {
                state.bal_state.commit(&r.state);
                let produced = state
                    .take_built_alloy_bal()
                    .map(|partial| writes_at_index(&partial, bal_index as u64))
                    .unwrap_or_default();
                let bal_mismatch = diff_writes(bal_index, &header_writes[bal_index], &produced)
                    .map(BalUnusable::Writes);
                let gas = *r.result.gas();
                let success = r.result.is_success();
                let receipt =
                    build_receipt(tx.ty(), Eip658Value::Eip658(success), 0, r.result.into_logs());
                TxRun { sender, result: Ok((gas, receipt, r.state)), bal_mismatch, access: None }
            }
        }
    }
}

/// In which order the workers take a block's transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Schedule {
    /// Largest gas limit first (greedy longest-processing-time scheduling; the gas limit
    /// stands in for the unknown cost).
    #[default]
    LongestFirst,
    /// Block order: the baseline the longest-first schedule is measured against.
    BlockOrder,
}

/// Runs every transaction on the pool and returns the results in block order, with each
/// one's run time on its worker (I/O included).
///
/// The block's wall time is bounded below by its longest transaction, and a long one
/// picked up last leaves the other cores idle while it runs. So with
/// `Schedule::LongestFirst` the workers take transactions from one shared queue ordered
/// by gas limit, largest first.
fn run_scheduled<F>(
    txs: &[Transaction],
    schedule: Schedule,
    run: F,
) -> Result<(Vec<TxRun>, Vec<std::time::Duration>), ExecutionError>
where
    F: Fn(usize, &Transaction) -> TxRun + Sync,
{
    let mut order: Vec<usize> = (0..txs.len()).collect();
    if schedule == Schedule::LongestFirst {
        order.sort_by_key(|&i| std::cmp::Reverse(txs[i].gas_limit()));
    }
    let next = AtomicUsize::new(0);
    let workers = rayon::current_num_threads().clamp(1, txs.len().max(1));
    let done: Vec<Vec<(usize, TxRun, std::time::Duration)>> = (0..workers)
        .into_par_iter()
        .with_max_len(1)
        .map(|_| {
            let mut mine = Vec::new();
            while let Some(&index) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
                let t = std::time::Instant::now();
                let result = run(index, &txs[index]);
                mine.push((index, result, t.elapsed()));
            }
            mine
        })
        .collect();
    let mut slots: Vec<Option<TxRun>> = std::iter::repeat_with(|| None).take(txs.len()).collect();
    let mut times = vec![std::time::Duration::ZERO; txs.len()];
    for (index, result, took) in done.into_iter().flatten() {
        slots[index] = Some(result);
        times[index] = took;
    }
    let runs = slots
        .into_iter()
        .enumerate()
        .map(|(index, slot)| {
            slot.ok_or_else(|| {
                ExecutionError::Database(DatabaseError::message(format!(
                    "transaction {index} was never run"
                )))
            })
        })
        .collect::<Result<_, _>>()?;
    Ok((runs, times))
}

/// The header BAL in the two forms the workers use, or why it cannot drive parallel
/// execution. The form check runs beside the conversions, which are safe on any BAL.
fn prepare_bal(
    bal: &BlockAccessList,
    indices: usize,
) -> Result<(Arc<Bal>, Vec<IndexWrites>), BalUnusable> {
    let (violation, (revm_bal, header_writes)) = rayon::join(
        || parallel_form_violation(bal, indices),
        || rayon::join(|| Bal::try_from(bal.clone()), || writes_by_index(bal, indices)),
    );
    if let Some(violation) = violation {
        return Err(BalUnusable::NotCanonical(violation));
    }
    let revm_bal = revm_bal.map_err(|e| BalUnusable::Load(HeaderBalError::Code(e)))?;
    Ok((Arc::new(revm_bal), header_writes))
}

/// The transactions of a block, run in parallel and checked, but not yet committed:
/// their receipts are final (cumulative gas included), so they can be hashed and stored
/// while `commit` folds the state changes into the block's state in block order.
pub struct ExecutedTransactions<'a, DB: DatabaseRef> {
    state: State<WrapDatabaseRef<&'a DB>>,
    evm_config: EvmConfig,
    changes: Vec<EvmState>,
    gas: GasCounter,
    /// In block order, cumulative gas set. A caller that takes them out (to hash them
    /// beside the commit) hands them back through `commit_without_receipts`.
    pub receipts: Vec<Receipt>,
    /// Recovered in the workers, in block order.
    pub senders: Vec<Address>,
    /// The longest single transaction's run on its worker (sender recovery and reads
    /// included): the block's critical path.
    pub longest_tx: std::time::Duration,
    /// What each transaction accessed, in block order (the per-transaction path only).
    pub tx_accesses: Vec<TxAccess>,
    /// Where the time went (the commit's share is filled in by `commit`).
    pub profile: ParallelProfile,
}

/// What the parallel path concluded.
// Returned once per block and unpacked at once: boxing the large variant would only add
// an allocation.
#[allow(clippy::large_enum_variant)]
pub enum ParallelRun<'a, DB: DatabaseRef> {
    /// Every transaction ran, and agreed with the header BAL; the changes await
    /// `ExecutedTransactions::commit`.
    Ran(ExecutedTransactions<'a, DB>),
    /// The header BAL cannot drive parallel execution (malformed, or contradicted by
    /// execution); the verdict must come from sequential execution. Why, for logs: the
    /// first problem found.
    BalMismatch(BalUnusable),
}

/// Why a header BAL cannot drive parallel execution (the sequential path then decides).
#[derive(Debug, Clone, thiserror::Error)]
pub enum BalUnusable {
    /// It is not in the canonical form the parallel path's indexes rely on.
    #[error("header BAL not in canonical form: {0}")]
    NotCanonical(String),
    /// revm cannot load it.
    #[error("header BAL cannot be loaded: {0}")]
    Load(HeaderBalError),
    /// The writes at an index differ from what execution wrote there.
    #[error("{0}")]
    Writes(String),
    /// The transaction at `index` read state the BAL does not list, or a code change
    /// did not decode.
    #[error("index {index}: {error}")]
    Read {
        /// The transaction's block access index.
        index: usize,
        /// What revm reported.
        error: HeaderBalError,
    },
    /// Reading the state underneath failed (retried by the sequential path).
    #[error("index {index}: reading the state failed: {error}")]
    StateRead {
        /// The transaction's block access index.
        index: usize,
        /// The store's error.
        error: DatabaseError,
    },
    /// The BAL was not prepared for the workers.
    #[error("the header BAL was not prepared")]
    NotPrepared,
}

/// Runs `block`'s transactions in parallel, reading through `db` (the shared cache over
/// the parent's state) and the header `bal`: pre-block system calls, every transaction
/// on the pool (taken in `schedule`'s order), and the verdicts in block order. Nothing is
/// committed yet (`ExecutedTransactions::commit`).
pub fn run_transactions_parallel<'a, DB>(
    db: &'a DB,
    block: &Block,
    config: &ChainConfig,
    bal: &BlockAccessList,
    schedule: Schedule,
) -> Result<ParallelRun<'a, DB>, ExecutionError>
where
    DB: DatabaseRef + Sync,
{
    run_transactions_parallel_on(
        db,
        block,
        config,
        TxPreState::Bal { bal, unlisted: UnlistedReads::Mismatch },
        schedule,
    )
}

/// As `run_transactions_parallel`, with each transaction's pre-state from `pre`: an
/// EIP-7928 BAL (with or without reads of what it does not list), or an overlay per
/// transaction. With an overlay nothing is checked against a BAL
/// (`ParallelRun::BalMismatch` does not occur) and the accesses are recorded.
pub fn run_transactions_parallel_on<'a, DB>(
    db: &'a DB,
    block: &Block,
    config: &ChainConfig,
    pre: TxPreState<'_>,
    schedule: Schedule,
) -> Result<ParallelRun<'a, DB>, ExecutionError>
where
    DB: DatabaseRef + Sync,
{
    let header = &block.header;
    let evm_config = EvmConfig::new(config, header);
    let fork = evm_config.fork();
    let txs = &block.body.transactions;
    // Independent preparations, side by side: the header BAL in revm's form (what the
    // workers read) and by index (what they are checked against), and the pre-block
    // system calls on the state everything is finally committed into.
    let t_setup = std::time::Instant::now();
    let ((prepared, prepare_time), (pre_block, pre_block_time)) = rayon::join(
        || {
            timed(|| match pre {
                TxPreState::Bal { bal, unlisted } => {
                    let fallback = unlisted == UnlistedReads::FromDatabase;
                    prepare_bal(bal, txs.len() + 2).map(|p| Some((p, fallback)))
                }
                TxPreState::Overlay(_) => Ok(None),
            })
        },
        || {
            timed(|| {
                let mut state = State::builder()
                    .with_database(WrapDatabaseRef(db))
                    .with_bundle_update()
                    .with_bal_builder()
                    .build();
                state.reset_bal_index();
                run_pre_block(&mut state, &evm_config, config, header).map(|()| state)
            })
        },
    );
    let state = match pre_block {
        Ok(state) => state,
        // Sequential import recovers every sender before the system calls run.
        Err(e) => return Err(recover_senders(txs, Recovery::Pool).err().unwrap_or(e)),
    };
    let source = match (prepared, pre) {
        (Err(reason), _) => return Ok(ParallelRun::BalMismatch(reason)),
        (Ok(Some(((bal, header_writes), fallback))), _) => {
            // Every transaction reads the header's index-0 writes as its starting state,
            // so they must be exactly what the system calls wrote before anything else is
            // trusted.
            let pre_block_writes = state
                .bal_state
                .bal_builder
                .clone()
                .map(|b| writes_at_index(&b.into_alloy_bal(), 0))
                .unwrap_or_default();
            if let Some(reason) = diff_writes(0, &header_writes[0], &pre_block_writes) {
                return Ok(ParallelRun::BalMismatch(BalUnusable::Writes(reason)));
            }
            Source::Bal { bal, header_writes, fallback }
        }
        (Ok(None), TxPreState::Overlay(values)) => Source::Overlay(values),
        // A BAL source is always prepared; should that ever change, the sequential path
        // decides rather than a panic.
        (Ok(None), TxPreState::Bal { .. }) => {
            return Ok(ParallelRun::BalMismatch(BalUnusable::NotPrepared))
        }
    };
    let setup_time = t_setup.elapsed();

    let t_parallel = std::time::Instant::now();
    let shared = Shared { db, evm_config: &evm_config, source };
    let (runs, tx_times) =
        run_scheduled(txs, schedule, |index, tx| match recover_sender(index, tx) {
            Ok(sender) => shared.run_one(index, tx, sender),
            Err(e) => {
                TxRun { sender: Address::ZERO, result: Err(e), bal_mismatch: None, access: None }
            }
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
    let longest_tx = tx_times.iter().copied().max().unwrap_or_default();
    let t_verdicts = std::time::Instant::now();

    // Verdicts in block order, as the sequential path meets them; committing the state
    // changes cannot fail, so it is left to `commit`.
    let mut receipts = Vec::with_capacity(txs.len());
    let mut senders = Vec::with_capacity(txs.len());
    let mut changes = Vec::with_capacity(txs.len());
    let mut tx_accesses = Vec::new();
    let mut gas = GasCounter::default();
    for (index, (tx, run)) in txs.iter().zip(runs).enumerate() {
        senders.push(run.sender);
        tx_accesses.extend(run.access);
        // Same order as the sequential path: the gas check comes before the transaction.
        gas.check_fits(fork, header.gas_limit, index, tx.gas_limit())?;
        if let Some(reason) = run.bal_mismatch {
            return Ok(ParallelRun::BalMismatch(reason));
        }
        let (tx_gas, mut receipt, evm_state) = run.result?;
        gas.add(&tx_gas);
        if let Some(r) = receipt.as_receipt_with_bloom_mut() {
            r.receipt.cumulative_gas_used = gas.cumulative_tx_gas;
        }
        receipts.push(receipt);
        changes.push(evm_state);
    }
    let profile = ParallelProfile {
        prepare_bal: prepare_time,
        pre_block: pre_block_time,
        txs: txs
            .iter()
            .zip(tx_times)
            .map(|(tx, took)| TxCost { gas_limit: tx.gas_limit(), took })
            .collect(),
        verdicts: t_verdicts.elapsed(),
        commit: std::time::Duration::ZERO,
    };
    tracing::trace!(
        block = header.number,
        bal_setup_ms = setup_time.as_secs_f64() * 1e3,
        parallel_ms = parallel_time.as_secs_f64() * 1e3,
        "parallel execution phases"
    );
    Ok(ParallelRun::Ran(ExecutedTransactions {
        state,
        evm_config,
        changes,
        gas,
        receipts,
        senders,
        longest_tx,
        tx_accesses,
        profile,
    }))
}

/// `f`'s result with the time it took on this thread.
fn timed<R>(f: impl FnOnce() -> R) -> (R, std::time::Duration) {
    let t = std::time::Instant::now();
    (f(), t.elapsed())
}

impl<DB: DatabaseRef> ExecutedTransactions<'_, DB> {
    /// Commits the transactions' changes in block order (which rebuilds the whole BAL
    /// exactly as the sequential path does) and runs the post-block stage on top.
    pub fn commit(
        mut self,
        block: &Block,
        config: &ChainConfig,
    ) -> Result<BlockExecutionOutput, ExecutionError> {
        let receipts = std::mem::take(&mut self.receipts);
        let mut output = self.commit_without_receipts(block, config, &receipts)?;
        output.receipts = receipts;
        Ok(output)
    }

    /// As `commit`, but leaves the receipts with the caller (who may be hashing them
    /// meanwhile): the returned output's `receipts` is empty.
    pub fn commit_without_receipts(
        self,
        block: &Block,
        config: &ChainConfig,
        receipts: &[Receipt],
    ) -> Result<BlockExecutionOutput, ExecutionError> {
        let ExecutedTransactions {
            mut state,
            evm_config,
            changes,
            gas,
            longest_tx,
            tx_accesses,
            mut profile,
            ..
        } = self;
        let t_commit = std::time::Instant::now();
        for evm_state in changes {
            state.bump_bal_index();
            state.commit(evm_state);
        }
        let commit_time = t_commit.elapsed();
        let t_post = std::time::Instant::now();
        let requests = run_post_block(&mut state, &evm_config, block, config, receipts)?;
        let mut output = finish(state, Vec::new(), gas.block_gas(evm_config.fork()), requests);
        output.longest_tx = longest_tx;
        output.tx_accesses = tx_accesses;
        profile.commit = t_commit.elapsed();
        output.profile = Some(profile);
        tracing::trace!(
            block = block.header.number,
            ordered_commit_ms = commit_time.as_secs_f64() * 1e3,
            post_and_bundle_ms = t_post.elapsed().as_secs_f64() * 1e3,
            "parallel commit phases"
        );
        Ok(output)
    }
}
