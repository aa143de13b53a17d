//! The node's RPC servers: the Engine API (JWT-authenticated) and the public `eth_` API,
//! both JSON-RPC over HTTP on jsonrpsee, plus the Prometheus metrics endpoint.

pub mod engine;
pub mod eth;
pub mod jwt;
pub mod node;
pub mod server;

pub use node::Node;
