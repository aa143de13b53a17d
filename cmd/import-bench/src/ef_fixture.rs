//! Writes a chain as an EF `blockchain_test` fixture, so independent executors (revm's
//! `revme btest`, geth's `evm blocktest`) can check it.

use alloy_consensus::transaction::SignerRecoverable;
use alloy_consensus::{Transaction as _, Typed2718};
use alloy_primitives::{Address, Bytes, B256, U256};
use alloy_rlp::Encodable;
use ethrex_blockchain::genesis::GenesisAccount;
use ethrex_common::{Block, BlockWithBal, ChainConfig, Fork, Header, Transaction};
use ethrex_storage::Store;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

fn q(v: impl std::fmt::LowerHex) -> String {
    format!("{v:#x}")
}

fn header_json(h: &Header) -> Value {
    let mut m = json!({
        "parentHash": h.parent_hash, "uncleHash": h.ommers_hash, "coinbase": h.beneficiary,
        "stateRoot": h.state_root, "transactionsTrie": h.transactions_root, "receiptTrie": h.receipts_root,
        "bloom": h.logs_bloom, "difficulty": q(h.difficulty), "number": q(h.number), "gasLimit": q(h.gas_limit),
        "gasUsed": q(h.gas_used), "timestamp": q(h.timestamp), "extraData": h.extra_data, "mixHash": h.mix_hash,
        "nonce": h.nonce, "hash": h.hash_slow(),
    });
    let o = m.as_object_mut().unwrap();
    let mut opt = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            o.insert(k.to_string(), v);
        }
    };
    opt("baseFeePerGas", h.base_fee_per_gas.map(|v| json!(q(v))));
    opt("withdrawalsRoot", h.withdrawals_root.map(|v| json!(v)));
    opt("blobGasUsed", h.blob_gas_used.map(|v| json!(q(v))));
    opt("excessBlobGas", h.excess_blob_gas.map(|v| json!(q(v))));
    opt("parentBeaconBlockRoot", h.parent_beacon_block_root.map(|v| json!(v)));
    opt("requestsHash", h.requests_hash.map(|v| json!(v)));
    opt("blockAccessListHash", h.block_access_list_hash.map(|v| json!(v)));
    opt("slotNumber", h.slot_number.map(|v| json!(q(v))));
    m
}

fn tx_json(tx: &Transaction) -> anyhow::Result<Value> {
    let sender = tx.recover_signer()?;
    let sig = tx.signature();
    let mut m = Map::new();
    m.insert("type".into(), json!(q(tx.ty())));
    if let Some(id) = tx.chain_id() {
        m.insert("chainId".into(), json!(q(id)));
    }
    m.insert("nonce".into(), json!(q(tx.nonce())));
    if tx.is_dynamic_fee() {
        m.insert("maxFeePerGas".into(), json!(q(tx.max_fee_per_gas())));
        m.insert(
            "maxPriorityFeePerGas".into(),
            json!(q(tx.max_priority_fee_per_gas().unwrap_or_default())),
        );
    } else {
        m.insert("gasPrice".into(), json!(q(tx.gas_price().unwrap_or_default())));
    }
    m.insert("gasLimit".into(), json!(q(tx.gas_limit())));
    m.insert("to".into(), json!(tx.to().map(|a| a.to_string()).unwrap_or_default()));
    m.insert("value".into(), json!(q(tx.value())));
    m.insert("data".into(), json!(tx.input()));
    if let Some(list) = tx.access_list() {
        m.insert("accessList".into(), serde_json::to_value(list)?);
    }
    if let Some(hashes) = tx.blob_versioned_hashes() {
        m.insert(
            "maxFeePerBlobGas".into(),
            json!(q(tx.max_fee_per_blob_gas().unwrap_or_default())),
        );
        m.insert("blobVersionedHashes".into(), json!(hashes));
    }
    if let Some(auths) = tx.authorization_list() {
        m.insert("authorizationList".into(), serde_json::to_value(auths)?);
    }
    let v = if tx.is_legacy() {
        match tx.chain_id() {
            Some(id) => U256::from(sig.v() as u64 + 35 + 2 * id),
            None => U256::from(sig.v() as u64 + 27),
        }
    } else {
        U256::from(sig.v() as u64)
    };
    m.insert("v".into(), json!(q(v)));
    m.insert("r".into(), json!(q(sig.r())));
    m.insert("s".into(), json!(q(sig.s())));
    m.insert("sender".into(), json!(sender));
    m.insert("hash".into(), json!(tx.tx_hash()));
    Ok(Value::Object(m))
}

