//! The overrides a request may bring, parsed as geth parses them: block overrides with
//! geth's keys (unknown ones refused) for `eth_call`, `eth_estimateGas`,
//! `debug_traceCall` and `eth_simulateV1`; state overrides are alloy's type (it refuses
//! unknown keys itself).

use crate::error::{EthApiError, EthResult};
use alloy_primitives::{Address, B256, U256, U64};
use ethrex_common::Withdrawal;
use ethrex_vm::simulate::BlockOverrides;
use serde::Deserialize;

/// A block's overrides, with geth's keys (unknown ones refused).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct BlockOverridesJson {
    pub(crate) number: Option<U256>,
    pub(crate) difficulty: Option<U256>,
    pub(crate) time: Option<U64>,
    pub(crate) gas_limit: Option<U64>,
    pub(crate) fee_recipient: Option<Address>,
    pub(crate) prev_randao: Option<B256>,
    pub(crate) base_fee_per_gas: Option<U256>,
    pub(crate) blob_base_fee: Option<U256>,
    pub(crate) beacon_root: Option<B256>,
    pub(crate) withdrawals: Option<Vec<Withdrawal>>,
}

fn too_large(what: &str) -> EthApiError {
    EthApiError::InvalidParams(format!("{what} does not fit in 64 bits"))
}

/// The overrides as the VM takes them (numbers that must fit checked).
pub(crate) fn overrides(json: Option<BlockOverridesJson>) -> EthResult<BlockOverrides> {
    let Some(o) = json else { return Ok(BlockOverrides::default()) };
    let u64_of = |v: Option<U256>, what: &str| {
        v.map(|v| u64::try_from(v).map_err(|_| too_large(what))).transpose()
    };
    Ok(BlockOverrides {
        number: u64_of(o.number, "block number")?,
        difficulty: o.difficulty,
        time: o.time.map(|t| t.to()),
        gas_limit: o.gas_limit.map(|g| g.to()),
        fee_recipient: o.fee_recipient,
        prev_randao: o.prev_randao,
        base_fee: u64_of(o.base_fee_per_gas, "base fee")?,
        blob_base_fee: o
            .blob_base_fee
            .map(|f| u128::try_from(f).map_err(|_| too_large("blob base fee")))
            .transpose()?,
        beacon_root: o.beacon_root,
        withdrawals: o.withdrawals,
    })
}
