//! Runs `blockchain_test` fixtures through the real import pipeline on a fresh store.

use crate::exceptions::{decode_failure_satisfies, rejection_satisfies, DecodeFailure};
use crate::fixture::{not_a_blockchain_test, BlockchainTest, FixtureAccount, FixtureBlock};
use alloy_primitives::{keccak256, Address, B256, U256};
use alloy_rlp::Decodable;
use ethrex_blockchain::genesis::{init_genesis, GenesisAccount};
use ethrex_blockchain::{Blockchain, Cores, ImportOptions, Prefetch, Threshold};
use ethrex_common::{Block, BlockAccessList, BlockWithBal, ChainConfig, Fork};
use ethrex_storage::{DbKind, Store};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Which execution path(s) the fixtures are run through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The sequential executor only.
    Sequential,
    /// The BAL-parallel executor only.
    Parallel,
    /// Both, and the two must agree on every block's verdict, receipts and BAL.
    Both,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "sequential" => Ok(Mode::Sequential),
            "parallel" => Ok(Mode::Parallel),
            "both" => Ok(Mode::Both),
            other => Err(format!("unknown mode '{other}' (expected sequential, parallel or both)")),
        }
    }
}

/// How the fixtures are run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The database backend of each test's fresh store.
    pub db: DbKind,
    /// The execution path(s).
    pub mode: Mode,
    /// How blocks are imported; `parallel` is set by the mode.
    pub import: ImportOptions,
}

impl RunOptions {
    /// The tuning that exercises the most code: every block with a BAL on the parallel
    /// path (threshold 0), the warmer on.
    pub fn new(db: DbKind, mode: Mode) -> Self {
        let import = ImportOptions {
            threshold: Threshold::MinTxs(0),
            prefetch: Prefetch::Beside,
            ..ImportOptions::default()
        };
        Self { db, mode, import }
    }

    fn import_options(&self, parallel: bool) -> ImportOptions {
        let cores = if parallel { Cores::Pool } else { Cores::One };
        ImportOptions { cores, ..self.import }
    }
}

/// What happened to one block, for comparing the two execution paths.
#[derive(Debug, Clone, PartialEq, Eq)]
enum BlockRecord {
    Undecodable,
    Rejected(&'static str),
    Imported { hash: B256, receipts: Vec<ethrex_common::Receipt>, bal: Option<BlockAccessList> },
}

/// The verdict on one fixture entry. Skips and failures always carry their reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every check held.
    Passed,
    /// A check failed, or the fixture is malformed; the reason.
    Failed(String),
    /// Not run (another fixture format, an unsupported network...); the reason.
    Skipped(String),
}

impl Outcome {
    /// Whether the test passed.
    pub fn is_passed(&self) -> bool {
        matches!(self, Outcome::Passed)
    }

    /// Whether the test failed.
    pub fn is_failed(&self) -> bool {
        matches!(self, Outcome::Failed(_))
    }

    /// Whether the test was skipped.
    pub fn is_skipped(&self) -> bool {
        matches!(self, Outcome::Skipped(_))
    }

    /// The reason of a failure or a skip.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Outcome::Passed => None,
            Outcome::Failed(r) | Outcome::Skipped(r) => Some(r),
        }
    }

    /// `"passed"`, `"failed"` or `"skipped"`.
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed(_) => "failed",
            Outcome::Skipped(_) => "skipped",
        }
    }
}

impl From<Result<(), String>> for Outcome {
    fn from(r: Result<(), String>) -> Self {
        match r {
            Ok(()) => Outcome::Passed,
            Err(reason) => Outcome::Failed(reason),
        }
    }
}

/// The result of one entry of a fixture file.
#[derive(Debug, Clone)]
pub struct CaseResult {
    /// The fixture file.
    pub file: PathBuf,
    /// The entry's name (`<file>` for a result about the whole file).
    pub name: String,
    /// What happened.
    pub outcome: Outcome,
}

/// Passed / failed / skipped tallies (of one file, or of a whole run).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Tests that passed.
    pub passed: usize,
    /// Tests that failed.
    pub failed: usize,
    /// Entries skipped, each with its reason.
    pub skipped: usize,
}

impl Counts {
    /// The tallies of some results.
    pub fn of<'a>(results: impl IntoIterator<Item = &'a CaseResult>) -> Self {
        let mut counts = Counts::default();
        for r in results {
            match r.outcome {
                Outcome::Passed => counts.passed += 1,
                Outcome::Failed(_) => counts.failed += 1,
                Outcome::Skipped(_) => counts.skipped += 1,
            }
        }
        counts
    }

    /// All results counted.
    pub fn total(&self) -> usize {
        self.passed + self.failed + self.skipped
    }

    /// Adds another tally to this one.
    pub fn add(&mut self, other: Counts) {
        self.passed += other.passed;
        self.failed += other.failed;
        self.skipped += other.skipped;
    }
}

