//! Node discovery, protocol version 4 (discv4): finding peers over UDP with a Kademlia-like
//! table.
//!
//! Why discv4: go-ethereum runs discv4 by default on the execution layer (every client
//! speaks it), and it is what the loopback test against geth uses. discv5 (the `discv5`
//! crate) could be added later beside it.
//!
//! - [`packet`]: the signed wire format (Ping, Pong, FindNode, Neighbors, ENRRequest,
//!   ENRResponse), tolerant of extra list elements (EIP-8), never panicking on bad input.
//! - [`table`]: the bounded k-bucket table of bonded nodes.
//! - [`enr`]: our signed node record (EIP-778, "v4" scheme) to answer ENRRequest.
//! - [`Discovery`]: the service: answers peers, bonds (ping/pong endpoint proof), revalidates
//!   table entries, runs iterative lookups, and reports the nodes it finds.
//!
//! Endpoint proof: a node is *bonded* when it answered our ping within the last 12 hours;
//! only bonded nodes enter the table, and FindNode and ENRRequest are answered only for
//! bonded senders (so we cannot be used to amplify traffic towards a spoofed address).
//! Before sending FindNode to a node that we just bonded with, we also wait briefly for its
//! own ping (which it sends when it has no proof for us yet), as peers such as geth ignore
//! FindNode from nodes that have not answered their ping.
//!
//! Not done: we never send ENRRequest (peers' records are not fetched), no IP/subnet limits
//! in the table, nothing is persisted across restarts.

pub mod enr;
pub mod packet;
mod rlp;
pub mod table;

pub use rlp::RlpError;

use crate::enode::{NodeId, NodeRecord};
use alloy_primitives::{keccak256, B256, B512};
use packet::{
    Endpoint, EnrResponse, FindNode, Message, Neighbors, Ping, Pong, MAX_NEIGHBORS_PER_PACKET,
    NEIGHBORS, PONG,
};
use secp256k1::SecretKey;
use std::collections::{HashMap, HashSet};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use table::{Insert, Table, BUCKET_SIZE};
use tokio::net::UdpSocket;
use tokio::sync::{mpsc, oneshot, Semaphore};
use tokio::task::JoinHandle;
use tracing::{debug, trace};

/// Seconds a sent packet stays valid.
const EXPIRATION_SECS: u64 = 20;
/// How long to wait for a Pong, or the first Neighbors packet.
const RESPONSE_TIMEOUT: Duration = Duration::from_millis(1000);
/// After a Neighbors packet, how long to wait for the next one.
const NEIGHBORS_GRACE: Duration = Duration::from_millis(300);
/// How long an endpoint proof stays valid.
const BOND_EXPIRATION: Duration = Duration::from_secs(12 * 3600);
/// Concurrent FindNode requests per lookup round.
const ALPHA: usize = 3;
/// Bound on outstanding requests.
const MAX_PENDING: usize = 512;
/// Bound on the bond records kept (nodes we exchanged pings with).
const MAX_BONDS: usize = 4096;
/// Bound on background bonding tasks (pinging nodes learned from Neighbors or pings).
const MAX_BACKGROUND_PINGS: usize = 32;
/// Lookup interval once the table holds at least a bucket's worth of nodes.
const LOOKUP_INTERVAL: Duration = Duration::from_secs(30);
/// Lookup interval while the table is small.
const FAST_LOOKUP_INTERVAL: Duration = Duration::from_secs(3);
/// Interval between revalidation pings of table entries.
const REVALIDATE_INTERVAL: Duration = Duration::from_secs(5);
/// Capacity of each subscriber's channel (nodes are dropped for a full subscriber).
const SUBSCRIBER_CAPACITY: usize = 1024;
/// After this many unanswered FindNodes the bond is considered lost and redone.
const MAX_FIND_FAILURES: u32 = 2;

#[derive(Debug, Clone, Copy)]
struct Bond {
    ip: IpAddr,
    /// When the node last answered our ping (our proof of its endpoint).
    last_pong_received: Option<Instant>,
    /// When the node last pinged us (it then has, or will get, a proof of ours).
    last_ping_received: Option<Instant>,
    find_failures: u32,
}

enum Waiter {
    Pong { ping_hash: B256, done: Vec<oneshot::Sender<()>> },
    Neighbors(mpsc::Sender<Vec<NodeRecord>>),
}

