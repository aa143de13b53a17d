//! The node end to end over HTTP: Engine API payloads and fork choice (including reorgs
//! between two branches), the eth API following the head, and bad input (no or stale or
//! forged JWT, malformed JSON, wrong params, oversized bodies) answered with errors while
//! the node keeps serving.

use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope};
use alloy_primitives::{address, Address, Bytes, TxKind, B256, U256};
use alloy_rpc_types_engine::{ExecutionPayloadV3, ExecutionPayloadV4};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use ethrex_blockchain::genesis::{
    alloc_state_root, genesis_header_at, init_genesis, GenesisAccount,
};
use ethrex_blockchain::{Blockchain, PayloadAttributes};
use ethrex_common::{BlockWithBal, ChainConfig, Fork, Header};
use ethrex_rpc::jwt::JwtSecret;
use ethrex_rpc::server::{start, RunningServers};
use ethrex_rpc::{Node, RpcLimits};
use ethrex_storage::backend::{Entries, KvBackend, SortedWrites, Table};
use ethrex_storage::{DbKind, Store, StoreError};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const RECIPIENT: Address = address!("0x00000000000000000000000000000000000c0ffe");

fn key() -> PrivateKeySigner {
    PrivateKeySigner::from_bytes(&B256::repeat_byte(0x42)).unwrap()
}

fn genesis() -> (Header, BTreeMap<Address, GenesisAccount>, ChainConfig) {
    let mut alloc = ethrex_blockchain::system_contracts::system_contracts();
    alloc.insert(
        key().address(),
        GenesisAccount { balance: U256::from(10u128.pow(24)), ..Default::default() },
    );
    let config = ChainConfig::all_forks_at_genesis(1, Fork::Amsterdam);
    (genesis_header_at(&config, 30_000_000, 7, alloc_state_root(&alloc).unwrap()), alloc, config)
}

fn new_chain() -> Blockchain {
    new_chain_on(Store::in_memory())
}

fn new_chain_on(store: Store) -> Blockchain {
    let (header, alloc, config) = genesis();
    init_genesis(&store, header, &alloc).unwrap();
    Blockchain::new(store, config)
}

/// A value transfer to `RECIPIENT`; the limit covers creating the account, which from
/// Amsterdam on is charged as state gas (EIP-8037: 120 bytes at 1530 gas each).
fn transfer(nonce: u64, value: u64) -> TxEnvelope {
    call(nonce, RECIPIENT, value, Bytes::new(), 250_000)
}

fn call(nonce: u64, to: Address, value: u64, input: Bytes, gas_limit: u64) -> TxEnvelope {
    let tx = TxEip1559 {
        chain_id: 1,
        nonce,
        gas_limit,
        max_fee_per_gas: 1_000,
        max_priority_fee_per_gas: 1,
        to: TxKind::Call(to),
        value: U256::from(value),
        input,
        ..Default::default()
    };
    let sig = key().sign_hash_sync(&tx.signature_hash()).unwrap();
    tx.into_signed(sig).into()
}

fn attributes(timestamp: u64) -> PayloadAttributes {
    PayloadAttributes {
        timestamp,
        fee_recipient: Address::repeat_byte(0xfe),
        prev_randao: B256::with_last_byte(timestamp as u8),
        gas_limit: 30_000_000,
        withdrawals: vec![],
        parent_beacon_block_root: B256::with_last_byte(1),
        slot_number: timestamp,
        extra_data: Bytes::new(),
    }
}

fn payload_params(b: &BlockWithBal) -> Value {
    let hash = b.block.header.hash_slow();
    let payload = ExecutionPayloadV4 {
        payload_inner: ExecutionPayloadV3::from_block_unchecked(hash, &b.block),
        block_access_list: alloy_rlp::encode(b.bal.as_ref().unwrap()).into(),
        slot_number: b.block.header.slot_number.unwrap(),
    };
    json!([
        payload,
        Vec::<B256>::new(),
        b.block.header.parent_beacon_block_root.unwrap(),
        Vec::<Bytes>::new()
    ])
}

struct Running {
    rt: Option<tokio::runtime::Runtime>,
    node: Arc<Node>,
    servers: Option<RunningServers>,
    auth_addr: SocketAddr,
    http_addr: SocketAddr,
    secret: JwtSecret,
    genesis_hash: B256,
}

fn start_node() -> Running {
    start_node_with(Node::new(new_chain()))
}

fn start_node_with(node: Node) -> Running {
    start_node_limited(node, RpcLimits::default())
}

fn start_node_limited(node: Node, limits: RpcLimits) -> Running {
    let genesis_hash = node.chain.store.genesis_hash().unwrap().unwrap();
    let node = Arc::new(node);
    let secret = JwtSecret::from_hex(&"ab".repeat(32)).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let servers = rt
        .block_on(start(
            node.clone(),
            "127.0.0.1:0".parse().unwrap(),
            secret.clone(),
            Some("127.0.0.1:0".parse().unwrap()),
            None,
            limits,
        ))
        .unwrap();
    let (auth_addr, http_addr) = (servers.auth_addr, servers.http.as_ref().unwrap().1);
    Running {
        rt: Some(rt),
        node,
        servers: Some(servers),
        auth_addr,
        http_addr,
        secret,
        genesis_hash,
    }
}

impl Drop for Running {
    /// A handler stuck for good (a deadlock) must fail its test, not hang it: dropping a
    /// runtime would wait for its blocking threads forever.
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_timeout(Duration::from_secs(1));
        }
    }
}

/// How long a request may go unanswered before the test fails: a deadlock guard (a handler
/// stuck for good never answers), not a performance bound (answers take milliseconds, a
/// loaded machine may take seconds).
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// One HTTP/1.1 POST; returns the status code and body (code 0: no answer in time).
fn post(addr: SocketAddr, body: &[u8], bearer: Option<&str>) -> (u16, String) {
    try_post(addr, body, bearer).unwrap()
}

/// `post`, for a server that may have stopped: `None` if it refused or reset the
/// connection.
fn try_post(addr: SocketAddr, body: &[u8], bearer: Option<&str>) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    // A node that stops answering fails the test instead of hanging it.
    s.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
    let auth = bearer.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    let head = format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{auth}Connection: close\r\n\r\n",
        body.len()
    );
    // A server stopping while the request is sent resets the connection: no answer.
    s.write_all(head.as_bytes()).ok()?;
    let _ = s.write_all(body);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).to_string();
    let code = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    Some((code, body))
}

impl Running {
    fn engine(&self, method: &str, params: Value) -> Value {
        let req = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let (code, body) =
            post(self.auth_addr, req.to_string().as_bytes(), Some(&self.secret.token()));
        assert_ne!(code, 0, "{method}: no answer within {READ_TIMEOUT:?} (a deadlock?)");
        assert_eq!(code, 200, "{method}: {body}");
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{method}: {e}: {body}"))
    }
    fn eth(&self, method: &str, params: Value) -> Value {
        let req = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let (code, body) = post(self.http_addr, req.to_string().as_bytes(), None);
        assert_eq!(code, 200, "{method}: {body}");
        serde_json::from_str(&body).unwrap()
    }
    fn balance(&self) -> U256 {
        let v = self.eth("eth_getBalance", json!([RECIPIENT, "latest"]));
        v["result"].as_str().unwrap().parse().unwrap()
    }
    fn new_payload(&self, b: &BlockWithBal) -> String {
        let v = self.engine("engine_newPayloadV5", payload_params(b));
        v["result"]["status"].as_str().unwrap_or_else(|| panic!("{v}")).to_string()
    }
    fn rt(&self) -> &tokio::runtime::Runtime {
        self.rt.as_ref().unwrap()
    }
    /// Stops the servers and releases the node's database.
    fn stop(mut self) {
        let RunningServers { auth, http, engine_runtime, .. } = self.servers.take().unwrap();
        let _ = auth.stop();
        if let Some((h, _)) = &http {
            let _ = h.stop();
        }
        self.rt().block_on(async {
            auth.stopped().await;
            if let Some((h, _)) = http {
                h.stopped().await;
            }
        });
        drop(engine_runtime);
        let node = self.node.clone();
        drop(self);
        wait_until_sole_holder(&node);
        let node =
            Arc::try_unwrap(node).unwrap_or_else(|_| panic!("the servers still hold the node"));
        node.chain.store.flush().unwrap();
    }
    fn fork_choice(&self, head: B256) -> String {
        let v = self.engine("engine_forkchoiceUpdatedV4", json!([{"headBlockHash": head, "safeBlockHash": head, "finalizedBlockHash": self.genesis_hash}, null]));
        v["result"]["payloadStatus"]["status"].as_str().unwrap_or_else(|| panic!("{v}")).to_string()
    }
}

