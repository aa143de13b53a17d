//! The consumers of the BAL designs (`ethrex_bal`): a research import that executes a
//! block from a design's access list instead of the header's EIP-7928 one.
//!
//! The block itself is validated exactly as `Blockchain::import_block` validates it (its
//! own EIP-7928 BAL against the header and against execution, gas, receipts, requests,
//! state root), so a design can change how fast a block imports, never whether it does.
//! On top, the design's BAL is checked: it must be exactly what the design derives from
//! this block's execution and the parent state (`ethrex_bal::verify`), so a lie in any
//! field is `BlockError::DesignBal` and nothing of the block is stored.
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
//!   the design from what execution produced and comparing (`ethrex_bal::verify`, on the
//!   import's thread; its time is the `validate` stage's first part).
//!
//! When a design's execution fails (a transaction fails, or its writes disagree with the
//! diffs), the design may have lied or the block may be invalid; the block is then
//! executed sequentially on the parent state, and the verdict is that execution's error,
//! or else the design's first difference from it. Should the design prove true, the
//! sequential execution stands (`ExecutionPath::SequentialBalUnusable`, logged as a
//! consumer fault): a design never decides whether a valid block imports.

use crate::error::{BlockError, StorageFault};
use crate::import::{BlockTimings, Executed};
use crate::{Blockchain, ExecutionPath};
use alloy_primitives::{Address, U256};
use ethrex_bal::{verify, AccountValue, BalDesign, DesignBal, Execution, PreValues};
use ethrex_common::Block;
use ethrex_vm::warmer::warm_keys;
use ethrex_vm::{
    execute_block_sequential, execute_block_sequential_recording, run_transactions_parallel_on,
    BlockExecutionOutput, CachingDb, ParallelRun, PreTxValues, StoreDb, TxPreState,
};
use rayon::prelude::*;
use revm::bytecode::Bytecode;
use revm::database_interface::DatabaseRef;
use revm::state::AccountInfo;
use std::time::Instant;

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
    BlockError::Storage(StorageFault::new(e))
}

/// Type 6's values, answered per transaction: an account's or slot's value before the
/// transaction at index `i` is its last entry at an index up to `i`.
struct PerTxTable<'a> {
    bal: &'a DesignBal,
}

impl PerTxTable<'_> {
    fn account_entries(&self, address: Address) -> Option<&ethrex_bal::DesignAccount> {
        let i = self.bal.accounts.binary_search_by_key(&address, |a| a.address).ok()?;
        Some(&self.bal.accounts[i])
    }
}

impl PreTxValues for PerTxTable<'_> {
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

impl Blockchain {
    /// Imports `block` as `design`'s consumer does, from `given` (the design's RLP
    /// encoding; decoding is part of the import). Everything `import_block` checks is
    /// checked, and `given` must be exactly the design of this block, or the import fails
    /// with `BlockError::DesignBal` and stores nothing (see the module docs).
    pub fn import_block_with_design(
        &self,
        block: ethrex_common::BlockWithBal,
        design: BalDesign,
        given: &[u8],
    ) -> Result<crate::ImportOutcome, BlockError> {
        let prerun = None::<ethrex_vm::ExecutedTransactions<'_, CachingDb<StoreDb>>>;
        self.import_with(block, prerun, Some((design, given)))
    }

    /// `designs` of `block` (a child of the head), derived from executing it sequentially
    /// on the head's state, recording what each transaction accessed, and the head's
    /// values of every key its BAL names. Nothing is stored: import the block afterwards
    /// to move on. Fails when the block does not execute, or its BAL is not the one
    /// execution produces.
    pub fn derive_designs(
        &self,
        block: &ethrex_common::BlockWithBal,
        designs: &[BalDesign],
    ) -> Result<Vec<DesignBal>, BlockError> {
        let header = &block.block.header;
        let parent = self.head_parent(header)?;
        let cache = CachingDb::new(self.state_db(header.parent_hash, parent.number));
        let senders = ethrex_vm::recover_senders(&block.block.body.transactions, true)?;
        let output =
            execute_block_sequential_recording(&cache, &block.block, &senders, &self.config)?;
        let bal = output.bal.as_ref().ok_or(BlockError::BalMissing)?;
        if block.bal.as_ref().is_some_and(|given| given != bal) {
            return Err(BlockError::BalMismatch(
                "the block's BAL is not the one its execution produces".into(),
            ));
        }
        // The cache holds pre-block values only (execution's writes stay in revm's state
        // above it), so the keys execution read are answered without the database.
        let mut pre = PreValues::default();
        for a in bal {
            let info = cache.basic_ref(a.address).map_err(storage_fault)?;
            pre.accounts.insert(a.address, account_value(info));
            let slots =
                a.storage_changes.iter().map(|s| s.slot).chain(a.storage_reads.iter().copied());
            for slot in slots {
                let value = cache.storage_ref(a.address, slot).map_err(storage_fault)?;
                pre.slots.insert((a.address, slot), value);
            }
        }
        designs
            .iter()
            .map(|&design| {
                ethrex_bal::derive(design, bal, &pre, Some(&output.tx_accesses))
                    .map_err(|e| BlockError::BalMismatch(format!("deriving {design}: {e}")))
            })
            .collect()
    }

