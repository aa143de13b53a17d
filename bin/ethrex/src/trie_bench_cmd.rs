//! `ethrex trie-bench`: the binary-trie group-depth study (see `ethrex_trie_bench`).

use std::process::ExitCode;

/// Runs the study; the tables go to stdout, the files where the options say.
pub(crate) fn run(args: ethrex_trie_bench::Args) -> anyhow::Result<ExitCode> {
    ethrex_trie_bench::run(args)?;
    Ok(ExitCode::SUCCESS)
}
