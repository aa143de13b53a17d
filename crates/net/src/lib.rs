#![doc = include_str!("../README.md")]

pub mod discv4;
pub mod enode;
pub mod eth;
pub mod rlpx;

pub use enode::{load_or_create_node_key, NodeId, NodeRecord};
