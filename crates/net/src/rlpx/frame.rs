//! RLPx framing: the AES-256-CTR frame cipher and the Keccak-256 running MACs of
//! `rlpx.md`, as a `tokio_util` codec split into an ingress half ([`FrameDecoder`]) and an
//! egress half ([`FrameEncoder`]) so a connection's two directions can run in different tasks.
//!
//! A frame is `header-ciphertext(16) || header-mac(16) || frame-ciphertext || frame-mac(16)`;
//! the header is `frame-size(3) || rlp([0, 0]) || zero padding` and the frame data is padded
//! to a multiple of 16 bytes. Written by hand (no maintained crate implements RLPx framing).

use super::ecies::Secrets;
use super::RlpxError;
use aes::cipher::{BlockEncrypt, KeyInit, KeyIvInit, StreamCipher};
use bytes::{Buf, BufMut, Bytes, BytesMut};
use sha3::{Digest, Keccak256};
use tokio_util::codec::{Decoder, Encoder};

type Aes256Ctr = ctr::Ctr128BE<aes::Aes256>;

/// The largest frame the 24-bit size field can describe.
pub const MAX_FRAME_SIZE: usize = (1 << 24) - 1;

/// `rlp([0, 0])`: the header-data every implementation sends (capability-id and context-id
/// are unused).
const HEADER_DATA: [u8; 3] = [0xc2, 0x80, 0x80];

/// A running MAC: a Keccak-256 state, updated with AES-256(mac-secret) of its own digest.
struct Mac {
    hasher: Keccak256,
    cipher: aes::Aes256,
}

impl Mac {
    fn new(mac_secret: &[u8; 32], hasher: Keccak256) -> Self {
        Mac { hasher, cipher: aes::Aes256::new(mac_secret.into()) }
    }

    /// The first 16 bytes of the current digest.
    fn digest(&self) -> [u8; 16] {
        let full = self.hasher.clone().finalize();
        full[..16].try_into().expect("16 of 32 bytes")
    }

    fn encrypted_digest(&self) -> [u8; 16] {
        let mut block = self.digest().into();
        self.cipher.encrypt_block(&mut block);
        block.into()
    }

    /// Header MAC: update with `aes(digest) ^ header-ciphertext`, return the new digest.
    fn header_mac(&mut self, header_ct: &[u8; 16]) -> [u8; 16] {
        let seed: [u8; 16] = {
            let e = self.encrypted_digest();
            std::array::from_fn(|i| e[i] ^ header_ct[i])
        };
        self.hasher.update(seed);
        self.digest()
    }

    /// Frame MAC: update with the frame ciphertext, then with `aes(digest) ^ digest`.
    fn frame_mac(&mut self, frame_ct: &[u8]) -> [u8; 16] {
        self.hasher.update(frame_ct);
        let d = self.digest();
        let e = self.encrypted_digest();
        let seed: [u8; 16] = std::array::from_fn(|i| e[i] ^ d[i]);
        self.hasher.update(seed);
        self.digest()
    }
}

fn padded(len: usize) -> usize {
    len.div_ceil(16) * 16
}

/// The ingress half: decrypts frames and checks their MACs.
pub(crate) struct FrameDecoder {
    cipher: Aes256Ctr,
    mac: Mac,
    max_frame_size: usize,
    /// The frame size of a header already checked and consumed, awaiting its body.
    pending: Option<usize>,
}

/// The egress half: encrypts frames and appends their MACs.
pub(crate) struct FrameEncoder {
    cipher: Aes256Ctr,
    mac: Mac,
}

impl std::fmt::Debug for FrameDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameDecoder").field("max_frame_size", &self.max_frame_size).finish()
    }
}

impl std::fmt::Debug for FrameEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FrameEncoder")
    }
}

/// The two halves of the frame codec of a connection with these secrets.
pub(crate) fn frame_codec(secrets: Secrets) -> (FrameDecoder, FrameEncoder) {
    let iv = [0u8; 16];
    let decoder = FrameDecoder {
        cipher: Aes256Ctr::new(&secrets.aes_secret.into(), &iv.into()),
        mac: Mac::new(&secrets.mac_secret, secrets.ingress_mac),
        max_frame_size: MAX_FRAME_SIZE,
        pending: None,
    };
    let encoder = FrameEncoder {
        cipher: Aes256Ctr::new(&secrets.aes_secret.into(), &iv.into()),
        mac: Mac::new(&secrets.mac_secret, secrets.egress_mac),
    };
    (decoder, encoder)
}

impl FrameDecoder {
    /// Frames announcing more than `max` bytes are refused with
    /// [`RlpxError::FrameTooLarge`] as soon as their (authenticated) header is read, before
    /// any buffer for them is reserved. The default is [`MAX_FRAME_SIZE`].
    pub(crate) fn set_max_frame_size(&mut self, max: usize) {
        self.max_frame_size = max;
    }
}

