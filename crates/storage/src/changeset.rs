//! What a block overwrote, so the head can be moved back across it (reorgs).
//!
//! Encoding (all integers big-endian): the version byte `1`, `u32 n` then n accounts as
//! `address(20) | u8 present | [u32 len | rlp(account)]`, then `u32 g` runs of storage
//! entries of one address, each `address(20) | u32 k` and k entries
//! `u8 len | slot(len) | u8 len | previous value(len)` (slot and value without leading
//! zero bytes). The address is written once per run and most values are small: a block's
//! change set is about half the size of the fixed-width layout before it.
//!
//! That earlier layout (version 0) had no version byte: `u32 n`, the accounts, `u32 m`
//! and m entries `address(20) | slot(32) | previous value(32)`. Its first byte is the top
//! byte of `n`, zero for any block (fewer than 2^24 accounts), so stores written before
//! the change still decode.

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
    /// A word `put_trimmed` wrote.
    fn trimmed(&mut self) -> Result<U256, CodecError> {
        let len = self.take(1)?[0] as usize;
        if len > 32 {
            return Err(corrupt("a word longer than 32 bytes"));
        }
        let bytes = self.take(len)?;
        if bytes.first() == Some(&0) {
            return Err(corrupt("a word with a leading zero byte"));
        }
        Ok(U256::from_be_slice(bytes))
    }
}

impl ChangeSet {
    /// The stored bytes (layout in the module doc).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(9 + self.accounts.len() * 100 + self.storage.len() * 48);
        out.push(VERSION);
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
        let runs: Vec<&[(Address, U256, U256)]> =
            self.storage.chunk_by(|a, b| a.0 == b.0).collect();
        out.extend_from_slice(&(runs.len() as u32).to_be_bytes());
        for run in runs {
            out.extend_from_slice(run[0].0.as_slice());
            out.extend_from_slice(&(run.len() as u32).to_be_bytes());
            for (_, slot, value) in run {
                put_trimmed(&mut out, slot);
                put_trimmed(&mut out, value);
            }
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
        let legacy = match r.0.first() {
            Some(0) => true,
            Some(&VERSION) => {
                r.take(1)?;
                false
            }
            Some(v) => return Err(corrupt(&format!("unknown change set version {v}"))),
            None => return Err(corrupt("truncated")),
        };
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
        let mut storage = Vec::new();
        if legacy {
            let m = r.u32()?;
            storage.reserve(m.min(1 << 16));
            for _ in 0..m {
                let address = Address::from_slice(r.take(20)?);
                let slot = U256::from_be_slice(r.take(32)?);
                let value = U256::from_be_slice(r.take(32)?);
                storage.push((address, slot, value));
            }
        } else {
            let runs = r.u32()?;
            for _ in 0..runs {
                let address = Address::from_slice(r.take(20)?);
                let k = r.u32()?;
                storage.reserve(k.min(1 << 16));
                for _ in 0..k {
                    let slot = r.trimmed()?;
                    let value = r.trimmed()?;
                    storage.push((address, slot, value));
                }
            }
        }
        if !r.0.is_empty() {
            return Err(corrupt("trailing bytes"));
        }
        Ok(Self { accounts, storage })
    }
}

/// The layout `ChangeSet::encode` writes (see the module doc).
const VERSION: u8 = 1;

