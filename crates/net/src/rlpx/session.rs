//! An established RLPx session: the handshake driver, the Hello exchange, and message I/O.

use super::ecies::{self, Handshake, LEGACY_ACK_SIZE, LEGACY_AUTH_SIZE};
use super::frame::{frame_codec, FrameDecoder, FrameEncoder};
use super::p2p::{
    self, decode_message, encode_message, Capability, DisconnectReason, Hello,
    BASE_PROTOCOL_LENGTH, DISCONNECT, HELLO, PING, PONG,
};
use super::RlpxError;
use crate::enode::NodeId;
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use secp256k1::{PublicKey, SecretKey};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::Mutex;
use tokio_util::codec::{FramedRead, FramedWrite};

/// How long each handshake step (auth, ack, Hello) may take before the session fails with
/// [`RlpxError::Timeout`].
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The subprotocol a session carries.
const SUBPROTOCOL: &str = "eth";

async fn step<T>(fut: impl Future<Output = Result<T, RlpxError>>) -> Result<T, RlpxError> {
    tokio::time::timeout(HANDSHAKE_TIMEOUT, fut).await.map_err(|_| RlpxError::Timeout)?
}

/// What both halves know about the peer.
#[derive(Debug)]
struct PeerInfo {
    remote_id: NodeId,
    remote_hello: Hello,
    /// The shared capabilities (highest common version), sorted by name.
    shared: Vec<Capability>,
    /// The id offset of `eth`.
    offset: u64,
    /// The number of `eth` message ids, when known for the shared version.
    length: Option<u64>,
}

struct Egress {
    framed: FramedWrite<OwnedWriteHalf, FrameEncoder>,
    snappy: bool,
}

/// The writing half of a session (cloneable; clones share the connection).
#[derive(Clone)]
pub struct SessionWriter {
    egress: Arc<Mutex<Egress>>,
    info: Arc<PeerInfo>,
    /// Set by [`SessionWriter::disconnect`] before it waits for the connection: from then
    /// on nothing but that Disconnect goes out (a Ping, a Pong or an announcement queued
    /// behind it is refused with [`RlpxError::Closing`]).
    closing: Arc<AtomicBool>,
}

/// The reading half of a session.
pub struct SessionReader {
    framed: FramedRead<OwnedReadHalf, FrameDecoder>,
    snappy: bool,
    /// For answering Ping with Pong.
    writer: SessionWriter,
    last_pong: Option<Instant>,
}

/// An established session: handshake done, Hello exchanged, snappy on.
pub struct Session {
    reader: SessionReader,
    writer: SessionWriter,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("remote", &self.writer.info.remote_id).finish()
    }
}

impl std::fmt::Debug for SessionReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionReader").field("remote", &self.writer.info.remote_id).finish()
    }
}

impl std::fmt::Debug for SessionWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionWriter").field("remote", &self.info.remote_id).finish()
    }
}

/// Reads one handshake packet: EIP-8 (size-prefixed) or legacy (`legacy_size` bytes, told
/// apart by trying to decrypt it). A legacy packet starts with the 0x04 of its ECIES key; an
/// EIP-8 packet starting with 0x04 announces at least 1024 bytes, more than any legacy one.
async fn read_packet(
    stream: &mut TcpStream,
    key: &SecretKey,
    legacy_size: usize,
) -> Result<Vec<u8>, RlpxError> {
    let mut packet = vec![0u8; 2];
    stream.read_exact(&mut packet).await?;
    if packet[0] == 0x04 {
        packet.resize(legacy_size, 0);
        stream.read_exact(&mut packet[2..]).await?;
        if ecies::ecies_decrypt(key, &packet, &[]).is_ok() {
            return Ok(packet);
        }
    }
    let total = u16::from_be_bytes([packet[0], packet[1]]) as usize + 2;
    if total < packet.len() {
        return Err(RlpxError::Handshake(format!("handshake packet size {total} too small")));
    }
    let read = packet.len();
    packet.resize(total, 0);
    stream.read_exact(&mut packet[read..]).await?;
    Ok(packet)
}

