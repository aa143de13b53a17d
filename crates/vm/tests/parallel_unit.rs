//! The parallel executor's scheduling and its checks against the header BAL, through the
//! public API: every `Schedule` gives the sequential result on a block whose transactions
//! depend on each other, and a BAL that disagrees with what a transaction writes (a wrong
//! value, a missing account, a write that did not happen) is reported as a BAL mismatch,
//! never turned into a result.

mod common;
#[path = "common/pre_state.rs"]
mod pre_state;

use alloy_eips::eip7928::{BalanceChange, BlockAccessIndex};
use alloy_primitives::{Address, U256};
use common::{block, call, config, sender, RECEIVER};
use ethrex_common::{Block, BlockAccessList, Transaction};
use ethrex_vm::{
    execute_block_sequential, recover_senders, run_transactions_parallel, ExecutionError,
    ParallelRun, Recovery, Schedule,
};
use pre_state::{pre_state, Output, COUNTER};

const SCHEDULES: [Schedule; 2] = [Schedule::LongestFirst, Schedule::BlockOrder];

/// Transactions that depend on each other (nonces, balances, one counter slot), with gas
/// limits that make the longest-first order differ from block order (4, 1, 2, then 0 and
/// 3).
fn transactions() -> Vec<Transaction> {
    // A transfer creating an account needs Amsterdam's state gas (EIP-8037) on top of
    // 21,000; one to an existing account does not.
    vec![
        call(0, 0, RECEIVER, 1_000, 300_000),
        call(1, 0, COUNTER, 0, 1_000_000),
        // Sender 0 again: its nonce and balance after transaction 0; the counter after 1.
        call(0, 1, COUNTER, 0, 500_000),
        // Pays sender 0, which transactions 0 and 2 also changed.
        call(2, 0, sender(0), 5, 21_000),
        call(1, 1, COUNTER, 0, 2_000_000),
    ]
}

fn sequential(block: &Block) -> Result<Output, ExecutionError> {
    let senders = recover_senders(&block.body.transactions, Recovery::CurrentThread)?;
    Ok(execute_block_sequential(pre_state(), block, &senders, &config())?.into())
}

/// What the parallel path concluded.
#[derive(Debug)]
enum Parallel {
    Executed(Output),
    BalMismatch(String),
    Failed(ExecutionError),
}

/// The parallel path on `block` with header BAL `bal`, taken in `schedule`'s order and,
/// when every transaction agreed with the BAL, committed. The one place that matches on
/// the executor's outcome type.
fn parallel(block: &Block, bal: &BlockAccessList, schedule: Schedule) -> Parallel {
    let db = pre_state();
    match run_transactions_parallel(&db, block, &config(), bal, schedule) {
        Ok(ParallelRun::Ran(executed)) => match executed.commit(block, &config()) {
            Ok(output) => Parallel::Executed(output.into()),
            Err(e) => Parallel::Failed(e),
        },
        Ok(ParallelRun::BalMismatch(reason)) => Parallel::BalMismatch(reason.to_string()),
        Err(e) => Parallel::Failed(e),
    }
}

/// The BAL the dependent block produces, as its header would carry it.
fn header_bal() -> BlockAccessList {
    sequential(&block(transactions())).expect("a valid block").bal.expect("Amsterdam builds a BAL")
}

fn entry(bal: &mut BlockAccessList, address: Address) -> &mut ethrex_common::AccountChanges {
    bal.iter_mut().find(|a| a.address == address).unwrap_or_else(|| panic!("{address} not listed"))
}

/// Every schedule reports a mismatch (and nothing else) for `bal`; returns the reasons.
fn mismatch_on_every_schedule(bal: &BlockAccessList) -> Vec<String> {
    let block = block(transactions());
    SCHEDULES
        .iter()
        .map(|&schedule| match parallel(&block, bal, schedule) {
            Parallel::BalMismatch(reason) => reason,
            other => panic!("{schedule:?}: expected a BAL mismatch, got {other:?}"),
        })
        .collect()
}

