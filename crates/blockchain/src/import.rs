//! The import pipeline: every block that enters the node (fixture, chain file, Engine
//! API) goes through `Blockchain::import_block`.
//!
//! Order of checks: header against parent, body against header, BAL shape, sender
//! recovery, execution, results against header, state root; then one atomic commit.
//! Nothing is written unless every check passed.

use crate::consensus::ommers::{check_ommers, Ancestry};
use crate::crosscheck::check_reads_against_trie;
use crate::error::{BalMismatch, BlockError, InvalidBlock, NodeFault, StorageFault};
use crate::extension::{ExecutionStrategy, ImportObserver, StrategyInput, StrategyOutput};
use crate::metrics::{record_cache_stats, record_metrics};
use crate::profile::BlockProfile;
use crate::state_root::{changes_from_bal, compute_state_root, compute_state_update_with};
use crate::validation::{
    account_order_violation, validate_bal_form, validate_bal_hash, validate_body,
    validate_built_bal, validate_execution_output, validate_header_against_parent,
    validate_pow_header, ReceiptsCommitment,
};
use alloy_primitives::{Address, B256, U256};
use ethrex_common::{Block, BlockAccessList, BlockWithBal, ChainConfig, Fork, RecoveredBlock};
use ethrex_storage::{BlockCommit, PreparedCommit, Store};
use ethrex_vm::warmer::warm_from_bal;
use ethrex_vm::{
    execute_block_sequential_with_roots, run_transactions_parallel, AccountChange,
    BlockExecutionOutput, CachingDb, ExecutedTransactions, ParallelRun, Recovery, Schedule,
    StateSource, StoreDb,
};
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
    /// Gas, receipts, bloom, requests and BAL against the header (after an execution
    /// strategy's own checks, if one executed the block).
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
    /// The checks of the block's own content (body roots, blob gas, the BAL's hash),
    /// beside execution.
    pub content: Duration,
}

/// How a block was executed, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecutionPath {
    /// Transactions ran in parallel on the header BAL.
    Parallel,
    /// Transactions ran in parallel on the header BAL, together with the other blocks of
    /// a mega block (`Blockchain::import_batch`).
    ParallelBatch,
    /// No BAL came with the block: it is from before Amsterdam, or it came without one
    /// (a chain file, a body from a peer), and execution built the BAL the header must
    /// commit to.
    SequentialNoBal,
    /// Fewer transactions than the parallel threshold.
    SequentialSmallBlock,
    /// Parallel execution switched off by configuration.
    SequentialDisabled,
    /// The header BAL cannot drive parallel execution (accounts out of canonical order,
    /// or execution contradicted it); the sequential path executed and judged the block.
    SequentialBalUnusable,
    /// A caller's execution strategy executed the block (`Blockchain::import_block_with`).
    Strategy,
}

impl ExecutionPath {
    /// A short human-readable name, as logged and used as the metrics label.
    pub fn describe(self) -> &'static str {
        match self {
            ExecutionPath::Parallel => "parallel",
            ExecutionPath::ParallelBatch => "parallel (mega block)",
            ExecutionPath::SequentialNoBal => "sequential (no BAL with the block)",
            ExecutionPath::SequentialSmallBlock => "sequential (below parallel threshold)",
            ExecutionPath::SequentialDisabled => "sequential (parallel execution disabled)",
            ExecutionPath::SequentialBalUnusable => {
                "sequential (header BAL unusable for parallel execution)"
            }
            ExecutionPath::Strategy => "execution strategy",
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

/// Where a block's import runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Cores {
    /// On the rayon pool: parallel execution (where `Threshold` allows), sender recovery
    /// and merkleization spread over every worker.
    #[default]
    Pool,
    /// On one thread, sequentially, start to end: the single-core baseline.
    One,
}

/// Which Amsterdam blocks run on the BAL-driven parallel path (with `Cores::Pool`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Threshold {
    /// When the cost model predicts it pays (`parallel_pays`).
    #[default]
    CostModel,
    /// Blocks with at least this many transactions (`MinTxs(0)`: every block).
    MinTxs(usize),
    /// None: every block executes sequentially (recovery and the trie still use the pool).
    Never,
}