impl Decoder for FrameDecoder {
    type Item = BytesMut;
    type Error = RlpxError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<BytesMut>, RlpxError> {
        let size = match self.pending {
            Some(size) => size,
            None => {
                if src.len() < 32 {
                    src.reserve(32 - src.len());
                    return Ok(None);
                }
                let mut header: [u8; 16] = src[..16].try_into().expect("16 bytes");
                let expected = self.mac.header_mac(&header);
                if !constant_eq(&expected, &src[16..32]) {
                    return Err(RlpxError::BadMac);
                }
                src.advance(32);
                self.cipher.apply_keystream(&mut header);
                let size = u32::from_be_bytes([0, header[0], header[1], header[2]]) as usize;
                if size > self.max_frame_size {
                    return Err(RlpxError::FrameTooLarge(size));
                }
                self.pending = Some(size);
                size
            }
        };
        let total = padded(size) + 16;
        if src.len() < total {
            src.reserve(total - src.len());
            return Ok(None);
        }
        self.pending = None;
        let mut frame = src.split_to(total);
        let expected = self.mac.frame_mac(&frame[..total - 16]);
        if !constant_eq(&expected, &frame[total - 16..]) {
            return Err(RlpxError::BadMac);
        }
        frame.truncate(total - 16);
        self.cipher.apply_keystream(&mut frame);
        frame.truncate(size);
        Ok(Some(frame))
    }
}

fn constant_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl FrameEncoder {
    fn encode_header(&mut self, size: usize, dst: &mut BytesMut) {
        let mut header = [0u8; 16];
        header[..3].copy_from_slice(&(size as u32).to_be_bytes()[1..]);
        header[3..6].copy_from_slice(&HEADER_DATA);
        self.cipher.apply_keystream(&mut header);
        let mac = self.mac.header_mac(&header);
        dst.put_slice(&header);
        dst.put_slice(&mac);
    }
}

impl Encoder<Bytes> for FrameEncoder {
    type Error = RlpxError;

    fn encode(&mut self, frame: Bytes, dst: &mut BytesMut) -> Result<(), RlpxError> {
        if frame.len() > MAX_FRAME_SIZE {
            return Err(RlpxError::FrameTooLarge(frame.len()));
        }
        let body_len = padded(frame.len());
        dst.reserve(32 + body_len + 16);
        self.encode_header(frame.len(), dst);
        let start = dst.len();
        dst.put_slice(&frame);
        dst.put_bytes(0, body_len - frame.len());
        self.cipher.apply_keystream(&mut dst[start..]);
        let mac = self.mac.frame_mac(&dst[start..]);
        dst.put_slice(&mac);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Codecs for both ends of one connection: `a` sends to `b`.
    fn pair() -> (FrameEncoder, FrameDecoder) {
        let mut k = Keccak256::new();
        k.update(b"egress of a");
        let secrets = Secrets {
            aes_secret: [7; 32],
            mac_secret: [9; 32],
            egress_mac: k.clone(),
            ingress_mac: Keccak256::new(),
        };
        let mirrored = Secrets { egress_mac: Keccak256::new(), ingress_mac: k, ..secrets.clone() };
        let (_, enc) = frame_codec(secrets);
        let (dec, _) = frame_codec(mirrored);
        (enc, dec)
    }

    #[test]
    fn frames_round_trip() {
        let (mut enc, mut dec) = pair();
        let mut wire = BytesMut::new();
        for msg in [&b""[..], b"x", &[5u8; 16], &[6u8; 1000]] {
            enc.encode(Bytes::copy_from_slice(msg), &mut wire).unwrap();
        }
        // Fed in small pieces, as TCP may deliver them.
        let mut src = BytesMut::new();
        let mut out = Vec::new();
        for chunk in wire.chunks(7) {
            src.extend_from_slice(chunk);
            while let Some(frame) = dec.decode(&mut src).unwrap() {
                out.push(frame.to_vec());
            }
        }
        assert_eq!(out, vec![vec![], b"x".to_vec(), vec![5u8; 16], vec![6u8; 1000]]);
    }

    #[test]
    fn flipped_bytes_fail_the_mac() {
        for position in [3usize, 20, 40, 60] {
            let (mut enc, mut dec) = pair();
            let mut wire = BytesMut::new();
            enc.encode(Bytes::from_static(&[1u8; 30]), &mut wire).unwrap();
            wire[position] ^= 0x40;
            assert!(matches!(dec.decode(&mut wire), Err(RlpxError::BadMac)), "flip at {position}");
        }
    }

    #[test]
    fn oversized_frame_refused_at_the_header() {
        let (mut enc, mut dec) = pair();
        dec.set_max_frame_size(1 << 20);
        let mut wire = BytesMut::new();
        // A valid, MACed header announcing 16 MiB - 1 bytes, and no body at all.
        enc.encode_header(MAX_FRAME_SIZE, &mut wire);
        assert_eq!(wire.len(), 32);
        let before = wire.capacity();
        assert!(matches!(dec.decode(&mut wire), Err(RlpxError::FrameTooLarge(MAX_FRAME_SIZE))));
        assert!(wire.capacity() <= before, "no room reserved for the refused frame");

        // The encoder refuses what the size field cannot describe.
        let big = Bytes::from(vec![0u8; MAX_FRAME_SIZE + 1]);
        assert!(matches!(enc.encode(big, &mut wire), Err(RlpxError::FrameTooLarge(_))));
    }
}
