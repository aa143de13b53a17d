//! `ethrex ef-test`: runs fixtures, prints one line per failing test and a summary.

use anyhow::Context;
use clap::Args;
use ethrex_ef_tests::{find_fixture_files, run_file, CaseResult, Mode, RunOptions};
use ethrex_storage::DbKind;
use rayon::prelude::*;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct EfTestArgs {
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

pub fn run(args: EfTestArgs) -> anyhow::Result<ExitCode> {
    let files = find_fixture_files(&args.paths).map_err(anyhow::Error::msg)?;
    let options = RunOptions {
        db: args.db,
        mode: args.mode,
        parallel_threshold: args.tuning.parallel_threshold,
        warmer: args.tuning.bal_warmer,
        parallel_trie: !args.tuning.no_bal_parallel_trie,
    };
    let results: Vec<CaseResult> = files.par_iter().flat_map_iter(|f| run_file(f, &options)).collect();
    let mut failed = 0usize;
    for r in &results {
        if let Err(reason) = &r.outcome {
            failed += 1;
            println!("FAIL {} :: {}: {}", r.file.display(), r.name, reason);
        }
    }
    if let Some(path) = &args.json {
        let rows: Vec<serde_json::Value> = results
            .iter()
            .map(|r| {
                serde_json::json!({
                    "file": r.file.display().to_string(),
                    "name": r.name,
                    "passed": r.outcome.is_ok(),
                    "reason": r.outcome.as_ref().err(),
                })
            })
            .collect();
        std::fs::write(path, serde_json::to_string_pretty(&rows)?).with_context(|| format!("writing {}", path.display()))?;
    }
    println!("{} passed, {} failed", results.len() - failed, failed);
    Ok(if failed == 0 && !results.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
