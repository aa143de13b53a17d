//! One connected peer: the eth Status exchange, then a task that reads its messages —
//! answering its requests from the store, routing its responses to our pending requests
//! by request id, and dropping it for anything that breaks the protocol.

use super::serve;
use super::{Inner, Offence};
use crate::eth::{
    codes, fork_filter, validate_block_range, validate_status, BlockAccessLists, BlockBodies,
    BlockHeaders, BlockRangeUpdate, EthMessage, GetBlockAccessLists, GetBlockBodies,
    GetBlockHeaders, HashOrNumber, Status,
};
use crate::rlpx::{DisconnectReason, RlpxError, Session, SessionReader, SessionWriter};
use crate::NodeId;
use alloy_eips::eip2124::{ForkFilter, Head};
use alloy_primitives::B256;
use ethrex_common::{BlockAccessList, BlockBody, Header};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// How long a peer has to answer a request before it counts as stalling.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a peer has to send its Status after ours.
pub const STATUS_TIMEOUT: Duration = Duration::from_secs(10);
/// Requests one peer may have in flight from us at once.
pub const MAX_INFLIGHT_PER_PEER: usize = 8;

/// Why a request to a peer failed.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// The peer did not answer within `REQUEST_TIMEOUT`.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The peer disconnected (or was dropped) before answering.
    #[error("peer gone")]
    Gone,
    /// Sending the request failed.
    #[error("send failed: {0}")]
    Send(#[from] RlpxError),
    /// The answer is of the wrong kind.
    #[error("unexpected answer {0}")]
    WrongAnswer(&'static str),
}

/// The block range a peer announced (Status, then BlockRangeUpdate).
#[derive(Debug, Clone, Copy)]
pub struct PeerRange {
    /// The oldest block it serves.
    pub earliest: u64,
    /// Its head's number.
    pub latest: u64,
    /// Its head's hash.
    pub latest_hash: B256,
}

/// A connected peer, shared by the peer's task, the peer set and the sync.
pub struct Peer {
    /// The peer's node id.
    pub id: NodeId,
    /// Its TCP address.
    pub addr: SocketAddr,
    /// The eth version both sides speak.
    pub version: u32,
    /// Its client id from Hello.
    pub client: String,
    /// Whether it dialed us.
    pub inbound: bool,
    /// When the session was established.
    pub since: Instant,
    writer: SessionWriter,
    range: Mutex<PeerRange>,
    pending: Mutex<HashMap<u64, oneshot::Sender<EthMessage>>>,
    next_id: AtomicU64,
    inflight: AtomicUsize,
    /// Woken when a request ends (the peer set's `room_signal`).
    room: Arc<tokio::sync::Notify>,
    /// Cancelled when we drop the peer: its read task ends at once.
    closed: tokio_util::sync::CancellationToken,
    /// Transaction hashes it is known to have (it sent or was sent them).
    pub(crate) known: super::transactions::KnownTxs,
    /// How many transactions it sent that can never be valid (see
    /// `PoolError::is_invalid`); past a bound it is dropped.
    pub(crate) invalid_txs: std::sync::atomic::AtomicU32,
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer").field("id", &self.id).field("addr", &self.addr).finish()
    }
}

impl Peer {
    /// The block range it last announced.
    pub fn range(&self) -> PeerRange {
        *self.range.lock()
    }

    /// Whether it serves block access lists (eth/71).
    pub fn serves_bals(&self) -> bool {
        self.version >= 71
    }

    /// Requests it has in flight from us.
    pub fn inflight(&self) -> usize {
        self.inflight.load(Ordering::Relaxed)
    }

    /// Sends `message` (an announcement: nothing is awaited); a failed send is left for
    /// the read loop to notice.
    pub(crate) async fn send(&self, message: EthMessage) {
        let (code, payload) = message.encode(self.version);
        let _ = self.writer.send(code, &payload).await;
    }

