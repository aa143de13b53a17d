#![doc = include_str!("../README.md")]

pub mod discv4;
pub mod enode;
pub mod eth;
pub mod host;
pub mod network;
pub mod rlpx;
pub mod sync;

pub use enode::{load_or_create_node_key, NodeId, NodeRecord};
pub use host::ChainHost;
pub use network::{Network, NetworkConfig, PeerInfo};
pub use sync::{SyncConfig, SyncOutcome, SyncProgress};
