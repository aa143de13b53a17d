//! Fees: the next block's base fees, a suggested tip, and `eth_feeHistory`.
//!
//! The suggested tip follows geth's oracle: the 60th percentile of the effective tips
//! paid in the last 20 blocks (each block's three cheapest non-zero tips, so that one
//! large block does not outweigh the others), at least 1 wei.

use crate::error::{EthApiError, EthResult};
use crate::handler::EthRpc;
use alloy_consensus::Transaction as _;
use alloy_eips::BlockNumberOrTag;
use alloy_primitives::U256;
use ethrex_common::{Block, Header};
use jsonrpsee::proc_macros::rpc;
use serde_json::{json, Value};

/// How many blocks `eth_feeHistory` covers at most (geth's limit).
const MAX_FEE_HISTORY_BLOCKS: u64 = 1024;
/// How many recent blocks the suggested tip looks at.
const TIP_BLOCKS: u64 = 20;
/// Which percentile of their tips it takes.
const TIP_PERCENTILE: usize = 60;
/// How many of each block's cheapest tips are sampled.
const TIPS_PER_BLOCK: usize = 3;

/// The `eth_` fee methods.
#[rpc(server, namespace = "eth")]
pub trait EthFeesApi {
    /// `eth_baseFee`: the base fee of the block after the head.
    #[method(name = "baseFee", blocking)]
    fn base_fee(&self) -> EthResult<U256>;

    /// `eth_blobBaseFee`: the blob base fee of the block after the head.
    #[method(name = "blobBaseFee", blocking)]
    fn blob_base_fee(&self) -> EthResult<U256>;

    /// `eth_maxPriorityFeePerGas`: a tip likely to get a transaction in.
    #[method(name = "maxPriorityFeePerGas", blocking)]
    fn max_priority_fee_per_gas(&self) -> EthResult<U256>;

    /// `eth_gasPrice`: the suggested tip plus the next base fee.
    #[method(name = "gasPrice", blocking)]
    fn gas_price(&self) -> EthResult<U256>;

    /// `eth_feeHistory`: base fees, gas use and tip percentiles of `block_count` blocks
    /// up to `newest`.
    #[method(name = "feeHistory", blocking)]
    fn fee_history(
        &self,
        block_count: alloy_primitives::U64,
        newest: BlockNumberOrTag,
        reward_percentiles: Option<Vec<f64>>,
    ) -> EthResult<Value>;
}

impl EthRpc {
    fn canonical_block(&self, number: u64) -> EthResult<Option<Block>> {
        let store = &self.node().chain.store;
        let Some(hash) = store.canonical_hash(number)? else { return Ok(None) };
        Ok(store.block(&hash)?)
    }

    fn suggested_tip(&self) -> EthResult<u128> {
        let Some(head) = self.node().chain.store.head_header()? else { return Ok(1) };
        let mut tips = Vec::new();
        for number in head.number.saturating_sub(TIP_BLOCKS - 1)..=head.number {
            let Some(block) = self.canonical_block(number)? else { continue };
            let base = block.header.base_fee_per_gas;
            let mut block_tips: Vec<u128> = block
                .body
                .transactions
                .iter()
                .filter_map(|tx| tx.effective_tip_per_gas(base.unwrap_or_default()))
                .filter(|tip| *tip > 0)
                .collect();
            block_tips.sort_unstable();
            tips.extend(block_tips.into_iter().take(TIPS_PER_BLOCK));
        }
        if tips.is_empty() {
            return Ok(1);
        }
        tips.sort_unstable();
        Ok(tips[(tips.len() - 1) * TIP_PERCENTILE / 100].max(1))
    }

    /// The base fee and blob base fee of the block after `header`.
    fn next_fees(&self, header: &Header) -> (u64, u128) {
        let config = &self.node().chain.config;
        let base = header
            .next_block_base_fee(alloy_eips::eip1559::BaseFeeParams::ethereum())
            .unwrap_or_default();
        let time = header.timestamp + 1;
        let blob = config
            .blob_params_at(time)
            .zip(config.next_excess_blob_gas(header, time))
            .map_or(0, |(p, excess)| p.calc_blob_fee(excess));
        (base, blob)
    }
}

/// The tips at `percentiles` of `block`'s transactions, weighted by the gas each used
/// (`gas_used` per transaction, in block order), as geth computes them.
fn rewards(block: &Block, gas_used: &[u64], percentiles: &[f64]) -> Vec<Value> {
    let base = block.header.base_fee_per_gas.unwrap_or_default();
    let mut sorted: Vec<(u128, u64)> = block
        .body
        .transactions
        .iter()
        .zip(gas_used)
        .map(|(tx, gas)| (tx.effective_tip_per_gas(base).unwrap_or_default(), *gas))
        .collect();
    if sorted.is_empty() {
        return percentiles.iter().map(|_| json!("0x0")).collect();
    }
    sorted.sort_unstable_by_key(|(tip, _)| *tip);
    let total = block.header.gas_used as f64;
    let mut index = 0;
    let mut sum = sorted[0].1 as f64;
    percentiles
        .iter()
        .map(|p| {
            let threshold = total * p / 100.0;
            while sum < threshold && index < sorted.len() - 1 {
                index += 1;
                sum += sorted[index].1 as f64;
            }
            json!(format!("{:#x}", sorted[index].0))
        })
        .collect()
}

