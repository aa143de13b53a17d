//! `ethrex bal-lab`.

use anyhow::Context;
use clap::{Args, Subcommand};
use ethrex_bal::BalDesign;
use ethrex_import_bench::bal_lab::{sizes, sizes_json, sizes_svg, sizes_table};
use ethrex_import_bench::bench::{load_fixture, BenchOptions};
use ethrex_storage::DbKind;
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
    #[arg(long)]
    fixture: PathBuf,
    /// Concatenated RLP BALs (default: <fixture stem>.bal.rlp beside the fixture, if present).
    #[arg(long)]
    bal: Option<PathBuf>,
    /// geth-style genesis (default: <fixture stem>.genesis.json beside the fixture).
    #[arg(long)]
    genesis: Option<PathBuf>,
    /// Filler state spec (default: <fixture stem>.state.json beside the fixture, if present).
    #[arg(long)]
    state: Option<PathBuf>,
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
    let mut options = BenchOptions::new(a.fixture.clone());
    options.bal = a.bal;
    options.genesis = a.genesis;
    options.state = a.state;
    options.db = db;
    let fixture = load_fixture(&options)?;
    eprintln!(
        "{}: {} blocks; deriving {} designs by executing the chain",
        a.fixture.display(),
        fixture.blocks.len(),
        designs.len()
    );
    let t = std::time::Instant::now();
    let result = sizes(&options, &fixture, &designs)?;
    print!("{}", sizes_table(&result));
    println!("derived and measured in {:.1} s", t.elapsed().as_secs_f64());
    if let Some(path) = &a.json {
        let mut json = sizes_json(&result);
        json["fixture"] = serde_json::json!({
            "path": a.fixture.display().to_string(),
            "blocks": fixture.blocks.len(),
        });
        std::fs::write(path, serde_json::to_string_pretty(&json)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &a.plot {
        std::fs::write(path, sizes_svg(&result))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}
