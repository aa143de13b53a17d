//! Types shared by every stage of the pipeline: blocks as they travel with their
//! block-level access list, the chain configuration (fork schedule, blob schedule) and
//! the account record stored in the state trie.

pub mod chain;
pub mod types;

pub use chain::{ChainConfig, Fork};
pub use types::*;
