//! The consensus checks of `ethrex_blockchain::validation`, one rule at a time: each test
//! takes a valid header, body or BAL, shows it accepted, then breaks one thing and expects
//! the rejection the EF tests name (`InvalidBlock::ef_exception`).

use alloy_consensus::crypto::secp256k1::sign_message;
use alloy_consensus::proofs::{calculate_transaction_root, calculate_withdrawals_root};
use alloy_consensus::{SignableTransaction, TxEip1559, TxEip4844, EMPTY_OMMER_ROOT_HASH};
use alloy_eips::eip1559::BaseFeeParams;
use alloy_eips::eip4844::DATA_GAS_PER_BLOB;
use alloy_eips::eip7928::{BalanceChange, BlockAccessIndex, SlotChanges, StorageChange, ITEM_COST};
use alloy_primitives::{Address, Bytes, TxKind, B256, B64, U256};
use ethrex_blockchain::error::AccountOrderViolation;
use ethrex_blockchain::genesis::genesis_header_at;
use ethrex_blockchain::validation::{
    account_order_violation, validate_bal_form, validate_bal_hash, validate_body,
    validate_header_against_parent, validate_header_fields,
};
use ethrex_blockchain::InvalidBlock;
use ethrex_common::{
    compute_block_access_list_hash, AccountChanges, Block, BlockAccessList, BlockBody, ChainConfig,
    Fork, Header, Transaction, Withdrawal, EMPTY_ROOT_HASH,
};

const CHAIN_ID: u64 = 1;
const GAS_LIMIT: u64 = 30_000_000;

type Verdict = Result<(), &'static str>;

/// The rejection as the EF tests name it; kept to one place so that the error type can
/// change shape without the tests following.
fn verdict(result: Result<(), InvalidBlock>) -> Verdict {
    result.map_err(|e| e.ef_exception())
}

fn config() -> ChainConfig {
    ChainConfig::all_forks_at_genesis(CHAIN_ID, Fork::Amsterdam)
}

/// An Amsterdam parent whose gas use is above target (so the base fee rises) and whose
/// blob gas is non-zero (so the excess blob gas moves).
fn parent_with_gas_limit(gas_limit: u64) -> Header {
    let mut parent = genesis_header_at(&config(), gas_limit, 1_000_000_000, EMPTY_ROOT_HASH);
    parent.number = 100;
    parent.timestamp = 1_200;
    parent.gas_used = gas_limit * 2 / 3;
    parent.slot_number = Some(100);
    parent.blob_gas_used = Some(6 * DATA_GAS_PER_BLOB);
    parent.excess_blob_gas = Some(40 * DATA_GAS_PER_BLOB);
    parent
}

fn parent() -> Header {
    parent_with_gas_limit(GAS_LIMIT)
}

/// The valid child of `parent`: every derived field as the rules derive it.
fn child_of(parent: &Header) -> Header {
    let timestamp = parent.timestamp + 12;
    Header {
        parent_hash: parent.hash_slow(),
        number: parent.number + 1,
        timestamp,
        gas_used: 0,
        base_fee_per_gas: parent.next_block_base_fee(BaseFeeParams::ethereum()),
        blob_gas_used: Some(0),
        excess_blob_gas: config().next_excess_blob_gas(parent, timestamp),
        slot_number: parent.slot_number.map(|s| s + 1),
        ..parent.clone()
    }
}

/// The valid child of `parent()` with `edit` applied, checked against its parent.
fn header_with(edit: impl FnOnce(&mut Header)) -> Verdict {
    let parent = parent();
    let mut header = child_of(&parent);
    edit(&mut header);
    verdict(validate_header_against_parent(&config(), &header, &parent, U256::ZERO))
}

#[test]
fn the_derived_child_is_valid() {
    assert_eq!(header_with(|_| {}), Ok(()));
    // The parent is chosen so that the derived fields are not trivially the parent's.
    let parent = parent();
    let child = child_of(&parent);
    assert!(child.base_fee_per_gas > parent.base_fee_per_gas);
    assert_ne!(child.excess_blob_gas, Some(0));
}