#[test]
fn payloads_fork_choice_and_reorgs_move_the_head_and_state() {
    let node = start_node();
    assert_eq!(node.fork_choice(node.genesis_hash), "VALID");
    let genesis = node.eth("eth_getBlockByNumber", json!(["0x0", false]));
    assert_eq!(genesis["result"]["hash"], json!(node.genesis_hash));

    // Two branches from genesis, built on a separate chain: A1 pays 1000 wei; B1 pays
    // 2000 and B2 another 3000.
    let builder = new_chain();
    let a1 = builder.build_block(&attributes(12), vec![transfer(0, 1000)]).unwrap();
    let b1 = builder.build_block(&attributes(13), vec![transfer(0, 2000)]).unwrap();
    builder.import_block(b1.clone()).unwrap();
    let b2 = builder.build_block(&attributes(25), vec![transfer(1, 3000)]).unwrap();

    assert_eq!(node.new_payload(&a1), "VALID");
    assert_eq!(node.fork_choice(a1.hash()), "VALID");
    assert_eq!(node.balance(), U256::from(1000));

    // Side branch: the parent of B1 is not the head, so it is accepted without execution.
    assert_eq!(node.new_payload(&b1), "ACCEPTED");
    assert_eq!(node.new_payload(&b2), "ACCEPTED");
    assert_eq!(node.fork_choice(b2.hash()), "VALID");
    assert_eq!(node.balance(), U256::from(5000));
    assert_eq!(node.eth("eth_blockNumber", json!([]))["result"], json!("0x2"));

    // State after older blocks, and transactions by hash, follow the canonical branch.
    let balance_at = |n: &str| node.eth("eth_getBalance", json!([RECIPIENT, n]))["result"].clone();
    assert_eq!(balance_at("0x1"), json!("0x7d0"));
    assert_eq!(balance_at("0x0"), json!("0x0"));
    let a1_tx = *a1.block.body.transactions[0].tx_hash();
    let b2_tx = *b2.block.body.transactions[0].tx_hash();
    let by_hash = |h: B256| node.eth("eth_getTransactionByHash", json!([h]))["result"].clone();
    // A1's transfer (nonce 0, spent by B1) is in no canonical block and not pooled.
    assert_eq!(by_hash(a1_tx), Value::Null);
    assert_eq!(by_hash(b2_tx)["blockHash"], json!(b2.hash()));

    // And back.
    assert_eq!(node.fork_choice(a1.hash()), "VALID");
    assert_eq!(node.balance(), U256::from(1000));
    assert_eq!(node.eth("eth_blockNumber", json!([]))["result"], json!("0x1"));
    assert_eq!(by_hash(a1_tx)["blockHash"], json!(a1.hash()));
    // B2's transfer (nonce 1) is valid again on A1: the reorg put it back in the pool.
    let b2_again = by_hash(b2_tx);
    assert_eq!((&b2_again["blockHash"], &b2_again["hash"]), (&Value::Null, &json!(b2_tx)));
    let past_head = node.eth("eth_getBalance", json!([RECIPIENT, "0x2"]));
    assert_eq!(past_head["error"]["message"], "header not found", "{past_head}");
    assert_eq!(node.fork_choice(b2.hash()), "VALID");
    assert_eq!(node.balance(), U256::from(5000));

    // Unknown head: syncing.
    assert_eq!(node.fork_choice(B256::repeat_byte(9)), "SYNCING");
}

#[test]
fn a_head_the_node_lacks_is_synced_from_a_peer_then_answered_valid() {
    // The peer: three blocks of transfers, served over devp2p by a bare chain.
    let source = Arc::new(new_chain());
    let mut head = B256::ZERO;
    for (nonce, timestamp) in [(0, 12), (1, 24), (2, 36)] {
        let block =
            source.build_block(&attributes(timestamp), vec![transfer(nonce, 1000)]).unwrap();
        head = block.hash();
        source.import_block(block).unwrap();
    }
    let node = start_node();
    let peer = network(node.rt(), 1, source.clone());
    let ours = network(node.rt(), 2, node.node.clone());
    ours.add_peer(peer.node_record());
    node.node.network.set(ours).unwrap();

    // The consensus client names the peer's head: SYNCING, until the sync imported it.
    assert_eq!(node.fork_choice(head), "SYNCING");
    fork_choice_until_valid(&node, head);
    assert_eq!(node.balance(), U256::from(3000));
    let latest = node.eth("eth_getBlockByNumber", json!(["latest", false]));
    assert_eq!(latest["result"]["hash"], json!(head));
    assert_eq!(node.eth("eth_syncing", json!([]))["result"], json!(false));
    assert_eq!(
        node.eth("admin_peers", json!([]))["result"][0]["enode"]
            .as_str()
            .unwrap()
            .split('@')
            .next(),
        Some(format!("enode://{}", peer.node_record().id).as_str())
    );
    let info = node.eth("admin_nodeInfo", json!([]));
    assert!(info["result"]["enode"].as_str().unwrap().starts_with("enode://"), "{info}");
    // The peer stored nothing new: it only served.
    assert_eq!(source.store.head().unwrap(), Some(head));
}

/// Starts a network for `host` on loopback with a key made of `byte`.
fn network(
    rt: &tokio::runtime::Runtime,
    byte: u8,
    host: Arc<dyn ethrex_net::ChainHost>,
) -> ethrex_net::Network {
    let key = secp256k1::SecretKey::from_byte_array([byte; 32]).unwrap();
    let config = ethrex_net::NetworkConfig::new(key, "127.0.0.1:0".parse().unwrap());
    rt.block_on(ethrex_net::Network::start(config, host)).unwrap()
}

