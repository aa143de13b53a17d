//! A peer speaking RLPx through a minimal, independent initiator written here (handshake
//! and framing from `rlpx.md`), so it can send frames our `Session` never would: a
//! message whose snappy header announces more than the payload limit.

use aes::cipher::{BlockEncrypt, KeyInit, KeyIvInit, StreamCipher};
use alloy_eips::eip2124::Head;
use alloy_primitives::keccak256;
use alloy_rlp::{Encodable, Header as RlpHeader};
use ethrex_blockchain::Blockchain;
use ethrex_chaingen::adversarial::{parallel_options, Scenario};
use ethrex_net::eth::{codes, fork_id, Status, SUPPORTED_VERSIONS};
use ethrex_net::rlpx::{
    Capability, DisconnectReason, Hello, RlpxError, Session, MAX_PAYLOAD_SIZE, P2P_VERSION,
};
use ethrex_net::{ChainHost, Network, NetworkConfig, NodeId};
use rand::RngCore;
use secp256k1::{Message, PublicKey, SecretKey, SECP256K1};
use sha2::{Digest as _, Sha256};
use sha3::Keccak256;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const LIMIT: Duration = Duration::from_secs(60);

type Aes128Ctr = ctr::Ctr128BE<aes::Aes128>;
type Aes256Ctr = ctr::Ctr128BE<aes::Aes256>;

fn random_key() -> SecretKey {
    SecretKey::new(&mut rand::rng())
}

fn ecdh_x(point: &PublicKey, scalar: &SecretKey) -> [u8; 32] {
    let xy = secp256k1::ecdh::shared_secret_point(point, scalar);
    xy[..32].try_into().unwrap()
}

fn xor(a: &[u8; 32], b: &[u8]) -> [u8; 32] {
    std::array::from_fn(|i| a[i] ^ b[i])
}

/// ECIES: ephemeral key || iv || AES-128-CTR ciphertext || HMAC-SHA256 tag.
fn ecies_encrypt(remote: &PublicKey, msg: &[u8], auth_data: &[u8]) -> Vec<u8> {
    let ephemeral = random_key();
    let mut iv = [0u8; 16];
    rand::rng().fill_bytes(&mut iv);
    let mut km = [0u8; 32];
    concat_kdf::derive_key_into::<Sha256>(&ecdh_x(remote, &ephemeral), &[], &mut km).unwrap();
    let mac_key = Sha256::digest(&km[16..]);
    let mut out =
        PublicKey::from_secret_key(SECP256K1, &ephemeral).serialize_uncompressed().to_vec();
    out.extend_from_slice(&iv);
    let start = out.len();
    out.extend_from_slice(msg);
    Aes128Ctr::new(km[..16].into(), &iv.into()).apply_keystream(&mut out[start..]);
    let mut tag = <hmac::Hmac<Sha256> as hmac::Mac>::new_from_slice(&mac_key).unwrap();
    hmac::Mac::update(&mut tag, &out[65..]);
    hmac::Mac::update(&mut tag, auth_data);
    out.extend_from_slice(&hmac::Mac::finalize(tag).into_bytes());
    out
}

fn ecies_decrypt(key: &SecretKey, data: &[u8], auth_data: &[u8]) -> Vec<u8> {
    let point = PublicKey::from_slice(&data[..65]).unwrap();
    let mut km = [0u8; 32];
    concat_kdf::derive_key_into::<Sha256>(&ecdh_x(&point, key), &[], &mut km).unwrap();
    let mac_key = Sha256::digest(&km[16..]);
    let (body, tag) = data.split_at(data.len() - 32);
    let mut mac = <hmac::Hmac<Sha256> as hmac::Mac>::new_from_slice(&mac_key).unwrap();
    hmac::Mac::update(&mut mac, &body[65..]);
    hmac::Mac::update(&mut mac, auth_data);
    hmac::Mac::verify_slice(mac, tag).expect("the ack's ECIES tag");
    let mut plain = body[81..].to_vec();
    Aes128Ctr::new(km[..16].into(), body[65..81].into()).apply_keystream(&mut plain);
    plain
}

fn rlp_list(items: &[&dyn Encodable]) -> Vec<u8> {
    let payload_length = items.iter().map(|i| i.length()).sum();
    let mut out = Vec::new();
    RlpHeader { list: true, payload_length }.encode(&mut out);
    for item in items {
        item.encode(&mut out);
    }
    out
}

