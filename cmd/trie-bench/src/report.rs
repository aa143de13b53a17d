//! The study's tables (ours beside the published figures), JSON and SVG plots.

use crate::bench::{Config, Sample, Scheme};
use crate::stats::{cv_pct, mann_whitney_u, median};
use crate::workload::Workload;
use crate::Args;
use anyhow::Context;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

/// The published study's medians (geth, Pebble, ~360 GB / ~400M entries, cold cache, 9
/// measured runs of 10), Mgas/s at GD-1..8, where it gives them.
pub fn published(workload: Workload) -> Option<[f64; 8]> {
    match workload {
        Workload::Erc20BalanceOf => Some([2.65, 3.95, 5.20, 5.46, 6.11, 6.39, 6.04, 5.59]),
        Workload::Erc20Approve => Some([2.67, 4.42, 5.95, 6.47, 6.94, 6.41, 5.81, 4.47]),
        _ => None,
    }
}

/// What the study says of workloads it gives no per-depth figures for.
pub fn published_note(workload: Workload) -> &'static str {
    match workload {
        Workload::Erc20BalanceOf => "study: best GD-6 (6.39 Mgas/s), 2.4x GD-1",
        Workload::Erc20Approve => {
            "study: best GD-5 (6.94 Mgas/s), 2.6x GD-1; GD-5 split read/update/commit = 271/242/57 ms"
        }
        Workload::Erc20Mixed => "study: best GD-6 (6.27 Mgas/s)",
        Workload::SloadSeq | Workload::SstoreSeq => {
            "study: sequential synthetic keys barely differ between depths (~10%)"
        }
    }
}

/// The study's best depth for a workload, where it names one.
fn published_best(workload: Workload) -> Option<u8> {
    match workload {
        Workload::Erc20BalanceOf | Workload::Erc20Mixed => Some(6),
        Workload::Erc20Approve => Some(5),
        _ => None,
    }
}

/// Medians of the three phases and their sum, in milliseconds.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct MedianMs {
    /// Reads through the trie.
    pub state_read: f64,
    /// Writes and re-hash.
    pub trie_update: f64,
    /// Node encoding and the batch write.
    pub commit: f64,
    /// The median of the per-run totals (not the sum of the medians).
    pub total: f64,
}

/// One configuration on one workload.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// `mpt` or `binary`.
    pub scheme: &'static str,
    /// The group depth (binary), `null` for the MPT.
    pub group_depth: Option<u8>,
    /// The workload's name.
    pub workload: &'static str,
    /// Runs made (the first one a warm-up).
    pub runs: u64,
    /// Runs measured (2..=runs).
    pub measured_runs: usize,
    /// Medians over the measured runs.
    pub median_ms: MedianMs,
    /// Gas of one run over the median total time.
    pub mgas_per_s: f64,
    /// Coefficient of variation of the total time, percent.
    pub cv_pct: f64,
    /// Mann-Whitney U p-value (two-sided) of the total times against GD-1.
    pub p_vs_gd1: Option<f64>,
    /// The same against the next smaller measured depth.
    pub p_vs_prev: Option<f64>,
    /// Median nodes read from the backend per run.
    pub nodes_loaded: f64,
    /// Gas charged per run (see `workload`).
    pub gas_per_run: u64,
    /// The published Mgas/s of this depth and workload, if any.
    pub published_mgas_per_s: Option<f64>,
    /// Total time of every measured run, ms.
    pub totals_ms: Vec<f64>,
}

/// Facts of the run besides the rows.
#[derive(Debug, Clone, Serialize)]
pub struct Meta {
    /// How the page cache was dropped (`drop_caches`, `fadvise`, `none`).
    pub cache_drop: &'static str,
    /// Seconds spent prefilling the databases.
    pub prefill_s: f64,
    /// Seconds of the whole study.
    pub total_s: f64,
    /// Database size after the prefill, per configuration.
    pub db_bytes: Vec<(String, u64)>,
}

/// The study's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Holders (and sequential slots).
    pub entries: u64,
    /// Transactions per run.
    pub txs: usize,
    /// Backend.
    pub db: &'static str,
    /// Whether caches were dropped before each run.
    pub cold: bool,
    /// Seed of the keys.
    pub seed: u64,
    /// Logical CPUs of the machine.
    pub cpus: usize,
    /// Run facts.
    pub meta: Meta,
    /// One row per configuration and workload.
    pub rows: Vec<Row>,
}

