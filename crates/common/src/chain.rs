//! Chain configuration: which fork rules apply to a block (by number, by total difficulty,
//! by timestamp), the blob schedule, and the checks a configuration must pass.
//!
//! The configuration is the `config` section of a geth-style genesis file
//! (`alloy_genesis::ChainConfig`), every fork from Frontier to Amsterdam.

use crate::fork::{Activation, Fork};
use alloy_eips::eip7840::BlobParams;
use alloy_genesis::ChainConfig as GethChainConfig;
use alloy_primitives::U256;

/// Why a chain configuration cannot be used. Each names the rule it breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainConfigError {
    /// A key that looks like a fork's (`...Block`, `...Time`) that no fork has.
    #[error("unknown fork key `{0}` in the chain config")]
    UnknownForkKey(String),
    /// A `blobSchedule` entry for no fork with blobs.
    #[error("unknown fork `{0}` in blobSchedule")]
    UnknownBlobScheduleKey(String),
    /// A fork is scheduled but the one before it, which it requires, is not.
    #[error("{fork} is scheduled ({key}) but {missing} before it is not")]
    MissingEarlierFork {
        /// The scheduled fork.
        fork: &'static str,
        /// Its key.
        key: &'static str,
        /// The required earlier fork.
        missing: &'static str,
    },
    /// A fork is scheduled before an earlier fork.
    #[error("{fork} at {at} is scheduled before {earlier} at {earlier_at}")]
    OutOfOrder {
        /// The fork scheduled too early.
        fork: &'static str,
        /// Its block or timestamp.
        at: u64,
        /// The earlier fork.
        earlier: &'static str,
        /// Its block or timestamp.
        earlier_at: u64,
    },
    /// A timestamp fork without the merge (`terminalTotalDifficulty`) before it.
    #[error("{0} is scheduled by timestamp but terminalTotalDifficulty is not set")]
    TimestampForkBeforeMerge(&'static str),
    /// The merge without London (the merge needs EIP-1559 headers).
    #[error("terminalTotalDifficulty is set but londonBlock is not")]
    MergeWithoutLondon,
    /// A consensus engine this client does not run.
    #[error("unsupported consensus engine `{0}` (only ethash and proof of stake are)")]
    UnsupportedEngine(&'static str),
}

/// The chain's fork schedule and blob schedule: the `config` section of a geth-style
/// genesis file, with the rule lookups the client needs.
#[derive(Debug, Clone)]
pub struct ChainConfig {
    /// The configuration as read from the genesis file; fork times are UNIX seconds.
    pub inner: GethChainConfig,
}

impl ChainConfig {
    /// Wraps a geth-style chain configuration.
    pub fn new(inner: GethChainConfig) -> Self {
        Self { inner }
    }

    /// The EIP-155 chain id that transaction signatures commit to.
    pub fn chain_id(&self) -> u64 {
        self.inner.chain_id
    }

    /// A configuration with every fork up to and including `fork` active from genesis,
    /// the way EF blockchain tests describe their network (optional forks left out;
    /// from Paris on, a terminal total difficulty of zero).
    pub fn all_forks_at_genesis(chain_id: u64, fork: Fork) -> Self {
        let at = |f: Fork| (fork >= f).then_some(0);
        let inner = GethChainConfig {
            chain_id,
            homestead_block: at(Fork::Homestead),
            eip150_block: at(Fork::TangerineWhistle),
            eip155_block: at(Fork::SpuriousDragon),
            eip158_block: at(Fork::SpuriousDragon),
            byzantium_block: at(Fork::Byzantium),
            constantinople_block: at(Fork::Constantinople),
            petersburg_block: at(Fork::Petersburg),
            istanbul_block: at(Fork::Istanbul),
            berlin_block: at(Fork::Berlin),
            london_block: at(Fork::London),
            terminal_total_difficulty: (fork >= Fork::Paris).then_some(U256::ZERO),
            terminal_total_difficulty_passed: fork >= Fork::Paris,
            shanghai_time: at(Fork::Shanghai),
            cancun_time: at(Fork::Cancun),
            prague_time: at(Fork::Prague),
            osaka_time: at(Fork::Osaka),
            amsterdam_time: at(Fork::Amsterdam),
            deposit_contract_address: Some(alloy_eips::eip6110::MAINNET_DEPOSIT_CONTRACT_ADDRESS),
            ..Default::default()
        };
        Self { inner }
    }

    /// When `fork` activates in this configuration: a block number (block forks,
    /// and Paris by `mergeNetsplitBlock`), a timestamp, or `None` if it is not scheduled
    /// by one (Paris by total difficulty only, or a fork left out).
    pub fn activation(&self, fork: Fork) -> Option<u64> {
        let c = &self.inner;
        match fork {
            Fork::Frontier => Some(0),
            Fork::Homestead => c.homestead_block,
            Fork::Dao => c.dao_fork_block,
            Fork::TangerineWhistle => c.eip150_block,
            Fork::SpuriousDragon => c.eip158_block,
            Fork::Byzantium => c.byzantium_block,
            Fork::Constantinople => c.constantinople_block,
            Fork::Petersburg => c.petersburg_block,
            Fork::Istanbul => c.istanbul_block,
            Fork::MuirGlacier => c.muir_glacier_block,
            Fork::Berlin => c.berlin_block,
            Fork::London => c.london_block,
            Fork::ArrowGlacier => c.arrow_glacier_block,
            Fork::GrayGlacier => c.gray_glacier_block,
            Fork::Paris => c.merge_netsplit_block,
            Fork::Shanghai => c.shanghai_time,
            Fork::Cancun => c.cancun_time,
            Fork::Prague => c.prague_time,
            Fork::Osaka => c.osaka_time,
            Fork::Bpo1 => c.bpo1_time,
            Fork::Bpo2 => c.bpo2_time,
            Fork::Bpo3 => c.bpo3_time,
            Fork::Bpo4 => c.bpo4_time,
            Fork::Bpo5 => c.bpo5_time,
            Fork::Amsterdam => c.amsterdam_time,
        }
    }

    /// Whether the chain was proof of stake from its genesis (a terminal total
    /// difficulty of zero).
    pub fn merged_at_genesis(&self) -> bool {
        self.inner.terminal_total_difficulty.is_some_and(|ttd| ttd.is_zero())
    }

    /// The fork whose rules apply to a block with this number and timestamp by the
    /// schedule alone: block forks by number, timestamp forks by timestamp, Paris from
    /// `mergeNetsplitBlock` (or from genesis with a zero terminal total difficulty).
    /// A proof-of-stake block of a chain that merged by total difficulty without a
    /// netsplit block is Paris only by its header: see `fork_of`.
    pub fn fork_at(&self, number: u64, timestamp: u64) -> Fork {
        for fork in Fork::ALL.into_iter().rev() {
            let active = match (fork.activation(), self.activation(fork)) {
                (Activation::Timestamp, Some(t)) => timestamp >= t,
                (Activation::TotalDifficulty, netsplit) => {
                    self.merged_at_genesis() || netsplit.is_some_and(|n| number >= n)
                }
                (Activation::Block, Some(b)) => number >= b,
                (_, None) => false,
            };
            if active {
                return fork;
            }
        }
        Fork::Frontier
    }

    /// The fork whose rules apply to the block with `header`: `fork_at`, and at least
    /// Paris for a header without difficulty on a chain with a terminal total
    /// difficulty (as geth decides a block is proof of stake; validation checks that
    /// the parent's total difficulty had reached the terminal one).
    pub fn fork_of(&self, header: &crate::Header) -> Fork {
        let fork = self.fork_at(header.number, header.timestamp);
        if fork < Fork::Paris
            && header.difficulty.is_zero()
            && self.inner.terminal_total_difficulty.is_some()
        {
            Fork::Paris
        } else {
            fork
        }
    }

    /// The fork of a proof-of-stake block with this timestamp (an Engine API payload, a
    /// block the node builds): every block fork has passed by the merge, so only the
    /// timestamp decides, and the fork is at least Paris.
    pub fn pos_fork_at(&self, timestamp: u64) -> Fork {
        self.timestamp_fork(timestamp).unwrap_or(Fork::Paris)
    }

    /// Checks the configuration the way geth does before it runs a chain: every fork
    /// key known, every required fork scheduled once the ones after it are, forks in
    /// order (block forks by number, timestamp forks by time), timestamp forks only
    /// after the merge, the merge only after London, and a consensus engine this
    /// client runs.
    pub fn validate(&self) -> Result<(), ChainConfigError> {
        let c = &self.inner;
        for key in c.extra_fields.keys() {
            let fork_like = key.ends_with("Block") || key.ends_with("Time");
            if fork_like {
                return Err(ChainConfigError::UnknownForkKey(key.clone()));
            }
        }
        if c.bogota_time.is_some() {
            // A fork after Amsterdam this client does not implement.
            return Err(ChainConfigError::UnknownForkKey("bogotaTime".into()));
        }
        if c.clique.is_some() {
            return Err(ChainConfigError::UnsupportedEngine("clique"));
        }
        if c.parlia.is_some() {
            return Err(ChainConfigError::UnsupportedEngine("parlia"));
        }
        const BLOB_FORKS: [&str; 9] =
            ["cancun", "prague", "osaka", "bpo1", "bpo2", "bpo3", "bpo4", "bpo5", "amsterdam"];
        for key in c.blob_schedule.keys() {
            if !BLOB_FORKS.iter().any(|k| k.eq_ignore_ascii_case(key)) {
                return Err(ChainConfigError::UnknownBlobScheduleKey(key.clone()));
            }
        }
        // The last required fork seen, and the last scheduled fork of the same kind
        // (block or timestamp) with its activation, walking the forks in order.
        let mut last_required: Option<Fork> = Some(Fork::Frontier);
        let mut last_block: (Fork, u64) = (Fork::Frontier, 0);
        let mut last_time: Option<(Fork, u64)> = None;
        let merge = c.terminal_total_difficulty.is_some();
        for fork in Fork::ALL.into_iter().skip(1) {
            let scheduled = match fork.activation() {
                Activation::TotalDifficulty => merge,
                _ => self.activation(fork).is_some(),
            };
            if !scheduled {
                if !fork.optional() {
                    last_required = None;
                }
                continue;
            }
            if !fork.optional() {
                if last_required.is_none() {
                    let missing = Fork::ALL
                        .into_iter()
                        .filter(|f| *f < fork && !f.optional())
                        .rev()
                        .find(|f| match f.activation() {
                            Activation::TotalDifficulty => !merge,
                            _ => self.activation(*f).is_none(),
                        })
                        .map_or("?", Fork::name);
                    return Err(ChainConfigError::MissingEarlierFork {
                        fork: fork.name(),
                        key: fork.config_key().unwrap_or("?"),
                        missing,
                    });
                }
                last_required = Some(fork);
            }
            match (fork.activation(), self.activation(fork)) {
                (Activation::Block, Some(at)) if fork != Fork::Dao => {
                    if at < last_block.1 {
                        return Err(ChainConfigError::OutOfOrder {
                            fork: fork.name(),
                            at,
                            earlier: last_block.0.name(),
                            earlier_at: last_block.1,
                        });
                    }
                    last_block = (fork, at);
                }
                (Activation::Timestamp, Some(at)) => {
                    if !merge {
                        return Err(ChainConfigError::TimestampForkBeforeMerge(fork.name()));
                    }
                    if let Some((earlier, earlier_at)) = last_time {
                        if at < earlier_at {
                            return Err(ChainConfigError::OutOfOrder {
                                fork: fork.name(),
                                at,
                                earlier: earlier.name(),
                                earlier_at,
                            });
                        }
                    }
                    last_time = Some((fork, at));
                }
                _ => {}
            }
        }
        if merge && c.london_block.is_none() {
            return Err(ChainConfigError::MergeWithoutLondon);
        }
        Ok(())
    }

    /// The newest timestamp-scheduled fork active at `timestamp`, if any.
    fn timestamp_fork(&self, timestamp: u64) -> Option<Fork> {
        Fork::ALL
            .into_iter()
            .rev()
            .take_while(|f| f.activation() == Activation::Timestamp)
            .find(|f| self.activation(*f).is_some_and(|t| timestamp >= t))
    }

    /// Blob parameters at a timestamp: the schedule entry of the newest active fork
    /// (including blob-parameter-only forks), falling back to the protocol defaults.
    pub fn blob_params_at(&self, timestamp: u64) -> Option<BlobParams> {
        let mut params = self.scheduled_blob_params(timestamp)?;
        if self.timestamp_fork(timestamp) >= Some(Fork::Osaka) {
            // EIP-7918's reserve price and EIP-7594's per-transaction cap are fork rules,
            // not schedule entries: a schedule read from JSON does not carry them.
            params.blob_base_cost = alloy_eips::eip7840::BLOB_BASE_COST;
            params.max_blobs_per_tx = params.max_blobs_per_tx.min(6);
        }
        Some(params)
    }

    /// The excess blob gas a child of `parent` with this timestamp must carry (EIP-4844
    /// with EIP-7918's reserve price), or `None` before Cancun. Validation, the block
    /// builder and fixture generation all use this one rule.
    pub fn next_excess_blob_gas(&self, parent: &crate::Header, timestamp: u64) -> Option<u64> {
        self.blob_params_at(timestamp).map(|p| {
            p.next_block_excess_blob_gas_osaka(
                parent.excess_blob_gas.unwrap_or_default(),
                parent.blob_gas_used.unwrap_or_default(),
                parent.base_fee_per_gas.unwrap_or_default(),
            )
        })
    }

    fn scheduled_blob_params(&self, timestamp: u64) -> Option<BlobParams> {
        let c = &self.inner;
        let active = |t: Option<u64>| t.is_some_and(|t| timestamp >= t);
        let schedule = |key: &str| {
            c.blob_schedule.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| *v)
        };
        // Newest first. Forks without a schedule entry fall through to an older one,
        // except the three whose defaults the protocol fixes.
        let candidates: [(&str, Option<u64>, Option<BlobParams>); 9] = [
            ("amsterdam", c.amsterdam_time, None),
            ("bpo5", c.bpo5_time, None),
            ("bpo4", c.bpo4_time, None),
            ("bpo3", c.bpo3_time, None),
            ("bpo2", c.bpo2_time, None),
            ("bpo1", c.bpo1_time, None),
            ("osaka", c.osaka_time, Some(BlobParams::osaka())),
            ("prague", c.prague_time, Some(BlobParams::prague())),
            ("cancun", c.cancun_time, Some(BlobParams::cancun())),
        ];
        for (name, time, default) in candidates {
            if !active(time) {
                continue;
            }
            if let Some(p) = schedule(name) {
                return Some(p);
            }
            if default.is_some() {
                return default;
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The execution-apis test chain's schedule (block forks every three blocks, the
    /// merge at block 36 by total difficulty, then timestamp forks every 30 seconds).
    fn test_chain() -> ChainConfig {
        let json = r#"{"chainId":3503995874084926,"homesteadBlock":0,"eip150Block":3,
            "eip155Block":6,"eip158Block":6,"byzantiumBlock":9,"constantinopleBlock":12,
            "petersburgBlock":15,"istanbulBlock":18,"muirGlacierBlock":21,"berlinBlock":24,
            "londonBlock":27,"arrowGlacierBlock":30,"grayGlacierBlock":33,
            "mergeNetsplitBlock":36,"shanghaiTime":390,"cancunTime":420,"pragueTime":450,
            "osakaTime":480,"bpo1Time":510,"bpo2Time":540,"terminalTotalDifficulty":4732352,
            "ethash":{},"blobSchedule":{"cancun":{"target":3,"max":6,"baseFeeUpdateFraction":3338477}}}"#;
        ChainConfig::new(serde_json::from_str(json).unwrap())
    }

    #[test]
    fn block_forks_go_by_number_the_merge_by_netsplit_and_later_forks_by_time() {
        let c = test_chain();
        assert_eq!(c.validate(), Ok(()));
        let at = |n, t| c.fork_at(n, t);
        assert_eq!(at(0, 0), Fork::Homestead);
        assert_eq!(at(2, 20), Fork::Homestead);
        assert_eq!(at(3, 30), Fork::TangerineWhistle);
        assert_eq!(at(8, 80), Fork::SpuriousDragon);
        assert_eq!(at(12, 120), Fork::Constantinople);
        assert_eq!(at(15, 150), Fork::Petersburg);
        assert_eq!(at(27, 270), Fork::London);
        assert_eq!(at(35, 350), Fork::GrayGlacier);
        assert_eq!(at(36, 360), Fork::Paris);
        assert_eq!(at(39, 390), Fork::Shanghai);
        assert_eq!(at(48, 480), Fork::Osaka);
        assert_eq!(at(54, 540), Fork::Bpo2);
        assert_eq!(c.pos_fork_at(365), Fork::Paris);
        assert_eq!(c.pos_fork_at(545), Fork::Bpo2);
    }

    #[test]
    fn a_header_without_difficulty_is_proof_of_stake_only_on_a_chain_that_merges() {
        let mut c = test_chain();
        c.inner.merge_netsplit_block = None;
        let pos = crate::Header { number: 35, timestamp: 350, ..Default::default() };
        assert_eq!(c.fork_of(&pos), Fork::Paris);
        let pow = crate::Header { difficulty: U256::from(1), ..pos.clone() };
        assert_eq!(c.fork_of(&pow), Fork::GrayGlacier);
        c.inner.terminal_total_difficulty = None;
        c.inner.shanghai_time = None;
        c.inner.cancun_time = None;
        c.inner.prague_time = None;
        c.inner.osaka_time = None;
        c.inner.bpo1_time = None;
        c.inner.bpo2_time = None;
        assert_eq!(c.fork_of(&pos), Fork::GrayGlacier);
    }

    #[test]
    fn unknown_missing_and_out_of_order_forks_are_refused_by_name() {
        let mut c = test_chain();
        c.inner.extra_fields.insert("bpo6Time".into(), serde_json::json!(600));
        assert_eq!(c.validate(), Err(ChainConfigError::UnknownForkKey("bpo6Time".into())));

        let mut c = test_chain();
        c.inner.byzantium_block = None;
        assert!(matches!(
            c.validate(),
            Err(ChainConfigError::MissingEarlierFork {
                fork: "Constantinople",
                missing: "Byzantium",
                ..
            })
        ));

        let mut c = test_chain();
        c.inner.london_block = Some(20);
        assert!(matches!(
            c.validate(),
            Err(ChainConfigError::OutOfOrder { fork: "London", at: 20, earlier: "Berlin", .. })
        ));

        let mut c = test_chain();
        c.inner.cancun_time = Some(380);
        assert!(matches!(c.validate(), Err(ChainConfigError::OutOfOrder { fork: "Cancun", .. })));

        let mut c = test_chain();
        c.inner.terminal_total_difficulty = None;
        assert!(matches!(
            c.validate(),
            Err(ChainConfigError::MissingEarlierFork { fork: "Shanghai", .. })
        ));

        let mut c = test_chain();
        c.inner.blob_schedule.insert("bogota".into(), BlobParams::cancun());
        assert_eq!(c.validate(), Err(ChainConfigError::UnknownBlobScheduleKey("bogota".into())));
    }
}