/// The egress half of a connection: frame cipher and MAC.
struct Egress {
    stream: TcpStream,
    cipher: Aes256Ctr,
    mac_cipher: aes::Aes256,
    mac: Keccak256,
}

impl Egress {
    fn digest16(&self) -> [u8; 16] {
        self.mac.clone().finalize()[..16].try_into().unwrap()
    }

    fn update_mac(&mut self, seed_xor: &[u8]) -> [u8; 16] {
        let mut block = aes::Block::from(self.digest16());
        self.mac_cipher.encrypt_block(&mut block);
        let seed: Vec<u8> = block.iter().zip(seed_xor).map(|(a, b)| a ^ b).collect();
        self.mac.update(&seed);
        self.digest16()
    }

    /// Sends one frame carrying `data` (a message id's RLP and its payload).
    async fn frame(&mut self, data: &[u8]) {
        let mut header = [0u8; 16];
        header[..3].copy_from_slice(&(data.len() as u32).to_be_bytes()[1..]);
        header[3..6].copy_from_slice(&[0xc2, 0x80, 0x80]);
        self.cipher.apply_keystream(&mut header);
        let header_mac = self.update_mac(&header);
        let mut body = data.to_vec();
        body.resize(data.len().div_ceil(16) * 16, 0);
        self.cipher.apply_keystream(&mut body);
        self.mac.update(&body);
        let digest = self.digest16();
        let frame_mac = self.update_mac(&digest);
        let mut out = header.to_vec();
        out.extend_from_slice(&header_mac);
        out.extend_from_slice(&body);
        out.extend_from_slice(&frame_mac);
        self.stream.write_all(&out).await.unwrap();
    }
}

/// Dials `remote` at `addr` with `key`: the EIP-8 auth/ack handshake, then our egress.
async fn raw_dial(addr: std::net::SocketAddr, key: &SecretKey, remote: NodeId) -> Egress {
    let remote_pub = remote.to_pubkey().unwrap();
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let ephemeral = random_key();
    let mut nonce = [0u8; 32];
    rand::rng().fill_bytes(&mut nonce);
    let signed = xor(&ecdh_x(&remote_pub, key), &nonce);
    let (recid, compact) = SECP256K1
        .sign_ecdsa_recoverable(Message::from_digest(signed), &ephemeral)
        .serialize_compact();
    let mut sig = compact.to_vec();
    sig.push(i32::from(recid) as u8);
    let id = NodeId::from_secret_key(key);
    let mut body = rlp_list(&[&&sig[..], &id.0.as_slice(), &&nonce[..], &4u64]);
    body.extend_from_slice(&[0u8; 100]);
    let prefix = ((body.len() + 113) as u16).to_be_bytes();
    let mut auth = prefix.to_vec();
    auth.extend_from_slice(&ecies_encrypt(&remote_pub, &body, &prefix));
    stream.write_all(&auth).await.unwrap();

    let mut ack = vec![0u8; 2];
    stream.read_exact(&mut ack).await.unwrap();
    let size = u16::from_be_bytes([ack[0], ack[1]]) as usize;
    ack.resize(size + 2, 0);
    stream.read_exact(&mut ack[2..]).await.unwrap();
    let plain = ecies_decrypt(key, &ack[2..], &ack[..2]);
    let mut list = &plain[..];
    let header = RlpHeader::decode(&mut list).unwrap();
    assert!(header.list);
    let remote_ephemeral = RlpHeader::decode_bytes(&mut list, false).unwrap();
    let remote_nonce = RlpHeader::decode_bytes(&mut list, false).unwrap();
    let mut point = vec![0x04];
    point.extend_from_slice(remote_ephemeral);
    let remote_ephemeral = PublicKey::from_slice(&point).unwrap();

    let ephemeral_key = ecdh_x(&remote_ephemeral, &ephemeral);
    let nonce_hash = keccak256([remote_nonce, &nonce[..]].concat());
    let shared = keccak256([&ephemeral_key[..], nonce_hash.as_slice()].concat());
    let aes_secret = keccak256([&ephemeral_key[..], shared.as_slice()].concat());
    let mac_secret = keccak256([&ephemeral_key[..], aes_secret.as_slice()].concat());
    let mut mac = Keccak256::new();
    mac.update(xor(&mac_secret.0, remote_nonce));
    mac.update(&auth);
    Egress {
        stream,
        cipher: Aes256Ctr::new(&aes_secret.0.into(), &[0u8; 16].into()),
        mac_cipher: aes::Aes256::new(&mac_secret.0.into()),
        mac,
    }
}

