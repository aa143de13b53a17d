//! The running network: the RLPx listener, dialing static peers and discovered nodes,
//! the bounded peer set with its bans, serving, and the handle the node and its RPC use.

mod fetcher;
mod peer;
mod peers;
mod serve;
mod transactions;

pub use peer::{
    Peer, PeerRange, RequestError, MAX_INFLIGHT_PER_PEER, PING_INTERVAL, PONG_TIMEOUT,
    REQUEST_TIMEOUT, STATUS_TIMEOUT,
};
pub use peers::{Offence, PeerSet, BAN_DURATION, MAX_STALLS};

use crate::discv4::Discovery;
use crate::host::ChainHost;
use crate::rlpx::{Capability, Hello, Session};
use crate::sync::{SyncConfig, SyncProgress, Syncer};
use crate::{NodeId, NodeRecord};
use alloy_primitives::B256;
use parking_lot::Mutex;
use secp256k1::SecretKey;
use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};

/// How often static peers that are not connected are dialed again.
pub const REDIAL_INTERVAL: Duration = Duration::from_secs(5);

/// The network's settings.
#[derive(Debug, Clone)]
pub struct NetworkConfig {
    /// The node key (`load_or_create_node_key`).
    pub key: SecretKey,
    /// Where RLPx listens (TCP) and discovery runs (UDP, same port).
    pub listen: SocketAddr,
    /// Peers dialed at start and redialed whenever they are not connected.
    pub static_peers: Vec<NodeRecord>,
    /// Discovery's entry points.
    pub bootnodes: Vec<NodeRecord>,
    /// Whether to run discovery (discv4) and dial the nodes it finds.
    pub discovery: bool,
    /// The most peers connected at once (inbound and outbound).
    pub max_peers: usize,
    /// Our client id in Hello.
    pub client_id: String,
    /// The sync's settings.
    pub sync: SyncConfig,
}

impl NetworkConfig {
    /// Settings with a key and a listen address; no peers, discovery off, 25 peers.
    pub fn new(key: SecretKey, listen: SocketAddr) -> Self {
        Self {
            key,
            listen,
            static_peers: Vec::new(),
            bootnodes: Vec::new(),
            discovery: false,
            max_peers: 25,
            client_id: format!("ethrex/v{}", env!("CARGO_PKG_VERSION")),
            sync: SyncConfig::default(),
        }
    }
}

/// What a peer looks like to `admin_peers`.
#[derive(Debug, Clone)]
pub struct PeerInfo {
    /// Its enode id.
    pub id: NodeId,
    /// Its client id.
    pub client: String,
    /// Its address.
    pub addr: SocketAddr,
    /// Whether it dialed us.
    pub inbound: bool,
    /// The eth version spoken.
    pub eth_version: u32,
    /// Its announced head.
    pub head: (u64, B256),
}

pub(crate) struct Inner {
    pub(crate) config: NetworkConfig,
    pub(crate) host: Arc<dyn ChainHost>,
    pub(crate) peers: PeerSet,
    pub(crate) local: NodeRecord,
    pub(crate) network_id: u64,
    pub(crate) genesis_hash: B256,
    pub(crate) genesis_time: u64,
    static_peers: Mutex<Vec<NodeRecord>>,
    dialing: Mutex<HashSet<NodeId>>,
    discovery: Mutex<Option<Discovery>>,
    pub(crate) syncer: Syncer,
    /// Announced transactions being fetched, and from whom.
    pub(crate) fetcher: fetcher::TxFetcher,
    /// The head last announced to the peers.
    announced: Mutex<B256>,
    /// The runtime the network started on: its handle's methods may be called from any
    /// thread.
    runtime: tokio::runtime::Handle,
}

/// The network of a running node: a cheap, cloneable handle. Dropping every handle does
/// not stop the tasks; they end with the runtime.
#[derive(Clone)]
pub struct Network {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Network {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Network").field("local", &self.inner.local.to_string()).finish()
    }
}

/// Why the network could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The listener or discovery socket could not be bound.
    #[error("binding {0}: {1}")]
    Bind(SocketAddr, std::io::Error),
    /// The store has no genesis.
    #[error("the database holds no chain (no genesis)")]
    NoGenesis,
    /// Reading the store failed.
    #[error("store: {0}")]
    Store(#[from] ethrex_storage::StoreError),
}