/// Repeats forkchoiceUpdated on `head` until it is VALID (a deadlock guard of 60 s).
fn fork_choice_until_valid(node: &Running, head: B256) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while node.fork_choice(head) != "VALID" {
        assert!(std::time::Instant::now() < deadline, "the sync did not reach {head}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_sync_follows_the_consensus_clients_head_onto_another_branch() {
    // Two branches from genesis: A1 pays 1000; B1 pays 2000 and B2 another 3000.
    let builder = new_chain();
    let a1 = builder.build_block(&attributes(12), vec![transfer(0, 1000)]).unwrap();
    let b1 = builder.build_block(&attributes(13), vec![transfer(0, 2000)]).unwrap();
    builder.import_block(b1.clone()).unwrap();
    let b2 = builder.build_block(&attributes(25), vec![transfer(1, 3000)]).unwrap();
    let source = Arc::new(new_chain());
    source.import_block(a1.clone()).unwrap();

    let node = start_node();
    let peer = network(node.rt(), 1, source.clone());
    let ours = network(node.rt(), 2, node.node.clone());
    ours.add_peer(peer.node_record());
    node.node.network.set(ours).unwrap();
    assert_eq!(node.fork_choice(a1.hash()), "SYNCING");
    fork_choice_until_valid(&node, a1.hash());
    assert_eq!(node.balance(), U256::from(1000));

    // The peer reorgs to B; the consensus client names B2: the node unwinds A1 and syncs B.
    let side: std::collections::HashMap<B256, BlockWithBal> =
        [b1, b2.clone()].into_iter().map(|b| (b.hash(), b)).collect();
    source.set_head(b2.hash(), &side).unwrap();
    assert_eq!(node.fork_choice(b2.hash()), "SYNCING");
    fork_choice_until_valid(&node, b2.hash());
    assert_eq!(node.balance(), U256::from(5000));
    assert_eq!(node.eth("eth_blockNumber", json!([]))["result"], json!("0x2"));
}

#[test]
fn invalid_payloads_are_reported_and_leave_no_trace() {
    let node = start_node();
    assert_eq!(node.fork_choice(node.genesis_hash), "VALID");
    let builder = new_chain();
    let good = builder.build_block(&attributes(12), vec![transfer(0, 1000)]).unwrap();

    // Wrong block hash.
    let mut params = payload_params(&good);
    params[0]["blockHash"] = json!(B256::repeat_byte(1));
    let v = node.engine("engine_newPayloadV5", params);
    assert_eq!(v["result"]["status"], "INVALID");
    assert_eq!(v["result"]["latestValidHash"], Value::Null);

    // A BAL that does not match execution (header hash fixed up so the block hash holds).
    let mut bad = good.clone();
    let bal = bad.bal.as_mut().unwrap();
    let entry = bal.iter_mut().find(|a| a.address == RECIPIENT).unwrap();
    entry.balance_changes[0].post_balance = U256::from(999);
    bad.block.header.block_access_list_hash =
        Some(ethrex_common::compute_block_access_list_hash(bal));
    let v = node.engine("engine_newPayloadV5", payload_params(&bad));
    assert_eq!(v["result"]["status"], "INVALID", "{v}");
    assert_eq!(v["result"]["latestValidHash"], json!(node.genesis_hash));
    assert!(v["result"]["validationError"].as_str().unwrap().contains("block access list"), "{v}");
    assert_eq!(node.balance(), U256::ZERO);
    assert_eq!(node.eth("eth_getBlockByHash", json!([bad.hash(), false]))["result"], Value::Null);

    // A BAL that does not decode is the block's fault: an INVALID status, not a JSON-RPC
    // error (execution-apis #869), and nothing of the block is stored.
    for garbage in [json!("0x"), json!("0xc2c1"), json!("0xf9ffff01")] {
        let mut params = payload_params(&good);
        params[0]["blockAccessList"] = garbage.clone();
        let v = node.engine("engine_newPayloadV5", params);
        assert_eq!(v["result"]["status"], "INVALID", "{garbage}: {v}");
        assert_eq!(v["result"]["latestValidHash"], json!(node.genesis_hash), "{v}");
        assert!(v["error"].is_null(), "{v}");
    }
    assert_eq!(node.eth("eth_getBlockByHash", json!([good.hash(), false]))["result"], Value::Null);

    // Missing BAL: invalid params. Wrong version for the fork: unsupported fork.
    let mut params = payload_params(&good);
    params[0].as_object_mut().unwrap().remove("blockAccessList");
    assert_eq!(node.engine("engine_newPayloadV5", params)["error"]["code"], -32602);
    let mut v3 = payload_params(&good);
    v3[0].as_object_mut().unwrap().remove("blockAccessList");
    v3[0].as_object_mut().unwrap().remove("slotNumber");
    assert_eq!(node.engine("engine_newPayloadV4", v3)["error"]["code"], -38005);

    // The valid block still imports afterwards.
    assert_eq!(node.new_payload(&good), "VALID");
    assert_eq!(node.fork_choice(good.hash()), "VALID");
    assert_eq!(node.balance(), U256::from(1000));
}

#[test]
fn undecodable_payloads_name_a_latest_valid_hash_only_when_it_is_known() {
    let node = start_node();
    let builder = new_chain();
    let good = builder.build_block(&attributes(12), vec![transfer(0, 1000)]).unwrap();
    let bad = with_wrong_bal(&good);
    let undecodable = |parent: B256, field: &str, garbage: Value| {
        let mut params = payload_params(&good);
        params[0]["parentHash"] = json!(parent);
        params[0][field] = garbage;
        let v = node.engine("engine_newPayloadV5", params);
        assert_eq!(v["result"]["status"], "INVALID", "{v}");
        let reason = v["result"]["validationError"].as_str().unwrap_or_else(|| panic!("{v}"));
        assert!(reason.starts_with("BlockException.INCORRECT_BLOCK_FORMAT: "), "{v}");
        v["result"]["latestValidHash"].clone()
    };
    let unknown = B256::repeat_byte(5);
    for (field, garbage) in
        [("transactions", json!(["0x01"])), ("blockAccessList", json!("0xc2c1"))]
    {
        // On a block the node has, that block is the latest valid one.
        assert_eq!(
            undecodable(node.genesis_hash, field, garbage.clone()),
            json!(node.genesis_hash)
        );
        // On an unknown parent the valid ancestor is not known: null, not the parent.
        assert_eq!(undecodable(unknown, field, garbage.clone()), Value::Null, "{field}");
    }
    // On a known-invalid parent: that parent's latest valid ancestor.
    let v = node.engine("engine_newPayloadV5", payload_params(&bad));
    assert_eq!(v["result"]["status"], "INVALID", "{v}");
    assert_eq!(undecodable(bad.hash(), "transactions", json!(["0x01"])), json!(node.genesis_hash));
    // None of it left a trace: the good block imports.
    assert_eq!(node.new_payload(&good), "VALID");
}

#[test]
fn payload_building_round_trips() {
    let node = start_node();
    let v = node.engine(
        "engine_forkchoiceUpdatedV4",
        json!([{"headBlockHash": node.genesis_hash, "safeBlockHash": node.genesis_hash, "finalizedBlockHash": node.genesis_hash},
               {"timestamp": "0xc", "prevRandao": B256::ZERO, "suggestedFeeRecipient": Address::ZERO, "withdrawals": [], "parentBeaconBlockRoot": B256::ZERO, "slotNumber": "0x1"}]),
    );
    let id = v["result"]["payloadId"].as_str().unwrap_or_else(|| panic!("{v}")).to_string();
    let payload = node.engine("engine_getPayloadV6", json!([id]));
    let exec = &payload["result"]["executionPayload"];
    assert_eq!(exec["blockNumber"], "0x1");
    assert!(exec["blockAccessList"].as_str().unwrap().starts_with("0x"));
    // The node accepts its own payload.
    let params = json!([exec, [], B256::ZERO, []]);
    let status = node.engine("engine_newPayloadV5", params);
    assert_eq!(status["result"]["status"], "VALID", "{status}");
    // Wrong getPayload version for an Amsterdam payload.
    assert_eq!(node.engine("engine_getPayloadV4", json!([id]))["error"]["code"], -38005);
    assert_eq!(
        node.engine("engine_getPayloadV6", json!(["0x0000000000000001"]))["error"]["code"],
        -38001
    );
}

/// A raw transaction as `eth_sendRawTransaction` takes it.
fn raw(tx: &TxEnvelope) -> String {
    format!(
        "0x{}",
        alloy_primitives::hex::encode(alloy_eips::eip2718::Encodable2718::encoded_2718(tx))
    )
}

#[test]
fn transactions_sent_over_rpc_are_built_into_the_next_payload_and_leave_the_pool() {
    let node = start_node();
    let sender = key().address();
    // Pending-transaction filters installed before anything is sent: hashes, and whole
    // transactions.
    let hashes = node.eth("eth_newPendingTransactionFilter", json!([]))["result"].clone();
    let whole = node.eth("eth_newPendingTransactionFilter", json!([true]))["result"].clone();
    let (first, second, gapped) = (transfer(0, 5), transfer(1, 6), transfer(3, 7));
    for tx in [&first, &second, &gapped] {
        let answer = node.eth("eth_sendRawTransaction", json!([raw(tx)]));
        assert_eq!(answer["result"], json!(tx.tx_hash()), "{answer}");
    }
    // Refusals in geth's words; the pool unchanged by them.
    let again = node.eth("eth_sendRawTransaction", json!([raw(&first)]));
    assert_eq!(again["error"]["message"], "already known", "{again}");
    let same_fees = call(0, RECIPIENT, 9, Bytes::new(), 250_000);
    let replaced = node.eth("eth_sendRawTransaction", json!([raw(&same_fees)]));
    assert_eq!(replaced["error"]["message"], "replacement transaction underpriced");
    let status = node.eth("txpool_status", json!([]));
    assert_eq!(status["result"], json!({"pending": "0x2", "queued": "0x1"}), "{status}");
    let pending_nonce = node.eth("eth_getTransactionCount", json!([sender, "pending"]));
    assert_eq!(pending_nonce["result"], "0x2");
    let content = node.eth("txpool_contentFrom", json!([sender]));
    assert_eq!(content["result"]["queued"]["3"]["hash"], json!(gapped.tx_hash()));
    assert_eq!(content["result"]["pending"]["0"]["blockHash"], Value::Null);
    let pending = node.eth("eth_getTransactionByHash", json!([first.tx_hash()]));
    assert_eq!(pending["result"]["blockNumber"], Value::Null, "{pending}");
    assert_eq!(pending["result"]["from"], json!(sender));
    // The executable two, in order, once; the gapped one is not pending.
    let changes = node.eth("eth_getFilterChanges", json!([hashes]));
    assert_eq!(changes["result"], json!([first.tx_hash(), second.tx_hash()]), "{changes}");
    assert_eq!(node.eth("eth_getFilterChanges", json!([hashes]))["result"], json!([]));
    let changes = node.eth("eth_getFilterChanges", json!([whole]))["result"].clone();
    assert_eq!(changes[0], pending["result"], "{changes}");
    assert_eq!(changes[1]["hash"], json!(second.tx_hash()), "{changes}");
    let logs = node.eth("eth_getFilterLogs", json!([hashes]));
    assert_eq!(logs["error"]["message"], "filter is not a log filter", "{logs}");

    // A block filter installed now reports the block built below, once.
    let filter = node.eth("eth_newBlockFilter", json!([]))["result"].clone();
    assert_eq!(node.eth("eth_getFilterChanges", json!([filter]))["result"], json!([]));

    // The payload built next carries the two pending transactions in nonce order.
    let v = node.engine(
        "engine_forkchoiceUpdatedV4",
        json!([{"headBlockHash": node.genesis_hash, "safeBlockHash": node.genesis_hash, "finalizedBlockHash": node.genesis_hash},
               {"timestamp": "0xc", "prevRandao": B256::ZERO, "suggestedFeeRecipient": Address::ZERO, "withdrawals": [], "parentBeaconBlockRoot": B256::ZERO, "slotNumber": "0x1"}]),
    );
    let id = v["result"]["payloadId"].as_str().unwrap_or_else(|| panic!("{v}")).to_string();
    let payload = node.engine("engine_getPayloadV6", json!([id]));
    let exec = &payload["result"]["executionPayload"];
    let txs = exec["transactions"].as_array().unwrap();
    assert_eq!(txs, &vec![json!(raw(&first)), json!(raw(&second))]);
    let hash: B256 = serde_json::from_value(exec["blockHash"].clone()).unwrap();
    let status = node.engine("engine_newPayloadV5", json!([exec, [], B256::ZERO, []]));
    assert_eq!(status["result"]["status"], "VALID", "{status}");
    fork_choice_until_valid(&node, hash);

    // Included: gone from the pool; the account's nonce moved; the gapped one still waits.
    let status = node.eth("txpool_status", json!([]));
    assert_eq!(status["result"], json!({"pending": "0x0", "queued": "0x1"}), "{status}");
    assert_eq!(node.eth("eth_getTransactionCount", json!([sender, "latest"]))["result"], "0x2");
    let balance = node.eth("eth_getBalance", json!([RECIPIENT, "latest"]));
    assert_eq!(balance["result"], "0xb");
    assert_eq!(node.eth("eth_getBalance", json!([RECIPIENT, "0x0"]))["result"], "0x0");

    // Mined: found by hash in the block, with receipts whose gas adds up.
    let mined = node.eth("eth_getTransactionByHash", json!([second.tx_hash()]));
    assert_eq!(mined["result"]["blockHash"], json!(hash), "{mined}");
    assert_eq!(mined["result"]["transactionIndex"], "0x1");
    let receipts = node.eth("eth_getBlockReceipts", json!(["latest"]))["result"].clone();
    let receipts = receipts.as_array().unwrap_or_else(|| panic!("{receipts}")).clone();
    assert_eq!(receipts.len(), 2);
    let gas = |r: &Value, k: &str| u64::from_str_radix(&r[k].as_str().unwrap()[2..], 16).unwrap();
    assert_eq!(
        gas(&receipts[0], "gasUsed") + gas(&receipts[1], "gasUsed"),
        gas(&receipts[1], "cumulativeGasUsed")
    );
    let one = node.eth("eth_getTransactionReceipt", json!([second.tx_hash()]))["result"].clone();
    assert_eq!(one, receipts[1]);
    assert_eq!(one["status"], "0x1");
    assert_eq!(one["from"], json!(sender));
    assert_eq!(
        node.eth("eth_getTransactionReceipt", json!([gapped.tx_hash()]))["result"],
        Value::Null
    );

    assert_eq!(node.eth("eth_getFilterChanges", json!([filter]))["result"], json!([hash]));
    assert_eq!(node.eth("eth_getFilterChanges", json!([filter]))["result"], json!([]));
    assert_eq!(node.eth("eth_uninstallFilter", json!([filter]))["result"], json!(true));
    assert_eq!(node.eth("eth_uninstallFilter", json!([filter]))["result"], json!(false));
    let gone = node.eth("eth_getFilterChanges", json!([filter]));
    assert_eq!(gone["error"]["message"], "filter not found", "{gone}");
}

/// A one-blob transaction to `RECIPIENT` in its network form, with a cell-proof sidecar
/// c-kzg computed for a blob of `seed` bytes.
fn blob_transaction(nonce: u64, seed: u8) -> TxEnvelope {
    use alloy_eips::eip7594::BlobTransactionSidecarEip7594;
    let mut blob = alloy_eips::eip4844::Blob::default();
    for chunk in blob.chunks_mut(32) {
        chunk[1..].fill(seed); // each field element below the BLS modulus
    }
    let kzg = alloy_eips::eip4844::env_settings::EnvKzgSettings::Default.get();
    let sidecar =
        BlobTransactionSidecarEip7594::try_from_blobs_with_settings(vec![blob], kzg).unwrap();
    let tx = alloy_consensus::TxEip4844 {
        chain_id: 1,
        nonce,
        gas_limit: 250_000,
        max_fee_per_gas: 1_000,
        max_priority_fee_per_gas: 1,
        to: RECIPIENT,
        max_fee_per_blob_gas: 10,
        blob_versioned_hashes: sidecar.versioned_hashes().collect(),
        ..Default::default()
    };
    let sig = key().sign_hash_sync(&tx.signature_hash()).unwrap();
    let consensus: TxEnvelope = tx.into_signed(sig).into();
    ethrex_txpool::with_sidecar(&consensus, ethrex_txpool::Sidecar::Eip7594(sidecar))
}

#[test]
fn a_blob_transaction_is_built_with_its_blobs_and_its_blobs_are_served_by_get_blobs() {
    let node = start_node();
    assert_eq!(node.fork_choice(node.genesis_hash), "VALID");
    let tx = blob_transaction(0, 7);
    let (bare, sidecar) = ethrex_txpool::split_sidecar(tx.clone());
    let sidecar = sidecar.unwrap();
    let versioned = sidecar.versioned_hashes().next().unwrap();
    let blob = sidecar.blobs()[0];

    // The consensus form alone is refused: RPC takes the network form.
    let answer = node.eth("eth_sendRawTransaction", json!([raw(&bare)]));
    assert_eq!(answer["error"]["message"], "missing sidecar in blob transaction", "{answer}");
    let answer = node.eth("eth_sendRawTransaction", json!([raw(&tx)]));
    assert_eq!(answer["result"], json!(tx.tx_hash()), "{answer}");

    // getBlobs: V1 ended at Osaka; V2 all or nothing; V3 per blob; a bound on the request.
    let unknown = B256::repeat_byte(1);
    let v1 = node.engine("engine_getBlobsV1", json!([[versioned]]));
    assert_eq!(v1["error"]["code"], -38005, "{v1}");
    let v2 = node.engine("engine_getBlobsV2", json!([[versioned]]));
    assert_eq!(v2["result"][0]["blob"], json!(blob), "{v2}");
    let proofs = v2["result"][0]["proofs"].as_array().unwrap();
    let expected_proofs = &sidecar.as_eip7594().unwrap().cell_proofs;
    assert_eq!(proofs, &expected_proofs.iter().map(|p| json!(p)).collect::<Vec<_>>());
    assert_eq!(
        node.engine("engine_getBlobsV2", json!([[versioned, unknown]]))["result"],
        Value::Null
    );
    let v3 = node.engine("engine_getBlobsV3", json!([[unknown, versioned]]));
    assert_eq!(v3["result"][0], Value::Null, "{v3}");
    assert_eq!(v3["result"][1]["blob"], json!(blob), "{v3}");
    let too_many = vec![unknown; 129];
    assert_eq!(node.engine("engine_getBlobsV3", json!([too_many]))["error"]["code"], -38004);

    // The payload carries the consensus form; its bundle carries the blob and proofs.
    let v = node.engine(
        "engine_forkchoiceUpdatedV4",
        json!([{"headBlockHash": node.genesis_hash, "safeBlockHash": node.genesis_hash, "finalizedBlockHash": node.genesis_hash},
               {"timestamp": "0xc", "prevRandao": B256::ZERO, "suggestedFeeRecipient": Address::ZERO, "withdrawals": [], "parentBeaconBlockRoot": B256::ZERO, "slotNumber": "0x1"}]),
    );
    let id = v["result"]["payloadId"].as_str().unwrap_or_else(|| panic!("{v}")).to_string();
    let payload = node.engine("engine_getPayloadV6", json!([id]));
    let result = &payload["result"];
    assert_eq!(result["executionPayload"]["transactions"], json!([raw(&bare)]), "{payload}");
    assert_eq!(result["executionPayload"]["blobGasUsed"], "0x20000");
    // The gas limit climbs from genesis's 30M toward the default 60M target, one step.
    let limit = 30_000_000u64 + 30_000_000 / 1024 - 1;
    assert_eq!(result["executionPayload"]["gasLimit"], format!("{limit:#x}"));
    assert_eq!(result["blobsBundle"]["blobs"], json!([blob]));
    assert_eq!(result["blobsBundle"]["commitments"], json!(sidecar.commitments()));
    assert_eq!(result["blobsBundle"]["proofs"].as_array().unwrap().len(), 128);
    // One wei of tip on every unit of gas the transaction used.
    let value: U256 = serde_json::from_value(result["blockValue"].clone()).unwrap();
    assert!(value > U256::ZERO && value <= U256::from(250_000), "{value}");

    let exec = &result["executionPayload"];
    let hash: B256 = serde_json::from_value(exec["blockHash"].clone()).unwrap();
    let status = node.engine("engine_newPayloadV5", json!([exec, [versioned], B256::ZERO, []]));
    assert_eq!(status["result"]["status"], "VALID", "{status}");
    fork_choice_until_valid(&node, hash);
    // Included: out of the pool, but the blob is still served for a while.
    assert_eq!(node.eth("txpool_status", json!([]))["result"]["pending"], "0x0");
    let v3 = node.engine("engine_getBlobsV3", json!([[versioned]]));
    assert_eq!(v3["result"][0]["blob"], json!(blob), "{v3}");
}

#[test]
fn bad_requests_get_errors_and_the_node_keeps_serving() {
    let node = start_node();
    let (auth, http) = (node.auth_addr, node.http_addr);
    let call =
        json!({"jsonrpc": "2.0", "id": 1, "method": "engine_exchangeCapabilities", "params": [[]]})
            .to_string();

    assert_eq!(post(auth, call.as_bytes(), None).0, 401, "no token");
    assert_eq!(post(auth, call.as_bytes(), Some("not.a.jwt")).0, 401, "garbage token");
    let forged = JwtSecret::from_hex(&"cd".repeat(32)).unwrap().token();
    assert_eq!(post(auth, call.as_bytes(), Some(&forged)).0, 401, "wrong secret");
    let stale = {
        use jsonwebtoken::{encode, EncodingKey, Header};
        let iat =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
                - 120;
        encode(
            &Header::default(),
            &json!({"iat": iat}),
            &EncodingKey::from_secret(node.secret.as_bytes()),
        )
        .unwrap()
    };
    assert_eq!(post(auth, call.as_bytes(), Some(&stale)).0, 401, "stale iat");
    assert_eq!(post(auth, call.as_bytes(), Some(&node.secret.token())).0, 200);

    let (code, body) = post(http, b"{not json", None);
    assert_eq!(code, 200);
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["error"]["code"], -32700);
    let v = node.eth("eth_getBalance", json!(["0x1234"]));
    assert_eq!(v["error"]["code"], -32602, "{v}");
    let v = node.eth("eth_getBlockByNumber", json!(["pending-ish", false]));
    assert_eq!(v["error"]["code"], -32602, "{v}");
    let v = node.eth("no_such_method", json!([]));
    assert_eq!(v["error"]["code"], -32601, "{v}");
    let huge = vec![b' '; 11 * 1024 * 1024];
    let (code, _) = post(http, &huge, None);
    assert_eq!(code, 413, "oversized body");

    // Still serving.
    assert_eq!(node.eth("eth_chainId", json!([]))["result"], "0x1");
    assert_eq!(
        node.eth("web3_clientVersion", json!([]))["result"].as_str().unwrap().split('/').next(),
        Some("ethrex")
    );
}