struct Pending {
    addr: SocketAddr,
    deadline: Instant,
    waiter: Waiter,
}

struct State {
    table: Table,
    bonds: HashMap<NodeId, Bond>,
    /// Outstanding requests by (node, expected reply type).
    pending: HashMap<(NodeId, u8), Pending>,
    subscribers: Vec<mpsc::Sender<NodeRecord>>,
}

struct Shared {
    key: SecretKey,
    local: NodeRecord,
    enr: Vec<u8>,
    enr_seq: u64,
    socket: UdpSocket,
    bootnodes: Vec<NodeRecord>,
    state: Mutex<State>,
    background: Arc<Semaphore>,
}

/// A running discv4 service. Dropping it (or [`Discovery::shutdown`]) stops it.
pub struct Discovery {
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Discovery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Discovery").field("local", &self.shared.local).finish_non_exhaustive()
    }
}

impl Discovery {
    /// Binds the UDP socket and starts the service: bonds with the bootnodes, then runs
    /// lookups (every 3 s while the table holds fewer than 16 nodes, every 30 s after),
    /// revalidates table entries, and answers other nodes.
    ///
    /// `our` is the endpoint advertised to others; its id is replaced by the key's, a zero
    /// UDP port by the bound port and an unspecified IP by the bound IP.
    pub async fn spawn(
        key: SecretKey,
        bind: SocketAddr,
        our: NodeRecord,
        bootnodes: Vec<NodeRecord>,
    ) -> io::Result<Discovery> {
        let socket = UdpSocket::bind(bind).await?;
        let bound = socket.local_addr()?;
        let mut local = our;
        local.id = NodeId::from_secret_key(&key);
        if local.udp_port == 0 {
            local.udp_port = bound.port();
        }
        if local.ip.is_unspecified() {
            local.ip = bound.ip();
        }
        // The sequence number only has to grow when the record changes: the start time
        // does that across restarts without storing anything.
        let enr_seq = unix_now();
        let enr = enr::Enr {
            seq: enr_seq,
            id: local.id,
            ip: (!local.ip.is_unspecified()).then_some(local.ip),
            tcp_port: (local.tcp_port != 0).then_some(local.tcp_port),
            udp_port: Some(local.udp_port),
        }
        .sign(&key);
        let bootnodes: Vec<NodeRecord> =
            bootnodes.into_iter().filter(|b| b.id != local.id).collect();
        let shared = Arc::new(Shared {
            key,
            local,
            enr,
            enr_seq,
            socket,
            bootnodes,
            state: Mutex::new(State {
                table: Table::new(local.id),
                bonds: HashMap::new(),
                pending: HashMap::new(),
                subscribers: Vec::new(),
            }),
            background: Arc::new(Semaphore::new(MAX_BACKGROUND_PINGS)),
        });
        debug!(target: "discv4", local = %local, "discovery started");
        let tasks = vec![
            tokio::spawn(receive_loop(shared.clone())),
            tokio::spawn(lookup_loop(shared.clone())),
            tokio::spawn(revalidate_loop(shared.clone())),
        ];
        Ok(Discovery { shared, tasks })
    }

    /// Our advertised record (with the actual id and UDP port).
    pub fn local_record(&self) -> NodeRecord {
        self.shared.local
    }

    /// Our signed node record (RLP), as sent in ENRResponse.
    pub fn local_enr(&self) -> Vec<u8> {
        self.shared.enr.clone()
    }

    /// The bonded nodes currently in the table.
    pub fn nodes(&self) -> Vec<NodeRecord> {
        self.shared.lock().table.nodes()
    }

    /// A stream of bonded nodes: those already in the table, then each one added. Nodes
    /// are dropped when the receiver lags more than 1024 behind.
    pub fn subscribe(&self) -> mpsc::Receiver<NodeRecord> {
        let (tx, rx) = mpsc::channel(SUBSCRIBER_CAPACITY);
        let mut state = self.shared.lock();
        for node in state.table.nodes() {
            let _ = tx.try_send(node);
        }
        state.subscribers.push(tx);
        rx
    }

    /// Runs one lookup towards `target` now and returns the closest bonded-or-answering
    /// nodes found (at most 16).
    pub async fn lookup(&self, target: NodeId) -> Vec<NodeRecord> {
        lookup(&self.shared, target.0).await
    }

