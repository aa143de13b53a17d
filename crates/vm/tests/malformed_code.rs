//! Code in the store that revm cannot load (an EIP-7702 designator, `0xef01..`, of the
//! wrong length) is a read error of `StoreDb`, never a panic: not when read directly, not
//! when a block's transaction calls it on the sequential path, and not on a rayon worker
//! of the parallel path.

mod common;

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use common::{block, call, config, sender, SYSTEM_CONTRACTS};
use ethrex_common::{AccountState, Block, Transaction, KECCAK_EMPTY};
use ethrex_storage::{Store, Table, WriteBatch};
use ethrex_vm::{
    execute_block_sequential, run_transactions_parallel, ExecutionError, ParallelRun, Schedule,
    StoreDb, StoreDbError,
};
use revm::database_interface::DatabaseRef;

const CONTRACT: Address = Address::repeat_byte(0x7d);

/// `0xef0100` followed by `body_len` address bytes (20 make a valid designator).
fn designator(body_len: usize) -> Bytes {
    let mut code = vec![0xef, 0x01, 0x00];
    code.extend(std::iter::repeat_n(0x33, body_len));
    code.into()
}

/// Sender 0 calls `CONTRACT`.
fn call_contract() -> Transaction {
    call(0, 0, CONTRACT, 0, 1_000_000)
}

/// A store whose flat state holds a funded sender, system contracts that only STOP, and
/// `CONTRACT` with `code`, written as they are (the store checks only that code hashes to its key).
fn store_with(code: &Bytes) -> Store {
    let store = Store::in_memory();
    let mut batch = WriteBatch::new();
    let mut put = |address: Address, balance: U256, code: &[u8]| {
        let code_hash = if code.is_empty() { KECCAK_EMPTY } else { keccak256(code) };
        if !code.is_empty() {
            batch.put(Table::Code, code_hash.to_vec(), code.to_vec());
        }
        let account = AccountState { balance, code_hash, ..Default::default() };
        batch.put(Table::Accounts, address.to_vec(), alloy_rlp::encode(account));
    };
    put(sender(0), U256::from(10u64).pow(U256::from(18u64)), &[]);
    for system in SYSTEM_CONTRACTS {
        put(system, U256::ZERO, &[0x00]);
    }
    put(CONTRACT, U256::ZERO, code);
    store.write(batch).unwrap();
    store
}

fn db(store: &Store) -> StoreDb {
    StoreDb::new(store.clone(), B256::repeat_byte(0x01), 0)
}

fn one_call() -> Block {
    block(vec![call_contract()])
}

#[test]
fn malformed_code_read_from_the_store_is_an_error() {
    for body_len in [0, 5, 19] {
        let code = designator(body_len);
        let hash = keccak256(&code);
        match db(&store_with(&code)).code_by_hash_ref(hash) {
            Err(StoreDbError::MalformedCode { hash: h, .. }) => assert_eq!(h, hash),
            other => panic!("{body_len} address bytes: expected MalformedCode, got {other:?}"),
        }
    }
    let valid = designator(20);
    let code = db(&store_with(&valid)).code_by_hash_ref(keccak256(&valid)).unwrap();
    assert!(code.is_eip7702());
    assert_eq!(code.original_bytes(), valid);
}

#[test]
fn calling_malformed_code_fails_sequential_execution() {
    let block = one_call();
    let err =
        execute_block_sequential(db(&store_with(&designator(5))), &block, &[sender(0)], &config())
            .expect_err("the call cannot load its code");
    assert!(matches!(err, ExecutionError::Database(_)), "{err:?}");
    assert!(err.to_string().contains("malformed"), "{err}");
    // The same block on well-formed code executes.
    let output =
        execute_block_sequential(db(&store_with(&designator(20))), &block, &[sender(0)], &config())
            .unwrap();
    assert_eq!(output.receipts.len(), 1);
}

#[test]
fn calling_malformed_code_on_a_parallel_worker_is_not_a_panic() {
    let block = one_call();
    // The BAL of the block on well-formed code: the read of CONTRACT is listed.
    let bal =
        execute_block_sequential(db(&store_with(&designator(20))), &block, &[sender(0)], &config())
            .unwrap()
            .bal
            .unwrap();
    let store = store_with(&designator(5));
    let db = db(&store);
    match run_transactions_parallel(&db, &block, &config(), &bal, Schedule::BlockOrder) {
        Ok(ParallelRun::BalMismatch(reason)) => {
            assert!(reason.to_string().contains("malformed"), "{reason}")
        }
        Ok(ParallelRun::Ran(_)) => panic!("executed on code that cannot be loaded"),
        Err(e) => assert!(e.to_string().contains("malformed"), "{e}"),
    }
}