/// Clients that send a request's headers and then stall in its body: the server times
/// the body out and frees their request slots, so honest requests get through again even
/// when the stalled requests once filled every slot.
#[test]
fn stalled_request_bodies_do_not_lock_the_server_out() {
    let node = start_node();
    let stall = |addr: SocketAddr| {
        let mut s = TcpStream::connect(addr).unwrap();
        let head = "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":";
        s.write_all(head.as_bytes()).unwrap();
        s
    };
    // More stalled requests than the server has slots (100), on the public port.
    let stalled: Vec<TcpStream> = (0..120).map(|_| stall(node.http_addr)).collect();
    std::thread::sleep(Duration::from_millis(500));
    let call =
        json!({"jsonrpc": "2.0", "id": 1, "method": "eth_chainId", "params": []}).to_string();
    // Generous: the body timeout is 10 s; the bound only keeps a regression from hanging.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let answered = loop {
        let (code, body) = post(node.http_addr, call.as_bytes(), None);
        if code == 200 {
            break body;
        }
        assert_eq!(code, 429, "{body}");
        assert!(std::time::Instant::now() < deadline, "the stalled bodies still hold every slot");
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(serde_json::from_str::<Value>(&answered).unwrap()["result"], "0x1");
    // The stalled connections were answered or closed by the server, not left hanging.
    for mut s in stalled {
        s.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
        let mut out = Vec::new();
        match s.read_to_end(&mut out) {
            Ok(_) => {}
            Err(e) => {
                assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "a stalled request: {e}")
            }
        }
    }
}

