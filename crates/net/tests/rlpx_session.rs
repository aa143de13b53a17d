//! Two of our RLPx sessions over loopback TCP.

use ethrex_net::rlpx::{Capability, DisconnectReason, Hello, RlpxError, Session, P2P_VERSION};
use ethrex_net::NodeId;
use rand::RngCore;
use secp256k1::SecretKey;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const LIMIT: Duration = Duration::from_secs(30);

fn hello(key: &SecretKey, versions: &[u32]) -> Hello {
    Hello {
        protocol_version: P2P_VERSION,
        client_id: "ethrex/test".into(),
        capabilities: versions.iter().map(|v| Capability::new("eth", *v)).collect(),
        listen_port: 0,
        id: NodeId::from_secret_key(key),
    }
}

fn random_key() -> SecretKey {
    SecretKey::new(&mut rand::rng())
}

/// Connects a dialer with `dial_hello` to an acceptor with `accept_hello`, through `addr`
/// (a listener or a proxy in front of `listener`).
async fn pair_via(
    listener: TcpListener,
    addr: std::net::SocketAddr,
    (ka, ha): (SecretKey, Hello),
    (kb, hb): (SecretKey, Hello),
    dial_id: NodeId,
) -> (Result<Session, RlpxError>, Result<Session, RlpxError>) {
    let acceptor = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        Session::accept(stream, &kb, hb).await
    });
    let stream = TcpStream::connect(addr).await.unwrap();
    let dialed = Session::connect(stream, &ka, dial_id, ha).await;
    (dialed, acceptor.await.unwrap())
}

async fn pair(
    a: (SecretKey, Hello),
    b: (SecretKey, Hello),
) -> (Result<Session, RlpxError>, Result<Session, RlpxError>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let id = NodeId::from_secret_key(&b.0);
    pair_via(listener, addr, a, b, id).await
}

fn incompressible(len: usize) -> Vec<u8> {
    let mut data = vec![0u8; len];
    rand::rng().fill_bytes(&mut data);
    data
}

#[tokio::test]
async fn sessions_exchange_messages_pings_and_disconnect() {
    tokio::time::timeout(LIMIT, async {
        let (ka, kb) = (random_key(), random_key());
        let (a, b) = pair((ka, hello(&ka, &[69, 70, 71])), (kb, hello(&kb, &[68, 69, 70]))).await;
        let (mut a, mut b) = (a.unwrap(), b.unwrap());
        assert_eq!(a.remote_id(), NodeId::from_secret_key(&kb));
        assert_eq!(b.remote_id(), NodeId::from_secret_key(&ka));
        assert_eq!(a.remote_hello().capabilities.len(), 3);
        assert_eq!(a.shared_capability("eth"), Some(70));
        assert_eq!(b.shared_capability("eth"), Some(70));
        assert_eq!(a.shared_capability("snap"), None);

        // Both ways, including ~1 MiB of incompressible data and an empty payload.
        let big = incompressible(1 << 20);
        a.send(0, b"\xc3\x01\x02\x03").await.unwrap();
        a.send(0x11, &big).await.unwrap();
        let (code, payload) = b.recv().await.unwrap();
        assert_eq!((code, &payload[..]), (0, &b"\xc3\x01\x02\x03"[..]));
        let (code, payload) = b.recv().await.unwrap();
        assert_eq!(code, 0x11);
        assert!(payload[..] == big[..], "1 MiB payload intact");
        b.send(5, &[]).await.unwrap();
        b.send(3, &big[..1000]).await.unwrap();
        assert_eq!(a.recv().await.unwrap(), (5, bytes::Bytes::new()));
        assert_eq!(a.recv().await.unwrap().1[..], big[..1000]);

        // Codes outside eth/70's range are refused before sending.
        assert!(matches!(a.send(0x12, &[]).await, Err(RlpxError::Protocol(_))));

        // Ping: b's recv answers it, a's recv consumes the Pong.
        assert!(a.last_pong().is_none());
        a.ping().await.unwrap();
        a.send(1, b"\x80").await.unwrap();
        assert_eq!(b.recv().await.unwrap().0, 1);
        b.send(2, b"\x80").await.unwrap();
        assert_eq!(a.recv().await.unwrap().0, 2);
        assert!(a.last_pong().is_some(), "Pong received");

        // The disconnect reason reaches the other side.
        a.disconnect(DisconnectReason::TooManyPeers).await.unwrap();
        match b.recv().await {
            Err(RlpxError::Disconnected(reason)) => {
                assert_eq!(reason, DisconnectReason::TooManyPeers)
            }
            other => panic!("expected a Disconnect, got {other:?}"),
        }
    })
    .await
    .expect("test timed out");
}

#[tokio::test]
async fn split_halves_work_concurrently() {
    tokio::time::timeout(LIMIT, async {
        let (ka, kb) = (random_key(), random_key());
        let (a, b) = pair((ka, hello(&ka, &[69])), (kb, hello(&kb, &[69]))).await;
        let (mut a_read, a_write) = a.unwrap().into_split();
        let (mut b_read, b_write) = b.unwrap().into_split();
        // Each side writes 50 messages from one task while reading in another.
        let writer = |w: ethrex_net::rlpx::SessionWriter| {
            tokio::spawn(async move {
                for i in 0..50u8 {
                    w.send(4, &[i; 300]).await.unwrap();
                }
                w
            })
        };
        let (wa, wb) = (writer(a_write), writer(b_write));
        for i in 0..50u8 {
            assert_eq!(a_read.recv().await.unwrap().1[..], [i; 300]);
            assert_eq!(b_read.recv().await.unwrap().1[..], [i; 300]);
        }
        let (wa, _wb) = (wa.await.unwrap(), wb.await.unwrap());
        wa.ping().await.unwrap();
        wa.disconnect(DisconnectReason::ClientQuitting).await.unwrap();
        // b's reader answers the Ping on its own, then sees the Disconnect.
        assert!(matches!(
            b_read.recv().await,
            Err(RlpxError::Disconnected(DisconnectReason::ClientQuitting))
        ));
    })
    .await
    .expect("test timed out");
}