/// The counts of every file that has results, in file order.
pub fn counts_per_file(results: &[CaseResult]) -> Vec<(PathBuf, Counts)> {
    let mut per_file: BTreeMap<&Path, Counts> = BTreeMap::new();
    for r in results {
        per_file.entry(r.file.as_path()).or_default().add(Counts::of([r]));
    }
    per_file.into_iter().map(|(f, c)| (f.to_path_buf(), c)).collect()
}

/// Every `.json` file under the given paths (files are taken as they are), sorted.
pub fn find_fixture_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
        let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries {
            let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
            if path.is_dir() {
                walk(&path, out)?;
            } else if path.extension().is_some_and(|e| e == "json") {
                out.push(path);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            walk(p, &mut out)?;
        } else if p.is_file() {
            out.push(p.clone());
        } else {
            return Err(format!("{}: no such file or directory", p.display()));
        }
    }
    out.sort();
    Ok(out)
}

/// Runs every blockchain test in one fixture file and accounts for every other entry:
/// each entry of the file gets exactly one result. Entries of other formats (engine,
/// state, transaction tests) and networks this runner cannot configure are skipped with
/// the reason. A file that cannot be read or parsed yields one failed result named
/// `<file>`; a file without entries one skipped result named `<file>`.
pub fn run_file(path: &Path, options: &RunOptions) -> Vec<CaseResult> {
    let result = |name: &str, outcome: Outcome| CaseResult {
        file: path.to_path_buf(),
        name: name.to_string(),
        outcome,
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return vec![result("<file>", Outcome::Failed(format!("cannot read: {e}")))],
    };
    let cases: BTreeMap<String, serde_json::Value> = match serde_json::from_str(&text) {
        Ok(c) => c,
        Err(e) => {
            return vec![result(
                "<file>",
                Outcome::Failed(format!(
                    "not a fixture file (invalid JSON or not an object of tests): {e}"
                )),
            )]
        }
    };
    if cases.is_empty() {
        return vec![result("<file>", Outcome::Skipped("the file contains no tests".into()))];
    }
    cases
        .into_iter()
        .map(|(name, value)| {
            let outcome = match not_a_blockchain_test(&value) {
                Some(reason) => Outcome::Skipped(reason),
                None => match serde_json::from_value::<BlockchainTest>(value) {
                    Err(e) => Outcome::Failed(format!("malformed fixture: {e}")),
                    Ok(test) => match unsupported_network(&test) {
                        Some(reason) => Outcome::Skipped(reason),
                        None => run_case(&test, options).into(),
                    },
                },
            };
            result(&name, outcome)
        })
        .collect()
}

/// `blockchain_test` fixtures have blocks and a genesis; engine and state tests do not.
pub fn is_blockchain_test(value: &serde_json::Value) -> bool {
    not_a_blockchain_test(value).is_none()
}

/// Why the runner cannot configure the test's `network`, if it cannot: it runs one
/// post-merge fork from genesis (`Paris` .. `Amsterdam`), not transitions or older forks.
/// (The client imports proof-of-work chains from their genesis files; this runner does
/// not yet build an EF fixture's proof-of-work genesis, and the shared fixtures have
/// none.)
pub fn unsupported_network(test: &BlockchainTest) -> Option<String> {
    Fork::from_name(&test.network).filter(|fork| *fork >= Fork::Paris).is_none().then(|| {
        format!("network {} is not supported (only single post-merge forks from genesis: Paris .. Amsterdam)", test.network)
    })
}

fn chain_config(test: &BlockchainTest) -> Result<ChainConfig, String> {
    let fork = Fork::from_name(&test.network)
        .ok_or_else(|| format!("unsupported network {}", test.network))?;
    let chain_id =
        test.config.as_ref().and_then(|c| c.chainid).map(|c| c.saturating_to()).unwrap_or(1);
    let mut config = ChainConfig::all_forks_at_genesis(chain_id, fork);
    if let Some(c) = &test.config {
        for (name, params) in &c.blob_schedule {
            config.inner.blob_schedule.insert(name.to_lowercase(), params.to_params());
        }
    }
    Ok(config)
}

/// A fixture block that could not be decoded, and which part failed.
#[derive(Debug)]
struct DecodeError {
    failure: DecodeFailure,
    message: String,
}

fn decode_bal(json: Option<&serde_json::Value>) -> Result<Option<BlockAccessList>, DecodeError> {
    json.map(|v| {
        serde_json::from_value::<BlockAccessList>(v.clone()).map_err(|e| DecodeError {
            failure: DecodeFailure::Bal,
            message: format!("block access list does not decode: {e}"),
        })
    })
    .transpose()
}

