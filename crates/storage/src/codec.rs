//! How keys and values are laid out in the tables.
//!
//! Every length check of stored bytes lives here: a key or value that does not have the
//! shape its table declares decodes to a `CodecError`, which the store reports as
//! `StoreError::Corrupt` naming the table. Nothing here panics on stored bytes.
//!
//! The layouts are the on-disk format: `tests/format.rs` pins them byte for byte.

use crate::changeset::ChangeSet;
use alloy_primitives::{Address, Bytes, B256, U256};
use alloy_rlp::Decodable;
use ethrex_common::{AccountChanges, AccountState, BlockBody, Header, Receipt};
use ethrex_trie::NodeRlp;

/// Why stored bytes do not decode as their table's key or value type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodecError(pub String);

impl std::fmt::Display for CodecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The bytes as an array of exactly `N` bytes, or an error naming what they should be.
fn exact<const N: usize>(bytes: &[u8], what: &str) -> Result<[u8; N], CodecError> {
    bytes
        .try_into()
        .map_err(|_| CodecError(format!("{what} is {} bytes, expected {N}", bytes.len())))
}

/// A table key type: its stored bytes, and back.
pub trait Key: Sized {
    /// The stored form; fixed-size keys stay on the stack.
    type Encoded: AsRef<[u8]> + Into<Vec<u8>>;
    /// The exact bytes stored for this key.
    fn encode_key(&self) -> Self::Encoded;
    /// Parses stored key bytes, checking their length.
    fn decode_key(bytes: &[u8]) -> Result<Self, CodecError>;
}

/// A hash (block, code, trie node): its 32 bytes.
impl Key for B256 {
    type Encoded = [u8; 32];
    fn encode_key(&self) -> [u8; 32] {
        self.0
    }
    fn decode_key(bytes: &[u8]) -> Result<Self, CodecError> {
        exact::<32>(bytes, "hash key").map(B256::from)
    }
}

/// A block number: 8 bytes big-endian, so keys sort by number.
impl Key for u64 {
    type Encoded = [u8; 8];
    fn encode_key(&self) -> [u8; 8] {
        self.to_be_bytes()
    }
    fn decode_key(bytes: &[u8]) -> Result<Self, CodecError> {
        exact::<8>(bytes, "block number key").map(u64::from_be_bytes)
    }
}

/// An account: its 20-byte address.
impl Key for Address {
    type Encoded = [u8; 20];
    fn encode_key(&self) -> [u8; 20] {
        self.0 .0
    }
    fn decode_key(bytes: &[u8]) -> Result<Self, CodecError> {
        exact::<20>(bytes, "address key").map(Address::from)
    }
}

/// A storage slot: the address, then the slot big-endian, so an account's slots share
/// the address as a prefix (`Store::storage_entries` scans it).
impl Key for (Address, U256) {
    type Encoded = [u8; 52];
    fn encode_key(&self) -> [u8; 52] {
        let mut key = [0u8; 52];
        key[..20].copy_from_slice(self.0.as_slice());
        key[20..].copy_from_slice(&self.1.to_be_bytes::<32>());
        key
    }
    fn decode_key(bytes: &[u8]) -> Result<Self, CodecError> {
        let key = exact::<52>(bytes, "storage key")?;
        Ok((Address::from_slice(&key[..20]), U256::from_be_slice(&key[20..])))
    }
}

/// A trie node's position: its path from the root, one nibble (0-15) per byte, at most
/// 64 nibbles. Nodes of one subtree share their position's prefix, so they sit together.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TriePath(pub Vec<u8>);

/// The deepest a node of a trie keyed by 32-byte hashes can sit.
const MAX_TRIE_PATH: usize = 64;

fn check_trie_path(bytes: &[u8]) -> Result<TriePath, CodecError> {
    if bytes.len() > MAX_TRIE_PATH {
        return Err(CodecError(format!("trie path of {} nibbles, at most 64", bytes.len())));
    }
    if let Some(b) = bytes.iter().find(|&&b| b > 0x0f) {
        return Err(CodecError(format!("trie path holds {b:#04x}, not a nibble")));
    }
    Ok(TriePath(bytes.to_vec()))
}

/// The stored key of the trie node at `path` (nibbles) in the trie of `owner`: the
/// nibbles for the account trie (`None`), the hashed address then the nibbles for a
/// storage trie, so one account's trie is one key range.
pub(crate) fn trie_position_key(owner: Option<&B256>, path: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(owner.map_or(0, |_| 32) + path.len());
    if let Some(owner) = owner {
        key.extend_from_slice(owner.as_slice());
    }
    key.extend_from_slice(path);
    key
}

