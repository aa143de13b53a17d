//! The public JSON-RPC module: every namespace served without authentication (and, on
//! the Engine API port, beside the `engine_` methods), over one shared [`EthRpc`].
//! Subscriptions (`eth_subscribe`) need a WebSocket connection: the HTTP port upgrades
//! to one, and `--ws` opens a port of its own.

use crate::api::{EthApiServer, NetApiServer, TxpoolApiServer, Web3ApiServer};
use crate::debug::trace::DebugTraceApiServer;
use crate::debug::DebugRawApiServer;
use crate::eth::call::EthCallApiServer;
use crate::eth::config::EthConfigApiServer;
use crate::eth::fees::EthFeesApiServer;
use crate::eth::filters::EthFiltersApiServer;
use crate::eth::logs::EthLogsApiServer;
use crate::eth::pubsub::EthPubSubApiServer;
use crate::eth::simulate::EthSimulateApiServer;
use crate::eth::state::EthStateApiServer;
use crate::eth::transactions::EthTransactionsApiServer;
use crate::handler::{EthRpc, RpcLimits};
use crate::node::Node;
use crate::testing::TestingApiServer;
use jsonrpsee::RpcModule;
use std::sync::Arc;

/// The `eth_`, `debug_`, `txpool_`, `testing_`, `net_` and `web3_` methods over `node`,
/// calls within `limits`.
pub(crate) fn module(node: Arc<Node>, limits: RpcLimits) -> RpcModule<()> {
    let rpc = EthRpc::new(node, limits);
    let mut module = RpcModule::new(());
    let parts = [
        EthApiServer::into_rpc(rpc.clone()),
        EthTransactionsApiServer::into_rpc(rpc.clone()),
        EthFeesApiServer::into_rpc(rpc.clone()),
        EthLogsApiServer::into_rpc(rpc.clone()),
        EthFiltersApiServer::into_rpc(rpc.clone()),
        EthConfigApiServer::into_rpc(rpc.clone()),
        EthCallApiServer::into_rpc(rpc.clone()),
        EthStateApiServer::into_rpc(rpc.clone()),
        EthSimulateApiServer::into_rpc(rpc.clone()),
        EthPubSubApiServer::into_rpc(rpc.clone()),
        DebugTraceApiServer::into_rpc(rpc.clone()),
        DebugRawApiServer::into_rpc(rpc.clone()),
        TestingApiServer::into_rpc(rpc.clone()),
        NetApiServer::into_rpc(rpc.clone()),
        TxpoolApiServer::into_rpc(rpc.clone()),
        Web3ApiServer::into_rpc(rpc),
    ];
    for part in parts {
        // Each method is declared once, in one trait: merging cannot find a name twice.
        module.merge(part).expect("method names are unique");
    }
    module
}
