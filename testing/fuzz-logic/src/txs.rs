//! The transaction-pool target: transactions as strangers send them, through the pool
//! that takes them. Byte 0's low bit picks the way in:
//!
//! - even: the rest is one `eth_sendRawTransaction` payload (EIP-2718 network form: a
//!   blob transaction with its sidecar) for `decode_network` and `TxPool::add`;
//! - odd: the rest is an eth/71 `PooledTransactions` message (byte 0's bit 1 clear) or a
//!   `Transactions` message (set), decoded as the network layer decodes it, each
//!   transaction then offered to the pool.
//!
//! The pool validates against an Amsterdam head where the key `0x01..01` is funded, so
//! that seeds signed with it reach acceptance. Asserts no panic; every refusal is a
//! typed `PoolError` with a message; a taken transaction is served back (`get_network`)
//! as the very bytes it arrived as, is refused as "already known" the second time, and
//! the pool stays within its limits.

use alloy_primitives::{Address, B256, U256};
use ethrex_common::{Fork, Transaction};
use ethrex_net::eth::EthMessage;
use ethrex_txpool::{Account, Head, PoolConfig, PoolError, TxPool};
use std::collections::HashMap;

/// The chain id the target's pool takes (the seeds sign for it).
pub const FUZZ_CHAIN_ID: u64 = 1337;

/// The funded account: the address of secret key `0x01` repeated.
fn funded() -> Address {
    let key = secp256k1::SecretKey::from_byte_array([1; 32]).expect("a valid key");
    let public = key.public_key(secp256k1::SECP256K1).serialize_uncompressed();
    Address::from_raw_public_key(&public[1..])
}

fn pool() -> (TxPool, HashMap<Address, Account>) {
    let head = Head {
        hash: B256::ZERO,
        number: 1,
        chain_id: FUZZ_CHAIN_ID,
        fork: Fork::Amsterdam,
        base_fee: 7,
        gas_limit: 30_000_000,
        blob_base_fee: 1,
        max_blobs_per_tx: 6,
        max_blobs_per_block: 21,
    };
    let config = PoolConfig { max_transactions: 64, ..PoolConfig::default() };
    let state = HashMap::from([(
        funded(),
        Account { nonce: 0, balance: U256::from(10u128.pow(24)), has_code: false },
    )]);
    (TxPool::new(config, head), state)
}

/// Offers `tx` (arrived as `raw`, when it arrived alone) and checks what the pool did.
fn offer(pool: &TxPool, state: &HashMap<Address, Account>, tx: Transaction, raw: Option<&[u8]>) {
    match pool.add(tx.clone(), state) {
        Ok(added) => {
            let served = pool.get_network(&added.hash()).expect("a taken transaction is held");
            if let Some(raw) = raw {
                let encoded = alloy_eips::eip2718::Encodable2718::encoded_2718(&served);
                assert_eq!(encoded, raw, "served back as other bytes than it arrived as");
            }
            assert_eq!(pool.add(tx, state), Err(PoolError::AlreadyKnown));
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
    assert!(pool.len() <= pool.config().max_transactions);
}

/// See the module documentation.
pub fn pooled_transactions(data: &[u8]) {
    let [selector, rest @ ..] = data else { return };
    let (pool, state) = pool();
    if selector & 1 == 0 {
        match ethrex_txpool::decode_network(rest) {
            Ok(tx) => offer(&pool, &state, tx, Some(rest)),
            Err(e) => assert!(e.is_peer_fault(), "a decoding error is the sender's fault"),
        }
        return;
    }
    let code = if selector & 2 == 0 { 0x0a } else { 0x02 };
    let Ok(message) = EthMessage::decode(71, code, rest) else { return };
    let raws = match message {
        EthMessage::PooledTransactions(m) => m.transactions,
        EthMessage::Transactions(m) => m.transactions,
        other => panic!("code {code:#x} decoded as {other:?}"),
    };
    for raw in raws.iter().take(64) {
        let mut buf = raw.as_ref();
        let Ok(tx) = <Transaction as alloy_rlp::Decodable>::decode(&mut buf) else { continue };
        if buf.is_empty() {
            offer(&pool, &state, tx, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed(name: &str) -> Vec<u8> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/corpus/pooled_transactions");
        std::fs::read(format!("{dir}/{name}")).expect("a committed seed")
    }

    #[test]
    fn the_seeds_reach_the_pool_and_its_refusals() {
        for name in ["raw-eip1559", "raw-legacy-eip155", "raw-eip2930"] {
            let (pool, state) = pool();
            let tx = ethrex_txpool::decode_network(&seed(name)[1..]).unwrap();
            assert!(pool.add(tx, &state).is_ok(), "{name} is taken");
        }
        let (pool, state) = pool();
        let wrong = ethrex_txpool::decode_network(&seed("raw-wrong-chain")[1..]).unwrap();
        assert_eq!(pool.add(wrong, &state), Err(PoolError::InvalidSender));
        let err = ethrex_txpool::decode_network(&seed("raw-trailing-byte")[1..]).unwrap_err();
        assert!(err.is_peer_fault());
        for name in ["pooled-three", "broadcast-two"] {
            let data = seed(name);
            let code = if data[0] & 2 == 0 { 0x0a } else { 0x02 };
            assert!(EthMessage::decode(71, code, &data[1..]).is_ok(), "{name} decodes");
        }
    }
}
