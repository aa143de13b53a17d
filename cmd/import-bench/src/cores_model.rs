//! What more cores would buy: the parallel path's pieces of every block, measured on one
//! core, scheduled on N simulated cores.
//!
//! A block on the parallel path is a chain of stages, and within each stage a set of
//! pieces that run on the pool side by side (see `Blockchain::execute_parallel`):
//!
//! 1. the header BAL prepared for the workers, beside the pre-block system calls;
//! 2. every transaction (its sender recovered, executed, checked against the BAL), taken
//!    largest gas limit first from one queue; beside them the checks of the block's own
//!    content and the state root from the BAL, whose work spreads over the pool (per
//!    account, then per subtree of the account trie: taken here as 16 equal grains, so
//!    no more than 16 cores shorten it);
//! 3. the verdicts in block order (one thread);
//! 4. the ordered commit (one thread), beside the receipts' root and the block's batch;
//! 5. the rest, on one thread: the pre-checks, the results against the header, the
//!    commit to the store, and whatever of the execution stage no piece accounts for.
//!
//! Each stage's pieces are placed by greedy list scheduling (the next piece in queue
//! order to the core free first), which is how the pool's workers take them. What the
//! model leaves out, by construction: contention between cores (memory bandwidth, shared
//! caches, the state cache's locks), which makes pieces slower on more cores than on
//! one, and the background database write, which a node overlaps with the next block (it
//! is reported beside, as a back-to-back bound). `check` compares the model with
//! measured runs at the core counts this machine has.

use crate::report::median;
use anyhow::{bail, Context};
use ethrex_blockchain::{BlockProfile, BlockTimings};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

/// The grains the state root's work is taken to split into (the account trie's 16
/// subtrees are its coarsest parallel unit).
pub const MERKLE_GRAINS: usize = 16;

/// One block's pieces, in milliseconds, as the import-bench JSON carries them.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PieceTimes {
    /// Stage 1.
    pub prepare_bal_ms: f64,
    /// Stage 1.
    pub pre_block_ms: f64,
    /// Stage 2: each transaction's `[gas limit, ms]`, in block order.
    pub txs: Vec<(u64, f64)>,
    /// Stage 2: the block's content checks.
    pub content_ms: f64,
    /// Stage 2: the state root from the BAL.
    pub merkle_ms: f64,
    /// Stage 3.
    pub verdicts_ms: f64,
    /// Stage 4: the ordered commit and the post-block stage.
    pub commit_ms: f64,
    /// Stage 4: the receipts' root and the block's batch.
    pub receipts_ms: f64,
    /// Stage 5: validation, the state root stage and the store.
    pub finish_ms: f64,
    /// Stage 5: the import's time outside every piece and stage above (pre-checks and
    /// what of execution no piece accounts for). Exact on one core only, where nothing
    /// overlaps; on more cores overlapping pieces make it smaller or zero.
    pub other_ms: f64,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

impl PieceTimes {
    /// The pieces of a block imported on the parallel path.
    pub fn new(p: &BlockProfile, t: &BlockTimings) -> Self {
        let e = &p.execution;
        let txs: Vec<(u64, f64)> = e.txs.iter().map(|c| (c.gas_limit, ms(c.took))).collect();
        let pieces = ms(e.prepare_bal)
            + ms(e.pre_block)
            + txs.iter().map(|(_, t)| t).sum::<f64>()
            + ms(e.verdicts)
            + ms(e.commit)
            + ms(p.merkle)
            + ms(p.receipts);
        let finish_ms = ms(t.validate) + ms(t.merkle) + ms(t.store);
        let outside_exec = ms(t.total) - ms(t.exec) - finish_ms - ms(t.content);
        let inside_exec = ms(t.exec) - pieces;
        Self {
            prepare_bal_ms: ms(e.prepare_bal),
            pre_block_ms: ms(e.pre_block),
            txs,
            content_ms: ms(t.content),
            merkle_ms: ms(p.merkle),
            verdicts_ms: ms(e.verdicts),
            commit_ms: ms(e.commit),
            receipts_ms: ms(p.receipts),
            finish_ms,
            other_ms: outside_exec.max(0.0) + inside_exec.max(0.0),
        }
    }