/// A block that claims `parent` as its parent: `template`'s contents under a header that
/// links to `parent` (its own hash is recomputed from that header).
fn child_of(parent: &BlockWithBal, template: &BlockWithBal) -> BlockWithBal {
    let mut child = template.clone();
    child.block.header.parent_hash = parent.hash();
    child.block.header.number = parent.block.header.number + 1;
    child.block.header.timestamp = parent.block.header.timestamp + 12;
    child
}

/// A block whose BAL disagrees with its execution (header hash fixed up, so the block hash
/// holds): rejected as INVALID after execution.
fn with_wrong_bal(good: &BlockWithBal) -> BlockWithBal {
    let mut bad = good.clone();
    let bal = bad.bal.as_mut().unwrap();
    let entry = bal.iter_mut().find(|a| a.address == RECIPIENT).unwrap();
    entry.balance_changes[0].post_balance = U256::from(999);
    bad.block.header.block_access_list_hash =
        Some(ethrex_common::compute_block_access_list_hash(bal));
    bad
}

/// invalid payload -> its child -> its grandchild -> fork choice: the node answers every
/// call (this sequence used to deadlock the Engine API), names the last valid
/// ancestor, and keeps working.
fn invalid_ancestor_sequence(node: &Running) {
    let builder = new_chain();
    let good = builder.build_block(&attributes(12), vec![transfer(0, 1000)]).unwrap();
    let bad = with_wrong_bal(&good);
    builder.import_block(good.clone()).unwrap();
    let next = builder.build_block(&attributes(24), vec![transfer(1, 1000)]).unwrap();
    let child = child_of(&bad, &next);
    let grandchild = child_of(&child, &next);

    for (name, block) in [("invalid", &bad), ("child", &child), ("grandchild", &grandchild)] {
        let v = node.engine("engine_newPayloadV5", payload_params(block));
        assert_eq!(v["result"]["status"], "INVALID", "{name}: {v}");
        assert_eq!(v["result"]["latestValidHash"], json!(node.genesis_hash), "{name}: {v}");
        let reason = v["result"]["validationError"].as_str().unwrap();
        assert!(
            reason.starts_with("BlockException.INVALID_BLOCK_ACCESS_LIST: "),
            "{name}: {reason}"
        );
    }
    // Re-sent, and fork choice onto the invalid chain: answered from memory.
    let v = node.engine("engine_newPayloadV5", payload_params(&bad));
    assert_eq!(v["result"]["status"], "INVALID", "{v}");
    let fcu = |head: B256| json!([{"headBlockHash": head, "safeBlockHash": B256::ZERO, "finalizedBlockHash": B256::ZERO}, null]);
    let v = node.engine("engine_forkchoiceUpdatedV4", fcu(grandchild.hash()));
    assert_eq!(v["result"]["payloadStatus"]["status"], "INVALID", "{v}");
    assert_eq!(v["result"]["payloadStatus"]["latestValidHash"], json!(node.genesis_hash), "{v}");
    let v = node.engine("engine_forkchoiceUpdatedV4", fcu(node.genesis_hash));
    assert_eq!(v["result"]["payloadStatus"]["status"], "VALID", "{v}");
    // Nothing of the invalid chain was kept; the valid block still imports.
    assert_eq!(node.eth("eth_getBlockByHash", json!([bad.hash(), false]))["result"], Value::Null);
    assert_eq!(node.new_payload(&good), "VALID");
    assert_eq!(node.fork_choice(good.hash()), "VALID");
    assert_eq!(node.balance(), U256::from(1000));
    // The next block builds on it; back to genesis for the next round.
    assert_eq!(node.new_payload(&next), "VALID");
    assert_eq!(
        node.engine("engine_forkchoiceUpdatedV4", fcu(node.genesis_hash))["result"]
            ["payloadStatus"]["status"],
        "VALID"
    );
}

