//! The forks of Ethereum mainnet from Frontier to Amsterdam, in activation order, as data:
//! each fork's name, how it is scheduled (by block number, by total difficulty, by
//! timestamp) and the geth genesis key that schedules it.

/// Fork rules, in activation order. A fork's rules include every earlier fork's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fork {
    /// The launch rules (block 0 of mainnet).
    Frontier,
    /// EIP-2 (signature malleability, contract creation cost), EIP-7 (DELEGATECALL), EIP-8.
    Homestead,
    /// The DAO fork: an irregular state change at its block (EIP-779), rules of Homestead.
    Dao,
    /// EIP-150: gas repricing of IO-heavy opcodes, the 63/64 call rule.
    TangerineWhistle,
    /// EIP-155 replay protection, EIP-158/161 state clearing, EIP-170 code size limit.
    SpuriousDragon,
    /// Status codes in receipts (EIP-658), REVERT, STATICCALL, precompiles, 3 ETH reward.
    Byzantium,
    /// Bitwise shifts, CREATE2, EXTCODEHASH, 2 ETH reward (EIP-1283 as geth scheduled it).
    Constantinople,
    /// Constantinople without EIP-1283.
    Petersburg,
    /// EIP-1884, EIP-2028, EIP-2200 (net gas metering), CHAINID, BLAKE2.
    Istanbul,
    /// Difficulty bomb delay (EIP-2384) only.
    MuirGlacier,
    /// Typed transactions (EIP-2718), access lists (EIP-2930), EIP-2929 cold/warm gas.
    Berlin,
    /// EIP-1559 base fee, BASEFEE, EIP-3529 refunds, EIP-3541.
    London,
    /// Difficulty bomb delay (EIP-4345) only.
    ArrowGlacier,
    /// Difficulty bomb delay (EIP-5133) only.
    GrayGlacier,
    /// The merge: proof of stake, no difficulty or ommers, PREVRANDAO.
    Paris,
    /// Withdrawals (EIP-4895), warm coinbase, PUSH0, initcode limits.
    Shanghai,
    /// Blob transactions (EIP-4844), beacon block root (EIP-4788), transient storage.
    Cancun,
    /// Set-code transactions (EIP-7702), execution-layer requests (EIP-7685) and a raised
    /// blob target (EIP-7691).
    Prague,
    /// Per-transaction blob cap (EIP-7594), blob base fee reserve price (EIP-7918) and
    /// per-transaction gas cap (EIP-7825).
    Osaka,
    /// Blob-parameter-only fork 1 (EIP-7892): Osaka's rules, the schedule's `bpo1` blobs.
    Bpo1,
    /// Blob-parameter-only fork 2.
    Bpo2,
    /// Blob-parameter-only fork 3.
    Bpo3,
    /// Blob-parameter-only fork 4.
    Bpo4,
    /// Blob-parameter-only fork 5.
    Bpo5,
    /// Block-level access lists (EIP-7928) and the beacon slot number in the header.
    Amsterdam,
}

/// How a fork is scheduled in a chain configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// At a block number (`...Block` keys).
    Block,
    /// When the parent's total difficulty reaches `terminalTotalDifficulty` (the merge;
    /// `mergeNetsplitBlock` marks it by number for fork ids).
    TotalDifficulty,
    /// At a block timestamp (`...Time` keys).
    Timestamp,
}

impl Fork {
    /// Every fork, in activation order.
    pub const ALL: [Fork; 25] = [
        Fork::Frontier,
        Fork::Homestead,
        Fork::Dao,
        Fork::TangerineWhistle,
        Fork::SpuriousDragon,
        Fork::Byzantium,
        Fork::Constantinople,
        Fork::Petersburg,
        Fork::Istanbul,
        Fork::MuirGlacier,
        Fork::Berlin,
        Fork::London,
        Fork::ArrowGlacier,
        Fork::GrayGlacier,
        Fork::Paris,
        Fork::Shanghai,
        Fork::Cancun,
        Fork::Prague,
        Fork::Osaka,
        Fork::Bpo1,
        Fork::Bpo2,
        Fork::Bpo3,
        Fork::Bpo4,
        Fork::Bpo5,
        Fork::Amsterdam,
    ];