    /// Each piece's mean over `all` (the same block's pieces from several runs).
    pub fn mean(all: &[&PieceTimes]) -> Self {
        let n = all.len() as f64;
        let avg = |f: fn(&PieceTimes) -> f64| all.iter().map(|p| f(p)).sum::<f64>() / n;
        let txs = (0..all[0].txs.len())
            .map(|i| (all[0].txs[i].0, all.iter().map(|p| p.txs[i].1).sum::<f64>() / n))
            .collect();
        Self {
            prepare_bal_ms: avg(|p| p.prepare_bal_ms),
            pre_block_ms: avg(|p| p.pre_block_ms),
            txs,
            content_ms: avg(|p| p.content_ms),
            merkle_ms: avg(|p| p.merkle_ms),
            verdicts_ms: avg(|p| p.verdicts_ms),
            commit_ms: avg(|p| p.commit_ms),
            receipts_ms: avg(|p| p.receipts_ms),
            finish_ms: avg(|p| p.finish_ms),
            other_ms: avg(|p| p.other_ms),
        }
    }

    /// Every piece's time added up: the block's work on one core.
    pub fn work_ms(&self) -> f64 {
        self.prepare_bal_ms
            + self.pre_block_ms
            + self.txs.iter().map(|(_, t)| t).sum::<f64>()
            + self.content_ms
            + self.merkle_ms
            + self.verdicts_ms
            + self.commit_ms
            + self.receipts_ms
            + self.finish_ms
            + self.other_ms
    }

    /// The block's time on `cores` cores, by the model; and the second stage's alone.
    pub fn block_ms(&self, cores: usize) -> (f64, f64) {
        let setup = list_schedule([self.prepare_bal_ms, self.pre_block_ms], cores);
        let mut txs = self.txs.clone();
        // The workers' order (`Schedule::LongestFirst`, a stable sort by gas limit).
        txs.sort_by_key(|(gas, _)| std::cmp::Reverse(*gas));
        let grain = self.merkle_ms / MERKLE_GRAINS as f64;
        let section = list_schedule(
            std::iter::once(self.content_ms)
                .chain(std::iter::repeat_n(grain, MERKLE_GRAINS))
                .chain(txs.iter().map(|(_, t)| *t)),
            cores,
        );
        let commit = list_schedule([self.commit_ms, self.receipts_ms], cores);
        let serial = self.verdicts_ms + self.finish_ms + self.other_ms;
        (setup + section + commit + serial, section)
    }
}

/// The makespan of `pieces` on `cores` cores when each, in order, goes to the core that
/// is free first.
pub fn list_schedule(pieces: impl IntoIterator<Item = f64>, cores: usize) -> f64 {
    let mut free = vec![0.0f64; cores.max(1)];
    for piece in pieces {
        let first = free.iter_mut().min_by(|a, b| a.total_cmp(b)).expect("at least one core");
        *first += piece;
    }
    free.into_iter().fold(0.0, f64::max)
}

/// The figures of one import-bench run the model reads: its thread count and the
/// parallel mode's blocks.
#[derive(Debug, Clone)]
pub struct MeasuredRun {
    /// Where it was read from.
    pub path: String,
    /// The pool's threads.
    pub threads: usize,
    /// Its blocks.
    pub blocks: Vec<MeasuredBlock>,
}

/// One block of a measured run.
#[derive(Debug, Clone, Deserialize)]
pub struct MeasuredBlock {
    /// The block number.
    pub number: u64,
    /// Gas used.
    pub gas: u64,
    /// The import's time.
    pub total_ms: f64,
    /// The background database write.
    #[serde(default)]
    pub persist_ms: f64,
    /// The pieces (parallel blocks only).
    #[serde(default)]
    pub profile: Option<PieceTimes>,
}

#[derive(Deserialize)]
struct RunJson {
    machine: Machine,
    modes: std::collections::BTreeMap<String, ModeJson>,
}