#[test]
fn descendants_of_an_invalid_payload_are_invalid_without_execution() {
    let node = start_node();
    invalid_ancestor_sequence(&node);
}

#[test]
fn a_side_block_reached_through_an_invalid_ancestor_is_invalid() {
    // A descendant that arrived before its ancestor was found invalid (kept as a side
    // block) is INVALID once a fork choice reaches it through that ancestor.
    let node = start_node();
    let builder = new_chain();
    let good = builder.build_block(&attributes(12), vec![transfer(0, 1000)]).unwrap();
    builder.import_block(good.clone()).unwrap();
    let base = builder.build_block(&attributes(24), vec![transfer(1, 2000)]).unwrap();
    builder.import_block(base.clone()).unwrap();
    let bad =
        with_wrong_bal(&builder.build_block(&attributes(36), vec![transfer(2, 3000)]).unwrap());
    let late_child = child_of(&bad, &builder.build_block(&attributes(48), vec![]).unwrap());
    assert_eq!(node.new_payload(&good), "VALID");
    assert_eq!(node.new_payload(&late_child), "SYNCING");
    assert_eq!(node.new_payload(&bad), "SYNCING");
    assert_eq!(node.new_payload(&base), "VALID");
    let fcu = json!([{"headBlockHash": late_child.hash(), "safeBlockHash": B256::ZERO, "finalizedBlockHash": B256::ZERO}, null]);
    for _ in 0..2 {
        // Found by executing the branch, then answered from memory.
        let v = node.engine("engine_forkchoiceUpdatedV4", fcu.clone());
        assert_eq!(v["result"]["payloadStatus"]["status"], "INVALID", "{v}");
        assert_eq!(v["result"]["payloadStatus"]["latestValidHash"], json!(base.hash()), "{v}");
    }
    // The head before the fork choice was kept.
    assert_eq!(node.eth("eth_getBlockByHash", json!([bad.hash(), false]))["result"], Value::Null);
    assert_eq!(node.fork_choice(base.hash()), "VALID");
    assert_eq!(node.balance(), U256::from(3000));
}

fn invalid_ancestors_on_disk_and_after_restart(db: DbKind) {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..2 {
        let store = Store::open(db, Some(dir.path())).unwrap();
        let node = start_node_with(Node::new(new_chain_on(store)));
        invalid_ancestor_sequence(&node);
        assert_eq!(node.eth("eth_blockNumber", json!([]))["result"], json!("0x0"), "round {round}");
        node.stop();
    }
}

#[test]
fn invalid_ancestors_rocksdb_and_after_restart() {
    invalid_ancestors_on_disk_and_after_restart(DbKind::Rocksdb);
}

#[test]
fn invalid_ancestors_mdbx_and_after_restart() {
    invalid_ancestors_on_disk_and_after_restart(DbKind::Mdbx);
}

#[test]
fn fork_choice_checks_safe_finalized_and_payload_attributes() {
    let node = start_node();
    let builder = new_chain();
    let a1 = builder.build_block(&attributes(12), vec![transfer(0, 1000)]).unwrap();
    let b1 = builder.build_block(&attributes(13), vec![transfer(0, 2000)]).unwrap();
    assert_eq!(node.new_payload(&a1), "VALID");
    assert_eq!(node.new_payload(&b1), "ACCEPTED");
    let state = |head: B256, safe: B256, finalized: B256| json!({"headBlockHash": head, "safeBlockHash": safe, "finalizedBlockHash": finalized});
    let fcu = |state: Value, attrs: Value| {
        node.engine("engine_forkchoiceUpdatedV4", json!([state, attrs]))
    };

    // Safe / finalized on another branch, or unknown: -38002.
    let v = fcu(state(a1.hash(), b1.hash(), node.genesis_hash), Value::Null);
    assert_eq!(v["error"]["code"], -38002, "{v}");
    let v = fcu(state(a1.hash(), a1.hash(), B256::repeat_byte(7)), Value::Null);
    assert_eq!(v["error"]["code"], -38002, "{v}");
    let v = fcu(state(a1.hash(), a1.hash(), node.genesis_hash), Value::Null);
    assert_eq!(v["result"]["payloadStatus"]["status"], "VALID", "{v}");

    // Attributes: the head moves even when they are rejected (-38003).
    let attrs = |timestamp: u64, slot: Option<u64>| {
        let mut a = json!({"timestamp": format!("{timestamp:#x}"), "prevRandao": B256::ZERO, "suggestedFeeRecipient": Address::ZERO, "withdrawals": [], "parentBeaconBlockRoot": B256::ZERO});
        if let Some(slot) = slot {
            a["slotNumber"] = json!(format!("{slot:#x}"));
        }
        a
    };
    let v = fcu(state(a1.hash(), a1.hash(), node.genesis_hash), attrs(12, Some(2)));
    assert_eq!(v["error"]["code"], -38003, "timestamp not after the head's: {v}");
    let v = fcu(state(b1.hash(), b1.hash(), node.genesis_hash), attrs(30, None));
    assert_eq!(v["error"]["code"], -38003, "no slotNumber for Amsterdam: {v}");
    assert_eq!(node.balance(), U256::from(2000), "the reorg to B1 stood");
    let v = fcu(state(b1.hash(), b1.hash(), node.genesis_hash), attrs(30, Some(2)));
    assert!(v["result"]["payloadId"].is_string(), "{v}");
    // V3 attributes for an Amsterdam timestamp: unsupported fork.
    let v = node.engine(
        "engine_forkchoiceUpdatedV3",
        json!([state(b1.hash(), b1.hash(), node.genesis_hash), attrs(40, None)]),
    );
    assert_eq!(v["error"]["code"], -38005, "{v}");
}