    /// Sends `request` (its request id is set here) and waits for the answer.
    pub(crate) async fn request(
        &self,
        make: impl FnOnce(u64) -> EthMessage,
    ) -> Result<EthMessage, RequestError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().insert(id, tx);
        // Undone however the request ends, also when its caller drops it mid-flight (a
        // sync that gives way to a newer target): a leaked count would leave the peer
        // looking busy for good.
        let _inflight = Inflight::start(self, id);
        let (code, payload) = make(id).encode(self.version);
        let sent = Instant::now();
        self.writer.send(code, &payload).await?;
        tracing::trace!(peer = %self.id, id, code, send = ?sent.elapsed(), "request sent");
        match tokio::time::timeout(REQUEST_TIMEOUT, rx).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(_)) => Err(RequestError::Gone),
            Err(_) => Err(RequestError::Timeout(REQUEST_TIMEOUT)),
        }
    }

    /// `GetBlockHeaders`.
    pub async fn headers(
        &self,
        origin: HashOrNumber,
        amount: u64,
        skip: u64,
        reverse: bool,
    ) -> Result<Vec<Header>, RequestError> {
        let make = |request_id| {
            EthMessage::GetBlockHeaders(GetBlockHeaders {
                request_id,
                origin,
                amount,
                skip,
                reverse,
            })
        };
        match self.request(make).await? {
            EthMessage::BlockHeaders(BlockHeaders { headers, .. }) => Ok(headers),
            _ => Err(RequestError::WrongAnswer("to GetBlockHeaders")),
        }
    }

    /// `GetBlockBodies`.
    pub async fn bodies(&self, hashes: Vec<B256>) -> Result<Vec<BlockBody>, RequestError> {
        let make = |request_id| EthMessage::GetBlockBodies(GetBlockBodies { request_id, hashes });
        match self.request(make).await? {
            EthMessage::BlockBodies(BlockBodies { bodies, .. }) => Ok(bodies),
            _ => Err(RequestError::WrongAnswer("to GetBlockBodies")),
        }
    }

    /// `GetBlockAccessLists` (eth/71): one entry per answered hash, `None` where the peer
    /// does not have the BAL.
    pub async fn bals(
        &self,
        hashes: Vec<B256>,
    ) -> Result<Vec<Option<BlockAccessList>>, RequestError> {
        let make = |request_id| {
            EthMessage::GetBlockAccessLists(GetBlockAccessLists { request_id, hashes })
        };
        match self.request(make).await? {
            EthMessage::BlockAccessLists(BlockAccessLists { access_lists, .. }) => Ok(access_lists),
            _ => Err(RequestError::WrongAnswer("to GetBlockAccessLists")),
        }
    }

    /// Disconnects with `reason` (best effort) and ends the peer: its read task stops and
    /// requests waiting on it fail at once.
    pub async fn disconnect(&self, reason: DisconnectReason) {
        self.closed.cancel();
        self.pending.lock().clear();
        let _ = tokio::time::timeout(Duration::from_secs(2), self.writer.disconnect(reason)).await;
    }

    /// Tells the peer our new head (BlockRangeUpdate).
    pub(crate) async fn announce(&self, update: BlockRangeUpdate) {
        let (code, payload) = EthMessage::BlockRangeUpdate(update).encode(self.version);
        let _ = self.writer.send(code, &payload).await;
    }
}

/// Our Status at the current head, and the fork filter that judges a peer's at it.
pub(crate) fn our_status(inner: &Inner, version: u32) -> Result<(Status, ForkFilter), String> {
    let store = &inner.host.chain().store;
    let head = store.head_header().map_err(|e| e.to_string())?.ok_or("no head")?;
    let filter = fork_filter(
        &inner.host.chain().config.inner,
        inner.genesis_hash,
        inner.genesis_time,
        Head { number: head.number, timestamp: head.timestamp, ..Default::default() },
    );
    let status = Status {
        version,
        network_id: inner.network_id,
        genesis: inner.genesis_hash,
        fork_id: filter.current(),
        earliest_block: 0,
        latest_block: head.number,
        latest_block_hash: head.hash_slow(),
    };
    Ok((status, filter))
}

/// One request in flight: counted from `start` until dropped, which forgets its pending
/// answer and wakes tasks waiting for a peer with room.
struct Inflight<'a> {
    peer: &'a Peer,
    id: u64,
}

impl<'a> Inflight<'a> {
    fn start(peer: &'a Peer, id: u64) -> Self {
        peer.inflight.fetch_add(1, Ordering::Relaxed);
        Self { peer, id }
    }
}

impl Drop for Inflight<'_> {
    fn drop(&mut self) {
        self.peer.pending.lock().remove(&self.id);
        self.peer.inflight.fetch_sub(1, Ordering::Relaxed);
        self.peer.room.notify_waiters();
    }
}

