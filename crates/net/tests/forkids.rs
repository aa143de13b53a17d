//! Our EIP-2124 fork ids for the built-in networks against go-ethereum v1.17.10's: every
//! row of `crates/common/networks/forkids.tsv` (network, head number, head timestamp, fork
//! hash, next fork), which geth's `core/forkid.NewID` produced for heads across each
//! network's forks.

use alloy_eips::eip2124::Head;
use ethrex_common::Network;
use ethrex_net::eth::fork_id;

const FORKIDS: &str = include_str!("../../common/networks/forkids.tsv");

#[test]
fn built_in_networks_have_geths_fork_id_at_every_listed_head() {
    let mut checked = std::collections::BTreeMap::<&str, usize>::new();
    for line in FORKIDS.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let cols: Vec<&str> = line.split('\t').map(str::trim).collect();
        if cols[0] == "network" {
            continue; // the column header
        }
        let network = Network::from_name(cols[0]).expect("a built-in network");
        let (number, timestamp): (u64, u64) = (cols[1].parse().unwrap(), cols[2].parse().unwrap());
        let hash = u32::from_str_radix(cols[3].trim_start_matches("0x"), 16).unwrap();
        let next: u64 = cols[4].parse().unwrap();
        let genesis: alloy_genesis::Genesis =
            serde_json::from_str(network.genesis_json()).expect("the genesis parses");
        let ours = fork_id(
            &genesis.config,
            network.genesis_hash(),
            genesis.timestamp,
            Head { number, timestamp, ..Default::default() },
        );
        assert_eq!(
            (u32::from_be_bytes(ours.hash.0), ours.next),
            (hash, next),
            "{} at block {number}, time {timestamp}",
            network.name()
        );
        *checked.entry(network.name()).or_default() += 1;
    }
    for network in Network::ALL {
        assert!(
            checked.get(network.name()).copied().unwrap_or(0) >= 8,
            "rows for {}",
            network.name()
        );
    }
}
