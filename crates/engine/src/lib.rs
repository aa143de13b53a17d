//! The Engine API's logic, without its transport: what the node does when its consensus
//! client hands it a payload, names a head, or asks for a payload or for blobs. The RPC
//! crate parses requests and serves the answers; this crate decides them, so its rules
//! are tested without HTTP.
//!
//! - `node`: the state the handlers share (the chain, side blocks not yet executed,
//!   verdicts on invalid blocks, built payloads, the transaction pool) and the pool kept
//!   in step with every new head;
//! - `new_payload`, `fork_choice`: the two calls that move the chain;
//! - `build`: payloads built from the pool, with their blobs bundle and value;
//! - `blobs`, `bodies`: what the consensus client reads back;
//! - `dev`: blocks a one-node development chain makes for itself;
//! - `error`: why a call failed, with the Engine API's error codes.

mod blobs;
mod bodies;
mod build;
mod dev;
mod error;
mod fork_choice;
mod new_payload;
pub mod node;
mod testing;

pub use blobs::{get_blobs_v1, get_blobs_v2, get_blobs_v3, MAX_BLOB_REQUEST};
pub use bodies::{bodies_by_hash, bodies_by_range, MAX_PAYLOAD_BODIES};
pub use build::{build_from_pool, built_payload, bundle_v1, bundle_v2, Sidecars};
pub use error::EngineError;
pub use fork_choice::fork_choice;
pub use new_payload::{fork_of, new_payload, NewPayload};
pub use node::{pool_head, BuiltPayload, HeadAccounts, Node};
pub use testing::build_block_for_testing;