/// The legacy (pre-EIP-8) ack, answering a legacy auth.
fn legacy_ack(hs_ephemeral: &NodeId, nonce: &[u8; 32], initiator: &PublicKey) -> Vec<u8> {
    let mut body = Vec::with_capacity(97);
    body.extend_from_slice(hs_ephemeral.0.as_slice());
    body.extend_from_slice(nonce);
    body.push(0);
    ecies::ecies_encrypt(initiator, &body, &[])
}

/// The shared capabilities (each name at the highest version both offer), sorted by name.
fn shared_capabilities(ours: &[Capability], theirs: &[Capability]) -> Vec<Capability> {
    let mut shared: Vec<Capability> = Vec::new();
    for cap in ours.iter().filter(|c| theirs.contains(c)) {
        match shared.iter_mut().find(|s| s.name == cap.name) {
            Some(s) => s.version = s.version.max(cap.version),
            None => shared.push(cap.clone()),
        }
    }
    shared.sort();
    shared
}

impl Session {
    /// Dial: TCP-connected stream, our key, the remote's id (from its enode), our Hello.
    pub async fn connect(
        mut stream: TcpStream,
        key: &SecretKey,
        remote: NodeId,
        hello: Hello,
    ) -> Result<Session, RlpxError> {
        let remote_pub = remote
            .to_pubkey()
            .map_err(|e| RlpxError::Handshake(format!("remote id is not a public key: {e}")))?;
        let hs = Handshake::new(*key);
        let auth = hs.auth_packet(&remote_pub);
        step(async { Ok(stream.write_all(&auth).await?) }).await?;
        let ack = step(read_packet(&mut stream, key, LEGACY_ACK_SIZE)).await?;
        let body = ecies::decode_ack(key, &ack)?;
        tracing::trace!(version = body.version, format = ?body.format, "RLPx ack");
        let secrets = hs.secrets(true, &body.ephemeral, &body.nonce, &auth, &ack);
        Self::finish(stream, secrets, remote, hello).await
    }

    /// Accept an inbound connection.
    pub async fn accept(
        mut stream: TcpStream,
        key: &SecretKey,
        hello: Hello,
    ) -> Result<Session, RlpxError> {
        let auth = step(read_packet(&mut stream, key, LEGACY_AUTH_SIZE)).await?;
        let body = ecies::decode_auth(key, &auth)?;
        tracing::trace!(version = body.version, format = ?body.format, "RLPx auth");
        let initiator = body
            .initiator_id
            .to_pubkey()
            .map_err(|e| RlpxError::Handshake(format!("initiator key: {e}")))?;
        let hs = Handshake::new(*key);
        let ack = match body.format {
            ecies::Format::Eip8 => hs.ack_packet(&initiator),
            ecies::Format::Legacy => legacy_ack(&hs.ephemeral_id(), &hs.nonce().0, &initiator),
        };
        step(async { Ok(stream.write_all(&ack).await?) }).await?;
        let secrets = hs.secrets(false, &body.ephemeral, &body.nonce, &auth, &ack);
        Self::finish(stream, secrets, body.initiator_id, hello).await
    }

