//! Storage faults under block import, on both on-disk backends: a failed write, a full
//! disk, a failed sync and corrupted reads. Each fault must surface as an error (never a
//! panic, never an accepted block whose state differs from a fault-free run), and the
//! database must reopen, without the fault, at a consistent prefix of the chain from which
//! the rest of the chain imports to the fault-free final state.

use ethrex_blockchain::{state_root::verify_head_state, Blockchain, ImportOptions};
use ethrex_chaingen::adversarial::{
    generate_chain, snapshot, GeneratedChain, Scenario, StateSnapshot,
};
use ethrex_storage::backend::{Entries, KvBackend, SortedWrites, Table};
use ethrex_storage::{DbKind, Store, StoreError};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

const BLOCKS: usize = 6;

/// Which byte of a value a corrupted read flips.
#[derive(Debug, Clone, Copy)]
enum Flip {
    First,
    Middle,
    Last,
}

/// The fault a `Faulty` backend injects once armed. Block and sync counts start at 1 with
/// the first call after arming.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// The write that holds the Nth block fails with a backend error (the persister may
    /// write several blocks at once).
    FailWrite(u64),
    /// The write that holds the Nth block fails as a full disk does (ENOSPC).
    NoSpace(u64),
    /// The Nth sync fails.
    FailSync(u64),
    /// Every point read of the table returns its value with one byte flipped.
    Corrupt(Table, Flip),
}

/// A backend that injects `plan` into the calls it passes on to `inner`.
struct Faulty {
    inner: Arc<dyn KvBackend>,
    plan: Fault,
    armed: AtomicBool,
    counting: AtomicBool,
    /// Write calls, and blocks they held, since arming.
    writes: AtomicU64,
    blocks: AtomicU64,
    /// The write call that failed (0: none), and the blocks written before it.
    failed_write: AtomicU64,
    written_before_failure: AtomicU64,
    syncs: AtomicU64,
    corrupted: AtomicU64,
}

impl Faulty {
    fn new(inner: Arc<dyn KvBackend>, plan: Fault) -> Arc<Self> {
        Arc::new(Self {
            inner,
            plan,
            armed: AtomicBool::new(false),
            counting: AtomicBool::new(false),
            writes: AtomicU64::new(0),
            blocks: AtomicU64::new(0),
            failed_write: AtomicU64::new(0),
            written_before_failure: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
            corrupted: AtomicU64::new(0),
        })
    }
    /// Starts the fault. Corrupted reads can be paused again (`pause_reads`); write and
    /// sync faults, once started, count every call.
    fn arm(&self, on: bool) {
        self.armed.store(on, Ordering::SeqCst);
        if on {
            self.counting.store(true, Ordering::SeqCst);
        }
    }
    fn armed(&self) -> bool {
        self.armed.load(Ordering::SeqCst)
    }
    fn counting(&self) -> bool {
        self.counting.load(Ordering::SeqCst)
    }
}

impl KvBackend for Faulty {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        let value = self.inner.get(table, key)?;
        match (self.plan, value) {
            (Fault::Corrupt(target, flip), Some(mut bytes))
                if target == table && self.armed() && !bytes.is_empty() =>
            {
                let at = match flip {
                    Flip::First => 0,
                    Flip::Middle => bytes.len() / 2,
                    Flip::Last => bytes.len() - 1,
                };
                bytes[at] ^= 0x01;
                self.corrupted.fetch_add(1, Ordering::SeqCst);
                Ok(Some(bytes))
            }
            (_, value) => Ok(value),
        }
    }
    fn scan_prefix(&self, table: Table, prefix: &[u8]) -> Result<Entries, StoreError> {
        self.inner.scan_prefix(table, prefix)
    }
    fn write(&self, writes: &SortedWrites<'_>) -> Result<(), StoreError> {
        if self.counting() {
            let call = self.writes.fetch_add(1, Ordering::SeqCst) + 1;
            // Every block writes its canonical hash: the write holds blocks
            // `before + 1 ..= before + held`.
            let held = writes.iter().filter(|op| op.0 == Table::CanonicalHashes).count() as u64;
            let before = self.blocks.fetch_add(held, Ordering::SeqCst);
            let holds = |at: u64| before < at && at <= before + held;
            let error = match self.plan {
                Fault::FailWrite(at) if holds(at) => {
                    Some(StoreError::Backend("injected write failure".into()))
                }
                Fault::NoSpace(at) if holds(at) => {
                    Some(StoreError::Backend(Box::new(std::io::Error::from_raw_os_error(28))))
                }
                _ => None,
            };
            if let Some(error) = error {
                self.failed_write.store(call, Ordering::SeqCst);
                self.written_before_failure.store(before, Ordering::SeqCst);
                return Err(error);
            }
        }
        self.inner.write(writes)
    }
    fn sync(&self) -> Result<(), StoreError> {
        if self.counting() {
            let n = self.syncs.fetch_add(1, Ordering::SeqCst) + 1;
            if matches!(self.plan, Fault::FailSync(at) if at == n) {
                return Err(StoreError::Backend("injected sync failure".into()));
            }
        }
        self.inner.sync()
    }
    fn kind(&self) -> &'static str {
        "faulty"
    }
}

