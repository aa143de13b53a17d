//! How big each design is: per block in bytes, split by what the bytes carry, and the
//! distribution over a chain.

use crate::model::DesignBal;
use alloy_rlp::Encodable;

/// One block's design BAL, by what its bytes carry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SizeSplit {
    /// The whole RLP encoding.
    pub total: usize,
    /// Addresses (with their RLP headers).
    pub accounts: usize,
    /// Slot keys.
    pub slots: usize,
    /// Code carried (code changes; Type 6's in-block code).
    pub code: usize,
    /// Everything else: values, indices and list headers.
    pub values: usize,
}

impl DesignBal {
    /// The encoded size and its split.
    pub fn size_split(&self) -> SizeSplit {
        let total = self.encode().len();
        let accounts = self.accounts.iter().map(|a| a.address.length()).sum();
        let slots = self.accounts.iter().flat_map(|a| &a.slots).map(|s| s.slot.length()).sum();
        let code = self
            .accounts
            .iter()
            .map(|a| {
                a.code_changes.iter().map(|c| c.new_code.length()).sum::<usize>()
                    + a.pre_tx.iter().map(|e| e.code.length()).sum::<usize>()
            })
            .sum();
        SizeSplit { total, accounts, slots, code, values: total - accounts - slots - code }
    }
}

/// The distribution of per-block sizes over a chain.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SizeStats {
    /// How many blocks.
    pub blocks: usize,
    /// Mean bytes per block.
    pub mean: f64,
    /// Median bytes per block.
    pub median: f64,
    /// 90th percentile (nearest rank).
    pub p90: f64,
    /// The largest block's.
    pub max: f64,
}

impl SizeStats {
    /// The statistics of `sizes` (zeros for an empty list).
    pub fn of(sizes: &[usize]) -> Self {
        if sizes.is_empty() {
            return Self::default();
        }
        let mut sorted = sizes.to_vec();
        sorted.sort_unstable();
        let n = sorted.len();
        let median = if n % 2 == 1 {
            sorted[n / 2] as f64
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) as f64 / 2.0
        };
        let p90 = sorted[((n as f64 * 0.9).ceil() as usize).clamp(1, n) - 1] as f64;
        Self {
            blocks: n,
            mean: sorted.iter().sum::<usize>() as f64 / n as f64,
            median,
            p90,
            max: sorted[n - 1] as f64,
        }
    }
}