    /// Stops the service (same as dropping it).
    pub fn shutdown(self) {}
}

impl Drop for Discovery {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves consistent-enough data: keep going.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn send(&self, message: Message, to: SocketAddr) -> B256 {
        let (datagram, hash) = message.encode(&self.key);
        trace!(target: "discv4", kind = message.kind(), %to, "send");
        if let Err(e) = self.socket.send_to(&datagram, to).await {
            debug!(target: "discv4", %to, "send failed: {e}");
        }
        hash
    }

    fn endpoint(&self) -> Endpoint {
        Endpoint { ip: self.local.ip, udp_port: self.local.udp_port, tcp_port: self.local.tcp_port }
    }
}

impl State {
    fn bonded(&self, id: &NodeId, ip: IpAddr) -> bool {
        self.bonds.get(id).is_some_and(|b| {
            b.ip == ip && b.last_pong_received.is_some_and(|t| t.elapsed() < BOND_EXPIRATION)
        })
    }

    fn bond_mut(&mut self, id: NodeId, ip: IpAddr) -> &mut Bond {
        if !self.bonds.contains_key(&id) && self.bonds.len() >= MAX_BONDS {
            // Forget the longest-idle node that is not in the table.
            let table = &self.table;
            let victim = self
                .bonds
                .iter()
                .filter(|(id, _)| !table.contains(id))
                .min_by_key(|(_, b)| b.last_pong_received.max(b.last_ping_received))
                .map(|(id, _)| *id);
            if let Some(victim) = victim {
                self.bonds.remove(&victim);
            }
        }
        let bond = self.bonds.entry(id).or_insert(Bond {
            ip,
            last_pong_received: None,
            last_ping_received: None,
            find_failures: 0,
        });
        if bond.ip != ip {
            // A new address needs a new proof.
            *bond =
                Bond { ip, last_pong_received: None, last_ping_received: None, find_failures: 0 };
        }
        bond
    }

    /// Registers an outstanding request; false when the table of them is full.
    fn add_pending(&mut self, key: (NodeId, u8), pending: Pending) -> bool {
        if self.pending.len() >= MAX_PENDING {
            let now = Instant::now();
            self.pending.retain(|_, p| p.deadline > now);
            if self.pending.len() >= MAX_PENDING {
                return false;
            }
        }
        self.pending.insert(key, pending);
        true
    }

