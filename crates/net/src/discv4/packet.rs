//! The discv4 wire format.
//!
//! ```text
//! packet = hash || signature || packet-type || packet-data
//! hash = keccak256(signature || packet-type || packet-data)      (32 bytes)
//! signature = sign(keccak256(packet-type || packet-data))      (65 bytes: r, s, recovery id)
//! ```
//!
//! `packet-data` is an RLP list; extra list elements and data after the list are ignored
//! (EIP-8). Decoding checks the size, the hash and the signature (which yields the sender's
//! node id) but not the expiration, which depends on the clock: see [`Message::is_expired`].

use super::rlp::{self, put, RlpError};
use crate::enode::{NodeId, NodeRecord};
use alloy_primitives::{keccak256, B256, B512};
use secp256k1::ecdsa::{RecoverableSignature, RecoveryId};
use secp256k1::{SecretKey, SECP256K1};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The largest datagram discv4 sends or accepts.
pub const MAX_PACKET_SIZE: usize = 1280;
/// Bytes before the packet data: hash, signature, type.
pub const HEADER_SIZE: usize = 32 + 65 + 1;
/// How many nodes one Neighbors packet carries at most, so that it stays within
/// [`MAX_PACKET_SIZE`] even when every node has an IPv6 address.
pub const MAX_NEIGHBORS_PER_PACKET: usize = 12;

/// Packet type of [`Ping`].
pub const PING: u8 = 0x01;
/// Packet type of [`Pong`].
pub const PONG: u8 = 0x02;
/// Packet type of [`FindNode`].
pub const FIND_NODE: u8 = 0x03;
/// Packet type of [`Neighbors`].
pub const NEIGHBORS: u8 = 0x04;
/// Packet type of [`EnrRequest`].
pub const ENR_REQUEST: u8 = 0x05;
/// Packet type of [`EnrResponse`].
pub const ENR_RESPONSE: u8 = 0x06;

/// Why a datagram was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PacketError {
    /// Shorter than the header, or longer than [`MAX_PACKET_SIZE`].
    #[error("bad packet size {0}")]
    Size(usize),
    /// The leading hash does not match the rest of the packet.
    #[error("hash mismatch")]
    Hash,
    /// The signature is malformed or does not recover a public key.
    #[error("bad signature")]
    Signature,
    /// A packet type this implementation does not know (to be dropped silently).
    #[error("unknown packet type {0}")]
    UnknownType(u8),
    /// The packet data is not what its type requires.
    #[error(transparent)]
    Rlp(#[from] RlpError),
}

/// A UDP/TCP endpoint as sent in Ping and Pong: `[ip, udp-port, tcp-port]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Endpoint {
    /// IPv4 (4 bytes on the wire) or IPv6 (16 bytes) address.
    pub ip: IpAddr,
    /// Discovery port.
    pub udp_port: u16,
    /// RLPx port (0 when unknown).
    pub tcp_port: u16,
}

impl Endpoint {
    fn encode(&self, out: &mut Vec<u8>) {
        let mut body = Vec::with_capacity(24);
        put_ip(&mut body, self.ip);
        put(&mut body, &self.udp_port);
        put(&mut body, &self.tcp_port);
        out.extend_from_slice(&rlp::list(&body));
    }

    fn decode(item: &[u8]) -> Result<Self, RlpError> {
        let items = rlp::list_items(item)?;
        if items.len() < 3 {
            return Err(RlpError("endpoint needs 3 items"));
        }
        Ok(Endpoint {
            ip: ip(items[0])?,
            udp_port: rlp::port(items[1])?,
            tcp_port: rlp::port(items[2])?,
        })
    }
}

/// Ping (0x01): `[version, from, to, expiration, enr-seq?, ...]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ping {
    /// Protocol version (4; mismatches are ignored).
    pub version: u64,
    /// The sender's endpoint as it sees it.
    pub from: Endpoint,
    /// The recipient's endpoint.
    pub to: Endpoint,
    /// UNIX time after which the packet is stale.
    pub expiration: u64,
    /// The sender's ENR sequence number (EIP-868), if sent.
    pub enr_seq: Option<u64>,
}

/// Pong (0x02): `[to, ping-hash, expiration, enr-seq?, ...]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pong {
    /// The endpoint the ping came from, as seen by the ponging node.
    pub to: Endpoint,
    /// Hash of the ping packet answered.
    pub ping_hash: B256,
    /// UNIX time after which the packet is stale.
    pub expiration: u64,
    /// The sender's ENR sequence number (EIP-868), if sent.
    pub enr_seq: Option<u64>,
}

/// FindNode (0x03): `[target, expiration, ...]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindNode {
    /// The 64-byte public key whose neighborhood is asked for.
    pub target: B512,
    /// UNIX time after which the packet is stale.
    pub expiration: u64,
}

