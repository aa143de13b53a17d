#![doc = include_str!("../README.md")]

mod account;
mod code;
mod codec;
mod error;
mod key;
#[cfg(feature = "kv")]
pub mod kv;
mod node;
mod path;
mod state;
mod store;
mod trie;

pub use account::{
    stored_balance, Account, BasicData, BASIC_DATA_BALANCE_OFFSET, BASIC_DATA_CODE_SIZE_OFFSET,
    BASIC_DATA_NONCE_OFFSET,
};
pub use code::{chunkify_code, unchunkify_code, CHUNK_CODE_BYTES};
pub use codec::GROUP_DEPTHS;
pub use error::BinTrieError;
pub use key::{
    account_stem, basic_data_key, code_chunk_key, code_chunk_position, code_hash_key, join_key,
    split_key, stem, storage_slot_key, storage_slot_position, tree_key, Stem, BASIC_DATA_LEAF_KEY,
    CODE_HASH_LEAF_KEY, CODE_OFFSET, HEADER_STORAGE_OFFSET, STEM_LEN, STEM_SUBTREE_WIDTH,
};
pub use state::{AccountSpec, StateSpec};
pub use store::{MemoryStore, NodeBatch, NodeStore};
pub use trie::{BinaryTrie, TrieStats};