fn row(
    config: &Config,
    workload: Workload,
    args: &Args,
    samples: &[Sample],
    gd1: Option<&[f64]>,
    prev: Option<&[f64]>,
) -> Row {
    // Run 1 is the warm-up.
    let measured = &samples[1.min(samples.len().saturating_sub(1))..];
    let pick = |f: fn(&Sample) -> f64| measured.iter().map(f).collect::<Vec<f64>>();
    let totals = pick(Sample::total);
    let total = median(&totals);
    let gas = workload.gas(args.txs);
    let p = |other: Option<&[f64]>| other.and_then(|o| mann_whitney_u(&totals, o)).map(|r| r.p);
    Row {
        scheme: config.scheme.name(),
        group_depth: config.group_depth,
        workload: workload.name(),
        runs: args.runs,
        measured_runs: measured.len(),
        median_ms: MedianMs {
            state_read: median(&pick(|s| s.state_read)),
            trie_update: median(&pick(|s| s.trie_update)),
            commit: median(&pick(|s| s.commit)),
            total,
        },
        mgas_per_s: gas as f64 / total / 1e3,
        cv_pct: cv_pct(&totals),
        p_vs_gd1: if config.group_depth == Some(1) { None } else { p(gd1) },
        p_vs_prev: p(prev),
        nodes_loaded: median(&pick(|s| s.nodes_loaded as f64)),
        gas_per_run: gas,
        published_mgas_per_s: config
            .group_depth
            .and_then(|g| published(workload).map(|p| p[g as usize - 1])),
        totals_ms: totals,
    }
}

fn fmt_p(p: Option<f64>) -> String {
    match p {
        None => "-".into(),
        Some(p) if p < 0.001 => format!("{p:.1e}"),
        Some(p) => format!("{p:.3}"),
    }
}

impl Report {
    /// Builds the rows from the samples of every configuration and workload.
    pub fn new(
        args: &Args,
        configs: &[Config],
        workloads: &[Workload],
        samples: &BTreeMap<(Workload, Config), Vec<Sample>>,
        meta: Meta,
    ) -> Self {
        let totals = |w: Workload, c: &Config| -> Option<Vec<f64>> {
            samples.get(&(w, *c)).map(|s| s.iter().skip(1).map(Sample::total).collect())
        };
        let mut rows = Vec::new();
        for &w in workloads {
            let gd1 = configs.iter().find(|c| c.group_depth == Some(1)).and_then(|c| totals(w, c));
            let mut prev: Option<Vec<f64>> = None;
            for c in configs {
                let Some(s) = samples.get(&(w, *c)) else { continue };
                let p_prev = if c.scheme == Scheme::Binary { prev.as_deref() } else { None };
                rows.push(row(c, w, args, s, gd1.as_deref(), p_prev));
                if c.scheme == Scheme::Binary {
                    prev = totals(w, c);
                }
            }
        }
        Report {
            entries: args.entries,
            txs: args.txs,
            db: args.db.name(),
            cold: args.cold,
            seed: args.seed,
            cpus: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            meta,
            rows,
        }
    }

    fn workloads(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = Vec::new();
        for r in &self.rows {
            if !names.contains(&r.workload) {
                names.push(r.workload);
            }
        }
        names
    }