impl Network {
    /// Binds the listener, starts accepting, dialing and (if configured) discovery, and
    /// the sync task. Must run inside a tokio runtime.
    pub async fn start(
        config: NetworkConfig,
        host: Arc<dyn ChainHost>,
    ) -> Result<Self, StartError> {
        let store = &host.chain().store;
        let genesis_hash = store.canonical_hash(0)?.ok_or(StartError::NoGenesis)?;
        let genesis = store.header(&genesis_hash)?.ok_or(StartError::NoGenesis)?;
        let listener = TcpListener::bind(config.listen)
            .await
            .map_err(|e| StartError::Bind(config.listen, e))?;
        let bound = listener.local_addr().map_err(|e| StartError::Bind(config.listen, e))?;
        let ip = match bound.ip() {
            ip if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            ip => ip,
        };
        let mut local = NodeRecord {
            id: NodeId::from_secret_key(&config.key),
            ip,
            tcp_port: bound.port(),
            udp_port: bound.port(),
        };
        let discovery = if config.discovery {
            let bind = SocketAddr::new(bound.ip(), bound.port());
            let d = Discovery::spawn(config.key, bind, local, config.bootnodes.clone())
                .await
                .map_err(|e| StartError::Bind(bind, e))?;
            local.udp_port = d.local_record().udp_port;
            Some(d)
        } else {
            None
        };
        let network_id = host.chain().config.chain_id();
        let inner = Arc::new(Inner {
            static_peers: Mutex::new(config.static_peers.clone()),
            syncer: Syncer::new(config.sync.clone()),
            fetcher: Default::default(),
            config,
            host,
            peers: PeerSet::default(),
            local,
            network_id,
            genesis_hash,
            genesis_time: genesis.timestamp,
            dialing: Mutex::new(HashSet::new()),
            discovery: Mutex::new(None),
            announced: Mutex::new(B256::ZERO),
            runtime: tokio::runtime::Handle::current(),
        });
        let discovered = discovery.as_ref().map(|d| d.subscribe());
        *inner.discovery.lock() = discovery;
        tokio::spawn(accept_loop(inner.clone(), listener));
        tokio::spawn(redial_loop(inner.clone()));
        if let Some(mut discovered) = discovered {
            let inner = inner.clone();
            tokio::spawn(async move {
                while let Some(node) = discovered.recv().await {
                    if inner.peers.len() < inner.config.max_peers {
                        spawn_dial(inner.clone(), node);
                    }
                }
            });
        }
        crate::sync::spawn(inner.clone());
        tracing::info!(enode = %inner.local, "p2p listening");
        Ok(Self { inner })
    }

    /// Our enode.
    pub fn node_record(&self) -> NodeRecord {
        self.inner.local
    }

    /// Adds a static peer: dialed now and redialed whenever it is not connected.
    pub fn add_peer(&self, node: NodeRecord) {
        {
            let mut statics = self.inner.static_peers.lock();
            if !statics.iter().any(|p| p.id == node.id) {
                statics.push(node);
            }
        }
        spawn_dial(self.inner.clone(), node);
    }

    /// The connected peers.
    pub fn peers(&self) -> Vec<PeerInfo> {
        self.inner
            .peers
            .all()
            .into_iter()
            .map(|p| {
                let range = p.range();
                PeerInfo {
                    id: p.id,
                    client: p.client.clone(),
                    addr: p.addr,
                    inbound: p.inbound,
                    eth_version: p.version,
                    head: (range.latest, range.latest_hash),
                }
            })
            .collect()
    }

    /// Syncs to the block `hash` (and follows a later target if one is set meanwhile).
    pub fn sync_to(&self, hash: B256) {
        self.inner.syncer.set_target(hash);
    }

    /// The sync's progress while it runs.
    pub fn sync_progress(&self) -> Option<SyncProgress> {
        self.inner.syncer.progress()
    }

    /// Resolves when the sync has no target left to reach (its last target imported, or
    /// the sync stopped on a bad block); the outcome of the last run.
    pub async fn sync_idle(&self) -> crate::sync::SyncOutcome {
        self.inner.syncer.idle().await
    }

