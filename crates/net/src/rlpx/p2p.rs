//! The devp2p base protocol `p2p` (version 5): Hello, Disconnect, Ping and Pong, the
//! message-id prefix and snappy compression of message payloads.

use super::RlpxError;
use crate::enode::NodeId;
use alloy_primitives::B512;
use alloy_rlp::{Decodable, Encodable, Header};
use bytes::{Bytes, BytesMut};
use std::fmt;

/// The `p2p` protocol version we announce; 5 and above compress payloads with snappy.
pub const P2P_VERSION: u64 = 5;
/// Message ids below this belong to `p2p`; subprotocols are numbered from here.
pub const BASE_PROTOCOL_LENGTH: u64 = 0x10;
/// The largest decompressed message payload accepted (16 MiB).
pub const MAX_PAYLOAD_SIZE: usize = 16 * 1024 * 1024;

/// Hello's message id.
pub const HELLO: u64 = 0x00;
/// Disconnect's message id.
pub const DISCONNECT: u64 = 0x01;
/// Ping's message id.
pub const PING: u64 = 0x02;
/// Pong's message id.
pub const PONG: u64 = 0x03;

/// A capability (subprotocol and version) a node announces in its Hello, e.g. `eth/69`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Capability {
    /// The subprotocol's name, e.g. `"eth"`.
    pub name: String,
    /// The subprotocol's version, e.g. 69.
    pub version: u32,
}

impl Capability {
    /// A capability from its name and version.
    pub fn new(name: impl Into<String>, version: u32) -> Self {
        Capability { name: name.into(), version }
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.name, self.version)
    }
}

/// The number of message ids a subprotocol version uses, for the ones we know.
pub fn protocol_length(name: &str, version: u32) -> Option<u64> {
    match (name, version) {
        // eth/69 and eth/70 end at BlockRangeUpdate (0x11); eth/71 (EIP-8159) adds 0x12, 0x13.
        ("eth", 69 | 70) => Some(0x12),
        ("eth", 71) => Some(0x14),
        ("eth", 66..=68) => Some(0x11),
        ("snap", 1) => Some(8),
        _ => None,
    }
}

/// The `p2p` Hello message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    /// The `p2p` version (we send [`P2P_VERSION`]).
    pub protocol_version: u64,
    /// The client's name and version, e.g. `"ethrex/0.1.0"`.
    pub client_id: String,
    /// The capabilities the node offers.
    pub capabilities: Vec<Capability>,
    /// The node's listening TCP port (0 if it does not listen; informational).
    pub listen_port: u16,
    /// The node's id; it must be the key of the RLPx handshake.
    pub id: NodeId,
}

fn rlp_err(e: alloy_rlp::Error) -> RlpxError {
    RlpxError::Rlp(e.to_string())
}

/// The payload of the RLP list at the start of `buf`, advancing `buf` past the list.
fn take_list<'a>(buf: &mut &'a [u8]) -> Result<&'a [u8], RlpxError> {
    let header = Header::decode(buf).map_err(rlp_err)?;
    if !header.list {
        return Err(RlpxError::Rlp("expected a list".into()));
    }
    if header.payload_length > buf.len() {
        return Err(RlpxError::Rlp("list longer than its input".into()));
    }
    let (payload, rest) = buf.split_at(header.payload_length);
    *buf = rest;
    Ok(payload)
}

impl Hello {
    /// The RLP encoding: `[protocolVersion, clientId, [[cap, version], ...], listenPort, nodeId]`.
    pub fn encode(&self) -> Vec<u8> {
        let caps: Vec<Vec<u8>> = self
            .capabilities
            .iter()
            .map(|c| {
                let name = c.name.as_bytes();
                let version = c.version as u64;
                let mut out = Vec::new();
                Header { list: true, payload_length: name.length() + version.length() }
                    .encode(&mut out);
                name.encode(&mut out);
                version.encode(&mut out);
                out
            })
            .collect();
        let caps_len: usize = caps.iter().map(Vec::len).sum();
        let caps_header = Header { list: true, payload_length: caps_len };
        let client = self.client_id.as_bytes();
        let port = self.listen_port as u64;
        let id = self.id.0.as_slice();
        let payload_length = self.protocol_version.length()
            + client.length()
            + caps_header.length()
            + caps_len
            + port.length()
            + id.length();
        let mut out = Vec::with_capacity(payload_length + 3);
        Header { list: true, payload_length }.encode(&mut out);
        self.protocol_version.encode(&mut out);
        client.encode(&mut out);
        caps_header.encode(&mut out);
        for cap in &caps {
            out.extend_from_slice(cap);
        }
        port.encode(&mut out);
        id.encode(&mut out);
        out
    }