#[derive(Deserialize)]
struct Machine {
    threads: usize,
}

#[derive(Deserialize)]
struct ModeJson {
    blocks: Vec<MeasuredBlock>,
}

impl MeasuredRun {
    /// The parallel mode of the import-bench JSON at `path`.
    pub fn read(path: &Path) -> anyhow::Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let json: RunJson = serde_json::from_str(&text)
            .with_context(|| format!("{} is not an import-bench JSON report", path.display()))?;
        let Some(mode) = json.modes.into_iter().find(|(name, _)| name == "parallel") else {
            bail!(
                "{} has no parallel mode (run import-bench with --mode parallel)",
                path.display()
            );
        };
        Ok(Self {
            path: path.display().to_string(),
            threads: json.machine.threads,
            blocks: mode.1.blocks,
        })
    }
}

/// The model's figures at one core count.
#[derive(Debug, Clone, Serialize)]
pub struct Prediction {
    /// Simulated cores.
    pub cores: usize,
    /// The median block's time.
    pub block_p50_ms: f64,
    /// Mean block time.
    pub block_mean_ms: f64,
    /// Gas over the chain's predicted time.
    pub mgas_s: f64,
    /// One core's chain time over this count's.
    pub speedup: f64,
    /// Share of the chain's predicted time in stage 2 (the transactions and what runs
    /// beside them); the rest is stages 1 and 3-5, which more cores shorten little.
    pub parallel_share: f64,
    /// Gas over the chain's time when blocks come back to back and each block's
    /// database write (its own thread) competes for the cores: per block the largest of
    /// its time, its write, and its work plus its write spread over every core.
    pub back_to_back_mgas_s: f64,
}

/// The model's check against measured runs at one thread count.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// The runs' JSON files.
    pub paths: Vec<String>,
    /// Their thread count.
    pub cores: usize,
    /// Measured median block time (of each block's median over the runs).
    pub measured_p50_ms: f64,
    /// Predicted median block time.
    pub predicted_p50_ms: f64,
    /// Measured mean block time (of each block's median over the runs).
    pub measured_mean_ms: f64,
    /// Predicted mean block time.
    pub predicted_mean_ms: f64,
}

impl Check {
    /// Predicted over measured median.
    pub fn p50_ratio(&self) -> f64 {
        self.predicted_p50_ms / self.measured_p50_ms
    }

    /// Predicted over measured mean.
    pub fn mean_ratio(&self) -> f64 {
        self.predicted_mean_ms / self.measured_mean_ms
    }

    /// Both within `tolerance` (0.10: 10%).
    pub fn within(&self, tolerance: f64) -> bool {
        (self.p50_ratio() - 1.0).abs() <= tolerance && (self.mean_ratio() - 1.0).abs() <= tolerance
    }
}

/// The model built from profile runs: every block's pieces.
pub struct Model {
    blocks: Vec<(u64, u64, f64, PieceTimes)>,
}

/// The indices of `values`' median: one for an odd count, the middle two for an even one.
fn median_indices(values: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let n = order.len();
    if n % 2 == 1 {
        vec![order[n / 2]]
    } else {
        vec![order[n / 2 - 1], order[n / 2]]
    }
}

impl MeasuredRun {
    /// Its blocks' numbers, in order: what two runs of one chain share.
    fn numbers(&self) -> Vec<u64> {
        self.blocks.iter().map(|b| b.number).collect()
    }
}

/// Every run holds the same blocks as the first.
fn same_chain(runs: &[MeasuredRun]) -> anyhow::Result<()> {
    let first = &runs[0];
    for r in &runs[1..] {
        if r.numbers() != first.numbers() {
            bail!("{} and {} are runs of different chains (other blocks)", first.path, r.path);
        }
    }
    Ok(())
}

impl Model {
    /// From a run whose every block took the parallel path on one thread.
    pub fn from_run(run: &MeasuredRun) -> anyhow::Result<Self> {
        Self::from_runs(std::slice::from_ref(run))
    }

