//! Per-block rows, per-mode medians, the stdout table and the JSON report.

use ethrex_blockchain::{ExecutionPath, ImportOutcome};
use serde::Serialize;
use std::time::Duration;

/// Throughput and stage times of one block, or their per-mode medians.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Stages {
    pub(crate) ggas_per_s: f64,
    pub(crate) total_ms: f64,
    pub(crate) recover_ms: f64,
    pub(crate) warmer_ms: f64,
    /// A BAL design's check reads (parent values of the carried keys), beside execution
    /// and within `exec_ms`.
    pub(crate) check_reads_ms: f64,
    pub(crate) exec_ms: f64,
    pub(crate) validate_ms: f64,
    pub(crate) merkle_ms: f64,
    pub(crate) store_ms: f64,
    /// Time the database took to write the block's batch, on the persister thread, after
    /// `import_block` returned (not part of `total`).
    pub(crate) persist_ms: f64,
    /// `--state-scheme binary`: applying the block's changes to the binary trie and
    /// committing it, after the import (not part of `total`; part of `wall`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) bintrie_ms: Option<f64>,
}

impl Stages {
    /// Each figure's median over `rows`, taken separately.
    fn median_of(rows: &[BlockRow]) -> Self {
        let m = |f: fn(&Stages) -> f64| median(rows.iter().map(|r| f(&r.stages)).collect());
        Self {
            ggas_per_s: m(|s| s.ggas_per_s),
            total_ms: m(|s| s.total_ms),
            recover_ms: m(|s| s.recover_ms),
            warmer_ms: m(|s| s.warmer_ms),
            check_reads_ms: m(|s| s.check_reads_ms),
            exec_ms: m(|s| s.exec_ms),
            validate_ms: m(|s| s.validate_ms),
            merkle_ms: m(|s| s.merkle_ms),
            store_ms: m(|s| s.store_ms),
            persist_ms: m(|s| s.persist_ms),
            bintrie_ms: rows
                .iter()
                .any(|r| r.stages.bintrie_ms.is_some())
                .then(|| median(rows.iter().filter_map(|r| r.stages.bintrie_ms).collect())),
        }
    }
}

/// One block's figures in one mode.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct BlockRow {
    pub(crate) number: u64,
    pub(crate) txs: usize,
    pub(crate) gas: u64,
    #[serde(flatten)]
    pub(crate) stages: Stages,
    /// `"parallel"` or `"sequential"`: how the block was executed.
    pub(crate) path: &'static str,
    /// Whether the state root was computed from the BAL alongside execution.
    pub(crate) root_from_bal: bool,
    /// `--state-scheme binary`: the binary trie's root after the block.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) binary_root: Option<String>,
    /// The parallel path's pieces, each timed on its thread (what `ethrex cores-model`
    /// schedules); parallel blocks only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) profile: Option<crate::cores_model::PieceTimes>,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn ggas(gas: u64, total: Duration) -> f64 {
    let s = total.as_secs_f64();
    if s > 0.0 {
        gas as f64 / s / 1e9
    } else {
        0.0
    }
}

impl BlockRow {
    /// The row of a block imported through the pipeline (`persist_ms` filled in later);
    /// `check_reads` is a BAL design consumer's check reads (zero for other modes).
    pub(crate) fn from_outcome(o: &ImportOutcome, check_reads: Duration) -> Self {
        let t = &o.timings;
        Self {
            number: o.number,
            txs: o.tx_count,
            gas: o.gas_used,
            stages: Stages {
                ggas_per_s: ggas(o.gas_used, t.total),
                total_ms: ms(t.total),
                recover_ms: ms(t.recover),
                warmer_ms: ms(t.warmer),
                check_reads_ms: ms(check_reads),
                exec_ms: ms(t.exec),
                validate_ms: ms(t.validate),
                merkle_ms: ms(t.merkle),
                store_ms: ms(t.store),
                persist_ms: 0.0,
                bintrie_ms: None,
            },
            path: match o.path {
                ExecutionPath::Parallel => "parallel",
                ExecutionPath::ParallelBatch => "parallel (mega block)",
                ExecutionPath::Strategy => "design",
                _ => "sequential",
            },
            root_from_bal: o.root_from_bal,
            binary_root: None,
            profile: o.profile.as_ref().map(|p| crate::cores_model::PieceTimes::new(p, &o.timings)),
        }
    }

    /// The binary trie's time and root after this block.
    pub(crate) fn set_binary(&mut self, took: Duration, root: alloy_primitives::B256) {
        self.stages.bintrie_ms = Some(ms(took));
        self.binary_root = Some(format!("{root:#x}"));
    }

    /// Execution alone: every other stage is zero.
    pub(crate) fn ceiling(number: u64, txs: usize, gas: u64, exec: Duration) -> Self {
        Self {
            number,
            txs,
            gas,
            stages: Stages {
                ggas_per_s: ggas(gas, exec),
                total_ms: ms(exec),
                exec_ms: ms(exec),
                ..Default::default()
            },
            path: "parallel",
            ..Default::default()
        }
    }
}

