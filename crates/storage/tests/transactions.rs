//! A transaction and its receipt read by hash from a committed block agree with the
//! block and receipts decoded whole, for entries with the transaction's index and for
//! entries written before the index was kept.

use alloy_consensus::{
    Eip658Value, Receipt as Fields, ReceiptWithBloom, SignableTransaction, TxEip1559, TxLegacy,
};
use alloy_primitives::{Address, Bytes, Log, LogData, Signature, TxKind, B256, U256};
use ethrex_common::{Block, BlockBody, Header, Receipt, Transaction};
use ethrex_storage::{BlockCommit, Store, Table, WriteBatch};

fn transaction(i: u64) -> Transaction {
    let signature = Signature::new(U256::from(i + 1), U256::from(i + 2), i.is_multiple_of(2));
    if i.is_multiple_of(3) {
        let tx = TxLegacy {
            nonce: i,
            gas_price: 7,
            gas_limit: 21_000,
            to: TxKind::Call(Address::repeat_byte(i as u8)),
            ..Default::default()
        };
        Transaction::Legacy(tx.into_signed(signature))
    } else {
        let tx = TxEip1559 {
            chain_id: 1,
            nonce: i,
            max_fee_per_gas: 9,
            gas_limit: 50_000,
            to: TxKind::Create,
            input: Bytes::from(vec![i as u8; i as usize]),
            ..Default::default()
        };
        Transaction::Eip1559(tx.into_signed(signature))
    }
}

fn receipt(i: u64, cumulative: u64) -> Receipt {
    let logs = (0..i % 4)
        .map(|j| Log {
            address: Address::repeat_byte(j as u8),
            data: LogData::new_unchecked(
                vec![B256::repeat_byte(i as u8)],
                Bytes::from(vec![1; j as usize]),
            ),
        })
        .collect();
    let inner = ReceiptWithBloom::from(Fields {
        status: Eip658Value::Eip658(!i.is_multiple_of(5)),
        cumulative_gas_used: cumulative,
        logs,
    });
    if i.is_multiple_of(3) {
        Receipt::Legacy(inner)
    } else {
        Receipt::Eip1559(inner)
    }
}

/// A block of `count` transactions committed on `store`; its transactions and receipts.
fn committed(store: &Store, count: u64) -> (B256, Vec<Transaction>, Vec<Receipt>) {
    let transactions: Vec<Transaction> = (0..count).map(transaction).collect();
    let receipts: Vec<Receipt> = (0..count).map(|i| receipt(i, 21_000 * (i + 1) + i * i)).collect();
    let block = Block {
        header: Header { number: 1, base_fee_per_gas: Some(3), ..Default::default() },
        body: BlockBody { transactions: transactions.clone(), ommers: vec![], withdrawals: None },
    };
    let hash = block.header.hash_slow();
    let prepared = Store::prepare_block(BlockCommit {
        hash,
        block: &block,
        bal: None,
        receipts: &receipts,
        state: Default::default(),
        change_set: Default::default(),
        total_difficulty: Default::default(),
    });
    store.commit_prepared(prepared).unwrap();
    (hash, transactions, receipts)
}

fn assert_reads_as_decoded(store: &Store, hash: B256, txs: &[Transaction], receipts: &[Receipt]) {
    for (i, tx) in txs.iter().enumerate() {
        let got = store.transaction_receipt(tx.tx_hash()).unwrap().expect("found");
        assert_eq!(got.block_hash, hash);
        assert_eq!(got.header.number, 1);
        assert_eq!(got.index, i);
        assert_eq!(&got.transaction, tx);
        assert_eq!(got.receipt, receipts[i]);
        let before = &receipts[..i];
        assert_eq!(got.gas_before, before.last().map_or(0, |r| r.cumulative_gas_used()));
        assert_eq!(got.logs_before, before.iter().map(|r| r.logs().len()).sum::<usize>());
        let location = store.transaction_location(tx.tx_hash()).unwrap().expect("found");
        assert_eq!((location.block_hash, location.index), (hash, i));
    }
}

#[test]
fn a_receipt_read_by_hash_is_the_one_the_whole_block_decodes_to() {
    let store = Store::in_memory();
    let (hash, txs, receipts) = committed(&store, 40);
    assert_reads_as_decoded(&store, hash, &txs, &receipts);
    assert!(store.transaction_receipt(&B256::repeat_byte(0xee)).unwrap().is_none());
}

#[test]
fn an_entry_written_before_the_index_was_kept_is_found_by_scanning_its_block() {
    let store = Store::in_memory();
    let (hash, txs, receipts) = committed(&store, 12);
    // The 8-byte form: the block number alone.
    let mut batch = WriteBatch::new();
    for tx in &txs {
        batch.put(Table::TxNumbers, tx.tx_hash().to_vec(), 1u64.to_be_bytes().to_vec());
    }
    store.write(batch).unwrap();
    assert_eq!(store.transaction_position(txs[5].tx_hash()).unwrap().unwrap().index, None);
    assert_reads_as_decoded(&store, hash, &txs, &receipts);
}

#[test]
fn an_index_that_names_another_transaction_is_not_trusted() {
    let store = Store::in_memory();
    let (hash, txs, receipts) = committed(&store, 6);
    // Entries pointing at the wrong index (as a block at that number from another
    // branch would leave them).
    let mut batch = WriteBatch::new();
    for (i, tx) in txs.iter().enumerate() {
        let mut value = 1u64.to_be_bytes().to_vec();
        value.extend_from_slice(&(((i + 1) % txs.len()) as u32).to_be_bytes());
        batch.put(Table::TxNumbers, tx.tx_hash().to_vec(), value);
    }
    store.write(batch).unwrap();
    assert_reads_as_decoded(&store, hash, &txs, &receipts);
}
