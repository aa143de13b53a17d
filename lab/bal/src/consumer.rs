//! The consumers of the BAL designs: an execution strategy of the node's import
//! (`ethrex_blockchain::ExecutionStrategy`) that executes a block from a design's access
//! list instead of the header's EIP-7928 one (`DesignConsumer`), and the derivation of a
//! block's designs from its execution (`derive_designs`).
//!
//! The block itself is validated exactly as `Blockchain::import_block` validates it (its
//! own EIP-7928 BAL against the header and against execution, gas, receipts, requests,
//! state root), so a design can change how fast a block imports, never whether it does.
//! On top, the design's BAL is checked: it must be exactly what the design derives from
//! this block's execution and the parent state (`crate::verify`), so a lie in any field
//! is an invalid block (`InvalidBlock::Strategy` holding a `DesignBalError`;
//! `design_error` finds it) and nothing of the block is stored.
//!
//! What each consumer does before and during execution:
//!
//! | design | before execution | execution |
//! |--------|------------------|-----------|
//! | `type1` | I/O pool reads every account, code and slot named | sequential |
//! | `type2` | I/O pool reads every account, code and slot named | parallel on the diffs |
//! | `type3` | slots seeded from the carried values; I/O pool reads the accounts | sequential |
//! | `type4` | accounts and slots seeded | sequential |
//! | `type5` | slots seeded; I/O pool reads the accounts | parallel on the diffs |
//! | `type6` | nothing | parallel, each transaction on its carried pre-state |
//! | `full` | accounts and slots seeded | parallel on the diffs |
//! | `parallel-io` | nothing | parallel on the diffs, reads on demand |
//!
//! Pre-block values carry code hashes, not code: a seeded contract's code is read on
//! demand. Code travels only where the block deploys it (the diffs' code changes, and
//! Type 6's entries after a deployment).
//!
//! When the checks run, and what they cost:
//! - canonical form: when decoding, before anything else (inline);
//! - carried values against the parent state: the parent's values of every carried key
//!   are read from the store itself (not through the seeded cache) on the I/O pool,
//!   beside execution; they are compared after it. This costs the reads the design saves
//!   execution, but off its critical path;
//! - diffs: inside each worker, against the transaction's own writes (as for the header
//!   BAL); keys, values and Type 6's per-transaction values: after execution, by deriving
//!   the design from what execution produced and comparing (`crate::verify`, on the
//!   import's thread; its time is the `validate` stage's first part).
//!
//! When a design's execution fails (a transaction fails, or its writes disagree with the
//! diffs), the design may have lied or the block may be invalid; the block is then
//! executed sequentially on the parent state, and the verdict is that execution's error,
//! or else the design's first difference from it. Should the design prove true, the
//! sequential execution stands (`ExecutionPath::SequentialBalUnusable`, logged as a
//! consumer fault): a design never decides whether a valid block imports.
//!
//! The check's reads of the parent state are timed per block (`DesignConsumer::check_reads`).

use crate::{
    derive, verify, AccountValue, BalDesign, DesignAccount, DesignBal, DesignBalError, Execution,
    PreValues,
};
use alloy_primitives::{Address, U256};
use ethrex_blockchain::error::{BalMismatch, InvalidBlock, StorageFault, StrategyRejection};
use ethrex_blockchain::validation::first_bal_difference;
use ethrex_blockchain::{BlockError, Blockchain, ExecutionStrategy, StrategyInput, StrategyOutput};
use ethrex_common::{Block, BlockWithBal, ChainConfig};
use ethrex_vm::warmer::warm_keys;
use ethrex_vm::{
    execute_block_sequential, execute_block_sequential_recording, run_transactions_parallel_on,
    BlockExecutionOutput, CachingDb, ParallelRun, Recovery, Schedule, StoreDb, TxOverlay,
    TxPreState, UnlistedReads,
};
use rayon::prelude::*;
use revm::bytecode::Bytecode;
use revm::database_interface::DatabaseRef;
use revm::state::AccountInfo;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Why a design's own execution did not finish (the verdict is then decided sequentially).
enum Failed {
    Block(BlockError),
    Diffs(String),
}

impl From<BlockError> for Failed {
    fn from(e: BlockError) -> Self {
        Failed::Block(e)
    }
}