/// A 256-bit word without its leading zero bytes, after its length in one byte.
fn put_trimmed(out: &mut Vec<u8>, word: &U256) {
    let bytes = word.to_be_bytes::<32>();
    let skip = bytes.iter().take_while(|b| **b == 0).count();
    out.push((32 - skip) as u8);
    out.extend_from_slice(&bytes[skip..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::B256;

    fn sample() -> ChangeSet {
        let a = Address::repeat_byte(2);
        let b = Address::repeat_byte(7);
        ChangeSet {
            accounts: vec![
                (Address::repeat_byte(1), None),
                (
                    a,
                    Some(AccountState {
                        nonce: 7,
                        balance: U256::from(99u64),
                        storage_root: B256::repeat_byte(3),
                        code_hash: B256::repeat_byte(4),
                    }),
                ),
            ],
            // Runs of one address, an address coming back after another, zero and
            // full-width words.
            storage: vec![
                (a, U256::from(5u64), U256::from(6u64)),
                (a, U256::ZERO, U256::ZERO),
                (b, U256::MAX, U256::from(1u64) << 255),
                (a, U256::from_be_bytes([0xab; 32]), U256::from(0x0100u64)),
            ],
        }
    }

    /// The version-0 layout, written from the module doc.
    fn legacy_bytes(cs: &ChangeSet) -> Vec<u8> {
        let mut out = (cs.accounts.len() as u32).to_be_bytes().to_vec();
        for (address, account) in &cs.accounts {
            out.extend_from_slice(address.as_slice());
            match account {
                None => out.push(0),
                Some(a) => {
                    let rlp = alloy_rlp::encode(a);
                    out.push(1);
                    out.extend_from_slice(&(rlp.len() as u32).to_be_bytes());
                    out.extend_from_slice(&rlp);
                }
            }
        }
        out.extend_from_slice(&(cs.storage.len() as u32).to_be_bytes());
        for (address, slot, value) in &cs.storage {
            out.extend_from_slice(address.as_slice());
            out.extend_from_slice(&slot.to_be_bytes::<32>());
            out.extend_from_slice(&value.to_be_bytes::<32>());
        }
        out
    }

    #[test]
    fn a_change_set_reads_back_as_written_and_every_truncation_is_an_error() {
        let cs = sample();
        let bytes = cs.encode();
        assert_eq!(bytes[0], VERSION);
        assert_eq!(ChangeSet::decode(&bytes).unwrap(), cs);
        for cut in 0..bytes.len() {
            assert!(ChangeSet::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(ChangeSet::decode(&longer).is_err());
        assert_eq!(
            ChangeSet::decode(&ChangeSet::default().encode()).unwrap(),
            ChangeSet::default()
        );
    }

    #[test]
    fn change_sets_stored_before_the_versioned_layout_still_decode() {
        let cs = sample();
        assert_eq!(ChangeSet::decode(&legacy_bytes(&cs)).unwrap(), cs);
        assert_eq!(
            ChangeSet::decode(&legacy_bytes(&ChangeSet::default())).unwrap(),
            ChangeSet::default()
        );
    }

    #[test]
    fn small_values_of_one_contract_take_about_half_the_fixed_width_layout() {
        let token = Address::repeat_byte(9);
        let storage = (0..1000u64)
            .map(|i| {
                (
                    token,
                    U256::from_be_bytes(B256::repeat_byte(i as u8).0),
                    U256::from(i * 1_000_003),
                )
            })
            .collect();
        let cs = ChangeSet { accounts: Vec::new(), storage };
        let (new, old) = (cs.encode().len(), legacy_bytes(&cs).len());
        assert!(new * 2 < old + 1000, "{new} bytes against {old}");
        assert_eq!(ChangeSet::decode(&cs.encode()).unwrap(), cs);
    }

    #[test]
    fn malformed_words_and_versions_are_corruption() {
        let mut bytes = ChangeSet {
            accounts: Vec::new(),
            storage: vec![(Address::ZERO, U256::from(1u64), U256::from(2u64))],
        }
        .encode();
        // version | n=0 | runs=1 | address | k=1 | slot len at 34.
        let slot_len = 1 + 4 + 4 + 20 + 4;
        bytes[slot_len] = 33;
        assert!(ChangeSet::decode(&bytes).unwrap_err().to_string().contains("longer than 32"));
        let mut padded = ChangeSet::default().encode();
        padded[0] = 2;
        assert!(ChangeSet::decode(&padded).unwrap_err().to_string().contains("version 2"));
    }
}