/// Exchanges Status on a fresh session and, if the peer is on our chain, starts its task.
pub(crate) async fn establish(
    inner: Arc<Inner>,
    session: Session,
    addr: SocketAddr,
    inbound: bool,
) -> Result<Arc<Peer>, String> {
    let id = session.remote_id();
    let client = session.remote_hello().client_id.clone();
    let Some(version) = session.shared_capability("eth") else {
        let mut session = session;
        let _ = session.disconnect(DisconnectReason::UselessPeer).await;
        return Err("no shared eth version".into());
    };
    let (mut reader, writer) = session.into_split();
    let (ours, filter) = our_status(&inner, version)?;
    writer.send(codes::STATUS, &ours.encode()).await.map_err(|e| e.to_string())?;
    let theirs = match tokio::time::timeout(STATUS_TIMEOUT, reader.recv()).await {
        Err(_) => {
            let _ = writer.disconnect(DisconnectReason::PingTimeout).await;
            return Err("no Status in time".into());
        }
        Ok(Err(e)) => {
            if matches!(e, RlpxError::BadMac | RlpxError::FrameTooLarge(_) | RlpxError::Snappy(_)) {
                inner.peers.punish(id, Offence::Malformed);
            }
            return Err(format!("before Status: {e}"));
        }
        Ok(Ok((code, payload))) => match EthMessage::decode(version, code, &payload) {
            Ok(EthMessage::Status(status)) => status,
            Ok(other) => {
                let _ = writer.disconnect(DisconnectReason::BreachOfProtocol).await;
                return Err(format!("first message is not Status but code {:#x}", other.code()));
            }
            Err(e) => {
                let _ = writer.disconnect(DisconnectReason::BreachOfProtocol).await;
                return Err(format!("undecodable Status: {e}"));
            }
        },
    };
    if let Err(e) = validate_status(&ours, &theirs, &filter) {
        let _ = writer.disconnect(DisconnectReason::SubprotocolError).await;
        return Err(format!("incompatible Status: {e}"));
    }
    let peer = Arc::new(Peer {
        id,
        addr,
        version,
        client,
        inbound,
        since: Instant::now(),
        writer,
        range: Mutex::new(PeerRange {
            earliest: theirs.earliest_block,
            latest: theirs.latest_block,
            latest_hash: theirs.latest_block_hash,
        }),
        pending: Mutex::new(HashMap::new()),
        next_id: AtomicU64::new(1),
        inflight: AtomicUsize::new(0),
        room: inner.peers.room_signal(),
        closed: tokio_util::sync::CancellationToken::new(),
        known: Default::default(),
        invalid_txs: Default::default(),
    });
    if !inner.peers.insert(peer.clone(), inner.config.max_peers) {
        peer.disconnect(DisconnectReason::TooManyPeers).await;
        return Err("peer set full or peer already connected".into());
    }
    let task_peer = peer.clone();
    tokio::spawn(async move {
        let reason = read_loop(&inner, &task_peer, &mut reader).await;
        tracing::debug!(peer = %task_peer.id, %reason, "peer disconnected");
        inner.peers.remove(&task_peer.id);
        // Wake every request still waiting on this peer.
        task_peer.pending.lock().clear();
    });
    Ok(peer)
}

/// How often an idle peer is pinged.
pub const PING_INTERVAL: Duration = Duration::from_secs(15);
/// A peer that has not answered a ping for this long is dropped.
pub const PONG_TIMEOUT: Duration = Duration::from_secs(45);

/// The keepalive schedule of a session starting now: a tick every `PING_INTERVAL`, the
/// first one interval from now (`tokio::time::interval` would tick at once).
fn keepalive() -> tokio::time::Interval {
    let first = tokio::time::Instant::now() + PING_INTERVAL;
    let mut keepalive = tokio::time::interval_at(first, PING_INTERVAL);
    keepalive.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    keepalive
}