/// An account trie node's position: its nibbles.
impl Key for TriePath {
    type Encoded = Vec<u8>;
    fn encode_key(&self) -> Vec<u8> {
        trie_position_key(None, &self.0)
    }
    fn decode_key(bytes: &[u8]) -> Result<Self, CodecError> {
        check_trie_path(bytes)
    }
}

/// A storage trie node's position: the hashed address owning the trie, then the nibbles.
impl Key for (B256, TriePath) {
    type Encoded = Vec<u8>;
    fn encode_key(&self) -> Vec<u8> {
        trie_position_key(Some(&self.0), &self.1 .0)
    }
    fn decode_key(bytes: &[u8]) -> Result<Self, CodecError> {
        if bytes.len() < 32 {
            return Err(CodecError(format!(
                "storage trie key is {} bytes, at least 32",
                bytes.len()
            )));
        }
        Ok((B256::from_slice(&bytes[..32]), check_trie_path(&bytes[32..])?))
    }
}

/// The fixed keys of the metadata table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaKey {
    /// The block whose state the flat tables hold.
    Head,
    /// The genesis block.
    Genesis,
    /// How the state is laid out on disk (`store::STATE_LAYOUT`), as a number in the
    /// last byte; a store without it predates trie nodes by position.
    Layout,
}

impl MetaKey {
    /// The stored key (ASCII).
    pub const fn as_bytes(self) -> &'static [u8] {
        match self {
            MetaKey::Head => b"head",
            MetaKey::Genesis => b"genesis",
            MetaKey::Layout => b"layout",
        }
    }
}

/// One of the fixed ASCII names.
impl Key for MetaKey {
    type Encoded = &'static [u8];
    fn encode_key(&self) -> &'static [u8] {
        self.as_bytes()
    }
    fn decode_key(bytes: &[u8]) -> Result<Self, CodecError> {
        [MetaKey::Head, MetaKey::Genesis, MetaKey::Layout]
            .into_iter()
            .find(|k| k.as_bytes() == bytes)
            .ok_or_else(|| CodecError(format!("unknown meta key {bytes:02x?}")))
    }
}

/// A key stored as given: tables whose owner defines the layout (`tables::Extension`).
/// Any length decodes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RawKey(pub Vec<u8>);

impl Key for RawKey {
    type Encoded = Vec<u8>;
    fn encode_key(&self) -> Vec<u8> {
        self.0.clone()
    }
    fn decode_key(bytes: &[u8]) -> Result<Self, CodecError> {
        Ok(RawKey(bytes.to_vec()))
    }
}

/// A value stored as given; the table's owner decodes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawValue(pub Vec<u8>);

/// A table value type as it is read back.
pub trait Value: Sized {
    /// Parses stored value bytes.
    fn decode_value(bytes: &[u8]) -> Result<Self, CodecError>;
    /// Same as `decode_value`, for a value read into its own buffer (lets raw values keep
    /// the buffer instead of copying it).
    fn decode_owned(bytes: Vec<u8>) -> Result<Self, CodecError> {
        Self::decode_value(&bytes)
    }
}

/// What can be written as a value of type `V`: borrowed for encoded values, moved when
/// the stored bytes are the value itself.
pub trait EncodeValue<V: Value> {
    /// The exact bytes stored.
    fn encode_value(self) -> Vec<u8>;
}

/// Values stored as their RLP encoding. Trailing bytes after the item are ignored, as
/// they always were.
macro_rules! rlp_values {
    ($($ty:ty),* $(,)?) => {$(
        impl Value for $ty {
            fn decode_value(bytes: &[u8]) -> Result<Self, CodecError> {
                let mut buf = bytes;
                <$ty as Decodable>::decode(&mut buf).map_err(|e| CodecError(e.to_string()))
            }
        }
        impl EncodeValue<$ty> for &$ty {
            fn encode_value(self) -> Vec<u8> {
                alloy_rlp::encode(self)
            }
        }
    )*};
}

rlp_values!(Header, BlockBody, AccountState, Vec<AccountChanges>);

/// A block's receipts, without their blooms (`crate::receipts`).
impl Value for Vec<Receipt> {
    fn decode_value(bytes: &[u8]) -> Result<Self, CodecError> {
        crate::receipts::decode(bytes).map_err(|e| CodecError(e.to_string()))
    }
}