/// A ratio as geth writes it: a whole number without a fraction (`0`, `1`).
fn go_float(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

impl EthFeesApiServer for EthRpc {
    fn base_fee(&self) -> EthResult<U256> {
        let head = self.node().chain.store.head_header()?.ok_or(EthApiError::HeaderNotFound)?;
        Ok(U256::from(self.next_fees(&head).0))
    }

    fn blob_base_fee(&self) -> EthResult<U256> {
        let head = self.node().chain.store.head_header()?.ok_or(EthApiError::HeaderNotFound)?;
        Ok(U256::from(self.next_fees(&head).1))
    }

    fn max_priority_fee_per_gas(&self) -> EthResult<U256> {
        Ok(U256::from(self.suggested_tip()?))
    }

    fn gas_price(&self) -> EthResult<U256> {
        let head = self.node().chain.store.head_header()?.ok_or(EthApiError::HeaderNotFound)?;
        Ok(U256::from(self.suggested_tip()?)
            + U256::from(head.base_fee_per_gas.unwrap_or_default()))
    }

    fn fee_history(
        &self,
        block_count: alloy_primitives::U64,
        newest: BlockNumberOrTag,
        reward_percentiles: Option<Vec<f64>>,
    ) -> EthResult<Value> {
        let percentiles = reward_percentiles.unwrap_or_default();
        let mut last = -1.0;
        for p in &percentiles {
            if !(0.0..=100.0).contains(p) || *p < last {
                return Err(EthApiError::InvalidParams(format!(
                    "invalid reward percentile: {p} (must be within 0..100 and increasing)"
                )));
            }
            last = *p;
        }
        let count = block_count.to::<u64>().min(MAX_FEE_HISTORY_BLOCKS);
        let newest_hash = self.resolve_tag(newest)?.ok_or(EthApiError::HeaderNotFound)?;
        let store = &self.node().chain.store;
        let newest = store.block_number(&newest_hash)?.ok_or(EthApiError::HeaderNotFound)?;
        let count = count.min(newest + 1);
        let oldest = newest + 1 - count;
        let (mut base_fees, mut blob_fees, mut ratios, mut blob_ratios, mut reward) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let config = &self.node().chain.config;
        let mut last_header = None;
        for number in oldest..=newest {
            let block = self.canonical_block(number)?.ok_or(EthApiError::HeaderNotFound)?;
            let h = &block.header;
            base_fees.push(json!(format!("{:#x}", h.base_fee_per_gas.unwrap_or_default())));
            let params = config.blob_params_at(h.timestamp);
            let blob_fee =
                params.zip(h.excess_blob_gas).map_or(0, |(p, excess)| p.calc_blob_fee(excess));
            blob_fees.push(json!(format!("{blob_fee:#x}")));
            ratios.push(go_float(h.gas_used as f64 / h.gas_limit.max(1) as f64));
            let max_blob_gas = params.map_or(0, |p| p.max_blob_gas_per_block());
            blob_ratios.push(go_float(if max_blob_gas == 0 {
                0.0
            } else {
                h.blob_gas_used.unwrap_or_default() as f64 / max_blob_gas as f64
            }));
            if !percentiles.is_empty() {
                let receipts = store.receipts(&h.hash_slow())?.unwrap_or_default();
                let mut previous = 0;
                let gas: Vec<u64> = receipts
                    .iter()
                    .map(|r| {
                        let c = alloy_consensus::TxReceipt::cumulative_gas_used(r);
                        let used = c.saturating_sub(previous);
                        previous = c;
                        used
                    })
                    .collect();
                reward.push(Value::Array(rewards(&block, &gas, &percentiles)));
            }
            last_header = Some(block.header);
        }
        if let Some(h) = &last_header {
            let (base, blob) = self.next_fees(h);
            base_fees.push(json!(format!("{base:#x}")));
            blob_fees.push(json!(format!("{blob:#x}")));
        }
        let mut out = serde_json::Map::new();
        out.insert("oldestBlock".into(), json!(format!("{oldest:#x}")));
        if !percentiles.is_empty() {
            out.insert("reward".into(), Value::Array(reward));
        }
        out.insert("baseFeePerGas".into(), Value::Array(base_fees));
        out.insert("gasUsedRatio".into(), Value::Array(ratios));
        out.insert("baseFeePerBlobGas".into(), Value::Array(blob_fees));
        out.insert("blobGasUsedRatio".into(), Value::Array(blob_ratios));
        Ok(Value::Object(out))
    }
}
