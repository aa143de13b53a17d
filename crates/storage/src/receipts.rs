//! A block's receipts as the `receipts` table stores them: an RLP list with one item per
//! transaction, `[tx-type, post-state-or-status, cumulative-gas, logs]` for every
//! transaction type, legacy included: eth/69's receipt (EIP-7642), without the bloom.
//! A receipt's bloom is a function of its logs: 256 bytes per transaction, about half
//! of what a stress-chain block wrote to the table. It is computed again when a receipt
//! is read. geth and reth store receipts without it too.
//!
//! Stores written before this layout hold each receipt in its EIP-2718 form, with the
//! bloom: a legacy receipt as the list `[status, cumulative-gas, bloom, logs]`, a typed
//! one as a string (the type byte, then that list). Both still read: an item that is a
//! string is a typed EIP-2718 receipt, and a list whose third field is a 256-byte string
//! (the bloom; here the third field is the cumulative gas, at most 8 bytes) is a legacy
//! one.

use crate::rlp_walk::{list_payload, split_item, Items};
use alloy_consensus::{Eip658Value, Receipt as Fields, ReceiptEnvelope, ReceiptWithBloom, TxType};
use alloy_primitives::Log;
use alloy_rlp::{BufMut, Decodable, Encodable, Header};
use ethrex_common::Receipt;

fn inner(receipt: &Receipt) -> &Fields<Log> {
    match receipt {
        ReceiptEnvelope::Legacy(r)
        | ReceiptEnvelope::Eip2930(r)
        | ReceiptEnvelope::Eip1559(r)
        | ReceiptEnvelope::Eip4844(r)
        | ReceiptEnvelope::Eip7702(r) => &r.receipt,
    }
}

fn payload_length(receipt: &Receipt) -> usize {
    let r = inner(receipt);
    (receipt.tx_type() as u8).length()
        + r.status.length()
        + r.cumulative_gas_used.length()
        + r.logs.length()
}

/// The length of one receipt in this layout (eth/69's).
pub fn receipt_length(receipt: &Receipt) -> usize {
    let payload = payload_length(receipt);
    Header { list: true, payload_length: payload }.length() + payload
}

/// Writes one receipt in this layout (eth/69's): `[tx-type, post-state-or-status,
/// cumulative-gas, logs]`.
pub fn encode_receipt(receipt: &Receipt, out: &mut dyn BufMut) {
    let r = inner(receipt);
    Header { list: true, payload_length: payload_length(receipt) }.encode(out);
    (receipt.tx_type() as u8).encode(out);
    r.status.encode(out);
    r.cumulative_gas_used.encode(out);
    r.logs.encode(out);
}

/// The stored bytes of a block's receipts.
pub fn encode(receipts: &[Receipt]) -> Vec<u8> {
    let payload: usize = receipts.iter().map(receipt_length).sum();
    let header = Header { list: true, payload_length: payload };
    let mut out = Vec::with_capacity(header.length() + payload);
    header.encode(&mut out);
    for r in receipts {
        encode_receipt(r, &mut out);
    }
    out
}

/// A block's receipts from their stored bytes (either layout), blooms computed.
pub fn decode(bytes: &[u8]) -> Result<Vec<Receipt>, alloy_rlp::Error> {
    let (list, rest) = split_item(bytes)?;
    if !rest.is_empty() {
        return Err(alloy_rlp::Error::Custom("trailing bytes after the receipts"));
    }
    Items(list_payload(list)?).map(|item| decode_item(item?)).collect()
}

