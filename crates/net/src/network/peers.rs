//! The bounded set of connected peers, their misbehaviour and bans.

use super::peer::Peer;
use crate::NodeId;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a peer that misbehaved is refused.
pub const BAN_DURATION: Duration = Duration::from_secs(600);
/// Stalls (unanswered requests) a peer may commit before it is dropped.
pub const MAX_STALLS: u32 = 3;

/// What a peer did wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offence {
    /// Bytes that do not decode (frame, snappy, RLP), or a protocol violation.
    Malformed,
    /// A response to a request we never sent (or already answered).
    Unsolicited,
    /// A response that does not match what was asked (headers that do not chain, bodies
    /// that do not hash to the header's roots).
    Mismatch,
    /// A block access list whose hash is not the header's.
    LyingBal,
    /// No answer within the request timeout.
    Stall,
}

impl Offence {
    /// Whether one such offence gets the peer dropped and banned at once.
    fn is_fatal(self) -> bool {
        !matches!(self, Offence::Stall)
    }
}

/// The connected peers, bounded, and the banned node ids.
#[derive(Default)]
pub struct PeerSet {
    peers: Mutex<HashMap<NodeId, Arc<Peer>>>,
    stalls: Mutex<HashMap<NodeId, u32>>,
    banned: Mutex<HashMap<NodeId, Instant>>,
    handshakes: Arc<AtomicUsize>,
    /// Woken when a peer joins or one of its requests ends: what a task waiting for a
    /// peer with room for another request waits on.
    room: Arc<tokio::sync::Notify>,
}

/// Counts a handshake in flight until dropped.
pub(crate) struct HandshakeGuard(Arc<AtomicUsize>);

impl Drop for HandshakeGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl PeerSet {
    /// Adds `peer` unless the set is full or it is already connected.
    pub(crate) fn insert(&self, peer: Arc<Peer>, max: usize) -> bool {
        let mut peers = self.peers.lock();
        if peers.len() >= max || peers.contains_key(&peer.id) {
            return false;
        }
        peers.insert(peer.id, peer);
        drop(peers);
        self.room.notify_waiters();
        true
    }

    /// The signal a peer gives when one of its requests ends.
    pub(crate) fn room_signal(&self) -> Arc<tokio::sync::Notify> {
        self.room.clone()
    }

    /// The least busy peer for which `usable` holds and that has room for another
    /// request; when there is none, waits (at most `patience`) for a request to end or a
    /// peer to join, and looks again. `None` when `patience` ran out.
    pub async fn pick_waiting(
        &self,
        usable: impl Fn(&Peer) -> bool,
        patience: Duration,
    ) -> Option<Arc<Peer>> {
        let deadline = tokio::time::Instant::now() + patience;
        loop {
            // Registered before looking, so a request ending in between is not missed.
            let woken = self.room.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if let Some(peer) = self.pick(&usable) {
                return Some(peer);
            }
            if tokio::time::timeout_at(deadline, woken).await.is_err() {
                return None;
            }
        }
    }

    /// Whether a connected peer satisfies `usable` (busy or not).
    pub fn any(&self, usable: impl Fn(&Peer) -> bool) -> bool {
        self.peers.lock().values().any(|p| usable(p))
    }

    /// Removes a peer that left.
    pub(crate) fn remove(&self, id: &NodeId) {
        self.peers.lock().remove(id);
        self.stalls.lock().remove(id);
    }

    /// The connected peers.
    pub fn all(&self) -> Vec<Arc<Peer>> {
        self.peers.lock().values().cloned().collect()
    }

    /// How many peers are connected.
    pub fn len(&self) -> usize {
        self.peers.lock().len()
    }

    /// Whether no peer is connected.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The connected peer `id`.
    pub fn get(&self, id: &NodeId) -> Option<Arc<Peer>> {
        self.peers.lock().get(id).cloned()
    }

    /// Whether `id` is connected.
    pub fn contains(&self, id: &NodeId) -> bool {
        self.peers.lock().contains_key(id)
    }

    /// Whether `id` is banned now.
    pub fn is_banned(&self, id: &NodeId) -> bool {
        let mut banned = self.banned.lock();
        match banned.get(id) {
            Some(until) if *until > Instant::now() => true,
            Some(_) => {
                banned.remove(id);
                false
            }
            None => false,
        }
    }

    /// Records `offence`; a fatal one (or too many stalls) bans the peer and removes it
    /// from the set (the caller disconnects it). Returns whether the peer is now banned.
    pub fn punish(&self, id: NodeId, offence: Offence) -> bool {
        let drop = offence.is_fatal() || {
            let mut stalls = self.stalls.lock();
            let count = stalls.entry(id).or_default();
            *count += 1;
            *count >= MAX_STALLS
        };
        tracing::warn!(peer = %id, ?offence, dropped = drop, "peer misbehaved");
        if drop {
            self.banned.lock().insert(id, Instant::now() + BAN_DURATION);
            self.remove(&id);
        }
        drop
    }

    /// The least busy peer for which `usable` holds (a random one among equals, so that
    /// requests spread over the peers).
    pub fn pick(&self, usable: impl Fn(&Peer) -> bool) -> Option<Arc<Peer>> {
        use rand::seq::IndexedRandom;
        let peers = self.peers.lock();
        let candidates: Vec<&Arc<Peer>> = peers
            .values()
            .filter(|p| usable(p) && p.inflight() < super::MAX_INFLIGHT_PER_PEER)
            .collect();
        let least = candidates.iter().map(|p| p.inflight()).min()?;
        let idlest: Vec<&Arc<Peer>> =
            candidates.into_iter().filter(|p| p.inflight() == least).collect();
        idlest.choose(&mut rand::rng()).map(|p| Arc::clone(p))
    }

    pub(crate) fn handshakes(&self) -> usize {
        self.handshakes.load(Ordering::Relaxed)
    }

    pub(crate) fn handshake_started(&self) -> HandshakeGuard {
        self.handshakes.fetch_add(1, Ordering::Relaxed);
        HandshakeGuard(self.handshakes.clone())
    }
}
