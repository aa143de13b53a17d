//! The tables, each declared once: its on-disk name, its key type and its value type.
//!
//! The declaration below produces both views of a table: the runtime `Table` the
//! backends open and index by, and a marker type (`tables::Headers`, ...) implementing
//! `TypedTable`, through which the store encodes keys and values (`codec`) and reports
//! bytes that do not decode as corruption of that table.

use crate::changeset::ChangeSet;
use crate::codec::{CodecError, Key, MetaKey, RawKey, RawValue, TriePath, TxPosition, Value};
use crate::StoreError;
use alloy_primitives::{Address, Bytes, B256, U256};
use ethrex_common::{AccountState, BlockAccessList, BlockBody, Header, Receipt};
use ethrex_trie::NodeRlp;

/// A table with its key and value types.
pub trait TypedTable {
    /// The runtime table the backends know.
    const TABLE: Table;
    /// The on-disk name (MDBX table, RocksDB column family).
    const NAME: &'static str = Self::TABLE.name();
    /// What the table is keyed by.
    type Key: Key;
    /// What the table holds.
    type Value: Value;
}

/// Declares every table: the `Table` enum (in on-disk order), its `ALL` list, `name` and
/// `index`, and one `TypedTable` marker type per table.
macro_rules! tables {
    ($($(#[doc = $doc:literal])* $table:ident($name:literal): $key:ty => $value:ty;)*) => {
        /// Every table the client keeps. The variant order is the on-disk table list order.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Table {
            $($(#[doc = $doc])* $table,)*
        }

        impl Table {
            /// Every table, in on-disk order.
            pub const ALL: [Table; [$(Table::$table),*].len()] = [$(Table::$table),*];

            /// The on-disk name (MDBX table, RocksDB column family).
            pub const fn name(self) -> &'static str {
                match self {
                    $(Table::$table => $name,)*
                }
            }

            /// The table's position in `ALL`, for per-table arrays.
            pub const fn index(self) -> usize {
                self as usize
            }
        }

        $(
            $(#[doc = $doc])*
            #[derive(Debug, Clone, Copy)]
            pub struct $table;

            impl TypedTable for $table {
                const TABLE: Table = Table::$table;
                type Key = $key;
                type Value = $value;
            }
        )*
    };
}

tables! {
    /// block hash -> RLP header
    Headers("headers"): B256 => Header;
    /// block hash -> block number (8 bytes big-endian)
    HeaderNumbers("header_numbers"): B256 => u64;
    /// block number (8 bytes BE) -> canonical block hash
    CanonicalHashes("canonical_hashes"): u64 => B256;
    /// block hash -> RLP body (transactions, ommers, withdrawals)
    Bodies("bodies"): B256 => BlockBody;
    /// block hash -> RLP list of EIP-2718 receipts
    Receipts("receipts"): B256 => Vec<Receipt>;
    /// block hash -> RLP block access list (EIP-7928)
    Bals("bals"): B256 => BlockAccessList;
    /// address -> RLP trie account (flat state of the head block)
    Accounts("accounts"): Address => AccountState;
    /// address ++ slot (32 bytes BE) -> value (big-endian, no leading zeros)
    Storage("storage"): (Address, U256) => U256;
    /// code hash -> bytecode
    Code("code"): B256 => Bytes;
    /// path (one nibble per byte) -> RLP node of the head state's account trie,
    /// overwritten in place as the state changes
    AccountTrie("account_trie"): TriePath => NodeRlp;
    /// hashed address ++ path -> RLP node of that account's storage trie (head state)
    StorageTrie("storage_trie"): (B256, TriePath) => NodeRlp;
    /// block hash -> change set: the values the block overwrote, to unwind it
    ChangeSets("change_sets"): B256 => ChangeSet;
    /// fixed keys -> chain metadata (head and genesis block hashes)
    Meta("meta"): MetaKey => B256;
    /// raw key -> raw value, never read or written by the node: room for what an
    /// extension keeps beside the node's state, in the same atomic writes (e.g. a second
    /// state commitment's nodes)
    Extension("extension"): RawKey => RawValue;
    /// block hash -> total difficulty: the sum of the difficulties of the block and its
    /// ancestors (the merge is decided by it; constant after the merge)
    TotalDifficulties("total_difficulties"): B256 => U256;
    /// transaction hash -> number of the canonical block that included it and the
    /// transaction's index there, written when the block is committed; a reorg does not
    /// erase it, so a reader checks that the canonical block at that number holds the
    /// transaction
    TxNumbers("tx_numbers"): B256 => TxPosition;
}

/// One decoded entry of table `T`.
pub type Row<T> = (<T as TypedTable>::Key, <T as TypedTable>::Value);

/// A table's stored bytes are not what it declares.
pub(crate) fn corrupt<T: TypedTable>(reason: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt { table: T::NAME, reason: reason.to_string() }
}

fn codec_error<T: TypedTable>(e: CodecError) -> StoreError {
    corrupt::<T>(e.0)
}

/// Decodes a stored key of table `T`.
pub(crate) fn decode_key<T: TypedTable>(bytes: &[u8]) -> Result<T::Key, StoreError> {
    T::Key::decode_key(bytes).map_err(codec_error::<T>)
}

/// Decodes a stored value of table `T`.
pub(crate) fn decode_value<T: TypedTable>(bytes: &[u8]) -> Result<T::Value, StoreError> {
    T::Value::decode_value(bytes).map_err(codec_error::<T>)
}

/// Decodes a stored value of table `T` read into its own buffer.
pub(crate) fn decode_owned<T: TypedTable>(bytes: Vec<u8>) -> Result<T::Value, StoreError> {
    T::Value::decode_owned(bytes).map_err(codec_error::<T>)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::WriteBatch;

    #[test]
    fn markers_match_the_runtime_tables() {
        assert_eq!(Table::ALL.len(), 16);
        assert_eq!(TxNumbers::TABLE.index(), 15);
        assert_eq!(TotalDifficulties::NAME, "total_difficulties");
        assert_eq!(TotalDifficulties::TABLE.index(), 14);
        assert_eq!(Headers::TABLE, Table::Headers);
        assert_eq!(Headers::NAME, "headers");
        assert_eq!(AccountTrie::NAME, "account_trie");
        assert_eq!(StorageTrie::NAME, "storage_trie");
        assert_eq!(Meta::TABLE.index(), 12);
        assert_eq!(Extension::NAME, "extension");
        assert_eq!(Extension::TABLE.index(), 13);
    }

    #[test]
    fn typed_puts_write_the_declared_bytes() {
        let address = Address::repeat_byte(0x11);
        let mut batch = WriteBatch::new();
        batch.put_entry::<Storage>(&(address, U256::from(5u64)), U256::from(0x0100u64));
        batch.put_entry::<CanonicalHashes>(&1, B256::repeat_byte(0x0b));
        batch.put_entry::<Meta>(&MetaKey::Head, B256::repeat_byte(0x0b));
        batch.delete_entry::<Accounts>(&address);
        let mut slot_key = vec![0x11; 20];
        slot_key.extend_from_slice(&[0; 31]);
        slot_key.push(5);
        assert_eq!(
            batch.ops,
            vec![
                (Table::Storage, slot_key, Some(vec![0x01, 0x00])),
                (Table::CanonicalHashes, vec![0, 0, 0, 0, 0, 0, 0, 1], Some(vec![0x0b; 32])),
                (Table::Meta, b"head".to_vec(), Some(vec![0x0b; 32])),
                (Table::Accounts, vec![0x11; 20], None),
            ]
        );
    }

    #[test]
    fn corrupt_bytes_name_their_table() {
        let err = decode_value::<HeaderNumbers>(&[1, 2, 3]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "corrupt header_numbers entry: block number is 3 bytes, expected 8"
        );
        let err = decode_key::<Storage>(&[0; 51]).unwrap_err();
        assert!(matches!(err, StoreError::Corrupt { table: "storage", .. }), "{err}");
        let err = decode_value::<Meta>(&[0; 31]).unwrap_err();
        assert!(matches!(err, StoreError::Corrupt { table: "meta", .. }), "{err}");
    }
}
