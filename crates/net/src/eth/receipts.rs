//! Receipts as eth/69+ sends them (EIP-7642): `[tx-type, post-state-or-status,
//! cumulative-gas, logs]` for every transaction type, legacy included, without the bloom
//! (the receiver recomputes it from the logs).

use super::wire::{decode, decode_list, finish, list_payload, Budget};
use super::EthError;
use alloy_consensus::{Eip658Value, Receipt, ReceiptEnvelope, ReceiptWithBloom, TxType};
use alloy_primitives::Log;
use alloy_rlp::{BufMut, Header};

/// The length of a receipt's eth/69 encoding: the layout the store keeps receipts in,
/// so the store's encoder serves both.
pub use ethrex_storage::receipts::receipt_length as receipt_69_length;

/// Writes a receipt in its eth/69 form `[tx-type, post-state-or-status, cumulative-gas,
/// logs]` (the store's layout; see `receipt_69_length`).
pub use ethrex_storage::receipts::encode_receipt as encode_receipt_69;

/// Reads one eth/69 receipt from the front of `buf` (advancing it) and recomputes its
/// bloom. Unknown transaction types are rejected; the status is a 32-byte post-state root
/// (pre-Byzantium), the empty string (failure) or `0x01` (success).
pub fn decode_receipt_69(buf: &mut &[u8]) -> Result<ReceiptEnvelope, EthError> {
    let mut fields = list_payload(buf)?;
    let ty: u8 = decode(&mut fields)?;
    let tx_type = TxType::try_from(ty).map_err(|_| EthError::Invalid("unknown receipt type"))?;
    let status: Eip658Value = decode(&mut fields)?;
    let cumulative_gas_used: u64 = decode(&mut fields)?;
    // Logs are bounded by the payload size (a log is at least 24 bytes on the wire).
    let logs: Vec<Log> = decode_list(&mut fields, usize::MAX, None, decode)?;
    finish(fields)?;
    let receipt = Receipt { status, cumulative_gas_used, logs };
    let logs_bloom = receipt.bloom_slow();
    Ok(ReceiptEnvelope::from_typed(tx_type, ReceiptWithBloom { receipt, logs_bloom }))
}

/// Writes a block's receipt list in eth/69 form.
pub(super) fn encode_receipt_list(receipts: &[ReceiptEnvelope], out: &mut dyn BufMut) {
    let payload: usize = receipts.iter().map(receipt_69_length).sum();
    Header { list: true, payload_length: payload }.encode(out);
    for r in receipts {
        encode_receipt_69(r, out);
    }
}

/// The length of a block's receipt list in eth/69 form.
pub(super) fn receipt_list_length(receipts: &[ReceiptEnvelope]) -> usize {
    let payload: usize = receipts.iter().map(receipt_69_length).sum();
    Header { list: true, payload_length: payload }.length() + payload
}

/// Reads a block's receipt list, charging each receipt to `budget`.
pub(super) fn decode_receipt_list(
    buf: &mut &[u8],
    budget: &mut Budget,
) -> Result<Vec<ReceiptEnvelope>, EthError> {
    decode_list(buf, usize::MAX, Some(budget), decode_receipt_69)
}

/// Encodes a list of receipts in eth/69 form into a fresh buffer (a test and fixture
/// helper).
#[cfg(test)]
pub(super) fn encode_receipts_69(receipts: &[ReceiptEnvelope]) -> Vec<u8> {
    let mut payload = Vec::new();
    for r in receipts {
        encode_receipt_69(r, &mut payload);
    }
    let mut out = Vec::new();
    super::wire::write_list(&payload, &mut out);
    out
}