/// Reads the peer's messages until it leaves or is dropped; returns why. Pings the peer
/// every `PING_INTERVAL` and drops it when no Pong came for `PONG_TIMEOUT`.
///
/// The first Ping goes out one interval after the session starts, never at once: the
/// peer's first messages (a test peer's invalid one, say) must be judged, and a Disconnect
/// they earn must be the next thing the peer reads, not a Ping that raced them.
async fn read_loop(inner: &Arc<Inner>, peer: &Arc<Peer>, reader: &mut SessionReader) -> String {
    let mut keepalive = keepalive();
    loop {
        // `recv` is cancel-safe (a message is never lost when the tick wins). Biased: a
        // message that is already here is handled before a due Ping is sent.
        let received = tokio::select! {
            biased;
            _ = peer.closed.cancelled() => return "dropped by us".into(),
            received = reader.recv() => received,
            _ = keepalive.tick() => {
                let heard = reader.last_pong().unwrap_or(peer.since);
                if heard.elapsed() > PONG_TIMEOUT {
                    peer.disconnect(DisconnectReason::PingTimeout).await;
                    return "dropped: no Pong".into();
                }
                let _ = peer.writer.ping().await;
                continue;
            }
        };
        let (code, payload) = match received {
            Ok(m) => m,
            Err(RlpxError::Disconnected(reason)) => return format!("it disconnected: {reason:?}"),
            Err(e @ (RlpxError::BadMac | RlpxError::FrameTooLarge(_) | RlpxError::Snappy(_))) => {
                inner.peers.punish(peer.id, Offence::Malformed);
                peer.disconnect(DisconnectReason::BreachOfProtocol).await;
                return format!("dropped: {e}");
            }
            Err(e) => return format!("connection ended: {e}"),
        };
        let message = match EthMessage::decode(peer.version, code, &payload) {
            Ok(m) => m,
            Err(e) => {
                inner.peers.punish(peer.id, Offence::Malformed);
                peer.disconnect(DisconnectReason::BreachOfProtocol).await;
                return format!("dropped: undecodable message {code:#x}: {e}");
            }
        };
        if let Err(why) = handle(inner, peer, message).await {
            return why;
        }
    }
}

async fn handle(inner: &Arc<Inner>, peer: &Arc<Peer>, message: EthMessage) -> Result<(), String> {
    match message {
        EthMessage::GetBlockHeaders(_)
        | EthMessage::GetBlockBodies(_)
        | EthMessage::GetReceipts(_)
        | EthMessage::GetBlockAccessLists(_)
        | EthMessage::GetPooledTransactions(_) => {
            let host = inner.host.clone();
            let version = peer.version;
            // Store reads block: off the async workers. One request at a time per peer,
            // which also bounds what one peer can make us do.
            let answer =
                tokio::task::spawn_blocking(move || serve::answer(&*host, version, &message))
                    .await
                    .map_err(|e| format!("serving task failed: {e}"))?;
            match answer {
                Ok(answer) => {
                    let (code, payload) = answer.encode(peer.version);
                    peer.writer.send(code, &payload).await.map_err(|e| e.to_string())?;
                }
                Err(e) => tracing::warn!(peer = %peer.id, %e, "could not serve a request"),
            }
            Ok(())
        }
        EthMessage::BlockHeaders(_)
        | EthMessage::BlockBodies(_)
        | EthMessage::Receipts(_)
        | EthMessage::BlockAccessLists(_)
        | EthMessage::PooledTransactions(_) => {
            let id = message.request_id().unwrap_or_default();
            let waiting = peer.pending.lock().remove(&id);
            match waiting {
                Some(tx) => {
                    let _ = tx.send(message);
                    Ok(())
                }
                None => {
                    inner.peers.punish(peer.id, Offence::Unsolicited);
                    peer.disconnect(DisconnectReason::BreachOfProtocol).await;
                    Err(format!("dropped: unsolicited response (request id {id})"))
                }
            }
        }
        EthMessage::BlockRangeUpdate(update) => {
            if let Err(e) = validate_block_range(&update) {
                inner.peers.punish(peer.id, Offence::Malformed);
                peer.disconnect(DisconnectReason::SubprotocolError).await;
                return Err(format!("dropped: invalid BlockRangeUpdate: {e}"));
            }
            *peer.range.lock() = PeerRange {
                earliest: update.earliest_block,
                latest: update.latest_block,
                latest_hash: update.latest_block_hash,
            };
            Ok(())
        }
        EthMessage::Transactions(m) => super::transactions::on_transactions(inner, peer, m).await,
        EthMessage::NewPooledTransactionHashes(m) => {
            super::transactions::on_announcement(inner, peer, m).await
        }
        EthMessage::Status(_) => {
            inner.peers.punish(peer.id, Offence::Malformed);
            peer.disconnect(DisconnectReason::BreachOfProtocol).await;
            Err("dropped: a second Status".into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On tokio's paused clock (time moves only as the test says): no tick before one
    /// interval has passed, then one per interval.
    #[tokio::test(start_paused = true)]
    async fn the_keepalive_first_ticks_one_interval_after_the_session_starts() {
        let start = tokio::time::Instant::now();
        let mut keepalive = keepalive();
        let early = PING_INTERVAL - Duration::from_millis(1);
        assert!(tokio::time::timeout(early, keepalive.tick()).await.is_err(), "no tick at once");
        keepalive.tick().await;
        assert_eq!(start.elapsed(), PING_INTERVAL);
        keepalive.tick().await;
        assert_eq!(start.elapsed(), 2 * PING_INTERVAL);
    }
}
