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
        admit(inner, txs, Some(peer.id)).await;
    }
    Ok(())
}

/// Hands `txs` to the pool (off the async workers) and passes on those it took.
async fn admit(inner: &Arc<Inner>, txs: Vec<Transaction>, from: Option<crate::NodeId>) {
    let host = inner.host.clone();
    let Ok(verdicts) = tokio::task::spawn_blocking(move || {
        let verdicts = host.add_transactions(txs.clone());
        (txs, verdicts)
    })
    .await
    else {
        return;
    };
    let (txs, verdicts) = verdicts;
    let taken: Vec<Transaction> =
        txs.into_iter().zip(verdicts).filter(|(_, v)| v.is_ok()).map(|(tx, _)| tx).collect();
    if !taken.is_empty() {
        propagate(inner, taken, from);
    }
}

/// `NewPooledTransactionHashes` from `peer`: the hashes the pool lacks are fetched from it
/// (in the background: its answer comes through this peer's own read loop).
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
    let mut announced = HashMap::with_capacity(n);
    for ((hash, ty), size) in message.hashes.iter().zip(message.types.iter()).zip(&message.sizes) {
        peer.known.insert(*hash);
        if announced.insert(*hash, (*ty, *size)).is_some() {
            return drop_peer(inner, peer, format!("hash {hash} announced twice")).await;
        }
    }
    if !inner.host.accepts_transactions() {
        return Ok(());
    }
    let host = inner.host.clone();
    let wanted: Vec<B256> =
        message.hashes.into_iter().filter(|h| !host.has_transaction(h)).collect();
    if wanted.is_empty() {
        return Ok(());
    }
    let (inner, peer) = (inner.clone(), peer.clone());
    tokio::spawn(async move {
        for chunk in wanted.chunks(MAX_HASHES_PER_REQUEST) {
            if fetch(&inner, &peer, chunk.to_vec(), &announced).await.is_err() {
                return;
            }
        }
    });
    Ok(())
}

/// Asks `peer` for `hashes` and admits what it delivers, after checking each delivery
/// against its announcement (type, and size within 8 bytes, as geth allows).
async fn fetch(
    inner: &Arc<Inner>,
    peer: &Arc<Peer>,
    hashes: Vec<B256>,
    announced: &HashMap<B256, (u8, u64)>,
) -> Result<(), ()> {
    let answer = peer
        .request(|request_id| {
            EthMessage::GetPooledTransactions(GetPooledTransactions { request_id, hashes })
        })
        .await;
    let Ok(EthMessage::PooledTransactions(delivered)) = answer else { return Err(()) };
    let txs = match decode_all(&delivered.transactions, false) {
        Ok(txs) => txs,
        Err(why) => {
            let _ = drop_peer(inner, peer, why).await;
            return Err(());
        }
    };
    for tx in &txs {
        if let Some((ty, size)) = announced.get(tx.tx_hash()) {
            let real = tx.encode_2718_len() as u64;
            if tx.ty() != *ty || real.abs_diff(*size) > 8 {
                let why = format!(
                    "transaction {} delivered as type {} of {real} bytes, announced as type {ty} of {size}",
                    tx.tx_hash(),
                    tx.ty()
                );
                let _ = drop_peer(inner, peer, why).await;
                return Err(());
            }
        }
    }
    admit(inner, txs, Some(peer.id)).await;
    Ok(())
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
