//! The account header: the basic-data leaf's layout and the account as read back.

use alloy_primitives::{B256, U256};

/// Byte offset of the code size in the basic-data leaf as geth writes it: a big-endian
/// `u32` in bytes 4..8 (the EIP reserves bytes 1..5 and gives the size bytes 5..8; the two
/// agree for any code shorter than 16 MiB).
pub const BASIC_DATA_CODE_SIZE_OFFSET: usize = 4;
/// Byte offset of the big-endian `u64` nonce.
pub const BASIC_DATA_NONCE_OFFSET: usize = 8;
/// Byte offset of the big-endian 16-byte balance.
pub const BASIC_DATA_BALANCE_OFFSET: usize = 16;

/// The fields packed into an account's basic-data leaf.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BasicData {
    /// Byte 0; always written as 0.
    pub version: u8,
    /// Bytes 4..8.
    pub code_size: u32,
    /// Bytes 8..16.
    pub nonce: u64,
    /// Bytes 16..32.
    pub balance: u128,
}

impl BasicData {
    /// The leaf value.
    pub fn encode(&self) -> B256 {
        let mut leaf = [0u8; 32];
        leaf[0] = self.version;
        leaf[BASIC_DATA_CODE_SIZE_OFFSET..BASIC_DATA_NONCE_OFFSET]
            .copy_from_slice(&self.code_size.to_be_bytes());
        leaf[BASIC_DATA_NONCE_OFFSET..BASIC_DATA_BALANCE_OFFSET]
            .copy_from_slice(&self.nonce.to_be_bytes());
        leaf[BASIC_DATA_BALANCE_OFFSET..].copy_from_slice(&self.balance.to_be_bytes());
        B256::new(leaf)
    }

    /// The fields of a leaf value (any 32 bytes decode).
    pub fn decode(leaf: &B256) -> Self {
        let field = |range: std::ops::Range<usize>| &leaf[range];
        Self {
            version: leaf[0],
            code_size: u32::from_be_bytes(
                field(BASIC_DATA_CODE_SIZE_OFFSET..BASIC_DATA_NONCE_OFFSET).try_into().unwrap(),
            ),
            nonce: u64::from_be_bytes(
                field(BASIC_DATA_NONCE_OFFSET..BASIC_DATA_BALANCE_OFFSET).try_into().unwrap(),
            ),
            balance: u128::from_be_bytes(field(BASIC_DATA_BALANCE_OFFSET..32).try_into().unwrap()),
        }
    }
}

/// The 16 balance bytes geth stores for `balance`. A balance below 2^128 is stored as it
/// is. For a larger one geth keeps bytes `16..` of its minimal big-endian encoding, i.e.
/// only the low `len - 16` bytes, where `len` is that encoding's length (17..=32): 2^128 is
/// stored as 0, and only a 32-byte balance keeps its full low 128 bits. Mirrored here so the
/// roots agree even for such balances (which geth only expects from dev-mode allocations).
pub fn stored_balance(balance: U256) -> u128 {
    let len = balance.byte_len();
    if len <= 16 {
        return balance.to::<u128>();
    }
    let kept_bytes = len - 16;
    let mask = if kept_bytes == 16 { u128::MAX } else { (1u128 << (8 * kept_bytes)) - 1 };
    (balance & U256::from(u128::MAX)).to::<u128>() & mask
}

/// An account as stored in the account stem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Account {
    /// The nonce.
    pub nonce: u64,
    /// The balance (16 bytes in the leaf, see [`stored_balance`]).
    pub balance: U256,
    /// Code size in bytes.
    pub code_size: u32,
    /// Keccak-256 of the code.
    pub code_hash: B256,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_data_layout() {
        let data = BasicData { version: 0, code_size: 0x0a0b0c, nonce: 7, balance: 0x0102 };
        let leaf = data.encode();
        let mut expected = [0u8; 32];
        expected[5..8].copy_from_slice(&[0x0a, 0x0b, 0x0c]);
        expected[15] = 7;
        expected[30..32].copy_from_slice(&[0x01, 0x02]);
        assert_eq!(leaf, B256::new(expected));
        assert_eq!(BasicData::decode(&leaf), data);
    }

    #[test]
    fn oversized_balance_truncation_follows_geth() {
        assert_eq!(stored_balance(U256::from(u128::MAX)), u128::MAX);
        assert_eq!(stored_balance(U256::from(1) << 128), 0);
        // 17-byte encoding 0x01ff..ff: only the last byte survives.
        assert_eq!(stored_balance((U256::from(1) << 128) + U256::from(u128::MAX)), 0xff);
        // 18 bytes: the low two.
        assert_eq!(stored_balance((U256::from(0x1234) << 128) | U256::from(0xabcd_u64)), 0xabcd);
        assert_eq!(stored_balance(U256::MAX), u128::MAX);
    }
}