    /// The fork's name as EF fixtures and `eth_config` write it (`"Frontier"`, ...,
    /// `"Amsterdam"`).
    pub fn name(self) -> &'static str {
        match self {
            Fork::Frontier => "Frontier",
            Fork::Homestead => "Homestead",
            Fork::Dao => "DAOFork",
            Fork::TangerineWhistle => "Tangerine",
            Fork::SpuriousDragon => "SpuriousDragon",
            Fork::Byzantium => "Byzantium",
            Fork::Constantinople => "Constantinople",
            Fork::Petersburg => "Petersburg",
            Fork::Istanbul => "Istanbul",
            Fork::MuirGlacier => "MuirGlacier",
            Fork::Berlin => "Berlin",
            Fork::London => "London",
            Fork::ArrowGlacier => "ArrowGlacier",
            Fork::GrayGlacier => "GrayGlacier",
            Fork::Paris => "Paris",
            Fork::Shanghai => "Shanghai",
            Fork::Cancun => "Cancun",
            Fork::Prague => "Prague",
            Fork::Osaka => "Osaka",
            Fork::Bpo1 => "BPO1",
            Fork::Bpo2 => "BPO2",
            Fork::Bpo3 => "BPO3",
            Fork::Bpo4 => "BPO4",
            Fork::Bpo5 => "BPO5",
            Fork::Amsterdam => "Amsterdam",
        }
    }

    /// Parses the fork names used by EF fixtures' `network` field (and a few aliases:
    /// `"Merge"` for Paris, `"EIP150"` for Tangerine Whistle, `"EIP158"` for Spurious
    /// Dragon, `"ConstantinopleFix"` for Petersburg); `None` for any other name.
    pub fn from_name(name: &str) -> Option<Fork> {
        let alias = match name {
            "Merge" => Some(Fork::Paris),
            "EIP150" | "TangerineWhistle" => Some(Fork::TangerineWhistle),
            "EIP158" => Some(Fork::SpuriousDragon),
            "ConstantinopleFix" => Some(Fork::Petersburg),
            "DAO" => Some(Fork::Dao),
            _ => None,
        };
        alias.or_else(|| Fork::ALL.into_iter().find(|f| f.name().eq_ignore_ascii_case(name)))
    }

    /// How the fork is scheduled.
    pub fn activation(self) -> Activation {
        if self < Fork::Paris {
            Activation::Block
        } else if self == Fork::Paris {
            Activation::TotalDifficulty
        } else {
            Activation::Timestamp
        }
    }

    /// The key of a geth genesis `config` that schedules the fork (`"londonBlock"`,
    /// `"terminalTotalDifficulty"`, `"osakaTime"`; `None` for Frontier, which is block 0).
    pub fn config_key(self) -> Option<&'static str> {
        Some(match self {
            Fork::Frontier => return None,
            Fork::Homestead => "homesteadBlock",
            Fork::Dao => "daoForkBlock",
            Fork::TangerineWhistle => "eip150Block",
            Fork::SpuriousDragon => "eip158Block",
            Fork::Byzantium => "byzantiumBlock",
            Fork::Constantinople => "constantinopleBlock",
            Fork::Petersburg => "petersburgBlock",
            Fork::Istanbul => "istanbulBlock",
            Fork::MuirGlacier => "muirGlacierBlock",
            Fork::Berlin => "berlinBlock",
            Fork::London => "londonBlock",
            Fork::ArrowGlacier => "arrowGlacierBlock",
            Fork::GrayGlacier => "grayGlacierBlock",
            Fork::Paris => "terminalTotalDifficulty",
            Fork::Shanghai => "shanghaiTime",
            Fork::Cancun => "cancunTime",
            Fork::Prague => "pragueTime",
            Fork::Osaka => "osakaTime",
            Fork::Bpo1 => "bpo1Time",
            Fork::Bpo2 => "bpo2Time",
            Fork::Bpo3 => "bpo3Time",
            Fork::Bpo4 => "bpo4Time",
            Fork::Bpo5 => "bpo5Time",
            Fork::Amsterdam => "amsterdamTime",
        })
    }

    /// Whether a chain may leave the fork out of its schedule: the forks that only
    /// delay the difficulty bomb, the DAO fork, and the blob-parameter-only forks. Every
    /// other fork needs the one before it scheduled (geth's fork order rule).
    pub fn optional(self) -> bool {
        matches!(
            self,
            Fork::Dao
                | Fork::MuirGlacier
                | Fork::ArrowGlacier
                | Fork::GrayGlacier
                | Fork::Bpo1
                | Fork::Bpo2
                | Fork::Bpo3
                | Fork::Bpo4
                | Fork::Bpo5
        )
    }

    /// The block reward of proof-of-work blocks under this fork's rules, in wei: 5 ETH,
    /// 3 ETH from Byzantium (EIP-649), 2 ETH from Constantinople (EIP-1234), none from
    /// the merge on.
    pub fn block_reward(self) -> u128 {
        const ETHER: u128 = 1_000_000_000_000_000_000;
        if self >= Fork::Paris {
            0
        } else if self >= Fork::Constantinople {
            2 * ETHER
        } else if self >= Fork::Byzantium {
            3 * ETHER
        } else {
            5 * ETHER
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fork_is_listed_once_in_order_and_parses_back_from_its_name() {
        assert!(Fork::ALL.windows(2).all(|w| w[0] < w[1]));
        for fork in Fork::ALL {
            assert_eq!(Fork::from_name(fork.name()), Some(fork));
        }
        assert_eq!(Fork::from_name("Merge"), Some(Fork::Paris));
        assert_eq!(Fork::from_name("Bogota"), None);
    }

    #[test]
    fn block_rewards_fall_at_byzantium_and_constantinople_and_end_at_the_merge() {
        let eth = 1_000_000_000_000_000_000u128;
        assert_eq!(Fork::Frontier.block_reward(), 5 * eth);
        assert_eq!(Fork::SpuriousDragon.block_reward(), 5 * eth);
        assert_eq!(Fork::Byzantium.block_reward(), 3 * eth);
        assert_eq!(Fork::Petersburg.block_reward(), 2 * eth);
        assert_eq!(Fork::GrayGlacier.block_reward(), 2 * eth);
        assert_eq!(Fork::Paris.block_reward(), 0);
    }
}