    /// From runs of one chain whose every block took the parallel path on one thread:
    /// each block's pieces from the run whose time for that block is the median (the
    /// mean of the middle two for an even count), so one run slowed by a neighbour on the
    /// machine does not become the model.
    pub fn from_runs(runs: &[MeasuredRun]) -> anyhow::Result<Self> {
        let Some(first) = runs.first() else { bail!("no profile run given") };
        for run in runs {
            if run.threads != 1 {
                bail!(
                    "{} ran on {} threads: the profile must come from one thread (--threads 1), where no piece overlaps another",
                    run.path,
                    run.threads
                );
            }
            if let Some(b) = run.blocks.iter().find(|b| b.profile.is_none()) {
                bail!(
                    "{}: block {} did not take the parallel path (run with --parallel-threshold 0)",
                    run.path,
                    b.number
                );
            }
        }
        same_chain(runs)?;
        for r in &runs[1..] {
            let txs = |b: &MeasuredBlock| b.profile.as_ref().map_or(0, |p| p.txs.len());
            if let Some((b, _)) = first.blocks.iter().zip(&r.blocks).find(|(a, b)| txs(a) != txs(b))
            {
                bail!("{} and {} differ in block {}'s transactions", first.path, r.path, b.number);
            }
        }
        if first.blocks.is_empty() {
            bail!("{} has no blocks", first.path);
        }
        let blocks = (0..first.blocks.len())
            .map(|i| {
                let totals: Vec<f64> = runs.iter().map(|r| r.blocks[i].total_ms).collect();
                let middle: Vec<&MeasuredBlock> =
                    median_indices(&totals).into_iter().map(|r| &runs[r].blocks[i]).collect();
                let pieces: Vec<&PieceTimes> =
                    middle.iter().map(|b| b.profile.as_ref().expect("checked above")).collect();
                let write = middle.iter().map(|b| b.persist_ms).sum::<f64>() / middle.len() as f64;
                (middle[0].number, middle[0].gas, write, PieceTimes::mean(&pieces))
            })
            .collect();
        Ok(Self { blocks })
    }

    /// The predicted time of every block on `cores` cores, in chain order.
    pub fn block_times(&self, cores: usize) -> Vec<f64> {
        self.blocks.iter().map(|(_, _, _, p)| p.block_ms(cores).0).collect()
    }

    /// The model's figures at `cores`.
    pub fn predict(&self, cores: usize) -> Prediction {
        let gas: u64 = self.blocks.iter().map(|(_, g, _, _)| g).sum();
        let (times, sections): (Vec<f64>, Vec<f64>) =
            self.blocks.iter().map(|(_, _, _, p)| p.block_ms(cores)).unzip();
        let chain: f64 = times.iter().sum();
        let one: f64 = self.block_times(1).iter().sum();
        let section: f64 = sections.iter().sum();
        let back_to_back: f64 = self
            .blocks
            .iter()
            .zip(&times)
            .map(|((_, _, write, p), t)| t.max(*write).max((p.work_ms() + write) / cores as f64))
            .sum();
        Prediction {
            cores,
            block_p50_ms: median(times.clone()),
            block_mean_ms: chain / times.len() as f64,
            mgas_s: gas as f64 / chain / 1e3,
            speedup: one / chain,
            parallel_share: section / chain,
            back_to_back_mgas_s: gas as f64 / back_to_back / 1e3,
        }
    }

    /// The model against measured runs of the same chain at one thread count: each
    /// block's median time over the runs, against its prediction.
    pub fn check(&self, runs: &[MeasuredRun]) -> anyhow::Result<Check> {
        let Some(first) = runs.first() else { bail!("no run to check against") };
        if let Some(other) = runs.iter().find(|r| r.threads != first.threads) {
            bail!(
                "{} ran on {} threads and {} on {}: a check is at one thread count",
                first.path,
                first.threads,
                other.path,
                other.threads
            );
        }
        same_chain(runs)?;
        if first.numbers() != self.blocks.iter().map(|(n, ..)| *n).collect::<Vec<_>>() {
            bail!("{} is not a run of the profile's chain (other blocks)", first.path);
        }
        let predicted = self.block_times(first.threads);
        let measured: Vec<f64> = (0..first.blocks.len())
            .map(|i| median(runs.iter().map(|r| r.blocks[i].total_ms).collect()))
            .collect();
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        Ok(Check {
            paths: runs.iter().map(|r| r.path.clone()).collect(),
            cores: first.threads,
            measured_p50_ms: median(measured.clone()),
            predicted_p50_ms: median(predicted.clone()),
            measured_mean_ms: mean(&measured),
            predicted_mean_ms: mean(&predicted),
        })
    }
}

