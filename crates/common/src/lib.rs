#![doc = include_str!("../README.md")]

mod chain;
mod fork;
mod networks;
mod types;

pub use chain::{ChainConfig, ChainConfigError};
pub use fork::{Activation, Fork};
pub use networks::Network;
pub use types::*;

/// The accounts the DAO fork drained (EIP-779), one address a line after `#` comments.
pub const DAO_DRAIN_LIST: &str = include_str!("dao_drain.txt");