#[test]
fn built_payloads_hand_out_the_requests_their_header_commits_to() {
    use alloy_eips::eip7002::WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS;
    use alloy_eips::eip7251::CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS;
    let node = start_node();
    let builder = new_chain();
    // An EIP-7002 withdrawal request (48-byte pubkey, 8-byte amount) and an EIP-7251
    // consolidation request (two pubkeys), each paying the contract's fee (1 wei at zero
    // excess). The gas covers the state gas of the queue slots they write.
    let withdrawal = [vec![0x11; 48], 5u64.to_be_bytes().to_vec()].concat();
    let consolidation = [vec![0x22; 48], vec![0x33; 48]].concat();
    let txs = vec![
        call(0, WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS, 1, withdrawal.clone().into(), 3_000_000),
        call(
            1,
            CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS,
            1,
            consolidation.clone().into(),
            3_000_000,
        ),
    ];
    let built = builder.build_payload(&attributes(12), txs).unwrap();
    let id = alloy_rpc_types_engine::PayloadId::new([7; 8]);
    node.node.payloads.lock().insert(id, ethrex_rpc::node::BuiltPayload::new(built, vec![]));

    let v = node.engine("engine_getPayloadV6", json!([id]));
    let requests: Vec<Bytes> =
        serde_json::from_value(v["result"]["executionRequests"].clone()).unwrap();
    assert_eq!(requests.len(), 2, "{v}");
    // Type byte, then source address and the call's data (EIP-7002 gives the amount
    // little-endian).
    let sender = key().address();
    let expected_withdrawal =
        [&[1u8][..], sender.as_slice(), &[0x11; 48], &5u64.to_le_bytes()].concat();
    let expected_consolidation = [&[2u8][..], sender.as_slice(), &consolidation].concat();
    assert_eq!(
        requests,
        vec![Bytes::from(expected_withdrawal), Bytes::from(expected_consolidation)]
    );

    // The payload imports with its requests (anywhere: here, on the node that built it)...
    let exec = &v["result"]["executionPayload"];
    let mut params = json!([exec, [], B256::with_last_byte(1), requests]);
    let status = node.engine("engine_newPayloadV5", params.clone());
    assert_eq!(status["result"]["status"], "VALID", "{status}");
    // ...and not without them: the header commits to them.
    params[3] = json!([]);
    let fresh = start_node();
    let status = fresh.engine("engine_newPayloadV5", params);
    assert_eq!(status["result"]["status"], "INVALID", "{status}");
}

/// Wraps a backend: counts writes and syncs, can slow writes down, and can fail every
/// write from a given one on (a disk that fills up).
struct FaultyBackend {
    inner: Arc<dyn KvBackend>,
    write_delay: Duration,
    fail_from_write: u64,
    writes: AtomicU64,
    synced_writes: AtomicU64,
}

impl FaultyBackend {
    fn new(inner: Arc<dyn KvBackend>, write_delay: Duration, fail_from_write: u64) -> Arc<Self> {
        Arc::new(Self {
            inner,
            write_delay,
            fail_from_write,
            writes: AtomicU64::new(0),
            synced_writes: AtomicU64::new(0),
        })
    }
}

impl KvBackend for FaultyBackend {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner.get(table, key)
    }
    fn scan_prefix(&self, table: Table, prefix: &[u8]) -> Result<Entries, StoreError> {
        self.inner.scan_prefix(table, prefix)
    }
    fn write(&self, writes: &SortedWrites<'_>) -> Result<(), StoreError> {
        std::thread::sleep(self.write_delay);
        if self.writes.load(Ordering::SeqCst) + 1 >= self.fail_from_write {
            return Err(StoreError::Backend("No space left on device (injected)".into()));
        }
        self.inner.write(writes)?;
        self.writes.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    fn sync(&self) -> Result<(), StoreError> {
        let written = self.writes.load(Ordering::SeqCst);
        self.inner.sync()?;
        self.synced_writes.store(written, Ordering::SeqCst);
        Ok(())
    }
    fn kind(&self) -> &'static str {
        "faulty"
    }
}

#[test]
fn fork_choice_answers_valid_only_for_a_head_synced_to_disk() {
    // Every write takes a second: without waiting for the disk, the answers below would
    // come long before the batches are written.
    let backend = FaultyBackend::new(
        Arc::new(ethrex_storage::memory::MemoryBackend::new()),
        Duration::from_secs(1),
        u64::MAX,
    );
    let chain = new_chain_on(Store::new(backend.clone()));
    chain.store.flush().unwrap();
    let genesis_writes = backend.writes.load(Ordering::SeqCst);
    let node = start_node_with(Node::new(chain));
    let builder = new_chain();
    let b1 = builder.build_block(&attributes(12), vec![transfer(0, 1000)]).unwrap();
    builder.import_block(b1.clone()).unwrap();
    let b2 = builder.build_block(&attributes(24), vec![transfer(1, 1000)]).unwrap();

    assert_eq!(node.new_payload(&b1), "VALID");
    assert_eq!(
        backend.writes.load(Ordering::SeqCst),
        genesis_writes,
        "newPayload does not wait for the disk"
    );
    assert_eq!(node.fork_choice(b1.hash()), "VALID");
    assert_eq!(
        backend.synced_writes.load(Ordering::SeqCst),
        genesis_writes + 1,
        "VALID only once the head is written and synced"
    );
    assert_eq!(node.new_payload(&b2), "VALID");
    assert_eq!(node.fork_choice(b2.hash()), "VALID");
    assert_eq!(backend.synced_writes.load(Ordering::SeqCst), genesis_writes + 2);
}

#[test]
fn a_lag_lets_fork_choice_answer_before_the_disk_catches_up() {
    let backend = FaultyBackend::new(
        Arc::new(ethrex_storage::memory::MemoryBackend::new()),
        Duration::from_secs(1),
        u64::MAX,
    );
    let chain = new_chain_on(Store::new(backend.clone()));
    chain.store.flush().unwrap();
    let genesis_writes = backend.writes.load(Ordering::SeqCst);
    let node = start_node_with(Node::new(chain).with_persistence_lag(2));
    let builder = new_chain();
    let b1 = builder.build_block(&attributes(12), vec![transfer(0, 1000)]).unwrap();
    assert_eq!(node.new_payload(&b1), "VALID");
    assert_eq!(node.fork_choice(b1.hash()), "VALID");
    assert_eq!(
        backend.writes.load(Ordering::SeqCst),
        genesis_writes,
        "answered while the block was still in memory"
    );
    node.stop();
    assert_eq!(
        backend.writes.load(Ordering::SeqCst),
        genesis_writes + 1,
        "a clean stop writes everything"
    );
}

#[test]
fn a_failed_disk_write_stops_the_node_and_the_database_reopens_at_a_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let rocks: Arc<dyn KvBackend> =
        Arc::new(ethrex_storage::rocksdb::RocksBackend::open(dir.path()).unwrap());
    // Genesis and two blocks reach the disk; the third block's write fails.
    let backend = FaultyBackend::new(rocks, Duration::ZERO, 4);
    let chain = new_chain_on(Store::new(backend.clone()));
    chain.store.flush().unwrap();
    assert_eq!(backend.writes.load(Ordering::SeqCst), 1);
    let mut node = start_node_with(Node::new(chain));
    let servers = node.servers.take().unwrap();
    let serving = node.rt().spawn(ethrex_rpc::server::serve(
        node.node.clone(),
        servers,
        std::future::pending(),
    ));

    let builder = new_chain();
    let mut blocks = Vec::new();
    for i in 0..3u64 {
        let b = builder.build_block(&attributes(12 * (i + 1)), vec![transfer(i, 1000)]).unwrap();
        builder.import_block(b.clone()).unwrap();
        blocks.push(b);
    }
    for b in &blocks[..2] {
        assert_eq!(node.new_payload(b), "VALID");
        assert_eq!(node.fork_choice(b.hash()), "VALID");
    }
    // Executed and kept in memory; its write fails in the background, and the node stops
    // at once: a fork choice to it finds the node gone or gets an error, never VALID.
    assert_eq!(node.new_payload(&blocks[2]), "VALID");
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "engine_forkchoiceUpdatedV4",
        "params": [{"headBlockHash": blocks[2].hash(), "safeBlockHash": B256::ZERO, "finalizedBlockHash": B256::ZERO}, null]});
    if let Some((_, body)) =
        try_post(node.auth_addr, request.to_string().as_bytes(), Some(&node.secret.token()))
    {
        if let Ok(v) = serde_json::from_str::<Value>(&body) {
            assert_eq!(
                v["error"]["code"], -32603,
                "never VALID for a head that is not on disk: {v}"
            );
            assert!(
                v["error"]["message"].as_str().unwrap().contains("No space left on device"),
                "{v}"
            );
        }
    }

    // The node stops with the reason.
    let stopped =
        node.rt().block_on(async { tokio::time::timeout(Duration::from_secs(5), serving).await });
    let err = stopped.expect("the node stops after a failed write").unwrap().unwrap_err();
    assert!(matches!(err, ethrex_rpc::server::ServerError::Persistence(_)), "{err}");
    assert!(err.to_string().contains("No space left on device"), "{err}");

    // Reopened, the database ends at the last block written, consistent. The database
    // is closed when the last holder of the node lets go.
    wait_until_sole_holder(&node.node);
    drop(node);
    drop(backend);
    let store = Store::open(DbKind::Rocksdb, Some(dir.path())).unwrap();
    assert_eq!(store.head().unwrap(), Some(blocks[1].hash()));
    let root = ethrex_blockchain::state_root::verify_head_state(&store).unwrap();
    assert_eq!(root, blocks[1].block.header.state_root);
}