fn decode_block(fixture: &FixtureBlock) -> Result<BlockWithBal, DecodeError> {
    let rlp_error = |message: String| DecodeError { failure: DecodeFailure::BlockRlp, message };
    let mut rlp = fixture.rlp.as_ref();
    let block = Block::decode(&mut rlp)
        .map_err(|e| rlp_error(format!("block RLP does not decode: {e}")))?;
    if !rlp.is_empty() {
        return Err(rlp_error("block RLP does not decode: trailing bytes".into()));
    }
    Ok(BlockWithBal { block, bal: decode_bal(fixture.bal_json())? })
}

fn open_store(options: &RunOptions) -> Result<(Store, Option<tempfile::TempDir>), String> {
    match options.db {
        DbKind::Memory => Ok((Store::in_memory(), None)),
        kind => {
            let dir = tempfile::tempdir().map_err(|e| format!("cannot create temp dir: {e}"))?;
            let store = Store::open(kind, Some(dir.path())).map_err(|e| e.to_string())?;
            Ok((store, Some(dir)))
        }
    }
}

/// Writes the test's genesis (its `pre` allocation under its genesis header) into `store`
/// and checks the hash against the fixture's.
fn init_test_genesis(test: &BlockchainTest, store: &Store) -> Result<(), String> {
    let genesis_block = Block::decode(&mut test.genesis_rlp.as_ref())
        .map_err(|e| format!("genesisRLP does not decode: {e}"))?;
    let alloc: BTreeMap<Address, GenesisAccount> = test
        .pre
        .iter()
        .map(|(a, acc)| {
            (
                *a,
                GenesisAccount {
                    nonce: acc.nonce.saturating_to(),
                    balance: acc.balance,
                    code: acc.code.clone(),
                    storage: acc.storage.clone(),
                },
            )
        })
        .collect();
    let genesis_hash =
        init_genesis(store, genesis_block.header, &alloc).map_err(|e| format!("genesis: {e}"))?;
    if genesis_hash != test.genesis_block_header.hash {
        return Err(format!(
            "genesis hash {genesis_hash} != fixture {}",
            test.genesis_block_header.hash
        ));
    }
    Ok(())
}

/// The test's chain on a fresh in-memory store at its genesis, with the blocks the test
/// expects to import (those without `expectException`), in order; for tools that replay
/// EF chains (the BAL design lab). Fails on a network the runner cannot configure, a
/// genesis that does not match, or a valid block that does not decode.
pub fn valid_chain(test: &BlockchainTest) -> Result<(Blockchain, Vec<BlockWithBal>), String> {
    if let Some(reason) = unsupported_network(test) {
        return Err(reason);
    }
    let config = chain_config(test)?;
    let store = Store::in_memory();
    init_test_genesis(test, &store)?;
    let blocks = test
        .blocks
        .iter()
        .filter(|b| b.expect_exception.is_none())
        .map(|b| decode_block(b).map_err(|e| e.message))
        .collect::<Result<_, _>>()?;
    Ok((Blockchain::new(store, config), blocks))
}

/// Runs one test on a fresh store (twice with [`Mode::Both`]); `Err` names the first
/// check that failed.
pub fn run_case(test: &BlockchainTest, options: &RunOptions) -> Result<(), String> {
    match options.mode {
        Mode::Sequential => run_case_on_path(test, options, false).map(|_| ()),
        Mode::Parallel => run_case_on_path(test, options, true).map(|_| ()),
        Mode::Both => {
            let sequential =
                run_case_on_path(test, options, false).map_err(|e| format!("sequential: {e}"))?;
            let parallel =
                run_case_on_path(test, options, true).map_err(|e| format!("parallel: {e}"))?;
            for (i, (s, p)) in sequential.iter().zip(&parallel).enumerate() {
                if s != p {
                    return Err(format!(
                        "block {i}: sequential and parallel paths disagree: {s:?} vs {p:?}"
                    ));
                }
            }
            Ok(())
        }
    }
}

