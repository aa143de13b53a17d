//! Starting the servers. The auth server rejects requests without a valid JWT with HTTP
//! 401 before they reach JSON-RPC handling.

use crate::handler::RpcLimits;
use crate::jwt::JwtSecret;
use crate::node::Node;
use jsonrpsee::server::{BatchRequestConfig, Server, ServerConfig, ServerHandle};
use jsonrpsee::RpcModule;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tower_http::timeout::RequestBodyTimeoutLayer;
use tower_http::validate_request::ValidateRequestHeaderLayer;

/// Engine payloads can carry large blocks; the public API gets the library's default.
const ENGINE_MAX_BODY: u32 = 128 * 1024 * 1024;
const HTTP_MAX_BODY: u32 = 10 * 1024 * 1024;
/// A block's receipts can be tens of MiB (the execution-apis chain has a block whose
/// receipts take 21 MiB); geth sets no limit on a single answer, this is a generous bound.
const HTTP_MAX_RESPONSE: u32 = 128 * 1024 * 1024;
/// The most calls one batch may hold (geth's `--rpc.batch-request-limit`); a larger batch
/// is answered with one error (-32010) and none of its calls run.
const BATCH_LIMIT: u32 = 1_000;
/// How long a request's body may take to arrive once its headers have: a client that
/// sends headers and then stalls would otherwise hold one of the server's request slots
/// (100 at most) for as long as it likes. Real payloads (a few MiB) arrive far sooner.
const BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// Subscription ids as geth writes them, `0x` and 32 hex digits of randomness: clients
/// (web3.py among them) take an id for a string, and fail on jsonrpsee's default
/// integers.
#[derive(Debug)]
struct HexSubscriptionIds;

impl jsonrpsee::core::traits::IdProvider for HexSubscriptionIds {
    fn next_id(&self) -> jsonrpsee::types::SubscriptionId<'static> {
        let bytes: [u8; 16] = rand::random();
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        jsonrpsee::types::SubscriptionId::Str(format!("0x{hex}").into())
    }
}

/// The servers [`start`] launched; [`serve`] runs them until shutdown.
pub struct RunningServers {
    /// The JWT-authenticated server (Engine API plus the `eth_` methods).
    pub auth: ServerHandle,
    /// The address the authenticated server listens on (the bound port when 0 was asked for).
    pub auth_addr: SocketAddr,
    /// The public `eth_` server and the address it listens on, when one was requested.
    pub http: Option<(ServerHandle, SocketAddr)>,
    /// The WebSocket-only server (`--ws`) and the address it listens on, when requested.
    pub ws: Option<(ServerHandle, SocketAddr)>,
    /// The threads the Engine API runs on, apart from the public API's and the network's.
    pub engine_runtime: EngineRuntime,
}

/// The Engine API's own runtime (two worker threads): however busy the public API or
/// the peers keep the node's main runtime, a consensus client's request is picked up at
/// once. Dropped without waiting for its tasks (the servers are stopped before).
pub struct EngineRuntime(Option<tokio::runtime::Runtime>);

impl EngineRuntime {
    fn handle(&self) -> &tokio::runtime::Handle {
        self.0.as_ref().expect("the runtime is taken only on drop").handle()
    }
}

