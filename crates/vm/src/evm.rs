//! The one place an EVM is built. Given the chain configuration and a block's header,
//! `EvmConfig` holds what every EVM of that block shares (fork rules, block environment,
//! chain settings); given a database, it builds the EVM. The pre-block system calls,
//! the transactions of both executors and the post-block stage all get theirs here.

use crate::env::{block_env, cfg_env};
use ethrex_common::{ChainConfig, Fork, Header};
use revm::context::{BlockEnv, CfgEnv};
use revm::handler::{MainnetContext, MainnetEvm};
use revm::{Context, Database, MainBuilder, MainContext};

/// The EVM of one block, over the database `DB`.
pub(crate) type BlockEvm<DB> = MainnetEvm<MainnetContext<DB>>;

/// How to build the EVMs of one block: computed once from the chain configuration and
/// the header, then shared by every stage and every worker.
#[derive(Debug, Clone)]
pub(crate) struct EvmConfig {
    block: BlockEnv,
    cfg: CfgEnv,
    fork: Fork,
}

impl EvmConfig {
    /// The configuration for the block with this header.
    pub(crate) fn new(config: &ChainConfig, header: &Header) -> Self {
        let fork = config.fork_of(header);
        Self { block: block_env(config, header, fork), cfg: cfg_env(config, header, fork), fork }
    }

    /// A configuration from environments already made (a call's: its checks relaxed).
    pub(crate) fn from_parts(block: BlockEnv, cfg: CfgEnv, fork: Fork) -> Self {
        Self { block, cfg, fork }
    }

    /// The fork whose rules the block follows.
    pub(crate) fn fork(&self) -> Fork {
        self.fork
    }

    /// An EVM for this block that reads and writes `db`.
    pub(crate) fn evm<DB: Database>(&self, db: DB) -> BlockEvm<DB> {
        self.context(db).build_mainnet()
    }

    /// The context an EVM for this block is built from (to add an inspector).
    pub(crate) fn context<DB: Database>(&self, db: DB) -> MainnetContext<DB> {
        Context::mainnet().with_block(self.block.clone()).with_cfg(self.cfg.clone()).with_db(db)
    }
}