    /// Decodes a Hello, ignoring additional list elements (EIP-8).
    pub fn decode(mut buf: &[u8]) -> Result<Hello, RlpxError> {
        let mut list = take_list(&mut buf)?;
        let protocol_version = u64::decode(&mut list).map_err(rlp_err)?;
        let client_id =
            String::from_utf8_lossy(Header::decode_bytes(&mut list, false).map_err(rlp_err)?)
                .into_owned();
        let mut caps = take_list(&mut list)?;
        let mut capabilities = Vec::new();
        while !caps.is_empty() {
            let mut cap = take_list(&mut caps)?;
            let name = Header::decode_bytes(&mut cap, false).map_err(rlp_err)?;
            let version = u64::decode(&mut cap).map_err(rlp_err)?;
            capabilities.push(Capability {
                name: String::from_utf8_lossy(name).into_owned(),
                version: u32::try_from(version)
                    .map_err(|_| RlpxError::Rlp(format!("capability version {version}")))?,
            });
        }
        let listen_port = u64::decode(&mut list).map_err(rlp_err)?;
        let id = Header::decode_bytes(&mut list, false).map_err(rlp_err)?;
        if id.len() != 64 {
            return Err(RlpxError::Rlp(format!("Hello node id of {} bytes", id.len())));
        }
        Ok(Hello {
            protocol_version,
            client_id,
            capabilities,
            // Some clients send junk here; the port is informational only.
            listen_port: u16::try_from(listen_port).unwrap_or(0),
            id: NodeId(B512::from_slice(id)),
        })
    }
}

/// Why a peer disconnects (`p2p` Disconnect reasons).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DisconnectReason {
    /// 0x00: disconnect requested.
    Requested,
    /// 0x01: TCP sub-system error.
    TcpError,
    /// 0x02: breach of protocol, e.g. a malformed message or bad RLP.
    BreachOfProtocol,
    /// 0x03: useless peer.
    UselessPeer,
    /// 0x04: too many peers.
    TooManyPeers,
    /// 0x05: already connected.
    AlreadyConnected,
    /// 0x06: incompatible P2P protocol version.
    IncompatibleVersion,
    /// 0x07: null node identity received (invalid identity).
    InvalidIdentity,
    /// 0x08: client quitting.
    ClientQuitting,
    /// 0x09: unexpected identity in handshake.
    UnexpectedIdentity,
    /// 0x0a: identity is the same as this node (connected to self).
    ConnectedToSelf,
    /// 0x0b: ping timeout.
    PingTimeout,
    /// 0x10: some other reason specific to a subprotocol.
    SubprotocolError,
    /// A code the spec does not define.
    Unknown(u8),
}

impl DisconnectReason {
    /// The reason's wire code.
    pub fn code(self) -> u8 {
        match self {
            DisconnectReason::Requested => 0x00,
            DisconnectReason::TcpError => 0x01,
            DisconnectReason::BreachOfProtocol => 0x02,
            DisconnectReason::UselessPeer => 0x03,
            DisconnectReason::TooManyPeers => 0x04,
            DisconnectReason::AlreadyConnected => 0x05,
            DisconnectReason::IncompatibleVersion => 0x06,
            DisconnectReason::InvalidIdentity => 0x07,
            DisconnectReason::ClientQuitting => 0x08,
            DisconnectReason::UnexpectedIdentity => 0x09,
            DisconnectReason::ConnectedToSelf => 0x0a,
            DisconnectReason::PingTimeout => 0x0b,
            DisconnectReason::SubprotocolError => 0x10,
            DisconnectReason::Unknown(code) => code,
        }
    }

