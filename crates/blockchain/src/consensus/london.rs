//! EIP-1559 at and after London: the base fee each block must carry (the initial one at
//! the fork block) and the gas limit bound, which at the fork block measures against
//! twice the parent's limit (the elasticity multiplier turns the old limit into the
//! new target). Before London: no base fee, and the limit moves by under 1/1024.

use crate::error::InvalidBlock;
use alloy_eips::eip1559::{BaseFeeParams, INITIAL_BASE_FEE};
use ethrex_common::{ChainConfig, Header};

const GAS_LIMIT_BOUND_DIVISOR: u64 = 1024;
const MIN_GAS_LIMIT: u64 = 5000;
/// geth's cap on any gas limit (2^63 - 1).
const MAX_GAS_LIMIT: u64 = i64::MAX as u64;
/// EIP-1559's elasticity multiplier.
const ELASTICITY_MULTIPLIER: u64 = 2;

/// Whether London's rules apply to a block with this number (it is scheduled by number
/// on every chain; a proof-of-stake chain has it from genesis or earlier).
pub fn is_london(config: &ChainConfig, number: u64) -> bool {
    config.inner.london_block.is_some_and(|b| number >= b)
}

/// The gas limit against the parent's: it moves by less than 1/1024 of the parent's
/// limit and stays at least 5000. At London's fork block the parent's limit counts
/// twice.
pub fn check_gas_limit(
    config: &ChainConfig,
    header: &Header,
    parent: &Header,
) -> Result<(), InvalidBlock> {
    let parent_limit = if is_london(config, header.number) && !is_london(config, parent.number) {
        parent.gas_limit.saturating_mul(ELASTICITY_MULTIPLIER)
    } else {
        parent.gas_limit
    };
    let bound = parent_limit / GAS_LIMIT_BOUND_DIVISOR;
    if header.gas_limit.abs_diff(parent_limit) >= bound
        || header.gas_limit < MIN_GAS_LIMIT
        || header.gas_limit > MAX_GAS_LIMIT
    {
        return Err(InvalidBlock::InvalidGasLimit { parent: parent_limit, got: header.gas_limit });
    }
    Ok(())
}

/// The gas limit a builder gives a child of a block with `parent_limit`, moving toward
/// `target` by the largest step `check_gas_limit` allows (1/1024 of the parent's, less
/// one), never below 5000. Post-London parents only (proof-of-stake building).
pub fn gas_limit_toward(parent_limit: u64, target: u64) -> u64 {
    let step = (parent_limit / GAS_LIMIT_BOUND_DIVISOR).saturating_sub(1);
    let target = target.max(MIN_GAS_LIMIT);
    if parent_limit < target {
        parent_limit.saturating_add(step).min(target)
    } else {
        parent_limit.saturating_sub(step).max(target)
    }
}

/// The base fee a child of `parent` with `number` must carry: none before London, 1 gwei
/// at its fork block, then EIP-1559's update from the parent's gas used against its
/// target. Fails only if a London parent has no base fee.
pub fn expected_base_fee(
    config: &ChainConfig,
    number: u64,
    parent: &Header,
) -> Result<Option<u64>, InvalidBlock> {
    if !is_london(config, number) {
        return Ok(None);
    }
    if !is_london(config, parent.number) {
        return Ok(Some(INITIAL_BASE_FEE));
    }
    parent
        .next_block_base_fee(BaseFeeParams::ethereum())
        .map(Some)
        .ok_or(InvalidBlock::HeaderFieldMismatch("parent baseFeePerGas"))
}

/// The header's base fee against `expected_base_fee`.
pub fn check_base_fee(
    config: &ChainConfig,
    header: &Header,
    parent: &Header,
) -> Result<(), InvalidBlock> {
    match expected_base_fee(config, header.number, parent)? {
        None if header.base_fee_per_gas.is_some() => {
            Err(InvalidBlock::HeaderFieldMismatch("baseFeePerGas before London"))
        }
        None => Ok(()),
        Some(expected) if header.base_fee_per_gas != Some(expected) => {
            Err(InvalidBlock::InvalidBaseFee { expected, got: header.base_fee_per_gas })
        }
        Some(_) => Ok(()),
    }
}

/// The base fee of the genesis block: the genesis file's, or 1 gwei when London is
/// active at block 0 and the file names none; none before London.
pub fn genesis_base_fee(config: &ChainConfig, number: u64, given: Option<u128>) -> Option<u64> {
    is_london(config, number).then(|| given.map(|f| f as u64).unwrap_or(INITIAL_BASE_FEE))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ethrex_common::Fork;

    fn passes(config: &ChainConfig, parent_limit: u64, limit: u64) -> bool {
        let parent = Header { number: 5, gas_limit: parent_limit, ..Default::default() };
        let child = Header { number: 6, gas_limit: limit, ..Default::default() };
        check_gas_limit(config, &child, &parent).is_ok()
    }

    #[test]
    fn a_builder_moves_the_gas_limit_toward_its_target_by_the_largest_step_validation_allows() {
        let config = ChainConfig::all_forks_at_genesis(1, Fork::Amsterdam);
        for (start, target) in [(30_000_000u64, 60_000_000u64), (100_000_000, 60_000_000)] {
            let mut limit = start;
            let mut steps = 0;
            while limit != target {
                let next = gas_limit_toward(limit, target);
                assert!(passes(&config, limit, next), "{limit} -> {next}");
                // One more gas in the same direction would be invalid (or past the target).
                let further = if target > limit { next + 1 } else { next - 1 };
                assert!(!passes(&config, limit, further) || next == target, "{limit} -> {further}");
                limit = next;
                steps += 1;
                assert!(steps < 2_000, "no convergence from {start} to {target}");
            }
            assert_eq!(gas_limit_toward(limit, target), target, "stays at the target");
        }
        assert_eq!(gas_limit_toward(5_002, 0), 5_000, "never below the minimum");
    }
}
