//! The node's shared state behind both RPC servers: the blockchain, blocks received on a
//! side branch (not yet executed), verdicts on invalid blocks, and built payloads.

use alloy_primitives::B256;
use alloy_rpc_types_engine::PayloadId;
use ethrex_blockchain::Blockchain;
use ethrex_common::BlockWithBal;
use parking_lot::Mutex;
use std::collections::HashMap;

/// A payload built for `engine_getPayload`.
#[derive(Clone)]
pub struct BuiltPayload {
    pub block: BlockWithBal,
    pub requests: Vec<alloy_primitives::Bytes>,
}

pub struct Node {
    pub chain: Blockchain,
    /// Blocks whose parent was not the head when they arrived; executed when a fork
    /// choice makes their branch canonical.
    pub pending: Mutex<HashMap<B256, BlockWithBal>>,
    /// Blocks found invalid: hash -> (latest valid ancestor, reason).
    pub invalid: Mutex<HashMap<B256, (B256, String)>>,
    pub payloads: Mutex<HashMap<PayloadId, BuiltPayload>>,
    /// Serialises everything that moves the head or writes blocks.
    pub write_lock: Mutex<()>,
}

impl Node {
    pub fn new(chain: Blockchain) -> Self {
        Self {
            chain,
            pending: Mutex::new(HashMap::new()),
            invalid: Mutex::new(HashMap::new()),
            payloads: Mutex::new(HashMap::new()),
            write_lock: Mutex::new(()),
        }
    }
}
