//! RLPx: the encrypted, authenticated TCP transport of devp2p, and its base protocol `p2p`.
//!
//! A [`Session`] is an established connection: the EIP-8 ECIES handshake is done
//! (legacy pre-EIP-8 auth/ack packets are accepted on receive), frames are
//! encrypted with AES-256-CTR and authenticated with the running Keccak-256 MACs, both sides have exchanged a [`Hello`], and (for `p2p` version 5 and above,
//! which every current client speaks) message payloads are snappy-compressed ([`p2p`]).
//!
//! The handshake and framing are written here by hand from the devp2p `rlpx.md`
//! specification and EIP-8: no maintained Rust crate implements them. The primitives come
//! from maintained crates (`secp256k1`, `aes` + `ctr`, `hmac` + `sha2`, `sha3`,
//! `concat-kdf`, `snap`).
//!
//! # Subprotocol
//!
//! A session carries one subprotocol, `eth`: [`Session::send`] and [`Session::recv`] take
//! and return message codes relative to it (eth `Status` is 0). Its offset is computed the
//! way the spec says: the capabilities both Hellos share (each at its highest common
//! version) are sorted by name and given consecutive id ranges from 0x10, each as long as
//! its protocol's message count ([`p2p::protocol_length`]). When `eth` is the only shared
//! capability (our Hello advertises only eth) the offset is 0x10; a shared capability
//! sorting before `eth` moves it up, and one of unknown length before `eth` fails the
//! session. Messages of other shared capabilities are skipped.
//!
//! # Versions
//!
//! We send `p2p` version 5 ([`P2P_VERSION`]) and accept any. A peer whose Hello says a
//! version below 5 gets uncompressed payloads (and must send them), as the spec says; the
//! Hello itself, and a Disconnect sent instead of a Hello, are never compressed.
//!
//! # Concurrency
//!
//! [`Session::into_split`] gives a [`SessionReader`] and a cloneable [`SessionWriter`], so a
//! peer task can read and write concurrently. The reader still answers Ping with Pong (it
//! shares the writer's egress half behind an async mutex). Cancelling `recv` (e.g. in a
//! `tokio::select!`) never loses an eth message; at worst the Pong to a Ping is not sent.

mod ecies;
mod frame;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod p2p;
mod session;

pub use frame::MAX_FRAME_SIZE;
pub use p2p::{Capability, DisconnectReason, Hello, MAX_PAYLOAD_SIZE, P2P_VERSION};
pub use session::{Session, SessionReader, SessionWriter, HANDSHAKE_TIMEOUT};

/// Why an RLPx session failed.
#[derive(Debug, thiserror::Error)]
pub enum RlpxError {
    /// The TCP connection failed.
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    /// The peer closed the connection.
    #[error("connection closed by the peer")]
    Closed,
    /// We are disconnecting the peer: nothing but our Disconnect is sent any more.
    #[error("session closing: we disconnected the peer")]
    Closing,
    /// The encrypted handshake failed (bad packet, bad key, bad signature).
    #[error("RLPx handshake: {0}")]
    Handshake(String),
    /// A frame's header or body MAC did not match: corrupt or forged data.
    #[error("frame MAC mismatch")]
    BadMac,
    /// A frame (or message) larger than the limit, refused before it was read.
    #[error("frame of {0} bytes is too large")]
    FrameTooLarge(usize),
    /// A payload's snappy compression is invalid or decompresses too large.
    #[error("snappy: {0}")]
    Snappy(String),
    /// A `p2p` message is not valid RLP of the expected shape.
    #[error("RLP: {0}")]
    Rlp(String),
    /// A `p2p` protocol violation (e.g. no Hello first, a second Hello).
    #[error("protocol: {0}")]
    Protocol(String),
    /// The peer's Hello announced a different node id than the one we dialed or the
    /// handshake authenticated.
    #[error("peer identity mismatch: expected {expected}, Hello says {got}")]
    UnexpectedIdentity {
        /// The id of the handshake (boxed to keep the error small).
        expected: Box<crate::NodeId>,
        /// The id in the Hello.
        got: Box<crate::NodeId>,
    },
    /// The peer disconnected, with this reason.
    #[error("disconnected: {0}")]
    Disconnected(DisconnectReason),
    /// The peer has no `eth` version in common with us.
    #[error("no shared capability")]
    NoSharedCapability,
    /// A handshake step took longer than [`HANDSHAKE_TIMEOUT`].
    #[error("timed out")]
    Timeout,
}
