//! The import pipeline: every block that enters the node (fixture, chain file, Engine
//! API, bench) goes through `Blockchain::import_block`.
//!
//! Order of checks: header against parent, body against header, BAL shape, sender
//! recovery, execution, results against header, state root; then one atomic commit.
//! Nothing is written unless every check passed.

use crate::error::BlockError;
use crate::metrics::{record_cache_stats, record_metrics};
use crate::state_root::{changes_from_bal, compute_state_update_with};
use crate::validation::{
    account_order_violation, validate_bal_form, validate_bal_hash, validate_body,
    validate_execution_output, validate_header_against_parent, ReceiptsCommitment,
};
use alloy_primitives::{Address, B256};
use ethrex_common::{Block, BlockAccessList, BlockWithBal, ChainConfig, Fork, RecoveredBlock};
use ethrex_storage::{BlockCommit, PreparedCommit, Store};
use ethrex_vm::warmer::warm_from_bal;
use ethrex_vm::{
    execute_block_sequential, run_transactions_parallel, AccountChange, BatchLayers,
    BlockExecutionOutput, CachingDb, ExecutedTransactions, ParallelRun, Schedule, StateSource,
    StoreDb,
};
use rayon::prelude::*;
use revm::database_interface::DatabaseRef;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Wall time of each stage of one block's import.
#[derive(Debug, Clone, Copy, Default)]
pub struct BlockTimings {
    /// Sender recovery (inside `exec` on the parallel path, which recovers per worker).
    pub recover: Duration,
    /// Prefetching the BAL's state before execution (`Prefetch::First`; 0 otherwise).
    pub warmer: Duration,
    /// Execution, including the parallel path's ordered commit.
    pub exec: Duration,
    /// Gas, receipts, bloom, requests and BAL against the header (and a BAL design
    /// against execution, `Blockchain::import_block_with_design`).
    pub validate: Duration,
    /// The state root and the block's batch, after execution (what was left of it).
    pub merkle: Duration,
    /// Handing the batch to the store (in memory; the disk write is in the background).
    pub store: Duration,
    /// The whole import, from the parent lookup to the commit.
    pub total: Duration,
    /// The longest single transaction's execution, reads included (within `exec`): the
    /// lower bound parallel execution cannot go under.
    pub longest_tx: Duration,
    /// A BAL design's check: reading the parent state's values of the keys whose values
    /// the design carries, on the I/O pool beside execution (within `exec`, which waits
    /// for it); zero elsewhere.
    pub design_check_reads: Duration,
}

/// How a block was executed, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecutionPath {
    /// Transactions ran in parallel on the header BAL.
    Parallel,
    /// Transactions ran in parallel on the header BAL, together with the other blocks of
    /// a mega block (`Blockchain::import_batch`).
    ParallelBatch,
    /// No BAL: the block is from before Amsterdam.
    SequentialNoBal,
    /// Fewer transactions than the parallel threshold.
    SequentialSmallBlock,
    /// Parallel execution switched off by configuration.
    SequentialDisabled,
    /// The header BAL cannot drive parallel execution (accounts out of canonical order,
    /// or execution contradicted it); the sequential path executed and judged the block.
    SequentialBalUnusable,
    /// A BAL design's consumer executed the block (`Blockchain::import_block_with_design`).
    Design(ethrex_bal::BalDesign),
}

impl ExecutionPath {
    /// A short human-readable name, as logged and used as the metrics label.
    pub fn describe(self) -> &'static str {
        match self {
            ExecutionPath::Parallel => "parallel",
            ExecutionPath::ParallelBatch => "parallel (mega block)",
            ExecutionPath::SequentialNoBal => "sequential (no BAL before Amsterdam)",
            ExecutionPath::SequentialSmallBlock => "sequential (below parallel threshold)",
            ExecutionPath::SequentialDisabled => "sequential (parallel execution disabled)",
            ExecutionPath::SequentialBalUnusable => {
                "sequential (header BAL unusable for parallel execution)"
            }
            ExecutionPath::Design(_) => "BAL design consumer",
        }
    }
}

/// What the parallel path costs per block beyond the transactions themselves (preparing
/// the BAL's two indexes, one state per transaction, the ordered commit), expressed in gas
/// of sequential execution. An estimate: on the stress fixture at 2 threads, blocks of a
/// few plain transfers import as fast either way, which puts it near 10 transfers of work.
pub const PARALLEL_OVERHEAD_GAS: u64 = 200_000;