    /// After the handshake: exchange Hellos and work out the shared capabilities.
    async fn finish(
        stream: TcpStream,
        secrets: ecies::Secrets,
        remote: NodeId,
        hello: Hello,
    ) -> Result<Session, RlpxError> {
        let (decoder, encoder) = frame_codec(secrets);
        let (read, write) = stream.into_split();
        let mut framed_read = FramedRead::new(read, decoder);
        let mut framed_write = FramedWrite::new(write, encoder);

        let ours = encode_message(HELLO, &hello.encode(), false)?;
        step(framed_write.send(ours)).await?;
        let frame = step(async { framed_read.next().await.ok_or(RlpxError::Closed)? }).await?;
        let (id, payload) = decode_message(frame, false)?;
        let remote_hello = match id {
            HELLO => Hello::decode(&payload)?,
            DISCONNECT => return Err(RlpxError::Disconnected(DisconnectReason::decode(&payload))),
            other => return Err(RlpxError::Protocol(format!("message {other:#x} before Hello"))),
        };
        let snappy = hello.protocol_version >= 5 && remote_hello.protocol_version >= 5;
        let mut egress = Egress { framed: framed_write, snappy };

        if remote_hello.id != remote {
            egress.disconnect(DisconnectReason::UnexpectedIdentity).await;
            return Err(RlpxError::UnexpectedIdentity {
                expected: Box::new(remote),
                got: Box::new(remote_hello.id),
            });
        }
        let shared = shared_capabilities(&hello.capabilities, &remote_hello.capabilities);
        let mut offset = BASE_PROTOCOL_LENGTH;
        let mut eth = None;
        for cap in &shared {
            let length = p2p::protocol_length(&cap.name, cap.version);
            if cap.name == SUBPROTOCOL {
                eth = Some((offset, length));
                break;
            }
            match length {
                Some(length) => offset += length,
                None => {
                    egress.disconnect(DisconnectReason::UselessPeer).await;
                    return Err(RlpxError::Protocol(format!(
                        "cannot place eth after {cap}, whose message count is unknown"
                    )));
                }
            }
        }
        let Some((offset, length)) = eth else {
            egress.disconnect(DisconnectReason::UselessPeer).await;
            return Err(RlpxError::NoSharedCapability);
        };
        tracing::debug!(peer = %remote, client = %remote_hello.client_id, ?shared, "RLPx session up");

        let info = Arc::new(PeerInfo { remote_id: remote, remote_hello, shared, offset, length });
        let writer = SessionWriter {
            egress: Arc::new(Mutex::new(egress)),
            info,
            closing: Arc::new(AtomicBool::new(false)),
        };
        let reader =
            SessionReader { framed: framed_read, snappy, writer: writer.clone(), last_pong: None };
        Ok(Session { reader, writer })
    }

    /// The peer's node id.
    pub fn remote_id(&self) -> NodeId {
        self.writer.remote_id()
    }

    /// The peer's Hello.
    pub fn remote_hello(&self) -> &Hello {
        &self.writer.info.remote_hello
    }

    /// The highest version of capability `name` both sides offer (None if none in common).
    pub fn shared_capability(&self, name: &str) -> Option<u32> {
        self.writer.shared_capability(name)
    }

    /// Send an `eth` message: `code` relative to the subprotocol (eth Status = 0); the
    /// subprotocol's id offset (0x10 when eth is the only shared capability) is added here.
    pub async fn send(&mut self, code: u64, rlp_payload: &[u8]) -> Result<(), RlpxError> {
        self.writer.send(code, rlp_payload).await
    }

    /// The next `eth` message (code relative, raw RLP payload). Answers Ping with Pong
    /// itself; returns `Err(Disconnected(reason))` on a Disconnect.
    pub async fn recv(&mut self) -> Result<(u64, Bytes), RlpxError> {
        self.reader.recv().await
    }

    /// Sends a Disconnect with `reason` and closes our side of the connection.
    pub async fn disconnect(&mut self, reason: DisconnectReason) -> Result<(), RlpxError> {
        self.writer.disconnect(reason).await
    }

    /// Sends a Ping; the Pong is consumed by [`Session::recv`] (see [`Session::last_pong`]).
    pub async fn ping(&mut self) -> Result<(), RlpxError> {
        self.writer.ping().await
    }

    /// When the last Pong arrived (None if none yet).
    pub fn last_pong(&self) -> Option<Instant> {
        self.reader.last_pong
    }