/// Neighbors (0x04): `[[ip, udp, tcp, id], ...], expiration, ...]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbors {
    /// The nodes (the ids are not checked to be curve points here).
    pub nodes: Vec<NodeRecord>,
    /// UNIX time after which the packet is stale.
    pub expiration: u64,
}

/// ENRRequest (0x05): `[expiration, ...]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnrRequest {
    /// UNIX time after which the packet is stale.
    pub expiration: u64,
}

/// ENRResponse (0x06): `[request-hash, ENR, ...]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnrResponse {
    /// Hash of the ENRRequest packet answered.
    pub request_hash: B256,
    /// The node record, RLP-encoded (see [`super::enr`]).
    pub enr: Vec<u8>,
}

/// A discv4 message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// 0x01.
    Ping(Ping),
    /// 0x02.
    Pong(Pong),
    /// 0x03.
    FindNode(FindNode),
    /// 0x04.
    Neighbors(Neighbors),
    /// 0x05.
    EnrRequest(EnrRequest),
    /// 0x06.
    EnrResponse(EnrResponse),
}

/// A decoded, authenticated packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    /// The message.
    pub message: Message,
    /// The sender, recovered from the signature.
    pub node_id: NodeId,
    /// The packet's hash (what a Pong or ENRResponse refers to).
    pub hash: B256,
}

impl Message {
    /// The packet-type byte.
    pub fn kind(&self) -> u8 {
        match self {
            Message::Ping(_) => PING,
            Message::Pong(_) => PONG,
            Message::FindNode(_) => FIND_NODE,
            Message::Neighbors(_) => NEIGHBORS,
            Message::EnrRequest(_) => ENR_REQUEST,
            Message::EnrResponse(_) => ENR_RESPONSE,
        }
    }

    /// The expiration time stamp (ENRResponse has none).
    pub fn expiration(&self) -> Option<u64> {
        match self {
            Message::Ping(p) => Some(p.expiration),
            Message::Pong(p) => Some(p.expiration),
            Message::FindNode(p) => Some(p.expiration),
            Message::Neighbors(p) => Some(p.expiration),
            Message::EnrRequest(p) => Some(p.expiration),
            Message::EnrResponse(_) => None,
        }
    }

    /// Whether the expiration lies before `now` (UNIX seconds).
    pub fn is_expired(&self, now: u64) -> bool {
        self.expiration().is_some_and(|e| e < now)
    }

    fn encode_data(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(256);
        match self {
            Message::Ping(p) => {
                put(&mut b, &p.version);
                p.from.encode(&mut b);
                p.to.encode(&mut b);
                put(&mut b, &p.expiration);
                if let Some(seq) = p.enr_seq {
                    put(&mut b, &seq);
                }
            }
            Message::Pong(p) => {
                p.to.encode(&mut b);
                put(&mut b, &p.ping_hash);
                put(&mut b, &p.expiration);
                if let Some(seq) = p.enr_seq {
                    put(&mut b, &seq);
                }
            }
            Message::FindNode(p) => {
                put(&mut b, &p.target);
                put(&mut b, &p.expiration);
            }
            Message::Neighbors(p) => {
                let mut nodes = Vec::with_capacity(p.nodes.len() * 91);
                for n in &p.nodes {
                    let mut e = Vec::with_capacity(96);
                    put_ip(&mut e, n.ip);
                    put(&mut e, &n.udp_port);
                    put(&mut e, &n.tcp_port);
                    put(&mut e, &n.id.0);
                    nodes.extend_from_slice(&rlp::list(&e));
                }
                b.extend_from_slice(&rlp::list(&nodes));
                put(&mut b, &p.expiration);
            }
            Message::EnrRequest(p) => put(&mut b, &p.expiration),
            Message::EnrResponse(p) => {
                put(&mut b, &p.request_hash);
                // The record is itself an RLP list: embedded as is.
                b.extend_from_slice(&p.enr);
            }
        }
        rlp::list(&b)
    }

