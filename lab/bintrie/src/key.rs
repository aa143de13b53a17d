//! Tree keys: where an account's header, code chunks and storage slots live.
//!
//! A key is a 31-byte stem and a one-byte sub-index. The stem of `(address, tree_index)` is
//! the first 31 bytes of `sha256(address_32 ++ tree_index_32)`, with the address left-padded
//! to 32 bytes and the tree index **big-endian** (geth's `getBinaryTreeKey`; the EIP text
//! writes the index little-endian and hashes with BLAKE3).

use alloy_primitives::{Address, B256, U256};
use sha2::{Digest, Sha256};

/// Bytes in a stem: a key without its sub-index.
pub const STEM_LEN: usize = 31;
/// A key's first 31 bytes, naming one stem node (256 values).
pub type Stem = [u8; STEM_LEN];

/// Sub-index of the basic-data leaf (version, code size, nonce, balance).
pub const BASIC_DATA_LEAF_KEY: u8 = 0;
/// Sub-index of the code-hash leaf.
pub const CODE_HASH_LEAF_KEY: u8 = 1;
/// First sub-index of the 64 header storage slots in the account stem.
pub const HEADER_STORAGE_OFFSET: u64 = 64;
/// Position of code chunk 0 (sub-index 128 of the account stem).
pub const CODE_OFFSET: u64 = 128;
/// Values under one stem.
pub const STEM_SUBTREE_WIDTH: u64 = 256;

/// `MAIN_STORAGE_OFFSET / STEM_SUBTREE_WIDTH` = 256^31 / 256 = 2^240: added to a main
/// storage slot's tree index (the slot shifted right by 8), which therefore never overflows.
const MAIN_STORAGE_TREE_INDEX_OFFSET: U256 = U256::from_limbs([0, 0, 0, 1 << 48]);

/// The stem of `(address, tree_index)`: `sha256(0^12 ++ address ++ be32(tree_index))[..31]`.
pub fn stem(address: &Address, tree_index: U256) -> Stem {
    let mut hasher = Sha256::new();
    hasher.update([0u8; 12]);
    hasher.update(address.as_slice());
    hasher.update(tree_index.to_be_bytes::<32>());
    let digest = hasher.finalize();
    let mut stem = [0u8; STEM_LEN];
    stem.copy_from_slice(&digest[..STEM_LEN]);
    stem
}

/// The full key of `(address, tree_index, sub_index)`.
pub fn tree_key(address: &Address, tree_index: U256, sub_index: u8) -> B256 {
    join_key(&stem(address, tree_index), sub_index)
}

/// A key from its stem and sub-index.
pub fn join_key(stem: &Stem, sub_index: u8) -> B256 {
    let mut key = [0u8; 32];
    key[..STEM_LEN].copy_from_slice(stem);
    key[STEM_LEN] = sub_index;
    B256::new(key)
}

/// A key split into its stem and sub-index.
pub fn split_key(key: &B256) -> (Stem, u8) {
    let mut stem = [0u8; STEM_LEN];
    stem.copy_from_slice(&key[..STEM_LEN]);
    (stem, key[STEM_LEN])
}

/// The account stem (tree index 0): basic data, code hash, header storage, first 128 chunks.
pub fn account_stem(address: &Address) -> Stem {
    stem(address, U256::ZERO)
}

/// Key of the account's basic-data leaf.
pub fn basic_data_key(address: &Address) -> B256 {
    join_key(&account_stem(address), BASIC_DATA_LEAF_KEY)
}

/// Key of the account's code-hash leaf.
pub fn code_hash_key(address: &Address) -> B256 {
    join_key(&account_stem(address), CODE_HASH_LEAF_KEY)
}

/// Tree index and sub-index of a storage slot: slots below 64 sit in the account stem at
/// `64 + slot`; any other slot at position `256^31 + slot` (so the first 64 positions of
/// main storage are never used, as in the EIP).
pub fn storage_slot_position(slot: U256) -> (U256, u8) {
    let header_slots = U256::from(CODE_OFFSET - HEADER_STORAGE_OFFSET);
    if slot < header_slots {
        return (U256::ZERO, (HEADER_STORAGE_OFFSET + slot.to::<u64>()) as u8);
    }
    let sub_index = slot.byte(0);
    ((slot >> 8) + MAIN_STORAGE_TREE_INDEX_OFFSET, sub_index)
}

/// Key of a storage slot (see [`storage_slot_position`]).
pub fn storage_slot_key(address: &Address, slot: U256) -> B256 {
    let (tree_index, sub_index) = storage_slot_position(slot);
    tree_key(address, tree_index, sub_index)
}

/// Tree index and sub-index of code chunk `chunk`: position `128 + chunk`.
pub fn code_chunk_position(chunk: u64) -> (U256, u8) {
    let position = U256::from(CODE_OFFSET) + U256::from(chunk);
    (position >> 8, position.byte(0))
}

/// Key of code chunk `chunk`.
pub fn code_chunk_key(address: &Address, chunk: u64) -> B256 {
    let (tree_index, sub_index) = code_chunk_position(chunk);
    tree_key(address, tree_index, sub_index)
}

/// Bit `index` (0 = most significant bit of byte 0) of a stem.
pub(crate) fn stem_bit(stem: &Stem, index: usize) -> u8 {
    (stem[index / 8] >> (7 - index % 8)) & 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn main_storage_offset_is_two_to_the_240() {
        assert_eq!(MAIN_STORAGE_TREE_INDEX_OFFSET, U256::from(1) << 240);
    }

    #[test]
    fn slot_positions() {
        assert_eq!(storage_slot_position(U256::ZERO), (U256::ZERO, 64));
        assert_eq!(storage_slot_position(U256::from(63)), (U256::ZERO, 127));
        let base = U256::from(1) << 240;
        assert_eq!(storage_slot_position(U256::from(64)), (base, 64));
        assert_eq!(storage_slot_position(U256::from(0x1234)), (base + U256::from(0x12), 0x34));
        // The largest slot: (2^256 - 1) >> 8 + 2^240 needs 249 bits, still below 2^256.
        let (index, sub) = storage_slot_position(U256::MAX);
        assert_eq!(sub, 0xff);
        assert_eq!(index, (U256::MAX >> 8) + base);
    }

    #[test]
    fn chunk_positions() {
        assert_eq!(code_chunk_position(0), (U256::ZERO, 128));
        assert_eq!(code_chunk_position(127), (U256::ZERO, 255));
        assert_eq!(code_chunk_position(128), (U256::from(1), 0));
        assert_eq!(code_chunk_position(384), (U256::from(2), 0));
    }

    #[test]
    fn stem_is_sha256_of_padded_address_and_big_endian_index() {
        let address = Address::repeat_byte(0xab);
        let mut input = [0u8; 64];
        input[12..32].copy_from_slice(address.as_slice());
        input[63] = 1;
        let digest = Sha256::digest(input);
        assert_eq!(stem(&address, U256::from(1))[..], digest[..31]);
    }
}