    /// Tells every peer our new head (BlockRangeUpdate), after the head moved.
    pub fn announce_head(&self) {
        announce_head(&self.inner);
    }

    /// Passes transactions the pool just took (from RPC, say) on to the peers.
    pub fn broadcast_transactions(&self, txs: Vec<ethrex_common::Transaction>) {
        transactions::propagate(&self.inner, txs, None);
    }
}

/// Sends our head to every peer, in the background.
pub(crate) fn announce_head(inner: &Arc<Inner>) {
    let inner = inner.clone();
    inner.clone().runtime.spawn(async move {
        let Ok(Some(head)) = inner.host.chain().store.head_header() else { return };
        let hash = head.hash_slow();
        if std::mem::replace(&mut *inner.announced.lock(), hash) == hash {
            return;
        }
        let update = crate::eth::BlockRangeUpdate {
            earliest_block: 0,
            latest_block: head.number,
            latest_block_hash: hash,
        };
        for peer in inner.peers.all() {
            peer.announce(update).await;
        }
    });
}

fn hello(inner: &Inner) -> Hello {
    Hello {
        protocol_version: crate::rlpx::P2P_VERSION,
        client_id: inner.config.client_id.clone(),
        capabilities: crate::eth::SUPPORTED_VERSIONS
            .iter()
            .map(|v| Capability::new("eth", *v))
            .collect(),
        listen_port: inner.local.tcp_port,
        id: inner.local.id,
    }
}

async fn accept_loop(inner: Arc<Inner>, listener: TcpListener) {
    loop {
        let (stream, addr) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(%e, "accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        // Handshakes in flight are bounded like peers: a flood of half-open connections
        // cannot grow memory without bound.
        if inner.peers.handshakes() >= inner.config.max_peers.max(8) * 2 {
            drop(stream);
            continue;
        }
        let inner = inner.clone();
        tokio::spawn(async move {
            let _guard = inner.peers.handshake_started();
            let result = async {
                let session = Session::accept(stream, &inner.config.key, hello(&inner))
                    .await
                    .map_err(|e| e.to_string())?;
                if inner.peers.is_banned(&session.remote_id()) {
                    let mut session = session;
                    let _ = session.disconnect(crate::rlpx::DisconnectReason::UselessPeer).await;
                    return Err("banned".to_string());
                }
                peer::establish(inner.clone(), session, addr, true).await
            }
            .await;
            match result {
                Ok(peer) => {
                    tracing::info!(peer = %peer.id, client = %peer.client, %addr, inbound = true, "peer connected")
                }
                Err(e) => tracing::debug!(%addr, %e, "inbound connection refused"),
            }
        });
    }
}

async fn redial_loop(inner: Arc<Inner>) {
    loop {
        let statics = inner.static_peers.lock().clone();
        for node in statics {
            spawn_dial(inner.clone(), node);
        }
        tokio::time::sleep(REDIAL_INTERVAL).await;
    }
}

/// Dials `node` unless it is us, connected, being dialed or banned.
fn spawn_dial(inner: Arc<Inner>, node: NodeRecord) {
    if node.id == inner.local.id
        || inner.peers.contains(&node.id)
        || inner.peers.is_banned(&node.id)
        || !inner.dialing.lock().insert(node.id)
    {
        return;
    }
    inner.clone().runtime.spawn(async move {
        let result = async {
            let stream = tokio::time::timeout(
                crate::rlpx::HANDSHAKE_TIMEOUT,
                TcpStream::connect(node.tcp_addr()),
            )
            .await
            .map_err(|_| "connect timed out".to_string())?
            .map_err(|e| e.to_string())?;
            let session = Session::connect(stream, &inner.config.key, node.id, hello(&inner))
                .await
                .map_err(|e| e.to_string())?;
            peer::establish(inner.clone(), session, node.tcp_addr(), false).await
        }
        .await;
        inner.dialing.lock().remove(&node.id);
        match result {
            Ok(peer) => {
                tracing::info!(peer = %peer.id, client = %peer.client, addr = %node.tcp_addr(), inbound = false, "peer connected")
            }
            Err(e) => tracing::debug!(node = %node, %e, "dial failed"),
        }
    });
}
