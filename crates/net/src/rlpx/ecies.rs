//! The RLPx encrypted handshake: ECIES (secp256k1 ECDH, NIST SP 800-56 concat KDF with
//! SHA-256, AES-128-CTR, HMAC-SHA256), the auth and ack messages in both the EIP-8 format
//! (sent) and the legacy pre-EIP-8 format (accepted on receive), and the derivation of the
//! session secrets (AES and MAC secrets, the initial egress and ingress MAC states).
//!
//! Written by hand from the devp2p `rlpx.md` specification and EIP-8: no maintained crate
//! implements the RLPx handshake. The primitives come from `secp256k1`, `aes`/`ctr`,
//! `hmac`/`sha2`, `concat-kdf` and `sha3`.

use super::RlpxError;
use crate::enode::NodeId;
use aes::cipher::{KeyIvInit, StreamCipher};
use alloy_primitives::{keccak256, B256};
use alloy_rlp::{Decodable, Encodable, Header};
use hmac::{Hmac, Mac};
use rand::{Rng, RngCore};
use secp256k1::ecdsa::{RecoverableSignature, RecoveryId};
use secp256k1::{Message, PublicKey, SecretKey, SECP256K1};
use sha2::{Digest, Sha256};
use sha3::Keccak256;

type Aes128Ctr = ctr::Ctr128BE<aes::Aes128>;
type HmacSha256 = Hmac<Sha256>;

/// ECIES overhead: the 65-byte ephemeral public key, the 16-byte IV and the 32-byte tag.
pub(crate) const ECIES_OVERHEAD: usize = 65 + 16 + 32;
/// Size of a legacy (pre-EIP-8) auth packet: ECIES of sig || keccak(eph) || pubk || nonce || 0.
pub(crate) const LEGACY_AUTH_SIZE: usize = 194 + ECIES_OVERHEAD;
/// Size of a legacy (pre-EIP-8) ack packet: ECIES of eph-pubk || nonce || 0.
pub(crate) const LEGACY_ACK_SIZE: usize = 97 + ECIES_OVERHEAD;
/// The handshake version we send (`auth-vsn`, `ack-vsn`).
const HANDSHAKE_VERSION: u64 = 4;

fn handshake_err(msg: impl Into<String>) -> RlpxError {
    RlpxError::Handshake(msg.into())
}

/// The x coordinate of `scalar * point`: the ECDH agreement RLPx uses.
fn ecdh_x(point: &PublicKey, scalar: &SecretKey) -> [u8; 32] {
    let xy = secp256k1::ecdh::shared_secret_point(point, scalar);
    let mut x = [0u8; 32];
    x.copy_from_slice(&xy[..32]);
    x
}

fn xor32(a: &[u8; 32], b: &[u8; 32]) -> [u8; 32] {
    std::array::from_fn(|i| a[i] ^ b[i])
}

/// The encryption and MAC keys ECIES derives from a shared secret.
fn ecies_keys(shared: &[u8; 32]) -> ([u8; 16], [u8; 32]) {
    let mut km = [0u8; 32];
    concat_kdf::derive_key_into::<Sha256>(shared, &[], &mut km)
        .expect("a 32-byte key from a non-empty secret");
    let mut ke = [0u8; 16];
    ke.copy_from_slice(&km[..16]);
    let mac_key: [u8; 32] = Sha256::digest(&km[16..]).into();
    (ke, mac_key)
}

/// ECIES-encrypts `msg` to `remote`; `auth_data` is authenticated by the tag but not sent
/// (for EIP-8 packets, the 2-byte size prefix).
pub(crate) fn ecies_encrypt(remote: &PublicKey, msg: &[u8], auth_data: &[u8]) -> Vec<u8> {
    let mut rng = rand::rng();
    let ephemeral = SecretKey::new(&mut rng);
    let mut iv = [0u8; 16];
    rng.fill_bytes(&mut iv);
    ecies_encrypt_with(remote, msg, auth_data, &ephemeral, iv)
}

