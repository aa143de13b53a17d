//! The state every public namespace's methods share: the node, and the polling filters
//! installed through one server. Each namespace implements its methods on [`EthRpc`] in
//! its own module (`eth/`, `debug/`, `txpool.rs`, `testing.rs`); `public.rs` assembles
//! them.

use crate::eth::filter_registry::SharedFilters;
use crate::node::Node;
use std::sync::Arc;

/// The public methods' shared state.
#[derive(Clone)]
pub(crate) struct EthRpc {
    pub(crate) node: Arc<Node>,
    /// The polling filters installed through this server.
    pub(crate) filters: SharedFilters,
}

impl EthRpc {
    /// Methods over `node`, with no filter installed.
    pub(crate) fn new(node: Arc<Node>) -> Self {
        Self { node, filters: Default::default() }
    }

    /// The shared node state.
    pub(crate) fn node(&self) -> &Node {
        &self.node
    }
}