    /// The design's execution of `block` on `cache` (the parent's state), checked.
    pub(crate) fn execute_design(
        &self,
        cache: &CachingDb<StoreDb>,
        block: &Block,
        parent_number: u64,
        (design, bytes): (BalDesign, &[u8]),
        timings: &mut BlockTimings,
    ) -> Result<Executed, BlockError> {
        let t = Instant::now();
        let indices = block.body.transactions.len() as u64 + 2;
        let given = DesignBal::decode(design, bytes, indices)?;
        seed(cache, &given);
        let (accounts, slots) = match design {
            BalDesign::Type1 | BalDesign::Type2 => (true, true),
            BalDesign::Type3 | BalDesign::Type5 => (true, false),
            _ => (false, false),
        };
        if accounts || slots {
            self.on_io_pool(|| {
                warm_keys(cache, &given.accounts, |a| {
                    let named = if slots { a.slots.as_slice() } else { &[] };
                    (a.address, named.par_iter().map(|s| s.slot))
                })
            })
            .map_err(storage_fault)?;
        }
        timings.warmer = t.elapsed();

        let t = Instant::now();
        let store = self.state_db(block.header.parent_hash, parent_number);
        let (run, (parent, check_reads)) = rayon::join(
            || self.run_design(cache, block, &given),
            // Timed on the I/O pool: a worker waiting for another pool runs its own
            // pool's jobs meanwhile, so its clock would count execution too.
            || {
                self.on_io_pool(|| {
                    let t = Instant::now();
                    (parent_values(&store, &given), t.elapsed())
                })
            },
        );
        timings.design_check_reads = check_reads;
        let parent = parent.map_err(storage_fault)?;
        // After a failed design execution, sequential execution on the parent state
        // decides: its error is the block's verdict, else the check below names the
        // design's first difference from it.
        let (senders, output, failed) = match run {
            Ok((senders, output)) => (senders, output, None),
            // A fault of our own storage is no verdict on the block or the design.
            Err(Failed::Block(e)) if !e.is_invalid_block() => return Err(e),
            Err(failed) => {
                let (senders, output) = self.execute_sequentially(&store, block)?;
                (senders, output, Some(failed))
            }
        };
        timings.exec = t.elapsed();
        let t = Instant::now();
        let produced = output.bal.as_ref().ok_or(BlockError::BalMissing)?;
        verify(&given, produced, &parent, Some(&output.tx_accesses))?;
        timings.validate = t.elapsed();
        // A design that proves true although its consumer failed (a consumer fault) does
        // not reject the block: the sequential execution stands.
        let path = match failed {
            None => ExecutionPath::Design(design),
            Some(failed) => {
                let reason = match failed {
                    Failed::Block(e) => e.to_string(),
                    Failed::Diffs(reason) => reason,
                };
                tracing::warn!(
                    block = block.header.number,
                    %design,
                    %reason,
                    "a true BAL design's consumer failed; the block was executed sequentially"
                );
                ExecutionPath::SequentialBalUnusable
            }
        };
        timings.longest_tx = output.longest_tx;
        Ok(Executed { senders, output, path, receipts: None, from_bal: None })
    }

    fn run_design(
        &self,
        cache: &CachingDb<StoreDb>,
        block: &Block,
        given: &DesignBal,
    ) -> Result<(Vec<Address>, BlockExecutionOutput), Failed> {
        let txs = &block.body.transactions;
        if given.design.execution() == Execution::Sequential {
            let senders = ethrex_vm::recover_senders(txs, true)?;
            let output = execute_block_sequential(cache, block, &senders, &self.config, true)?;
            return Ok((senders, output));
        }
        let table = PerTxTable { bal: given };
        let diffs;
        let pre = match given.design {
            BalDesign::Type6 => TxPreState::PerTx(&table),
            design => {
                diffs = given.to_eip7928();
                TxPreState::Bal { bal: &diffs, fallback: design == BalDesign::ParallelIo }
            }
        };
        match run_transactions_parallel_on(cache, block, &self.config, pre, self.options.schedule)?
        {
            ParallelRun::BalMismatch { reason } => Err(Failed::Diffs(reason)),
            ParallelRun::Ran(mut executed) => {
                let senders = std::mem::take(&mut executed.senders);
                Ok((senders, executed.commit(block, &self.config)?))
            }
        }
    }

    /// Sequential execution of `block` on the parent state, with each transaction's
    /// accesses recorded: what decides after a design's execution failed.
    fn execute_sequentially(
        &self,
        store: &StoreDb,
        block: &Block,
    ) -> Result<(Vec<Address>, BlockExecutionOutput), BlockError> {
        let fresh = CachingDb::new(store.clone());
        let senders = ethrex_vm::recover_senders(&block.body.transactions, true)?;
        let output = execute_block_sequential_recording(&fresh, block, &senders, &self.config)?;
        Ok((senders, output))
    }
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
