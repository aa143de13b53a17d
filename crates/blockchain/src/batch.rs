//! Mega blocks: the transactions of several consecutive blocks run as one parallel unit,
//! each block on the state its predecessors' BALs say it starts from
//! (`ethrex_vm::BatchLayers`); then each block goes through the rest of the import
//! pipeline in order, and the batch reaches the database as one write.

use crate::error::{BlockError, StorageFault};
use crate::import::{Blockchain, Cores, Execution, ImportOutcome, Prefetch, Threshold};
use crate::validation::{
    account_order_violation, validate_bal_form, validate_header_against_parent,
};
use ethrex_common::{BlockWithBal, Fork};
use ethrex_storage::Store;
use ethrex_vm::warmer::warm_from_bal;
use ethrex_vm::{run_transactions_parallel, BatchLayers, CachingDb, ParallelRun};
use rayon::prelude::*;
use std::time::{Duration, Instant};

/// A batch import stopped at a block: the blocks before it are imported.
#[derive(Debug, thiserror::Error)]
#[error("block {number}: {source}")]
pub struct BatchError {
    /// The block that failed.
    pub number: u64,
    /// Why (boxed: a batch error travels up through every caller's `Result`).
    #[source]
    pub source: Box<BlockError>,
    /// The blocks imported before it, in order.
    pub imported: Vec<ImportOutcome>,
}

/// How one unit of a batch ended.
struct UnitEnd {
    /// The unit's blocks imported, in order.
    imported: Vec<ImportOutcome>,
    /// The block (index into the blocks given) that could not go on with the unit, or
    /// that ended it unformed; it is imported on its own next. `None`: the whole unit was
    /// imported.
    alone: Option<usize>,
}

