//! Readers of one canonical transaction by its hash: where the chain holds it
//! ([`Store::transaction_location`]) and its receipt with what the receipt's RPC form
//! needs from the receipts before it ([`Store::transaction_receipt`]).
//!
//! The transaction index (`tx_numbers`) names the block and the index in it, so a receipt
//! is read without decoding its block: the body's and the receipts' RLP lists are walked
//! item by item (an item's header gives its length), and only the transaction, its
//! receipt and the previous receipt's cumulative gas are decoded; the earlier receipts'
//! logs are counted, not decoded (`crate::rlp_walk`).

use super::Store;
use crate::backend::Table;
use crate::codec::TxPosition;
use crate::rlp_walk::{list_payload, Items};
use crate::tables::{corrupt, Bodies, Receipts, TxNumbers};
use crate::StoreError;
use alloy_primitives::B256;
use alloy_rlp::Decodable;
use ethrex_common::{BlockBody, Header, Receipt, Transaction};

/// A canonical transaction's place in the chain ([`Store::transaction_location`]).
#[derive(Debug, Clone)]
pub struct TxLocation {
    /// The hash of the block that holds it.
    pub block_hash: B256,
    /// That block's number.
    pub number: u64,
    /// Its index among the block's transactions.
    pub index: usize,
    /// The block's body (the transaction is `body.transactions[index]`).
    pub body: BlockBody,
}

/// A canonical transaction with its receipt ([`Store::transaction_receipt`]).
#[derive(Debug, Clone)]
pub struct StoredReceipt {
    /// The hash of the block that holds it.
    pub block_hash: B256,
    /// That block's header.
    pub header: Header,
    /// Its index among the block's transactions.
    pub index: usize,
    /// The transaction.
    pub transaction: Transaction,
    /// Its receipt.
    pub receipt: Receipt,
    /// The block's cumulative gas used before it (the previous receipt's).
    pub gas_before: u64,
    /// How many logs the block's earlier transactions emitted (its first log's index in
    /// the block).
    pub logs_before: usize,
}

impl Store {
    /// Where transaction `tx_hash` was put when its block was committed (the block may
    /// since have left the canonical chain: a reader checks).
    pub fn transaction_position(&self, tx_hash: &B256) -> Result<Option<TxPosition>, StoreError> {
        self.read::<TxNumbers>(tx_hash)
    }

    /// Where the canonical chain holds transaction `tx_hash`: its block's hash and number,
    /// its index there, and the block's body. `None` when no canonical block holds it
    /// (never included, or included in a block a reorg took away).
    pub fn transaction_location(&self, tx_hash: &B256) -> Result<Option<TxLocation>, StoreError> {
        let Some(at) = self.transaction_position(tx_hash)? else { return Ok(None) };
        let Some(block_hash) = self.canonical_hash(at.number)? else { return Ok(None) };
        let Some(body) = self.body(&block_hash)? else { return Ok(None) };
        let found = find(at, body.transactions.len(), |i| {
            Ok((body.transactions[i].tx_hash() == tx_hash).then_some(()))
        })?;
        Ok(found.map(|(index, ())| TxLocation { block_hash, number: at.number, index, body }))
    }

    /// Canonical transaction `tx_hash` with its receipt, decoding only those two and
    /// the previous receipt's gas from the stored block. `None` when no canonical block
    /// holds it.
    pub fn transaction_receipt(&self, tx_hash: &B256) -> Result<Option<StoredReceipt>, StoreError> {
        let Some(at) = self.transaction_position(tx_hash)? else { return Ok(None) };
        let Some(block_hash) = self.canonical_hash(at.number)? else { return Ok(None) };
        let Some(body) = self.get(Table::Bodies, block_hash.as_slice())? else { return Ok(None) };
        let txs = list_items(&body, true).map_err(corrupt::<Bodies>)?;
        let found = find(at, txs.len(), |i| {
            let mut item = txs[i];
            let tx = Transaction::decode(&mut item).map_err(corrupt::<Bodies>)?;
            Ok((tx.tx_hash() == tx_hash).then_some(tx))
        })?;
        let Some((index, transaction)) = found else { return Ok(None) };
        let Some(receipts) = self.get(Table::Receipts, block_hash.as_slice())? else {
            return Ok(None);
        };
        let items = crate::receipts::items(&receipts).map_err(corrupt::<Receipts>)?;
        if items.len() != txs.len() {
            return Err(corrupt::<Receipts>(format!(
                "{} receipts for {} transactions in block {block_hash}",
                items.len(),
                txs.len()
            )));
        }
        let receipt = crate::receipts::decode_item(items[index]).map_err(corrupt::<Receipts>)?;
        let gas_before = match index.checked_sub(1) {
            Some(previous) => {
                crate::receipts::cumulative_gas(items[previous]).map_err(corrupt::<Receipts>)?
            }
            None => 0,
        };
        let mut logs_before = 0;
        for item in &items[..index] {
            logs_before += crate::receipts::log_count(item).map_err(corrupt::<Receipts>)?;
        }
        let Some(header) = self.header(&block_hash)? else { return Ok(None) };
        Ok(Some(StoredReceipt {
            block_hash,
            header,
            index,
            transaction,
            receipt,
            gas_before,
            logs_before,
        }))
    }
}

/// The transaction at the index `at` names, if the block holds it there (`get(i)`: the
/// transaction at `i` if it is the one looked for); otherwise the block's transactions
/// are searched: an entry without an index, or a block at that number from another
/// branch, which holds the transaction elsewhere or not at all.
fn find<T>(
    at: TxPosition,
    count: usize,
    mut get: impl FnMut(usize) -> Result<Option<T>, StoreError>,
) -> Result<Option<(usize, T)>, StoreError> {
    if let Some(i) = at.index.map(|i| i as usize).filter(|&i| i < count) {
        if let Some(found) = get(i)? {
            return Ok(Some((i, found)));
        }
    }
    for i in 0..count {
        if let Some(found) = get(i)? {
            return Ok(Some((i, found)));
        }
    }
    Ok(None)
}

/// The encoded items of the RLP list `bytes` (each with its own header). `in_body`: the
/// list is a block body's, whose first item is the list of transactions wanted.
fn list_items(bytes: &[u8], in_body: bool) -> Result<Vec<&[u8]>, alloy_rlp::Error> {
    let mut list = list_payload(bytes)?;
    if in_body {
        list = list_payload(list)?;
    }
    Items(list).collect()
}