/// The chain every test imports and the fault-free state after each of its blocks.
struct Reference {
    scenario: Scenario,
    chain: GeneratedChain,
    /// `states[k]`: the state with the first `k` blocks imported (0: genesis).
    states: Vec<StateSnapshot>,
}

/// The accounts in which two snapshots differ, for assertion messages.
fn diff(got: &StateSnapshot, want: &StateSnapshot) -> String {
    let mut out = format!("head {:?} vs {:?}", got.head, want.head);
    for account in &got.accounts {
        if !want.accounts.contains(account) {
            out += &format!("\n  got  {account:?}");
        }
    }
    for account in &want.accounts {
        if !got.accounts.contains(account) {
            out += &format!("\n  want {account:?}");
        }
    }
    out
}

/// Asserts two snapshots are equal, showing only what differs.
fn assert_state(got: &StateSnapshot, want: &StateSnapshot, what: String) {
    assert!(got == want, "{what}: {}", diff(got, want));
}

fn reference() -> &'static Reference {
    static REFERENCE: OnceLock<Reference> = OnceLock::new();
    REFERENCE.get_or_init(|| {
        let scenario = Scenario::new();
        let chain = generate_chain(23, BLOCKS);
        let blockchain = scenario.chain(scenario.memory_store(), ImportOptions::default());
        let mut states = vec![snapshot(&blockchain.store)];
        for block in &chain.blocks {
            blockchain.import_block(block.clone()).expect("the reference imports every block");
            states.push(snapshot(&blockchain.store));
        }
        Reference { scenario, chain, states }
    })
}

/// The head's block number (an index into `Reference::states`).
fn head_number(store: &Store) -> usize {
    store.head_header().unwrap().expect("a head").number as usize
}

/// How the import loop waits for the disk.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Wait {
    /// Imports back to back; batches reach the disk in the background.
    Pipelined,
    /// `flush` after every block.
    Flush,
    /// `persist(0)` (write and sync) after every block.
    Persist,
    /// Empties the store's caches before every block, so its reads reach the backend.
    ColdCaches,
}

/// What one faulty run saw.
#[derive(Debug)]
struct Outcome {
    /// Blocks the import accepted before the first error.
    accepted: usize,
    /// The first error, from the import or from waiting for the disk.
    error: Option<String>,
    /// Whether that error was an INVALID verdict on the block.
    invalid_verdict: bool,
    /// The head after reopening without the fault.
    reopened_at: usize,
    /// Blocks the backend had written before the write that failed (write faults).
    written_before_failure: u64,
}

