//! Ethereum Node Records (EIP-778), only as far as discv4 needs them: building and signing
//! our own record with the "v4" identity scheme (to answer ENRRequest), and checking a
//! received one.
//!
//! ```text
//! content   = [seq, k, v, ...]            (keys sorted, unique)
//! signature = r || s of secp256k1(keccak256(rlp(content)))   (64 bytes)
//! record    = [signature, seq, k, v, ...] (at most 300 bytes)
//! ```

use super::rlp::{self, put, RlpError};
use crate::enode::NodeId;
use alloy_primitives::keccak256;
use secp256k1::ecdsa::Signature;
use secp256k1::{PublicKey, SecretKey, SECP256K1};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The largest record accepted or produced.
pub const MAX_ENR_SIZE: usize = 300;

/// The endpoint information of a record (v4 scheme).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enr {
    /// Sequence number.
    pub seq: u64,
    /// The node id (from the `secp256k1` key).
    pub id: NodeId,
    /// `ip` or `ip6`, if present.
    pub ip: Option<IpAddr>,
    /// `tcp` (or `tcp6`), if present.
    pub tcp_port: Option<u16>,
    /// `udp` (or `udp6`), if present.
    pub udp_port: Option<u16>,
}

/// Why a record was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnrError {
    /// Larger than [`MAX_ENR_SIZE`].
    #[error("record too large")]
    TooLarge,
    /// Not an RLP list of the right shape.
    #[error(transparent)]
    Rlp(#[from] RlpError),
    /// The identity scheme is not "v4", or the key is missing.
    #[error("not a v4 record")]
    Scheme,
    /// The signature does not verify against the record's key.
    #[error("bad signature")]
    Signature,
}

impl Enr {
    /// Encodes and signs a record with `key`. Keys are written sorted: `id`, `ip`/`ip6`,
    /// `secp256k1`, `tcp`/`tcp6`, `udp`/`udp6`.
    pub fn sign(&self, key: &SecretKey) -> Vec<u8> {
        let v6 = matches!(self.ip, Some(IpAddr::V6(_)));
        let mut content = Vec::with_capacity(128);
        put(&mut content, &self.seq);
        put(&mut content, &b"id"[..]);
        put(&mut content, &b"v4"[..]);
        match self.ip {
            Some(IpAddr::V4(ip)) => {
                put(&mut content, &b"ip"[..]);
                put(&mut content, &ip.octets()[..]);
            }
            Some(IpAddr::V6(ip)) => {
                put(&mut content, &b"ip6"[..]);
                put(&mut content, &ip.octets()[..]);
            }
            None => {}
        }
        put(&mut content, &b"secp256k1"[..]);
        let public = PublicKey::from_secret_key(SECP256K1, key);
        put(&mut content, &public.serialize()[..]);
        if let Some(tcp) = self.tcp_port {
            put(&mut content, if v6 { &b"tcp6"[..] } else { &b"tcp"[..] });
            put(&mut content, &tcp);
        }
        if let Some(udp) = self.udp_port {
            put(&mut content, if v6 { &b"udp6"[..] } else { &b"udp"[..] });
            put(&mut content, &udp);
        }
        let digest = keccak256(rlp::list(&content));
        let sig = SECP256K1.sign_ecdsa(secp256k1::Message::from_digest(digest.0), key);
        let mut record = Vec::with_capacity(content.len() + 70);
        put(&mut record, &sig.serialize_compact()[..]);
        record.extend_from_slice(&content);
        rlp::list(&record)
    }

    /// Decodes a record and verifies its v4 signature.
    pub fn decode(raw: &[u8]) -> Result<Enr, EnrError> {
        if raw.len() > MAX_ENR_SIZE {
            return Err(EnrError::TooLarge);
        }
        let (record, _) = rlp::split_item(raw)?;
        let items = rlp::list_items(record)?;
        if items.len() < 2 || items.len() % 2 != 0 {
            return Err(RlpError("record needs [sig, seq, k, v, ...]").into());
        }
        let sig = rlp::fixed::<64>(items[0])?;
        let seq = rlp::uint(items[1])?;
        let (mut scheme_ok, mut key, mut ip4, mut ip6) = (false, None, None, None);
        let (mut tcp, mut udp, mut tcp6, mut udp6) = (None, None, None, None);
        for pair in items[2..].chunks(2) {
            let value = pair[1];
            match rlp::bytes(pair[0])? {
                b"id" => scheme_ok = rlp::bytes(value)? == b"v4",
                b"secp256k1" => key = Some(rlp::fixed::<33>(value)?),
                b"ip" => {
                    let o = rlp::fixed::<4>(value)?;
                    ip4 = Some(IpAddr::V4(Ipv4Addr::from(o)));
                }
                b"ip6" => ip6 = Some(IpAddr::V6(Ipv6Addr::from(rlp::fixed::<16>(value)?))),
                b"tcp" => tcp = Some(rlp::port(value)?),
                b"udp" => udp = Some(rlp::port(value)?),
                b"tcp6" => tcp6 = Some(rlp::port(value)?),
                b"udp6" => udp6 = Some(rlp::port(value)?),
                _ => {}
            }
        }
        let key = key.filter(|_| scheme_ok).ok_or(EnrError::Scheme)?;
        let public = PublicKey::from_slice(&key).map_err(|_| EnrError::Scheme)?;
        // The signed content is the record's list minus the signature item.
        let content: Vec<u8> = items[1..].concat();
        let digest = keccak256(rlp::list(&content));
        let sig = Signature::from_compact(&sig).map_err(|_| EnrError::Signature)?;
        SECP256K1
            .verify_ecdsa(secp256k1::Message::from_digest(digest.0), &sig, &public)
            .map_err(|_| EnrError::Signature)?;
        let (ip, tcp_port, udp_port) = match (ip4, ip6) {
            (Some(ip), _) => (Some(ip), tcp, udp),
            (None, Some(ip)) => (Some(ip), tcp6.or(tcp), udp6.or(udp)),
            (None, None) => (None, tcp, udp),
        };
        Ok(Enr { seq, id: NodeId::from_pubkey(&public), ip, tcp_port, udp_port })
    }
}
