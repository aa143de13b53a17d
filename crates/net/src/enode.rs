//! Node identity: the secp256k1 node key, the 64-byte node id and `enode://` URLs.

use alloy_primitives::{keccak256, B256, B512};
use secp256k1::{PublicKey, SecretKey, SECP256K1};
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::str::FromStr;

/// A node's id: its secp256k1 public key, uncompressed, without the `0x04` prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub B512);

impl NodeId {
    /// The id of a public key.
    pub fn from_pubkey(key: &PublicKey) -> Self {
        let full = key.serialize_uncompressed();
        NodeId(B512::from_slice(&full[1..]))
    }

    /// The id of the node that holds this secret key.
    pub fn from_secret_key(key: &SecretKey) -> Self {
        Self::from_pubkey(&PublicKey::from_secret_key(SECP256K1, key))
    }

    /// The public key, or an error when the 64 bytes are not a point on the curve.
    pub fn to_pubkey(&self) -> Result<PublicKey, secp256k1::Error> {
        let mut full = [4u8; 65];
        full[1..].copy_from_slice(self.0.as_slice());
        PublicKey::from_slice(&full)
    }

    /// keccak256 of the id: the node's position in discovery's XOR metric.
    pub fn hash(&self) -> B256 {
        keccak256(self.0)
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", hex::encode(self.0))
    }
}

/// Where a node is: its id, IP address, TCP (RLPx) port and UDP (discovery) port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NodeRecord {
    /// The node's id (public key).
    pub id: NodeId,
    /// The node's IP address.
    pub ip: IpAddr,
    /// The RLPx listening port.
    pub tcp_port: u16,
    /// The discovery port (the TCP port unless the URL says `?discport=`).
    pub udp_port: u16,
}

impl NodeRecord {
    /// The RLPx address.
    pub fn tcp_addr(&self) -> SocketAddr {
        SocketAddr::new(self.ip, self.tcp_port)
    }

    /// The discovery address.
    pub fn udp_addr(&self) -> SocketAddr {
        SocketAddr::new(self.ip, self.udp_port)
    }
}

impl fmt::Display for NodeRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host = match self.ip {
            IpAddr::V4(ip) => ip.to_string(),
            IpAddr::V6(ip) => format!("[{ip}]"),
        };
        write!(f, "enode://{}@{}:{}", self.id, host, self.tcp_port)?;
        if self.udp_port != self.tcp_port {
            write!(f, "?discport={}", self.udp_port)?;
        }
        Ok(())
    }
}

/// Why an `enode://` URL was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EnodeError {
    /// The URL does not start with `enode://`.
    #[error("not an enode URL (expected enode://<128 hex digits>@<ip>:<port>)")]
    Scheme,
    /// The node id is not 128 hex digits of a curve point.
    #[error("bad node id: {0}")]
    Id(String),
    /// The host is not an IP address (host names are not resolved).
    #[error("bad host {0:?}: an IP address is required")]
    Host(String),
    /// A port is missing or not a number.
    #[error("bad port {0:?}")]
    Port(String),
}

impl FromStr for NodeRecord {
    type Err = EnodeError;

    fn from_str(url: &str) -> Result<Self, EnodeError> {
        let rest = url.trim().strip_prefix("enode://").ok_or(EnodeError::Scheme)?;
        let (id_hex, addr) = rest.split_once('@').ok_or(EnodeError::Scheme)?;
        let id_bytes = hex::decode(id_hex).map_err(|e| EnodeError::Id(e.to_string()))?;
        if id_bytes.len() != 64 {
            return Err(EnodeError::Id(format!("{} bytes, expected 64", id_bytes.len())));
        }
        let id = NodeId(B512::from_slice(&id_bytes));
        id.to_pubkey().map_err(|e| EnodeError::Id(e.to_string()))?;
        let (addr, query) = match addr.split_once('?') {
            Some((a, q)) => (a, Some(q)),
            None => (addr, None),
        };
        let (host, port) = addr.rsplit_once(':').ok_or_else(|| EnodeError::Port(addr.into()))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let ip = IpAddr::from_str(host).map_err(|_| EnodeError::Host(host.into()))?;
        let tcp_port = port.parse().map_err(|_| EnodeError::Port(port.into()))?;
        let mut udp_port = tcp_port;
        if let Some(query) = query {
            for pair in query.split('&') {
                if let Some(p) = pair.strip_prefix("discport=") {
                    udp_port = p.parse().map_err(|_| EnodeError::Port(p.into()))?;
                }
            }
        }
        Ok(NodeRecord { id, ip, tcp_port, udp_port })
    }
}

/// Reads the node key from `<datadir>/nodekey` (64 hex digits, geth's format), creating a
/// random one there on first start so the node keeps its identity across restarts.
pub fn load_or_create_node_key(datadir: &Path) -> std::io::Result<SecretKey> {
    let path = datadir.join("nodekey");
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let bytes = hex::decode(text.trim()).map_err(|e| invalid(&path, e))?;
            SecretKey::from_byte_array(
                bytes.as_slice().try_into().map_err(|_| invalid(&path, "not 32 bytes"))?,
            )
            .map_err(|e| invalid(&path, e))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let key = SecretKey::new(&mut secp256k1::rand::rng());
            std::fs::create_dir_all(datadir)?;
            std::fs::write(&path, hex::encode(key.secret_bytes()))?;
            Ok(key)
        }
        Err(e) => Err(e),
    }
}

fn invalid(path: &Path, e: impl fmt::Display) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("{}: not a node key: {e}", path.display()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enode_round_trip_and_errors() {
        let key = SecretKey::from_byte_array([7u8; 32]).unwrap();
        let id = NodeId::from_secret_key(&key);
        let url = format!("enode://{id}@127.0.0.1:30303?discport=30301");
        let rec: NodeRecord = url.parse().unwrap();
        assert_eq!(rec.id, id);
        assert_eq!((rec.tcp_port, rec.udp_port), (30303, 30301));
        assert_eq!(rec.to_string(), url);
        assert_eq!("http://x".parse::<NodeRecord>(), Err(EnodeError::Scheme));
        assert!(matches!(
            format!("enode://{}@127.0.0.1:1", "00".repeat(64)).parse::<NodeRecord>(),
            Err(EnodeError::Id(_))
        ));
        assert!(matches!(
            format!("enode://{id}@localhost:1").parse::<NodeRecord>(),
            Err(EnodeError::Host(_))
        ));
    }

    #[test]
    fn node_key_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let a = load_or_create_node_key(dir.path()).unwrap();
        let b = load_or_create_node_key(dir.path()).unwrap();
        assert_eq!(a, b);
        std::fs::write(dir.path().join("nodekey"), "zz").unwrap();
        assert!(load_or_create_node_key(dir.path()).is_err());
    }
}