/// The BAL in the EF fixtures' JSON naming (`blockAccessIndex`, `postBalance`, ...), which
/// other runners parse.
fn bal_json(bal: &ethrex_common::BlockAccessList) -> Value {
    let idx = |i: &alloy_eips::eip7928::BlockAccessIndex| q(i.0);
    Value::Array(
        bal.iter()
            .map(|a| {
                json!({
                    "address": a.address,
                    "nonceChanges": a.nonce_changes.iter().map(|c| json!({"blockAccessIndex": idx(&c.block_access_index), "postNonce": q(c.new_nonce)})).collect::<Vec<_>>(),
                    "balanceChanges": a.balance_changes.iter().map(|c| json!({"blockAccessIndex": idx(&c.block_access_index), "postBalance": q(c.post_balance)})).collect::<Vec<_>>(),
                    "codeChanges": a.code_changes.iter().map(|c| json!({"blockAccessIndex": idx(&c.block_access_index), "newCode": c.new_code})).collect::<Vec<_>>(),
                    "storageChanges": a.storage_changes.iter().map(|s| json!({
                        "slot": q(s.slot),
                        "slotChanges": s.changes.iter().map(|c| json!({"blockAccessIndex": idx(&c.block_access_index), "postValue": q(c.new_value)})).collect::<Vec<_>>(),
                    })).collect::<Vec<_>>(),
                    "storageReads": a.storage_reads.iter().map(|r| q(*r)).collect::<Vec<_>>(),
                })
            })
            .collect(),
    )
}

fn account_json(nonce: u64, balance: U256, code: &Bytes, storage: &BTreeMap<U256, U256>) -> Value {
    // Full 32-byte words: geth rejects odd-length hex in storage maps.
    let storage: Map<String, Value> =
        storage.iter().map(|(k, v)| (B256::from(*k).to_string(), json!(B256::from(*v)))).collect();
    json!({ "nonce": q(nonce), "balance": q(balance), "code": code, "storage": storage })
}

/// The post state: every account of the store's flat state.
fn post_state(store: &Store) -> anyhow::Result<Map<String, Value>> {
    let mut out = Map::new();
    for (address, account) in store.all_accounts()? {
        let code = store.code(&account.code_hash)?.unwrap_or_default();
        let storage: BTreeMap<U256, U256> = store.storage_entries(&address)?.into_iter().collect();
        out.insert(
            address.to_string(),
            account_json(account.nonce, account.balance, &code, &storage),
        );
    }
    Ok(out)
}

/// Renders the chain as a one-test `blockchain_test` fixture file.
pub(crate) fn blockchain_test_json(
    name: &str,
    fork: Fork,
    config: &ChainConfig,
    genesis: &Block,
    alloc: &BTreeMap<Address, GenesisAccount>,
    blocks: &[BlockWithBal],
    store_after: &Store,
) -> anyhow::Result<Value> {
    let pre: Map<String, Value> = alloc
        .iter()
        .map(|(a, acc)| {
            (a.to_string(), account_json(acc.nonce, acc.balance, &acc.code, &acc.storage))
        })
        .collect();
    let mut json_blocks = Vec::with_capacity(blocks.len());
    for b in blocks {
        let mut rlp = Vec::new();
        b.block.encode(&mut rlp);
        let txs =
            b.block.body.transactions.iter().map(tx_json).collect::<anyhow::Result<Vec<_>>>()?;
        let withdrawals = b.block.body.withdrawals.as_ref().map(|w| {
            w.iter()
                .map(|w| json!({"index": q(w.index), "validatorIndex": q(w.validator_index), "address": w.address, "amount": q(w.amount)}))
                .collect::<Vec<_>>()
        });
        let mut entry = json!({
            "blockHeader": header_json(&b.block.header),
            "transactions": txs,
            "uncleHeaders": [],
            "rlp": Bytes::from(rlp),
            "blocknumber": b.block.header.number.to_string(),
        });
        if let Some(w) = withdrawals {
            entry["withdrawals"] = json!(w);
        }
        if let Some(bal) = &b.bal {
            entry["blockAccessList"] = bal_json(bal);
        }
        json_blocks.push(entry);
    }
    let mut genesis_rlp = Vec::new();
    genesis.encode(&mut genesis_rlp);
    let blob_schedule: Map<String, Value> = config
        .inner
        .blob_schedule
        .iter()
        .map(|(k, p)| {
            let mut name = k.clone();
            if let Some(first) = name.get_mut(0..1) {
                first.make_ascii_uppercase();
            }
            if name.starts_with("Bpo") {
                name = name.to_uppercase();
            }
            (name, json!({"target": q(p.target_blob_count), "max": q(p.max_blob_count), "baseFeeUpdateFraction": q(p.update_fraction as u64)}))
        })
        .collect();
    let last = blocks
        .last()
        .map(|b| b.block.header.hash_slow())
        .unwrap_or_else(|| genesis.header.hash_slow());
    let test = json!({
        "network": fork.name(),
        "genesisBlockHeader": header_json(&genesis.header),
        "genesisRLP": Bytes::from(genesis_rlp),
        "pre": pre,
        "postState": post_state(store_after)?,
        "lastblockhash": last,
        "config": { "network": fork.name(), "chainid": q(config.chain_id()), "blobSchedule": blob_schedule },
        "sealEngine": "NoProof",
        "blocks": json_blocks,
    });
    Ok(json!({ name: test }))
}