    /// The reason for a wire code.
    pub fn from_code(code: u8) -> Self {
        match code {
            0x00 => DisconnectReason::Requested,
            0x01 => DisconnectReason::TcpError,
            0x02 => DisconnectReason::BreachOfProtocol,
            0x03 => DisconnectReason::UselessPeer,
            0x04 => DisconnectReason::TooManyPeers,
            0x05 => DisconnectReason::AlreadyConnected,
            0x06 => DisconnectReason::IncompatibleVersion,
            0x07 => DisconnectReason::InvalidIdentity,
            0x08 => DisconnectReason::ClientQuitting,
            0x09 => DisconnectReason::UnexpectedIdentity,
            0x0a => DisconnectReason::ConnectedToSelf,
            0x0b => DisconnectReason::PingTimeout,
            0x10 => DisconnectReason::SubprotocolError,
            other => DisconnectReason::Unknown(other),
        }
    }

    /// The Disconnect payload: `[reason]`.
    pub fn encode(self) -> Vec<u8> {
        let code = self.code() as u64;
        let mut out = Vec::with_capacity(3);
        Header { list: true, payload_length: code.length() }.encode(&mut out);
        code.encode(&mut out);
        out
    }

    /// Decodes a Disconnect payload tolerantly: `[reason]`, a bare `reason`, or nothing
    /// (an empty payload or empty list reads as [`DisconnectReason::Requested`]).
    pub fn decode(payload: &[u8]) -> Self {
        let mut buf = payload;
        let inner = match Header::decode(&mut buf) {
            Ok(h) if h.list => &buf[..h.payload_length.min(buf.len())],
            _ => payload,
        };
        match inner {
            [] | [0x80, ..] | [0x00, ..] => DisconnectReason::Requested,
            // A single byte (< 0x80 encodes itself).
            [b, ..] if *b < 0x80 => Self::from_code(*b),
            // A one-byte string.
            [0x81, b, ..] => Self::from_code(*b),
            _ => DisconnectReason::Unknown(0xff),
        }
    }
}

impl fmt::Display for DisconnectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            DisconnectReason::Requested => "disconnect requested",
            DisconnectReason::TcpError => "TCP sub-system error",
            DisconnectReason::BreachOfProtocol => "breach of protocol",
            DisconnectReason::UselessPeer => "useless peer",
            DisconnectReason::TooManyPeers => "too many peers",
            DisconnectReason::AlreadyConnected => "already connected",
            DisconnectReason::IncompatibleVersion => "incompatible p2p protocol version",
            DisconnectReason::InvalidIdentity => "invalid node identity",
            DisconnectReason::ClientQuitting => "client quitting",
            DisconnectReason::UnexpectedIdentity => "unexpected identity",
            DisconnectReason::ConnectedToSelf => "connected to self",
            DisconnectReason::PingTimeout => "ping timeout",
            DisconnectReason::SubprotocolError => "subprotocol error",
            DisconnectReason::Unknown(code) => return write!(f, "unknown reason {code:#04x}"),
        };
        f.write_str(text)
    }
}

/// A frame's content: `rlp(msg-id) || payload`, the payload snappy-compressed if `snappy`.
pub(crate) fn encode_message(id: u64, payload: &[u8], snappy: bool) -> Result<Bytes, RlpxError> {
    let mut out = BytesMut::with_capacity(payload.len() + 9);
    id.encode(&mut out);
    if snappy {
        if payload.len() > MAX_PAYLOAD_SIZE {
            return Err(RlpxError::FrameTooLarge(payload.len()));
        }
        let compressed = snap::raw::Encoder::new()
            .compress_vec(payload)
            .map_err(|e| RlpxError::Snappy(e.to_string()))?;
        out.extend_from_slice(&compressed);
    } else {
        out.extend_from_slice(payload);
    }
    Ok(out.freeze())
}