pub(crate) fn ecies_encrypt_with(
    remote: &PublicKey,
    msg: &[u8],
    auth_data: &[u8],
    ephemeral: &SecretKey,
    iv: [u8; 16],
) -> Vec<u8> {
    let (ke, km) = ecies_keys(&ecdh_x(remote, ephemeral));
    let mut out = Vec::with_capacity(msg.len() + ECIES_OVERHEAD);
    out.extend_from_slice(
        &PublicKey::from_secret_key(SECP256K1, ephemeral).serialize_uncompressed(),
    );
    out.extend_from_slice(&iv);
    let start = out.len();
    out.extend_from_slice(msg);
    Aes128Ctr::new(&ke.into(), &iv.into()).apply_keystream(&mut out[start..]);
    let mut mac = HmacSha256::new_from_slice(&km).expect("HMAC takes any key size");
    mac.update(&out[65..]);
    mac.update(auth_data);
    out.extend_from_slice(&mac.finalize().into_bytes());
    out
}

/// Decrypts an ECIES message sent to `key`, checking its tag (over `auth_data` too).
pub(crate) fn ecies_decrypt(
    key: &SecretKey,
    data: &[u8],
    auth_data: &[u8],
) -> Result<Vec<u8>, RlpxError> {
    if data.len() < ECIES_OVERHEAD {
        return Err(handshake_err("ECIES message too short"));
    }
    let point = PublicKey::from_slice(&data[..65])
        .map_err(|e| handshake_err(format!("ECIES ephemeral key: {e}")))?;
    let (ke, km) = ecies_keys(&ecdh_x(&point, key));
    let (body, tag) = data.split_at(data.len() - 32);
    let mut mac = HmacSha256::new_from_slice(&km).expect("HMAC takes any key size");
    mac.update(&body[65..]);
    mac.update(auth_data);
    mac.verify_slice(tag).map_err(|_| handshake_err("ECIES tag mismatch"))?;
    let iv: [u8; 16] = body[65..81].try_into().expect("16 bytes");
    let mut plain = body[81..].to_vec();
    Aes128Ctr::new(&ke.into(), &iv.into()).apply_keystream(&mut plain);
    Ok(plain)
}

/// Which of the two handshake encodings a packet used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// Pre-EIP-8: fixed-size, no size prefix.
    Legacy,
    /// EIP-8: 2-byte size prefix, RLP body, padding.
    Eip8,
}

/// A decoded auth message (as the recipient sees it).
#[derive(Debug, Clone)]
pub(crate) struct AuthBody {
    /// The initiator's static public key (its node id).
    pub(crate) initiator_id: NodeId,
    /// The initiator's nonce.
    pub(crate) nonce: B256,
    /// The initiator's ephemeral public key, recovered from the signature.
    pub(crate) ephemeral: PublicKey,
    /// `auth-vsn` (4 for legacy packets).
    pub(crate) version: u64,
    /// Encoding used.
    pub(crate) format: Format,
}

/// A decoded ack message (as the initiator sees it).
#[derive(Debug, Clone)]
pub(crate) struct AckBody {
    /// The recipient's ephemeral public key.
    pub(crate) ephemeral: PublicKey,
    /// The recipient's nonce.
    pub(crate) nonce: B256,
    /// `ack-vsn` (4 for legacy packets).
    pub(crate) version: u64,
    /// Encoding used.
    pub(crate) format: Format,
}

fn pubkey_from_64(bytes: &[u8]) -> Result<PublicKey, RlpxError> {
    if bytes.len() != 64 {
        return Err(handshake_err(format!("public key of {} bytes", bytes.len())));
    }
    NodeId(alloy_primitives::B512::from_slice(bytes))
        .to_pubkey()
        .map_err(|e| handshake_err(format!("public key: {e}")))
}

fn b256_from(bytes: &[u8], what: &str) -> Result<B256, RlpxError> {
    if bytes.len() != 32 {
        return Err(handshake_err(format!("{what} of {} bytes", bytes.len())));
    }
    Ok(B256::from_slice(bytes))
}