#[tokio::test]
async fn refused_sessions() {
    tokio::time::timeout(LIMIT, async {
        // No eth version in common.
        let (ka, kb) = (random_key(), random_key());
        let (a, b) = pair((ka, hello(&ka, &[69, 70])), (kb, hello(&kb, &[68]))).await;
        assert!(matches!(a, Err(RlpxError::NoSharedCapability)), "{a:?}");
        assert!(b.is_err());

        // The acceptor's Hello names another node than its handshake key.
        let (ka, kb) = (random_key(), random_key());
        let impostor = hello(&random_key(), &[69]);
        let (a, _) = pair((ka, hello(&ka, &[69])), (kb, impostor)).await;
        assert!(matches!(a, Err(RlpxError::UnexpectedIdentity { .. })), "{a:?}");

        // Dialing with the wrong remote id: the acceptor cannot decrypt our auth.
        let (ka, kb) = (random_key(), random_key());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let wrong = NodeId::from_secret_key(&random_key());
        let (a, b) =
            pair_via(listener, addr, (ka, hello(&ka, &[69])), (kb, hello(&kb, &[69])), wrong).await;
        assert!(matches!(b, Err(RlpxError::Handshake(_))), "{b:?}");
        assert!(a.is_err());
    })
    .await
    .expect("test timed out");
}

#[tokio::test]
async fn silent_peer_times_out() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let silent = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        // Read the auth, answer nothing.
        let mut sink = vec![0u8; 4096];
        while stream.read(&mut sink).await.unwrap_or(0) > 0 {}
    });
    let key = random_key();
    let stream = TcpStream::connect(addr).await.unwrap();
    let remote = NodeId::from_secret_key(&random_key());
    let started = std::time::Instant::now();
    let result = tokio::time::timeout(
        Duration::from_secs(20),
        Session::connect(stream, &key, remote, hello(&key, &[69])),
    )
    .await
    .expect("the handshake's own timeout fires first");
    assert!(matches!(result, Err(RlpxError::Timeout)), "{result:?}");
    assert!(started.elapsed() >= Duration::from_secs(9));
    silent.abort();
}

/// A TCP proxy from a new loopback port to `target`; when `corrupt` is set, it flips one
/// bit of the next chunk it forwards from the dialer to the acceptor.
async fn proxy(target: std::net::SocketAddr, corrupt: Arc<AtomicBool>) -> std::net::SocketAddr {
    let front = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = front.local_addr().unwrap();
    tokio::spawn(async move {
        let (inbound, _) = front.accept().await.unwrap();
        let outbound = TcpStream::connect(target).await.unwrap();
        let (mut in_read, mut in_write) = inbound.into_split();
        let (mut out_read, mut out_write) = outbound.into_split();
        tokio::spawn(async move {
            let _ = tokio::io::copy(&mut out_read, &mut in_write).await;
        });
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = match in_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if corrupt.swap(false, Ordering::SeqCst) {
                buf[n - 1] ^= 0x01;
            }
            if out_write.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
    });
    addr
}

#[tokio::test]
async fn corrupted_frame_is_a_bad_mac() {
    tokio::time::timeout(LIMIT, async {
        let (ka, kb) = (random_key(), random_key());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let corrupt = Arc::new(AtomicBool::new(false));
        let front = proxy(listener.local_addr().unwrap(), corrupt.clone()).await;
        let id = NodeId::from_secret_key(&kb);
        let (a, b) =
            pair_via(listener, front, (ka, hello(&ka, &[69])), (kb, hello(&kb, &[69])), id).await;
        let (mut a, mut b) = (a.unwrap(), b.unwrap());
        a.send(2, b"\xc2\x01\x02").await.unwrap();
        assert_eq!(b.recv().await.unwrap().0, 2, "clean frames pass the proxy");
        corrupt.store(true, Ordering::SeqCst);
        a.send(2, b"\xc2\x01\x02").await.unwrap();
        assert!(matches!(b.recv().await, Err(RlpxError::BadMac)));
    })
    .await
    .expect("test timed out");
}

#[tokio::test]
async fn frame_over_the_receive_limit_is_refused() {
    tokio::time::timeout(LIMIT, async {
        let (ka, kb) = (random_key(), random_key());
        let (a, b) = pair((ka, hello(&ka, &[69])), (kb, hello(&kb, &[69]))).await;
        let (mut a, mut b) = (a.unwrap(), b.unwrap());
        b.set_max_frame_size(64 * 1024);
        a.send(3, &incompressible(60 * 1024)).await.unwrap();
        assert_eq!(b.recv().await.unwrap().1.len(), 60 * 1024);
        a.send(3, &incompressible(100 * 1024)).await.unwrap();
        assert!(matches!(b.recv().await, Err(RlpxError::FrameTooLarge(n)) if n > 100 * 1024));
    })
    .await
    .expect("test timed out");
}
