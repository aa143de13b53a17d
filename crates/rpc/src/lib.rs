#![doc = include_str!("../README.md")]

mod admin;
pub mod api;
pub mod block;
mod debug;
mod engine;
pub mod error;
mod eth;
mod handler;
pub mod jwt;
pub mod params;
mod public;
pub mod receipt;
pub mod server;
mod testing;
mod txpool;

/// The node state the servers share (the engine crate's).
pub use ethrex_engine::{node, Node};
pub use handler::RpcLimits;
