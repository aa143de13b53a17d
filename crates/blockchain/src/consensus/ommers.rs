//! Ommers (uncles) of proof-of-work blocks: at most two, each a valid header whose
//! parent is one of the block's last seven ancestors (not its own parent), neither an
//! ancestor nor included before by the block or its last six ancestors. Proof-of-stake
//! blocks have none.

use crate::error::{BlockError, InvalidBlock, OmmerError};
use alloy_primitives::B256;
use ethrex_common::{Block, ChainConfig, Header};
use std::collections::{HashMap, HashSet};

/// The most ommers a block may include.
pub const MAX_OMMERS: usize = 2;
/// How many ancestors back an ommer's parent may be.
const OMMER_GENERATIONS: u64 = 7;

/// What the ommer check reads of the chain below the block.
pub trait Ancestry {
    /// The header stored under `hash`.
    fn header(&self, hash: &B256) -> Result<Option<Header>, BlockError>;
    /// The ommers of the stored block `hash`.
    fn ommers(&self, hash: &B256) -> Result<Vec<Header>, BlockError>;
}

/// Checks the ommers of `block` (hash `hash`), each header through `check_header`
/// against its parent.
pub fn check_ommers(
    config: &ChainConfig,
    block: &Block,
    hash: B256,
    chain: &dyn Ancestry,
    check_header: impl Fn(&ChainConfig, &Header, &Header) -> Result<(), InvalidBlock>,
) -> Result<(), BlockError> {
    let ommers = &block.body.ommers;
    if ommers.is_empty() {
        return Ok(());
    }
    if ommers.len() > MAX_OMMERS {
        return Err(InvalidBlock::from(OmmerError::TooMany(ommers.len())).into());
    }
    let mut included: HashSet<B256> = HashSet::new();
    let mut ancestors: HashMap<B256, Header> = HashMap::new();
    let mut cursor = block.header.parent_hash;
    for _ in 0..OMMER_GENERATIONS {
        let Some(ancestor) = chain.header(&cursor)? else { break };
        if ancestor.ommers_hash != alloy_consensus::EMPTY_OMMER_ROOT_HASH {
            included.extend(chain.ommers(&cursor)?.iter().map(Header::hash_slow));
        }
        let parent = ancestor.parent_hash;
        let at_genesis = ancestor.number == 0;
        ancestors.insert(cursor, ancestor);
        if at_genesis {
            break;
        }
        cursor = parent;
    }
    ancestors.insert(hash, block.header.clone());
    included.insert(hash);
    for ommer in ommers {
        let ommer_hash = ommer.hash_slow();
        if !included.insert(ommer_hash) {
            return Err(InvalidBlock::from(OmmerError::Duplicate(ommer_hash)).into());
        }
        if ancestors.contains_key(&ommer_hash) {
            return Err(InvalidBlock::from(OmmerError::IsAncestor(ommer_hash)).into());
        }
        let parent = match ancestors.get(&ommer.parent_hash) {
            Some(p) if ommer.parent_hash != block.header.parent_hash => p,
            _ => return Err(InvalidBlock::from(OmmerError::Dangling(ommer_hash)).into()),
        };
        check_header(config, ommer, parent).map_err(|reason| {
            InvalidBlock::from(OmmerError::InvalidHeader {
                hash: ommer_hash,
                reason: Box::new(reason),
            })
        })?;
    }
    Ok(())
}