    fn rows_of<'a>(&'a self, workload: &'a str) -> impl Iterator<Item = &'a Row> + 'a {
        self.rows.iter().filter(move |r| r.workload == workload)
    }

    /// The best binary depth on `workload` by Mgas/s, and the p-value of its total times
    /// against the runner-up's.
    pub fn best_depth(&self, workload: &str) -> Option<(u8, f64, Option<f64>)> {
        let mut binary: Vec<&Row> =
            self.rows_of(workload).filter(|r| r.group_depth.is_some()).collect();
        binary.sort_by(|a, b| b.mgas_per_s.total_cmp(&a.mgas_per_s));
        let best = binary.first()?;
        let p = binary
            .get(1)
            .and_then(|second| mann_whitney_u(&best.totals_ms, &second.totals_ms))
            .map(|r| r.p);
        Some((best.group_depth?, best.mgas_per_s, p))
    }

    /// The tables, as Markdown.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "# Binary-trie group depth study (ethrex trie-bench)\n");
        let _ = writeln!(
            s,
            "{} holders + {} sequential slots ({} values), {} transactions per run, {} runs \
             (first a warm-up), {} backend, {}, {} CPUs. Study run time {:.1} min \
             (prefill {:.1} min).\n",
            self.entries,
            self.entries,
            3 * self.entries,
            self.txs,
            self.rows.first().map_or(0, |r| r.runs),
            self.db,
            if self.cold {
                format!("cold (page cache dropped by {} before every run)", self.meta.cache_drop)
            } else {
                "warm".to_string()
            },
            self.cpus,
            self.meta.total_s / 60.0,
            self.meta.prefill_s / 60.0,
        );
        let _ = writeln!(
            s,
            "Medians of the measured runs in ms; Mgas/s = gas per run (derived from the gas \
             schedule, not executed: see `cmd/trie-bench/src/workload.rs`) over the median \
             total; x GD-1 = Mgas/s relative to GD-1; p = two-sided Mann-Whitney U of the \
             total times; loads = nodes read from the backend per run.\n"
        );
        for workload in self.workloads() {
            let w: Workload = workload.parse().expect("own names");
            let gd1 =
                self.rows_of(workload).find(|r| r.group_depth == Some(1)).map(|r| r.mgas_per_s);
            let study = published(w);
            let _ = writeln!(s, "## {workload}\n\n{}\n", published_note(w));
            let _ = writeln!(
                s,
                "| config | read ms | update ms | commit ms | total ms | Mgas/s | x GD-1 | \
                 study Mgas/s | study x GD-1 | CV % | p vs GD-1 | p vs prev | loads |"
            );
            let _ =
                writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
            for r in self.rows_of(workload) {
                let label = r.group_depth.map_or("MPT".to_string(), |g| format!("GD-{g}"));
                let rel = gd1.map_or("-".into(), |g| format!("{:.2}", r.mgas_per_s / g));
                let (pub_abs, pub_rel) = match (study, r.group_depth) {
                    (Some(p), Some(g)) => (
                        format!("{:.2}", p[g as usize - 1]),
                        format!("{:.2}", p[g as usize - 1] / p[0]),
                    ),
                    _ => ("-".into(), "-".into()),
                };
                let m = r.median_ms;
                let _ = writeln!(
                    s,
                    "| {label} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2} | {rel} | {pub_abs} | \
                     {pub_rel} | {:.1} | {} | {} | {:.0} |",
                    m.state_read,
                    m.trie_update,
                    m.commit,
                    m.total,
                    r.mgas_per_s,
                    r.cv_pct,
                    fmt_p(r.p_vs_gd1),
                    fmt_p(r.p_vs_prev),
                    r.nodes_loaded
                );
            }
            if let Some((g, mgas, p)) = self.best_depth(workload) {
                let spread = {
                    let v: Vec<f64> = self
                        .rows_of(workload)
                        .filter(|r| r.group_depth.is_some())
                        .map(|r| r.mgas_per_s)
                        .collect();
                    let (lo, hi) =
                        v.iter().fold((f64::MAX, 0.0f64), |(l, h), x| (l.min(*x), h.max(*x)));
                    (hi / lo - 1.0) * 100.0
                };
                let _ = writeln!(
                    s,
                    "\nBest here: GD-{g} ({mgas:.2} Mgas/s; p vs the runner-up {}; best/worst \
                     depth {spread:.0}% apart){}.\n",
                    fmt_p(p),
                    published_best(w).map_or(String::new(), |b| format!("; the study's: GD-{b}"))
                );
            } else {
                s.push('\n');
            }
        }
        let _ = writeln!(s, "## Summary\n");
        let _ =
            writeln!(s, "| workload | best depth here | Mgas/s | p vs runner-up | study's best |");
        let _ = writeln!(s, "|---|---|---:|---:|---|");
        for workload in self.workloads() {
            let w: Workload = workload.parse().expect("own names");
            if let Some((g, mgas, p)) = self.best_depth(workload) {
                let _ = writeln!(
                    s,
                    "| {workload} | GD-{g} | {mgas:.2} | {} | {} |",
                    fmt_p(p),
                    published_best(w).map_or("~flat".to_string(), |b| format!("GD-{b}"))
                );
            }
        }
        let _ = writeln!(s, "\nDatabase sizes after the prefill:");
        for (label, bytes) in &self.meta.db_bytes {
            let _ = write!(s, " {label} {:.0} MB;", *bytes as f64 / 1e6);
        }
        s.push('\n');
        s
    }

    /// The report as JSON (`{"rows": [...], ...}`).
    pub fn json(&self) -> anyhow::Result<String> {
        Ok(serde_json::to_string_pretty(self)?)
    }

    /// Writes trie-study.md, trie-study.json and one SVG per workload into `dir`.
    pub fn write_dir(&self, dir: &Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let write = |name: &str, text: String| {
            let path = dir.join(name);
            std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
        };
        write("trie-study.md", self.markdown())?;
        write("trie-study.json", self.json()?)?;
        for workload in self.workloads() {
            write(&format!("trie-study-{workload}.svg"), self.svg(workload))?;
        }
        Ok(())
    }

    /// One workload's plot: stacked median phase times per configuration, and Mgas/s
    /// relative to GD-1, ours beside the study's.
    pub fn svg(&self, workload: &str) -> String {
        const PHASES: [(&str, &str); 3] =
            [("state read", "#80b1d3"), ("trie update", "#fb8072"), ("commit", "#fdb462")];
        let rows: Vec<&Row> = self.rows_of(workload).collect();
        let w: Workload = workload.parse().expect("own names");
        let (width, panel_h) = (900.0, 260.0);
        let height = 60.0 + 2.0 * (panel_h + 50.0);
        let mut s = String::new();
        let _ = write!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">"#
        );
        let _ = write!(
            s,
            r#"<rect width="100%" height="100%" fill="white"/><text x="10" y="20" font-size="16">trie-bench {workload}: median phase times (ms) and Mgas/s relative to GD-1</text>"#
        );
        let n = rows.len().max(1) as f64;
        let slot = (width - 100.0) / n;
        let bar = (slot * 0.6).min(60.0);
        // Panel 1: stacked phases.
        let top = 50.0;
        let max_total = rows
            .iter()
            .map(|r| r.median_ms.state_read + r.median_ms.trie_update + r.median_ms.commit)
            .fold(0.0f64, f64::max)
            .max(1e-9);
        let _ = write!(s, r#"<text x="10" y="{}">{max_total:.1} ms</text>"#, top + 10.0);
        for (i, r) in rows.iter().enumerate() {
            let x = 80.0 + i as f64 * slot;
            let mut y = top + panel_h;
            for (k, v) in [r.median_ms.state_read, r.median_ms.trie_update, r.median_ms.commit]
                .iter()
                .enumerate()
            {
                let h = v / max_total * panel_h;
                y -= h;
                let _ = write!(
                    s,
                    r#"<rect x="{x:.1}" y="{y:.1}" width="{bar:.1}" height="{h:.1}" fill="{}"/>"#,
                    PHASES[k].1
                );
            }
            let label = r.group_depth.map_or("MPT".to_string(), |g| format!("GD-{g}"));
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{label}</text>"#,
                x + bar / 2.0,
                top + panel_h + 15.0
            );
        }
        for (k, (name, color)) in PHASES.iter().enumerate() {
            let x = 80.0 + k as f64 * 120.0;
            let y = top + panel_h + 25.0;
            let _ = write!(
                s,
                r#"<rect x="{x}" y="{y}" width="12" height="12" fill="{color}"/><text x="{}" y="{}">{name}</text>"#,
                x + 16.0,
                y + 11.0
            );
        }
        // Panel 2: relative Mgas/s, binary depths only.
        let top = top + panel_h + 70.0;
        let binary: Vec<&&Row> = rows.iter().filter(|r| r.group_depth.is_some()).collect();
        let gd1 = binary.iter().find(|r| r.group_depth == Some(1)).map(|r| r.mgas_per_s);
        let study = published(w);
        let rel: Vec<(u8, f64, Option<f64>)> = binary
            .iter()
            .filter_map(|r| {
                let g = r.group_depth?;
                Some((g, r.mgas_per_s / gd1?, study.map(|p| p[g as usize - 1] / p[0])))
            })
            .collect();
        let max_rel =
            rel.iter().flat_map(|(_, a, b)| [*a, b.unwrap_or(0.0)]).fold(1.0f64, f64::max) * 1.1;
        let _ = write!(
            s,
            r#"<text x="10" y="{}" font-weight="bold">Mgas/s / GD-1 (bars: here; dots: the published study)</text>"#,
            top - 8.0
        );
        let y_of = |v: f64| top + panel_h - v / max_rel * panel_h;
        let _ = write!(
            s,
            r#"<line x1="70" x2="{}" y1="{:.1}" y2="{:.1}" stroke="grey" stroke-dasharray="4"/><text x="10" y="{:.1}">1.0</text><text x="10" y="{:.1}">{max_rel:.2}</text>"#,
            width - 20.0,
            y_of(1.0),
            y_of(1.0),
            y_of(1.0) + 4.0,
            top + 4.0
        );
        let slot = (width - 100.0) / rel.len().max(1) as f64;
        for (i, (g, ours, theirs)) in rel.iter().enumerate() {
            let x = 80.0 + i as f64 * slot;
            let _ = write!(
                s,
                r#"<rect x="{x:.1}" y="{:.1}" width="{bar:.1}" height="{:.1}" fill="{}"/><text x="{:.1}" y="{:.1}" text-anchor="middle">GD-{g} ({ours:.2})</text>"#,
                y_of(*ours),
                top + panel_h - y_of(*ours),
                PHASES[0].1,
                x + bar / 2.0,
                top + panel_h + 15.0
            );
            if let Some(t) = theirs {
                let _ = write!(
                    s,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="5" fill="black"/>"#,
                    x + bar / 2.0,
                    y_of(*t)
                );
            }
        }
        s.push_str("</svg>\n");
        s
    }
}