impl Drop for EngineRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// Binds and starts the Engine API server on `auth_addr` (requests without a valid JWT
/// signed with `secret` get HTTP 401) and, with `http_addr`, the public `eth_` server;
/// both serve calls within `limits`.
/// Port 0 binds any free port; the actual addresses are in the result.
///
/// # Errors
/// [`ServerError::Bind`] when an address cannot be bound, [`ServerError::Setup`] when the
/// RPC modules cannot be merged or a bound address cannot be read.
pub async fn start(
    node: Arc<Node>,
    auth_addr: SocketAddr,
    secret: JwtSecret,
    http_addr: Option<SocketAddr>,
    ws_addr: Option<SocketAddr>,
    limits: RpcLimits,
) -> Result<RunningServers, ServerError> {
    let engine = auth_module(node.clone(), limits)?;
    let engine_runtime = EngineRuntime(Some(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("ethrex-engine")
            .enable_all()
            .build()
            .map_err(|e| ServerError::Setup(format!("the Engine API's runtime: {e}")))?,
    ));
    let (auth, auth_addr) = engine_runtime
        .handle()
        .spawn(start_auth(engine, auth_addr, secret))
        .await
        .map_err(|e| ServerError::Setup(format!("starting the Engine API: {e}")))??;

    let http = match http_addr {
        None => None,
        Some(addr) => Some(start_public(node.clone(), addr, "HTTP API", false, limits).await?),
    };
    let ws = match ws_addr {
        None => None,
        Some(addr) => Some(start_public(node, addr, "WebSocket API", true, limits).await?),
    };
    Ok(RunningServers { auth, auth_addr, http, ws, engine_runtime })
}

/// The public methods on `addr`: HTTP (which also upgrades to WebSocket), or WebSocket
/// only (`ws_only`, the `--ws` port).
async fn start_public(
    node: Arc<Node>,
    addr: SocketAddr,
    what: &'static str,
    ws_only: bool,
    limits: RpcLimits,
) -> Result<(ServerHandle, SocketAddr), ServerError> {
    let mut config = ServerConfig::builder()
        .max_request_body_size(HTTP_MAX_BODY)
        .max_response_body_size(HTTP_MAX_RESPONSE)
        .set_batch_request_config(BatchRequestConfig::Limit(BATCH_LIMIT));
    config = config.set_id_provider(HexSubscriptionIds);
    if ws_only {
        config = config.ws_only();
    }
    let server = Server::builder()
        .set_config(config.build())
        .set_rpc_middleware(
            jsonrpsee::server::middleware::rpc::RpcServiceBuilder::new()
                .layer(crate::params::GethParamErrorsLayer),
        )
        .set_http_middleware(
            tower::ServiceBuilder::new().layer(RequestBodyTimeoutLayer::new(BODY_TIMEOUT)),
        )
        .build(addr)
        .await
        .map_err(|e| ServerError::Bind { what, addr, reason: e.to_string() })?;
    let local = server.local_addr().map_err(|e| ServerError::Setup(e.to_string()))?;
    let mut module = crate::public::module(node.clone(), limits);
    module.merge(crate::admin::module(node)).map_err(|e| ServerError::Setup(e.to_string()))?;
    Ok((server.start(module), local))
}

/// Binds and starts the Engine API server behind its JWT check; run on the Engine API's
/// runtime, whose threads then serve it.
async fn start_auth(
    engine: RpcModule<()>,
    auth_addr: SocketAddr,
    secret: JwtSecret,
) -> Result<(ServerHandle, SocketAddr), ServerError> {
    #[allow(
        clippy::result_large_err,
        reason = "tower-http's `custom` validator returns the rejection `Response` by value"
    )]
    let auth_layer = ValidateRequestHeaderLayer::custom(
        move |request: &mut http::Request<jsonrpsee::server::HttpBody>| {
            let header =
                request.headers().get(http::header::AUTHORIZATION).and_then(|v| v.to_str().ok());
            match secret.validate_header(header) {
                Ok(()) => Ok(()),
                Err(e) => {
                    tracing::debug!(%e, "rejected Engine API request");
                    let mut response = http::Response::new(jsonrpsee::server::HttpBody::from(
                        format!("{{\"error\":\"{e}\"}}"),
                    ));
                    *response.status_mut() = http::StatusCode::UNAUTHORIZED;
                    Err(response)
                }
            }
        },
    );
    let auth_config = ServerConfig::builder()
        .max_request_body_size(ENGINE_MAX_BODY)
        .max_response_body_size(ENGINE_MAX_BODY)
        .set_batch_request_config(BatchRequestConfig::Limit(BATCH_LIMIT))
        .build();
    let auth_server = Server::builder()
        .set_config(auth_config)
        .set_rpc_middleware(
            jsonrpsee::server::middleware::rpc::RpcServiceBuilder::new()
                .layer(crate::params::GethParamErrorsLayer),
        )
        .set_http_middleware(
            tower::ServiceBuilder::new()
                .layer(auth_layer)
                .layer(RequestBodyTimeoutLayer::new(BODY_TIMEOUT)),
        )
        .build(auth_addr)
        .await
        .map_err(|e| ServerError::Bind {
            what: "Engine API",
            addr: auth_addr,
            reason: e.to_string(),
        })?;
    let auth_addr = auth_server.local_addr().map_err(|e| ServerError::Setup(e.to_string()))?;
    let auth = auth_server.start(engine);
    Ok((auth, auth_addr))
}

