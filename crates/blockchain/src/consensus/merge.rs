//! The merge by total difficulty (EIP-3675): a block whose parent's total difficulty
//! reached the chain's terminal total difficulty must be a proof-of-stake block (no
//! difficulty), and a block before that must be a proof-of-work one. Every stored block
//! carries its total difficulty (the parent's plus its own) for this check.

use crate::error::InvalidBlock;
use alloy_primitives::U256;
use ethrex_common::{ChainConfig, Header};

/// Whether a child of `parent` (with total difficulty `parent_td`) comes after the
/// merge: the chain has a terminal total difficulty and the parent reached it, or the
/// parent is itself a proof-of-stake block.
pub fn after_merge(config: &ChainConfig, parent: &Header, parent_td: U256) -> bool {
    let Some(terminal) = config.inner.terminal_total_difficulty else { return false };
    parent_td >= terminal || (parent.difficulty.is_zero() && parent.number > 0)
}

/// The header's kind against the merge: proof of stake exactly after it.
pub fn check_merge(
    config: &ChainConfig,
    header: &Header,
    parent: &Header,
    parent_td: U256,
) -> Result<(), InvalidBlock> {
    let terminal = config.inner.terminal_total_difficulty;
    let merged = after_merge(config, parent, parent_td);
    match (header.difficulty.is_zero(), merged) {
        (true, false) => Err(InvalidBlock::PosBlockBeforeMerge { parent_td, terminal }),
        (false, true) => Err(InvalidBlock::PowBlockAfterMerge {
            parent_td,
            terminal: terminal.unwrap_or_default(),
        }),
        _ => Ok(()),
    }
}
