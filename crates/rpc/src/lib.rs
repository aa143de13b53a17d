#![doc = include_str!("../README.md")]

mod admin;
pub mod api;
pub mod block;
mod dev;
mod engine;
mod eth;
pub mod jwt;
pub mod node;
pub mod server;
mod txpool;

pub use node::Node;
