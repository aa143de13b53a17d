//! `ethrex cores-model`: the parallel path's block time at more cores than this machine
//! has, from one-core import-bench runs' pieces, checked against measured runs.

use anyhow::Context;
use clap::Args;
use ethrex_import_bench::cores_model::{prediction_table, MeasuredRun, Model};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub(crate) struct CoresModelArgs {
    /// An import-bench JSON report of the parallel mode on one thread, every block on
    /// the parallel path (`import-bench --mode parallel --threads 1 --parallel-threshold
    /// 0 --json FILE`, best pinned to one core with taskset): the pieces the model
    /// schedules. Repeatable: each block's pieces then come from the run with its median
    /// time.
    #[arg(long, required = true)]
    profile: Vec<PathBuf>,
    /// Measured import-bench JSON reports of the same chain (parallel mode, any thread
    /// count) to compare the model with; repeatable. Runs at one thread count make one
    /// check, on each block's median over them.
    #[arg(long)]
    check: Vec<PathBuf>,
    /// The core counts to predict.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16,32,64")]
    cores: Vec<usize>,
    /// How far a check's prediction may be from its measurement (0.10: 10%); a check
    /// further off fails the command.
    #[arg(long, default_value_t = 0.10)]
    tolerance: f64,
    /// Write the predictions and the checks as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
}

pub(crate) fn run(a: CoresModelArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(!a.cores.contains(&0), "--cores counts must be at least 1");
    let profiles =
        a.profile.iter().map(|p| MeasuredRun::read(p)).collect::<anyhow::Result<Vec<_>>>()?;
    let model = Model::from_runs(&profiles)?;
    let predictions: Vec<_> = a.cores.iter().map(|&n| model.predict(n)).collect();
    let names: Vec<&str> = profiles.iter().map(|r| r.path.as_str()).collect();
    println!("{} blocks, pieces from {}:", profiles[0].blocks.len(), names.join(", "));
    print!("{}", prediction_table(&predictions));
    let mut by_cores: BTreeMap<usize, Vec<MeasuredRun>> = BTreeMap::new();
    for path in &a.check {
        let run = MeasuredRun::read(path)?;
        by_cores.entry(run.threads).or_default().push(run);
    }
    let checks =
        by_cores.values().map(|runs| model.check(runs)).collect::<anyhow::Result<Vec<_>>>()?;
    let mut off = 0;
    for c in &checks {
        let ok = c.within(a.tolerance);
        off += !ok as usize;
        println!(
            "check at {} cores ({} runs: {}): median {:.2} ms measured, {:.2} predicted ({:+.1}%); mean {:.2} measured, {:.2} predicted ({:+.1}%){}",
            c.cores,
            c.paths.len(),
            c.paths.join(", "),
            c.measured_p50_ms,
            c.predicted_p50_ms,
            (c.p50_ratio() - 1.0) * 100.0,
            c.measured_mean_ms,
            c.predicted_mean_ms,
            (c.mean_ratio() - 1.0) * 100.0,
            if ok { "" } else { "  OFF BY MORE THAN THE TOLERANCE" }
        );
    }
    if let Some(path) = &a.json {
        let json = serde_json::json!({
            "profiles": names,
            "blocks": profiles[0].blocks.len(),
            "merkle_grains": ethrex_import_bench::cores_model::MERKLE_GRAINS,
            "predictions": predictions,
            "checks": checks,
            "tolerance": a.tolerance,
        });
        std::fs::write(path, serde_json::to_string_pretty(&json)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(if off == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
