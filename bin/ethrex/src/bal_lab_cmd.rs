//! `ethrex bal-lab`.

use anyhow::Context;
use clap::{Args, Subcommand};
use ethrex_bal::BalDesign;
use ethrex_bal::DesignBal;
use ethrex_common::Fork;
use ethrex_ef_tests::fixture::BlockchainTest;
use ethrex_ef_tests::runner::is_blockchain_test;
use ethrex_ef_tests::{find_fixture_files, valid_chain};
use ethrex_import_bench::bal_lab::{
    sizes, sizes_json, sizes_svg, sizes_table, summarize, with_eip7928,
};
use ethrex_import_bench::bench::{derive_and_import, load_fixture};
use ethrex_storage::DbKind;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Subcommand)]
pub(crate) enum BalLabCommand {
    /// Every BAL design's RLP size per block over a chain (mean, median, p90, max, and
    /// relative to EIP-7928), split into addresses, slot keys, values and code.
    Sizes(SizesArgs),
}

#[derive(Args)]
pub(crate) struct SizesArgs {
    /// Chain file: RLP blocks, concatenated (the stress fixture, or `ethrex export`'s).
    #[arg(long, required_unless_present = "ef", conflicts_with = "ef")]
    fixture: Option<PathBuf>,
    /// EF `blockchain_test` fixture files or directories instead: the valid blocks of
    /// every Amsterdam test, each test's chain replayed from its own genesis.
    #[arg(long, num_args = 1..)]
    ef: Vec<PathBuf>,
    #[command(flatten)]
    files: crate::bench_cmd::ChainFiles,
    /// all, or a list of type1..type6, full, parallel-io (type2's aliases batched-io,
    /// eip7928).
    #[arg(long, default_value = "all")]
    designs: String,
    /// The database the chain is executed on to derive the designs (rocksdb or mdbx).
    #[arg(long, default_value = "rocksdb")]
    db: String,
    /// Write the report as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Draw the mean size per design, stacked by content (SVG).
    #[arg(long)]
    plot: Option<PathBuf>,
}

pub(crate) fn run_bal_lab(command: BalLabCommand) -> anyhow::Result<ExitCode> {
    match command {
        BalLabCommand::Sizes(a) => run_sizes(a),
    }
}

fn run_sizes(a: SizesArgs) -> anyhow::Result<ExitCode> {
    let designs = BalDesign::parse_list(&a.designs).map_err(anyhow::Error::msg)?;
    let db: DbKind = a.db.parse().map_err(anyhow::Error::msg)?;
    anyhow::ensure!(db != DbKind::Memory, "--db must be mdbx or rocksdb");
    let t = std::time::Instant::now();
    let (source, blocks, result) = match &a.fixture {
        Some(path) => {
            let mut options = a.files.options(path.clone());
            options.db = db;
            let fixture = load_fixture(&options)?;
            eprintln!(
                "{}: {} blocks; deriving {} designs by executing the chain",
                path.display(),
                fixture.blocks.len(),
                designs.len()
            );
            let result = sizes(&options, &fixture, &designs)?;
            (path.display().to_string(), fixture.blocks.len(), result)
        }
        None => {
            let all = with_eip7928(&designs);
            let (tests, derived, recipients) = ef_designs(&a.ef, &all)?;
            anyhow::ensure!(
                !derived.is_empty(),
                "no valid Amsterdam block in the EF fixtures given"
            );
            eprintln!("{} valid blocks of {tests} Amsterdam tests", derived.len());
            let result = summarize(&derived, &recipients, &all, &designs)?;
            let names: Vec<String> = a.ef.iter().map(|p| p.display().to_string()).collect();
            (names.join(","), derived.len(), result)
        }
    };
    print!("{}", sizes_table(&result));
    println!("derived and measured in {:.1} s", t.elapsed().as_secs_f64());
    if let Some(path) = &a.json {
        let mut json = sizes_json(&result);
        json["fixture"] = serde_json::json!({ "path": source, "blocks": blocks });
        std::fs::write(path, serde_json::to_string_pretty(&json)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &a.plot {
        std::fs::write(path, sizes_svg(&result))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Every design in `all` of every valid block of the Amsterdam blockchain tests under
/// `paths`, each test's chain replayed on its own in-memory store; how many tests, and
/// each block's fee recipient.
fn ef_designs(
    paths: &[PathBuf],
    all: &[ethrex_bal::BalDesign],
) -> anyhow::Result<(usize, Vec<Vec<DesignBal>>, Vec<alloy_primitives::Address>)> {
    let mut tests = 0;
    let mut derived = Vec::new();
    let mut recipients = Vec::new();
    for file in find_fixture_files(paths).map_err(anyhow::Error::msg)? {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("reading {}", file.display()))?;
        let cases: BTreeMap<String, serde_json::Value> = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a fixture file", file.display()))?;
        for (name, value) in cases {
            if !is_blockchain_test(&value) {
                continue;
            }
            let test: BlockchainTest = serde_json::from_value(value)
                .with_context(|| format!("{}: {name} is malformed", file.display()))?;
            // BALs exist from Amsterdam on.
            if Fork::from_name(&test.network) != Some(Fork::Amsterdam) {
                continue;
            }
            let (chain, blocks) = valid_chain(&test)
                .map_err(|e| anyhow::anyhow!("{}: {name}: {e}", file.display()))?;
            tests += 1;
            recipients.extend(blocks.iter().map(|b| b.block.header.beneficiary));
            derived.extend(
                derive_and_import(&chain, &blocks, all, || {}).with_context(|| name.clone())?,
            );
        }
    }
    Ok((tests, derived, recipients))
}
