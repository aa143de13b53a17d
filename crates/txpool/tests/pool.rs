//! The pool's rules on signed transactions: pending and queued by nonce gaps, geth's
//! replacement bump and error words, cumulative balance checks, limits and eviction, the
//! best-first order a block builder takes, and the clean-up on a new head.

use alloy_consensus::{SignableTransaction, TxEip1559, TxEip2930, TxLegacy};
use alloy_primitives::{Address, Bytes, TxKind, B256, U256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use ethrex_common::{Fork, Transaction};
use ethrex_txpool::{Account, Added, Head, PoolConfig, PoolError, TxPool};
use std::collections::HashMap;

const CHAIN_ID: u64 = 1337;
const BASE_FEE: u64 = 7;
const GWEI: u128 = 1_000_000_000;

fn key(i: u8) -> PrivateKeySigner {
    PrivateKeySigner::from_bytes(&B256::repeat_byte(i + 1)).unwrap()
}

fn head(fork: Fork) -> Head {
    Head {
        hash: B256::ZERO,
        number: 10,
        chain_id: CHAIN_ID,
        fork,
        base_fee: BASE_FEE,
        gas_limit: 30_000_000,
        blob_base_fee: 1,
        max_blobs_per_tx: 6,
        max_blobs_per_block: 9,
    }
}

fn pool_with(config: PoolConfig) -> TxPool {
    TxPool::new(config, head(Fork::Prague))
}

fn pool() -> TxPool {
    pool_with(PoolConfig::default())
}

/// Accounts at the head: every test key with 1 ETH and nonce 0.
fn state() -> HashMap<Address, Account> {
    (0..8)
        .map(|i| {
            (
                key(i).address(),
                Account { nonce: 0, balance: U256::from(10u128.pow(18)), ..Default::default() },
            )
        })
        .collect()
}

fn sign<T: SignableTransaction<alloy_primitives::Signature>>(
    signer: &PrivateKeySigner,
    tx: T,
) -> Transaction
where
    Transaction: From<alloy_consensus::Signed<T>>,
{
    let sig = signer.sign_hash_sync(&tx.signature_hash()).unwrap();
    Transaction::from(tx.into_signed(sig))
}

/// A 21,000-gas transfer from key `from` with `nonce`, fee cap and tip in gwei.
fn transfer(from: u8, nonce: u64, fee_cap: u128, tip: u128) -> Transaction {
    sign(
        &key(from),
        TxEip1559 {
            chain_id: CHAIN_ID,
            nonce,
            gas_limit: 21_000,
            max_fee_per_gas: fee_cap * GWEI,
            max_priority_fee_per_gas: tip * GWEI,
            to: TxKind::Call(Address::repeat_byte(0xaa)),
            value: U256::from(1),
            ..Default::default()
        },
    )
}

#[test]
fn a_gap_queues_a_transaction_and_filling_it_makes_the_chain_pending() {
    let (pool, state) = (pool(), state());
    let sender = key(0).address();
    assert!(matches!(pool.add(transfer(0, 0, 10, 1), &state), Ok(Added::Pending(_))));
    assert!(matches!(pool.add(transfer(0, 2, 10, 1), &state), Ok(Added::Queued(_))));
    assert_eq!(pool.pending_nonce(&sender, &state), 1);
    let content = pool.content(&state);
    assert_eq!((content.pending[&sender].len(), content.queued[&sender].len()), (1, 1));

    pool.add(transfer(0, 1, 10, 1), &state).unwrap();
    assert_eq!(pool.pending_nonce(&sender, &state), 3);
    assert!(pool.content(&state).queued.is_empty());
}

#[test]
fn a_replacement_must_pay_ten_percent_more_on_both_fee_cap_and_tip() {
    let (pool, state) = (pool(), state());
    let first = transfer(0, 0, 100, 10);
    pool.add(first.clone(), &state).unwrap();
    assert_eq!(pool.add(first.clone(), &state), Err(PoolError::AlreadyKnown));
    for (cap, tip) in [(109, 11), (110, 10), (200, 10), (105, 20)] {
        let err = pool.add(transfer(0, 0, cap, tip), &state).unwrap_err();
        assert_eq!(err, PoolError::ReplacementUnderpriced, "cap {cap} tip {tip}");
        assert_eq!(err.to_string(), "replacement transaction underpriced");
    }
    let better = transfer(0, 0, 110, 11);
    pool.add(better.clone(), &state).unwrap();
    assert!(pool.get(first.hash()).is_none(), "the replaced transaction is gone");
    assert_eq!(pool.get(better.hash()).unwrap().sender, key(0).address());
    assert_eq!(pool.len(), 1);
}

#[test]
fn refusals_carry_geths_words() {
    let (pool, mut state) = (pool(), state());
    state.get_mut(&key(1).address()).unwrap().nonce = 5;
    let low = pool.add(transfer(1, 4, 10, 1), &state).unwrap_err();
    assert!(low.to_string().starts_with("nonce too low"), "{low}");

    let wrong_chain = sign(
        &key(0),
        TxEip1559 {
            chain_id: CHAIN_ID + 1,
            gas_limit: 21_000,
            max_fee_per_gas: 10 * GWEI,
            ..Default::default()
        },
    );
    assert_eq!(pool.add(wrong_chain, &state).unwrap_err().to_string(), "invalid sender");

    let mut short = TxEip1559 {
        chain_id: CHAIN_ID,
        gas_limit: 20_999,
        max_fee_per_gas: 10 * GWEI,
        max_priority_fee_per_gas: 1,
        ..Default::default()
    };
    short.to = TxKind::Call(Address::repeat_byte(1));
    assert_eq!(
        pool.add(sign(&key(0), short), &state).unwrap_err().to_string(),
        "intrinsic gas too low"
    );

    let tip_above_cap = transfer(0, 0, 1, 2);
    assert_eq!(
        pool.add(tip_above_cap, &state).unwrap_err().to_string(),
        "max priority fee per gas higher than max fee per gas"
    );
    let huge = TxEip1559 {
        chain_id: CHAIN_ID,
        gas_limit: 30_000_001,
        max_fee_per_gas: 10,
        ..Default::default()
    };
    assert_eq!(
        pool.add(sign(&key(0), huge), &state).unwrap_err().to_string(),
        "exceeds block gas limit"
    );
    let no_tip = transfer(0, 0, 10, 0);
    assert_eq!(
        pool.add(no_tip, &state).unwrap_err().to_string(),
        "transaction gas price below minimum: gas tip cap 0, minimum needed 1"
    );
    let unknown_type = ethrex_txpool::decode_network(&[0x4e, 0xc0]).unwrap_err();
    assert_eq!(unknown_type.to_string(), "transaction type not supported");
    let too_short = ethrex_txpool::decode_network(&[0x02]).unwrap_err();
    assert_eq!(too_short.to_string(), "typed transaction too short");
    let poor =
        Account { nonce: 0, balance: U256::from(21_000u128 * 10 * GWEI), ..Default::default() };
    state.insert(key(2).address(), poor);
    let err = pool.add(transfer(2, 0, 10, 1), &state).unwrap_err();
    assert!(err.to_string().starts_with("insufficient funds for gas * price + value"), "{err}");
    assert!(pool.is_empty());
}

#[test]
fn a_type_before_its_fork_is_refused() {
    let state = state();
    let istanbul = TxPool::new(PoolConfig::default(), head(Fork::Istanbul));
    let typed = sign(
        &key(0),
        TxEip2930 { chain_id: CHAIN_ID, gas_limit: 21_000, gas_price: 10, ..Default::default() },
    );
    assert_eq!(istanbul.add(typed, &state), Err(PoolError::TypeNotSupported));
    let legacy = sign(
        &key(0),
        TxLegacy {
            chain_id: Some(CHAIN_ID),
            gas_limit: 21_000,
            gas_price: 10,
            to: TxKind::Call(Address::ZERO),
            ..Default::default()
        },
    );
    assert_eq!(istanbul.add(legacy, &state).map(|a| matches!(a, Added::Pending(_))), Ok(true));
}

#[test]
fn the_sender_must_afford_its_earlier_pooled_transactions_too() {
    let (pool, mut state) = (pool(), state());
    // Enough for two transfers at 10 gwei, not three.
    let balance = U256::from(2 * 21_000u128 * 10 * GWEI + 2);
    state.insert(key(3).address(), Account { nonce: 0, balance, ..Default::default() });
    pool.add(transfer(3, 0, 10, 1), &state).unwrap();
    pool.add(transfer(3, 1, 10, 1), &state).unwrap();
    let err = pool.add(transfer(3, 2, 10, 1), &state).unwrap_err();
    assert!(matches!(err, PoolError::InsufficientFunds { .. }), "{err}");
}

#[test]
fn a_burst_of_two_thousand_from_one_sender_fits_and_is_all_pending() {
    let (pool, state) = (pool(), state());
    for nonce in 0..2000 {
        assert!(matches!(pool.add(transfer(4, nonce, 1, 1), &state), Ok(Added::Pending(_))));
    }
    assert_eq!(pool.pending_nonce(&key(4).address(), &state), 2000);
}

#[test]
fn a_full_pool_drops_its_cheapest_for_a_better_transaction_and_refuses_a_worse_one() {
    let config = PoolConfig { max_transactions: 3, ..PoolConfig::default() };
    let (pool, state) = (pool_with(config), state());
    let cheap = transfer(0, 0, 100, 2);
    pool.add(cheap.clone(), &state).unwrap();
    pool.add(transfer(1, 0, 100, 5), &state).unwrap();
    pool.add(transfer(2, 0, 100, 6), &state).unwrap();
    let err = pool.add(transfer(3, 0, 100, 1), &state).unwrap_err();
    assert_eq!(err.to_string(), "transaction underpriced");
    assert_eq!(
        pool.add(transfer(3, 0, 100, 2), &state),
        Err(PoolError::Underpriced),
        "equal is not better"
    );
    pool.add(transfer(3, 0, 100, 3), &state).unwrap();
    assert_eq!(pool.len(), 3);
    assert!(pool.get(cheap.hash()).is_none(), "the cheapest made room");
}

#[test]
fn best_takes_senders_by_tip_each_in_nonce_order_and_skips_a_sender_on_request() {
    let (pool, state) = (pool(), state());
    let a0 = transfer(0, 0, 100, 1);
    let a1 = transfer(0, 1, 100, 50);
    let b0 = transfer(1, 0, 100, 10);
    let c0 = transfer(2, 0, 100, 5);
    let c1 = transfer(2, 1, 100, 5);
    let below_base_fee = sign(
        &key(5),
        TxEip1559 {
            chain_id: CHAIN_ID,
            gas_limit: 21_000,
            max_fee_per_gas: u128::from(BASE_FEE) - 1,
            max_priority_fee_per_gas: 1,
            to: TxKind::Call(Address::ZERO),
            ..Default::default()
        },
    );
    for tx in [&a1, &a0, &b0, &c0, &c1, &below_base_fee] {
        pool.add(tx.clone(), &state).unwrap();
    }
    let order: Vec<B256> = pool.best(&state).map(|p| p.hash).collect();
    let want: Vec<B256> = [&b0, &c0, &c1, &a0, &a1].iter().map(|t| *t.hash()).collect();
    assert_eq!(order, want, "b (10), c (5, 5), then a (1 before its 50)");

    let mut best = pool.best(&state);
    assert_eq!(best.next().unwrap().hash, *b0.hash());
    best.skip_sender(key(2).address());
    let rest: Vec<B256> = best.map(|p| p.hash).collect();
    assert_eq!(rest, vec![*a0.hash(), *a1.hash()]);
}

#[test]
fn a_new_head_drops_what_it_included_and_what_became_unaffordable_and_takes_back_unwound() {
    let (pool, mut state) = (pool(), state());
    let included = transfer(0, 0, 10, 1);
    let next = transfer(0, 1, 10, 1);
    let unaffordable = transfer(1, 0, 10, 1);
    for tx in [&included, &next, &unaffordable] {
        pool.add(tx.clone(), &state).unwrap();
    }
    // The new head included sender 0's nonce 0; sender 1 spent its balance elsewhere.
    state.get_mut(&key(0).address()).unwrap().nonce = 1;
    state.get_mut(&key(1).address()).unwrap().balance = U256::from(1);
    let unwound = transfer(2, 0, 10, 1);
    let dropped = pool.on_new_head(head(Fork::Prague), &state, vec![unwound.clone()]);
    assert_eq!(dropped, 2);
    assert!(pool.get(included.hash()).is_none() && pool.get(unaffordable.hash()).is_none());
    assert!(pool.get(next.hash()).is_some() && pool.get(unwound.hash()).is_some());
    assert_eq!(pool.pending_nonce(&key(0).address(), &state), 2);
}

#[test]
fn raw_bytes_that_are_not_a_transaction_are_refused_as_rlp() {
    let (pool, state) = (pool(), state());
    let err = pool.add_raw(&Bytes::from_static(&[0x02, 0xc0]), &state).unwrap_err();
    assert!(matches!(err, PoolError::Decode(_)), "{err}");
}

/// A set-code transaction (EIP-7702) from key `from` whose one authorization, signed by
/// key `authority`, delegates to 0xcc...cc.
fn set_code(from: u8, nonce: u64, authority: u8) -> Transaction {
    use alloy_eips::eip7702::Authorization;
    let auth = Authorization {
        chain_id: U256::from(CHAIN_ID),
        address: Address::repeat_byte(0xcc),
        nonce: 0,
    };
    let sig = key(authority).sign_hash_sync(&auth.signature_hash()).unwrap();
    sign(
        &key(from),
        alloy_consensus::TxEip7702 {
            chain_id: CHAIN_ID,
            nonce,
            gas_limit: 100_000,
            max_fee_per_gas: 10 * GWEI,
            max_priority_fee_per_gas: GWEI,
            to: Address::repeat_byte(0xaa),
            authorization_list: vec![auth.into_signed(sig)],
            ..Default::default()
        },
    )
}

#[test]
fn a_delegated_sender_has_one_transaction_in_flight_its_replacement_aside() {
    let (pool, mut state) = (pool(), state());
    state.get_mut(&key(0).address()).unwrap().has_code = true;
    let err = pool.add(transfer(0, 1, 10, 1), &state).unwrap_err();
    assert_eq!(err.to_string(), "gapped-nonce tx from delegated accounts");
    pool.add(transfer(0, 0, 10, 1), &state).unwrap();
    let err = pool.add(transfer(0, 1, 10, 1), &state).unwrap_err();
    assert_eq!(err.to_string(), "in-flight transaction limit reached for delegated accounts");
    assert!(pool.add(transfer(0, 0, 20, 2), &state).is_ok(), "a replacement is taken");
    // The same chain from an undelegated sender is fine.
    pool.add(transfer(1, 0, 10, 1), &state).unwrap();
    pool.add(transfer(1, 1, 10, 1), &state).unwrap();
}

#[test]
fn a_pooled_authorization_limits_its_authority_and_a_busy_authority_is_refused() {
    let (pool, state) = (pool(), state());
    // Key 1 signs a delegation key 0 sends: key 1 may then have one transaction in flight.
    pool.add(set_code(0, 0, 1), &state).unwrap();
    pool.add(transfer(1, 0, 10, 1), &state).unwrap();
    let err = pool.add(transfer(1, 1, 10, 1), &state).unwrap_err();
    assert_eq!(err, PoolError::DelegatedInFlight);
    // Key 2 already has two transactions pooled: an authorization naming it is refused.
    pool.add(transfer(2, 0, 10, 1), &state).unwrap();
    pool.add(transfer(2, 1, 10, 1), &state).unwrap();
    let err = pool.add(set_code(3, 0, 2), &state).unwrap_err();
    assert_eq!(err.to_string(), "authority already reserved");
    // Once the set-code transaction leaves (included), key 1 is free again.
    let mut after = state.clone();
    after.get_mut(&key(0).address()).unwrap().nonce = 1;
    pool.on_new_head(pool.head(), &after, vec![]);
    pool.add(transfer(1, 1, 10, 1), &after).unwrap();
}

#[test]
fn refusals_that_can_never_pass_are_told_apart_from_those_that_may_later() {
    let (pool, mut state) = (pool(), state());
    pool.add(transfer(0, 0, 10, 1), &state).unwrap();
    // Never valid: too little gas for any transfer, a tip above the fee cap.
    let mut starved = TxEip1559 {
        chain_id: CHAIN_ID,
        gas_limit: 20_000,
        max_fee_per_gas: 10 * GWEI,
        max_priority_fee_per_gas: GWEI,
        to: TxKind::Call(Address::repeat_byte(0xaa)),
        ..Default::default()
    };
    let err = pool.add(sign(&key(1), starved.clone()), &state).unwrap_err();
    assert!(err.is_invalid() && !err.is_peer_fault(), "{err}");
    starved.gas_limit = 21_000;
    starved.max_priority_fee_per_gas = 20 * GWEI;
    let err = pool.add(sign(&key(1), starved), &state).unwrap_err();
    assert_eq!(err, PoolError::TipAboveFeeCap);
    assert!(err.is_invalid());
    // Not acceptable now, maybe later or elsewhere: not a sign of a spammer.
    let underpriced = pool.add(transfer(0, 0, 10, 1), &state).unwrap_err();
    assert_eq!(underpriced, PoolError::AlreadyKnown);
    state.get_mut(&key(2).address()).unwrap().nonce = 3;
    for err in [
        underpriced,
        pool.add(transfer(0, 0, 10, 0), &state).unwrap_err(),
        pool.add(transfer(2, 0, 10, 1), &state).unwrap_err(),
    ] {
        assert!(!err.is_invalid(), "{err}");
    }
}