    fn notify(&mut self, node: NodeRecord) {
        self.subscribers.retain(|tx| !tx.is_closed());
        for tx in &self.subscribers {
            let _ = tx.try_send(node);
        }
    }
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

fn expiration() -> u64 {
    unix_now() + EXPIRATION_SECS
}

async fn receive_loop(shared: Arc<Shared>) {
    let mut buf = vec![0u8; 2048];
    loop {
        let (len, from) = match shared.socket.recv_from(&mut buf).await {
            Ok(x) => x,
            Err(e) => {
                // E.g. an ICMP error surfaced on the socket: not fatal.
                debug!(target: "discv4", "receive error: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        match packet::decode(&buf[..len]) {
            Ok(packet) => handle(&shared, packet, from).await,
            Err(e) => trace!(target: "discv4", %from, "dropped packet: {e}"),
        }
    }
}

async fn handle(shared: &Arc<Shared>, packet: packet::Packet, from: SocketAddr) {
    let packet::Packet { message, node_id: id, hash } = packet;
    if message.is_expired(unix_now()) {
        trace!(target: "discv4", %from, "dropped expired packet");
        return;
    }
    if id == shared.local.id {
        return;
    }
    trace!(target: "discv4", kind = message.kind(), %from, "received");
    match message {
        Message::Ping(ping) => {
            let to =
                Endpoint { ip: from.ip(), udp_port: from.port(), tcp_port: ping.from.tcp_port };
            let pong = Pong {
                to,
                ping_hash: hash,
                expiration: expiration(),
                enr_seq: Some(shared.enr_seq),
            };
            shared.send(Message::Pong(pong), from).await;
            let record = NodeRecord {
                id,
                ip: from.ip(),
                udp_port: from.port(),
                tcp_port: ping.from.tcp_port,
            };
            let bonded = {
                let mut state = shared.lock();
                state.bond_mut(id, from.ip()).last_ping_received = Some(Instant::now());
                state.bonded(&id, from.ip())
            };
            if bonded {
                add_to_table(shared, record);
            } else {
                // Ping back to get the endpoint proof; the node enters the table on pong.
                spawn_bond(shared, record);
            }
        }
        Message::Pong(pong) => {
            let mut state = shared.lock();
            let matches = state.pending.get(&(id, PONG)).is_some_and(|p| {
                p.addr == from
                    && matches!(&p.waiter, Waiter::Pong { ping_hash, .. } if *ping_hash == pong.ping_hash)
            });
            if !matches {
                trace!(target: "discv4", %from, "unsolicited pong");
                return;
            }
            let bond = state.bond_mut(id, from.ip());
            bond.last_pong_received = Some(Instant::now());
            bond.find_failures = 0;
            if let Some(Pending { waiter: Waiter::Pong { done, .. }, .. }) =
                state.pending.remove(&(id, PONG))
            {
                for tx in done {
                    let _ = tx.send(());
                }
            }
        }
        Message::FindNode(find) => {
            let closest = {
                let state = shared.lock();
                if !state.bonded(&id, from.ip()) {
                    trace!(target: "discv4", %from, "findnode from unbonded node");
                    return;
                }
                state.table.closest(&keccak256(find.target), BUCKET_SIZE)
            };
            for chunk in closest.chunks(MAX_NEIGHBORS_PER_PACKET) {
                let msg = Neighbors { nodes: chunk.to_vec(), expiration: expiration() };
                shared.send(Message::Neighbors(msg), from).await;
            }
            if closest.is_empty() {
                let msg = Neighbors { nodes: Vec::new(), expiration: expiration() };
                shared.send(Message::Neighbors(msg), from).await;
            }
        }
        Message::Neighbors(neighbors) => {
            let state = shared.lock();
            match state.pending.get(&(id, NEIGHBORS)) {
                Some(Pending { addr, waiter: Waiter::Neighbors(tx), .. }) if *addr == from => {
                    let _ = tx.try_send(neighbors.nodes);
                }
                _ => trace!(target: "discv4", %from, "unsolicited neighbors"),
            }
        }
        Message::EnrRequest(_) => {
            if !shared.lock().bonded(&id, from.ip()) {
                return;
            }
            let response = EnrResponse { request_hash: hash, enr: shared.enr.clone() };
            shared.send(Message::EnrResponse(response), from).await;
        }
        // We send no ENRRequest, so every response is unsolicited.
        Message::EnrResponse(_) => {}
    }
}

/// Pings `node` and waits for its pong; true when it answered (it is then bonded).
async fn ping(shared: &Arc<Shared>, node: NodeRecord) -> bool {
    let (tx, rx) = oneshot::channel();
    let addr = node.udp_addr();
    let key = (node.id, PONG);
    let mut tx = Some(tx);
    {
        // A ping to this node already in flight: wait for its pong instead of sending another.
        let mut state = shared.lock();
        if let Some(Pending { addr: a, waiter: Waiter::Pong { done, .. }, deadline }) =
            state.pending.get_mut(&key)
        {
            if *a == addr && *deadline > Instant::now() {
                done.extend(tx.take());
            }
        }
    }
    if let Some(tx) = tx {
        let ping = Ping {
            version: 4,
            from: shared.endpoint(),
            to: Endpoint { ip: node.ip, udp_port: node.udp_port, tcp_port: node.tcp_port },
            expiration: expiration(),
            enr_seq: Some(shared.enr_seq),
        };
        // Sign before registering so the hash is known; send after.
        let message = Message::Ping(ping);
        let (datagram, ping_hash) = message.encode(&shared.key);
        let pending = Pending {
            addr,
            deadline: Instant::now() + RESPONSE_TIMEOUT,
            waiter: Waiter::Pong { ping_hash, done: vec![tx] },
        };
        if !shared.lock().add_pending(key, pending) {
            return false;
        }
        if let Err(e) = shared.socket.send_to(&datagram, addr).await {
            debug!(target: "discv4", %addr, "send failed: {e}");
        }
    }
    let answered = matches!(tokio::time::timeout(RESPONSE_TIMEOUT, rx).await, Ok(Ok(())));
    if !answered {
        let mut state = shared.lock();
        if state.pending.get(&key).is_some_and(|p| p.deadline <= Instant::now()) {
            state.pending.remove(&key);
        }
    }
    answered
}

/// Adds a bonded node to the table, notifying subscribers when it is new and revalidating
/// the oldest entry when its bucket is full.
fn add_to_table(shared: &Arc<Shared>, node: NodeRecord) {
    let outcome = {
        let mut state = shared.lock();
        let outcome = state.table.insert(node);
        if outcome == Insert::Added {
            state.notify(node);
        }
        outcome
    };
    if let Insert::Full(oldest) = outcome {
        let Ok(permit) = shared.background.clone().try_acquire_owned() else { return };
        let shared = shared.clone();
        tokio::spawn(async move {
            revalidate(&shared, oldest).await;
            drop(permit);
        });
    }
}

/// Pings a table entry: refreshed when it answers, replaced when it does not.
async fn revalidate(shared: &Arc<Shared>, node: NodeRecord) {
    // One retry: a single lost datagram should not evict a node.
    let alive = ping(shared, node).await || ping(shared, node).await;
    let mut state = shared.lock();
    if alive {
        if state.table.contains(&node.id) {
            state.table.insert(node);
        }
    } else if let Some(promoted) = state.table.remove(&node.id) {
        debug!(target: "discv4", dead = %node.id, "evicted unresponsive node");
        state.notify(promoted);
    }
}

/// Bonds with `node` in the background (bounded), adding it to the table if it answers.
fn spawn_bond(shared: &Arc<Shared>, node: NodeRecord) {
    let Ok(permit) = shared.background.clone().try_acquire_owned() else { return };
    let shared = shared.clone();
    tokio::spawn(async move {
        if ping(&shared, node).await {
            add_to_table(&shared, node);
        }
        drop(permit);
    });
}

/// Makes sure `node` can be asked FindNode: we have its endpoint proof, and it has had the
/// chance to get ours.
async fn ensure_bond(shared: &Arc<Shared>, node: NodeRecord) -> bool {
    let (bonded, pinged_us, failures) = {
        let state = shared.lock();
        let bond = state.bonds.get(&node.id).filter(|b| b.ip == node.ip);
        (
            state.bonded(&node.id, node.ip),
            bond.and_then(|b| b.last_ping_received).is_some_and(|t| t.elapsed() < BOND_EXPIRATION),
            bond.map_or(0, |b| b.find_failures),
        )
    };
    if bonded && pinged_us && failures < MAX_FIND_FAILURES {
        return true;
    }
    if !ping(shared, node).await {
        return false;
    }
    add_to_table(shared, node);
    // The node pings back when it has no proof for us; wait for that ping so our FindNode
    // is not ignored.
    let deadline = Instant::now() + RESPONSE_TIMEOUT;
    let since = Instant::now();
    while Instant::now() < deadline {
        let pinged = shared
            .lock()
            .bonds
            .get(&node.id)
            .and_then(|b| b.last_ping_received)
            .is_some_and(|t| t.elapsed() < BOND_EXPIRATION);
        if pinged && (failures < MAX_FIND_FAILURES || since.elapsed() > NEIGHBORS_GRACE) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    true
}

/// Asks `node` for its nodes closest to `target`; empty on failure.
async fn find_node(shared: &Arc<Shared>, node: NodeRecord, target: B512) -> Vec<NodeRecord> {
    if !ensure_bond(shared, node).await {
        return Vec::new();
    }
    let (tx, mut rx) = mpsc::channel(8);
    let key = (node.id, NEIGHBORS);
    // Replies are matched by (node, type): one FindNode per node at a time, so a concurrent
    // lookup asking the same node waits for the first to finish.
    let give_up = Instant::now() + RESPONSE_TIMEOUT + NEIGHBORS_GRACE * 5;
    while shared.lock().pending.contains_key(&key) {
        if Instant::now() > give_up {
            return Vec::new();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    {
        let mut state = shared.lock();
        if state.pending.contains_key(&key) {
            return Vec::new();
        }
        let pending = Pending {
            addr: node.udp_addr(),
            deadline: Instant::now() + RESPONSE_TIMEOUT + NEIGHBORS_GRACE * 4,
            waiter: Waiter::Neighbors(tx),
        };
        if !state.add_pending(key, pending) {
            return Vec::new();
        }
    }
    let find = FindNode { target, expiration: expiration() };
    shared.send(Message::FindNode(find), node.udp_addr()).await;
    let mut found = Vec::new();
    let mut wait = RESPONSE_TIMEOUT;
    let mut packets = 0;
    while found.len() < BUCKET_SIZE && packets < 4 {
        match tokio::time::timeout(wait, rx.recv()).await {
            Ok(Some(nodes)) => {
                found.extend(nodes);
                packets += 1;
                wait = NEIGHBORS_GRACE;
            }
            _ => break,
        }
    }
    found.truncate(BUCKET_SIZE);
    let mut state = shared.lock();
    state.pending.remove(&key);
    if packets == 0 {
        if let Some(bond) = state.bonds.get_mut(&node.id) {
            bond.find_failures += 1;
        }
    }
    found
}

/// Whether a node learned from `source`'s Neighbors is worth contacting.
fn relayable(node: &NodeRecord, source: &NodeRecord, local: &NodeId) -> bool {
    node.id != *local
        && node.udp_port != 0
        && !node.ip.is_unspecified()
        && !node.ip.is_multicast()
        && (source.ip.is_loopback() || !node.ip.is_loopback())
        && node.id.to_pubkey().is_ok()
}

/// An iterative lookup: ask the α closest unasked nodes, merge what they return, until the
/// `k` closest known have all been asked. Newly learned nodes are bonded in the background.
async fn lookup(shared: &Arc<Shared>, target: B512) -> Vec<NodeRecord> {
    let target_hash = keccak256(target);
    let local = shared.local.id;
    let mut candidates = shared.lock().table.closest(&target_hash, BUCKET_SIZE);
    if candidates.is_empty() {
        candidates = shared.bootnodes.clone();
    }
    let mut seen: HashSet<NodeId> = candidates.iter().map(|n| n.id).collect();
    let mut asked: HashSet<NodeId> = HashSet::new();
    let mut answered: HashSet<NodeId> = HashSet::new();
    loop {
        candidates.sort_by_key(|n| n.id.hash() ^ target_hash);
        candidates.truncate(BUCKET_SIZE);
        let round: Vec<NodeRecord> =
            candidates.iter().filter(|n| !asked.contains(&n.id)).take(ALPHA).copied().collect();
        if round.is_empty() {
            break;
        }
        asked.extend(round.iter().map(|n| n.id));
        let replies =
            futures::future::join_all(round.iter().map(|n| find_node(shared, *n, target))).await;
        for (source, nodes) in round.iter().zip(replies) {
            if !nodes.is_empty() {
                answered.insert(source.id);
            }
            for node in nodes {
                if !relayable(&node, source, &local) || !seen.insert(node.id) {
                    continue;
                }
                let known = shared.lock().table.contains(&node.id);
                if !known {
                    spawn_bond(shared, node);
                }
                candidates.push(node);
            }
        }
        // Nodes that did not answer leave consideration.
        candidates.retain(|n| !asked.contains(&n.id) || answered.contains(&n.id));
    }
    candidates
}

async fn lookup_loop(shared: Arc<Shared>) {
    let bond_bootnodes = |shared: Arc<Shared>| async move {
        let pings = shared.bootnodes.iter().map(|b| {
            let shared = shared.clone();
            async move {
                if ping(&shared, *b).await {
                    add_to_table(&shared, *b);
                }
            }
        });
        futures::future::join_all(pings).await;
    };
    bond_bootnodes(shared.clone()).await;
    loop {
        if shared.lock().table.is_empty() {
            bond_bootnodes(shared.clone()).await;
        }
        let found = lookup(&shared, shared.local.id.0).await;
        let random = B512::random();
        let found_random = lookup(&shared, random).await;
        let size = shared.lock().table.len();
        debug!(
            target: "discv4",
            table = size,
            self_lookup = found.len(),
            random_lookup = found_random.len(),
            "lookups done"
        );
        let wait = if size < BUCKET_SIZE { FAST_LOOKUP_INTERVAL } else { LOOKUP_INTERVAL };
        tokio::time::sleep(wait).await;
    }
}

async fn revalidate_loop(shared: Arc<Shared>) {
    let mut n = 0usize;
    loop {
        tokio::time::sleep(REVALIDATE_INTERVAL).await;
        n = n.wrapping_add(1);
        let next = shared.lock().table.least_recent(n);
        if let Some(node) = next {
            revalidate(&shared, node).await;
        }
    }
}

#[cfg(test)]
mod tests;