fn run(kind: DbKind, plan: Fault, wait: Wait) -> Outcome {
    let reference = reference();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();

    // The genesis, written without faults; the store is then reopened cold over the
    // faulty backend, so its reads reach the disk.
    let backend = Faulty::new(kind.open_backend(Some(path)).unwrap(), plan);
    {
        let store = Store::new(backend.clone());
        reference.scenario.init(&store);
        store.flush().unwrap();
    }
    let chain = reference.scenario.chain(Store::new(backend.clone()), ImportOptions::default());
    let watch = chain.store.failure_watch();

    backend.arm(true);
    let mut accepted = 0;
    let mut error = None;
    let mut invalid_verdict = false;
    for block in &reference.chain.blocks {
        if wait == Wait::ColdCaches {
            if let Err(e) = chain.store.clear_caches() {
                error = Some(e.to_string());
                break;
            }
        }
        let imported = catch_unwind(AssertUnwindSafe(|| chain.import_block(block.clone())))
            .unwrap_or_else(|_| panic!("{kind:?} {plan:?}: block {} panicked", block.number()));
        match imported {
            Ok(outcome) => assert_eq!(outcome.hash, block.hash()),
            Err(e) => {
                invalid_verdict = e.is_invalid_block();
                error = Some(e.to_string());
                break;
            }
        }
        accepted += 1;
        // An accepted block left exactly the fault-free state.
        backend.arm(false);
        assert_state(
            &snapshot(&chain.store),
            &reference.states[accepted],
            format!("{kind:?} {plan:?}: block {accepted} was accepted with a different state"),
        );
        backend.arm(true);
        let waited = match wait {
            Wait::Flush => chain.store.flush(),
            Wait::Persist => chain.store.persist(0),
            Wait::Pipelined | Wait::ColdCaches => Ok(()),
        };
        if let Err(e) = waited {
            error = Some(e.to_string());
            break;
        }
    }
    backend.arm(false);
    if let Fault::Corrupt(..) = plan {
        // The store's caches keep what a corrupted read returned (only code is checked
        // against its hash), so the state is compared as the backend holds it.
        chain.store.clear_caches().unwrap();
    }

    // A rejected block left no trace: the state is the last accepted block's.
    assert_state(
        &snapshot(&chain.store),
        &reference.states[accepted],
        format!("{kind:?} {plan:?}: the store is not at the last accepted block {accepted}"),
    );

    // A write fault is sticky and reported by `flush` and the failure watch; no write
    // after the failed one reaches the disk.
    match plan {
        Fault::FailWrite(n) | Fault::NoSpace(n) => {
            let flushed = chain.store.flush().expect_err(&format!(
                "{kind:?} {plan:?} {wait:?}: flush reports the failed write after {error:?}"
            ));
            assert!(matches!(flushed, StoreError::Persistence(_)), "{flushed}");
            let reason = watch.failed().expect("the failure watch saw the failed write");
            let want = match plan {
                Fault::NoSpace(_) => "No space left on device",
                _ => "injected write failure",
            };
            assert!(reason.contains(want), "{kind:?} {plan:?}: {reason}");
            assert!(flushed.to_string().contains(want), "{flushed}");
            let failed = backend.failed_write.load(Ordering::SeqCst);
            assert!(failed > 0, "{kind:?} {plan:?}: no write held block {n}");
            assert_eq!(
                backend.writes.load(Ordering::SeqCst),
                failed,
                "a write after the failed one"
            );
            // Pipelined, the last block's failed write surfaces only at the `flush`.
            if let Some(error) = &error {
                assert!(error.contains(want), "{kind:?} {plan:?}: {error}");
            } else {
                assert_eq!(accepted, BLOCKS, "{kind:?} {plan:?}: an import stopped silently");
            }
            // A later import is refused with the same reason, never accepted.
            if let Some(next) = reference.chain.blocks.get(accepted) {
                let again = chain.import_block(next.clone()).expect_err("a store that failed");
                assert!(again.to_string().contains(want), "{again}");
                assert!(!again.is_invalid_block(), "{again}");
            }
        }
        Fault::FailSync(_) => {
            let error = error.as_deref().expect("the failed sync surfaced as an error");
            let want = "injected sync failure";
            assert!(error.contains(want), "{kind:?} {plan:?}: {error}");
            // Sticky, like a failed write: what the failed sync covered is not known to be
            // on disk, so nothing may be reported durable or written after it.
            let flushed = chain.store.flush().expect_err("flush after a failed sync");
            assert!(flushed.to_string().contains(want), "{flushed}");
            assert!(chain.store.persist(0).is_err(), "a retried sync after a failed one");
            let reason = watch.failed().expect("the failure watch saw the failed sync");
            assert!(reason.contains(want), "{kind:?} {plan:?}: {reason}");
            if let Some(next) = reference.chain.blocks.get(accepted) {
                let again = chain.import_block(next.clone()).expect_err("a store that failed");
                assert!(again.to_string().contains(want), "{again}");
                assert!(!again.is_invalid_block(), "{again}");
            }
        }
        Fault::Corrupt(..) => {
            assert!(backend.corrupted.load(Ordering::SeqCst) > 0, "{plan:?}: no read corrupted");
            chain.store.flush().expect("a corrupted read fails no write");
        }
    }

    // Reopened without the fault: a consistent prefix, from which the chain completes.
    drop(chain);
    let written_before_failure = backend.written_before_failure.load(Ordering::SeqCst);
    drop(backend);
    let reopened_at = reopen_and_complete(kind, path, plan, accepted);
    Outcome { accepted, error, invalid_verdict, reopened_at, written_before_failure }
}

/// Reopens `path` without faults, checks its head state like `ethrex verify-db`, imports
/// the rest of the chain and compares the final state with the reference's.
fn reopen_and_complete(kind: DbKind, path: &Path, plan: Fault, accepted: usize) -> usize {
    let reference = reference();
    let store = Store::open(kind, Some(path)).unwrap();
    let head = head_number(&store);
    assert!(head <= accepted, "{kind:?} {plan:?}: reopened at {head}, beyond {accepted} accepted");
    let root = verify_head_state(&store)
        .unwrap_or_else(|e| panic!("{kind:?} {plan:?}: verify-db rejects head {head}: {e}"));
    assert_eq!(root, reference.states_root(head));
    assert_state(
        &snapshot(&store),
        &reference.states[head],
        format!("{kind:?} {plan:?}: reopened"),
    );
    let chain = Blockchain::new(store, reference.scenario.config.clone());
    for block in &reference.chain.blocks[head..] {
        chain.import_block(block.clone()).unwrap_or_else(|e| {
            panic!("{kind:?} {plan:?}: block {} after reopening: {e}", block.number())
        });
    }
    chain.store.flush().unwrap();
    assert_state(
        &snapshot(&chain.store),
        &reference.states[BLOCKS],
        format!("{kind:?} {plan:?}: final"),
    );
    head
}