/// Whether the parallel path is predicted to be faster for `txs` on `threads` workers.
/// Each transaction's cost is taken as its gas limit (the only figure known before it
/// runs); the parallel path takes at least its longest transaction and at best an even
/// share of the work per worker, plus `PARALLEL_OVERHEAD_GAS`.
pub fn parallel_pays(txs: &[ethrex_common::Transaction], threads: usize) -> bool {
    use alloy_consensus::Transaction as _;
    if txs.len() < 2 || threads < 2 {
        return false;
    }
    let (work, longest) = txs.iter().fold((0u64, 0u64), |(work, longest), tx| {
        (work.saturating_add(tx.gas_limit()), longest.max(tx.gas_limit()))
    });
    let parallel = (work / threads as u64).max(longest).saturating_add(PARALLEL_OVERHEAD_GAS);
    parallel < work
}

/// How blocks are executed.
#[derive(Debug, Clone, Copy)]
pub struct ImportOptions {
    /// Use the BAL-driven parallel path for Amsterdam blocks, and the rayon pool for the
    /// rest of the import. Off: the whole import runs on one thread (single-core baseline).
    pub parallel: bool,
    /// Blocks with fewer transactions run sequentially (`Some(0)`: always parallel);
    /// `None`: the cost model decides per block (`parallel_pays`).
    pub parallel_threshold: Option<usize>,
    /// Whether and when to read the state the BAL names into the block's cache.
    /// Off by default: the store keeps the flat state in memory, where the prefetch
    /// competes with execution for the cores (measurements in `docs/benchmarks.md`); on
    /// cold state it keeps reads in flight on the I/O pool (`Blockchain::with_io_pool`).
    pub prefetch: Prefetch,
    /// Compute the state root from the BAL while transactions execute.
    pub parallel_trie: bool,
    /// In which order the parallel path's workers take the transactions.
    pub schedule: Schedule,
}

/// When the parallel path reads the state the BAL names (the I/O designs of BAL-driven
/// execution).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Prefetch {
    /// Never: every transaction reads what it needs when it needs it.
    #[default]
    Off,
    /// Beside execution ("parallel I/O"): transactions start at once and read on demand,
    /// while the I/O pool reads everything the BAL names ahead of them.
    Beside,
    /// Before execution ("batched I/O"): the I/O pool reads everything the BAL names,
    /// then the transactions run on a warm cache.
    First,
}

impl Default for ImportOptions {
    fn default() -> Self {
        Self {
            parallel: true,
            parallel_threshold: None,
            prefetch: Prefetch::Off,
            parallel_trie: true,
            schedule: Schedule::LongestFirst,
        }
    }
}

/// What importing one block did.
#[derive(Debug, Clone)]
pub struct ImportOutcome {
    /// The block's hash.
    pub hash: B256,
    /// The block's number.
    pub number: u64,
    /// How many transactions it holds.
    pub tx_count: usize,
    /// The gas it used, as its header says and execution confirmed.
    pub gas_used: u64,
    /// How it was executed.
    pub path: ExecutionPath,
    /// The state root came from the BAL, computed while transactions executed.
    pub root_from_bal: bool,
    /// The wall time of each stage.
    pub timings: BlockTimings,
    /// The state changes execution produced, kept only when asked
    /// (`Blockchain::with_kept_changes`; `None` otherwise).
    pub changes: Option<Arc<StateChanges>>,
}

/// A block's executed state changes (what its state update was built from), handed to a
/// caller keeping a second state commitment beside the MPT (the import bench's binary
/// trie).
#[derive(Debug, Clone, Default)]
pub struct StateChanges {
    /// Changed accounts with their post-block values, sorted by address.
    pub accounts: Vec<AccountChange>,
    /// Bytecode the block deployed, by hash.
    pub codes: Vec<(B256, alloy_primitives::Bytes)>,
}

