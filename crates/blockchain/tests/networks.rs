//! The built-in networks' genesis blocks, built from their genesis files (written by
//! go-ethereum v1.17.10), hash to the published genesis hashes; their configurations
//! pass the configuration checks and their forks fall where the networks ran them.

use ethrex_blockchain::chain_file::parse_genesis;
use ethrex_blockchain::genesis::{alloc_state_root, genesis_header, geth_alloc};
use ethrex_common::{ChainConfig, Fork, Network};
use std::path::Path;

#[test]
fn every_built_in_genesis_hashes_to_the_published_hash() {
    for network in Network::ALL {
        let genesis =
            parse_genesis(network.genesis_json().as_bytes(), Path::new(network.name())).unwrap();
        let root = alloc_state_root(&geth_alloc(&genesis)).unwrap();
        let header = genesis_header(&genesis, root);
        assert_eq!(header.hash_slow(), network.genesis_hash(), "{}", network.name());
        assert!(!network.bootnodes().is_empty(), "{} has enode bootnodes", network.name());
    }
}

#[test]
fn mainnet_forks_fall_on_their_blocks_and_times() {
    let genesis =
        parse_genesis(Network::Mainnet.genesis_json().as_bytes(), Path::new("mainnet")).unwrap();
    let config = ChainConfig::new(genesis.config);
    let at = |n, t| config.fork_at(n, t);
    assert_eq!(at(0, 0), Fork::Frontier);
    assert_eq!(at(1_150_000, 0), Fork::Homestead);
    assert_eq!(at(1_920_000, 0), Fork::Dao);
    assert_eq!(at(4_370_000, 0), Fork::Byzantium);
    assert_eq!(at(7_280_000, 0), Fork::Petersburg);
    assert_eq!(at(12_965_000, 0), Fork::London);
    assert_eq!(at(15_050_000, 0), Fork::GrayGlacier);
    // The merge has no netsplit block on mainnet: its first proof-of-stake block
    // (15,537,394) is Paris by its header.
    let first_pos = alloy_consensus::Header {
        number: 15_537_394,
        timestamp: 1_663_224_179,
        ..Default::default()
    };
    assert_eq!(config.fork_of(&first_pos), Fork::Paris);
    assert_eq!(at(17_034_870, 1_681_338_455), Fork::Shanghai);
    assert_eq!(at(19_426_587, 1_710_338_135), Fork::Cancun);
    assert_eq!(config.pos_fork_at(1_767_747_671), Fork::Bpo2);
}
