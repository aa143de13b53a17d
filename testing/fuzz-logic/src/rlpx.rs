//! The RLPx handshake and frame targets, over `ethrex_net::rlpx::fuzzing` (the private
//! codecs, exposed with the `fuzzing` feature).

use bytes::BytesMut;
use ethrex_net::rlpx::fuzzing::{
    ack, auth, decode_message, encode_message, seal_eip8, seal_legacy, FramePipe, LEGACY_ACK_PLAIN,
    LEGACY_AUTH_PLAIN,
};
use ethrex_net::rlpx::MAX_PAYLOAD_SIZE;
use secp256k1::{PublicKey, SecretKey, SECP256K1};

/// The recipient's static key of every handshake packet.
fn recipient() -> (SecretKey, PublicKey) {
    let key = SecretKey::from_byte_array([0x24; 32]).expect("a valid secret key");
    (key, PublicKey::from_secret_key(SECP256K1, &key))
}

/// The RLPx handshake decoders (`decode_auth`, `decode_ack`: ECIES decryption, the
/// EIP-8 size prefix, the RLP bodies, the legacy fixed layouts, signature recovery).
/// Byte 0 picks what the rest is:
///
/// - `0`, `1`: a raw auth / ack packet as it arrives on the wire;
/// - `2`, `3`: an auth / ack *body*, sealed to the recipient as an EIP-8 packet first (so
///   it gets past the ECIES tag to the RLP parser and signature recovery);
/// - `4`, `5`: a legacy auth / ack plaintext (cut or zero-padded to its fixed size),
///   sealed as a legacy packet.
///
/// Asserts no panic; a sealed legacy auth that decodes yields the node id it carries
/// (bytes 97..161 of the plaintext).
pub fn rlpx_handshake(data: &[u8]) {
    let [selector, rest @ ..] = data else { return };
    let (key, public) = recipient();
    match selector % 6 {
        0 => drop(auth(&key, rest)),
        1 => drop(ack(&key, rest)),
        2 => {
            if let Some(packet) = seal_eip8(&public, rest) {
                drop(auth(&key, &packet));
            }
        }
        3 => {
            if let Some(packet) = seal_eip8(&public, rest) {
                drop(ack(&key, &packet));
            }
        }
        4 => {
            let mut plain = rest.to_vec();
            plain.resize(LEGACY_AUTH_PLAIN, 0);
            if let Ok((id, _)) = auth(&key, &seal_legacy(&public, &plain)) {
                assert_eq!(id.as_slice(), &plain[97..161], "legacy auth: another node id");
            }
        }
        _ => {
            let mut plain = rest.to_vec();
            plain.resize(LEGACY_ACK_PLAIN, 0);
            drop(ack(&key, &seal_legacy(&public, &plain)));
        }
    }
}

/// The RLPx frame codec and the base protocol's message framing (message id, snappy,
/// the decompressed-size limit). Byte 0 is a mode, byte 1 a position; the rest:
///
/// - mode bit 0 clear: split at every `0xff` byte into messages; each is framed by the
///   sender's encoder, the wire is cut into reads of `1 + position % 64` bytes and fed to
///   the receiver's decoder. Mode bit 1 set: the wire byte at `position` (mod its length)
///   is flipped first. Mode bit 2 set: the decoder's frame limit is lowered to `position`
///   bytes.
/// - mode bit 0 set: the rest goes to the decoder as raw wire bytes, and to
///   `decode_message` as a frame (with and without snappy).
///
/// Asserts no panic; without a flip, every message comes back whole and in order (or,
/// with a lowered limit, the first frame over it is refused); with a flip, the frames
/// before the flipped one come back intact and none after it is ever returned (the MAC
/// catches it). A decoded message that re-encodes decodes back to the same id and
/// payload.
pub fn rlpx_frame(data: &[u8]) {
    let [mode, position, rest @ ..] = data else { return };
    if mode & 1 == 1 {
        let mut pipe = FramePipe::new(*position);
        let mut wire = BytesMut::from(rest);
        while let Ok(Some(_)) = pipe.decode(&mut wire) {}
        for snappy in [false, true] {
            if let Ok((id, payload)) = decode_message(rest, snappy) {
                assert!(!snappy || payload.len() <= MAX_PAYLOAD_SIZE, "over the payload limit");
                if let Ok(frame) = encode_message(id, &payload, snappy) {
                    let again =
                        decode_message(&frame, snappy).expect("a re-encoded message decodes");
                    assert_eq!(again, (id, payload), "message round trip");
                }
            }
        }
        return;
    }
    let messages: Vec<&[u8]> = rest.split(|b| *b == 0xff).collect();
    let mut pipe = FramePipe::new(mode >> 3);
    let mut wire = BytesMut::new();
    let mut ends = Vec::with_capacity(messages.len());
    for message in &messages {
        pipe.encode(message, &mut wire).expect("small frames encode");
        ends.push(wire.len());
    }
    let flipped = (mode & 2 != 0 && !wire.is_empty()).then(|| {
        let at = usize::from(*position) * 131 % wire.len();
        wire[at] ^= 0x01;
        at
    });
    let limit = (mode & 4 != 0).then_some(usize::from(*position));
    if let Some(limit) = limit {
        pipe.set_max_frame_size(limit);
    }
    let step = 1 + usize::from(*position) % 64;
    let mut received = Vec::new();
    let mut inbox = BytesMut::new();
    let mut failed = false;
    'feed: for chunk in wire.chunks(step) {
        inbox.extend_from_slice(chunk);
        loop {
            match pipe.decode(&mut inbox) {
                Ok(Some(frame)) => received.push(frame),
                Ok(None) => break,
                Err(_) => {
                    failed = true;
                    break 'feed;
                }
            }
        }
    }
    // Frames wholly before the flipped byte (or all, without a flip) are the ones sent.
    let intact = match flipped {
        Some(at) => ends.iter().take_while(|end| **end <= at).count(),
        None => messages.len(),
    };
    let allowed = match limit {
        Some(limit) => messages.iter().take_while(|m| m.len() <= limit).count(),
        None => messages.len(),
    };
    let expected = intact.min(allowed);
    assert_eq!(received.len(), expected, "frames returned (flip at {flipped:?}, limit {limit:?})");
    for (got, sent) in received.iter().zip(&messages) {
        assert_eq!(got.as_slice(), *sent, "a frame came back changed");
    }
    assert_eq!(failed, expected < messages.len(), "a damaged or oversized frame was not refused");
}