/// The methods the Engine API port serves (behind its JWT check): `engine_*` and, as
/// consensus clients also read chain data there, `eth_*` / `net_*` / `web3_*`. Public so
/// they can be driven without HTTP (the fuzz target of the handlers does).
///
/// # Errors
/// [`ServerError::Setup`] when two modules define the same method.
pub fn auth_methods(node: Arc<Node>) -> Result<RpcModule<()>, ServerError> {
    auth_module(node, RpcLimits::default())
}

/// [`auth_methods`], calls within `limits`.
fn auth_module(node: Arc<Node>, limits: RpcLimits) -> Result<RpcModule<()>, ServerError> {
    let mut methods = RpcModule::new(());
    methods
        .merge(crate::engine::module(node.clone()))
        .map_err(|e| ServerError::Setup(e.to_string()))?;
    methods
        .merge(crate::public::module(node, limits))
        .map_err(|e| ServerError::Setup(e.to_string()))?;
    Ok(methods)
}

/// Serves until `shutdown` resolves (a clean stop: everything committed is written to
/// disk first) or a background database write fails. After a failed write the node must
/// not go on: the blocks it would keep answering about exist only in memory and vanish on
/// restart. So the servers stop and the error is returned; the binary exits non-zero.
pub async fn serve(
    node: Arc<Node>,
    servers: RunningServers,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), ServerError> {
    let watch = node.chain.store.failure_watch();
    let (failed_tx, failed_rx) = tokio::sync::oneshot::channel();
    // The watch blocks on a condition variable; a plain thread keeps it off the runtime
    // (it holds no store handle, so it never keeps the database open).
    std::thread::Builder::new()
        .name("ethrex-persist-watch".into())
        .spawn(move || {
            let _ = failed_tx.send(watch.wait());
        })
        .map_err(|e| ServerError::Setup(e.to_string()))?;
    let failure = tokio::select! {
        _ = shutdown => None,
        reason = failed_rx => reason.ok(),
    };
    let _ = servers.auth.stop();
    for (h, _) in servers.http.iter().chain(&servers.ws) {
        let _ = h.stop();
    }
    servers.auth.stopped().await;
    for (h, _) in servers.http.into_iter().chain(servers.ws) {
        h.stopped().await;
    }
    if let Some(reason) = failure {
        return Err(ServerError::Persistence(reason));
    }
    node.chain.store.flush().map_err(|e| ServerError::Persistence(e.to_string()))
}

/// Why the RPC servers could not start or stopped abnormally.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// A database write failed (the store's message); the servers were stopped.
    #[error("writing a block to the database failed ({0}); stopped instead of serving blocks that would be lost on restart. The database holds every block up to the last one written; restart the node to resume from there")]
    Persistence(String),
    /// A server could not listen on its address.
    #[error("binding the {what} to {addr}: {reason}")]
    Bind {
        /// Which server: `"Engine API"` or `"HTTP API"`.
        what: &'static str,
        /// The address asked for.
        addr: SocketAddr,
        /// The error from binding.
        reason: String,
    },
    /// Building the servers failed (method registration, reading the bound address, or
    /// spawning the watch thread).
    #[error("setting up the RPC server: {0}")]
    Setup(String),
}
