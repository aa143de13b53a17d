//! Blob transactions in the pool, with sidecars whose commitments and proofs c-kzg
//! computed: the sidecar rules by fork (and which refusals are the deliverer's fault),
//! the blob pool's stricter replacement and ordering rules, the blob store on disk, and
//! a sidecar outliving its transaction's inclusion for a reorg to bring it back.

use alloy_consensus::{SignableTransaction, TxEip1559, TxEip4844};
use alloy_eips::eip4844::{Blob, BlobTransactionSidecar, Bytes48};
use alloy_eips::eip7594::BlobTransactionSidecarEip7594;
use alloy_primitives::{Address, TxKind, B256, U256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use ethrex_common::{Fork, Transaction};
use ethrex_txpool::{
    with_sidecar, Account, Added, BlobStore, Head, PoolConfig, PoolError, Sidecar, TxPool,
};
use std::collections::HashMap;
use std::sync::OnceLock;

const CHAIN_ID: u64 = 1337;
const GWEI: u128 = 1_000_000_000;

fn key(i: u8) -> PrivateKeySigner {
    PrivateKeySigner::from_bytes(&B256::repeat_byte(i + 1)).unwrap()
}

fn head(fork: Fork, number: u64) -> Head {
    Head {
        hash: B256::ZERO,
        number,
        chain_id: CHAIN_ID,
        fork,
        base_fee: 7,
        gas_limit: 30_000_000,
        blob_base_fee: 1,
        max_blobs_per_tx: 6,
        max_blobs_per_block: 9,
    }
}

fn state() -> HashMap<Address, Account> {
    (0..4)
        .map(|i| {
            (
                key(i).address(),
                Account { nonce: 0, balance: U256::from(10u128.pow(20)), ..Default::default() },
            )
        })
        .collect()
}

/// A blob whose field elements are all below the BLS modulus (each starts with a 0 byte).
fn blob(seed: u8) -> Blob {
    let mut blob = Blob::default();
    for (i, chunk) in blob.chunks_mut(32).enumerate() {
        chunk[1..].fill(seed.wrapping_add(i as u8));
    }
    blob
}

fn kzg() -> &'static alloy_eips::eip4844::env_settings::KzgSettings {
    alloy_eips::eip4844::env_settings::EnvKzgSettings::Default.get()
}

/// Version-0 sidecars (one proof per blob) for blobs 1 and 2, computed once.
fn v0(seed: u8) -> BlobTransactionSidecar {
    static SIDECARS: OnceLock<Vec<BlobTransactionSidecar>> = OnceLock::new();
    SIDECARS.get_or_init(|| {
        (1..=2)
            .map(|s| {
                BlobTransactionSidecar::try_from_blobs_with_settings(vec![blob(s)], kzg()).unwrap()
            })
            .collect()
    })[seed as usize - 1]
        .clone()
}

/// Version-1 sidecars (128 cell proofs per blob) for blobs 1 and 2, computed once.
fn v1(seed: u8) -> BlobTransactionSidecarEip7594 {
    static SIDECARS: OnceLock<Vec<BlobTransactionSidecarEip7594>> = OnceLock::new();
    SIDECARS.get_or_init(|| {
        (1..=2)
            .map(|s| {
                BlobTransactionSidecarEip7594::try_from_blobs_with_settings(vec![blob(s)], kzg())
                    .unwrap()
            })
            .collect()
    })[seed as usize - 1]
        .clone()
}

/// A one-blob transaction from key `from` for `sidecar`'s blob, without the sidecar.
fn blob_tx(from: u8, nonce: u64, fees: u128, blob_fee_cap: u128, sidecar: &Sidecar) -> Transaction {
    let tx = TxEip4844 {
        chain_id: CHAIN_ID,
        nonce,
        gas_limit: 21_000,
        max_fee_per_gas: fees * GWEI,
        max_priority_fee_per_gas: fees * GWEI,
        to: Address::repeat_byte(0xbb),
        max_fee_per_blob_gas: blob_fee_cap,
        blob_versioned_hashes: sidecar.versioned_hashes().collect(),
        ..Default::default()
    };
    let sig = key(from).sign_hash_sync(&tx.signature_hash()).unwrap();
    Transaction::from(tx.into_signed(sig))
}

/// `blob_tx` in its network form.
fn network(from: u8, nonce: u64, fees: u128, blob_fee_cap: u128, sidecar: Sidecar) -> Transaction {
    with_sidecar(&blob_tx(from, nonce, fees, blob_fee_cap, &sidecar), sidecar)
}

fn osaka_pool() -> TxPool {
    TxPool::new(PoolConfig::default(), head(Fork::Osaka, 10))
}