/// A chain on a store: imports blocks (`import_block`), builds them (`build_block`) and
/// moves the head (`set_head`).
pub struct Blockchain {
    /// Where the chain and its state live.
    pub store: Store,
    /// The network's chain id and fork schedule.
    pub config: ChainConfig,
    /// How blocks are executed.
    pub options: ImportOptions,
    /// With parallel execution off, blocks are imported on this one-thread pool, so the
    /// whole import (sender recovery, execution, merkleization) uses one core.
    single_core: std::sync::OnceLock<rayon::ThreadPool>,
    /// Where the BAL prefetch runs; `None`: the current pool.
    io_pool: Option<Arc<rayon::ThreadPool>>,
    /// Where execution reads the parent's accounts and storage; `None`: the flat tables.
    state_source: Option<Arc<dyn StateSource>>,
    /// Hand every imported block's state changes back in its `ImportOutcome`.
    keep_changes: bool,
}

/// A batch import stopped at a block: the blocks before it are imported.
#[derive(Debug, thiserror::Error)]
#[error("block {number}: {source}")]
pub struct BatchError {
    /// The block that failed.
    pub number: u64,
    /// Why.
    #[source]
    pub source: BlockError,
    /// The blocks imported before it, in order.
    pub imported: Vec<ImportOutcome>,
}

/// A state root computed from the BAL alone, alongside execution. It is used only when
/// the changes it was computed from equal the ones execution produced.
struct BalMerkleization {
    changes: Vec<AccountChange>,
    root: B256,
    update: ethrex_storage::StateUpdate,
    change_set: ethrex_storage::ChangeSet,
}

/// The BAL-derived state root with the block's batch already built from it.
pub(crate) struct RootFromBal {
    changes: Vec<AccountChange>,
    root: B256,
    prepared: PreparedCommit,
}

/// A block executed by whichever path, with what was computed alongside.
pub(crate) struct Executed {
    pub(crate) senders: Vec<Address>,
    pub(crate) output: BlockExecutionOutput,
    pub(crate) path: ExecutionPath,
    /// Computed beside the parallel path's ordered commit; otherwise during validation.
    pub(crate) receipts: Option<ReceiptsCommitment>,
    pub(crate) from_bal: Option<RootFromBal>,
}

/// Recovers every sender on the rayon pool; the first failing index is reported.
pub fn recover_senders(block: &ethrex_common::Block) -> Result<Vec<Address>, BlockError> {
    Ok(ethrex_vm::recover_senders(&block.body.transactions, true)?)
}

impl Blockchain {
    /// A chain on `store` (which must hold a genesis) with the default import options.
    pub fn new(store: Store, config: ChainConfig) -> Self {
        Self {
            store,
            config,
            options: ImportOptions::default(),
            single_core: std::sync::OnceLock::new(),
            io_pool: None,
            state_source: None,
            keep_changes: false,
        }
    }

    /// The same chain executing on accounts and storage read from `source` instead of the
    /// flat tables (code stays the store's; merkleization still reads the store). For
    /// research on other state layouts: `source` must hold the parent's state of every
    /// block imported.
    pub fn with_state_source(mut self, source: Arc<dyn StateSource>) -> Self {
        self.state_source = Some(source);
        self
    }

    /// The same chain returning each imported block's state changes
    /// (`ImportOutcome::changes`).
    pub fn with_kept_changes(mut self) -> Self {
        self.keep_changes = true;
        self
    }

    /// The parent's state as execution reads it: the store, through the state source if
    /// there is one.
    pub(crate) fn state_db(&self, parent_hash: B256, parent_number: u64) -> StoreDb {
        StoreDb::new(self.store.clone(), parent_hash, parent_number)
            .with_source(self.state_source.clone())
    }

    /// The same chain prefetching on `pool`: a pool sized for I/O rather than for the
    /// cores, so a few cores keep many reads in flight (see `Prefetch`).
    pub fn with_io_pool(mut self, pool: Arc<rayon::ThreadPool>) -> Self {
        self.io_pool = Some(pool);
        self
    }