#[test]
fn block_number_must_follow_the_parent() {
    const E: &str = "BlockException.INVALID_BLOCK_NUMBER";
    assert_eq!(header_with(|h| h.number += 1), Err(E));
    assert_eq!(header_with(|h| h.number -= 1), Err(E));
    assert_eq!(header_with(|h| h.number = 0), Err(E));
}

#[test]
fn timestamp_must_be_after_the_parent() {
    const E: &str = "BlockException.INVALID_BLOCK_TIMESTAMP_OLDER_THAN_PARENT";
    let parent_time = parent().timestamp;
    assert_eq!(header_with(|h| h.timestamp = parent_time), Err(E));
    assert_eq!(header_with(|h| h.timestamp = parent_time - 1), Err(E));
    assert_eq!(header_with(|h| h.timestamp = parent_time + 1), Ok(()));
}

#[test]
fn gas_limit_moves_less_than_a_1024th_of_the_parent() {
    const E: &str = "BlockException.INVALID_GASLIMIT";
    let bound = GAS_LIMIT / 1024;
    assert_eq!(header_with(|h| h.gas_limit = GAS_LIMIT + bound - 1), Ok(()));
    assert_eq!(header_with(|h| h.gas_limit = GAS_LIMIT - (bound - 1)), Ok(()));
    assert_eq!(header_with(|h| h.gas_limit = GAS_LIMIT + bound), Err(E));
    assert_eq!(header_with(|h| h.gas_limit = GAS_LIMIT - bound), Err(E));
    assert_eq!(header_with(|h| h.gas_limit = 2 * GAS_LIMIT), Err(E));
}

#[test]
fn gas_limit_has_a_floor_of_5000() {
    // With a parent at 5,000 the per-block bound (4) would allow 4,999; the floor does not.
    let parent = parent_with_gas_limit(5_000);
    let check = |gas_limit: u64| {
        let mut header = child_of(&parent);
        header.gas_limit = gas_limit;
        verdict(validate_header_against_parent(&config(), &header, &parent, U256::ZERO))
    };
    assert_eq!(check(5_002), Ok(()));
    assert_eq!(check(5_000), Ok(()));
    assert_eq!(check(4_999), Err("BlockException.INVALID_GASLIMIT"));
}

#[test]
fn gas_used_is_at_most_the_gas_limit() {
    assert_eq!(header_with(|h| h.gas_used = h.gas_limit), Ok(()));
    assert_eq!(
        header_with(|h| h.gas_used = h.gas_limit + 1),
        Err("BlockException.GAS_USED_OVERFLOW")
    );
}

#[test]
fn base_fee_follows_eip1559() {
    const E: &str = "BlockException.INVALID_BASEFEE_PER_GAS";
    let parent_fee = parent().base_fee_per_gas;
    assert_eq!(header_with(|h| h.base_fee_per_gas = h.base_fee_per_gas.map(|f| f + 1)), Err(E));
    assert_eq!(header_with(|h| h.base_fee_per_gas = h.base_fee_per_gas.map(|f| f - 1)), Err(E));
    // Unchanged from the parent is wrong too: the parent used more than its target.
    assert_eq!(header_with(|h| h.base_fee_per_gas = parent_fee), Err(E));
    // No base fee at all is a malformed header.
    assert_eq!(
        header_with(|h| h.base_fee_per_gas = None),
        Err("BlockException.INCORRECT_BLOCK_FORMAT")
    );
}

#[test]
fn excess_blob_gas_follows_the_parent() {
    const E: &str = "BlockException.INCORRECT_EXCESS_BLOB_GAS";
    assert_eq!(header_with(|h| h.excess_blob_gas = h.excess_blob_gas.map(|x| x + 1)), Err(E));
    assert_eq!(header_with(|h| h.excess_blob_gas = Some(0)), Err(E));
    assert_eq!(
        header_with(|h| h.excess_blob_gas = None),
        Err("BlockException.INCORRECT_BLOCK_FORMAT")
    );
}