/// Waits until `node` is held only by the caller: once the servers stopped, a handler
/// still finishing on a loaded machine (or a task of the Engine API's runtime, which is
/// dropped without waiting) may hold it a while. Waited for, not timed; 60 s guards
/// against a leak.
fn wait_until_sole_holder(node: &Arc<Node>) {
    let waited = std::time::Instant::now();
    while Arc::strong_count(node) > 1 {
        assert!(waited.elapsed() < Duration::from_secs(60), "the servers still hold the node");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runtime code that jumps back to its start forever: only gas or time stops it.
const FOREVER: &str = "0x5b600056";

#[test]
fn calls_past_the_evm_timeout_are_aborted_and_the_node_keeps_serving() {
    let limits = RpcLimits { evm_timeout: Duration::from_millis(1), ..RpcLimits::default() };
    let node = start_node_limited(Node::new(new_chain()), limits);
    let looping = json!({RECIPIENT.to_string(): {"code": FOREVER}});
    let request = json!({"to": RECIPIENT});
    // 50M gas of a three-instruction loop is millions of steps: far more than 1 ms.
    let v = node.eth("eth_call", json!([request, "latest", looping]));
    assert_eq!(v["error"]["message"], "execution aborted (timeout = 1ms)", "{v}");
    assert_eq!(v["error"]["code"], -32000, "{v}");
    let v = node.eth("eth_estimateGas", json!([request, "latest", looping]));
    assert_eq!(v["error"]["message"], "execution aborted (timeout = 1ms)", "{v}");
    let calls = json!([{"stateOverrides": looping, "calls": [{"to": RECIPIENT}]}]);
    let v = node.eth("eth_simulateV1", json!([{"blockStateCalls": calls}, "latest"]));
    assert_eq!(v["error"]["message"], "execution aborted (timeout = 1ms)", "{v}");
    // A trace has its own limit, the tracer option.
    let traced = |opts: Value| {
        let mut opts = opts;
        opts["stateOverrides"] = looping.clone();
        node.eth("debug_traceCall", json!([request, "latest", opts]))
    };
    let v = traced(json!({"tracer": "callTracer", "timeout": "1ms"}));
    assert_eq!(v["error"]["message"], "execution timeout", "{v}");
    let v = traced(json!({"timeout": "soon"}));
    assert_eq!(v["error"]["message"], "invalid tracer config: time: invalid duration \"soon\"");
    // Within the default 5 s the same loop ends by running out of gas.
    let v = traced(json!({"tracer": "callTracer"}));
    assert_eq!(v["result"]["error"], "out of gas", "{v}");
    assert_eq!(node.eth("eth_chainId", json!([]))["result"], "0x1");
}

#[test]
fn struct_logs_past_the_size_budget_are_refused_and_the_node_keeps_serving() {
    let node = start_node();
    let looping = json!({RECIPIENT.to_string(): {"code": FOREVER}});
    let request = json!({"to": RECIPIENT});
    // A minute is time enough for 50M gas of the loop: ~12M steps, more than 128 MiB
    // of struct logs with or without their stacks. The budget stops it first.
    for options in [json!({}), json!({"disableStack": true, "disableStorage": true})] {
        let mut opts = options.clone();
        opts["stateOverrides"] = looping.clone();
        opts["timeout"] = json!("60s");
        let v = node.eth("debug_traceCall", json!([request, "latest", opts]));
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(message.starts_with("trace larger than 128 MiB"), "{options}: {v}");
        assert_eq!(v["error"]["code"], -32000, "{v}");
    }
    // The call tracer records calls, not steps: the same loop ends by running out of gas.
    let opts = json!({"tracer": "callTracer", "stateOverrides": looping, "timeout": "60s"});
    let v = node.eth("debug_traceCall", json!([request, "latest", opts]));
    assert_eq!(v["result"]["error"], "out of gas", "{v}");
    assert_eq!(node.eth("eth_chainId", json!([]))["result"], "0x1");
}

#[test]
fn subscriptions_over_plain_http_are_answered_as_geth_answers_them() {
    let node = start_node();
    let v = node.eth("eth_subscribe", json!(["newHeads"]));
    assert_eq!(v["error"], json!({"code": -32601, "message": "notifications not supported"}));
    let v = node.eth("eth_unsubscribe", json!(["0x1234"]));
    assert_eq!(v["error"], json!({"code": -32000, "message": "subscription not found"}));
}

#[test]
fn batches_over_the_limit_are_refused_whole() {
    let node = start_node();
    let batch = |n: usize| {
        let calls: Vec<Value> = (0..n)
            .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "eth_chainId", "params": []}))
            .collect();
        let (code, body) = post(node.http_addr, json!(calls).to_string().as_bytes(), None);
        assert_eq!(code, 200, "{body}");
        serde_json::from_str::<Value>(&body).unwrap()
    };
    let answers = batch(1_000);
    assert_eq!(answers.as_array().map(Vec::len), Some(1_000));
    assert!(answers.as_array().unwrap().iter().all(|a| a["result"] == "0x1"));
    let refused = batch(1_001);
    assert_eq!(refused["error"]["code"], -32010, "{refused}");
    assert_eq!(node.eth("eth_chainId", json!([]))["result"], "0x1");
}

#[test]
fn proofs_after_older_blocks_verify_against_their_state_roots() {
    use alloy_trie::{proof::verify_proof, Nibbles};
    let node = start_node();
    // Three blocks, each paying RECIPIENT; then a proof after each, checked by
    // alloy-trie's verifier against that block's state root and the balance then.
    let builder = new_chain();
    let mut roots = vec![];
    for (i, value) in [1000u64, 2000, 3000].into_iter().enumerate() {
        let b = builder
            .build_block(&attributes(12 * (i as u64 + 1)), vec![transfer(i as u64, value)])
            .unwrap();
        builder.import_block(b.clone()).unwrap();
        assert_eq!(node.new_payload(&b), "VALID");
        assert_eq!(node.fork_choice(b.hash()), "VALID");
        roots.push((b.block.header.number, b.block.header.state_root));
    }
    for (number, root) in roots {
        for address in [RECIPIENT, key().address(), Address::repeat_byte(0x77)] {
            let at = format!("{number:#x}");
            let v = node.eth("eth_getProof", json!([address, ["0x0"], at]));
            let p = &v["result"];
            let nodes: Vec<Bytes> = serde_json::from_value(p["accountProof"].clone())
                .unwrap_or_else(|e| panic!("{e}: {v}"));
            let balance: U256 = serde_json::from_value(p["balance"].clone()).unwrap();
            assert_eq!(p["balance"], node.eth("eth_getBalance", json!([address, at]))["result"]);
            let exists = !balance.is_zero() || p["nonce"] != "0x0";
            let expected = exists.then(|| {
                alloy_rlp::encode(ethrex_common::AccountState {
                    nonce: u64::from_str_radix(&p["nonce"].as_str().unwrap()[2..], 16).unwrap(),
                    balance,
                    storage_root: serde_json::from_value(p["storageHash"].clone()).unwrap(),
                    code_hash: serde_json::from_value(p["codeHash"].clone()).unwrap(),
                })
            });
            verify_proof(
                root,
                Nibbles::unpack(alloy_primitives::keccak256(address)),
                expected,
                &nodes,
            )
            .unwrap_or_else(|e| panic!("block {number}, {address}: {e:?}"));
        }
    }
}
