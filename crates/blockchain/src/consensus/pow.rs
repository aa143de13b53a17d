//! Proof-of-work headers (ethash era): the difficulty each fork's formula requires, with
//! the difficulty bomb and its delays. The ethash seal itself (nonce and mix hash against
//! the DAG) is not verified: the chain's total difficulty and every header's formula
//! are, and history before the merge is final.

use crate::error::InvalidBlock;
use alloy_consensus::EMPTY_OMMER_ROOT_HASH;
use alloy_primitives::U256;
use ethrex_common::{ChainConfig, Fork, Header};

/// No difficulty goes below this (the genesis difficulty of mainnet).
pub const MINIMUM_DIFFICULTY: u64 = 131_072;
/// The difficulty moves by `parent / 2048` per step of the formula.
const BOUND_DIVISOR: u64 = 2048;
/// Frontier: a block within 13 seconds raises the difficulty, a later one lowers it.
const FRONTIER_DURATION_LIMIT: u64 = 13;
/// The bomb doubles every 100,000 blocks.
const EXP_DIFF_PERIOD: u64 = 100_000;

/// How far back the difficulty bomb is set for a fork, in blocks (EIP-649, EIP-1234,
/// EIP-2384, EIP-3554, EIP-4345, EIP-5133); 0 before Byzantium.
pub fn bomb_delay(fork: Fork) -> u64 {
    match fork {
        f if f >= Fork::GrayGlacier => 11_400_000,
        Fork::ArrowGlacier => 10_700_000,
        Fork::London => 9_700_000,
        Fork::MuirGlacier | Fork::Berlin => 9_000_000,
        Fork::Constantinople | Fork::Petersburg | Fork::Istanbul => 5_000_000,
        Fork::Byzantium => 3_000_000,
        _ => 0,
    }
}

/// The difficulty bomb's term for a (possibly delayed) block number: `2^(n/100000 - 2)`
/// once that exponent is positive.
fn bomb(number: u64) -> U256 {
    let period = number / EXP_DIFF_PERIOD;
    if period > 1 {
        U256::from(1) << (period - 2) as usize
    } else {
        U256::ZERO
    }
}

/// The difficulty a proof-of-work child of `parent` with `timestamp` must have under
/// `fork`'s formula: Frontier's, Homestead's (EIP-2) or Byzantium's (EIP-100, counting
/// the parent's ommers), then the bomb, delayed from Byzantium on.
pub fn expected_difficulty(fork: Fork, parent: &Header, timestamp: u64) -> U256 {
    let parent_diff = parent.difficulty;
    let step = parent_diff / U256::from(BOUND_DIVISOR);
    let elapsed = timestamp.saturating_sub(parent.timestamp);
    let number = parent.number + 1;
    let adjusted = if fork >= Fork::Byzantium {
        // y - elapsed / 9, at least -99; y is 2 when the parent has ommers.
        let y: i64 = if parent.ommers_hash == EMPTY_OMMER_ROOT_HASH { 1 } else { 2 };
        apply(parent_diff, step, (y - (elapsed / 9).min(200) as i64).max(-99))
    } else if fork >= Fork::Homestead {
        apply(parent_diff, step, (1 - (elapsed / 10).min(200) as i64).max(-99))
    } else if elapsed < FRONTIER_DURATION_LIMIT {
        parent_diff + step
    } else {
        parent_diff - step
    };
    let floor = adjusted.max(U256::from(MINIMUM_DIFFICULTY));
    // From Byzantium on the bomb counts from a number set back by the delay (geth
    // measures the delay from the parent: `parent.number - (delay - 1)`).
    let delay = bomb_delay(fork);
    let bomb_number = if delay == 0 { number } else { parent.number.saturating_sub(delay - 1) };
    floor + bomb(bomb_number)
}

/// `parent + step * factor` for a factor in -99..=2 (saturating at zero, which the
/// minimum then lifts).
fn apply(parent: U256, step: U256, factor: i64) -> U256 {
    let change = step * U256::from(factor.unsigned_abs());
    if factor >= 0 {
        parent + change
    } else {
        parent.saturating_sub(change)
    }
}

