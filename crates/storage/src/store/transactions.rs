//! Readers of one canonical transaction by its hash: where the chain holds it
//! ([`Store::transaction_location`]) and its receipt with what the receipt's RPC form
//! needs from the receipts before it ([`Store::transaction_receipt`]).
//!
//! The transaction index (`tx_numbers`) names the block and the index in it, so a receipt
//! is read without decoding its block: the body's and the receipts' RLP lists are walked
//! item by item (an item's header gives its length), and only the transaction, its
//! receipt and the previous receipt's cumulative gas are decoded; the earlier receipts'
//! logs are counted, not decoded. alloy-rlp decodes whole values only, so the walk over
//! the lists is written here.

use super::Store;
use crate::backend::Table;
use crate::codec::TxPosition;
use crate::tables::{corrupt, Bodies, Receipts, TxNumbers};
use crate::StoreError;
use alloy_primitives::B256;
use alloy_rlp::{Decodable, Header as RlpHeader};
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
        let items = list_items(&receipts, false).map_err(corrupt::<Receipts>)?;
        if items.len() != txs.len() {
            return Err(corrupt::<Receipts>(format!(
                "{} receipts for {} transactions in block {block_hash}",
                items.len(),
                txs.len()
            )));
        }
        let mut item = items[index];
        let receipt = Receipt::decode(&mut item).map_err(corrupt::<Receipts>)?;
        let gas_before = match index.checked_sub(1) {
            Some(previous) => receipt_gas(items[previous]).map_err(corrupt::<Receipts>)?,
            None => 0,
        };
        let mut logs_before = 0;
        for item in &items[..index] {
            logs_before += receipt_log_count(item).map_err(corrupt::<Receipts>)?;
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

/// The items of an RLP list's payload, each with its header, in order.
struct Items<'a>(&'a [u8]);

impl<'a> Iterator for Items<'a> {
    type Item = Result<&'a [u8], alloy_rlp::Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.0.is_empty() {
            return None;
        }
        match split_item(self.0) {
            Ok((item, rest)) => {
                self.0 = rest;
                Some(Ok(item))
            }
            Err(e) => {
                self.0 = &[];
                Some(Err(e))
            }
        }
    }
}

/// The payload of the RLP list at the start of `bytes`.
fn list_payload(bytes: &[u8]) -> Result<&[u8], alloy_rlp::Error> {
    let mut buf = bytes;
    let header = RlpHeader::decode(&mut buf)?;
    if !header.list {
        return Err(alloy_rlp::Error::UnexpectedString);
    }
    buf.get(..header.payload_length).ok_or(alloy_rlp::Error::InputTooShort)
}

/// The first RLP item of `bytes` (header included) and what follows it.
fn split_item(bytes: &[u8]) -> Result<(&[u8], &[u8]), alloy_rlp::Error> {
    let mut buf = bytes;
    let header = RlpHeader::decode(&mut buf)?;
    let len = bytes.len() - buf.len() + header.payload_length;
    if len > bytes.len() {
        return Err(alloy_rlp::Error::InputTooShort);
    }
    Ok(bytes.split_at(len))
}

/// The fields of a stored receipt (a list for a legacy receipt; for a typed one a string
/// holding the type byte and the list): status, cumulative gas, bloom, logs.
fn receipt_fields(item: &[u8]) -> Result<&[u8], alloy_rlp::Error> {
    let mut buf = item;
    let header = RlpHeader::decode(&mut buf)?;
    if header.list {
        return buf.get(..header.payload_length).ok_or(alloy_rlp::Error::InputTooShort);
    }
    let typed = buf.get(..header.payload_length).ok_or(alloy_rlp::Error::InputTooShort)?;
    let (_, list) = typed.split_first().ok_or(alloy_rlp::Error::InputTooShort)?;
    list_payload(list)
}

/// A stored receipt's cumulative gas used.
fn receipt_gas(item: &[u8]) -> Result<u64, alloy_rlp::Error> {
    let (_status, rest) = split_item(receipt_fields(item)?)?;
    let mut gas = rest;
    u64::decode(&mut gas)
}

/// How many logs a stored receipt holds.
fn receipt_log_count(item: &[u8]) -> Result<usize, alloy_rlp::Error> {
    let (_status, rest) = split_item(receipt_fields(item)?)?;
    let (_gas, rest) = split_item(rest)?;
    let (_bloom, rest) = split_item(rest)?;
    Items(list_payload(rest)?).try_fold(0, |count, log| log.map(|_| count + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_consensus::{Eip658Value, Receipt as Fields, ReceiptWithBloom};
    use alloy_primitives::{Address, Bytes, Log, LogData};

    fn receipt(typed: bool, status: bool, gas: u64, logs: usize) -> Receipt {
        let logs = (0..logs)
            .map(|i| Log {
                address: Address::repeat_byte(i as u8),
                data: LogData::new_unchecked(vec![B256::repeat_byte(7)], Bytes::from(vec![1; i])),
            })
            .collect();
        let inner = ReceiptWithBloom::from(Fields {
            status: Eip658Value::Eip658(status),
            cumulative_gas_used: gas,
            logs,
        });
        if typed {
            Receipt::Eip1559(inner)
        } else {
            Receipt::Legacy(inner)
        }
    }

    #[test]
    fn the_walk_over_stored_receipts_reads_the_gas_and_counts_the_logs_decoding_would() {
        let receipts = vec![
            receipt(false, true, 21_000, 0),
            receipt(true, false, 60_000, 3),
            receipt(false, true, 1 << 40, 1),
            receipt(true, true, 1 << 41, 70),
        ];
        let mut bytes = Vec::new();
        alloy_rlp::encode_list::<_, Receipt>(&receipts, &mut bytes);
        let items = list_items(&bytes, false).unwrap();
        assert_eq!(items.len(), receipts.len());
        for (item, r) in items.iter().zip(&receipts) {
            assert_eq!(receipt_gas(item).unwrap(), r.cumulative_gas_used());
            assert_eq!(receipt_log_count(item).unwrap(), r.logs().len());
            let mut buf = *item;
            assert_eq!(&Receipt::decode(&mut buf).unwrap(), r);
        }
    }

    #[test]
    fn a_truncated_receipts_list_is_an_error_not_a_panic() {
        let receipts = vec![receipt(true, true, 5, 2), receipt(false, true, 9, 1)];
        let mut bytes = Vec::new();
        alloy_rlp::encode_list::<_, Receipt>(&receipts, &mut bytes);
        for cut in 0..bytes.len() {
            let short = &bytes[..cut];
            if let Ok(items) = list_items(short, false) {
                for item in items {
                    let _ = receipt_gas(item);
                    let _ = receipt_log_count(item);
                }
            }
        }
        assert!(list_items(&bytes[..bytes.len() - 1], false).is_err());
    }
}
