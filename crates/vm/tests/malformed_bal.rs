//! The parallel executor must name the same verdict as the sequential one for every
//! header BAL, however malformed. A BAL it cannot trust makes it hand the block over
//! (`ParallelRun::BalMismatch`), after which the import runs the sequential path;
//! everything else it decides itself. These tests build malformed BALs (each next to a
//! block that is valid, or invalid for a reason unrelated to the BAL) and compare the
//! verdict of "parallel, then sequential on a hand-over" with the sequential verdict.

mod common;
#[path = "common/pre_state.rs"]
mod pre_state;

use alloy_consensus::Signed;
use alloy_eips::eip2935::HISTORY_STORAGE_ADDRESS as HISTORY_STORAGE;
use alloy_eips::eip7928::{BalanceChange, BlockAccessIndex, CodeChange};
use alloy_primitives::{Address, Signature, B256, U256};
use common::{block, call, config, sender, RECEIVER};
use ethrex_common::{AccountChanges, Block, BlockAccessList, Transaction};
use ethrex_vm::error::{DatabaseError, TxErrorKind};
use ethrex_vm::{
    execute_block_sequential, recover_senders, run_transactions_parallel, ExecutionError,
    ParallelRun, Recovery, Schedule,
};
use pre_state::{pre_state, Output, COUNTER};
use revm::database::{CacheDB, EmptyDB};
use revm::database_interface::{DBErrorMarker, DatabaseRef};
use revm::state::{AccountInfo, Bytecode};

/// The same transaction with a signature no sender can be recovered from.
fn unrecoverable(tx: &Transaction) -> Transaction {
    let Transaction::Eip1559(signed) = tx else { panic!("not EIP-1559") };
    let broken = Signature::new(U256::ZERO, U256::from(1u64), false);
    Transaction::Eip1559(Signed::new_unchecked(
        signed.tx().clone(),
        broken,
        B256::repeat_byte(0xee),
    ))
}

/// A transfer, two calls to the counter (one from the transfer's sender) and a last
/// transfer whose validity each test chooses.
fn transactions(last: Transaction) -> Vec<Transaction> {
    vec![
        call(0, 0, RECEIVER, 1000, 21_000),
        call(1, 0, COUNTER, 0, 1_000_000),
        call(0, 1, COUNTER, 0, 1_000_000),
        last,
    ]
}

fn valid_last() -> Transaction {
    call(2, 0, RECEIVER, 5, 21_000)
}

type Verdict = Result<Output, ExecutionError>;

/// As the import runs the sequential path: every sender first, then execution.
fn sequential<DB: DatabaseRef>(db: DB, block: &Block) -> Verdict {
    let senders = recover_senders(&block.body.transactions, Recovery::CurrentThread)?;
    Ok(execute_block_sequential(db, block, &senders, &config())?.into())
}

/// As the import runs the parallel path; `true` when it handed the block over.
fn parallel<DB: DatabaseRef + Sync>(
    db: &DB,
    block: &Block,
    bal: &BlockAccessList,
) -> (Verdict, bool) {
    match run_transactions_parallel(db, block, &config(), bal, Schedule::default()) {
        Ok(ParallelRun::Ran(executed)) => {
            (executed.commit(block, &config()).map(Into::into), false)
        }
        Ok(ParallelRun::BalMismatch(_)) => (sequential(db, block), true),
        Err(e) => (Err(e), false),
    }
}

/// The BAL of the block with a valid last transaction, as execution builds it.
fn header_bal() -> BlockAccessList {
    let output = sequential(pre_state(), &block(transactions(valid_last()))).expect("valid block");
    output.bal.expect("Amsterdam builds a BAL")
}

fn account(bal: &mut BlockAccessList, address: Address) -> &mut AccountChanges {
    bal.iter_mut()
        .find(|a| a.address == address)
        .unwrap_or_else(|| panic!("{address} not in the BAL"))
}

type Mutation = fn(&mut BlockAccessList);

/// Malformed BALs: each names the problem, whether the parallel path must hand the
/// block over, and the change.
fn mutations() -> Vec<(&'static str, bool, Mutation)> {
    vec![
        ("unchanged", false, |_| {}),
        ("EIP-7702 code change one byte short", true, |bal| {
            let mut designator = vec![0xef, 0x01, 0x00];
            designator.extend_from_slice(&[0x11; 19]);
            account(bal, RECEIVER).code_changes.push(CodeChange {
                block_access_index: BlockAccessIndex(1),
                new_code: designator.into(),
            });
        }),
        ("nonce changes out of index order", true, |bal| {
            let changes = &mut account(bal, sender(0)).nonce_changes;
            assert_eq!(changes.len(), 2);
            changes.swap(0, 1);
        }),
        ("account listed twice, the copy empty", true, |bal| {
            let at = bal.iter().position(|a| a.address == sender(0)).unwrap();
            bal.insert(at + 1, AccountChanges { address: sender(0), ..Default::default() });
        }),
        ("slot both changed and read", true, |bal| {
            let counter = account(bal, COUNTER);
            let slot = counter.storage_changes[0].slot;
            counter.storage_reads.push(slot);
            counter.storage_reads.sort_unstable();
        }),
        ("balance change past the last index", true, |bal| {
            account(bal, RECEIVER).balance_changes.push(BalanceChange {
                block_access_index: BlockAccessIndex(6),
                post_balance: U256::from(1u64),
            });
        }),
        ("written account dropped", true, |bal| bal.retain(|a| a.address != RECEIVER)),
    ]
}

