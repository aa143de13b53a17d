//! Transactions between peers (eth/68+ forms): `Transactions` and
//! `NewPooledTransactionHashes` in, `GetPooledTransactions` out to fetch what was
//! announced, and every transaction the pool takes passed on at once: in full to a square
//! root of the peers, as an announcement to the rest, never to a peer known to have it.
//!
//! A peer is dropped, with an RLPx Disconnect, for what breaks the protocol itself: an
//! undecodable transaction, a blob transaction broadcast in full, a hash twice in one
//! message, an announcement whose lists differ in length, or a delivery whose type or
//! size differs from what it announced. A transaction the pool refuses (underpriced,
//! nonce too low, ...) is not an offence.

use super::fetcher::Announced;
use super::peer::Peer;
use super::{Inner, Offence};
use crate::eth::{EthMessage, GetPooledTransactions, NewPooledTransactionHashes, Transactions};
use crate::rlpx::DisconnectReason;
use alloy_consensus::Typed2718 as _;
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{Bytes, B256};
use ethrex_common::Transaction;
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Hashes remembered per peer as known to it (sent by it or to it). A full set is
/// cleared: at worst a peer is sent a transaction it has once more.
const MAX_KNOWN_PER_PEER: usize = 32_768;
/// Hashes asked for in one `GetPooledTransactions` (geth's and the spec's soft limit).
const MAX_HASHES_PER_REQUEST: usize = 256;
/// Transactions in one `Transactions` message a peer may send (geth's limit).
const MAX_TXS_PER_MESSAGE: usize = 5_000;
/// Transactions that can never be valid (bad signature, too little gas, ...) a peer may
/// send before it is dropped: a few honest mistakes pass, a spammer does not.
const MAX_INVALID_TXS: u32 = 256;
/// A transaction larger than this (encoded) is only announced, never sent in full.
const MAX_BROADCAST_SIZE: usize = 4_096;

/// The hashes a peer is known to have.
#[derive(Default)]
pub(crate) struct KnownTxs(Mutex<HashSet<B256>>);

impl KnownTxs {
    /// Marks `hash` known; whether it was not known before.
    pub(crate) fn insert(&self, hash: B256) -> bool {
        let mut known = self.0.lock();
        if known.len() >= MAX_KNOWN_PER_PEER {
            known.clear();
        }
        known.insert(hash)
    }

    fn contains(&self, hash: &B256) -> bool {
        self.0.lock().contains(hash)
    }
}

/// Decodes one transaction as it travels in `Transactions` and `PooledTransactions`.
fn decode(raw: &Bytes) -> Result<Transaction, String> {
    let mut buf = raw.as_ref();
    let tx = <Transaction as alloy_rlp::Decodable>::decode(&mut buf).map_err(|e| e.to_string())?;
    if !buf.is_empty() {
        return Err("trailing bytes after a transaction".into());
    }
    Ok(tx)
}

async fn drop_peer(inner: &Inner, peer: &Peer, why: String) -> Result<(), String> {
    inner.peers.punish(peer.id, Offence::Malformed);
    peer.disconnect(DisconnectReason::BreachOfProtocol).await;
    Err(format!("dropped: {why}"))
}

/// Transactions decoded from `raw`, or why the message breaks the protocol; a blob
/// transaction counts as one when `broadcast` (blob transactions are only announced).
fn decode_all(raw: &[Bytes], broadcast: bool) -> Result<Vec<Transaction>, String> {
    let mut seen = HashSet::with_capacity(raw.len());
    raw.iter()
        .map(|raw| {
            let tx = decode(raw).map_err(|e| format!("undecodable transaction: {e}"))?;
            if broadcast && tx.is_eip4844() {
                return Err("a blob transaction broadcast in full".into());
            }
            if !seen.insert(*tx.tx_hash()) {
                return Err(format!("transaction {} twice in one message", tx.tx_hash()));
            }
            Ok(tx)
        })
        .collect()
}

/// `Transactions` from `peer`.
pub(crate) async fn on_transactions(
    inner: &Arc<Inner>,
    peer: &Arc<Peer>,
    message: Transactions,
) -> Result<(), String> {
    if message.transactions.len() > MAX_TXS_PER_MESSAGE {
        let n = message.transactions.len();
        return drop_peer(inner, peer, format!("{n} transactions in one message")).await;
    }
    let txs = match decode_all(&message.transactions, true) {
        Ok(txs) => txs,
        Err(why) => return drop_peer(inner, peer, why).await,
    };
    for tx in &txs {
        peer.known.insert(*tx.tx_hash());
    }
    if inner.host.accepts_transactions() {
        admit(inner, txs, Some(peer)).await;
    }
    Ok(())
}