impl From<ethrex_vm::ExecutionError> for Failed {
    fn from(e: ethrex_vm::ExecutionError) -> Self {
        Failed::Block(e.into())
    }
}

fn account_info(value: Option<AccountValue>) -> Option<AccountInfo> {
    value.map(|v| AccountInfo {
        balance: v.balance,
        nonce: v.nonce,
        code_hash: v.code_hash,
        code: None,
        account_id: None,
    })
}

fn storage_fault(e: impl std::error::Error + Send + Sync + 'static) -> BlockError {
    StorageFault::new(e).into()
}

/// A design's access list that is not this block's: an invalid block.
fn rejected(e: DesignBalError) -> BlockError {
    InvalidBlock::Strategy(StrategyRejection::new(e)).into()
}

/// The design's error inside a rejection by `DesignConsumer`, if that is what `e` is.
pub fn design_error(e: &BlockError) -> Option<&DesignBalError> {
    match e.invalid()? {
        InvalidBlock::Strategy(rejection) => rejection.error().downcast_ref(),
        _ => None,
    }
}

/// Type 6's values, answered per transaction: an account's or slot's value before the
/// transaction at index `i` is its last entry at an index up to `i`.
struct PerTxTable<'a> {
    bal: &'a DesignBal,
}

impl PerTxTable<'_> {
    fn account_entries(&self, address: Address) -> Option<&DesignAccount> {
        let i = self.bal.accounts.binary_search_by_key(&address, |a| a.address).ok()?;
        Some(&self.bal.accounts[i])
    }
}

impl TxOverlay for PerTxTable<'_> {
    fn account(&self, index: u64, address: Address) -> Option<Option<AccountInfo>> {
        let account = self.account_entries(address)?;
        let entry = last_at_or_before(&account.pre_tx, index, |e| e.index)?;
        let mut info = account_info(entry.value);
        if let Some(info) = &mut info {
            if !entry.code.is_empty() {
                // Code the block deployed is not in the store yet; an undecodable one is
                // left to the store, where the read fails and the block is judged
                // sequentially.
                info.code = Bytecode::new_raw_checked(entry.code.clone()).ok();
            }
        }
        Some(info)
    }

    fn slot(&self, index: u64, address: Address, slot: U256) -> Option<U256> {
        let account = self.account_entries(address)?;
        let i = account.slots.binary_search_by_key(&slot, |s| s.slot).ok()?;
        last_at_or_before(&account.slots[i].pre_tx, index, |e| e.index).map(|e| e.value)
    }
}

/// The last of `entries` (ascending by index) at an index up to `index`.
fn last_at_or_before<T>(entries: &[T], index: u64, at: impl Fn(&T) -> u64) -> Option<&T> {
    let k = entries.partition_point(|e| at(e) <= index);
    k.checked_sub(1).map(|k| &entries[k])
}

/// An account's value as the designs carry it.
fn account_value(info: Option<AccountInfo>) -> Option<AccountValue> {
    info.map(|i| AccountValue { nonce: i.nonce, balance: i.balance, code_hash: i.code_hash })
}

/// `designs` of `block` (a child of `chain`'s head), derived from executing it
/// sequentially on the head's state, recording what each transaction accessed, and the
/// head's values of every key its BAL names. Nothing is stored: import the block
/// afterwards to move on. Fails when the block does not execute, or its BAL is not the one
/// execution produces.
pub fn derive_designs(
    chain: &Blockchain,
    block: &BlockWithBal,
    designs: &[BalDesign],
) -> Result<Vec<DesignBal>, BlockError> {
    let header = &block.block.header;
    let parent = chain.head_parent(header)?;
    let cache = CachingDb::new(chain.state_db(header.parent_hash, parent.number));
    let senders = ethrex_vm::recover_senders(&block.block.body.transactions, Recovery::Pool)?;
    let output = execute_block_sequential_recording(&cache, &block.block, &senders, &chain.config)?;
    let bal = output.bal.as_ref().ok_or(InvalidBlock::BalMismatch(BalMismatch::NotBuilt))?;
    if let Some(given) = block.bal.as_ref().filter(|given| *given != bal) {
        return Err(InvalidBlock::BalMismatch(first_bal_difference(given, bal)).into());
    }
    // The cache holds pre-block values only (execution's writes stay in revm's state
    // above it), so the keys execution read are answered without the database.
    let mut pre = PreValues::default();
    for a in bal {
        let info = cache.basic_ref(a.address).map_err(storage_fault)?;
        pre.accounts.insert(a.address, account_value(info));
        let slots = a.storage_changes.iter().map(|s| s.slot).chain(a.storage_reads.iter().copied());
        for slot in slots {
            let value = cache.storage_ref(a.address, slot).map_err(storage_fault)?;
            pre.slots.insert((a.address, slot), value);
        }
    }
    designs
        .iter()
        .map(|&design| {
            derive(design, bal, &pre, Some(&output.tx_accesses)).map_err(|e| {
                storage_fault(StorageFault::message(format!("deriving {design}: {e}")))
            })
        })
        .collect()
}