    fn decode_data(kind: u8, data: &[u8]) -> Result<Self, PacketError> {
        let items = rlp::list_items(data)?;
        let need = |n: usize| {
            if items.len() < n {
                Err(RlpError("too few list elements"))
            } else {
                Ok(())
            }
        };
        // An optional trailing integer (enr-seq): absent, or not an integer, means none.
        let opt_uint = |i: usize| items.get(i).and_then(|it| rlp::uint(it).ok());
        Ok(match kind {
            PING => {
                need(4)?;
                Message::Ping(Ping {
                    version: rlp::uint(items[0]).unwrap_or(0),
                    from: Endpoint::decode(items[1])?,
                    to: Endpoint::decode(items[2])?,
                    expiration: rlp::uint(items[3])?,
                    enr_seq: opt_uint(4),
                })
            }
            PONG => {
                need(3)?;
                Message::Pong(Pong {
                    to: Endpoint::decode(items[0])?,
                    ping_hash: B256::from(rlp::fixed::<32>(items[1])?),
                    expiration: rlp::uint(items[2])?,
                    enr_seq: opt_uint(3),
                })
            }
            FIND_NODE => {
                need(2)?;
                Message::FindNode(FindNode {
                    target: B512::from(rlp::fixed::<64>(items[0])?),
                    expiration: rlp::uint(items[1])?,
                })
            }
            NEIGHBORS => {
                need(2)?;
                let mut nodes = Vec::new();
                for entry in rlp::list_items(items[0])? {
                    let f = rlp::list_items(entry)?;
                    if f.len() < 4 {
                        return Err(RlpError("neighbor needs 4 items").into());
                    }
                    nodes.push(NodeRecord {
                        ip: ip(f[0])?,
                        udp_port: rlp::port(f[1])?,
                        tcp_port: rlp::port(f[2])?,
                        id: NodeId(B512::from(rlp::fixed::<64>(f[3])?)),
                    });
                }
                Message::Neighbors(Neighbors { nodes, expiration: rlp::uint(items[1])? })
            }
            ENR_REQUEST => {
                need(1)?;
                Message::EnrRequest(EnrRequest { expiration: rlp::uint(items[0])? })
            }
            ENR_RESPONSE => {
                need(2)?;
                let (record, _) = rlp::split_item(items[1])?;
                Message::EnrResponse(EnrResponse {
                    request_hash: B256::from(rlp::fixed::<32>(items[0])?),
                    enr: record.to_vec(),
                })
            }
            other => return Err(PacketError::UnknownType(other)),
        })
    }

    /// Signs and frames the message; returns the datagram and its hash.
    pub fn encode(&self, key: &SecretKey) -> (Vec<u8>, B256) {
        let data = self.encode_data();
        let mut signed = Vec::with_capacity(1 + data.len());
        signed.push(self.kind());
        signed.extend_from_slice(&data);
        let digest = keccak256(&signed);
        let sig = SECP256K1.sign_ecdsa_recoverable(secp256k1::Message::from_digest(digest.0), key);
        let (recid, rs) = sig.serialize_compact();
        let mut packet = Vec::with_capacity(32 + 65 + signed.len());
        packet.extend_from_slice(&[0u8; 32]);
        packet.extend_from_slice(&rs);
        packet.push(i32::from(recid) as u8);
        packet.extend_from_slice(&signed);
        let hash = keccak256(&packet[32..]);
        packet[..32].copy_from_slice(hash.as_slice());
        (packet, hash)
    }
}

/// Checks and decodes a datagram. Never panics, whatever the bytes.
pub fn decode(datagram: &[u8]) -> Result<Packet, PacketError> {
    if datagram.len() <= HEADER_SIZE || datagram.len() > MAX_PACKET_SIZE {
        return Err(PacketError::Size(datagram.len()));
    }
    let hash = B256::from_slice(&datagram[..32]);
    if keccak256(&datagram[32..]) != hash {
        return Err(PacketError::Hash);
    }
    let sig = &datagram[32..97];
    let signed = &datagram[97..];
    let recid = RecoveryId::try_from(i32::from(sig[64])).map_err(|_| PacketError::Signature)?;
    let sig = RecoverableSignature::from_compact(&sig[..64], recid)
        .map_err(|_| PacketError::Signature)?;
    let digest = keccak256(signed);
    let key = SECP256K1
        .recover_ecdsa(secp256k1::Message::from_digest(digest.0), &sig)
        .map_err(|_| PacketError::Signature)?;
    let message = Message::decode_data(signed[0], &signed[1..])?;
    Ok(Packet { message, node_id: NodeId::from_pubkey(&key), hash })
}

fn put_ip(out: &mut Vec<u8>, ip: IpAddr) {
    match ip {
        IpAddr::V4(v4) => put(out, &v4.octets()[..]),
        IpAddr::V6(v6) => put(out, &v6.octets()[..]),
    }
}

fn ip(item: &[u8]) -> Result<IpAddr, RlpError> {
    let b = rlp::bytes(item)?;
    match b.len() {
        0 => Ok(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
        4 => Ok(IpAddr::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3]))),
        16 => {
            let mut o = [0u8; 16];
            o.copy_from_slice(b);
            Ok(IpAddr::V6(Ipv6Addr::from(o)))
        }
        _ => Err(RlpError("IP address must be 4 or 16 bytes")),
    }
}
