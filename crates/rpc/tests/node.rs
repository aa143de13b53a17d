//! The node end to end over HTTP: Engine API payloads and fork choice (including reorgs
//! between two branches), the eth API following the head, and bad input (no or stale or
//! forged JWT, malformed JSON, wrong params, oversized bodies) answered with errors while
//! the node keeps serving.

use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope};
use alloy_primitives::{address, Address, Bytes, TxKind, B256, U256};
use alloy_rpc_types_engine::{ExecutionPayloadV3, ExecutionPayloadV4};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use ethrex_blockchain::genesis::{alloc_state_root, genesis_header_at, init_genesis, GenesisAccount};
use ethrex_blockchain::{Blockchain, PayloadAttributes};
use ethrex_common::{BlockWithBal, ChainConfig, Fork, Header};
use ethrex_rpc::jwt::JwtSecret;
use ethrex_rpc::server::{start, RunningServers};
use ethrex_rpc::Node;
use ethrex_storage::Store;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;

const RECIPIENT: Address = address!("0x00000000000000000000000000000000000c0ffe");

fn key() -> PrivateKeySigner {
    PrivateKeySigner::from_bytes(&B256::repeat_byte(0x42)).unwrap()
}

fn genesis() -> (Header, BTreeMap<Address, GenesisAccount>, ChainConfig) {
    let mut alloc = ethrex_import_bench::workload::system_contracts();
    alloc.insert(key().address(), GenesisAccount { balance: U256::from(10u128.pow(24)), ..Default::default() });
    let config = ChainConfig::all_forks_at_genesis(1, Fork::Amsterdam);
    (genesis_header_at(&config, 30_000_000, 7, alloc_state_root(&alloc).unwrap()), alloc, config)
}

fn new_chain() -> Blockchain {
    let (header, alloc, config) = genesis();
    let store = Store::in_memory();
    init_genesis(&store, header, &alloc).unwrap();
    Blockchain::new(store, config)
}

fn transfer(nonce: u64, value: u64) -> TxEnvelope {
    let tx = TxEip1559 {
        chain_id: 1,
        nonce,
        gas_limit: 21_000,
        max_fee_per_gas: 1_000,
        max_priority_fee_per_gas: 1,
        to: TxKind::Call(RECIPIENT),
        value: U256::from(value),
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
    json!([payload, Vec::<B256>::new(), b.block.header.parent_beacon_block_root.unwrap(), Vec::<Bytes>::new()])
}

struct Running {
    _rt: tokio::runtime::Runtime,
    servers: RunningServers,
    secret: JwtSecret,
    genesis_hash: B256,
}

fn start_node() -> Running {
    let chain = new_chain();
    let genesis_hash = chain.store.head().unwrap().unwrap();
    let node = Arc::new(Node::new(chain));
    let secret = JwtSecret::from_hex(&"ab".repeat(32)).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let servers = rt
        .block_on(start(node, "127.0.0.1:0".parse().unwrap(), secret.clone(), Some("127.0.0.1:0".parse().unwrap())))
        .unwrap();
    Running { _rt: rt, servers, secret, genesis_hash }
}

/// One HTTP/1.1 POST; returns the status code and body.
fn post(addr: SocketAddr, body: &[u8], bearer: Option<&str>) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    let auth = bearer.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    let head = format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{auth}Connection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    let _ = s.write_all(body);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).to_string();
    let code = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (code, body)
}

impl Running {
    fn engine(&self, method: &str, params: Value) -> Value {
        let req = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let (code, body) = post(self.servers.auth_addr, req.to_string().as_bytes(), Some(&self.secret.token()));
        assert_eq!(code, 200, "{method}: {body}");
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{method}: {e}: {body}"))
    }
    fn eth(&self, method: &str, params: Value) -> Value {
        let req = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let (code, body) = post(self.servers.http.as_ref().unwrap().1, req.to_string().as_bytes(), None);
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

    // And back.
    assert_eq!(node.fork_choice(a1.hash()), "VALID");
    assert_eq!(node.balance(), U256::from(1000));
    assert_eq!(node.eth("eth_blockNumber", json!([]))["result"], json!("0x1"));
    assert_eq!(node.fork_choice(b2.hash()), "VALID");
    assert_eq!(node.balance(), U256::from(5000));

    // Unknown head: syncing.
    assert_eq!(node.fork_choice(B256::repeat_byte(9)), "SYNCING");
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
    bad.block.header.block_access_list_hash = Some(ethrex_common::compute_block_access_list_hash(bal));
    let v = node.engine("engine_newPayloadV5", payload_params(&bad));
    assert_eq!(v["result"]["status"], "INVALID", "{v}");
    assert_eq!(v["result"]["latestValidHash"], json!(node.genesis_hash));
    assert!(v["result"]["validationError"].as_str().unwrap().contains("block access list"), "{v}");
    assert_eq!(node.balance(), U256::ZERO);
    assert_eq!(node.eth("eth_getBlockByHash", json!([bad.hash(), false]))["result"], Value::Null);

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
    assert_eq!(node.engine("engine_getPayloadV6", json!(["0x0000000000000001"]))["error"]["code"], -38001);
}

#[test]
fn bad_requests_get_errors_and_the_node_keeps_serving() {
    let node = start_node();
    let auth = node.servers.auth_addr;
    let http = node.servers.http.as_ref().unwrap().1;
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "engine_exchangeCapabilities", "params": [[]]}).to_string();

    assert_eq!(post(auth, call.as_bytes(), None).0, 401, "no token");
    assert_eq!(post(auth, call.as_bytes(), Some("not.a.jwt")).0, 401, "garbage token");
    let forged = JwtSecret::from_hex(&"cd".repeat(32)).unwrap().token();
    assert_eq!(post(auth, call.as_bytes(), Some(&forged)).0, 401, "wrong secret");
    let stale = {
        use jsonwebtoken::{encode, EncodingKey, Header};
        let iat = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() - 120;
        encode(&Header::default(), &json!({"iat": iat}), &EncodingKey::from_secret(node.secret.as_bytes())).unwrap()
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
    assert_eq!(node.eth("web3_clientVersion", json!([]))["result"].as_str().unwrap().split('/').next(), Some("ethrex"));
}