/// Recovers the initiator's ephemeral key from the auth signature over
/// `static-shared-secret ^ nonce`.
fn recover_ephemeral(
    key: &SecretKey,
    initiator: &PublicKey,
    nonce: &B256,
    sig: &[u8],
) -> Result<PublicKey, RlpxError> {
    if sig.len() != 65 {
        return Err(handshake_err(format!("signature of {} bytes", sig.len())));
    }
    let recid = RecoveryId::try_from(i32::from(sig[64]))
        .map_err(|_| handshake_err("bad signature recovery id"))?;
    let sig = RecoverableSignature::from_compact(&sig[..64], recid)
        .map_err(|e| handshake_err(format!("signature: {e}")))?;
    let msg = xor32(&ecdh_x(initiator, key), &nonce.0);
    SECP256K1
        .recover_ecdsa(Message::from_digest(msg), &sig)
        .map_err(|e| handshake_err(format!("signature recovery: {e}")))
}

/// Reads the next RLP byte string of a list payload.
fn next_bytes<'a>(buf: &mut &'a [u8], what: &str) -> Result<&'a [u8], RlpxError> {
    Header::decode_bytes(buf, false).map_err(|e| handshake_err(format!("{what}: {e}")))
}

/// The payload of the RLP list at the start of `plain`; trailing data (padding) is ignored.
fn list_payload<'a>(plain: &'a [u8], what: &str) -> Result<&'a [u8], RlpxError> {
    let mut buf = plain;
    let header = Header::decode(&mut buf).map_err(|e| handshake_err(format!("{what}: {e}")))?;
    if !header.list || header.payload_length > buf.len() {
        return Err(handshake_err(format!("{what}: not an RLP list")));
    }
    Ok(&buf[..header.payload_length])
}

/// Decrypts and decodes a complete auth packet (legacy or EIP-8) received with `key`.
pub(crate) fn decode_auth(key: &SecretKey, packet: &[u8]) -> Result<AuthBody, RlpxError> {
    if packet.len() == LEGACY_AUTH_SIZE {
        if let Ok(plain) = ecies_decrypt(key, packet, &[]) {
            // sig(65) || keccak(ephemeral-pubk)(32) || pubk(64) || nonce(32) || 0
            let initiator = pubkey_from_64(&plain[97..161])?;
            let nonce = b256_from(&plain[161..193], "nonce")?;
            let ephemeral = recover_ephemeral(key, &initiator, &nonce, &plain[..65])?;
            return Ok(AuthBody {
                initiator_id: NodeId::from_pubkey(&initiator),
                nonce,
                ephemeral,
                version: HANDSHAKE_VERSION,
                format: Format::Legacy,
            });
        }
    }
    let plain = decrypt_eip8(key, packet)?;
    let mut list = list_payload(&plain, "auth body")?;
    let sig = next_bytes(&mut list, "auth signature")?;
    let initiator = pubkey_from_64(next_bytes(&mut list, "auth public key")?)?;
    let nonce = b256_from(next_bytes(&mut list, "auth nonce")?, "nonce")?;
    let version = u64::decode(&mut list).map_err(|e| handshake_err(format!("auth-vsn: {e}")))?;
    // Further list elements are ignored (EIP-8).
    let ephemeral = recover_ephemeral(key, &initiator, &nonce, sig)?;
    Ok(AuthBody {
        initiator_id: NodeId::from_pubkey(&initiator),
        nonce,
        ephemeral,
        version,
        format: Format::Eip8,
    })
}

/// Decrypts and decodes a complete ack packet (legacy or EIP-8) received with `key`.
pub(crate) fn decode_ack(key: &SecretKey, packet: &[u8]) -> Result<AckBody, RlpxError> {
    if packet.len() == LEGACY_ACK_SIZE {
        if let Ok(plain) = ecies_decrypt(key, packet, &[]) {
            // ephemeral-pubk(64) || nonce(32) || 0
            return Ok(AckBody {
                ephemeral: pubkey_from_64(&plain[..64])?,
                nonce: b256_from(&plain[64..96], "nonce")?,
                version: HANDSHAKE_VERSION,
                format: Format::Legacy,
            });
        }
    }
    let plain = decrypt_eip8(key, packet)?;
    let mut list = list_payload(&plain, "ack body")?;
    let ephemeral = pubkey_from_64(next_bytes(&mut list, "ack ephemeral key")?)?;
    let nonce = b256_from(next_bytes(&mut list, "ack nonce")?, "nonce")?;
    let version = u64::decode(&mut list).map_err(|e| handshake_err(format!("ack-vsn: {e}")))?;
    Ok(AckBody { ephemeral, nonce, version, format: Format::Eip8 })
}

