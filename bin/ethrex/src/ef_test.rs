//! `ethrex ef-test`: runs fixtures; prints one line per failing or skipped test (with its
//! reason), one count line per file, and a summary.

use anyhow::Context;
use clap::Args;
use ethrex_blockchain::Cores;
use ethrex_ef_tests::{find_fixture_files, report, run_file, CaseResult, Counts, Mode, RunOptions};
use ethrex_storage::DbKind;
use rayon::prelude::*;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub(crate) struct EfTestArgs {
    /// Database backend each test runs on.
    #[arg(long, default_value = "memory", value_parser = parse_db)]
    db: DbKind,
    /// Execution path: sequential, parallel, or both (which must then agree).
    #[arg(long, default_value = "sequential", value_parser = parse_mode)]
    mode: Mode,
    #[command(flatten)]
    tuning: crate::node_cmd::ParallelTuning,
    /// Also write every result as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Fixture files or directories (searched recursively for .json files).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

fn parse_db(s: &str) -> Result<DbKind, String> {
    s.parse()
}

fn parse_mode(s: &str) -> Result<Mode, String> {
    s.parse()
}

pub(crate) fn run(args: EfTestArgs) -> anyhow::Result<ExitCode> {
    let files = find_fixture_files(&args.paths).map_err(anyhow::Error::msg)?;
    let options =
        RunOptions { db: args.db, mode: args.mode, import: args.tuning.options(Cores::Pool) };
    let results: Vec<CaseResult> =
        files.par_iter().flat_map_iter(|f| run_file(f, &options)).collect();
    print!("{}", report(&results));
    if let Some(path) = &args.json {
        let rows: Vec<serde_json::Value> = results
            .iter()
            .map(|r| {
                serde_json::json!({
                    "file": r.file.display().to_string(),
                    "name": r.name,
                    "status": r.outcome.label(),
                    "passed": r.outcome.is_passed(),
                    "reason": r.outcome.reason(),
                })
            })
            .collect();
        std::fs::write(path, serde_json::to_string_pretty(&rows)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let total = Counts::of(&results);
    Ok(if total.failed == 0 && total.passed > 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
