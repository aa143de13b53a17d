//! EIP-2124 fork ids for a chain: which forks a geth-style chain configuration
//! schedules, handed to `alloy_eips::eip2124::ForkFilter` (which owns the CRC32 and the
//! validation rules).

use alloy_eips::eip2124::{ForkFilter, ForkFilterKey, ForkId, Head};
use alloy_genesis::ChainConfig;
use alloy_primitives::B256;

/// The chain's forks in EIP-2124 order: block-numbered forks (Homestead .. the merge
/// netsplit block) ascending, then timestamp forks (Shanghai, Cancun, Prague, Osaka,
/// BPO1-5, Amsterdam, Bogota) ascending, each list deduplicated; forks at block 0 and
/// timestamp forks at or before `genesis_time` are left out (they are the genesis rule
/// set, EIP-6122).
///
/// `daoForkBlock` counts whether or not the chain supports the DAO fork, as in geth.
pub fn chain_forks(config: &ChainConfig, genesis_time: u64) -> Vec<ForkFilterKey> {
    let blocks = [
        config.homestead_block,
        config.dao_fork_block,
        config.eip150_block,
        config.eip155_block,
        config.eip158_block,
        config.byzantium_block,
        config.constantinople_block,
        config.petersburg_block,
        config.istanbul_block,
        config.muir_glacier_block,
        config.berlin_block,
        config.london_block,
        config.arrow_glacier_block,
        config.gray_glacier_block,
        config.merge_netsplit_block,
    ];
    let times = [
        config.shanghai_time,
        config.cancun_time,
        config.prague_time,
        config.osaka_time,
        config.bpo1_time,
        config.bpo2_time,
        config.bpo3_time,
        config.bpo4_time,
        config.bpo5_time,
        config.amsterdam_time,
        config.bogota_time,
    ];
    let mut blocks: Vec<u64> = blocks.into_iter().flatten().filter(|&b| b != 0).collect();
    blocks.sort_unstable();
    blocks.dedup();
    let mut times: Vec<u64> = times.into_iter().flatten().filter(|&t| t > genesis_time).collect();
    times.sort_unstable();
    times.dedup();
    blocks
        .into_iter()
        .map(ForkFilterKey::Block)
        .chain(times.into_iter().map(ForkFilterKey::Time))
        .collect()
}

/// The EIP-2124 fork filter of a chain at `head`: validates the fork ids peers announce
/// and gives ours ([`ForkFilter::current`]). Only `head.number` and `head.timestamp` are
/// used.
pub fn fork_filter(
    config: &ChainConfig,
    genesis_hash: B256,
    genesis_time: u64,
    head: Head,
) -> ForkFilter {
    ForkFilter::new(head, genesis_hash, genesis_time, chain_forks(config, genesis_time))
}

/// Our EIP-2124 fork id at `head` (block number and timestamp of the head block).
pub fn fork_id(config: &ChainConfig, genesis_hash: B256, genesis_time: u64, head: Head) -> ForkId {
    fork_filter(config, genesis_hash, genesis_time, head).current()
}