fn decrypt_eip8(key: &SecretKey, packet: &[u8]) -> Result<Vec<u8>, RlpxError> {
    if packet.len() < 2 {
        return Err(handshake_err("handshake packet too short"));
    }
    let size = u16::from_be_bytes([packet[0], packet[1]]) as usize;
    if packet.len() != size + 2 {
        return Err(handshake_err(format!(
            "EIP-8 size prefix {size} for a packet of {} bytes",
            packet.len()
        )));
    }
    ecies_decrypt(key, &packet[2..], &packet[..2])
}

/// Wraps an RLP body into an EIP-8 packet: random padding, size prefix, ECIES.
fn seal_eip8(remote: &PublicKey, mut body: Vec<u8>) -> Vec<u8> {
    let mut rng = rand::rng();
    let padding = rng.random_range(100..=300);
    let start = body.len();
    body.resize(start + padding, 0);
    rng.fill_bytes(&mut body[start..]);
    let size = u16::try_from(body.len() + ECIES_OVERHEAD).expect("handshake packets are small");
    let prefix = size.to_be_bytes();
    let mut packet = prefix.to_vec();
    packet.extend_from_slice(&ecies_encrypt(remote, &body, &prefix));
    packet
}

fn rlp_list(items: &[&dyn Encodable]) -> Vec<u8> {
    let payload_length: usize = items.iter().map(|i| i.length()).sum();
    let mut out = Vec::with_capacity(payload_length + 3);
    Header { list: true, payload_length }.encode(&mut out);
    for item in items {
        item.encode(&mut out);
    }
    out
}

/// The secrets of an established RLPx connection.
#[derive(Clone)]
pub(crate) struct Secrets {
    /// AES-256-CTR key of the frame cipher (both directions).
    pub(crate) aes_secret: [u8; 32],
    /// AES-256 key of the MAC updates.
    pub(crate) mac_secret: [u8; 32],
    /// The egress MAC's initial Keccak-256 state.
    pub(crate) egress_mac: Keccak256,
    /// The ingress MAC's initial Keccak-256 state.
    pub(crate) ingress_mac: Keccak256,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secrets(..)")
    }
}

/// One side of a handshake: our static key, a fresh ephemeral key and nonce.
pub(crate) struct Handshake {
    key: SecretKey,
    ephemeral: SecretKey,
    nonce: B256,
}

impl Handshake {
    /// A handshake with a random ephemeral key and nonce.
    pub(crate) fn new(key: SecretKey) -> Self {
        let mut rng = rand::rng();
        let ephemeral = SecretKey::new(&mut rng);
        let mut nonce = B256::ZERO;
        rng.fill_bytes(nonce.as_mut_slice());
        Self::with_ephemeral(key, ephemeral, nonce)
    }

    /// A handshake with given ephemeral key and nonce (test vectors).
    pub(crate) fn with_ephemeral(key: SecretKey, ephemeral: SecretKey, nonce: B256) -> Self {
        Handshake { key, ephemeral, nonce }
    }

    /// Our ephemeral public key, as a node id (64 bytes).
    pub(crate) fn ephemeral_id(&self) -> NodeId {
        NodeId::from_secret_key(&self.ephemeral)
    }

    /// Our nonce.
    pub(crate) fn nonce(&self) -> &B256 {
        &self.nonce
    }

    /// Initiator: the EIP-8 auth packet to `remote`.
    pub(crate) fn auth_packet(&self, remote: &PublicKey) -> Vec<u8> {
        let msg = xor32(&ecdh_x(remote, &self.key), &self.nonce.0);
        let (recid, compact) = SECP256K1
            .sign_ecdsa_recoverable(Message::from_digest(msg), &self.ephemeral)
            .serialize_compact();
        let mut sig = [0u8; 65];
        sig[..64].copy_from_slice(&compact);
        sig[64] = i32::from(recid) as u8;
        let id = NodeId::from_secret_key(&self.key);
        let body =
            rlp_list(&[&&sig[..], &id.0.as_slice(), &self.nonce.as_slice(), &HANDSHAKE_VERSION]);
        seal_eip8(remote, body)
    }

