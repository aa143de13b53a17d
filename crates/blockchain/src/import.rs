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
    execute_block_sequential, run_transactions_parallel, AccountChange, BlockExecutionOutput,
    CachingDb, ParallelRun, StoreDb,
};
use std::time::{Duration, Instant};

/// Wall time of each stage of one block's import.
#[derive(Debug, Clone, Copy, Default)]
pub struct BlockTimings {
    /// Sender recovery (inside `exec` on the parallel path, which recovers per worker).
    pub recover: Duration,
    /// Prefetching the BAL's state (0 unless the warmer is on).
    pub warmer: Duration,
    /// Execution, including the parallel path's ordered commit.
    pub exec: Duration,
    /// Gas, receipts, bloom, requests and BAL against the header.
    pub validate: Duration,
    /// The state root and the block's batch, after execution (what was left of it).
    pub merkle: Duration,
    /// Handing the batch to the store (in memory; the disk write is in the background).
    pub store: Duration,
    /// The whole import, from the parent lookup to the commit.
    pub total: Duration,
}

/// How a block was executed, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecutionPath {
    /// Transactions ran in parallel on the header BAL.
    Parallel,
    /// No BAL: the block is from before Amsterdam.
    SequentialNoBal,
    /// Fewer transactions than the parallel threshold.
    SequentialSmallBlock,
    /// Parallel execution switched off by configuration.
    SequentialDisabled,
    /// The header BAL cannot drive parallel execution (accounts out of canonical order,
    /// or execution contradicted it); the sequential path executed and judged the block.
    SequentialBalUnusable,
}

impl ExecutionPath {
    /// A short human-readable name, as logged and used as the metrics label.
    pub fn describe(self) -> &'static str {
        match self {
            ExecutionPath::Parallel => "parallel",
            ExecutionPath::SequentialNoBal => "sequential (no BAL before Amsterdam)",
            ExecutionPath::SequentialSmallBlock => "sequential (below parallel threshold)",
            ExecutionPath::SequentialDisabled => "sequential (parallel execution disabled)",
            ExecutionPath::SequentialBalUnusable => {
                "sequential (header BAL unusable for parallel execution)"
            }
        }
    }
}

/// Default minimum number of transactions for the parallel path.
pub const BAL_PARALLEL_TX_THRESHOLD: usize = 5;

/// How blocks are executed.
#[derive(Debug, Clone, Copy)]
pub struct ImportOptions {
    /// Use the BAL-driven parallel path for Amsterdam blocks, and the rayon pool for the
    /// rest of the import. Off: the whole import runs on one thread (single-core baseline).
    pub parallel: bool,
    /// Blocks with fewer transactions run sequentially (0: always parallel).
    pub parallel_threshold: usize,
    /// Prefetch the state the BAL names into the block's cache, alongside execution.
    /// Off by default: the store keeps the flat state in memory, where the prefetch
    /// competes with execution for the cores (measurements in `docs/benchmarks.md`).
    pub warmer: bool,
    /// Compute the state root from the BAL while transactions execute.
    pub parallel_trie: bool,
}

impl Default for ImportOptions {
    fn default() -> Self {
        Self {
            parallel: true,
            parallel_threshold: BAL_PARALLEL_TX_THRESHOLD,
            warmer: false,
            parallel_trie: true,
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

/// A block executed by whichever path, with what was computed alongside.
struct Executed {
    senders: Vec<Address>,
    output: BlockExecutionOutput,
    path: ExecutionPath,
    /// Computed beside the parallel path's ordered commit; otherwise during validation.
    receipts: Option<ReceiptsCommitment>,
    from_bal: Option<RootFromBal>,
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
        }
    }

    /// The same chain importing with `options`.
    pub fn with_options(mut self, options: ImportOptions) -> Self {
        self.options = options;
        self
    }

    fn choose_path(&self, block: &Block, bal: Option<&BlockAccessList>) -> ExecutionPath {
        match bal {
            None => ExecutionPath::SequentialNoBal,
            Some(_) if !self.options.parallel => ExecutionPath::SequentialDisabled,
            Some(_) if block.body.transactions.len() < self.options.parallel_threshold => {
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
        // Warming and the BAL-derived state root need only the BAL, so they run beside
        // the transactions instead of before them.
        let t = Instant::now();
        let (run, merkleized) = rayon::join(
            || run_transactions_parallel(cache, block, &self.config, bal),
            || -> Option<Result<BalMerkleization, BlockError>> {
                if self.options.warmer {
                    if let Err(e) = warm_from_bal(cache, bal) {
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
    fn execute(
        &self,
        cache: &CachingDb<StoreDb>,
        hash: B256,
        block: &Block,
        bal: Option<&BlockAccessList>,
        parent: &ethrex_common::Header,
        timings: &mut BlockTimings,
    ) -> Result<Executed, BlockError> {
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
        let start = Instant::now();
        let mut timings = BlockTimings::default();
        let BlockWithBal { block, bal } = block;
        let header = &block.header;
        let hash = header.hash_slow();

        let parent = self
            .store
            .header(&header.parent_hash)?
            .ok_or(BlockError::UnknownParent(header.parent_hash))?;
        if self.store.head()? != Some(header.parent_hash) {
            return Err(BlockError::ParentStateUnavailable(header.parent_hash));
        }
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
        let cache =
            CachingDb::new(StoreDb::new(self.store.clone(), header.parent_hash, parent.number));
        let (checked, executed) = rayon::join(content_checks, || {
            self.execute(&cache, hash, &block, bal.as_ref(), &parent, &mut timings)
        });
        checked?;
        let Executed { senders, output, path, receipts: commitment, from_bal } = executed?;
        let block = RecoveredBlock { hash, block, senders, bal };

        let t = Instant::now();
        let commitment = commitment.unwrap_or_else(|| ReceiptsCommitment::of(&output.receipts));
        validate_execution_output(&self.config, &block, &output, &commitment)?;
        timings.validate = t.elapsed();

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
        let BlockExecutionOutput { receipts, gas_used, accounts, codes, .. } = output;
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
        })
    }
}