/// Receipts are encoded from the slice the block commit borrows.
impl EncodeValue<Vec<Receipt>> for &[Receipt] {
    fn encode_value(self) -> Vec<u8> {
        crate::receipts::encode(self)
    }
}

/// A block number: 8 bytes big-endian.
impl Value for u64 {
    fn decode_value(bytes: &[u8]) -> Result<Self, CodecError> {
        exact::<8>(bytes, "block number").map(u64::from_be_bytes)
    }
}

impl EncodeValue<u64> for u64 {
    fn encode_value(self) -> Vec<u8> {
        self.to_be_bytes().to_vec()
    }
}

/// Where a block held a transaction (table `tx_numbers`): the block's number, 8 bytes
/// big-endian, then the transaction's index in it, 4 bytes big-endian. An entry of 8 bytes
/// (written before the index was kept) has the number only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxPosition {
    /// The number of the block that held the transaction when it was committed.
    pub number: u64,
    /// Its index in that block; `None` in an entry written before indices were kept.
    pub index: Option<u32>,
}

impl Value for TxPosition {
    fn decode_value(bytes: &[u8]) -> Result<Self, CodecError> {
        match bytes.len() {
            8 => Ok(Self {
                number: exact::<8>(bytes, "block number").map(u64::from_be_bytes)?,
                index: None,
            }),
            12 => {
                let number = exact::<8>(&bytes[..8], "block number").map(u64::from_be_bytes)?;
                let index = exact::<4>(&bytes[8..], "transaction index").map(u32::from_be_bytes)?;
                Ok(Self { number, index: Some(index) })
            }
            n => Err(CodecError(format!("transaction position of {n} bytes, expected 8 or 12"))),
        }
    }
}

impl EncodeValue<TxPosition> for TxPosition {
    fn encode_value(self) -> Vec<u8> {
        let mut out = self.number.to_be_bytes().to_vec();
        if let Some(index) = self.index {
            out.extend_from_slice(&index.to_be_bytes());
        }
        out
    }
}

/// A block hash: its 32 bytes.
impl Value for B256 {
    fn decode_value(bytes: &[u8]) -> Result<Self, CodecError> {
        exact::<32>(bytes, "hash").map(B256::from)
    }
}

impl EncodeValue<B256> for B256 {
    fn encode_value(self) -> Vec<u8> {
        self.to_vec()
    }
}

/// A storage value: big-endian without leading zeros (zero is never stored: it deletes).
impl Value for U256 {
    fn decode_value(bytes: &[u8]) -> Result<Self, CodecError> {
        U256::try_from_be_slice(bytes).ok_or_else(|| {
            CodecError(format!("storage value is {} bytes, at most 32 allowed", bytes.len()))
        })
    }
}

impl EncodeValue<U256> for U256 {
    fn encode_value(self) -> Vec<u8> {
        self.to_be_bytes_trimmed_vec()
    }
}

/// Contract code: the bytecode as is.
impl Value for Bytes {
    fn decode_value(bytes: &[u8]) -> Result<Self, CodecError> {
        Ok(Bytes::copy_from_slice(bytes))
    }
    fn decode_owned(bytes: Vec<u8>) -> Result<Self, CodecError> {
        Ok(Bytes::from(bytes))
    }
}

impl EncodeValue<Bytes> for Bytes {
    fn encode_value(self) -> Vec<u8> {
        self.to_vec()
    }
}

/// A trie node: its RLP as is (the trie decodes it).
impl Value for NodeRlp {
    fn decode_value(bytes: &[u8]) -> Result<Self, CodecError> {
        Ok(NodeRlp::from(bytes))
    }
    fn decode_owned(bytes: Vec<u8>) -> Result<Self, CodecError> {
        Ok(NodeRlp::from(bytes))
    }
}

/// Nodes arrive encoded; their buffers move into the batch.
impl EncodeValue<NodeRlp> for Vec<u8> {
    fn encode_value(self) -> Vec<u8> {
        self
    }
}

/// Raw values: the bytes as they are.
impl Value for RawValue {
    fn decode_value(bytes: &[u8]) -> Result<Self, CodecError> {
        Ok(RawValue(bytes.to_vec()))
    }
    fn decode_owned(bytes: Vec<u8>) -> Result<Self, CodecError> {
        Ok(RawValue(bytes))
    }
}

impl EncodeValue<RawValue> for RawValue {
    fn encode_value(self) -> Vec<u8> {
        self.0
    }
}

/// A change set, in its own layout (see `changeset`).
impl Value for ChangeSet {
    fn decode_value(bytes: &[u8]) -> Result<Self, CodecError> {
        ChangeSet::decode_bytes(bytes)
    }
}