/// The predictions as a table.
pub fn prediction_table(predictions: &[Prediction]) -> String {
    let mut out = format!(
        "{:>5} {:>13} {:>14} {:>9} {:>8} {:>15} {:>20}\n",
        "cores",
        "block p50 ms",
        "block mean ms",
        "Mgas/s",
        "speedup",
        "stage 2 share",
        "back-to-back Mgas/s"
    );
    for p in predictions {
        out.push_str(&format!(
            "{:>5} {:>13.2} {:>14.2} {:>9.1} {:>7.2}x {:>14.0}% {:>20.1}\n",
            p.cores,
            p.block_p50_ms,
            p.block_mean_ms,
            p.mgas_s,
            p.speedup,
            p.parallel_share * 100.0,
            p.back_to_back_mgas_s
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(txs: &[f64]) -> PieceTimes {
        PieceTimes { txs: txs.iter().map(|t| (21_000, *t)).collect(), ..Default::default() }
    }

    #[test]
    fn equal_pieces_split_evenly_over_the_cores() {
        assert_eq!(list_schedule([1.0; 8], 1), 8.0);
        assert_eq!(list_schedule([1.0; 8], 2), 4.0);
        assert_eq!(list_schedule([1.0; 8], 16), 1.0);
    }

    #[test]
    fn the_longest_piece_bounds_the_schedule() {
        assert_eq!(list_schedule([10.0, 1.0, 1.0, 1.0], 4), 10.0);
        assert_eq!(list_schedule([10.0, 1.0, 1.0, 1.0], 64), 10.0);
    }

    #[test]
    fn the_workers_take_the_largest_gas_limit_first() {
        // Block order would put the long transaction last on two cores: 1+1 then 4 = 6.
        let mut p = pieces(&[1.0, 1.0, 4.0]);
        p.txs[2].0 = 1_000_000;
        assert_eq!(p.block_ms(2).0, 4.0);
    }

    #[test]
    fn serial_stages_do_not_shrink_with_cores() {
        let mut p = pieces(&[2.0; 8]);
        p.verdicts_ms = 1.0;
        p.finish_ms = 2.0;
        p.other_ms = 1.0;
        assert_eq!(p.block_ms(1).0, 20.0);
        assert_eq!(p.block_ms(8).0, 6.0);
        assert_eq!(p.block_ms(64).0, 6.0);
    }

    #[test]
    fn one_core_adds_every_piece_up() {
        let p = PieceTimes {
            prepare_bal_ms: 0.5,
            pre_block_ms: 0.25,
            txs: vec![(1, 3.0), (2, 1.0)],
            content_ms: 0.5,
            merkle_ms: 4.0,
            verdicts_ms: 0.25,
            commit_ms: 1.0,
            receipts_ms: 0.5,
            finish_ms: 1.0,
            other_ms: 0.5,
        };
        assert!((p.block_ms(1).0 - p.work_ms()).abs() < 1e-9);
        assert!(p.block_ms(2).0 < p.work_ms());
    }

    #[test]
    fn the_state_root_shortens_no_further_than_its_grains() {
        let mut p = pieces(&[]);
        p.merkle_ms = 16.0;
        assert_eq!(p.block_ms(16).0, 1.0);
        assert_eq!(p.block_ms(64).0, 1.0);
    }

    fn run(threads: usize, blocks: Vec<MeasuredBlock>) -> MeasuredRun {
        MeasuredRun { path: "run.json".into(), threads, blocks }
    }

    fn block(number: u64, total_ms: f64, profile: Option<PieceTimes>) -> MeasuredBlock {
        MeasuredBlock { number, gas: 1_000_000, total_ms, persist_ms: 0.0, profile }
    }

    #[test]
    fn a_profile_taken_on_more_than_one_thread_is_refused() {
        let r = run(2, vec![block(1, 1.0, Some(pieces(&[1.0])))]);
        assert!(Model::from_run(&r).err().unwrap().to_string().contains("one thread"));
    }

    #[test]
    fn a_profile_with_a_sequential_block_is_refused() {
        let r = run(1, vec![block(1, 1.0, None)]);
        assert!(Model::from_run(&r).err().unwrap().to_string().contains("parallel path"));
    }

    #[test]
    fn a_check_against_another_chain_is_refused() {
        let model = Model::from_run(&run(1, vec![block(1, 2.0, Some(pieces(&[2.0])))])).unwrap();
        assert!(model.check(&[run(2, vec![block(7, 1.0, None)])]).is_err());
    }

    #[test]
    fn a_check_compares_the_prediction_at_the_runs_cores() {
        let model =
            Model::from_run(&run(1, vec![block(1, 4.0, Some(pieces(&[1.0, 1.0, 1.0, 1.0])))]))
                .unwrap();
        let check = model.check(&[run(2, vec![block(1, 2.5, None)])]).unwrap();
        assert_eq!(check.predicted_p50_ms, 2.0);
        assert!((check.p50_ratio() - 0.8).abs() < 1e-9);
        assert!(!check.within(0.10));
        assert!(check.within(0.25));
    }

    #[test]
    fn the_back_to_back_bound_counts_the_write_on_the_cores() {
        let mut b = block(1, 4.0, Some(pieces(&[1.0, 1.0, 1.0, 1.0])));
        b.persist_ms = 4.0;
        let model = Model::from_run(&run(1, vec![b])).unwrap();
        // Two cores: the block alone takes 2 ms, but its 4 ms of work and 4 ms write
        // need 4 ms of both cores; the write alone needs 4 ms of one.
        let p = model.predict(2);
        assert_eq!(p.block_mean_ms, 2.0);
        assert!((p.back_to_back_mgas_s - 1.0e6 / 4.0 / 1e3).abs() < 1e-9);
    }

    #[test]
    fn each_block_takes_its_pieces_from_the_median_profile_run() {
        let runs = [
            run(1, vec![block(1, 9.0, Some(pieces(&[9.0])))]),
            run(1, vec![block(1, 3.0, Some(pieces(&[3.0])))]),
            run(1, vec![block(1, 4.0, Some(pieces(&[4.0])))]),
        ];
        let model = Model::from_runs(&runs).unwrap();
        assert_eq!(model.block_times(1), vec![4.0]);
        // An even count: the middle two's mean.
        let model = Model::from_runs(&runs[..2]).unwrap();
        assert_eq!(model.block_times(1), vec![6.0]);
    }

    #[test]
    fn a_check_takes_each_blocks_median_over_its_runs() {
        let model =
            Model::from_run(&run(1, vec![block(1, 4.0, Some(pieces(&[2.0, 2.0])))])).unwrap();
        let runs = [
            run(2, vec![block(1, 2.0, None)]),
            run(2, vec![block(1, 30.0, None)]),
            run(2, vec![block(1, 2.2, None)]),
        ];
        let check = model.check(&runs).unwrap();
        assert_eq!(check.measured_p50_ms, 2.2);
        assert!(check.within(0.10));
    }

    #[test]
    fn a_check_mixing_thread_counts_is_refused() {
        let model = Model::from_run(&run(1, vec![block(1, 2.0, Some(pieces(&[2.0])))])).unwrap();
        let runs = [run(1, vec![block(1, 2.0, None)]), run(2, vec![block(1, 1.0, None)])];
        assert!(model.check(&runs).err().unwrap().to_string().contains("one thread count"));
    }
}
