#![doc = include_str!("../README.md")]

mod chain;
mod types;

pub use chain::{ChainConfig, Fork};
pub use types::*;