fn run_case_on_path(
    test: &BlockchainTest,
    options: &RunOptions,
    parallel: bool,
) -> Result<Vec<BlockRecord>, String> {
    let config = chain_config(test)?;
    let (store, _dir) = open_store(options)?;
    init_test_genesis(test, &store)?;
    let chain =
        Blockchain::new(store.clone(), config).with_options(options.import_options(parallel));

    let mut records = Vec::with_capacity(test.blocks.len());
    for (i, fixture_block) in test.blocks.iter().enumerate() {
        let expected = fixture_block.expect_exception.as_deref();
        let block = match decode_block(fixture_block) {
            Ok(b) => b,
            // Rejected at decoding, as a client receiving it would; that proves only that
            // the block is malformed, so it satisfies only decode-class exceptions.
            Err(e) => match expected {
                Some(exc) if decode_failure_satisfies(e.failure, exc) => {
                    records.push(BlockRecord::Undecodable);
                    continue;
                }
                Some(exc) => {
                    return Err(format!(
                        "block {i}: {}; the fixture expects {exc}, which a decode failure does not satisfy",
                        e.message
                    ))
                }
                None => return Err(format!("block {i}: {}", e.message)),
            },
        };
        let hash = block.hash();
        let head_before = store.head().map_err(|e| e.to_string())?;
        match (chain.import_block(block), expected) {
            (Ok(outcome), None) => {
                let receipts =
                    store.receipts(&outcome.hash).map_err(|e| e.to_string())?.unwrap_or_default();
                let bal = store.bal(&outcome.hash).map_err(|e| e.to_string())?;
                records.push(BlockRecord::Imported { hash: outcome.hash, receipts, bal });
            }
            (Ok(_), Some(exc)) => {
                return Err(format!("block {i}: imported, but the fixture expects {exc}"))
            }
            (Err(e), None) => return Err(format!("block {i}: rejected: {e}")),
            (Err(e), Some(exc)) => {
                if !rejection_satisfies(e.ef_exception(), exc) {
                    return Err(format!(
                        "block {i}: rejected as {} ({e}), fixture expects {exc}",
                        e.ef_exception()
                    ));
                }
                let head_after = store.head().map_err(|e| e.to_string())?;
                let leaked = store.header(&hash).map_err(|e| e.to_string())?.is_some()
                    || store.bal(&hash).map_err(|e| e.to_string())?.is_some()
                    || store.receipts(&hash).map_err(|e| e.to_string())?.is_some();
                if head_after != head_before || leaked {
                    return Err(format!("block {i}: rejected block left data in the store"));
                }
                records.push(BlockRecord::Rejected(e.ef_exception()));
            }
        }
    }

    let head = store.head().map_err(|e| e.to_string())?;
    if head != Some(test.lastblockhash) {
        return Err(format!("head {head:?} != lastblockhash {}", test.lastblockhash));
    }
    // Blocks reach the disk in the background; the post state is checked on what was
    // written (the overlay of pending batches is empty after the flush).
    store.flush().map_err(|e| format!("flushing the store: {e}"))?;
    match (&test.post_state, test.post_state_hash) {
        (None, None) => return Err("malformed fixture: neither postState nor postStateHash".into()),
        (post, hash) => {
            if let Some(post) = post {
                check_post_state(&store, post)?;
            }
            if let Some(hash) = hash {
                check_post_state_hash(&store, hash)?;
            }
        }
    }
    Ok(records)
}

/// `postStateHash`: the head's state root must be the fixture's, and the stored state
/// (every account and slot, hashed from scratch) must hash to it.
fn check_post_state_hash(store: &Store, expected: B256) -> Result<(), String> {
    let head = store
        .head_header()
        .map_err(|e| e.to_string())?
        .ok_or("post state: the store has no head")?;
    if head.state_root != expected {
        return Err(format!("postStateHash {expected} != head state root {}", head.state_root));
    }
    ethrex_blockchain::state_root::verify_head_state(store).map_err(|e| {
        format!("postStateHash: the stored state does not hash to the head's state root: {e}")
    })?;
    Ok(())
}

fn check_post_state(store: &Store, post: &BTreeMap<Address, FixtureAccount>) -> Result<(), String> {
    let err = |e: ethrex_storage::StoreError| e.to_string();
    for (address, expected) in post {
        let account = store
            .account(address)
            .map_err(err)?
            .ok_or_else(|| format!("post state: account {address} missing"))?;
        if U256::from(account.nonce) != expected.nonce {
            return Err(format!(
                "post state: {address} nonce {} != {}",
                account.nonce, expected.nonce
            ));
        }
        if account.balance != expected.balance {
            return Err(format!(
                "post state: {address} balance {} != {}",
                account.balance, expected.balance
            ));
        }
        if account.code_hash != keccak256(&expected.code) {
            return Err(format!("post state: {address} code differs"));
        }
        let stored: BTreeMap<U256, U256> =
            store.storage_entries(address).map_err(err)?.into_iter().collect();
        let wanted: BTreeMap<U256, U256> =
            expected.storage.iter().filter(|(_, v)| !v.is_zero()).map(|(k, v)| (*k, *v)).collect();
        if stored != wanted {
            return Err(format!("post state: {address} storage {stored:?} != {wanted:?}"));
        }
    }
    let accounts = store.all_accounts().map_err(err)?;
    if let Some((extra, _)) = accounts.iter().find(|(a, _)| !post.contains_key(a)) {
        return Err(format!("post state: unexpected account {extra}"));
    }
    Ok(())
}