#[test]
fn a_blob_transaction_with_a_valid_cell_proof_sidecar_is_pooled_and_served_whole() {
    let pool = osaka_pool();
    let sidecar = Sidecar::Eip7594(v1(1));
    let tx = network(0, 0, 2, 10, sidecar.clone());
    let hash = *tx.tx_hash();
    assert_eq!(pool.add(tx.clone(), &state()), Ok(Added::Pending(hash)));
    // What a peer asking for it gets is the network form, byte for byte.
    let served = pool.get_network(&hash).expect("pooled");
    assert_eq!(alloy_rlp::encode(&served), alloy_rlp::encode(&tx));
    // The consensus form is what a block takes.
    assert_eq!(pool.get(&hash).unwrap().tx.tx_hash(), &hash);
    let pooled = pool.get(&hash).unwrap();
    assert!(matches!(&*pooled.tx, Transaction::Eip4844(s) if s.tx().as_with_sidecar().is_none()));
    let versioned = sidecar.versioned_hashes().next().unwrap();
    let (found, index) = pool.blob_store().blob(&versioned).expect("blob by versioned hash");
    assert_eq!((found.blobs()[index], index), (blob(1), 0));
}

#[test]
fn sidecar_faults_are_the_deliverers_and_fee_faults_are_not() {
    let pool = osaka_pool();
    let sidecar = Sidecar::Eip7594(v1(1));

    let bare = blob_tx(0, 0, 2, 10, &sidecar);
    let err = pool.add(bare, &state()).unwrap_err();
    assert_eq!(err, PoolError::MissingSidecar);
    assert_eq!(err.to_string(), "missing sidecar in blob transaction");

    let mut zeroed = v1(1);
    zeroed.commitments[0] = Bytes48::ZERO;
    // The transaction names the real blob's hash; the zeroed commitment does not give it.
    let mismatched = with_sidecar(&blob_tx(0, 0, 2, 10, &sidecar), Sidecar::Eip7594(zeroed));
    let err = pool.add(mismatched, &state()).unwrap_err();
    assert!(matches!(err, PoolError::VersionedHashMismatch { index: 0, .. }), "{err}");
    assert!(err.is_peer_fault());

    // Blob 2's proofs do not prove blob 1.
    let mut swapped = v1(1);
    swapped.cell_proofs = v1(2).cell_proofs;
    let err = pool.add(network(0, 0, 2, 10, Sidecar::Eip7594(swapped)), &state()).unwrap_err();
    assert!(matches!(err, PoolError::Kzg(_)), "{err}");
    assert!(err.is_peer_fault());

    // Version 0 after Osaka is the wrong format.
    let err = pool.add(network(0, 0, 2, 10, Sidecar::Eip4844(v0(1))), &state()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Wrong sidecar format: unexpected sidecar version, want: 1, got: 0"
    );
    assert!(err.is_peer_fault());

    let err = pool.add(network(0, 0, 2, 0, sidecar), &state()).unwrap_err();
    assert!(matches!(err, PoolError::BlobFeeCapTooLow(0)), "{err}");
    assert!(!err.is_peer_fault());
    assert!(pool.is_empty() && pool.blob_store().is_empty());
}

#[test]
fn before_osaka_the_sidecar_carries_one_proof_per_blob() {
    let pool = TxPool::new(PoolConfig::default(), head(Fork::Prague, 10));
    let tx = network(0, 0, 2, 10, Sidecar::Eip4844(v0(1)));
    assert!(pool.add(tx, &state()).is_ok());
    let err = pool.add(network(1, 0, 2, 10, Sidecar::Eip7594(v1(2))), &state()).unwrap_err();
    assert!(matches!(err, PoolError::SidecarFormat(_)), "{err}");
    // Before Cancun there are no blob transactions at all.
    let pool = TxPool::new(PoolConfig::default(), head(Fork::Shanghai, 10));
    let err = pool.add(network(0, 0, 2, 10, Sidecar::Eip4844(v0(1))), &state()).unwrap_err();
    assert_eq!(err, PoolError::TypeNotSupported);
}

#[test]
fn a_blob_replacement_doubles_every_fee_including_the_blob_fee_cap() {
    let pool = osaka_pool();
    let first = network(0, 0, 2, 10, Sidecar::Eip7594(v1(1)));
    pool.add(first.clone(), &state()).unwrap();
    // 50% more on everything is enough for a plain transaction, not for a blob one.
    let err = pool.add(network(0, 0, 3, 15, Sidecar::Eip7594(v1(2))), &state()).unwrap_err();
    assert_eq!(err, PoolError::ReplacementUnderpriced);
    // Double fees but the same blob fee cap: still not enough.
    let err = pool.add(network(0, 0, 4, 10, Sidecar::Eip7594(v1(2))), &state()).unwrap_err();
    assert_eq!(err, PoolError::ReplacementUnderpriced);
    let second = network(0, 0, 4, 20, Sidecar::Eip7594(v1(2)));
    assert!(pool.add(second.clone(), &state()).is_ok());
    assert!(pool.get(first.tx_hash()).is_none());
    // The replaced transaction's sidecar went with it.
    assert_eq!(pool.blob_store().len(), 1);
    assert!(pool.sidecar(first.tx_hash()).is_none());
    assert!(pool.sidecar(second.tx_hash()).is_some());
}