fn status_of(chain: &Blockchain, version: u32) -> Status {
    let store = &chain.store;
    let genesis_hash = store.canonical_hash(0).unwrap().unwrap();
    let genesis = store.header(&genesis_hash).unwrap().unwrap();
    Status {
        version,
        network_id: chain.config.chain_id(),
        genesis: genesis_hash,
        fork_id: fork_id(
            &chain.config.inner,
            genesis_hash,
            genesis.timestamp,
            Head { number: 0, timestamp: genesis.timestamp, ..Default::default() },
        ),
        earliest_block: 0,
        latest_block: 0,
        latest_block_hash: genesis_hash,
    }
}

/// A message frame: the id's RLP, then the payload.
fn message(id: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    id.encode(&mut out);
    out.extend_from_slice(payload);
    out
}

/// An ad-hoc peer with a raw session established with the node (Hello, Status).
async fn established(node: &Network, chain: &Blockchain, key: &SecretKey) -> Egress {
    let record = node.node_record();
    let mut egress = raw_dial(record.tcp_addr(), key, record.id).await;
    let hello = Hello {
        protocol_version: P2P_VERSION,
        client_id: "raw-peer/test".into(),
        capabilities: SUPPORTED_VERSIONS.iter().map(|v| Capability::new("eth", *v)).collect(),
        listen_port: 0,
        id: NodeId::from_secret_key(key),
    };
    // Hello (id 0) uncompressed; the eth Status (0x10 + 0) snappy-compressed.
    egress.frame(&message(0, &hello.encode())).await;
    let status = snap::raw::Encoder::new()
        .compress_vec(&status_of(chain, SUPPORTED_VERSIONS[0]).encode())
        .unwrap();
    egress.frame(&message(0x10 + codes::STATUS, &status)).await;
    let id = NodeId::from_secret_key(key);
    while !node.peers().iter().any(|p| p.id == id) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    egress
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_announcing_more_than_the_payload_limit_gets_the_peer_dropped_and_banned() {
    tokio::time::timeout(LIMIT, async {
        let scenario = Scenario::new();
        let chain = Arc::new(scenario.chain(scenario.memory_store(), parallel_options()));
        let config = NetworkConfig::new(random_key(), "127.0.0.1:0".parse().unwrap());
        let host: Arc<dyn ChainHost> = chain.clone();
        let node = Network::start(config, host).await.unwrap();
        let key = random_key();
        let mut egress = established(&node, &chain, &key).await;

        // Transactions (0x10 + 2) whose snappy header announces twice the limit: varint
        // of 2 * MAX_PAYLOAD_SIZE, then a few bytes.
        let mut claim = Vec::new();
        let mut n = 2 * MAX_PAYLOAD_SIZE as u64;
        while n >= 0x80 {
            claim.push((n as u8) | 0x80);
            n >>= 7;
        }
        claim.push(n as u8);
        claim.extend_from_slice(&[0; 8]);
        egress.frame(&message(0x10 + codes::TRANSACTIONS, &claim)).await;

        // The node closes the connection, forgets and bans the peer.
        let mut buf = [0u8; 4096];
        loop {
            match egress.stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        let id = NodeId::from_secret_key(&key);
        while node.peers().iter().any(|p| p.id == id) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let record = node.node_record();
        let stream = TcpStream::connect(record.tcp_addr()).await.unwrap();
        let hello = Hello {
            protocol_version: P2P_VERSION,
            client_id: "raw-peer/test".into(),
            capabilities: vec![Capability::new("eth", 71)],
            listen_port: 0,
            id,
        };
        let mut session = Session::connect(stream, &key, record.id, hello).await.unwrap();
        assert!(
            matches!(
                session.recv().await,
                Err(RlpxError::Disconnected(DisconnectReason::UselessPeer))
            ),
            "the peer is banned"
        );
    })
    .await
    .expect("test timed out");
}