/// Hands `txs` to the pool (off the async workers) and passes on those it took. Returns
/// the hashes whose verdict condemns their deliverer (a bad sidecar), after dropping
/// that peer.
async fn admit(inner: &Arc<Inner>, txs: Vec<Transaction>, from: Option<&Arc<Peer>>) -> Vec<B256> {
    let host = inner.host.clone();
    let Ok((txs, verdicts)) = tokio::task::spawn_blocking(move || {
        let verdicts = host.add_transactions(txs.clone());
        (txs, verdicts)
    })
    .await
    else {
        return Vec::new();
    };
    let mut taken = Vec::new();
    let mut faults = Vec::new();
    let mut invalid = 0;
    for (tx, verdict) in txs.into_iter().zip(verdicts) {
        match verdict {
            Ok(_) => taken.push(tx),
            Err(e) if e.is_peer_fault() => faults.push((*tx.tx_hash(), e)),
            Err(e) if e.is_invalid() => invalid += 1,
            Err(_) => {}
        }
    }
    if !taken.is_empty() {
        propagate(inner, taken, from.map(|p| p.id));
    }
    if let (Some(peer), Some((hash, why))) = (from, faults.first()) {
        let _ = drop_peer(inner, peer, format!("transaction {hash}: {why}")).await;
    } else if let Some(peer) = from.filter(|_| invalid > 0) {
        let sent = peer.invalid_txs.fetch_add(invalid, std::sync::atomic::Ordering::Relaxed);
        if sent + invalid > MAX_INVALID_TXS {
            let why = format!("{} transactions that can never be valid", sent + invalid);
            let _ = drop_peer(inner, peer, why).await;
        }
    }
    faults.into_iter().map(|(hash, _)| hash).collect()
}

/// How long an announced transaction is given to arrive by broadcast before it is asked
/// for (geth waits 500 ms); announcers of the same hash meanwhile join its book entry.
const ARRIVE_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

/// `NewPooledTransactionHashes` from `peer`: the hashes the pool lacks go into the
/// fetcher's book; after `ARRIVE_WAIT` those nobody is asked for yet are asked of this
/// peer (in the background: its answer comes through this peer's own read loop).
pub(crate) async fn on_announcement(
    inner: &Arc<Inner>,
    peer: &Arc<Peer>,
    message: NewPooledTransactionHashes,
) -> Result<(), String> {
    let n = message.hashes.len();
    if message.types.len() != n || message.sizes.len() != n {
        let why = format!(
            "announcement lists of {} types, {} sizes, {n} hashes",
            message.types.len(),
            message.sizes.len()
        );
        return drop_peer(inner, peer, why).await;
    }
    let mut seen = HashSet::with_capacity(n);
    for hash in &message.hashes {
        peer.known.insert(*hash);
        if !seen.insert(*hash) {
            return drop_peer(inner, peer, format!("hash {hash} announced twice")).await;
        }
    }
    if !inner.host.accepts_transactions() {
        return Ok(());
    }
    let mut any = false;
    for ((hash, ty), size) in message.hashes.iter().zip(message.types.iter()).zip(&message.sizes) {
        if !inner.host.has_transaction(hash) {
            inner.fetcher.announce(*hash, Announced { peer: peer.id, ty: *ty, size: *size });
            any = true;
        }
    }
    if any {
        let (inner, peer) = (inner.clone(), peer.clone());
        tokio::spawn(async move {
            tokio::time::sleep(ARRIVE_WAIT).await;
            let claimed: Vec<(B256, Announced)> = inner
                .fetcher
                .claim(peer.id)
                .into_iter()
                .filter(|(hash, _)| {
                    let have = inner.host.has_transaction(hash);
                    if have {
                        inner.fetcher.done(hash);
                    }
                    !have
                })
                .collect();
            fetch_all(inner, peer, claimed).await;
        });
    }
    Ok(())
}

/// Asks `peer` for `claimed` (in requests of at most 256 hashes); what it fails to
/// deliver is asked of the next announcers, each in its own task.
async fn fetch_all(inner: Arc<Inner>, peer: Arc<Peer>, claimed: Vec<(B256, Announced)>) {
    for chunk in claimed.chunks(MAX_HASHES_PER_REQUEST) {
        let failed = fetch(&inner, &peer, chunk).await;
        if failed.is_empty() {
            continue;
        }
        let next = inner.fetcher.failed(peer.id, &failed, |p| inner.peers.contains(p));
        for (id, claimed) in next {
            let Some(next_peer) = inner.peers.get(&id) else {
                let hashes: Vec<B256> = claimed.iter().map(|(h, _)| *h).collect();
                inner.fetcher.failed(id, &hashes, |_| false);
                continue;
            };
            spawn_fetch_all(inner.clone(), next_peer, claimed);
        }
    }
}

/// `fetch_all` in a task of its own (boxed: `fetch_all` starts these itself).
fn spawn_fetch_all(inner: Arc<Inner>, peer: Arc<Peer>, claimed: Vec<(B256, Announced)>) {
    let task: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> =
        Box::pin(fetch_all(inner, peer, claimed));
    tokio::spawn(task);
}