    /// Refuse incoming frames over `max` bytes (default [`super::MAX_FRAME_SIZE`]) with
    /// [`RlpxError::FrameTooLarge`], before reading or buffering them.
    pub fn set_max_frame_size(&mut self, max: usize) {
        self.reader.set_max_frame_size(max)
    }

    /// Splits the session into a reading and a (cloneable) writing half, for a peer task
    /// that reads and writes concurrently. The reader keeps answering Pings.
    pub fn into_split(self) -> (SessionReader, SessionWriter) {
        (self.reader, self.writer)
    }
}

impl Egress {
    async fn send(&mut self, id: u64, payload: &[u8]) -> Result<(), RlpxError> {
        let frame = encode_message(id, payload, self.snappy)?;
        self.framed.send(frame).await
    }

    /// Best effort: send a Disconnect and close our direction.
    async fn disconnect(&mut self, reason: DisconnectReason) {
        let _ = tokio::time::timeout(HANDSHAKE_TIMEOUT, async {
            let _ = self.send(DISCONNECT, &reason.encode()).await;
            let _ = self.framed.get_mut().shutdown().await;
        })
        .await;
    }
}

impl SessionWriter {
    /// The peer's node id.
    pub fn remote_id(&self) -> NodeId {
        self.info.remote_id
    }

    /// The highest version of capability `name` both sides offer (None if none in common).
    pub fn shared_capability(&self, name: &str) -> Option<u32> {
        self.info.shared.iter().find(|c| c.name == name).map(|c| c.version)
    }

    /// Send an `eth` message (see [`Session::send`]).
    pub async fn send(&self, code: u64, rlp_payload: &[u8]) -> Result<(), RlpxError> {
        if self.info.length.is_some_and(|len| code >= len) {
            return Err(RlpxError::Protocol(format!("eth message code {code:#x} out of range")));
        }
        self.send_raw(self.info.offset + code, rlp_payload).await
    }

    /// Sends a Ping.
    pub async fn ping(&self) -> Result<(), RlpxError> {
        self.send_raw(PING, &[0xc0]).await
    }

    /// Whether [`SessionWriter::disconnect`] was called: nothing else is sent any more.
    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    /// Sends message `id` unless the session is closing (checked under the egress lock, so
    /// a message waiting for the lock behind a Disconnect is refused, not sent after it).
    async fn send_raw(&self, id: u64, payload: &[u8]) -> Result<(), RlpxError> {
        let mut egress = self.egress.lock().await;
        if self.is_closing() {
            return Err(RlpxError::Closing);
        }
        egress.send(id, payload).await
    }

    /// Sends a Disconnect with `reason`, then closes our direction of the connection. From
    /// the moment it is called, every other send on this session fails with
    /// [`RlpxError::Closing`]: a peer we drop reads the Disconnect and nothing after it.
    pub async fn disconnect(&self, reason: DisconnectReason) -> Result<(), RlpxError> {
        // Before waiting for the lock: whoever holds it now finishes its message, whoever
        // queues behind us is refused.
        self.closing.store(true, Ordering::Release);
        let mut egress = self.egress.lock().await;
        egress.send(DISCONNECT, &reason.encode()).await?;
        egress.framed.get_mut().shutdown().await?;
        Ok(())
    }
}

impl SessionReader {
    /// The peer's node id.
    pub fn remote_id(&self) -> NodeId {
        self.writer.remote_id()
    }

    /// When the last Pong arrived (None if none yet).
    pub fn last_pong(&self) -> Option<Instant> {
        self.last_pong
    }

    /// See [`Session::set_max_frame_size`].
    pub fn set_max_frame_size(&mut self, max: usize) {
        self.framed.decoder_mut().set_max_frame_size(max)
    }

