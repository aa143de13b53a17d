//! System contracts and execution requests (EIP-2935, EIP-4788, EIP-6110, EIP-7002,
//! EIP-7251, EIP-7685).

use crate::error::ExecutionError;
use alloy_eips::eip7685::Requests;
use alloy_primitives::{address, b256, Address, Bytes, Log, B256};

pub const HISTORY_STORAGE_ADDRESS: Address = address!("0x0000F90827F1C53a10cb7A02335B175320002935");
pub const BEACON_ROOTS_ADDRESS: Address = address!("0x000F3df6D732807Ef1319fB7B8bB8522d0Beac02");
pub const WITHDRAWAL_REQUEST_ADDRESS: Address = address!("0x00000961Ef480Eb55e80D19ad83579A64c007002");
pub const CONSOLIDATION_REQUEST_ADDRESS: Address = address!("0x0000BBdDc7CE488642fb579F8B00f3a590007251");

/// keccak256("DepositEvent(bytes,bytes,bytes,bytes,bytes)")
pub const DEPOSIT_EVENT_TOPIC: B256 = b256!("0x649bbc62d0e31342afea4e5cd82d4049e7e1ee912fc0889aa790803be39038c5");

const DEPOSIT_REQUEST_TYPE: u8 = 0x00;
const WITHDRAWAL_REQUEST_TYPE: u8 = 0x01;
const CONSOLIDATION_REQUEST_TYPE: u8 = 0x02;

/// Reads one `bytes` field of the ABI-encoded DepositEvent, checking the offset and
/// length the deposit contract always produces (EIP-6110 requires the exact layout).
fn deposit_field(data: &[u8], head_slot: usize, expected_offset: usize, len: usize) -> Result<&[u8], ExecutionError> {
    let word = |at: usize| -> Result<usize, ExecutionError> {
        let w = data.get(at..at + 32).ok_or_else(|| ExecutionError::InvalidDepositLayout("truncated".into()))?;
        if w[..24].iter().any(|b| *b != 0) {
            return Err(ExecutionError::InvalidDepositLayout("oversized word".into()));
        }
        Ok(u64::from_be_bytes(w[24..].try_into().unwrap()) as usize)
    };
    let offset = word(head_slot * 32)?;
    if offset != expected_offset {
        return Err(ExecutionError::InvalidDepositLayout(format!("field {head_slot} offset {offset}")));
    }
    if word(offset)? != len {
        return Err(ExecutionError::InvalidDepositLayout(format!("field {head_slot} length")));
    }
    data.get(offset + 32..offset + 32 + len)
        .ok_or_else(|| ExecutionError::InvalidDepositLayout("truncated field".into()))
}

/// Deposit requests data: `pubkey | withdrawal_credentials | amount | signature | index`
/// for every DepositEvent the deposit contract emitted, in log order.
pub fn deposit_requests<'a>(logs: impl Iterator<Item = &'a Log>, deposit_contract: Address) -> Result<Vec<u8>, ExecutionError> {
    let mut out = Vec::new();
    for log in logs {
        if log.address != deposit_contract || log.topics().first() != Some(&DEPOSIT_EVENT_TOPIC) {
            continue;
        }
        let data = log.data.data.as_ref();
        if data.len() != 576 {
            return Err(ExecutionError::InvalidDepositLayout(format!("data is {} bytes", data.len())));
        }
        out.extend_from_slice(deposit_field(data, 0, 160, 48)?);
        out.extend_from_slice(deposit_field(data, 1, 256, 32)?);
        out.extend_from_slice(deposit_field(data, 2, 320, 8)?);
        out.extend_from_slice(deposit_field(data, 3, 384, 96)?);
        out.extend_from_slice(deposit_field(data, 4, 512, 8)?);
    }
    Ok(out)
}

/// Assembles the EIP-7685 request list; empty request types are left out.
pub fn assemble_requests(deposits: Vec<u8>, withdrawals: Bytes, consolidations: Bytes) -> Requests {
    let mut requests = Requests::default();
    for (ty, data) in [
        (DEPOSIT_REQUEST_TYPE, Bytes::from(deposits)),
        (WITHDRAWAL_REQUEST_TYPE, withdrawals),
        (CONSOLIDATION_REQUEST_TYPE, consolidations),
    ] {
        if !data.is_empty() {
            requests.push_request_with_type(ty, data);
        }
    }
    requests
}