/// Asks `peer` for `claimed` and admits what it delivers, after checking each delivery
/// against what this peer announced (type, and size within 8 bytes, as geth allows).
/// Returns the hashes it failed to deliver, or delivered bad; a peer that breaks the
/// protocol is dropped.
async fn fetch(inner: &Arc<Inner>, peer: &Arc<Peer>, claimed: &[(B256, Announced)]) -> Vec<B256> {
    let hashes: Vec<B256> = claimed.iter().map(|(h, _)| *h).collect();
    let answer = peer
        .request(|request_id| {
            let hashes = hashes.clone();
            EthMessage::GetPooledTransactions(GetPooledTransactions { request_id, hashes })
        })
        .await;
    let Ok(EthMessage::PooledTransactions(delivered)) = answer else { return hashes };
    let txs = match decode_all(&delivered.transactions, false) {
        Ok(txs) => txs,
        Err(why) => {
            let _ = drop_peer(inner, peer, why).await;
            return hashes;
        }
    };
    let announced: HashMap<B256, Announced> = claimed.iter().copied().collect();
    for tx in &txs {
        if let Some(a) = announced.get(tx.tx_hash()) {
            let real = tx.encode_2718_len() as u64;
            if tx.ty() != a.ty || real.abs_diff(a.size) > 8 {
                let why = format!(
                    "transaction {} delivered as type {} of {real} bytes, announced as type {} of {}",
                    tx.tx_hash(),
                    tx.ty(),
                    a.ty,
                    a.size
                );
                let _ = drop_peer(inner, peer, why).await;
                return hashes;
            }
        }
    }
    let delivered: HashSet<B256> = txs.iter().map(|tx| *tx.tx_hash()).collect();
    let faults = admit(inner, txs, Some(peer)).await;
    let mut failed: Vec<B256> = hashes.into_iter().filter(|h| !delivered.contains(h)).collect();
    for hash in &delivered {
        if faults.contains(hash) {
            failed.push(*hash);
        } else {
            inner.fetcher.done(hash);
        }
    }
    failed
}

/// Passes `txs` (just taken by the pool) on to every peer but `from` that is not known
/// to have them: in full to a square root of them (small non-blob transactions only), as
/// announcements to the others.
pub(crate) fn propagate(inner: &Arc<Inner>, txs: Vec<Transaction>, from: Option<crate::NodeId>) {
    let peers: Vec<Arc<Peer>> =
        inner.peers.all().into_iter().filter(|p| Some(p.id) != from).collect();
    if peers.is_empty() {
        return;
    }
    let full_count = (peers.len() as f64).sqrt().ceil() as usize;
    let inner = inner.clone();
    inner.clone().runtime.spawn(async move {
        for (i, peer) in peers.iter().enumerate() {
            let fresh: Vec<&Transaction> =
                txs.iter().filter(|tx| !peer.known.contains(tx.tx_hash())).collect();
            let (mut full, mut hashes) = (Vec::new(), NewPooledTransactionHashes::default());
            for tx in fresh {
                peer.known.insert(*tx.tx_hash());
                let size = tx.encode_2718_len();
                if i < full_count && !tx.is_eip4844() && size <= MAX_BROADCAST_SIZE {
                    full.push(Bytes::from(alloy_rlp::encode(tx)));
                } else {
                    let mut types = hashes.types.to_vec();
                    types.push(tx.ty());
                    hashes.types = types.into();
                    hashes.sizes.push(size as u64);
                    hashes.hashes.push(*tx.tx_hash());
                }
            }
            if !full.is_empty() {
                let message = EthMessage::Transactions(Transactions { transactions: full });
                peer.send(message).await;
            }
            if !hashes.hashes.is_empty() {
                peer.send(EthMessage::NewPooledTransactionHashes(hashes)).await;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_consensus::{SignableTransaction, TxEip1559, TxEip4844};
    use alloy_primitives::Signature;

    fn raw<T: SignableTransaction<Signature>>(tx: T) -> Bytes
    where
        Transaction: From<alloy_consensus::Signed<T>>,
    {
        let signature =
            Signature::new(alloy_primitives::U256::from(1), alloy_primitives::U256::from(2), false);
        Bytes::from(alloy_rlp::encode(Transaction::from(tx.into_signed(signature))))
    }

    #[test]
    fn a_blob_transaction_is_refused_in_a_broadcast_and_taken_when_fetched() {
        let blob = raw(TxEip4844 {
            blob_versioned_hashes: vec![B256::repeat_byte(1)],
            ..Default::default()
        });
        let err = decode_all(std::slice::from_ref(&blob), true).unwrap_err();
        assert!(err.contains("blob transaction broadcast"), "{err}");
        assert_eq!(decode_all(&[blob], false).unwrap().len(), 1);
    }

    #[test]
    fn a_hash_twice_in_one_message_and_trailing_bytes_are_protocol_breaches() {
        let tx = raw(TxEip1559 { nonce: 1, ..Default::default() });
        let err = decode_all(&[tx.clone(), tx.clone()], true).unwrap_err();
        assert!(err.contains("twice"), "{err}");
        let mut trailing = tx.to_vec();
        trailing.push(0x80);
        assert!(decode_all(&[trailing.into()], true).is_err());
    }

    #[test]
    fn the_known_set_is_bounded() {
        let known = KnownTxs::default();
        for i in 0..(MAX_KNOWN_PER_PEER as u64 + 10) {
            known.insert(B256::from(alloy_primitives::U256::from(i)));
        }
        assert!(known.0.lock().len() <= MAX_KNOWN_PER_PEER);
    }
}