impl EncodeValue<ChangeSet> for &ChangeSet {
    fn encode_value(self) -> Vec<u8> {
        self.encode()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::hex;

    #[test]
    fn keys_encode_to_the_stored_bytes_and_back() {
        let hash = B256::repeat_byte(0xab);
        assert_eq!(hash.encode_key().to_vec(), vec![0xab; 32]);
        assert_eq!(B256::decode_key(&[0xab; 32]), Ok(hash));

        assert_eq!(0x0102u64.encode_key(), hex!("0000000000000102"));
        assert_eq!(u64::decode_key(&hex!("0000000000000102")), Ok(0x0102));

        let address = Address::repeat_byte(0x11);
        assert_eq!(address.encode_key(), [0x11; 20]);
        assert_eq!(Address::decode_key(&[0x11; 20]), Ok(address));

        let slot = (address, U256::from(0x0304u64));
        let mut expected = vec![0x11; 20];
        expected.extend_from_slice(&[0; 30]);
        expected.extend_from_slice(&[0x03, 0x04]);
        assert_eq!(slot.encode_key().to_vec(), expected);
        assert_eq!(<(Address, U256)>::decode_key(&expected), Ok(slot));

        assert_eq!(MetaKey::Head.encode_key(), b"head");
        assert_eq!(MetaKey::Genesis.encode_key(), b"genesis");
        assert_eq!(MetaKey::decode_key(b"genesis"), Ok(MetaKey::Genesis));
    }

    #[test]
    fn keys_of_the_wrong_length_are_errors() {
        assert!(B256::decode_key(&[0; 31]).is_err());
        assert!(B256::decode_key(&[0; 33]).is_err());
        assert!(u64::decode_key(&[0; 7]).is_err());
        assert!(Address::decode_key(&[0; 32]).is_err());
        assert!(<(Address, U256)>::decode_key(&[0; 20]).is_err());
        assert!(<(Address, U256)>::decode_key(&[0; 53]).is_err());
        assert!(MetaKey::decode_key(b"tail").is_err());
        assert_eq!(
            B256::decode_key(&[0; 3]).unwrap_err().to_string(),
            "hash key is 3 bytes, expected 32"
        );
    }

    #[test]
    fn fixed_values_check_their_length() {
        assert_eq!(7u64.encode_value(), hex!("0000000000000007"));
        assert_eq!(u64::decode_value(&hex!("0000000000000007")), Ok(7));
        assert_eq!(
            u64::decode_value(&[7]).unwrap_err().to_string(),
            "block number is 1 bytes, expected 8"
        );
        assert_eq!(B256::repeat_byte(1).encode_value(), vec![1; 32]);
        assert!(B256::decode_value(&[1, 2, 3]).is_err());
    }

    #[test]
    fn storage_values_drop_leading_zeros_and_reject_over_32_bytes() {
        assert_eq!(U256::from(0x01_0000u64).encode_value(), hex!("010000"));
        assert_eq!(U256::decode_value(&hex!("010000")), Ok(U256::from(0x01_0000u64)));
        assert_eq!(U256::decode_value(&[]), Ok(U256::ZERO));
        assert_eq!(U256::decode_value(&[1; 32]), Ok(U256::from_be_bytes([1; 32])));
        assert!(U256::decode_value(&[1; 33]).is_err());
    }

    #[test]
    fn raw_and_rlp_values() {
        assert_eq!(Bytes::decode_owned(vec![0x60, 0x00]), Ok(Bytes::from_static(&[0x60, 0x00])));
        assert_eq!(EncodeValue::<NodeRlp>::encode_value(vec![0xc0]), vec![0xc0]);
        assert_eq!(&NodeRlp::decode_value(&[0xc0]).unwrap()[..], &[0xc0]);
        let receipts: &[Receipt] = &[];
        assert_eq!(receipts.encode_value(), vec![0xc0]);
        assert_eq!(Vec::<Receipt>::decode_value(&[0xc0]), Ok(vec![]));
        assert!(AccountState::decode_value(&[0xff, 0x00]).is_err());
        assert_eq!(RawKey(vec![0x80, 0x01]).encode_key(), vec![0x80, 0x01]);
        assert_eq!(RawKey::decode_key(&[]), Ok(RawKey(vec![])));
        assert_eq!(RawValue(vec![1, 2]).encode_value(), vec![1, 2]);
        assert_eq!(RawValue::decode_owned(vec![3]), Ok(RawValue(vec![3])));
    }
}