#[test]
fn every_schedule_matches_sequential_execution() {
    let block = block(transactions());
    let expected = sequential(&block).unwrap();
    // The dependencies took effect: three increments of the counter, in order.
    let counter = expected.accounts.iter().find(|a| a.address == COUNTER).unwrap();
    assert_eq!(counter.storage, vec![(U256::ZERO, U256::from(3u64))]);
    assert_eq!(expected.receipts.len(), 5);
    assert!(expected.receipts.iter().all(|r| r.status()));
    let bal = expected.bal.clone().unwrap();
    assert_eq!(Schedule::default(), Schedule::LongestFirst);
    for schedule in SCHEDULES {
        match parallel(&block, &bal, schedule) {
            Parallel::Executed(output) => assert_eq!(output, expected, "{schedule:?}"),
            other => panic!("{schedule:?}: expected execution, got {other:?}"),
        }
    }
}

#[test]
fn the_first_invalid_transaction_in_block_order_is_the_verdict_on_every_schedule() {
    // Transactions 1 and 4 have nonces too high; 4 runs first under longest-first.
    let mut txs = transactions();
    txs[1] = call(1, 7, COUNTER, 0, 1_000_000);
    txs[4] = call(1, 9, COUNTER, 0, 2_000_000);
    let block = block(txs);
    let expected = sequential(&block).expect_err("transaction 1 is invalid");
    assert!(
        matches!(expected, ExecutionError::InvalidTransaction { index: 1, .. }),
        "{expected:?}"
    );
    for schedule in SCHEDULES {
        match parallel(&block, &header_bal(), schedule) {
            Parallel::Failed(e) => assert_eq!(e, expected, "{schedule:?}"),
            other => panic!("{schedule:?}: expected {expected:?}, got {other:?}"),
        }
    }
}

#[test]
fn a_wrong_value_in_the_bal_is_a_mismatch_not_a_result() {
    let mut bal = header_bal();
    let change = &mut entry(&mut bal, RECEIVER).balance_changes[0];
    assert_eq!(change.block_access_index, BlockAccessIndex(1));
    change.post_balance += U256::from(1u64);
    for reason in mismatch_on_every_schedule(&bal) {
        assert!(reason.contains(&RECEIVER.to_string()), "{reason}");
    }

    let mut bal = header_bal();
    let slot = &mut entry(&mut bal, COUNTER).storage_changes[0];
    let last = slot.changes.last_mut().unwrap();
    last.new_value += U256::from(1u64);
    for reason in mismatch_on_every_schedule(&bal) {
        assert!(reason.contains(&COUNTER.to_string()), "{reason}");
    }
}

#[test]
fn an_account_missing_from_the_bal_is_a_mismatch() {
    // Transaction 0 pays RECEIVER, which the BAL no longer lists at all.
    let mut bal = header_bal();
    bal.retain(|a| a.address != RECEIVER);
    for reason in mismatch_on_every_schedule(&bal) {
        assert!(reason.contains(&RECEIVER.to_string()), "{reason}");
    }
    // Listed, but without the write.
    let mut bal = header_bal();
    entry(&mut bal, RECEIVER).balance_changes.clear();
    for reason in mismatch_on_every_schedule(&bal) {
        assert!(reason.contains(&RECEIVER.to_string()), "{reason}");
    }
}

#[test]
fn a_write_the_transaction_did_not_make_is_a_mismatch() {
    // Transaction 3 (index 4) does not touch RECEIVER; the BAL says it paid it.
    let mut bal = header_bal();
    let changes = &mut entry(&mut bal, RECEIVER).balance_changes;
    let paid = changes[0].post_balance;
    changes.push(BalanceChange {
        block_access_index: BlockAccessIndex(4),
        post_balance: paid + U256::from(1u64),
    });
    for reason in mismatch_on_every_schedule(&bal) {
        assert!(reason.contains(&RECEIVER.to_string()), "{reason}");
    }
}
