//! Code in the store that revm cannot load (an EIP-7702 designator, `0xef01..`, of the
//! wrong length) is a read error of `StoreDb`, never a panic: not when read directly, not
//! when a block's transaction calls it on the sequential path, and not on a rayon worker
//! of the parallel path.

use alloy_consensus::crypto::secp256k1::sign_message;
use alloy_consensus::transaction::SignerRecoverable;
use alloy_consensus::{Header, SignableTransaction, TxEip1559};
use alloy_eips::eip2935::HISTORY_STORAGE_ADDRESS as HISTORY_STORAGE;
use alloy_eips::eip7002::WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS as WITHDRAWAL_REQUESTS;
use alloy_eips::eip7251::CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS as CONSOLIDATION_REQUESTS;
use alloy_eips::eip8282::{
    BUILDER_DEPOSIT_CONTRACT_ADDRESS as BUILDER_DEPOSITS,
    BUILDER_EXIT_CONTRACT_ADDRESS as BUILDER_EXITS,
};
use alloy_primitives::{keccak256, Address, Bytes, TxKind, B256, U256};
use ethrex_common::{AccountState, Block, BlockBody, ChainConfig, Fork, Transaction, KECCAK_EMPTY};
use ethrex_storage::{Store, Table, WriteBatch};
use ethrex_vm::{
    execute_block_sequential, run_transactions_parallel, ExecutionError, ParallelRun, Schedule,
    StoreDb, StoreDbError,
};
use revm::database_interface::DatabaseRef;

const CHAIN_ID: u64 = 1;
const CONTRACT: Address = Address::repeat_byte(0x7d);
const SENDER_KEY: B256 = B256::repeat_byte(0x01);

/// `0xef0100` followed by `body_len` address bytes (20 make a valid designator).
fn designator(body_len: usize) -> Bytes {
    let mut code = vec![0xef, 0x01, 0x00];
    code.extend(std::iter::repeat_n(0x33, body_len));
    code.into()
}

fn config() -> ChainConfig {
    ChainConfig::all_forks_at_genesis(CHAIN_ID, Fork::Amsterdam)
}

fn call_contract() -> Transaction {
    let tx = TxEip1559 {
        chain_id: CHAIN_ID,
        nonce: 0,
        gas_limit: 1_000_000,
        max_fee_per_gas: 100,
        max_priority_fee_per_gas: 1,
        to: TxKind::Call(CONTRACT),
        ..Default::default()
    };
    let signature = sign_message(SENDER_KEY, tx.signature_hash()).unwrap();
    Transaction::Eip1559(tx.into_signed(signature))
}

fn sender() -> Address {
    call_contract().recover_signer().unwrap()
}

/// A store whose flat state holds a funded sender, system contracts that only STOP, and
/// `CONTRACT` with `code`, written as they are (the store does not look at code).
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
    put(sender(), U256::from(10u64).pow(U256::from(18u64)), &[]);
    for system in [
        HISTORY_STORAGE,
        WITHDRAWAL_REQUESTS,
        CONSOLIDATION_REQUESTS,
        BUILDER_DEPOSITS,
        BUILDER_EXITS,
    ] {
        put(system, U256::ZERO, &[0x00]);
    }
    put(CONTRACT, U256::ZERO, code);
    store.write(batch).unwrap();
    store
}

fn db(store: &Store) -> StoreDb {
    StoreDb::new(store.clone(), B256::repeat_byte(0x01), 0)
}

fn block() -> Block {
    let header = Header {
        parent_hash: B256::repeat_byte(0x01),
        beneficiary: Address::repeat_byte(0xc0),
        number: 1,
        gas_limit: 30_000_000,
        timestamp: 12,
        mix_hash: B256::repeat_byte(0x02),
        base_fee_per_gas: Some(7),
        blob_gas_used: Some(0),
        excess_blob_gas: Some(0),
        slot_number: Some(1),
        ..Default::default()
    };
    Block {
        header,
        body: BlockBody {
            transactions: vec![call_contract()],
            ommers: vec![],
            withdrawals: Some(Default::default()),
        },
    }
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
    let block = block();
    let err =
        execute_block_sequential(db(&store_with(&designator(5))), &block, &[sender()], &config())
            .expect_err("the call cannot load its code");
    assert!(matches!(err, ExecutionError::Database(_)), "{err:?}");
    assert!(err.to_string().contains("malformed"), "{err}");
    // The same block on well-formed code executes.
    let output =
        execute_block_sequential(db(&store_with(&designator(20))), &block, &[sender()], &config())
            .unwrap();
    assert_eq!(output.receipts.len(), 1);
}

#[test]
fn calling_malformed_code_on_a_parallel_worker_is_not_a_panic() {
    let block = block();
    // The BAL of the block on well-formed code: the read of CONTRACT is listed.
    let bal =
        execute_block_sequential(db(&store_with(&designator(20))), &block, &[sender()], &config())
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
