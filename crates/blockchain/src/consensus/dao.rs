//! The DAO fork's header rule (EIP-779): on a chain that supports the fork, its block
//! and the nine after it carry the extra data `dao-hard-fork`, so that nodes on either
//! side of the split tell each other apart. The state change itself is execution's
//! (`ethrex_vm::proof_of_work`).

use crate::error::InvalidBlock;
use ethrex_common::{ChainConfig, Header};

/// The extra data the fork's blocks carry.
pub const DAO_EXTRA_DATA: &[u8] = b"dao-hard-fork";
/// How many blocks from the fork block on carry it.
pub const DAO_EXTRA_RANGE: u64 = 10;

/// The extra-data rule for a block of a chain that supports the DAO fork.
pub fn check_dao_extra_data(config: &ChainConfig, header: &Header) -> Result<(), InvalidBlock> {
    let (Some(fork), true) = (config.inner.dao_fork_block, config.inner.dao_fork_support) else {
        return Ok(());
    };
    let within = header.number >= fork && header.number < fork + DAO_EXTRA_RANGE;
    if within && header.extra_data.as_ref() != DAO_EXTRA_DATA {
        return Err(InvalidBlock::DaoExtraData { number: header.number });
    }
    Ok(())
}
