//! The public networks the client knows by name: their genesis files (as go-ethereum
//! v1.17.10 writes them with `geth dumpgenesis`: chain config with every fork, and the
//! allocation), their published genesis hashes and their discovery bootnodes.

use alloy_primitives::{b256, B256};

/// A public network known by name (`--network mainnet`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Network {
    /// Ethereum mainnet (chain id 1).
    Mainnet,
    /// The Sepolia testnet (chain id 11155111).
    Sepolia,
    /// The Hoodi testnet (chain id 560048).
    Hoodi,
}

/// The bootnodes of every network, a `network<TAB>enode` line each after `#` comments.
const BOOTNODES: &str = include_str!("../networks/bootnodes.tsv");

impl Network {
    /// Every built-in network.
    pub const ALL: [Network; 3] = [Network::Mainnet, Network::Sepolia, Network::Hoodi];

    /// The network's name, as `--network` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Network::Mainnet => "mainnet",
            Network::Sepolia => "sepolia",
            Network::Hoodi => "hoodi",
        }
    }

    /// The network called `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Network> {
        Network::ALL.into_iter().find(|n| n.name().eq_ignore_ascii_case(name))
    }

    /// The network's genesis file (geth-style JSON).
    pub fn genesis_json(self) -> &'static str {
        match self {
            Network::Mainnet => include_str!("../networks/mainnet.json"),
            Network::Sepolia => include_str!("../networks/sepolia.json"),
            Network::Hoodi => include_str!("../networks/hoodi.json"),
        }
    }

    /// The network's published genesis hash: the built genesis must hash to it.
    pub fn genesis_hash(self) -> B256 {
        match self {
            Network::Mainnet => {
                b256!("d4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3")
            }
            Network::Sepolia => {
                b256!("25a5cc106eea7138acab33231d7160d69cb777ee0c2c553fcddf5138993e6dd9")
            }
            Network::Hoodi => {
                b256!("bbe312868b376a3001692a646dd2d7d1e4406380dfd86b98aa8a34d1557c971b")
            }
        }
    }

    /// The network's discovery bootnodes as enode URLs (the list also holds `enr:`
    /// records for discv5, which has no use for them here: discv4 dials enode URLs).
    pub fn bootnodes(self) -> Vec<&'static str> {
        BOOTNODES
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split_once('\t'))
            .filter(|(network, _)| *network == self.name())
            .map(|(_, enode)| enode.trim())
            .filter(|enode| enode.starts_with("enode://"))
            .collect()
    }
}