impl Blockchain {
    /// Imports `blocks` (consecutive, the first on the head) as mega blocks: the
    /// transactions of every block of a unit run as one parallel unit; then each block is
    /// validated, merkleized and committed in order exactly as `import_block` does (gas,
    /// receipts, BAL, requests, its own state root), and the batch reaches the database
    /// as one write.
    ///
    /// What a batch gives up: nothing in validation. A block that cannot join a unit (no
    /// BAL, a BAL not in canonical form, a code change that is not bytecode) or whose
    /// execution disagrees with its BAL ends the unit: it is imported on its own, so every
    /// verdict is `import_block`'s, and the blocks after it form a new unit. The price is
    /// that the later blocks' work was wasted, and the blocks of a batch become durable
    /// together.
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
        let imported = self.import_units(blocks);
        std::mem::forget(group);
        let ended = self.store.end_group();
        match (imported, ended) {
            (Ok(outcomes), Ok(())) => Ok(outcomes),
            (Err(mut e), ended) => {
                if let Err(write) = ended {
                    tracing::error!(%write, "writing a mega block's group failed");
                    e.source = Box::new(StorageFault::new(write).into());
                }
                Err(e)
            }
            (Ok(outcomes), Err(e)) => Err(BatchError {
                number: outcomes.last().map(|o| o.number).unwrap_or_default(),
                source: Box::new(StorageFault::new(e).into()),
                imported: outcomes,
            }),
        }
    }

    /// The batch as a loop over units: each iteration runs the unit the next blocks
    /// form, then imports on its own the block that ended it, if any.
    fn import_units(&self, blocks: &[BlockWithBal]) -> Result<Vec<ImportOutcome>, BatchError> {
        // Units need the pool and a threshold that lets blocks run in parallel.
        let units_allowed =
            self.options.cores == Cores::Pool && self.options.threshold != Threshold::Never;
        let mut outcomes = Vec::with_capacity(blocks.len());
        let mut next = 0;
        while next < blocks.len() {
            let alone = if units_allowed {
                let end = self.run_unit(&blocks[next..]);
                let taken = end.imported.len();
                outcomes.extend(end.imported);
                match end.alone {
                    Some(k) => next + k,
                    None => {
                        next += taken;
                        continue;
                    }
                }
            } else {
                next
            };
            let block = &blocks[alone];
            match self.import_block(block.clone()) {
                Ok(outcome) => outcomes.push(outcome),
                Err(source) => {
                    let source = Box::new(source);
                    return Err(BatchError { number: block.number(), source, imported: outcomes });
                }
            }
            next = alone + 1;
        }
        Ok(outcomes)
    }

    /// Runs the unit the leading `blocks` form and imports its blocks in order, up to the
    /// first that cannot be imported from the unit's run.
    fn run_unit(&self, blocks: &[BlockWithBal]) -> UnitEnd {
        let unformed = UnitEnd { imported: Vec::new(), alone: Some(0) };
        let start = Instant::now();
        let head = match self.store.head_header() {
            Ok(Some(head)) => head,
            _ => return unformed,
        };
        // The unit: the leading blocks that extend each other from the head, each with a
        // BAL the parallel path can use.
        let mut parent_hash = head.hash_slow();
        let mut parent = &head;
        let mut members = Vec::new();
        // Members are Amsterdam blocks, after the merge: a parent total difficulty at the
        // terminal one passes the merge rule (each block's import checks the stored one).
        let merged_td = self.config.inner.terminal_total_difficulty.unwrap_or_default();
        for block in blocks {
            let header = &block.block.header;
            // A member's header is checked before its transactions run, so a bad one
            // (a huge gas limit, say) cannot make the unit spend work on it.
            let bal = block.bal.as_ref().filter(|bal| {
                header.parent_hash == parent_hash
                    && validate_header_against_parent(&self.config, header, parent, merged_td)
                        .is_ok()
                    && self.config.fork_of(header) >= Fork::Amsterdam
                    && validate_bal_form(header, bal, block.block.body.transactions.len()).is_ok()
                    && account_order_violation(bal).is_none()
            });
            let Some(bal) = bal else { break };
            parent_hash = header.hash_slow();
            parent = header;
            members.push((header.number, parent_hash, bal));
        }
        let (layers, taken) = BatchLayers::new(members.iter().map(|(n, h, b)| (*n, *h, *b)));
        if taken < 2 {
            return unformed;
        }
        let base = CachingDb::new(self.state_db(head.hash_slow(), head.number));
        let views: Vec<_> = (0..taken).map(|k| layers.view(&base, k)).collect();
        // The start state of everything the unit touches; what earlier blocks of the
        // batch write comes from their BALs, not the database.
        let warm = || {
            self.on_io_pool(|| {
                members[..taken].par_iter().try_for_each(|(_, _, bal)| warm_from_bal(&base, bal))
            })
        };
        let mut warmer = Duration::ZERO;
        if self.options.prefetch == Prefetch::First {
            let t = Instant::now();
            if warm().is_err() {
                return unformed;
            }
            warmer = t.elapsed();
        }
        let t = Instant::now();
        let schedule = self.options.schedule;
        let run_all = || -> Vec<_> {
            (0..taken)
                .into_par_iter()
                .map(|k| {
                    let block = &blocks[k].block;
                    run_transactions_parallel(
                        &views[k],
                        block,
                        &self.config,
                        members[k].2,
                        schedule,
                    )
                })
                .collect()
        };
        let runs = if self.options.prefetch == Prefetch::Beside {
            // A failed prefetch only leaves reads to the transactions.
            rayon::join(run_all, warm).0
        } else {
            run_all()
        };
        let unit_exec = t.elapsed();
        let setup = start.elapsed() - unit_exec - warmer;

        let mut imported: Vec<ImportOutcome> = Vec::with_capacity(taken);
        let mut alone = None;
        for (k, run) in runs.into_iter().enumerate() {
            // The view or the BAL is wrong, or the block is invalid: the block is judged
            // on its own, so the verdict is `import_block`'s.
            let Ok(ParallelRun::Ran(executed)) = run else {
                alone = Some(k);
                break;
            };
            let longest = executed.longest_tx;
            match self.import_with(blocks[k].clone(), Execution::Prerun(executed)) {
                Ok(mut outcome) => {
                    outcome.timings.longest_tx = longest;
                    if k == 0 {
                        // The unit's shared work is counted once, on its first block.
                        outcome.timings.warmer += warmer;
                        outcome.timings.exec += unit_exec + setup;
                        outcome.timings.total += warmer + unit_exec + setup;
                    }
                    imported.push(outcome);
                }
                Err(_) => {
                    alone = Some(k);
                    break;
                }
            }
        }
        // Across the unit the critical path is its longest transaction, not the sum: the
        // unit's longest is reported on its first block, however the unit ends.
        let longest = imported.iter().map(|o| o.timings.longest_tx).max().unwrap_or_default();
        for (k, outcome) in imported.iter_mut().enumerate() {
            outcome.timings.longest_tx = if k == 0 { longest } else { Duration::ZERO };
        }
        UnitEnd { imported, alone }
    }
}