/// Every malformed BAL, beside a valid block, one whose last transaction has a nonce too
/// high, and one whose last transaction's sender cannot be recovered.
#[test]
fn parallel_verdict_equals_sequential_verdict_for_malformed_bals() {
    let db = pre_state();
    let bal = header_bal();
    let lasts = [
        ("valid", valid_last()),
        ("nonce too high", call(2, 9, RECEIVER, 5, 21_000)),
        ("unrecoverable signature", unrecoverable(&valid_last())),
    ];
    for (name, hands_over, mutate) in mutations() {
        let mut malformed = bal.clone();
        mutate(&mut malformed);
        for (last_name, last) in &lasts {
            let block = block(transactions(last.clone()));
            let expected = sequential(&db, &block);
            let (got, handed_over) = parallel(&db, &block, &malformed);
            assert_eq!(got, expected, "BAL '{name}', last transaction {last_name}");
            // A bad signature is named before anything else is looked at.
            if *last_name != "unrecoverable signature" {
                assert_eq!(
                    handed_over, hands_over,
                    "BAL '{name}', last transaction {last_name}: hand-over"
                );
            }
        }
    }
}

/// The 7702 case on its own, with the verdicts spelled out.
#[test]
fn malformed_delegation_code_leaves_the_verdict_to_the_transactions() {
    let db = pre_state();
    let mut bal = header_bal();
    (mutations()[1].2)(&mut bal);
    let block = block(transactions(call(2, 9, RECEIVER, 5, 21_000)));
    let (got, handed_over) = parallel(&db, &block, &bal);
    assert!(handed_over);
    match got {
        Err(ExecutionError::InvalidTransaction {
            index: 3,
            kind: TxErrorKind::NonceTooHigh,
            ..
        }) => {}
        other => panic!("expected the nonce of transaction 3, got {other:?}"),
    }
    let block = crate::block(transactions(unrecoverable(&valid_last())));
    assert!(matches!(
        parallel(&db, &block, &bal).0,
        Err(ExecutionError::InvalidSignature { index: 3, .. })
    ));
}

/// A store whose reads of one account fail.
struct FailingDb {
    inner: CacheDB<EmptyDB>,
    broken: Address,
}

#[derive(Debug, thiserror::Error)]
#[error("disk on fire reading {0}")]
struct DiskOnFire(Address);

impl DBErrorMarker for DiskOnFire {}

impl DatabaseRef for FailingDb {
    type Error = DiskOnFire;

    fn basic_ref(&self, address: Address) -> Result<Option<AccountInfo>, Self::Error> {
        if address == self.broken {
            return Err(DiskOnFire(address));
        }
        Ok(self.inner.basic_ref(address).unwrap())
    }
    fn code_by_hash_ref(&self, code_hash: B256) -> Result<Bytecode, Self::Error> {
        Ok(self.inner.code_by_hash_ref(code_hash).unwrap())
    }
    fn storage_ref(&self, address: Address, index: U256) -> Result<U256, Self::Error> {
        Ok(self.inner.storage_ref(address, index).unwrap())
    }
    fn block_hash_ref(&self, number: u64) -> Result<B256, Self::Error> {
        Ok(self.inner.block_hash_ref(number).unwrap())
    }
}

/// The pre-block system call cannot read its contract. Sequential import recovers the
/// senders first, so a bad signature is still the verdict; without one, the store's
/// failure is, with its typed cause kept.
#[test]
fn pre_block_failure_is_reported_in_sequential_order() {
    let db = FailingDb { inner: pre_state(), broken: HISTORY_STORAGE };
    let bal = header_bal();
    let bad_signature = block(transactions(unrecoverable(&valid_last())));
    let expected = sequential(&db, &bad_signature);
    assert!(
        matches!(expected, Err(ExecutionError::InvalidSignature { index: 3, .. })),
        "{expected:?}"
    );
    assert_eq!(parallel(&db, &bad_signature, &bal), (expected, false));

    let valid = block(transactions(valid_last()));
    let expected = sequential(&db, &valid);
    assert_eq!(parallel(&db, &valid, &bal), (expected.clone(), false));
    let Err(ExecutionError::Database(cause)) = expected else {
        panic!("expected a database error, got {expected:?}")
    };
    assert!(cause.downcast_ref::<DiskOnFire>().is_some_and(|e| e.0 == HISTORY_STORAGE), "{cause}");
    let error = ExecutionError::Database(cause.clone());
    assert_eq!(std::error::Error::source(&error).map(|s| s.to_string()), Some(cause.to_string()));
    // Compared by what they say: the same failure read twice is the same error.
    assert_eq!(cause, DatabaseError::message(DiskOnFire(HISTORY_STORAGE).to_string()));
}