    /// The next message of any protocol exactly as it came: its wire id (the base
    /// protocol's below 16: Ping 2, Pong 3, Disconnect 1; `eth` after its offset) and
    /// payload. Nothing is answered or consumed: a tester's view of what the peer sent, in
    /// order (e.g. that a Disconnect came with no Ping before it).
    pub async fn recv_wire(&mut self) -> Result<(u64, Bytes), RlpxError> {
        let frame = self.framed.next().await.ok_or(RlpxError::Closed)??;
        decode_message(frame, self.snappy)
    }

    /// The next `eth` message (see [`Session::recv`]).
    pub async fn recv(&mut self) -> Result<(u64, Bytes), RlpxError> {
        let info = self.writer.info.clone();
        loop {
            let frame = self.framed.next().await.ok_or(RlpxError::Closed)??;
            let (id, payload) = decode_message(frame, self.snappy)?;
            match id {
                // A closing session does not answer (the Disconnect is the last word).
                PING => match self.writer.send_raw(PONG, &[0xc0]).await {
                    Ok(()) | Err(RlpxError::Closing) => {}
                    Err(e) => return Err(e),
                },
                PONG => self.last_pong = Some(Instant::now()),
                DISCONNECT => {
                    return Err(RlpxError::Disconnected(DisconnectReason::decode(&payload)))
                }
                HELLO => return Err(RlpxError::Protocol("second Hello".into())),
                id if id < BASE_PROTOCOL_LENGTH => {
                    tracing::trace!(id, "ignoring unknown p2p message");
                }
                id if id >= info.offset && info.length.is_none_or(|len| id < info.offset + len) => {
                    return Ok((id - info.offset, payload));
                }
                id => tracing::trace!(id, "ignoring a message of another capability"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_capabilities_pick_the_highest_common_version() {
        let ours =
            [Capability::new("eth", 69), Capability::new("eth", 70), Capability::new("eth", 71)];
        let theirs = [
            Capability::new("snap", 1),
            Capability::new("eth", 68),
            Capability::new("eth", 69),
            Capability::new("eth", 70),
        ];
        assert_eq!(shared_capabilities(&ours, &theirs), vec![Capability::new("eth", 70)]);
        assert!(shared_capabilities(&ours, &[Capability::new("eth", 68)]).is_empty());
        let both =
            [Capability::new("snap", 1), Capability::new("bzz", 1), Capability::new("eth", 69)];
        let names: Vec<_> = shared_capabilities(&both, &both).into_iter().map(|c| c.name).collect();
        assert_eq!(names, ["bzz", "eth", "snap"]);
    }

    /// Our accepting side answers a legacy auth (EIP-8's Auth1 vector) with a legacy ack
    /// and an EIP-8 auth (Auth3, version 56 with extra elements) with an EIP-8 ack.
    #[tokio::test]
    async fn accept_answers_in_the_format_of_the_auth() {
        use crate::rlpx::ecies::tests::{key, packet, AUTH_1, AUTH_3, KEY_A, KEY_B};
        for (auth, format) in [(AUTH_1, ecies::Format::Legacy), (AUTH_3, ecies::Format::Eip8)] {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let kb = key(KEY_B);
            let acceptor = tokio::spawn(async move {
                let (stream, _) = listener.accept().await.unwrap();
                let hello = Hello {
                    protocol_version: 5,
                    client_id: "b".into(),
                    capabilities: vec![Capability::new("eth", 69)],
                    listen_port: 0,
                    id: NodeId::from_secret_key(&kb),
                };
                Session::accept(stream, &kb, hello).await
            });
            let mut stream = TcpStream::connect(addr).await.unwrap();
            stream.write_all(&packet(auth)).await.unwrap();
            let ka = key(KEY_A);
            let ack = read_packet(&mut stream, &ka, LEGACY_ACK_SIZE).await.unwrap();
            let body = ecies::decode_ack(&ka, &ack).unwrap();
            assert_eq!(body.format, format);
            assert_eq!(body.version, 4);
            drop(stream);
            assert!(acceptor.await.unwrap().is_err(), "no Hello ever came");
        }
    }
}