#[test]
fn extra_data_is_at_most_32_bytes() {
    assert_eq!(header_with(|h| h.extra_data = Bytes::from(vec![7; 32])), Ok(()));
    assert_eq!(
        header_with(|h| h.extra_data = Bytes::from(vec![7; 33])),
        Err("BlockException.INCORRECT_BLOCK_FORMAT")
    );
}

#[test]
fn proof_of_work_fields_are_zero_after_the_merge() {
    const E: &str = "BlockException.INCORRECT_BLOCK_FORMAT";
    assert_eq!(header_with(|h| h.difficulty = U256::from(1u64)), Err(E));
    assert_eq!(header_with(|h| h.nonce = B64::from(1u64)), Err(E));
    assert_eq!(header_with(|h| h.ommers_hash = EMPTY_ROOT_HASH), Err(E));
    assert_eq!(header_with(|h| h.ommers_hash = EMPTY_OMMER_ROOT_HASH), Ok(()));
}

#[test]
fn fork_fields_are_present_exactly_from_their_fork() {
    const E: &str = "BlockException.INCORRECT_BLOCK_FORMAT";
    let amsterdam = child_of(&parent());
    assert_eq!(verdict(validate_header_fields(&config(), &amsterdam)), Ok(()));
    for edit in [
        |h: &mut Header| h.slot_number = None,
        |h: &mut Header| h.block_access_list_hash = None,
        |h: &mut Header| h.requests_hash = None,
        |h: &mut Header| h.parent_beacon_block_root = None,
        |h: &mut Header| h.withdrawals_root = None,
    ] {
        let mut header = amsterdam.clone();
        edit(&mut header);
        assert_eq!(verdict(validate_header_fields(&config(), &header)), Err(E), "{header:?}");
    }
    // Under Prague the Amsterdam fields must be absent.
    let prague = ChainConfig::all_forks_at_genesis(CHAIN_ID, Fork::Prague);
    assert_eq!(verdict(validate_header_fields(&prague, &amsterdam)), Err(E));
    let mut header = amsterdam.clone();
    header.slot_number = None;
    header.block_access_list_hash = None;
    assert_eq!(verdict(validate_header_fields(&prague, &header)), Ok(()));
}

// ------------------------------------------------------------------------------------
// The body against its header.
// ------------------------------------------------------------------------------------

fn transfer(nonce: u64) -> Transaction {
    let tx = TxEip1559 {
        chain_id: CHAIN_ID,
        nonce,
        gas_limit: 21_000,
        max_fee_per_gas: 10_000_000_000,
        max_priority_fee_per_gas: 1,
        to: TxKind::Call(Address::repeat_byte(0x77)),
        value: U256::from(1u64),
        ..Default::default()
    };
    let signature = sign_message(B256::repeat_byte(0x01), tx.signature_hash()).unwrap();
    Transaction::Eip1559(tx.into_signed(signature))
}

fn blob_tx(blobs: usize) -> Transaction {
    let tx = TxEip4844 {
        chain_id: CHAIN_ID,
        gas_limit: 21_000,
        max_fee_per_gas: 10_000_000_000,
        to: Address::repeat_byte(0x77),
        blob_versioned_hashes: (0..blobs)
            .map(|i| {
                let mut h = B256::repeat_byte(i as u8);
                h.0[0] = 0x01;
                h
            })
            .collect(),
        max_fee_per_blob_gas: 1_000_000_000,
        ..Default::default()
    };
    let signature = sign_message(B256::repeat_byte(0x02), tx.signature_hash()).unwrap();
    Transaction::from(tx.into_signed(signature))
}

fn withdrawal() -> Withdrawal {
    Withdrawal { index: 0, validator_index: 1, address: Address::repeat_byte(0x99), amount: 5 }
}

/// A block whose header commits to exactly `transactions` and `withdrawals`.
fn block_of(transactions: Vec<Transaction>, withdrawals: Vec<Withdrawal>) -> Block {
    let mut header = child_of(&parent());
    header.transactions_root = calculate_transaction_root(&transactions);
    header.withdrawals_root = Some(calculate_withdrawals_root(&withdrawals));
    header.blob_gas_used = Some(ethrex_common::blob_gas_used(&transactions));
    Block {
        header,
        body: BlockBody { transactions, ommers: vec![], withdrawals: Some(withdrawals.into()) },
    }
}

