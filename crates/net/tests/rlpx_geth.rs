//! Our RLPx session against go-ethereum, an independent implementation.
//!
//! Runs only when a `geth` binary is found (`$GETH`, `~/go/bin/geth`, or `geth` on `PATH`);
//! otherwise it prints why and passes. geth listens on a free loopback port only
//! (configured through a TOML file), with discovery, HTTP and IPC off.

use ethrex_net::rlpx::{Capability, DisconnectReason, Hello, RlpxError, Session, P2P_VERSION};
use ethrex_net::NodeId;
use secp256k1::SecretKey;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};

fn find_geth() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("GETH") {
        return Some(PathBuf::from(path)).filter(|p| p.is_file());
    }
    let home = std::env::var_os("HOME").map(|h| PathBuf::from(h).join("go/bin/geth"));
    if let Some(path) = home.filter(|p| p.is_file()) {
        return Some(path);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths).map(|d| d.join("geth")).find(|p| p.is_file())
    })
}

fn our_hello(key: &SecretKey) -> Hello {
    Hello {
        protocol_version: P2P_VERSION,
        client_id: "ethrex/rlpx-test".into(),
        capabilities: [69, 70, 71].into_iter().map(|v| Capability::new("eth", v)).collect(),
        listen_port: 0,
        id: NodeId::from_secret_key(key),
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Kills geth (the child we started) when the test ends, however it ends.
struct Geth(Child);

impl Drop for Geth {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn handshake_with_geth() {
    let Some(geth) = find_geth() else {
        eprintln!("skipping: no geth binary (set GETH or install it in ~/go/bin)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // geth also dials us, as a static node: that exercises our accepting side.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let acceptor_key = SecretKey::new(&mut rand::rng());
    let static_node = format!(
        "enode://{}@{}",
        NodeId::from_secret_key(&acceptor_key),
        listener.local_addr().unwrap()
    );
    let (p2p_port, auth_port) = (free_port(), free_port());
    let config = dir.path().join("geth.toml");
    std::fs::write(
        &config,
        format!(
            r#"[Node]
DataDir = "{datadir}"
IPCPath = ""
HTTPHost = ""
WSHost = ""
AuthAddr = "127.0.0.1"
AuthPort = {auth_port}

[Node.P2P]
MaxPeers = 5
NoDiscovery = true
DiscoveryV4 = false
DiscoveryV5 = false
BootstrapNodes = []
BootstrapNodesV5 = []
StaticNodes = ["{static_node}"]
ListenAddr = "127.0.0.1:{p2p_port}"
"#,
            datadir = dir.path().join("data").display(),
        ),
    )
    .unwrap();
    let geth_key = SecretKey::new(&mut rand::rng());
    let geth_id = NodeId::from_secret_key(&geth_key);
    let log_path = dir.path().join("geth.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let _geth = Geth(
        Command::new(&geth)
            .arg("--config")
            .arg(&config)
            .args(["--nat", "none", "--cache", "128", "--nodekeyhex"])
            .arg(hex::encode(geth_key.secret_bytes()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start geth"),
    );

    // Wait for geth's P2P listener (its log line names our chosen key and port).
    let started = Instant::now();
    loop {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        if text.contains("Started P2P networking") {
            assert!(text.contains(&geth_id.to_string()), "geth runs with the given node key");
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "geth did not start in 60 s; its log:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let key = SecretKey::new(&mut rand::rng());
    let hello = our_hello(&key);
    let inbound = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let mut session = Session::accept(stream, &acceptor_key, our_hello(&acceptor_key)).await?;
        let remote = session.remote_hello().clone();
        let (code, _status) = session.recv().await?;
        session.disconnect(DisconnectReason::TooManyPeers).await?;
        Ok::<_, RlpxError>((remote, session.remote_id(), code))
    });
    let result = tokio::time::timeout(Duration::from_secs(30), async {
        let stream = TcpStream::connect(("127.0.0.1", p2p_port)).await.unwrap();
        let mut session = Session::connect(stream, &key, geth_id, hello).await?;
        let remote = session.remote_hello().clone();
        assert!(remote.client_id.starts_with("Geth/"), "client id {}", remote.client_id);
        assert_eq!(remote.id, geth_id);
        assert!(remote.protocol_version >= 5);
        let eth = session.shared_capability("eth").expect("geth speaks eth/69 at least");
        assert!((69..=71).contains(&eth));

        // geth sends its eth Status (code 0) first thing: snappy-decompressed, an RLP list.
        let (code, status) = session.recv().await?;
        assert_eq!(code, 0, "first eth message is Status");
        assert!(status.len() > 30 && status[0] >= 0xc0, "Status is an RLP list");

        // Our (compressed) Ping is understood: geth answers with a Pong, which recv
        // consumes while waiting for eth messages that do not come.
        session.ping().await?;
        let deadline = Instant::now() + Duration::from_secs(4);
        while session.last_pong().is_none() && Instant::now() < deadline {
            match tokio::time::timeout(Duration::from_millis(200), session.recv()).await {
                Err(_) => {}
                Ok(Ok((code, _))) => panic!("unexpected eth message {code}"),
                Ok(Err(e)) => return Err(e),
            }
        }
        assert!(session.last_pong().is_some(), "geth answered our Ping");
        session.disconnect(DisconnectReason::Requested).await?;
        Ok::<_, RlpxError>((remote.client_id, eth))
    })
    .await
    .expect("session with geth timed out");
    match result {
        Ok((client, eth)) => eprintln!("dialed {client}, eth/{eth}"),
        Err(e) => {
            let text = std::fs::read_to_string(&log_path).unwrap_or_default();
            panic!("session with geth failed: {e}\ngeth log:\n{text}");
        }
    }

    let accepted = tokio::time::timeout(Duration::from_secs(30), inbound)
        .await
        .expect("geth did not dial its static node within 30 s")
        .unwrap();
    match accepted {
        Ok((hello, id, code)) => {
            assert!(hello.client_id.starts_with("Geth/"));
            assert_eq!(id, geth_id, "the authenticated initiator is geth");
            assert_eq!(code, 0, "first eth message is Status");
            eprintln!("accepted {} dialing us", hello.client_id);
        }
        Err(e) => {
            let text = std::fs::read_to_string(&log_path).unwrap_or_default();
            panic!("session with geth failed: {e}\ngeth log:\n{text}");
        }
    }
}