/// Splits a frame into its message id and (decompressed if `snappy`) payload.
pub(crate) fn decode_message(frame: BytesMut, snappy: bool) -> Result<(u64, Bytes), RlpxError> {
    let mut frame = frame.freeze();
    let id = match frame.first() {
        None => return Err(RlpxError::Rlp("empty message".into())),
        // Tolerate a non-canonical zero byte for id 0.
        Some(0x00) => {
            let _ = bytes::Buf::get_u8(&mut frame);
            0
        }
        Some(_) => {
            let mut buf = &frame[..];
            let id = u64::decode(&mut buf).map_err(rlp_err)?;
            let consumed = frame.len() - buf.len();
            bytes::Buf::advance(&mut frame, consumed);
            id
        }
    };
    if !snappy {
        return Ok((id, frame));
    }
    let len = snap::raw::decompress_len(&frame).map_err(|e| RlpxError::Snappy(e.to_string()))?;
    if len > MAX_PAYLOAD_SIZE {
        return Err(RlpxError::Snappy(format!(
            "payload decompresses to {len} bytes, over the {MAX_PAYLOAD_SIZE} limit"
        )));
    }
    let payload = snap::raw::Decoder::new()
        .decompress_vec(&frame)
        .map_err(|e| RlpxError::Snappy(e.to_string()))?;
    Ok((id, Bytes::from(payload)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eip8_hello_vector_decodes() {
        // EIP-8: a Hello advertising version 22 with additional list elements.
        let packet = hex::decode(concat!(
            "f87137916b6e6574682f76302e39312f706c616e39cdc5836574683dc6846d6f726b1682270fb840",
            "fda1cff674c90c9a197539fe3dfb53086ace64f83ed7c6eabec741f7f381cc803e52ab2cd55d5569",
            "bce4347107a310dfd5f88a010cd2ffd1005ca406f1842877c883666f6f836261720304"
        ))
        .unwrap();
        let hello = Hello::decode(&packet).unwrap();
        assert_eq!(hello.protocol_version, 55);
        assert_eq!(hello.client_id, "kneth/v0.91/plan9");
        assert_eq!(
            hello.capabilities,
            vec![Capability::new("eth", 61), Capability::new("mork", 22)]
        );
        assert_eq!(hello.listen_port, 9999);
        assert_eq!(&hello.id.0[..4], &[0xfd, 0xa1, 0xcf, 0xf6]);
    }

    #[test]
    fn hello_round_trips() {
        let hello = Hello {
            protocol_version: P2P_VERSION,
            client_id: "ethrex/test".into(),
            capabilities: vec![Capability::new("eth", 69), Capability::new("eth", 71)],
            listen_port: 30303,
            id: NodeId(B512::repeat_byte(0xab)),
        };
        assert_eq!(Hello::decode(&hello.encode()).unwrap(), hello);
    }

    #[test]
    fn disconnect_decoding_is_tolerant() {
        for reason in [
            DisconnectReason::Requested,
            DisconnectReason::TooManyPeers,
            DisconnectReason::SubprotocolError,
            DisconnectReason::Unknown(0x33),
        ] {
            assert_eq!(DisconnectReason::decode(&reason.encode()), reason);
            assert_eq!(DisconnectReason::from_code(reason.code()), reason);
        }
        assert_eq!(DisconnectReason::decode(&[0x04]), DisconnectReason::TooManyPeers);
        assert_eq!(DisconnectReason::decode(&[]), DisconnectReason::Requested);
        assert_eq!(DisconnectReason::decode(&[0xc0]), DisconnectReason::Requested);
        assert_eq!(DisconnectReason::decode(&[0xc1, 0x80]), DisconnectReason::Requested);
        assert_eq!(DisconnectReason::decode(&[0xc1, 0x0b]), DisconnectReason::PingTimeout);
    }

    #[test]
    fn messages_round_trip_with_and_without_snappy() {
        let payload = vec![0x42u8; 5000];
        for snappy in [false, true] {
            for id in [0u64, 2, 0x10, 0x21, 0x80] {
                let frame = encode_message(id, &payload, snappy).unwrap();
                let (got_id, got) = decode_message(BytesMut::from(&frame[..]), snappy).unwrap();
                assert_eq!((got_id, &got[..]), (id, &payload[..]));
            }
        }
        // Compression actually happened.
        assert!(encode_message(0x10, &payload, true).unwrap().len() < 1000);
    }

    #[test]
    fn snappy_bomb_is_refused_before_decompressing() {
        // A snappy preamble claiming 64 MiB of output, followed by nothing.
        let mut frame = BytesMut::from(&[0x10u8][..]);
        let mut len = 64u64 << 20;
        while len >= 0x80 {
            frame.extend_from_slice(&[(len as u8) | 0x80]);
            len >>= 7;
        }
        frame.extend_from_slice(&[len as u8]);
        let err = decode_message(frame, true).unwrap_err();
        assert!(matches!(err, RlpxError::Snappy(ref m) if m.contains("limit")), "{err}");
    }
}
