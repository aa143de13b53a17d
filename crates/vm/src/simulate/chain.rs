//! The shape of the simulated chain before anything runs: each block's number and
//! timestamp (strictly increasing; missing ones the previous plus one and plus 12; a gap
//! in numbers filled with empty blocks) and its preliminary header (what the overrides
//! and the previous block give; execution fills in the rest).

use super::{BlockOverrides, SimBlockInput, SimulateError, MAX_BLOCKS};
use alloy_consensus::constants::{EMPTY_OMMER_ROOT_HASH, EMPTY_ROOT_HASH};
use alloy_primitives::{B256, U256};
use ethrex_common::{ChainConfig, Fork, Header};

/// The default distance between two blocks' timestamps.
const TIMESTAMP_INCREMENT: u64 = 12;

/// The blocks with their numbers and timestamps set, gaps filled.
///
/// # Errors
/// Numbers or timestamps out of order, or more than [`MAX_BLOCKS`] after the base.
pub(super) fn sanitize(
    base: &Header,
    blocks: Vec<SimBlockInput>,
) -> Result<Vec<SimBlockInput>, SimulateError> {
    let mut out = Vec::with_capacity(blocks.len());
    let mut previous_number = base.number;
    let mut previous_time = base.timestamp;
    for mut block in blocks {
        let number = *block.overrides.number.get_or_insert(previous_number + 1);
        if number <= previous_number {
            return Err(SimulateError::BlockNumberOrder { number, previous: previous_number });
        }
        if number - base.number > MAX_BLOCKS {
            return Err(SimulateError::LimitExceeded("too many blocks".into()));
        }
        for gap in previous_number + 1..number {
            previous_time += TIMESTAMP_INCREMENT;
            let overrides = BlockOverrides {
                number: Some(gap),
                time: Some(previous_time),
                ..BlockOverrides::default()
            };
            out.push(SimBlockInput { overrides, ..SimBlockInput::default() });
        }
        previous_number = number;
        let time = *block.overrides.time.get_or_insert(previous_time + TIMESTAMP_INCREMENT);
        if time <= previous_time {
            return Err(SimulateError::TimestampOrder { time, previous: previous_time });
        }
        previous_time = time;
        out.push(block);
    }
    Ok(out)
}

/// Each block's header before execution: number, timestamp, difficulty (the previous
/// block's before the merge, zero after), fee recipient and gas limit (the previous
/// block's unless overridden), PREVRANDAO, base fee and beacon root as overridden, the
/// empty roots of a block without transactions.
///
/// # Errors
/// A difficulty override after the merge.
pub(super) fn preliminary_headers(
    config: &ChainConfig,
    base: &Header,
    blocks: &[SimBlockInput],
) -> Result<Vec<Header>, SimulateError> {
    let mut previous = base.clone();
    let mut out = Vec::with_capacity(blocks.len());
    for block in blocks {
        let o = &block.overrides;
        let number = o.number.unwrap_or(previous.number + 1);
        let timestamp = o.time.unwrap_or(previous.timestamp + TIMESTAMP_INCREMENT);
        let scheduled = config.fork_at(number, timestamp);
        let post_merge = scheduled >= Fork::Paris;
        let mut difficulty = if post_merge { U256::ZERO } else { previous.difficulty };
        if let Some(asked) = o.difficulty {
            if difficulty.is_zero() {
                return Err(SimulateError::InvalidParams(format!(
                    "block {number}: difficulty override is not allowed after the merge"
                )));
            }
            difficulty = asked;
        }
        let header = Header {
            parent_hash: B256::ZERO,
            ommers_hash: EMPTY_OMMER_ROOT_HASH,
            beneficiary: o.fee_recipient.unwrap_or(previous.beneficiary),
            transactions_root: EMPTY_ROOT_HASH,
            receipts_root: EMPTY_ROOT_HASH,
            difficulty,
            number,
            gas_limit: o.gas_limit.unwrap_or(previous.gas_limit),
            timestamp,
            mix_hash: o.prev_randao.unwrap_or_default(),
            base_fee_per_gas: o.base_fee,
            withdrawals_root: (scheduled >= Fork::Shanghai).then_some(EMPTY_ROOT_HASH),
            parent_beacon_block_root: (scheduled >= Fork::Cancun)
                .then(|| o.beacon_root.unwrap_or_default()),
            slot_number: previous.slot_number.map(|slot| slot + 1),
            ..Header::default()
        };
        previous = header.clone();
        out.push(header);
    }
    Ok(out)
}
