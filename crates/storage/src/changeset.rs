//! What a block overwrote, so the head can be moved back across it (reorgs).
//!
//! Encoding (all integers big-endian): `u32 n` then n accounts as
//! `address(20) | u8 present | [u32 len | rlp(account)]`, then `u32 m` and m storage
//! entries `address(20) | slot(32) | previous value(32)`.

use crate::codec::CodecError;
use crate::tables::{ChangeSets, TypedTable};
use crate::StoreError;
use alloy_primitives::{Address, U256};
use alloy_rlp::Decodable;
use ethrex_common::AccountState;

/// The account records and storage values one block overwrote.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ChangeSet {
    /// Accounts as they were before the block (`None`: did not exist).
    pub accounts: Vec<(Address, Option<AccountState>)>,
    /// Storage values before the block (zero: unset).
    pub storage: Vec<(Address, U256, U256)>,
}

fn corrupt(reason: &str) -> CodecError {
    CodecError(reason.to_string())
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], CodecError> {
        if self.0.len() < n {
            return Err(corrupt("truncated"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u32(&mut self) -> Result<usize, CodecError> {
        let bytes = self.take(4)?;
        Ok(u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize)
    }
}

impl ChangeSet {
    /// The stored bytes (layout in the module doc).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 + self.accounts.len() * 100 + self.storage.len() * 84);
        out.extend_from_slice(&(self.accounts.len() as u32).to_be_bytes());
        for (address, account) in &self.accounts {
            out.extend_from_slice(address.as_slice());
            match account {
                None => out.push(0),
                Some(a) => {
                    out.push(1);
                    let rlp = alloy_rlp::encode(a);
                    out.extend_from_slice(&(rlp.len() as u32).to_be_bytes());
                    out.extend_from_slice(&rlp);
                }
            }
        }
        out.extend_from_slice(&(self.storage.len() as u32).to_be_bytes());
        for (address, slot, value) in &self.storage {
            out.extend_from_slice(address.as_slice());
            out.extend_from_slice(&slot.to_be_bytes::<32>());
            out.extend_from_slice(&value.to_be_bytes::<32>());
        }
        out
    }

    /// Parses stored bytes; anything malformed is a corrupt `change_sets` entry.
    pub fn decode(bytes: &[u8]) -> Result<Self, StoreError> {
        Self::decode_bytes(bytes)
            .map_err(|e| StoreError::Corrupt { table: ChangeSets::NAME, reason: e.0 })
    }

    /// Parses stored bytes, reporting what is malformed.
    pub(crate) fn decode_bytes(bytes: &[u8]) -> Result<Self, CodecError> {
        let mut r = Reader(bytes);
        let n = r.u32()?;
        let mut accounts = Vec::with_capacity(n.min(1 << 16));
        for _ in 0..n {
            let address = Address::from_slice(r.take(20)?);
            let account = match r.take(1)?[0] {
                0 => None,
                1 => {
                    let len = r.u32()?;
                    let mut rlp = r.take(len)?;
                    let a = AccountState::decode(&mut rlp).map_err(|e| corrupt(&e.to_string()))?;
                    Some(a)
                }
                _ => return Err(corrupt("bad account flag")),
            };
            accounts.push((address, account));
        }
        let m = r.u32()?;
        let mut storage = Vec::with_capacity(m.min(1 << 16));
        for _ in 0..m {
            let address = Address::from_slice(r.take(20)?);
            let slot = U256::from_be_slice(r.take(32)?);
            let value = U256::from_be_slice(r.take(32)?);
            storage.push((address, slot, value));
        }
        if !r.0.is_empty() {
            return Err(corrupt("trailing bytes"));
        }
        Ok(Self { accounts, storage })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::B256;

    #[test]
    fn roundtrip_and_corruption() {
        let cs = ChangeSet {
            accounts: vec![
                (Address::repeat_byte(1), None),
                (
                    Address::repeat_byte(2),
                    Some(AccountState {
                        nonce: 7,
                        balance: U256::from(99u64),
                        storage_root: B256::repeat_byte(3),
                        code_hash: B256::repeat_byte(4),
                    }),
                ),
            ],
            storage: vec![(Address::repeat_byte(2), U256::from(5u64), U256::from(6u64))],
        };
        let bytes = cs.encode();
        assert_eq!(ChangeSet::decode(&bytes).unwrap(), cs);
        for cut in [1, 10, bytes.len() - 1] {
            assert!(ChangeSet::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
    }
}