fn body_with(block: Block, edit: impl FnOnce(&mut Block)) -> Verdict {
    let mut block = block;
    edit(&mut block);
    verdict(validate_body(&config(), &block))
}

#[test]
fn transactions_root_commits_to_the_transactions() {
    const E: &str = "BlockException.INVALID_TRANSACTIONS_ROOT";
    let block = block_of(vec![transfer(0), transfer(1)], vec![]);
    assert_eq!(body_with(block.clone(), |_| {}), Ok(()));
    assert_eq!(body_with(block.clone(), |b| b.body.transactions.pop().map(drop).unwrap()), Err(E));
    assert_eq!(body_with(block.clone(), |b| b.body.transactions.swap(0, 1)), Err(E));
    assert_eq!(body_with(block, |b| b.header.transactions_root = EMPTY_ROOT_HASH), Err(E));
}

#[test]
fn withdrawals_root_commits_to_the_withdrawals() {
    let block = block_of(vec![], vec![withdrawal()]);
    assert_eq!(body_with(block.clone(), |_| {}), Ok(()));
    assert_eq!(
        body_with(block.clone(), |b| b.body.withdrawals = Some(Default::default())),
        Err("BlockException.INVALID_WITHDRAWALS_ROOT")
    );
    assert_eq!(
        body_with(block, |b| b.body.withdrawals = None),
        Err("BlockException.INCORRECT_BLOCK_FORMAT")
    );
}

#[test]
fn ommers_are_rejected() {
    let block = block_of(vec![], vec![]);
    assert_eq!(body_with(block.clone(), |_| {}), Ok(()));
    let ommer = block.header.clone();
    assert_eq!(
        body_with(block, |b| b.body.ommers.push(ommer)),
        Err("BlockException.INCORRECT_BLOCK_FORMAT")
    );
}

#[test]
fn blob_gas_used_matches_the_blobs() {
    const E: &str = "BlockException.INCORRECT_BLOB_GAS_USED";
    let block = block_of(vec![blob_tx(2), transfer(0)], vec![]);
    assert_eq!(block.header.blob_gas_used, Some(2 * DATA_GAS_PER_BLOB));
    assert_eq!(body_with(block.clone(), |_| {}), Ok(()));
    assert_eq!(
        body_with(block.clone(), |b| b.header.blob_gas_used = Some(DATA_GAS_PER_BLOB)),
        Err(E)
    );
    assert_eq!(body_with(block, |b| b.header.blob_gas_used = Some(0)), Err(E));
}

#[test]
fn blob_gas_is_capped_per_block() {
    let max = config().blob_params_at(parent().timestamp + 12).unwrap().max_blob_gas_per_block();
    let max_blobs = (max / DATA_GAS_PER_BLOB) as usize;
    assert!(max_blobs > 1);
    assert_eq!(body_with(block_of(vec![blob_tx(max_blobs)], vec![]), |_| {}), Ok(()));
    assert_eq!(
        body_with(block_of(vec![blob_tx(max_blobs), blob_tx(1)], vec![]), |_| {}),
        Err("BlockException.BLOB_GAS_USED_ABOVE_LIMIT")
    );
}

// ------------------------------------------------------------------------------------
// The block-level access list: hash, size cap, form.
// ------------------------------------------------------------------------------------

fn balance_change(index: u64, balance: u64) -> BalanceChange {
    BalanceChange { block_access_index: BlockAccessIndex(index), post_balance: U256::from(balance) }
}

/// Three accounts in canonical order: a balance change, a slot written and one read.
fn bal() -> BlockAccessList {
    let mut a = AccountChanges::new(Address::repeat_byte(0x11));
    a.balance_changes.push(balance_change(1, 100));
    let mut b = AccountChanges::new(Address::repeat_byte(0x22));
    b.storage_changes.push(SlotChanges {
        slot: U256::from(1u64),
        changes: vec![StorageChange {
            block_access_index: BlockAccessIndex(2),
            new_value: U256::from(9u64),
        }],
    });
    b.storage_reads.push(U256::from(2u64));
    b.storage_reads.push(U256::from(3u64));
    let c = AccountChanges::new(Address::repeat_byte(0x33));
    vec![a, b, c]
}

