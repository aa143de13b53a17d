//! Entry points into the private handshake and frame codecs, for the fuzz targets
//! (`fuzz/`, logic in `testing/fuzz-logic`). Compiled only with the `fuzzing` feature:
//! nothing here is part of the crate's API.
//!
//! Blind bytes never get past an ECIES tag or a frame MAC, so besides feeding raw packets
//! to the decoders, these functions seal arbitrary plaintext the way a peer would (with a
//! fixed ephemeral key and IV, so an input always takes the same path), which lets a
//! fuzzer reach the body parsers behind the authentication.

use super::ecies::{
    decode_ack, decode_auth, ecies_encrypt_with, Secrets, ECIES_OVERHEAD, LEGACY_ACK_SIZE,
    LEGACY_AUTH_SIZE,
};
use super::frame::{frame_codec, FrameDecoder, FrameEncoder};
use super::RlpxError;
use bytes::{Bytes, BytesMut};
use secp256k1::{PublicKey, SecretKey};
use sha3::{Digest, Keccak256};
use tokio_util::codec::{Decoder, Encoder};

/// `p2p::decode_message`: a frame's message id and (decompressed when `snappy`) payload.
///
/// # Errors
/// A bad id, bad snappy data or a payload over the size limit.
pub fn decode_message(frame: &[u8], snappy: bool) -> Result<(u64, Vec<u8>), RlpxError> {
    super::p2p::decode_message(BytesMut::from(frame), snappy).map(|(id, p)| (id, p.to_vec()))
}

/// `p2p::encode_message`: the frame of message `id` with `payload`.
///
/// # Errors
/// A payload over the size limit.
pub fn encode_message(id: u64, payload: &[u8], snappy: bool) -> Result<Vec<u8>, RlpxError> {
    super::p2p::encode_message(id, payload, snappy).map(|f| f.to_vec())
}

/// The plaintext size of a legacy (pre-EIP-8) auth packet.
pub const LEGACY_AUTH_PLAIN: usize = LEGACY_AUTH_SIZE - ECIES_OVERHEAD;
/// The plaintext size of a legacy (pre-EIP-8) ack packet.
pub const LEGACY_ACK_PLAIN: usize = LEGACY_ACK_SIZE - ECIES_OVERHEAD;

/// `decode_auth` on a packet received with `key`; the error, or the initiator's node id
/// bytes and the auth version.
pub fn auth(key: &SecretKey, packet: &[u8]) -> Result<([u8; 64], u64), RlpxError> {
    decode_auth(key, packet).map(|a| (a.initiator_id.0 .0, a.version))
}

/// `decode_ack` on a packet received with `key`; the error, or the ack version.
pub fn ack(key: &SecretKey, packet: &[u8]) -> Result<u64, RlpxError> {
    decode_ack(key, packet).map(|a| a.version)
}

fn fixed_ephemeral() -> SecretKey {
    SecretKey::from_byte_array([0x42; 32]).expect("a valid secret key")
}

/// `plain` sealed to `remote` as an EIP-8 packet (size prefix, ECIES, no padding).
/// `None` when it is too long for the 2-byte size prefix.
pub fn seal_eip8(remote: &PublicKey, plain: &[u8]) -> Option<Vec<u8>> {
    let size = u16::try_from(plain.len() + ECIES_OVERHEAD).ok()?;
    let prefix = size.to_be_bytes();
    let mut packet = prefix.to_vec();
    packet.extend_from_slice(&ecies_encrypt_with(
        remote,
        plain,
        &prefix,
        &fixed_ephemeral(),
        [7; 16],
    ));
    Some(packet)
}

/// `plain` sealed to `remote` as a legacy packet (ECIES, no prefix).
pub fn seal_legacy(remote: &PublicKey, plain: &[u8]) -> Vec<u8> {
    ecies_encrypt_with(remote, plain, &[], &fixed_ephemeral(), [7; 16])
}

/// Both ends of one direction of an established connection: what one side's encoder
/// writes, the other side's decoder reads.
pub struct FramePipe {
    encoder: FrameEncoder,
    decoder: FrameDecoder,
}

impl FramePipe {
    /// A pipe whose secrets derive from `seed`.
    pub fn new(seed: u8) -> Self {
        let mut mac = Keccak256::new();
        mac.update([seed]);
        let sender = Secrets {
            aes_secret: [seed; 32],
            mac_secret: [seed ^ 0x5a; 32],
            egress_mac: mac.clone(),
            ingress_mac: Keccak256::new(),
        };
        let receiver = Secrets { egress_mac: Keccak256::new(), ingress_mac: mac, ..sender.clone() };
        let (_, encoder) = frame_codec(sender);
        let (decoder, _) = frame_codec(receiver);
        Self { encoder, decoder }
    }

    /// Frames `payload` onto `wire`.
    ///
    /// # Errors
    /// The encoder's error (a frame over the size limit).
    pub fn encode(&mut self, payload: &[u8], wire: &mut BytesMut) -> Result<(), RlpxError> {
        self.encoder.encode(Bytes::copy_from_slice(payload), wire)
    }

    /// The next whole frame in `wire` (consumed), `None` when more bytes are needed.
    ///
    /// # Errors
    /// A MAC mismatch or a frame over the limit.
    pub fn decode(&mut self, wire: &mut BytesMut) -> Result<Option<Vec<u8>>, RlpxError> {
        self.decoder.decode(wire).map(|frame| frame.map(|f| f.to_vec()))
    }

    /// Frames announcing more than `max` bytes are refused at their header.
    pub fn set_max_frame_size(&mut self, max: usize) {
        self.decoder.set_max_frame_size(max);
    }
}
