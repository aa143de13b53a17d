//! The state every public namespace's methods share: the node, and the polling filters
//! installed through one server. Each namespace implements its methods on [`EthRpc`] in
//! its own module (`eth/`, `debug/`, `txpool.rs`, `testing.rs`); `public.rs` assembles
//! them.

use crate::eth::filter_registry::SharedFilters;
use crate::node::Node;
use std::sync::Arc;
use std::time::Duration;

/// The bounds on the EVM work one request may ask for (geth's `--rpc.gascap` and
/// `--rpc.evmtimeout`).
#[derive(Debug, Clone, Copy)]
pub struct RpcLimits {
    /// The gas a call may use (`eth_call`, `eth_estimateGas`, `eth_createAccessList`,
    /// `debug_traceCall`), and all the calls of one `eth_simulateV1` together.
    pub gas_cap: u64,
    /// How long those requests' EVM work may take (zero: no limit). Traces have their
    /// own limit, the tracer option `timeout` (geth's 5 s by default).
    pub evm_timeout: Duration,
}

impl Default for RpcLimits {
    fn default() -> Self {
        Self {
            gas_cap: ethrex_vm::call::DEFAULT_GAS_CAP,
            evm_timeout: ethrex_vm::deadline::DEFAULT_EVM_TIMEOUT,
        }
    }
}

/// The public methods' shared state.
#[derive(Clone)]
pub(crate) struct EthRpc {
    pub(crate) node: Arc<Node>,
    /// The polling filters installed through this server.
    pub(crate) filters: SharedFilters,
    /// The bounds on calls, estimates and simulations.
    pub(crate) limits: RpcLimits,
}

impl EthRpc {
    /// Methods over `node` within `limits`, with no filter installed.
    pub(crate) fn new(node: Arc<Node>, limits: RpcLimits) -> Self {
        Self { node, filters: Default::default(), limits }
    }

    /// The deadline of a call, estimate or simulation starting now.
    pub(crate) fn deadline(&self) -> ethrex_vm::deadline::Deadline {
        ethrex_vm::deadline::Deadline::after(self.limits.evm_timeout)
    }

    /// The shared node state.
    pub(crate) fn node(&self) -> &Node {
        &self.node
    }
}

/// Runs `work`, which may block, on the thread that took the request, once the runtime
/// has handed this thread's other tasks to another (tokio's `block_in_place`): a request
/// answered this way skips the wake-up of a blocking-pool thread and the one back, most
/// of a short call's latency. Outside a multi-threaded runtime it just runs `work`.
pub(crate) fn in_place<T>(work: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}
