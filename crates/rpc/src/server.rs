//! Starting the servers. The auth server rejects requests without a valid JWT with HTTP
//! 401 before they reach JSON-RPC handling.

use crate::jwt::JwtSecret;
use crate::node::Node;
use jsonrpsee::server::{Server, ServerConfig, ServerHandle};
use std::net::SocketAddr;
use std::sync::Arc;
use tower_http::validate_request::ValidateRequestHeaderLayer;

/// Engine payloads can carry large blocks; the public API gets the library's default.
const ENGINE_MAX_BODY: u32 = 128 * 1024 * 1024;
const HTTP_MAX_BODY: u32 = 10 * 1024 * 1024;

pub struct RunningServers {
    pub auth: ServerHandle,
    pub auth_addr: SocketAddr,
    pub http: Option<(ServerHandle, SocketAddr)>,
}

pub async fn start(node: Arc<Node>, auth_addr: SocketAddr, secret: JwtSecret, http_addr: Option<SocketAddr>) -> Result<RunningServers, ServerError> {
    let auth_layer = ValidateRequestHeaderLayer::custom(move |request: &mut http::Request<jsonrpsee::server::HttpBody>| {
        let header = request.headers().get(http::header::AUTHORIZATION).and_then(|v| v.to_str().ok());
        match secret.validate_header(header) {
            Ok(()) => Ok(()),
            Err(e) => {
                tracing::debug!(%e, "rejected Engine API request");
                let mut response = http::Response::new(jsonrpsee::server::HttpBody::from(format!("{{\"error\":\"{e}\"}}")));
                *response.status_mut() = http::StatusCode::UNAUTHORIZED;
                Err(response)
            }
        }
    });
    let mut engine = crate::engine::module(node.clone());
    // Consensus clients also read chain data over the auth port.
    engine.merge(crate::eth::module(node.clone())).map_err(|e| ServerError::Setup(e.to_string()))?;
    let auth_config = ServerConfig::builder().max_request_body_size(ENGINE_MAX_BODY).max_response_body_size(ENGINE_MAX_BODY).build();
    let auth_server = Server::builder()
        .set_config(auth_config)
        .set_http_middleware(tower::ServiceBuilder::new().layer(auth_layer))
        .build(auth_addr)
        .await
        .map_err(|e| ServerError::Bind { what: "Engine API", addr: auth_addr, reason: e.to_string() })?;
    let auth_addr = auth_server.local_addr().map_err(|e| ServerError::Setup(e.to_string()))?;
    let auth = auth_server.start(engine);

    let http = match http_addr {
        None => None,
        Some(addr) => {
            let server = Server::builder()
                .set_config(ServerConfig::builder().max_request_body_size(HTTP_MAX_BODY).build())
                .build(addr)
                .await
                .map_err(|e| ServerError::Bind { what: "HTTP API", addr, reason: e.to_string() })?;
            let local = server.local_addr().map_err(|e| ServerError::Setup(e.to_string()))?;
            Some((server.start(crate::eth::module(node)), local))
        }
    };
    Ok(RunningServers { auth, auth_addr, http })
}

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("binding the {what} to {addr}: {reason}")]
    Bind { what: &'static str, addr: SocketAddr, reason: String },
    #[error("setting up the RPC server: {0}")]
    Setup(String),
}
