use super::*;
use alloy_primitives::{Address, Bytes, LogData, B256};

fn receipt(ty: TxType, status: Eip658Value, gas: u64, logs: usize) -> Receipt {
    let logs = (0..logs)
        .map(|i| Log {
            address: Address::repeat_byte(i as u8 + 1),
            data: LogData::new_unchecked(
                (0..i % 5).map(|t| B256::repeat_byte(t as u8 + 7)).collect(),
                Bytes::from(vec![i as u8; i * 3]),
            ),
        })
        .collect();
    let fields = Fields { status, cumulative_gas_used: gas, logs };
    ReceiptEnvelope::from_typed(ty, ReceiptWithBloom::from(fields))
}

/// Every transaction type, both statuses, a pre-Byzantium state root, no logs and many.
fn block() -> Vec<Receipt> {
    vec![
        receipt(TxType::Legacy, Eip658Value::PostState(B256::repeat_byte(0x42)), 21_000, 0),
        receipt(TxType::Legacy, Eip658Value::Eip658(true), 42_000, 2),
        receipt(TxType::Eip2930, Eip658Value::Eip658(false), 90_000, 1),
        receipt(TxType::Eip1559, Eip658Value::Eip658(true), 1 << 33, 70),
        receipt(TxType::Eip4844, Eip658Value::Eip658(true), (1 << 33) + 5, 3),
        receipt(TxType::Eip7702, Eip658Value::Eip658(false), u64::MAX, 0),
    ]
}

/// The EIP-2718 list with blooms, as stores before this layout wrote it (alloy's encoder).
fn eip2718_bytes(receipts: &[Receipt]) -> Vec<u8> {
    let mut out = Vec::new();
    alloy_rlp::encode_list::<_, Receipt>(receipts, &mut out);
    out
}

#[test]
fn receipts_read_back_with_the_blooms_their_logs_give() {
    let receipts = block();
    let stored = encode(&receipts);
    assert_eq!(decode(&stored).unwrap(), receipts);
    assert!(decode(&encode(&[])).unwrap().is_empty());
    // The blooms are left out: 259 bytes a receipt with its header, give or take the
    // type field (one byte more for a legacy receipt, the string header less for a typed one).
    let saved = eip2718_bytes(&receipts).len() - stored.len();
    assert!(saved >= 255 * receipts.len() && saved <= 265 * receipts.len(), "{saved}");
}

#[test]
fn receipts_stored_with_their_blooms_before_this_layout_still_read() {
    let receipts = block();
    let old = eip2718_bytes(&receipts);
    assert_eq!(decode(&old).unwrap(), receipts);
    for (item, r) in items(&old).unwrap().iter().zip(&receipts) {
        assert_eq!(&decode_item(item).unwrap(), r);
        assert_eq!(cumulative_gas(item).unwrap(), r.cumulative_gas_used());
        assert_eq!(log_count(item).unwrap(), r.logs().len());
    }
}

#[test]
fn the_walk_reads_the_gas_and_counts_the_logs_decoding_would() {
    let receipts = block();
    let stored = encode(&receipts);
    let items = items(&stored).unwrap();
    assert_eq!(items.len(), receipts.len());
    for (item, r) in items.iter().zip(&receipts) {
        assert_eq!(cumulative_gas(item).unwrap(), r.cumulative_gas_used());
        assert_eq!(log_count(item).unwrap(), r.logs().len());
        assert_eq!(&decode_item(item).unwrap(), r);
    }
}

#[test]
fn truncated_or_padded_receipts_are_errors_not_panics() {
    for bytes in [encode(&block()), eip2718_bytes(&block())] {
        for cut in 0..bytes.len() {
            let short = &bytes[..cut];
            assert!(decode(short).is_err(), "cut at {cut}");
            if let Ok(items) = items(short) {
                for item in items {
                    let _ = cumulative_gas(item);
                    let _ = log_count(item);
                }
            }
        }
        let mut long = bytes.clone();
        long.push(0x80);
        assert!(decode(&long).is_err());
    }
    // An unknown type and a fifth field.
    let mut bad = Vec::new();
    Header { list: true, payload_length: 4 }.encode(&mut bad);
    bad.extend_from_slice(&[0x09, 0x01, 0x01, 0xc0]);
    assert!(decode_item(&bad).is_err());
    let mut five = Vec::new();
    Header { list: true, payload_length: 5 }.encode(&mut five);
    five.extend_from_slice(&[0x02, 0x01, 0x01, 0xc0, 0x80]);
    assert!(decode_item(&five).is_err());
}