#[test]
fn bal_hash_is_the_headers() {
    let bal = bal();
    let mut header = child_of(&parent());
    header.block_access_list_hash = Some(compute_block_access_list_hash(&bal));
    assert_eq!(verdict(validate_bal_hash(&header, &bal)), Ok(()));
    let mut other = bal.clone();
    other[0].balance_changes[0].post_balance = U256::from(101u64);
    assert_eq!(verdict(validate_bal_hash(&header, &other)), Err("BlockException.INVALID_BAL_HASH"));
    assert_eq!(
        verdict(validate_bal_hash(&header, &Vec::new())),
        Err("BlockException.INVALID_BAL_HASH")
    );
    header.block_access_list_hash = None;
    assert_eq!(
        verdict(validate_bal_hash(&header, &bal)),
        Err("BlockException.INCORRECT_BLOCK_FORMAT")
    );
}

#[test]
fn bal_size_is_capped_by_the_gas_limit() {
    // 3 accounts, 1 changed slot, 2 read slots: 6 items.
    let bal = bal();
    let items = 6 * ITEM_COST as u64;
    let mut header = child_of(&parent());
    header.gas_limit = items;
    assert_eq!(verdict(validate_bal_form(&header, &bal, 2)), Ok(()));
    header.gas_limit = items - 1;
    assert_eq!(
        verdict(validate_bal_form(&header, &bal, 2)),
        Err("BlockException.BLOCK_ACCESS_LIST_GAS_LIMIT_EXCEEDED")
    );
}

#[test]
fn bal_entries_are_canonical_and_within_the_block() {
    const E: &str = "BlockException.INVALID_BLOCK_ACCESS_LIST";
    let header = child_of(&parent());
    let form = |bal: &BlockAccessList, txs: usize| verdict(validate_bal_form(&header, bal, txs));
    assert_eq!(form(&bal(), 2), Ok(()));
    // With one transaction, index 2 is the post-block stage, still inside the block;
    // index 3 is past it.
    assert_eq!(form(&bal(), 1), Ok(()));
    let mut late = bal();
    late[0].balance_changes.push(balance_change(3, 50));
    assert_eq!(form(&late, 2), Ok(()));
    assert_eq!(form(&late, 1), Err(E));
    let mut unsorted = bal();
    unsorted[1].storage_reads.swap(0, 1);
    assert_eq!(form(&unsorted, 2), Err(E));
    let mut read_and_written = bal();
    read_and_written[1].storage_reads[0] = U256::from(1u64);
    assert_eq!(form(&read_and_written, 2), Err(E));
    let mut out_of_order = bal();
    out_of_order[0].balance_changes.insert(0, balance_change(2, 1));
    assert_eq!(form(&out_of_order, 2), Err(E));
}

#[test]
fn account_order_is_reported_and_judged_after_execution() {
    assert_eq!(account_order_violation(&bal()), None);
    let mut swapped = bal();
    swapped.swap(0, 2);
    let violation = account_order_violation(&swapped).expect("out of order");
    assert_eq!(
        violation,
        AccountOrderViolation::Descending {
            earlier: swapped[0].address,
            later: swapped[1].address
        }
    );
    let mut twice = bal();
    twice.insert(1, AccountChanges::new(Address::repeat_byte(0x11)));
    let violation = account_order_violation(&twice).expect("duplicate");
    assert_eq!(violation, AccountOrderViolation::Duplicate(Address::repeat_byte(0x11)));
    // The form check leaves the account order to the comparison with execution.
    let header = child_of(&parent());
    assert_eq!(verdict(validate_bal_form(&header, &swapped, 2)), Ok(()));
    assert_eq!(verdict(validate_bal_form(&header, &twice, 2)), Ok(()));
}