    /// Recipient: the EIP-8 ack packet to the initiator.
    pub(crate) fn ack_packet(&self, initiator: &PublicKey) -> Vec<u8> {
        let eph = NodeId::from_secret_key(&self.ephemeral);
        let body = rlp_list(&[&eph.0.as_slice(), &self.nonce.as_slice(), &HANDSHAKE_VERSION]);
        seal_eip8(initiator, body)
    }

    /// The session secrets. `initiator` tells which side we are; `auth` and `ack` are the
    /// packets exactly as they went over the wire (size prefix included).
    pub(crate) fn secrets(
        &self,
        initiator: bool,
        remote_ephemeral: &PublicKey,
        remote_nonce: &B256,
        auth: &[u8],
        ack: &[u8],
    ) -> Secrets {
        let ephemeral_key = ecdh_x(remote_ephemeral, &self.ephemeral);
        let (initiator_nonce, recipient_nonce) =
            if initiator { (&self.nonce, remote_nonce) } else { (remote_nonce, &self.nonce) };
        let nonce_hash =
            keccak256([recipient_nonce.as_slice(), initiator_nonce.as_slice()].concat());
        let shared_secret = keccak256([&ephemeral_key[..], nonce_hash.as_slice()].concat());
        let aes_secret = keccak256([&ephemeral_key[..], shared_secret.as_slice()].concat());
        let mac_secret = keccak256([&ephemeral_key[..], aes_secret.as_slice()].concat());

        let mac = |nonce: &B256, packet: &[u8]| {
            let mut k = Keccak256::new();
            k.update(xor32(&mac_secret.0, &nonce.0));
            k.update(packet);
            k
        };
        // The initiator's egress MAC starts from the recipient's nonce and the auth it sent.
        let (egress_mac, ingress_mac) = if initiator {
            (mac(recipient_nonce, auth), mac(initiator_nonce, ack))
        } else {
            (mac(initiator_nonce, ack), mac(recipient_nonce, auth))
        };
        Secrets { aes_secret: aes_secret.0, mac_secret: mac_secret.0, egress_mac, ingress_mac }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn key(hex: &str) -> SecretKey {
        SecretKey::from_byte_array(hex::decode(hex).unwrap().try_into().unwrap()).unwrap()
    }

    pub(crate) fn packet(text: &str) -> Vec<u8> {
        hex::decode(text.split_whitespace().collect::<String>()).unwrap()
    }

    fn pubkey(k: &SecretKey) -> PublicKey {
        PublicKey::from_secret_key(SECP256K1, k)
    }

    // The RLPx handshake test vectors of EIP-8 (node A initiates, node B receives).
    pub(crate) const KEY_A: &str =
        "49a7b37aa6f6645917e7b807e9d1c00d4fa71f18343b0d4122a4d2df64dd6fee";
    pub(crate) const KEY_B: &str =
        "b71c71a67e1177ad4e901695e1b4b9ee17ae16c6668d313eac2f96dbcda3f291";
    pub(crate) const EPH_A: &str =
        "869d6ecf5211f1cc60418a13b9d870b22959d0c16f02bec714c960dd2298a32d";
    pub(crate) const EPH_B: &str =
        "e238eb8e04fee6511ab04c6dd3c89ce097b11f25d584863ac2b6d5b35b1847e4";
    pub(crate) const NONCE_A: &str =
        "7e968bba13b6c50e2c4cd7f241cc0d64d1ac25c7f5952df231ac6a2bda8ee5d6";
    pub(crate) const NONCE_B: &str =
        "559aead08264d5795d3909718cdd05abd49572e84fe55590eef31a88a08fdffd";

    pub(crate) const AUTH_1: &str = "
048ca79ad18e4b0659fab4853fe5bc58eb83992980f4c9cc147d2aa31532efd29a3d3dc6a3d89eaf
913150cfc777ce0ce4af2758bf4810235f6e6ceccfee1acc6b22c005e9e3a49d6448610a58e98744
ba3ac0399e82692d67c1f58849050b3024e21a52c9d3b01d871ff5f210817912773e610443a9ef14
2e91cdba0bd77b5fdf0769b05671fc35f83d83e4d3b0b000c6b2a1b1bba89e0fc51bf4e460df3105
c444f14be226458940d6061c296350937ffd5e3acaceeaaefd3c6f74be8e23e0f45163cc7ebd7622
0f0128410fd05250273156d548a414444ae2f7dea4dfca2d43c057adb701a715bf59f6fb66b2d1d2
0f2c703f851cbf5ac47396d9ca65b6260bd141ac4d53e2de585a73d1750780db4c9ee4cd4d225173
a4592ee77e2bd94d0be3691f3b406f9bba9b591fc63facc016bfa8";

    pub(crate) const AUTH_2: &str = "
01b304ab7578555167be8154d5cc456f567d5ba302662433674222360f08d5f1534499d3678b513b
0fca474f3a514b18e75683032eb63fccb16c156dc6eb2c0b1593f0d84ac74f6e475f1b8d56116b84
9634a8c458705bf83a626ea0384d4d7341aae591fae42ce6bd5c850bfe0b999a694a49bbbaf3ef6c
da61110601d3b4c02ab6c30437257a6e0117792631a4b47c1d52fc0f8f89caadeb7d02770bf999cc
147d2df3b62e1ffb2c9d8c125a3984865356266bca11ce7d3a688663a51d82defaa8aad69da39ab6
d5470e81ec5f2a7a47fb865ff7cca21516f9299a07b1bc63ba56c7a1a892112841ca44b6e0034dee
70c9adabc15d76a54f443593fafdc3b27af8059703f88928e199cb122362a4b35f62386da7caad09
c001edaeb5f8a06d2b26fb6cb93c52a9fca51853b68193916982358fe1e5369e249875bb8d0d0ec3
6f917bc5e1eafd5896d46bd61ff23f1a863a8a8dcd54c7b109b771c8e61ec9c8908c733c0263440e
2aa067241aaa433f0bb053c7b31a838504b148f570c0ad62837129e547678c5190341e4f1693956c
3bf7678318e2d5b5340c9e488eefea198576344afbdf66db5f51204a6961a63ce072c8926c";

    pub(crate) const AUTH_3: &str = "
01b8044c6c312173685d1edd268aa95e1d495474c6959bcdd10067ba4c9013df9e40ff45f5bfd6f7
2471f93a91b493f8e00abc4b80f682973de715d77ba3a005a242eb859f9a211d93a347fa64b597bf
280a6b88e26299cf263b01b8dfdb712278464fd1c25840b995e84d367d743f66c0e54a586725b7bb
f12acca27170ae3283c1073adda4b6d79f27656993aefccf16e0d0409fe07db2dc398a1b7e8ee93b
cd181485fd332f381d6a050fba4c7641a5112ac1b0b61168d20f01b479e19adf7fdbfa0905f63352
bfc7e23cf3357657455119d879c78d3cf8c8c06375f3f7d4861aa02a122467e069acaf513025ff19
6641f6d2810ce493f51bee9c966b15c5043505350392b57645385a18c78f14669cc4d960446c1757
1b7c5d725021babbcd786957f3d17089c084907bda22c2b2675b4378b114c601d858802a55345a15
116bc61da4193996187ed70d16730e9ae6b3bb8787ebcaea1871d850997ddc08b4f4ea668fbf3740
7ac044b55be0908ecb94d4ed172ece66fd31bfdadf2b97a8bc690163ee11f5b575a4b44e36e2bfb2
f0fce91676fd64c7773bac6a003f481fddd0bae0a1f31aa27504e2a533af4cef3b623f4791b2cca6
d490";

    pub(crate) const ACK_1: &str = "
049f8abcfa9c0dc65b982e98af921bc0ba6e4243169348a236abe9df5f93aa69d99cadddaa387662
b0ff2c08e9006d5a11a278b1b3331e5aaabf0a32f01281b6f4ede0e09a2d5f585b26513cb794d963
5a57563921c04a9090b4f14ee42be1a5461049af4ea7a7f49bf4c97a352d39c8d02ee4acc416388c
1c66cec761d2bc1c72da6ba143477f049c9d2dde846c252c111b904f630ac98e51609b3b1f58168d
dca6505b7196532e5f85b259a20c45e1979491683fee108e9660edbf38f3add489ae73e3dda2c71b
d1497113d5c755e942d1";

    pub(crate) const ACK_2: &str = "
01ea0451958701280a56482929d3b0757da8f7fbe5286784beead59d95089c217c9b917788989470
b0e330cc6e4fb383c0340ed85fab836ec9fb8a49672712aeabbdfd1e837c1ff4cace34311cd7f4de
05d59279e3524ab26ef753a0095637ac88f2b499b9914b5f64e143eae548a1066e14cd2f4bd7f814
c4652f11b254f8a2d0191e2f5546fae6055694aed14d906df79ad3b407d94692694e259191cde171
ad542fc588fa2b7333313d82a9f887332f1dfc36cea03f831cb9a23fea05b33deb999e85489e645f
6aab1872475d488d7bd6c7c120caf28dbfc5d6833888155ed69d34dbdc39c1f299be1057810f34fb
e754d021bfca14dc989753d61c413d261934e1a9c67ee060a25eefb54e81a4d14baff922180c395d
3f998d70f46f6b58306f969627ae364497e73fc27f6d17ae45a413d322cb8814276be6ddd13b885b
201b943213656cde498fa0e9ddc8e0b8f8a53824fbd82254f3e2c17e8eaea009c38b4aa0a3f306e8
797db43c25d68e86f262e564086f59a2fc60511c42abfb3057c247a8a8fe4fb3ccbadde17514b7ac
8000cdb6a912778426260c47f38919a91f25f4b5ffb455d6aaaf150f7e5529c100ce62d6d92826a7
1778d809bdf60232ae21ce8a437eca8223f45ac37f6487452ce626f549b3b5fdee26afd2072e4bc7
5833c2464c805246155289f4";

    pub(crate) const ACK_3: &str = "
01f004076e58aae772bb101ab1a8e64e01ee96e64857ce82b1113817c6cdd52c09d26f7b90981cd7
ae835aeac72e1573b8a0225dd56d157a010846d888dac7464baf53f2ad4e3d584531fa203658fab0
3a06c9fd5e35737e417bc28c1cbf5e5dfc666de7090f69c3b29754725f84f75382891c561040ea1d
dc0d8f381ed1b9d0d4ad2a0ec021421d847820d6fa0ba66eaf58175f1b235e851c7e2124069fbc20
2888ddb3ac4d56bcbd1b9b7eab59e78f2e2d400905050f4a92dec1c4bdf797b3fc9b2f8e84a482f3
d800386186712dae00d5c386ec9387a5e9c9a1aca5a573ca91082c7d68421f388e79127a5177d4f8
590237364fd348c9611fa39f78dcdceee3f390f07991b7b47e1daa3ebcb6ccc9607811cb17ce51f1
c8c2c5098dbdd28fca547b3f58c01a424ac05f869f49c6a34672ea2cbbc558428aa1fe48bbfd6115
8b1b735a65d99f21e70dbc020bfdface9f724a0d1fb5895db971cc81aa7608baa0920abb0a565c9c
436e2fd13323428296c86385f2384e408a31e104670df0791d93e743a3a5194ee6b076fb6323ca59
3011b7348c16cf58f66b9633906ba54a2ee803187344b394f75dd2e663a57b956cb830dd7a908d4f
39a2336a61ef9fda549180d4ccde21514d117b6c6fd07a9102b5efe710a32af4eeacae2cb3b1dec0
35b9593b48b9d3ca4c13d245d5f04169b0b1";

    #[test]
    fn eip8_auth_vectors_decode() {
        let b = key(KEY_B);
        let a_id = NodeId::from_secret_key(&key(KEY_A));
        let eph_a = pubkey(&key(EPH_A));
        let nonce_a = B256::from_slice(&hex::decode(NONCE_A).unwrap());
        for (text, format, version) in
            [(AUTH_1, Format::Legacy, 4), (AUTH_2, Format::Eip8, 4), (AUTH_3, Format::Eip8, 56)]
        {
            let auth = decode_auth(&b, &packet(text)).unwrap();
            assert_eq!(auth.format, format);
            assert_eq!(auth.version, version);
            assert_eq!(auth.initiator_id, a_id);
            assert_eq!(auth.nonce, nonce_a);
            assert_eq!(auth.ephemeral, eph_a);
        }
        // The wrong key cannot open them.
        assert!(decode_auth(&key(KEY_A), &packet(AUTH_2)).is_err());
    }

    #[test]
    fn eip8_ack_vectors_decode() {
        let a = key(KEY_A);
        let eph_b = pubkey(&key(EPH_B));
        let nonce_b = B256::from_slice(&hex::decode(NONCE_B).unwrap());
        for (text, format, version) in
            [(ACK_1, Format::Legacy, 4), (ACK_2, Format::Eip8, 4), (ACK_3, Format::Eip8, 57)]
        {
            let ack = decode_ack(&a, &packet(text)).unwrap();
            assert_eq!(ack.format, format);
            assert_eq!(ack.version, version);
            assert_eq!(ack.ephemeral, eph_b);
            assert_eq!(ack.nonce, nonce_b);
        }
    }

    #[test]
    fn eip8_derived_secrets() {
        let (auth, ack) = (packet(AUTH_2), packet(ACK_2));
        let b = Handshake::with_ephemeral(
            key(KEY_B),
            key(EPH_B),
            B256::from_slice(&hex::decode(NONCE_B).unwrap()),
        );
        let received = decode_auth(&key(KEY_B), &auth).unwrap();
        let s = b.secrets(false, &received.ephemeral, &received.nonce, &auth, &ack);
        assert_eq!(
            hex::encode(s.aes_secret),
            "80e8632c05fed6fc2a13b0f8d31a3cf645366239170ea067065aba8e28bac487"
        );
        assert_eq!(
            hex::encode(s.mac_secret),
            "2ea74ec5dae199227dff1af715362700e989d889d7a493cb0639691efb8e5f98"
        );
        let mut ingress = s.ingress_mac.clone();
        ingress.update(b"foo");
        assert_eq!(
            hex::encode(ingress.finalize()),
            "0c7ec6340062cc46f5e9f1e3cf86f8c8c403c5a0964f5df0ebd34a75ddc86db5"
        );

        // Node A, deriving from the same packets, gets the mirror image.
        let a = Handshake::with_ephemeral(
            key(KEY_A),
            key(EPH_A),
            B256::from_slice(&hex::decode(NONCE_A).unwrap()),
        );
        let acked = decode_ack(&key(KEY_A), &ack).unwrap();
        let sa = a.secrets(true, &acked.ephemeral, &acked.nonce, &auth, &ack);
        assert_eq!(sa.aes_secret, s.aes_secret);
        assert_eq!(sa.mac_secret, s.mac_secret);
        assert_eq!(sa.egress_mac.finalize(), s.ingress_mac.clone().finalize());
        assert_eq!(sa.ingress_mac.finalize(), s.egress_mac.finalize());
    }

    #[test]
    fn our_packets_round_trip() {
        let (a, b) = (key(KEY_A), key(KEY_B));
        let ha = Handshake::new(a);
        let hb = Handshake::new(b);
        let auth = ha.auth_packet(&pubkey(&b));
        assert_ne!(auth[0], 0x04, "EIP-8 packets start with the size prefix");
        let got = decode_auth(&b, &auth).unwrap();
        assert_eq!(got.format, Format::Eip8);
        assert_eq!(got.initiator_id, NodeId::from_secret_key(&a));
        assert_eq!(got.ephemeral, pubkey(&ha.ephemeral));
        let ack = hb.ack_packet(&pubkey(&a));
        let got_ack = decode_ack(&a, &ack).unwrap();
        assert_eq!(got_ack.ephemeral, pubkey(&hb.ephemeral));
        assert_eq!(got_ack.nonce, hb.nonce);
        // A flipped ciphertext byte fails the ECIES tag.
        let mut bad = auth.clone();
        let n = bad.len() - 40;
        bad[n] ^= 1;
        assert!(matches!(decode_auth(&b, &bad), Err(RlpxError::Handshake(_))));
    }

    #[test]
    fn ecies_auth_data_is_authenticated() {
        let b = key(KEY_B);
        let sealed = ecies_encrypt(&pubkey(&b), b"hello", b"xy");
        assert_eq!(ecies_decrypt(&b, &sealed, b"xy").unwrap(), b"hello");
        assert!(ecies_decrypt(&b, &sealed, b"xz").is_err());
    }
}