/// One receipt from its item of the stored list (header included), either layout.
pub fn decode_item(item: &[u8]) -> Result<Receipt, alloy_rlp::Error> {
    let (item, rest) = split_item(item)?;
    if !rest.is_empty() {
        return Err(alloy_rlp::Error::Custom("trailing bytes after a receipt"));
    }
    match fields(item)? {
        (Layout::Eip2718, _) => {
            let mut buf = item;
            let receipt = Receipt::decode(&mut buf)?;
            if !buf.is_empty() {
                return Err(alloy_rlp::Error::Custom("trailing bytes after a receipt"));
            }
            Ok(receipt)
        }
        (Layout::Stored, mut f) => {
            let ty = u8::decode(&mut f)?;
            let tx_type = TxType::try_from(ty)
                .map_err(|_| alloy_rlp::Error::Custom("unknown receipt type"))?;
            let status = Eip658Value::decode(&mut f)?;
            let cumulative_gas_used = u64::decode(&mut f)?;
            let logs = Vec::<Log>::decode(&mut f)?;
            if !f.is_empty() {
                return Err(alloy_rlp::Error::Custom("a stored receipt has more than four fields"));
            }
            let receipt = Fields { status, cumulative_gas_used, logs };
            let logs_bloom = receipt.bloom_slow();
            Ok(ReceiptEnvelope::from_typed(tx_type, ReceiptWithBloom { receipt, logs_bloom }))
        }
    }
}

/// A stored receipt's cumulative gas used, without decoding its logs.
pub fn cumulative_gas(item: &[u8]) -> Result<u64, alloy_rlp::Error> {
    let (gas, _) = split_fields(item)?;
    let mut gas = gas;
    u64::decode(&mut gas)
}

/// How many logs a stored receipt holds, without decoding them.
pub fn log_count(item: &[u8]) -> Result<usize, alloy_rlp::Error> {
    let (_, logs) = split_fields(item)?;
    Items(list_payload(logs)?).try_fold(0, |count, log| log.map(|_| count + 1))
}

/// The items of a block's stored receipts list (each with its header), in order.
pub fn items(bytes: &[u8]) -> Result<Vec<&[u8]>, alloy_rlp::Error> {
    Items(list_payload(bytes)?).collect()
}

enum Layout {
    /// `[tx-type, status, cumulative-gas, logs]` (this module's).
    Stored,
    /// EIP-2718 with the bloom (stores written before it).
    Eip2718,
}

/// A stored receipt's layout and the payload of its fields' list: `[tx-type, status,
/// gas, logs]` (`Stored`) or `[status, gas, bloom, logs]` (`Eip2718`, inside the string
/// of a typed receipt).
fn fields(item: &[u8]) -> Result<(Layout, &[u8]), alloy_rlp::Error> {
    let mut buf = item;
    let header = Header::decode(&mut buf)?;
    let payload = buf.get(..header.payload_length).ok_or(alloy_rlp::Error::InputTooShort)?;
    if !header.list {
        // A typed EIP-2718 receipt: the type byte, then the fields' list.
        let (_, list) = payload.split_first().ok_or(alloy_rlp::Error::InputTooShort)?;
        return Ok((Layout::Eip2718, list_payload(list)?));
    }
    let (_, rest) = split_item(payload)?;
    let (_, rest) = split_item(rest)?;
    // The third field: the cumulative gas (at most 8 bytes) here, the 256-byte bloom in
    // an EIP-2718 legacy receipt.
    let mut third = rest;
    let third = Header::decode(&mut third)?;
    let layout =
        if !third.list && third.payload_length == 256 { Layout::Eip2718 } else { Layout::Stored };
    Ok((layout, payload))
}

/// A stored receipt's cumulative gas and logs fields (each with its header), in either
/// layout.
fn split_fields(item: &[u8]) -> Result<(&[u8], &[u8]), alloy_rlp::Error> {
    let (layout, mut payload) = fields(item)?;
    if let Layout::Stored = layout {
        payload = split_item(payload)?.1;
    }
    let (_status, rest) = split_item(payload)?;
    let (gas, rest) = split_item(rest)?;
    let logs = match layout {
        Layout::Stored => split_item(rest)?.0,
        Layout::Eip2718 => split_item(split_item(rest)?.1)?.0,
    };
    Ok((gas, logs))
}

#[cfg(test)]
mod tests;
