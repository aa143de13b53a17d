//! The transaction fetcher's book: which announced hashes the node still wants, which
//! peers announced each (with the type and size each one announced), and which peer was
//! asked. One hash is asked of one peer at a time; when that peer fails to deliver it
//! (no answer, a partial answer, a bad delivery, a disconnect) the next announcer is
//! asked, and a hash nobody is left to deliver is forgotten.
//!
//! Bounded: at most `MAX_WANTED` hashes and `MAX_ANNOUNCERS` announcers each; what comes
//! past the bound is ignored (a peer will announce it again, or broadcast it).

use crate::NodeId;
use alloy_primitives::B256;
use parking_lot::Mutex;
use std::collections::HashMap;

/// Hashes the fetcher tracks at most.
const MAX_WANTED: usize = 32_768;
/// Announcers remembered per hash.
const MAX_ANNOUNCERS: usize = 16;

/// What one peer announced about a hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Announced {
    pub(crate) peer: NodeId,
    pub(crate) ty: u8,
    pub(crate) size: u64,
}

#[derive(Default)]
struct Wanted {
    /// Announcers not yet asked, in arrival order.
    waiting: Vec<Announced>,
    /// The announcer asked now.
    asked: Option<Announced>,
}

/// The hashes being fetched.
#[derive(Default)]
pub(crate) struct TxFetcher(Mutex<HashMap<B256, Wanted>>);

impl TxFetcher {
    /// Records that `announced.peer` announced `hash`.
    pub(crate) fn announce(&self, hash: B256, announced: Announced) {
        let mut wanted = self.0.lock();
        if !wanted.contains_key(&hash) && wanted.len() >= MAX_WANTED {
            return;
        }
        let entry = wanted.entry(hash).or_default();
        let known = entry.asked.iter().chain(&entry.waiting).any(|a| a.peer == announced.peer);
        if !known && entry.waiting.len() < MAX_ANNOUNCERS {
            entry.waiting.push(announced);
        }
    }

    /// Marks asked, of `peer`, every hash it announced that nobody is asked for yet;
    /// returns them with what `peer` announced.
    pub(crate) fn claim(&self, peer: NodeId) -> Vec<(B256, Announced)> {
        let mut wanted = self.0.lock();
        let mut claimed = Vec::new();
        for (hash, entry) in wanted.iter_mut() {
            if entry.asked.is_some() {
                continue;
            }
            if let Some(i) = entry.waiting.iter().position(|a| a.peer == peer) {
                let announced = entry.waiting.remove(i);
                entry.asked = Some(announced);
                claimed.push((*hash, announced));
            }
        }
        claimed
    }

    /// `hash` arrived (delivered, or the pool has it): nobody needs asking any more.
    pub(crate) fn done(&self, hash: &B256) {
        self.0.lock().remove(hash);
    }

    /// `peer` failed to deliver `hashes`: each goes to its next announcer still
    /// connected (`connected`), now marked asked. Returns the hashes to ask, by peer;
    /// hashes with nobody left are forgotten.
    pub(crate) fn failed(
        &self,
        peer: NodeId,
        hashes: &[B256],
        connected: impl Fn(&NodeId) -> bool,
    ) -> HashMap<NodeId, Vec<(B256, Announced)>> {
        let mut wanted = self.0.lock();
        let mut next: HashMap<NodeId, Vec<(B256, Announced)>> = HashMap::new();
        for hash in hashes {
            let Some(entry) = wanted.get_mut(hash) else { continue };
            if entry.asked.is_some_and(|a| a.peer != peer) {
                continue;
            }
            entry.asked = None;
            entry.waiting.retain(|a| a.peer != peer && connected(&a.peer));
            if entry.waiting.is_empty() {
                wanted.remove(hash);
                continue;
            }
            let announced = entry.waiting.remove(0);
            entry.asked = Some(announced);
            next.entry(announced.peer).or_default().push((*hash, announced));
        }
        next
    }

    /// How many hashes are tracked.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(i: u8) -> Announced {
        Announced { peer: NodeId(alloy_primitives::B512::repeat_byte(i)), ty: 2, size: 100 }
    }

    #[test]
    fn a_hash_is_asked_of_one_announcer_and_of_the_next_when_that_one_fails() {
        let fetcher = TxFetcher::default();
        let hash = B256::repeat_byte(9);
        for i in 1..=3 {
            fetcher.announce(hash, from(i));
        }
        assert_eq!(fetcher.claim(from(1).peer), vec![(hash, from(1))]);
        // Already asked: the others' claims get nothing.
        assert!(fetcher.claim(from(2).peer).is_empty());
        // Peer 1 fails; peer 2 disconnected meanwhile: peer 3 is next.
        let next = fetcher.failed(from(1).peer, &[hash], |p| *p != from(2).peer);
        assert_eq!(next.get(&from(3).peer), Some(&vec![(hash, from(3))]));
        // Peer 3 fails too: nobody is left, the hash is forgotten.
        assert!(fetcher.failed(from(3).peer, &[hash], |_| true).is_empty());
        assert_eq!(fetcher.len(), 0);
    }

    #[test]
    fn a_failure_reported_by_a_peer_not_asked_changes_nothing() {
        let fetcher = TxFetcher::default();
        let hash = B256::repeat_byte(9);
        fetcher.announce(hash, from(1));
        fetcher.announce(hash, from(2));
        fetcher.claim(from(1).peer);
        assert!(fetcher.failed(from(2).peer, &[hash], |_| true).is_empty());
        fetcher.done(&hash);
        assert_eq!(fetcher.len(), 0);
    }

    #[test]
    fn the_book_is_bounded() {
        let fetcher = TxFetcher::default();
        for i in 0..(MAX_WANTED as u64 + 10) {
            fetcher.announce(B256::from(alloy_primitives::U256::from(i)), from(1));
        }
        assert_eq!(fetcher.len(), MAX_WANTED);
        let hash = B256::ZERO;
        for i in 0..40 {
            fetcher.announce(
                hash,
                Announced { peer: NodeId(alloy_primitives::B512::repeat_byte(i)), ty: 2, size: 1 },
            );
        }
        assert!(fetcher.0.lock()[&hash].waiting.len() <= MAX_ANNOUNCERS);
    }
}