    pub(crate) fn on_io_pool<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        match &self.io_pool {
            Some(pool) => pool.install(f),
            None => f(),
        }
    }

    /// The parent of a block with `header`, which must be the head: only the head's state
    /// is there to execute on.
    pub(crate) fn head_parent(
        &self,
        header: &ethrex_common::Header,
    ) -> Result<ethrex_common::Header, BlockError> {
        let parent = self
            .store
            .header(&header.parent_hash)?
            .ok_or(BlockError::UnknownParent(header.parent_hash))?;
        if self.store.head()? != Some(header.parent_hash) {
            return Err(BlockError::ParentStateUnavailable(header.parent_hash));
        }
        Ok(parent)
    }

    /// The same chain importing with `options`.
    pub fn with_options(mut self, options: ImportOptions) -> Self {
        self.options = options;
        self
    }

    fn parallel_pays(&self, txs: &[ethrex_common::Transaction]) -> bool {
        match self.options.parallel_threshold {
            Some(min) => txs.len() >= min,
            None => parallel_pays(txs, rayon::current_num_threads()),
        }
    }

    fn choose_path(&self, block: &Block, bal: Option<&BlockAccessList>) -> ExecutionPath {
        match bal {
            None => ExecutionPath::SequentialNoBal,
            Some(_) if !self.options.parallel => ExecutionPath::SequentialDisabled,
            Some(_) if !self.parallel_pays(&block.body.transactions) => {
                ExecutionPath::SequentialSmallBlock
            }
            // The parallel path indexes the BAL by address; a non-canonical account list
            // is judged by the sequential path after execution.
            Some(bal) if account_order_violation(bal).is_some() => {
                ExecutionPath::SequentialBalUnusable
            }
            Some(_) => ExecutionPath::Parallel,
        }
    }

    /// The parallel path: transactions (and their sender recovery) on the rayon pool,
    /// with the BAL-derived state root computed alongside; then, while the transactions'
    /// changes are committed in block order, the receipts are hashed and the block's
    /// batch is built from the BAL-derived state. `None`: the header BAL proved
    /// inconsistent, and the sequential path must decide.
    fn execute_parallel(
        &self,
        cache: &CachingDb<StoreDb>,
        hash: B256,
        block: &Block,
        bal: &BlockAccessList,
        parent: &ethrex_common::Header,
        timings: &mut BlockTimings,
    ) -> Result<Option<Executed>, BlockError> {
        if self.options.prefetch == Prefetch::First {
            let t = Instant::now();
            self.on_io_pool(|| warm_from_bal(cache, bal))
                .map_err(|e| BlockError::Storage(crate::error::StorageFault::new(e)))?;
            timings.warmer = t.elapsed();
        }
        // Warming and the BAL-derived state root need only the BAL, so they run beside
        // the transactions instead of before them.
        let t = Instant::now();
        let schedule = self.options.schedule;
        let (run, merkleized) = rayon::join(
            || run_transactions_parallel(cache, block, &self.config, bal, schedule),
            || -> Option<Result<BalMerkleization, BlockError>> {
                if self.options.prefetch == Prefetch::Beside {
                    if let Err(e) = self.on_io_pool(|| warm_from_bal(cache, bal)) {
                        return Some(Err(BlockError::Storage(crate::error::StorageFault::new(e))));
                    }
                }
                self.options.parallel_trie.then(|| {
                    let (changes, codes) = changes_from_bal(cache, bal)?;
                    let (root, update, change_set) = compute_state_update_with(
                        &self.store,
                        cache,
                        parent.state_root,
                        &changes,
                        codes,
                    )?;
                    Ok(BalMerkleization { changes, root, update, change_set })
                })
            },
        );
        let mut executed = match run? {
            ParallelRun::Ran(executed) => executed,
            ParallelRun::BalMismatch { reason } => {
                tracing::debug!(block = block.header.number, %reason, "BAL mismatch on the parallel path");
                return Ok(None);
            }
        };
        // A failure here only means the root is computed after execution instead.
        let merkleized = merkleized
            .and_then(|m| m.map_err(|e| tracing::debug!(%e, "BAL merkleization failed")).ok());
        let receipts = std::mem::take(&mut executed.receipts);
        let senders = std::mem::take(&mut executed.senders);
        let (output, (commitment, from_bal)) = rayon::join(
            || executed.commit_without_receipts(block, &self.config, &receipts),
            || {
                let from_bal = merkleized.map(|m| RootFromBal {
                    root: m.root,
                    changes: m.changes,
                    prepared: Store::prepare_block(BlockCommit {
                        hash,
                        block,
                        bal: Some(bal),
                        receipts: &receipts,
                        state: m.update,
                        change_set: m.change_set,
                    }),
                });
                (ReceiptsCommitment::of(&receipts), from_bal)
            },
        );
        let mut output = output?;
        output.receipts = receipts;
        timings.exec = t.elapsed();
        record_cache_stats(cache);
        Ok(Some(Executed {
            senders,
            output,
            path: ExecutionPath::Parallel,
            receipts: Some(commitment),
            from_bal,
        }))
    }

    /// Recovers the senders and executes on the parent's state by the chosen path. On the
    /// parallel path senders are recovered inside the execution workers, and the state
    /// root is also computed from the BAL at the same time (unless disabled).
    #[allow(clippy::too_many_arguments)]
    fn execute<V: DatabaseRef + Sync>(
        &self,
        cache: &CachingDb<StoreDb>,
        hash: B256,
        block: &Block,
        bal: Option<&BlockAccessList>,
        parent: &ethrex_common::Header,
        timings: &mut BlockTimings,
        prerun: Option<ExecutedTransactions<'_, V>>,
        design: Option<(ethrex_bal::BalDesign, &[u8])>,
    ) -> Result<Executed, BlockError> {
        if let Some(executed) = prerun {
            return self.finish_prerun(block, executed, timings);
        }
        if let Some(design) = design {
            return self.execute_design(cache, block, parent.number, design, timings);
        }
        let mut path = self.choose_path(block, bal);
        if let (ExecutionPath::Parallel, Some(header_bal)) = (path, bal) {
            match self.execute_parallel(cache, hash, block, header_bal, parent, timings)? {
                Some(executed) => return Ok(executed),
                None => path = ExecutionPath::SequentialBalUnusable,
            }
        }
        // With parallel execution switched off the whole import stays on this thread (the
        // single-core baseline); otherwise senders are recovered on the rayon pool.
        let t = Instant::now();
        let senders = ethrex_vm::recover_senders(&block.body.transactions, self.options.parallel)?;
        timings.recover = t.elapsed();
        let t = Instant::now();
        let output = execute_block_sequential(cache, block, &senders, &self.config, bal.is_some())?;
        timings.exec += t.elapsed();
        record_cache_stats(cache);
        Ok(Executed { senders, output, path, receipts: None, from_bal: None })
    }

    /// The rest of the parallel path for transactions a batch already ran: their changes
    /// committed in block order beside the receipts' hashing. The state root is then
    /// computed from execution's changes.
    fn finish_prerun<V: DatabaseRef + Sync>(
        &self,
        block: &Block,
        mut executed: ExecutedTransactions<'_, V>,
        timings: &mut BlockTimings,
    ) -> Result<Executed, BlockError> {
        let t = Instant::now();
        let receipts = std::mem::take(&mut executed.receipts);
        let senders = std::mem::take(&mut executed.senders);
        let (output, commitment) = rayon::join(
            || executed.commit_without_receipts(block, &self.config, &receipts),
            || ReceiptsCommitment::of(&receipts),
        );
        let mut output = output?;
        output.receipts = receipts;
        timings.exec += t.elapsed();
        Ok(Executed {
            senders,
            output,
            path: ExecutionPath::ParallelBatch,
            receipts: Some(commitment),
            from_bal: None,
        })
    }

    /// Imports `blocks` (consecutive, the first on the head) as one mega block: the
    /// transactions of every block run as one parallel unit, each block on the state its
    /// predecessors' BALs say it starts from (`ethrex_vm::BatchLayers`); then each block
    /// is validated, merkleized and committed in order exactly as `import_block` does
    /// (gas, receipts, BAL, requests, its own state root), and the batch reaches the
    /// database as one write.
    ///
    /// What a batch gives up: nothing in validation. A block that cannot join the unit
    /// (no BAL, a BAL not in canonical form, a code change that is not bytecode) or whose
    /// execution disagrees with its BAL ends the unit: it and the blocks after it are
    /// imported one by one, so every verdict is `import_block`'s. The price is that the
    /// later blocks' work was wasted, and the blocks of a batch become durable together.
    pub fn import_batch(&self, blocks: &[BlockWithBal]) -> Result<Vec<ImportOutcome>, BatchError> {
        /// Closes the write group however the import ends, a panic included.
        struct Group<'a>(&'a Store);
        impl Drop for Group<'_> {
            fn drop(&mut self) {
                if let Err(e) = self.0.end_group() {
                    tracing::error!(%e, "writing a mega block's group failed");
                }
            }
        }
        let group = Group(&self.store);
        self.store.begin_group();
        // A forced sequential import (a threshold no block reaches) stays sequential.
        let unit_allowed =
            self.options.parallel && self.options.parallel_threshold != Some(usize::MAX);
        let imported = if unit_allowed {
            self.import_batch_on_current_pool(blocks)
        } else {
            self.one_by_one(blocks, Vec::new())
        };
        std::mem::forget(group);
        let ended = self.store.end_group();
        match (imported, ended) {
            (Ok(outcomes), Ok(())) => Ok(outcomes),
            (Err(mut e), ended) => {
                if let Err(write) = ended {
                    tracing::error!(%write, "writing a mega block's group failed");
                    e.source = BlockError::Storage(crate::error::StorageFault::new(write));
                }
                Err(e)
            }
            (Ok(outcomes), Err(e)) => Err(BatchError {
                number: outcomes.last().map(|o| o.number).unwrap_or_default(),
                source: BlockError::Storage(crate::error::StorageFault::new(e)),
                imported: outcomes,
            }),
        }
    }

    fn one_by_one(
        &self,
        blocks: &[BlockWithBal],
        mut outcomes: Vec<ImportOutcome>,
    ) -> Result<Vec<ImportOutcome>, BatchError> {
        for block in blocks {
            let number = block.number();
            match self.import_block(block.clone()) {
                Ok(outcome) => outcomes.push(outcome),
                Err(source) => return Err(BatchError { number, source, imported: outcomes }),
            }
        }
        Ok(outcomes)
    }

    fn import_batch_on_current_pool(
        &self,
        blocks: &[BlockWithBal],
    ) -> Result<Vec<ImportOutcome>, BatchError> {
        let start = Instant::now();
        let head = match self.store.head_header() {
            Ok(Some(head)) => head,
            _ => return self.one_by_one(blocks, Vec::new()),
        };
        // The unit: the leading blocks that extend each other from the head, each with a
        // BAL the parallel path can use.
        let mut parent_hash = head.hash_slow();
        let mut parent = &head;
        let mut members = Vec::new();
        for block in blocks {
            let header = &block.block.header;
            // A member's header is checked before its transactions run, so a bad one
            // (a huge gas limit, say) cannot make the unit spend work on it.
            let usable = header.parent_hash == parent_hash
                && validate_header_against_parent(&self.config, header, parent).is_ok()
                && self.config.fork_at(header.timestamp) >= Fork::Amsterdam
                && block.bal.as_ref().is_some_and(|bal| {
                    validate_bal_form(header, bal, block.block.body.transactions.len()).is_ok()
                        && account_order_violation(bal).is_none()
                });
            if !usable {
                break;
            }
            parent_hash = header.hash_slow();
            parent = header;
            members.push((header.number, parent_hash, block.bal.as_ref().expect("checked")));
        }
        let (layers, taken) = BatchLayers::new(members.iter().map(|(n, h, b)| (*n, *h, *b)));
        if taken < 2 {
            return self.alone_then_batch(blocks, 0, Vec::new());
        }
        let base = CachingDb::new(self.state_db(head.hash_slow(), head.number));
        let views: Vec<_> = (0..taken).map(|k| layers.view(&base, k)).collect();
        let mut warmer = Duration::ZERO;
        if self.options.prefetch == Prefetch::First {
            let t = Instant::now();
            // The start state of everything the unit touches; what earlier blocks of the
            // batch write comes from their BALs, not the database.
            let warmed = self.on_io_pool(|| {
                members[..taken].par_iter().try_for_each(|(_, _, bal)| warm_from_bal(&base, bal))
            });
            if warmed.is_err() {
                return self.one_by_one(blocks, Vec::new());
            }
            warmer = t.elapsed();
        }
        let t = Instant::now();
        let schedule = self.options.schedule;
        let run_all = || -> Vec<_> {
            (0..taken)
                .into_par_iter()
                .map(|k| {
                    run_transactions_parallel(
                        &views[k],
                        &blocks[k].block,
                        &self.config,
                        members[k].2,
                        schedule,
                    )
                })
                .collect()
        };
        let runs = if self.options.prefetch == Prefetch::Beside {
            let (runs, _) = rayon::join(run_all, || {
                self.on_io_pool(|| {
                    members[..taken]
                        .par_iter()
                        .try_for_each(|(_, _, bal)| warm_from_bal(&base, bal))
                })
            });
            runs
        } else {
            run_all()
        };
        let unit_exec = t.elapsed();
        let setup = start.elapsed() - unit_exec - warmer;

        // Across the unit the critical path is its longest transaction, not the sum: the
        // unit's longest is reported on its first block, however the unit ends.
        let unit_longest = |mut outcomes: Vec<ImportOutcome>| {
            let longest = outcomes.iter().map(|o| o.timings.longest_tx).max().unwrap_or_default();
            for (k, outcome) in outcomes.iter_mut().enumerate() {
                outcome.timings.longest_tx = if k == 0 { longest } else { Duration::ZERO };
            }
            outcomes
        };
        let mut outcomes = Vec::with_capacity(blocks.len());
        for (k, run) in runs.into_iter().enumerate() {
            let executed = match run {
                Ok(ParallelRun::Ran(executed)) => executed,
                // The view or the BAL is wrong, or the block is invalid: from here on,
                // one by one, so the verdict is `import_block`'s.
                _ => return self.alone_then_batch(blocks, k, unit_longest(outcomes)),
            };
            let longest = executed.longest_tx;
            match self.import_with(blocks[k].clone(), Some(executed), None) {
                Ok(mut outcome) => {
                    outcome.timings.longest_tx = longest;
                    if k == 0 {
                        // The unit's shared work is counted once, on its first block.
                        outcome.timings.warmer += warmer;
                        outcome.timings.exec += unit_exec + setup;
                        outcome.timings.total += warmer + unit_exec + setup;
                    }
                    outcomes.push(outcome);
                }
                // Judged again on its own, so the error is the one `import_block` gives.
                Err(_) => return self.alone_then_batch(blocks, k, unit_longest(outcomes)),
            }
        }
        let outcomes = unit_longest(outcomes);
        self.alone_then_batch(blocks, taken, outcomes)
    }

    /// Imports `blocks[k]` on its own (its verdict is `import_block`'s), then the blocks
    /// after it as a new unit.
    fn alone_then_batch(
        &self,
        blocks: &[BlockWithBal],
        k: usize,
        outcomes: Vec<ImportOutcome>,
    ) -> Result<Vec<ImportOutcome>, BatchError> {
        if k >= blocks.len() {
            return Ok(outcomes);
        }
        let mut outcomes = self.one_by_one(&blocks[k..=k], outcomes)?;
        match self.import_batch_on_current_pool(&blocks[k + 1..]) {
            Ok(more) => {
                outcomes.extend(more);
                Ok(outcomes)
            }
            Err(mut e) => {
                outcomes.append(&mut e.imported);
                e.imported = outcomes;
                Err(e)
            }
        }
    }

    /// Validates, executes and (only if everything holds) stores `block` as the new head.
    /// With `options.parallel` the rayon pool is used throughout (parallel execution on
    /// the BAL, parallel merkleization and sender recovery); without it, the import runs
    /// on a single thread: the single-core baseline.
    pub fn import_block(&self, block: BlockWithBal) -> Result<ImportOutcome, BlockError> {
        if self.options.parallel {
            return self.import_block_on_current_pool(block);
        }
        let pool = self.single_core.get_or_init(|| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .thread_name(|_| "ethrex-import".into())
                .build()
                .expect("building a one-thread pool")
        });
        pool.install(|| self.import_block_on_current_pool(block))
    }

    fn import_block_on_current_pool(
        &self,
        block: BlockWithBal,
    ) -> Result<ImportOutcome, BlockError> {
        self.import_with(block, None::<ExecutedTransactions<'_, CachingDb<StoreDb>>>, None)
    }

    /// `import_block`'s pipeline; with `prerun`, the block's transactions already ran
    /// (in a batch) and only their ordered commit is left of execution.
    pub(crate) fn import_with<V: DatabaseRef + Sync>(
        &self,
        block: BlockWithBal,
        prerun: Option<ExecutedTransactions<'_, V>>,
        design: Option<(ethrex_bal::BalDesign, &[u8])>,
    ) -> Result<ImportOutcome, BlockError> {
        let start = Instant::now();
        let mut timings = BlockTimings::default();
        let BlockWithBal { block, bal } = block;
        let header = &block.header;
        let hash = header.hash_slow();

        let parent = self.head_parent(header)?;
        validate_header_against_parent(&self.config, header, &parent)?;
        let amsterdam = self.config.fork_at(header.timestamp) >= Fork::Amsterdam;
        // Checks of the block's own content, in verdict order: body roots and blob gas,
        // then the BAL against the header. They only read the block, so on the parallel
        // path they run beside execution; their verdict still comes first.
        let content_checks = || -> Result<(), BlockError> {
            validate_body(&self.config, &block)?;
            match (&bal, amsterdam) {
                (Some(bal), true) => validate_bal_hash(header, bal),
                (None, true) => Err(BlockError::BalMissing),
                (Some(_), false) => {
                    Err(BlockError::HeaderFieldMismatch("blockAccessList before Amsterdam"))
                }
                (None, false) => Ok(()),
            }
        };
        // Execution relies on the BAL's size cap and canonical form: those hold first.
        let form = match (&bal, amsterdam) {
            (Some(bal), true) => validate_bal_form(header, bal, block.body.transactions.len()),
            (None, false) => Ok(()),
            _ => Err(BlockError::BalMissing),
        };
        if let Err(form_error) = form {
            content_checks()?;
            return Err(form_error);
        }
        // The parent's state as every stage of this block reads it.
        let cache = CachingDb::new(self.state_db(header.parent_hash, parent.number));
        let (checked, executed) = rayon::join(content_checks, || {
            self.execute(&cache, hash, &block, bal.as_ref(), &parent, &mut timings, prerun, design)
        });
        checked?;
        let Executed { senders, output, path, receipts: commitment, from_bal } = executed?;
        let block = RecoveredBlock { hash, block, senders, bal };

        let t = Instant::now();
        let commitment = commitment.unwrap_or_else(|| ReceiptsCommitment::of(&output.receipts));
        validate_execution_output(&self.config, &block, &output, &commitment)?;
        timings.validate += t.elapsed();

        // The state root from the BAL stands only if execution changed exactly what the
        // BAL says; otherwise (the block is then invalid) it is recomputed from execution.
        let t = Instant::now();
        let root_from_bal = from_bal.as_ref().is_some_and(|m| m.changes == output.accounts);
        if from_bal.is_some() && !root_from_bal {
            tracing::debug!(
                block = block.block.header.number,
                "BAL-derived changes differ from execution's; recomputing the root"
            );
        }
        timings.longest_tx = output.longest_tx;
        let BlockExecutionOutput { receipts, gas_used, accounts, codes, .. } = output;
        let kept_codes = self.keep_changes.then(|| codes.clone());
        let (state_root, prepared) = match from_bal.filter(|_| root_from_bal) {
            Some(m) => (m.root, m.prepared),
            None => {
                let (root, state, change_set) = compute_state_update_with(
                    &self.store,
                    &cache,
                    parent.state_root,
                    &accounts,
                    codes,
                )?;
                let commit = BlockCommit {
                    hash,
                    block: &block.block,
                    bal: block.bal.as_ref(),
                    receipts: &receipts,
                    state,
                    change_set,
                };
                (root, Store::prepare_block(commit))
            }
        };
        if state_root != block.block.header.state_root {
            return Err(BlockError::StateRoot {
                expected: block.block.header.state_root,
                got: state_root,
            });
        }
        timings.merkle = t.elapsed();

        let t = Instant::now();
        self.store.commit_prepared(prepared)?;
        timings.store = t.elapsed();
        timings.total = start.elapsed();
        let changes = kept_codes.map(|codes| Arc::new(StateChanges { accounts, codes }));
        record_metrics(&timings, gas_used, block.block.header.number, path);
        let secs = timings.total.as_secs_f64();
        tracing::info!(
            number = block.block.header.number,
            txs = block.block.body.transactions.len(),
            gas = gas_used,
            ggas_per_s = if secs > 0.0 { gas_used as f64 / secs / 1e9 } else { 0.0 },
            path = path.describe(),
            root_from_bal,
            "imported block"
        );

        Ok(ImportOutcome {
            hash,
            number: block.block.header.number,
            tx_count: block.block.body.transactions.len(),
            gas_used,
            path,
            root_from_bal,
            timings,
            changes,
        })
    }
}