/// Median of `values` (mean of the middle two for an even count), 0 when empty.
pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(|a, b| a.total_cmp(b));
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// One mode's results: per-block rows and their medians. Serializes (without the name)
/// as the JSON report's entry for the mode.
#[derive(Debug, Clone, Serialize)]
pub struct ModeReport {
    /// The mode: `"sequential"`, `"sequential-pooled"`, `"parallel"`, `"ceiling"` or
    /// `"design:<name>"`.
    #[serde(skip)]
    pub name: &'static str,
    /// Each stage's median over the blocks, taken separately.
    pub(crate) median: Stages,
    /// One row per block, in import order.
    pub(crate) blocks: Vec<BlockRow>,
    /// The whole run as a syncing node sees it: every block's import plus the wait for
    /// its database write (the final flush included), back to back; pauses and the
    /// cold-cache preparation between blocks excluded.
    pub(crate) wall_ms: f64,
    /// The head's state root after the last block.
    pub(crate) final_state_root: String,
    /// `--state-scheme binary`: the binary trie's root after the last block.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_binary_root: Option<String>,
    /// `--reads trie`: account and slot reads execution made through the binary trie.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trie_reads: Option<u64>,
}

impl ModeReport {
    /// The report of mode `name` over `blocks`, with their medians, ending at state root
    /// `final_state_root`.
    pub(crate) fn new(
        name: &'static str,
        blocks: Vec<BlockRow>,
        wall: Duration,
        final_state_root: String,
    ) -> Self {
        Self {
            name,
            median: Stages::median_of(&blocks),
            blocks,
            wall_ms: ms(wall),
            final_state_root,
            final_binary_root: None,
            trie_reads: None,
        }
    }

    /// Records the binary trie's final root (the last block's) and, with `--reads trie`,
    /// how many reads went through it.
    pub(crate) fn set_binary(&mut self, trie_reads: Option<u64>) {
        self.final_binary_root = self.blocks.last().and_then(|b| b.binary_root.clone());
        self.trie_reads = trie_reads;
    }

    /// The binary trie's root after each block (`None` without `--state-scheme binary`).
    pub fn binary_roots(&self) -> Vec<Option<String>> {
        self.blocks.iter().map(|b| b.binary_root.clone()).collect()
    }

    /// Gas over the whole-run wall clock, in Mgas/s.
    pub fn wall_mgas_per_s(&self) -> f64 {
        let gas: u64 = self.blocks.iter().map(|b| b.gas).sum();
        if self.wall_ms > 0.0 {
            gas as f64 / self.wall_ms / 1e3
        } else {
            0.0
        }
    }
}

/// The per-mode table of per-block medians, with the ratio to sequential.
pub fn table(reports: &[ModeReport]) -> String {
    let seq = reports.iter().find(|r| r.name == "sequential").map(|r| r.median.ggas_per_s);
    let binary = reports.iter().any(|r| r.median.bintrie_ms.is_some());
    let mut out = String::new();
    out.push_str(&format!(
        "{:<19} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>13} {:>12} {:>10} {:>11}",
        "mode",
        "Ggas/s",
        "total",
        "recover",
        "warmer",
        "exec",
        "check rd",
        "validate",
        "merkle",
        "store",
        "vs seq",
        "root from BAL",
        "persist (bg)",
        "wall (s)",
        "wall Mgas/s"
    ));
    out.push_str(if binary { format!(" {:>9}\n", "bintrie") } else { "\n".into() }.as_str());
    for r in reports {
        let m = &r.median;
        let vs = seq
            .filter(|s| *s > 0.0)
            .map(|s| format!("{:.2}x", m.ggas_per_s / s))
            .unwrap_or_else(|| "-".into());
        let from_bal = r.blocks.iter().filter(|b| b.root_from_bal).count();
        out.push_str(&format!(
            "{:<19} {:>8.3} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9} {:>13} {:>12.2} {:>10.2} {:>11.1}",
            r.name, m.ggas_per_s, m.total_ms, m.recover_ms, m.warmer_ms, m.exec_ms, m.check_reads_ms, m.validate_ms, m.merkle_ms, m.store_ms, vs,
            format!("{from_bal}/{}", r.blocks.len()), m.persist_ms, r.wall_ms / 1e3, r.wall_mgas_per_s()
        ));
        match (binary, m.bintrie_ms) {
            (true, Some(b)) => out.push_str(&format!(" {b:>9.2}\n")),
            (true, None) => out.push_str(&format!(" {:>9}\n", "-")),
            _ => out.push('\n'),
        }
    }
    out.push_str("(per-block medians; times in ms; `check rd`: a BAL design's check reading the parent values of the\n keys it carries, beside execution and within `exec`; `store` is the commit on the import's critical path, `persist (bg)`\n the database write that follows on the persister thread, outside `total`, a write of several blocks shared equally\n among them; `wall` the whole run: imports plus waits for the writes, final flush included)\n");
    if binary {
        out.push_str("(`bintrie`: applying the block's executed changes to the binary trie and committing it to the\n database, after the import, outside `total`, inside `wall`; the MPT root is still computed and checked)\n");
    }
    out
}
