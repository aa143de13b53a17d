//! discv4 against go-ethereum: two gethes A and B on loopback know each other; our node,
//! given only A as bootnode, must find B. Skipped (with a message) when no geth binary is
//! found (`$GETH`, `~/go/bin/geth`, or `geth` on `PATH`).

use ethrex_net::discv4::Discovery;
use ethrex_net::{NodeId, NodeRecord};
use secp256k1::SecretKey;
use std::net::{IpAddr, Ipv4Addr, TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn geth_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("GETH") {
        // An explicit path that is not a file means "no geth" (e.g. GETH=none to skip).
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    if let Some(home) = std::env::var_os("HOME") {
        let p = Path::new(&home).join("go/bin/geth");
        if p.is_file() {
            return Some(p);
        }
    }
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join("geth"))
        .find(|p| p.is_file())
}

/// A port free for both TCP and UDP on 127.0.0.1 (geth uses the same number for both).
fn free_port() -> u16 {
    loop {
        let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = tcp.local_addr().unwrap().port();
        if UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// A geth process, killed on drop (also when the test fails).
struct Geth {
    child: Child,
    log: PathBuf,
    record: NodeRecord,
}

impl Geth {
    fn start(
        bin: &Path,
        dir: &Path,
        name: &str,
        key: &SecretKey,
        bootnodes: &[NodeRecord],
    ) -> Geth {
        let port = free_port();
        let datadir = dir.join(name);
        std::fs::create_dir_all(&datadir).unwrap();
        let log = dir.join(format!("{name}.log"));
        let boot: Vec<String> = bootnodes.iter().map(|b| b.to_string()).collect();
        // `--port` would listen on all interfaces: the config file keeps geth on loopback
        // (TCP and UDP both on ListenAddr).
        let config = dir.join(format!("{name}.toml"));
        std::fs::write(&config, format!("[Node.P2P]\nListenAddr = \"127.0.0.1:{port}\"\n"))
            .unwrap();
        let child = Command::new(bin)
            .arg("--config")
            .arg(&config)
            .arg("--datadir")
            .arg(&datadir)
            .args(["--nodekeyhex", &hex::encode(key.secret_bytes())])
            .args(["--nat", "none", "--netrestrict", "127.0.0.0/8"])
            .args(["--bootnodes", &boot.join(",")])
            .args(["--discovery.dns", ""])
            .args(["--networkid", "1337", "--maxpeers", "10"])
            .args(["--ipcdisable", "--authrpc.port", &free_port().to_string()])
            .args(["--verbosity", "4"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("starting geth");
        let record = NodeRecord {
            id: NodeId::from_secret_key(key),
            ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
            tcp_port: port,
            udp_port: port,
        };
        Geth { child, log, record }
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

impl Drop for Geth {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn random_key() -> SecretKey {
    SecretKey::new(&mut secp256k1::rand::rng())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finds_geth_b_through_geth_a() {
    let Some(bin) = geth_binary() else {
        eprintln!("skipping discv4_geth: no geth binary ($GETH, ~/go/bin/geth or PATH)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (key_a, key_b) = (random_key(), random_key());
    let id_a = NodeId::from_secret_key(&key_a);
    let id_b = NodeId::from_secret_key(&key_b);
    // Start A first (its bootnode list is B, whose port is not known yet: A gets none and
    // learns B when B, bootstrapping from A, pings it).
    let a = Geth::start(&bin, dir.path(), "a", &key_a, &[]);
    let b = Geth::start(&bin, dir.path(), "b", &key_b, &[a.record]);
    assert_eq!((a.record.id, b.record.id), (id_a, id_b));

    let key = random_key();
    let our = NodeRecord {
        id: NodeId::from_secret_key(&key),
        ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
        tcp_port: 30303,
        udp_port: 0,
    };
    let disc =
        Discovery::spawn(key, "127.0.0.1:0".parse().unwrap(), our, vec![a.record]).await.unwrap();
    let mut nodes = disc.subscribe();
    let started = std::time::Instant::now();
    let mut seen_a = None;
    let found = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(node) = nodes.recv().await {
            eprintln!("{:>6.1?} bonded with {node}", started.elapsed());
            if node.id == id_a {
                seen_a = Some(started.elapsed());
            }
            if node.id == id_b {
                return node;
            }
        }
        unreachable!("the subscription ended while the service runs");
    })
    .await;
    let Ok(found) = found else {
        panic!(
            "did not find geth B via geth A within 60 s (bonded with A: {seen_a:?}); table: {:?}\n\
             --- geth A log ---\n{}\n--- geth B log ---\n{}",
            disc.nodes(),
            a.log_tail(),
            b.log_tail()
        );
    };
    assert_eq!(found.udp_port, b.record.udp_port);
    assert_eq!(found.ip, b.record.ip);
    eprintln!("found geth B after {:.1?} (A bonded after {seen_a:?})", started.elapsed());
    disc.shutdown();
}
