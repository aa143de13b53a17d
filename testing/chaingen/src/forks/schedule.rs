//! The fork schedule of a generated chain: every block fork from Homestead a few blocks
//! apart (the DAO fork supported), the merge by total difficulty once the last
//! proof-of-work block is built, then the timestamp forks to Amsterdam a few slots apart.

use alloy_eips::eip7840::BlobParams;
use alloy_genesis::ChainConfig as GethChainConfig;
use alloy_primitives::U256;
use ethrex_common::Fork;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// The chain id of generated fork chains.
pub const CHAIN_ID: u64 = 0x7e57_f0c5;
/// The block forks in order, each activated at a number chosen by `plan`.
/// Petersburg shares Constantinople's block: every public network did so but one, and
/// with a gap the blocks between would run EIP-1283's net gas metering, which revm (and
/// so this client) does not implement (see docs/forks.md).
const BLOCK_FORKS: [Fork; 12] = [
    Fork::Homestead,
    Fork::Dao,
    Fork::TangerineWhistle,
    Fork::SpuriousDragon,
    Fork::Byzantium,
    Fork::Constantinople,
    Fork::Istanbul,
    Fork::MuirGlacier,
    Fork::Berlin,
    Fork::London,
    Fork::ArrowGlacier,
    Fork::GrayGlacier,
];
/// The timestamp forks in order, each a few slots after the one before.
pub const TIME_FORKS: [Fork; 7] = [
    Fork::Shanghai,
    Fork::Cancun,
    Fork::Prague,
    Fork::Osaka,
    Fork::Bpo1,
    Fork::Bpo2,
    Fork::Amsterdam,
];

/// Where each fork activates.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// Block number of each block fork (Petersburg with Constantinople).
    pub blocks: Vec<(Fork, u64)>,
    /// The last proof-of-work block's number.
    pub terminal_block: u64,
    /// Whether `mergeNetsplitBlock` names the first proof-of-stake block.
    pub netsplit: bool,
    /// Slots after the first proof-of-stake block at which each timestamp fork activates
    /// (non-decreasing; equal slots activate together).
    pub slots: Vec<(Fork, u64)>,
}

impl Schedule {
    /// A random schedule: block forks 1-3 blocks apart (sometimes together), the merge
    /// 2-4 blocks after Gray Glacier, timestamp forks 1-3 slots apart.
    pub fn plan(rng: &mut ChaCha8Rng) -> Self {
        let mut number = 0;
        let blocks = BLOCK_FORKS
            .into_iter()
            .map(|fork| {
                number += rng.random_range(0..=3u64).max(u64::from(fork == Fork::Homestead));
                (fork, number)
            })
            .collect();
        let terminal_block = number + rng.random_range(2..=4);
        let mut slot = rng.random_range(1..=3);
        let slots = TIME_FORKS
            .into_iter()
            .map(|fork| {
                let at = slot;
                slot += rng.random_range(1..=3);
                (fork, at)
            })
            .collect();
        Self { blocks, terminal_block, netsplit: rng.random_bool(0.5), slots }
    }

    /// The block number `fork` activates at, if it is a block fork.
    pub fn block_of(&self, fork: Fork) -> Option<u64> {
        let fork = if fork == Fork::Petersburg { Fork::Constantinople } else { fork };
        self.blocks.iter().find(|(f, _)| *f == fork).map(|(_, n)| *n)
    }

    /// The proof-of-work part of the configuration: every block fork, no merge yet.
    pub fn pow_config(&self) -> GethChainConfig {
        let at = |fork| self.block_of(fork);
        GethChainConfig {
            chain_id: CHAIN_ID,
            homestead_block: at(Fork::Homestead),
            dao_fork_block: at(Fork::Dao),
            dao_fork_support: true,
            eip150_block: at(Fork::TangerineWhistle),
            eip155_block: at(Fork::SpuriousDragon),
            eip158_block: at(Fork::SpuriousDragon),
            byzantium_block: at(Fork::Byzantium),
            constantinople_block: at(Fork::Constantinople),
            petersburg_block: at(Fork::Petersburg),
            istanbul_block: at(Fork::Istanbul),
            muir_glacier_block: at(Fork::MuirGlacier),
            berlin_block: at(Fork::Berlin),
            london_block: at(Fork::London),
            arrow_glacier_block: at(Fork::ArrowGlacier),
            gray_glacier_block: at(Fork::GrayGlacier),
            ethash: Some(alloy_genesis::EthashConfig {}),
            ..Default::default()
        }
    }

    /// The whole configuration once the terminal block is known: `terminal_td` is the
    /// terminal total difficulty, `first_pos_time` the first proof-of-stake block's
    /// timestamp (slots are 12 s from it).
    pub fn full_config(&self, terminal_td: U256, first_pos_time: u64) -> GethChainConfig {
        let mut config = self.pow_config();
        config.terminal_total_difficulty = Some(terminal_td);
        config.merge_netsplit_block = self.netsplit.then_some(self.terminal_block + 1);
        config.deposit_contract_address = Some(alloy_primitives::Address::ZERO);
        for (fork, slot) in &self.slots {
            let time = Some(first_pos_time + slot * 12);
            match fork {
                Fork::Shanghai => config.shanghai_time = time,
                Fork::Cancun => config.cancun_time = time,
                Fork::Prague => config.prague_time = time,
                Fork::Osaka => config.osaka_time = time,
                Fork::Bpo1 => config.bpo1_time = time,
                Fork::Bpo2 => config.bpo2_time = time,
                Fork::Amsterdam => config.amsterdam_time = time,
                _ => unreachable!("TIME_FORKS holds timestamp forks only"),
            }
        }
        let schedule = &mut config.blob_schedule;
        schedule.insert("cancun".into(), BlobParams::cancun());
        schedule.insert("prague".into(), BlobParams::prague());
        schedule.insert("osaka".into(), BlobParams::osaka());
        schedule.insert("bpo1".into(), BlobParams::bpo1());
        schedule.insert("bpo2".into(), BlobParams::bpo2());
        // glamsterdam-devnet-8 runs Amsterdam with BPO2's blob parameters.
        schedule.insert("amsterdam".into(), BlobParams::bpo2());
        config
    }
}
