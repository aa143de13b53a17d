//! Execution requests (EIP-7685): deposits read from the deposit contract's logs
//! (EIP-6110), and the request list assembled with the system calls' outputs (EIP-7002,
//! EIP-7251, and from Amsterdam on EIP-8282's builder deposits and exits).

use crate::error::{DepositLayoutError, ExecutionError};
use alloy_eips::eip7685::Requests;
use alloy_primitives::{b256, Address, Bytes, Log, B256};

/// keccak256("DepositEvent(bytes,bytes,bytes,bytes,bytes)")
const DEPOSIT_EVENT_TOPIC: B256 =
    b256!("0x649bbc62d0e31342afea4e5cd82d4049e7e1ee912fc0889aa790803be39038c5");

/// EIP-6110 deposit requests.
pub(crate) const DEPOSIT_REQUEST_TYPE: u8 = 0x00;
/// EIP-7002 withdrawal requests.
pub(crate) const WITHDRAWAL_REQUEST_TYPE: u8 = 0x01;
/// EIP-7251 consolidation requests.
pub(crate) const CONSOLIDATION_REQUEST_TYPE: u8 = 0x02;

/// Reads one `bytes` field of the ABI-encoded DepositEvent, checking the offset and
/// length the deposit contract always produces (EIP-6110 requires the exact layout).
fn deposit_field(
    data: &[u8],
    field: usize,
    expected_offset: usize,
    len: usize,
) -> Result<&[u8], DepositLayoutError> {
    let word = |at: usize| -> Result<usize, DepositLayoutError> {
        let w = data.get(at..at + 32).ok_or(DepositLayoutError::TruncatedWord(at))?;
        if w[..24].iter().any(|b| *b != 0) {
            return Err(DepositLayoutError::OversizedWord(at));
        }
        let mut low = [0u8; 8];
        low.copy_from_slice(&w[24..]);
        Ok(u64::from_be_bytes(low) as usize)
    };
    let offset = word(field * 32)?;
    if offset != expected_offset {
        return Err(DepositLayoutError::Offset { field, offset, expected: expected_offset });
    }
    let length = word(offset)?;
    if length != len {
        return Err(DepositLayoutError::Length { field, length, expected: len });
    }
    data.get(offset + 32..offset + 32 + len).ok_or(DepositLayoutError::TruncatedField(field))
}

/// Deposit requests data: `pubkey | withdrawal_credentials | amount | signature | index`
/// for every DepositEvent the deposit contract emitted, in log order.
pub(crate) fn deposit_requests<'a>(
    logs: impl Iterator<Item = &'a Log>,
    deposit_contract: Address,
) -> Result<Vec<u8>, ExecutionError> {
    let mut out = Vec::new();
    for log in logs {
        if log.address != deposit_contract || log.topics().first() != Some(&DEPOSIT_EVENT_TOPIC) {
            continue;
        }
        let data = log.data.data.as_ref();
        if data.len() != 576 {
            return Err(ExecutionError::InvalidDepositLayout(DepositLayoutError::DataLength(
                data.len(),
            )));
        }
        for (field, offset, len) in
            [(0, 160, 48), (1, 256, 32), (2, 320, 8), (3, 384, 96), (4, 512, 8)]
        {
            out.extend_from_slice(
                deposit_field(data, field, offset, len)
                    .map_err(ExecutionError::InvalidDepositLayout)?,
            );
        }
    }
    Ok(out)
}

/// Assembles the EIP-7685 request list from `(type, data)` in ascending type order; empty
/// request types are left out.
pub(crate) fn assemble_requests(typed: impl IntoIterator<Item = (u8, Bytes)>) -> Requests {
    let mut requests = Requests::default();
    for (ty, data) in typed {
        if !data.is_empty() {
            requests.push_request_with_type(ty, data);
        }
    }
    requests
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::{LogData, U256};

    const CONTRACT: Address = Address::repeat_byte(0xde);

    /// A DepositEvent's data as the deposit contract lays it out, fields filled with
    /// their number.
    fn deposit_data() -> Vec<u8> {
        let mut data = vec![0u8; 576];
        for (field, offset, len) in
            [(0usize, 160usize, 48usize), (1, 256, 32), (2, 320, 8), (3, 384, 96), (4, 512, 8)]
        {
            data[field * 32..field * 32 + 32]
                .copy_from_slice(&U256::from(offset).to_be_bytes::<32>());
            data[offset..offset + 32].copy_from_slice(&U256::from(len).to_be_bytes::<32>());
            data[offset + 32..offset + 32 + len].fill(field as u8 + 1);
        }
        data
    }

    fn log(data: Vec<u8>) -> Log {
        Log {
            address: CONTRACT,
            data: LogData::new_unchecked(vec![DEPOSIT_EVENT_TOPIC], data.into()),
        }
    }

    #[test]
    fn deposit_fields_are_concatenated() {
        let out = deposit_requests([log(deposit_data())].iter(), CONTRACT).unwrap();
        assert_eq!(out.len(), 48 + 32 + 8 + 96 + 8);
        assert!(out[..48].iter().all(|b| *b == 1) && out[out.len() - 8..].iter().all(|b| *b == 5));
        // Logs of other contracts are not deposits.
        assert!(deposit_requests([log(vec![1, 2, 3])].iter(), Address::ZERO).unwrap().is_empty());
    }

    #[test]
    fn deposit_layout_errors_are_typed() {
        let layout = |data: Vec<u8>| match deposit_requests([log(data)].iter(), CONTRACT) {
            Err(ExecutionError::InvalidDepositLayout(e)) => e,
            other => panic!("expected a layout error, got {other:?}"),
        };
        assert_eq!(layout(vec![0; 10]), DepositLayoutError::DataLength(10));
        let mut moved = deposit_data();
        moved[31] = 161;
        assert_eq!(
            layout(moved),
            DepositLayoutError::Offset { field: 0, offset: 161, expected: 160 }
        );
        let mut long = deposit_data();
        long[256 + 31] = 33;
        assert_eq!(layout(long), DepositLayoutError::Length { field: 1, length: 33, expected: 32 });
        let mut oversized = deposit_data();
        oversized[64] = 1;
        assert_eq!(layout(oversized), DepositLayoutError::OversizedWord(64));
        let e = ExecutionError::InvalidDepositLayout(DepositLayoutError::DataLength(10));
        assert!(std::error::Error::source(&e)
            .is_some_and(|s| s.to_string() == "data is 10 bytes, not 576"));
    }
}