/// The header's difficulty against the formula of the fork its number falls in.
pub fn check_difficulty(
    config: &ChainConfig,
    header: &Header,
    parent: &Header,
) -> Result<(), InvalidBlock> {
    // A proof-of-work block's rules come from its number; a netsplit or timestamp fork
    // would make it a proof-of-stake block, which the merge rule has already refused.
    let fork = config.fork_at(header.number, header.timestamp).min(Fork::GrayGlacier);
    let expected = expected_difficulty(fork, parent, header.timestamp);
    if header.difficulty != expected {
        return Err(InvalidBlock::InvalidDifficulty {
            fork: fork.name(),
            expected,
            got: header.difficulty,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent(number: u64, timestamp: u64, difficulty: u64, ommers: bool) -> Header {
        Header {
            number,
            timestamp,
            difficulty: U256::from(difficulty),
            ommers_hash: if ommers {
                alloy_primitives::B256::repeat_byte(1)
            } else {
                EMPTY_OMMER_ROOT_HASH
            },
            ..Default::default()
        }
    }

    #[test]
    fn frontier_raises_within_thirteen_seconds_and_lowers_after() {
        let p = parent(10, 1000, 1_000_000, false);
        assert_eq!(expected_difficulty(Fork::Frontier, &p, 1012), U256::from(1_000_000 + 488));
        assert_eq!(expected_difficulty(Fork::Frontier, &p, 1013), U256::from(1_000_000 - 488));
    }

    #[test]
    fn homestead_steps_by_ten_second_buckets_down_to_minus_99() {
        let p = parent(10, 1000, 1_000_000, false);
        assert_eq!(expected_difficulty(Fork::Homestead, &p, 1009), U256::from(1_000_000 + 488));
        assert_eq!(expected_difficulty(Fork::Homestead, &p, 1010), U256::from(1_000_000));
        assert_eq!(expected_difficulty(Fork::Homestead, &p, 1035), U256::from(1_000_000 - 2 * 488));
        let floor = expected_difficulty(Fork::Homestead, &p, 1_000_000);
        assert_eq!(floor, U256::from(1_000_000 - 99 * 488));
    }

    #[test]
    fn byzantium_counts_the_parents_ommers_and_never_goes_under_the_minimum() {
        let p = parent(10, 1000, 1_000_000, true);
        assert_eq!(expected_difficulty(Fork::Byzantium, &p, 1009), U256::from(1_000_000 + 488));
        let q = parent(10, 1000, MINIMUM_DIFFICULTY, false);
        assert_eq!(expected_difficulty(Fork::Byzantium, &q, 2000), U256::from(MINIMUM_DIFFICULTY));
    }

    #[test]
    fn the_bomb_doubles_every_period_and_each_delay_sets_it_back() {
        // Frontier at block 300,000: period 3, bomb 2^1.
        let p = parent(299_999, 1000, 1_000_000, false);
        assert_eq!(expected_difficulty(Fork::Frontier, &p, 1020), U256::from(1_000_000 - 488 + 2));
        // Byzantium at 4,370,000 (mainnet): 4,369,999 - 2,999,999 = 1,370,000, period 13
        // (8 seconds after the parent: one step up).
        let p = parent(4_369_999, 1000, 1_000_000, false);
        let bomb = 1u64 << 11;
        assert_eq!(
            expected_difficulty(Fork::Byzantium, &p, 1008),
            U256::from(1_000_000 + 488 + bomb)
        );
        // Gray Glacier's 11.4M delay: at 15,000,001 the bomb counts 3,600,001, period 36.
        let p = parent(15_000_000, 1000, 1_000_000, false);
        assert_eq!(
            expected_difficulty(Fork::GrayGlacier, &p, 1008),
            U256::from(1_000_000u64 + 488 + (1u64 << 34))
        );
    }
}