/// How blocks are executed.
#[derive(Debug, Clone, Copy)]
pub struct ImportOptions {
    /// Where the import runs.
    pub cores: Cores,
    /// Which blocks execute in parallel on their BAL.
    pub threshold: Threshold,
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

/// When the parallel path reads the state the BAL names.
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
            cores: Cores::Pool,
            threshold: Threshold::CostModel,
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
    /// The parallel path's pieces, each timed on its thread (`None` on other paths).
    pub profile: Option<BlockProfile>,
}

/// A block's executed state changes (what its state update was built from), handed to an
/// `ImportObserver`.
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
    /// Sees every imported block.
    observer: Option<Arc<dyn ImportObserver>>,
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
struct RootFromBal {
    changes: Vec<AccountChange>,
    root: B256,
    prepared: PreparedCommit,
}

/// How a block is to be executed (the execution stage's input).
// Built once per block and moved into the pipeline: boxing the large variant would only
// add an allocation.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Execution<'s, 'v, V: DatabaseRef> {
    /// By the path the options choose for it (`Blockchain::choose_path`).
    Choose,
    /// Its transactions already ran in a mega block; only their ordered commit is left.
    Prerun(ExecutedTransactions<'v, V>),
    /// By a caller's strategy.
    Strategy(&'s dyn ExecutionStrategy),
}

/// A block executed by whichever path, with what was computed alongside.
struct Executed {
    senders: Vec<Address>,
    output: BlockExecutionOutput,
    path: ExecutionPath,
    /// Computed beside the parallel path's ordered commit; otherwise during validation.
    receipts: Option<ReceiptsCommitment>,
    from_bal: Option<RootFromBal>,
    profile: Option<BlockProfile>,
}

/// A block past the pre-checks: its parent is the head and its header holds against it.
struct Checked {
    hash: B256,
    block: Block,
    bal: Option<BlockAccessList>,
    parent: ethrex_common::Header,
    /// The parent's total difficulty (the block's is this plus its difficulty).
    parent_td: U256,
    amsterdam: bool,
}

/// The stored chain below a block, as the ommer rules read it.
struct StoreAncestry<'a>(&'a Store);

impl Ancestry for StoreAncestry<'_> {
    fn header(&self, hash: &B256) -> Result<Option<ethrex_common::Header>, BlockError> {
        Ok(self.0.header(hash)?)
    }

    fn ommers(&self, hash: &B256) -> Result<Vec<ethrex_common::Header>, BlockError> {
        Ok(self.0.body(hash)?.map(|b| b.ommers).unwrap_or_default())
    }
}