#[test]
fn blob_transactions_take_no_nonce_gap_and_share_no_sender_with_plain_ones() {
    let pool = osaka_pool();
    let err = pool.add(network(0, 1, 2, 10, Sidecar::Eip7594(v1(1))), &state()).unwrap_err();
    assert_eq!(err.to_string(), "nonce too high: tx nonce 1, gapped nonce 0");

    let plain = TxEip1559 {
        chain_id: CHAIN_ID,
        nonce: 0,
        gas_limit: 21_000,
        max_fee_per_gas: 2 * GWEI,
        max_priority_fee_per_gas: GWEI,
        to: TxKind::Call(Address::repeat_byte(0xaa)),
        ..Default::default()
    };
    let sig = key(1).sign_hash_sync(&plain.signature_hash()).unwrap();
    pool.add(Transaction::from(plain.into_signed(sig)), &state()).unwrap();
    let err = pool.add(network(1, 1, 2, 10, Sidecar::Eip7594(v1(1))), &state()).unwrap_err();
    assert_eq!(err.to_string(), "address already reserved");
}

#[test]
fn a_block_is_offered_only_blob_transactions_that_pay_the_blob_base_fee() {
    let pool = osaka_pool();
    let cheap = network(0, 0, 2, 5, Sidecar::Eip7594(v1(1)));
    let dear = network(1, 0, 2, 50, Sidecar::Eip7594(v1(2)));
    pool.add(cheap.clone(), &state()).unwrap();
    pool.add(dear.clone(), &state()).unwrap();
    let mut next = head(Fork::Osaka, 10);
    next.blob_base_fee = 20;
    pool.on_new_head(next, &state(), vec![]);
    let offered: Vec<B256> = pool.best(&state()).map(|p| p.hash).collect();
    assert_eq!(offered, vec![*dear.tx_hash()]);
}

#[test]
fn an_included_blob_keeps_its_sidecar_for_a_reorg_and_then_goes() {
    let pool = osaka_pool();
    let tx = network(0, 0, 2, 10, Sidecar::Eip7594(v1(1)));
    let hash = *tx.tx_hash();
    pool.add(tx, &state()).unwrap();
    let mut after = state();
    after.get_mut(&key(0).address()).unwrap().nonce = 1;
    pool.on_new_head(head(Fork::Osaka, 11), &after, vec![]);
    assert!(pool.get(&hash).is_none(), "included");
    assert!(pool.sidecar(&hash).is_some(), "kept for a reorg");

    // The block is unwound: its transaction comes back with the kept sidecar.
    let consensus = blob_tx(0, 0, 2, 10, &Sidecar::Eip7594(v1(1)));
    assert_eq!(consensus.tx_hash(), &hash);
    pool.on_new_head(head(Fork::Osaka, 10), &state(), vec![consensus]);
    assert!(pool.get(&hash).is_some(), "re-injected");

    // Included again, and 65 blocks later the sidecar is gone.
    pool.on_new_head(head(Fork::Osaka, 11), &after, vec![]);
    pool.on_new_head(head(Fork::Osaka, 76), &after, vec![]);
    assert!(pool.sidecar(&hash).is_none());
    assert!(pool.blob_store().is_empty());
}

#[test]
fn over_the_datacap_the_cheapest_blob_transaction_makes_room_or_the_new_one_is_refused() {
    let one = Sidecar::Eip7594(v1(1));
    let mut encoded = Vec::new();
    alloy_eips::eip7594::Encodable7594::encode_7594(&one, &mut encoded);
    let config = PoolConfig { blob_datacap: encoded.len() + 100, ..PoolConfig::default() };
    let pool = TxPool::new(config, head(Fork::Osaka, 10));
    let cheap = network(0, 0, 2, 10, one);
    pool.add(cheap.clone(), &state()).unwrap();
    let cheaper = network(1, 0, 2, 5, Sidecar::Eip7594(v1(2)));
    assert_eq!(pool.add(cheaper, &state()).unwrap_err(), PoolError::Underpriced);
    let dearer = network(1, 0, 2, 50, Sidecar::Eip7594(v1(2)));
    pool.add(dearer.clone(), &state()).unwrap();
    assert!(pool.get(cheap.tx_hash()).is_none());
    assert!(pool.get(dearer.tx_hash()).is_some());
    assert!(pool.blob_store().bytes() <= encoded.len() + 100);
}

#[test]
fn the_disk_store_serves_sidecars_it_no_longer_caches() {
    let dir = std::env::temp_dir().join(format!("ethrex-blobstore-{}", std::process::id()));
    let store = BlobStore::on_disk(dir.clone(), 1).unwrap();
    let pool = TxPool::with_blob_store(PoolConfig::default(), head(Fork::Osaka, 10), store);
    let a = network(0, 0, 2, 10, Sidecar::Eip7594(v1(1)));
    let b = network(1, 0, 2, 10, Sidecar::Eip7594(v1(2)));
    pool.add(a.clone(), &state()).unwrap();
    pool.add(b.clone(), &state()).unwrap();
    assert_eq!(pool.blob_store().cached_bytes(), 0, "a 1-byte cache holds nothing");
    assert_eq!(alloy_rlp::encode(pool.get_network(a.tx_hash()).unwrap()), alloy_rlp::encode(&a));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
    let _ = std::fs::remove_dir_all(dir);
}