impl Reference {
    /// The state root of the header of block `k` (0: genesis).
    fn states_root(&self, k: usize) -> alloy_primitives::B256 {
        match k {
            0 => self.scenario.genesis.state_root,
            k => self.chain.blocks[k - 1].block.header.state_root,
        }
    }
}

const KINDS: [DbKind; 2] = [DbKind::Mdbx, DbKind::Rocksdb];

#[test]
fn a_failed_write_stops_the_store_and_the_database_reopens_at_the_block_before() {
    for kind in KINDS {
        for n in [1, 3, BLOCKS as u64] {
            for wait in [Wait::Flush, Wait::Pipelined] {
                let outcome = run(kind, Fault::FailWrite(n), wait);
                assert!(!outcome.invalid_verdict, "{outcome:?}");
                // The blocks written before the failed write are on disk: with a flush
                // after each block, every block before block n; pipelined, the persister
                // may have written block n together with some before it.
                let at = outcome.reopened_at as u64;
                assert_eq!(at, outcome.written_before_failure, "{kind:?} {wait:?} {outcome:?}");
                match wait {
                    Wait::Flush => assert_eq!(at, n - 1, "{kind:?} {wait:?} {outcome:?}"),
                    _ => assert!(at < n, "{kind:?} {wait:?} {outcome:?}"),
                }
            }
        }
    }
}

#[test]
fn a_full_disk_is_reported_as_such_and_the_database_reopens_at_a_prefix() {
    for kind in KINDS {
        for wait in [Wait::Flush, Wait::Pipelined] {
            let outcome = run(kind, Fault::NoSpace(4), wait);
            assert!(!outcome.invalid_verdict, "{outcome:?}");
            assert_eq!(outcome.reopened_at as u64, outcome.written_before_failure, "{outcome:?}");
            match wait {
                Wait::Flush => assert_eq!(outcome.reopened_at, 3, "{kind:?} {outcome:?}"),
                _ => assert!(outcome.reopened_at < 4, "{kind:?} {wait:?} {outcome:?}"),
            }
        }
    }
}

#[test]
fn a_failed_sync_is_sticky_and_the_database_reopens_with_every_written_block() {
    for kind in KINDS {
        for n in [1, 4] {
            let outcome = run(kind, Fault::FailSync(n), Wait::Persist);
            assert_eq!(outcome.accepted as u64, n, "{kind:?} {outcome:?}");
            assert_eq!(outcome.reopened_at as u64, n, "{kind:?} {outcome:?}");
        }
    }
}

#[test]
fn a_corrupted_read_is_an_error_or_harmless_never_a_wrong_state() {
    let tables = [
        Table::Accounts,
        Table::Storage,
        Table::Code,
        Table::Headers,
        Table::AccountTrie,
        Table::StorageTrie,
        Table::Meta,
    ];
    for kind in KINDS {
        for table in tables {
            for flip in [Flip::First, Flip::Middle, Flip::Last] {
                let outcome = run(kind, Fault::Corrupt(table, flip), Wait::ColdCaches);
                // Nothing corrupt reached the disk: the store reopens where it stopped.
                assert_eq!(outcome.reopened_at, outcome.accepted, "{kind:?} {outcome:?}");
                // Bytes the store recognises as corrupt are a node fault, not a verdict.
                if outcome.error.as_deref().is_some_and(|e| e.contains("corrupt")) {
                    assert!(!outcome.invalid_verdict, "{kind:?} {outcome:?}");
                }
                // Code is checked against its hash on every read from disk, and before an
                // execution verdict stands the accounts and slots execution read are
                // checked against the parent's trie: a corrupted read of any of them is
                // never judged as the block's fault.
                if matches!(table, Table::Code | Table::Accounts | Table::Storage) {
                    assert!(!outcome.invalid_verdict, "{kind:?} {table:?} {flip:?}: {outcome:?}");
                }
                if table == Table::Code {
                    let error = outcome.error.as_deref().unwrap_or("no error");
                    assert!(error.contains("corrupt code"), "{kind:?} {flip:?}: {error}");
                }
                eprintln!(
                    "{kind:?} {table:?} {flip:?}: accepted {} of {BLOCKS}, {}{}",
                    outcome.accepted,
                    if outcome.invalid_verdict { "INVALID verdict: " } else { "" },
                    outcome.error.as_deref().unwrap_or("no error"),
                );
            }
        }
    }
}
