//! The `admin_` namespace over the node's devp2p network.

use crate::api::AdminApiServer;
use crate::node::Node;
use jsonrpsee::core::RpcResult;
use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::RpcModule;
use serde_json::{json, Value};
use std::sync::Arc;

/// JSON-RPC "invalid params".
const INVALID_PARAMS: i32 = -32602;
/// A server error: the method needs the network, which is not running.
const NO_NETWORK: i32 = -32000;

#[derive(Clone)]
struct AdminRpc {
    node: Arc<Node>,
}

impl AdminRpc {
    fn network(&self) -> Result<&ethrex_net::Network, ErrorObjectOwned> {
        self.node.network.get().ok_or_else(|| {
            ErrorObjectOwned::owned(NO_NETWORK, "the p2p network is not running", None::<()>)
        })
    }
}

impl AdminApiServer for AdminRpc {
    fn node_info(&self) -> RpcResult<Value> {
        let record = self.network()?.node_record();
        Ok(json!({
            "enode": record.to_string(),
            "id": record.id.hash(),
            "ip": record.ip.to_string(),
            "listenAddr": record.tcp_addr().to_string(),
            "name": format!("ethrex/v{}", env!("CARGO_PKG_VERSION")),
            "ports": { "discovery": record.udp_port, "listener": record.tcp_port },
        }))
    }

    fn add_peer(&self, enode: String) -> RpcResult<bool> {
        let record: ethrex_net::NodeRecord = enode.parse().map_err(|e| {
            ErrorObjectOwned::owned(INVALID_PARAMS, format!("invalid enode: {e}"), None::<()>)
        })?;
        self.network()?.add_peer(record);
        Ok(true)
    }

    fn peers(&self) -> RpcResult<Vec<Value>> {
        Ok(self
            .network()?
            .peers()
            .into_iter()
            .map(|p| {
                json!({
                    "enode": format!("enode://{}@{}", p.id, p.addr),
                    "id": p.id.hash(),
                    "name": p.client,
                    "network": { "remoteAddress": p.addr.to_string(), "inbound": p.inbound },
                    "protocols": { "eth": {
                        "version": p.eth_version,
                        "head": p.head.1,
                        "headNumber": p.head.0,
                    } },
                })
            })
            .collect())
    }
}

pub(crate) fn module(node: Arc<Node>) -> RpcModule<()> {
    let mut module = RpcModule::new(());
    module.merge(AdminApiServer::into_rpc(AdminRpc { node })).expect("method names are unique");
    module
}