/// Recovers every sender on the rayon pool; the first failing index is reported.
pub fn recover_senders(block: &ethrex_common::Block) -> Result<Vec<Address>, BlockError> {
    Ok(ethrex_vm::recover_senders(&block.body.transactions, Recovery::Pool)?)
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
            observer: None,
        }
    }

    /// The same chain executing on accounts and storage read from `source` instead of the
    /// flat tables (code stays the store's; merkleization still reads the store). `source`
    /// must hold the parent's state of every block imported.
    pub fn with_state_source(mut self, source: Arc<dyn StateSource>) -> Self {
        self.state_source = Some(source);
        self
    }

    /// The same chain telling `observer` of every imported block.
    pub fn with_observer(mut self, observer: Arc<dyn ImportObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// The parent's state as execution reads it: the store, through the state source if
    /// there is one.
    pub fn state_db(&self, parent_hash: B256, parent_number: u64) -> StoreDb {
        StoreDb::new(self.store.clone(), parent_hash, parent_number)
            .with_source(self.state_source.clone())
    }

    /// The same chain prefetching on `pool`: a pool sized for I/O rather than for the
    /// cores, so a few cores keep many reads in flight (see `Prefetch`).
    pub fn with_io_pool(mut self, pool: Arc<rayon::ThreadPool>) -> Self {
        self.io_pool = Some(pool);
        self
    }

    /// Runs `f` on the I/O pool (`with_io_pool`), or on the current pool without one.
    pub fn on_io_pool<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        match &self.io_pool {
            Some(pool) => pool.install(f),
            None => f(),
        }
    }

    /// The parent of a block with `header`, which must be the head: only the head's state
    /// is there to execute on.
    pub fn head_parent(
        &self,
        header: &ethrex_common::Header,
    ) -> Result<ethrex_common::Header, BlockError> {
        let parent = self
            .store
            .header(&header.parent_hash)?
            .ok_or(NodeFault::UnknownParent(header.parent_hash))?;
        if self.store.head()? != Some(header.parent_hash) {
            return Err(NodeFault::ParentStateUnavailable(header.parent_hash).into());
        }
        Ok(parent)
    }

    /// The same chain importing with `options`.
    pub fn with_options(mut self, options: ImportOptions) -> Self {
        self.options = options;
        self
    }

    /// How senders are recovered: on the pool, unless the import is confined to one core.
    fn recovery(&self) -> Recovery {
        match self.options.cores {
            Cores::Pool => Recovery::Pool,
            Cores::One => Recovery::CurrentThread,
        }
    }

    fn choose_path(&self, block: &Block, bal: Option<&BlockAccessList>) -> ExecutionPath {
        let Some(bal) = bal else { return ExecutionPath::SequentialNoBal };
        let txs = &block.body.transactions;
        let pays = match self.options.threshold {
            Threshold::CostModel => parallel_pays(txs, rayon::current_num_threads()),
            Threshold::MinTxs(min) => txs.len() >= min,
            Threshold::Never => return ExecutionPath::SequentialDisabled,
        };
        if self.options.cores == Cores::One {
            ExecutionPath::SequentialDisabled
        } else if !pays {
            ExecutionPath::SequentialSmallBlock
        } else if account_order_violation(bal).is_some() {
            // The parallel path indexes the BAL by address; a non-canonical account list
            // is judged by the sequential path after execution.
            ExecutionPath::SequentialBalUnusable
        } else {
            ExecutionPath::Parallel
        }
    }

    /// Validates, executes and (only if everything holds) stores `block` as the new head.
    /// With `Cores::Pool` the rayon pool is used throughout (parallel execution on the
    /// BAL, parallel merkleization and sender recovery); with `Cores::One` the import runs
    /// on a single thread: the single-core baseline.
    pub fn import_block(&self, block: BlockWithBal) -> Result<ImportOutcome, BlockError> {
        self.import_on_cores(block, Execution::Choose)
    }

    /// As `import_block`, with `strategy` executing the block instead of the path the
    /// options choose. Every check `import_block` makes is still made.
    pub fn import_block_with(
        &self,
        block: BlockWithBal,
        strategy: &dyn ExecutionStrategy,
    ) -> Result<ImportOutcome, BlockError> {
        self.import_on_cores(block, Execution::Strategy(strategy))
    }

    /// `import_with` on the pool `options.cores` names (a mega block's `Prerun` runs on
    /// the caller's pool, in `import_batch`).
    fn import_on_cores(
        &self,
        block: BlockWithBal,
        execution: Execution<'_, '_, CachingDb<StoreDb>>,
    ) -> Result<ImportOutcome, BlockError> {
        match self.options.cores {
            Cores::Pool => self.import_with(block, execution),
            Cores::One => {
                let pool = self.single_core.get_or_init(|| {
                    rayon::ThreadPoolBuilder::new()
                        .num_threads(1)
                        .thread_name(|_| "ethrex-import".into())
                        .build()
                        .expect("building a one-thread pool")
                });
                pool.install(|| self.import_with(block, execution))
            }
        }
    }

    /// The import pipeline: pre-checks, then execution beside the checks of the block's
    /// own content, then finishing (results against the header, state root, commit).
    pub(crate) fn import_with<V: DatabaseRef + Sync>(
        &self,
        block: BlockWithBal,
        execution: Execution<'_, '_, V>,
    ) -> Result<ImportOutcome, BlockError> {
        let start = Instant::now();
        let mut timings = BlockTimings::default();
        let checked = self.precheck(block)?;
        // Checks of the block's own content, in verdict order: body roots and blob gas,
        // then the BAL against the header. They only read the block, so they run beside
        // execution; their verdict still comes first.
        let content_checks = || {
            let t = Instant::now();
            let content = self.check_content(&checked);
            (content, t.elapsed())
        };
        // The parent's state as every stage of this block reads it.
        let cache =
            CachingDb::new(self.state_db(checked.block.header.parent_hash, checked.parent.number));
        // The core's paths read the parent state only through `cache`; a strategy may
        // seed it with values of its own, which it answers for.
        let core_path = matches!(execution, Execution::Choose);
        let parent_root = checked.parent.state_root;
        let ((content, content_time), executed) =
            rayon::join(content_checks, || self.execute(&cache, &checked, &mut timings, execution));
        timings.content = content_time;
        content?;
        let outcome =
            executed.and_then(|executed| self.finish(checked, &cache, executed, timings, start));
        match outcome {
            // A verdict that depends on execution stands only if what execution read from
            // the flat state is what the parent's trie holds (see `crosscheck`).
            Err(e) if core_path && e.is_invalid_block() => {
                check_reads_against_trie(&self.store, parent_root, &cache)?;
                Err(e)
            }
            outcome => outcome,
        }
    }

    /// The checks before execution: the parent is the head, the header holds against it,
    /// and the BAL has the size and form execution relies on.
    fn precheck(&self, block: BlockWithBal) -> Result<Checked, BlockError> {
        let BlockWithBal { block, bal } = block;
        let header = &block.header;
        let parent = self.head_parent(header)?;
        let parent_td = self.parent_total_difficulty(&parent, header)?;
        validate_header_against_parent(&self.config, header, &parent, parent_td)?;
        let hash = header.hash_slow();
        check_ommers(&self.config, &block, hash, &StoreAncestry(&self.store), validate_pow_header)?;
        let checked = Checked {
            hash,
            amsterdam: self.config.fork_of(header) >= Fork::Amsterdam,
            parent,
            parent_td,
            block,
            bal,
        };
        let form = match (&checked.bal, checked.amsterdam) {
            (Some(bal), true) => {
                validate_bal_form(&checked.block.header, bal, checked.block.body.transactions.len())
            }
            // Without a BAL (a chain file, a body from the wire) an Amsterdam block is
            // executed sequentially, which builds its BAL; `finish` checks that one.
            (None, _) => Ok(()),
            (Some(_), false) => Ok(()),
        };
        if let Err(form_error) = form {
            // The content's verdict comes first.
            self.check_content(&checked)?;
            return Err(form_error.into());
        }
        Ok(checked)
    }

    /// The total difficulty of `parent`, the head. A store written before total
    /// difficulty was kept lacks it only for proof-of-stake blocks, whose children the
    /// merge rule judges by the parent's kind alone; a proof-of-work parent without it
    /// is a fault of the store, not a verdict on the block.
    fn parent_total_difficulty(
        &self,
        parent: &ethrex_common::Header,
        header: &ethrex_common::Header,
    ) -> Result<U256, BlockError> {
        match self.store.total_difficulty(&header.parent_hash)? {
            Some(td) => Ok(td),
            None if parent.difficulty.is_zero() => {
                Ok(self.config.inner.terminal_total_difficulty.unwrap_or_default())
            }
            None => Err(BlockError::storage(format!(
                "total difficulty of proof-of-work block {} is not stored",
                header.parent_hash
            ))),
        }
    }

    /// The body against the header, then the BAL against the header's hash.
    fn check_content(&self, checked: &Checked) -> Result<(), BlockError> {
        validate_body(&self.config, &checked.block)?;
        let header = &checked.block.header;
        match (&checked.bal, checked.amsterdam) {
            (Some(bal), true) => validate_bal_hash(header, bal)?,
            (Some(_), false) => {
                return Err(
                    InvalidBlock::HeaderFieldMismatch("blockAccessList before Amsterdam").into()
                )
            }
            (None, _) => {}
        }
        Ok(())
    }

    /// The execution stage: senders recovered and the block executed on the parent's
    /// state by `execution`. On the parallel path senders are recovered inside the
    /// execution workers, and the state root is also computed from the BAL at the same
    /// time (unless disabled).
    fn execute<V: DatabaseRef + Sync>(
        &self,
        cache: &CachingDb<StoreDb>,
        checked: &Checked,
        timings: &mut BlockTimings,
        execution: Execution<'_, '_, V>,
    ) -> Result<Executed, BlockError> {
        let block = &checked.block;
        let mut path = match execution {
            Execution::Prerun(executed) => return self.finish_prerun(block, executed, timings),
            Execution::Strategy(strategy) => {
                return self.execute_strategy(cache, checked, strategy, timings)
            }
            Execution::Choose => self.choose_path(block, checked.bal.as_ref()),
        };
        if let (ExecutionPath::Parallel, Some(header_bal)) = (path, &checked.bal) {
            match self.execute_parallel(cache, checked, header_bal, timings)? {
                Some(executed) => return Ok(executed),
                None => path = ExecutionPath::SequentialBalUnusable,
            }
        }
        let t = Instant::now();
        let senders = ethrex_vm::recover_senders(&block.body.transactions, self.recovery())?;
        timings.recover = t.elapsed();
        let t = Instant::now();
        // Before Byzantium every receipt commits to the state root after its transaction.
        let parent_root = checked.parent.state_root;
        let roots = |changes: &[AccountChange], codes: &[(B256, alloy_primitives::Bytes)]| {
            compute_state_root(&self.store, parent_root, changes, codes.to_vec())
                .map_err(ethrex_vm::error::DatabaseError::new)
        };
        let output =
            execute_block_sequential_with_roots(cache, block, &senders, &self.config, &roots)?;
        timings.exec += t.elapsed();
        record_cache_stats(cache);
        Ok(Executed { senders, output, path, receipts: None, from_bal: None, profile: None })
    }

    fn execute_strategy(
        &self,
        cache: &CachingDb<StoreDb>,
        checked: &Checked,
        strategy: &dyn ExecutionStrategy,
        timings: &mut BlockTimings,
    ) -> Result<Executed, BlockError> {
        let input =
            StrategyInput { chain: self, cache, block: &checked.block, parent: &checked.parent };
        let StrategyOutput { senders, output, fell_back, warmer, exec, validate } =
            strategy.execute(input)?;
        timings.warmer += warmer;
        timings.exec += exec;
        timings.validate += validate;
        let path =
            if fell_back { ExecutionPath::SequentialBalUnusable } else { ExecutionPath::Strategy };
        Ok(Executed { senders, output, path, receipts: None, from_bal: None, profile: None })
    }

    /// The parallel path: transactions (and their sender recovery) on the rayon pool,
    /// with the BAL-derived state root computed alongside; then, while the transactions'
    /// changes are committed in block order, the receipts are hashed and the block's
    /// batch is built from the BAL-derived state. `None`: the header BAL proved
    /// inconsistent, and the sequential path must decide.
    fn execute_parallel(
        &self,
        cache: &CachingDb<StoreDb>,
        checked: &Checked,
        bal: &BlockAccessList,
        timings: &mut BlockTimings,
    ) -> Result<Option<Executed>, BlockError> {
        let block = &checked.block;
        if self.options.prefetch == Prefetch::First {
            let t = Instant::now();
            self.on_io_pool(|| warm_from_bal(cache, bal)).map_err(StorageFault::new)?;
            timings.warmer = t.elapsed();
        }
        // Warming and the BAL-derived state root need only the BAL, so they run beside
        // the transactions instead of before them.
        let t = Instant::now();
        let schedule = self.options.schedule;
        let (run, merkleized) = rayon::join(
            || run_transactions_parallel(cache, block, &self.config, bal, schedule),
            || {
                let t = Instant::now();
                (self.merkleize_from_bal(cache, checked, bal), t.elapsed())
            },
        );
        let (merkleized, merkle_time) = merkleized;
        let mut executed = match run? {
            ParallelRun::Ran(executed) => executed,
            ParallelRun::BalMismatch(reason) => {
                tracing::debug!(block = block.header.number, %reason, "BAL mismatch on the parallel path");
                return Ok(None);
            }
        };
        // A failure here only means the root is computed after execution instead.
        let merkleized = merkleized
            .and_then(|m| m.map_err(|e| tracing::debug!(%e, "BAL merkleization failed")).ok());
        let receipts = std::mem::take(&mut executed.receipts);
        let senders = std::mem::take(&mut executed.senders);
        let (output, (commitment, from_bal, receipts_time)) = rayon::join(
            || executed.commit_without_receipts(block, &self.config, &receipts),
            || {
                let t = Instant::now();
                let from_bal = merkleized.map(|m| RootFromBal {
                    root: m.root,
                    changes: m.changes,
                    prepared: Store::prepare_block(BlockCommit {
                        hash: checked.hash,
                        block,
                        bal: Some(bal),
                        receipts: &receipts,
                        state: m.update,
                        change_set: m.change_set,
                        total_difficulty: checked.parent_td + block.header.difficulty,
                    }),
                });
                (ReceiptsCommitment::of(&receipts), from_bal, t.elapsed())
            },
        );
        let mut output = output?;
        output.receipts = receipts;
        timings.exec = t.elapsed();
        let profile = output.profile.take().map(|execution| BlockProfile {
            execution,
            merkle: merkle_time,
            receipts: receipts_time,
        });
        record_cache_stats(cache);
        Ok(Some(Executed {
            senders,
            output,
            path: ExecutionPath::Parallel,
            receipts: Some(commitment),
            from_bal,
            profile,
        }))
    }

    /// Beside the transactions: the BAL's state prefetched (if on), then the state root
    /// and the block's state update from the BAL alone (unless off).
    fn merkleize_from_bal(
        &self,
        cache: &CachingDb<StoreDb>,
        checked: &Checked,
        bal: &BlockAccessList,
    ) -> Option<Result<BalMerkleization, BlockError>> {
        if self.options.prefetch == Prefetch::Beside {
            if let Err(e) = self.on_io_pool(|| warm_from_bal(cache, bal)) {
                return Some(Err(StorageFault::new(e).into()));
            }
        }
        self.options.parallel_trie.then(|| {
            let (changes, codes) = changes_from_bal(cache, bal)?;
            let (root, update, change_set) = compute_state_update_with(
                &self.store,
                cache,
                checked.parent.state_root,
                &changes,
                codes,
            )?;
            Ok(BalMerkleization { changes, root, update, change_set })
        })
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
            profile: None,
        })
    }

    /// The finishing stage: what execution produced against the header, the state root
    /// (from the BAL if it was computed beside execution and execution agrees with it),
    /// then the commit.
    fn finish(
        &self,
        checked: Checked,
        cache: &CachingDb<StoreDb>,
        executed: Executed,
        mut timings: BlockTimings,
        start: Instant,
    ) -> Result<ImportOutcome, BlockError> {
        let Executed { senders, output, path, receipts: commitment, from_bal, profile } = executed;
        let Checked { hash, block, bal, parent, parent_td, amsterdam } = checked;
        let total_difficulty = parent_td + block.header.difficulty;
        let mut block = RecoveredBlock { hash, block, senders, bal };

        let t = Instant::now();
        let commitment = commitment.unwrap_or_else(|| ReceiptsCommitment::of(&output.receipts));
        validate_execution_output(&self.config, &block, &output, &commitment)?;
        if amsterdam && block.bal.is_none() {
            // No BAL came with the block: the one execution built must be the one the
            // header commits to, and it is stored like a received one (peers ask for it).
            let built =
                output.bal.as_ref().ok_or(InvalidBlock::BalMismatch(BalMismatch::NotBuilt))?;
            validate_built_bal(&block.block.header, built)?;
            block.bal = Some(built.clone());
        }
        timings.validate += t.elapsed();
        let header = &block.block.header;

        // The state root from the BAL stands only if execution changed exactly what the
        // BAL says; otherwise (the block is then invalid) it is recomputed from execution.
        let t = Instant::now();
        let root_from_bal = from_bal.as_ref().is_some_and(|m| m.changes == output.accounts);
        if from_bal.is_some() && !root_from_bal {
            tracing::debug!(
                block = header.number,
                "BAL-derived changes differ from execution's; recomputing the root"
            );
        }
        timings.longest_tx = output.longest_tx;
        let BlockExecutionOutput { receipts, gas_used, accounts, codes, .. } = output;
        let observed_codes = self.observer.is_some().then(|| codes.clone());
        let (state_root, prepared) = match from_bal.filter(|_| root_from_bal) {
            Some(m) => (m.root, m.prepared),
            None => {
                let (root, state, change_set) = compute_state_update_with(
                    &self.store,
                    cache,
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
                    total_difficulty,
                };
                (root, Store::prepare_block(commit))
            }
        };
        if state_root != header.state_root {
            return Err(
                InvalidBlock::StateRoot { expected: header.state_root, got: state_root }.into()
            );
        }
        timings.merkle = t.elapsed();

        let t = Instant::now();
        self.store.commit_prepared(prepared)?;
        timings.store = t.elapsed();
        timings.total = start.elapsed();
        record_metrics(&timings, gas_used, header.number, path);
        let secs = timings.total.as_secs_f64();
        let tx_count = block.block.body.transactions.len();
        tracing::info!(
            number = header.number,
            txs = tx_count,
            gas = gas_used,
            ggas_per_s = if secs > 0.0 { gas_used as f64 / secs / 1e9 } else { 0.0 },
            path = path.describe(),
            root_from_bal,
            "imported block"
        );
        let outcome = ImportOutcome {
            hash,
            number: header.number,
            tx_count,
            gas_used,
            path,
            root_from_bal,
            timings,
            profile,
        };
        if let (Some(observer), Some(codes)) = (&self.observer, observed_codes) {
            observer.block_imported(&outcome, &StateChanges { accounts, codes });
        }
        Ok(outcome)
    }
}