/// Executes blocks as `design`'s consumer does, from `given` (the design's RLP encoding;
/// decoding is part of the import): `chain.import_block_with(block, &consumer)`.
pub struct DesignConsumer<'a> {
    design: BalDesign,
    given: &'a [u8],
    check_reads: Mutex<Duration>,
}

impl<'a> DesignConsumer<'a> {
    /// The consumer of `design`, given the block's design BAL `given`.
    pub fn new(design: BalDesign, given: &'a [u8]) -> Self {
        Self { design, given, check_reads: Mutex::new(Duration::ZERO) }
    }

    /// Reading the parent state's values of the keys whose values the design carries, on
    /// the I/O pool beside execution (within `exec`, which waits for it), in the last
    /// import.
    pub fn check_reads(&self) -> Duration {
        *self.check_reads.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl ExecutionStrategy for DesignConsumer<'_> {
    fn execute(&self, input: StrategyInput<'_>) -> Result<StrategyOutput, BlockError> {
        let StrategyInput { chain, cache, block, parent } = input;
        let t = Instant::now();
        let indices = block.body.transactions.len() as u64 + 2;
        let given = DesignBal::decode(self.design, self.given, indices).map_err(rejected)?;
        seed(cache, &given);
        let (accounts, slots) = match self.design {
            BalDesign::Type1 | BalDesign::Type2 => (true, true),
            BalDesign::Type3 | BalDesign::Type5 => (true, false),
            _ => (false, false),
        };
        if accounts || slots {
            chain
                .on_io_pool(|| {
                    warm_keys(cache, &given.accounts, |a| {
                        let named = if slots { a.slots.as_slice() } else { &[] };
                        (a.address, named.par_iter().map(|s| s.slot))
                    })
                })
                .map_err(storage_fault)?;
        }
        let warmer = t.elapsed();

        let t = Instant::now();
        let store = chain.state_db(block.header.parent_hash, parent.number);
        let schedule = chain.options.schedule;
        let (run, (parent_values, check_reads)) = rayon::join(
            || run_design(cache, block, &given, &chain.config, schedule),
            // Timed on the I/O pool: a worker waiting for another pool runs its own
            // pool's jobs meanwhile, so its clock would count execution too.
            || {
                chain.on_io_pool(|| {
                    let t = Instant::now();
                    (parent_values(&store, &given), t.elapsed())
                })
            },
        );
        *self.check_reads.lock().unwrap_or_else(|e| e.into_inner()) = check_reads;
        let parent_values = parent_values.map_err(storage_fault)?;
        // After a failed design execution, sequential execution on the parent state
        // decides: its error is the block's verdict, else the check below names the
        // design's first difference from it.
        let (senders, output, failed) = match run {
            Ok((senders, output)) => (senders, output, None),
            // A fault of our own storage is no verdict on the block or the design.
            Err(Failed::Block(e)) if !e.is_invalid_block() => return Err(e),
            Err(failed) => {
                let (senders, output) = execute_sequentially(&store, block, &chain.config)?;
                (senders, output, Some(failed))
            }
        };
        let exec = t.elapsed();
        let t = Instant::now();
        let produced =
            output.bal.as_ref().ok_or(InvalidBlock::BalMismatch(BalMismatch::NotBuilt))?;
        verify(&given, produced, &parent_values, Some(&output.tx_accesses)).map_err(rejected)?;
        let validate = t.elapsed();
        // A design that proves true although its consumer failed (a consumer fault) does
        // not reject the block: the sequential execution stands.
        if let Some(failed) = &failed {
            let reason = match failed {
                Failed::Block(e) => e.to_string(),
                Failed::Diffs(reason) => reason.clone(),
            };
            tracing::warn!(
                block = block.header.number,
                design = %self.design,
                %reason,
                "a true BAL design's consumer failed; the block was executed sequentially"
            );
        }
        Ok(StrategyOutput { senders, output, fell_back: failed.is_some(), warmer, exec, validate })
    }
}

fn run_design(
    cache: &CachingDb<StoreDb>,
    block: &Block,
    given: &DesignBal,
    config: &ChainConfig,
    schedule: Schedule,
) -> Result<(Vec<Address>, BlockExecutionOutput), Failed> {
    let txs = &block.body.transactions;
    if given.design.execution() == Execution::Sequential {
        let senders = ethrex_vm::recover_senders(txs, Recovery::Pool)?;
        let output = execute_block_sequential(cache, block, &senders, config)?;
        return Ok((senders, output));
    }
    let table = PerTxTable { bal: given };
    let diffs;
    let pre = match given.design {
        BalDesign::Type6 => TxPreState::Overlay(&table),
        design => {
            diffs = given.to_eip7928();
            let unlisted = if design == BalDesign::ParallelIo {
                UnlistedReads::FromDatabase
            } else {
                UnlistedReads::Mismatch
            };
            TxPreState::Bal { bal: &diffs, unlisted }
        }
    };
    match run_transactions_parallel_on(cache, block, config, pre, schedule)? {
        ParallelRun::BalMismatch(reason) => Err(Failed::Diffs(reason.to_string())),
        ParallelRun::Ran(mut executed) => {
            let senders = std::mem::take(&mut executed.senders);
            Ok((senders, executed.commit(block, config)?))
        }
    }
}

/// Sequential execution of `block` on the parent state, with each transaction's accesses
/// recorded: what decides after a design's execution failed.
fn execute_sequentially(
    store: &StoreDb,
    block: &Block,
    config: &ChainConfig,
) -> Result<(Vec<Address>, BlockExecutionOutput), BlockError> {
    let fresh = CachingDb::new(store.clone());
    let senders = ethrex_vm::recover_senders(&block.body.transactions, Recovery::Pool)?;
    let output = execute_block_sequential_recording(&fresh, block, &senders, config)?;
    Ok((senders, output))
}

/// Puts the values the design carries into the block's cache.
fn seed(cache: &CachingDb<StoreDb>, given: &DesignBal) {
    let design = given.design;
    for a in &given.accounts {
        if design.carries_pre_block_accounts() {
            if let Some(pre) = a.pre {
                cache.seed_account(a.address, account_info(pre));
            }
        }
        if design.carries_pre_block_slots() {
            for s in &a.slots {
                if let Some(pre) = s.pre {
                    cache.seed_storage(a.address, s.slot, pre);
                }
            }
        }
    }
}

/// The parent state's values of the keys whose values `given` carries (read from the
/// store, not from the seeded cache), for the check after execution.
fn parent_values(store: &StoreDb, given: &DesignBal) -> Result<PreValues, ethrex_vm::StoreDbError> {
    let design = given.design;
    let type6 = design == BalDesign::Type6;
    let mut values = PreValues::default();
    if design.carries_pre_block_accounts() || type6 {
        values.accounts = given
            .accounts
            .par_iter()
            .map(|a| {
                let value = account_value(store.basic_ref(a.address)?);
                Ok::<_, ethrex_vm::StoreDbError>((a.address, value))
            })
            .collect::<Result<_, _>>()?;
    }
    if design.carries_pre_block_slots() || type6 {
        // Every read its own task: an account with thousands of slots spreads over the pool.
        let keys: Vec<(Address, U256)> = given.slot_keys().collect();
        values.slots = keys
            .into_par_iter()
            .map(|(address, slot)| {
                Ok::<_, ethrex_vm::StoreDbError>((
                    (address, slot),
                    store.storage_ref(address, slot)?,
                ))
            })
            .collect::<Result<_, _>>()?;
    }
    Ok(values)
}
