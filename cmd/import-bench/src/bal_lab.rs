//! `ethrex bal-lab sizes`: how big each BAL design is on a chain, per block and split by
//! what its bytes carry, beside the published figures.
//!
//! Every block's designs are derived by executing the chain (each block on its parent's
//! state, on a copy of the genesis database), so any chain the client can import serves:
//! the stress fixture, a chain exported by `ethrex export` with its genesis, or the
//! valid chains of EF `blockchain_test` fixtures (`ethrex bal-lab sizes --ef`).

use crate::bench::{derive_chain_designs, BenchOptions, Databases, LoadedFixture};
use alloy_primitives::Address;
use anyhow::Context;
use ethrex_bal::{BalDesign, DesignBal, SizeSplit, SizeStats};
use serde::Serialize;
use std::collections::BTreeMap;

/// The published per-block RLP sizes (2,000 mainnet blocks), in bytes, by design.
pub const PUBLISHED_BYTES: [(BalDesign, f64); 3] = [
    (BalDesign::Full, 213_000.0),
    (BalDesign::Type2, 110_000.0),
    (BalDesign::ParallelIo, 71_000.0),
];

/// One design's sizes over the chain.
#[derive(Debug, Clone, Serialize)]
pub struct DesignSizes {
    /// Blocks measured.
    pub blocks: usize,
    /// Mean encoded bytes per block.
    pub mean_bytes: f64,
    /// Median bytes per block.
    pub median_bytes: f64,
    /// 90th percentile (nearest rank).
    pub p90_bytes: f64,
    /// The largest block's.
    pub max_bytes: f64,
    /// Mean bytes relative to EIP-7928's (type2) on the same blocks.
    pub vs_eip7928: f64,
    /// Mean bytes per block by content: addresses, slot keys, code, and the rest
    /// (values, indices, list headers).
    pub split: Split,
    /// What the design carries.
    pub carries: &'static str,
    /// The published mean for this design, where there is one.
    pub published_bytes: Option<f64>,
    /// The share of the bytes that describe the block's fee recipient (every
    /// transaction touches it, paying the fee), in percent.
    pub fee_recipient_pct: f64,
}

/// Mean bytes per block by content.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Split {
    /// Addresses.
    pub accounts: f64,
    /// Slot keys.
    pub slots: f64,
    /// Values, indices and list headers.
    pub values: f64,
    /// Code.
    pub code: f64,
}

/// `designs` plus EIP-7928's (type2), the yardstick every size is compared with.
pub fn with_eip7928(designs: &[BalDesign]) -> Vec<BalDesign> {
    let mut all = designs.to_vec();
    if !all.contains(&BalDesign::Type2) {
        all.push(BalDesign::Type2);
    }
    all
}

/// Sizes of every design in `designs` over the chain, in `designs`' order.
pub fn sizes(
    options: &BenchOptions,
    fixture: &LoadedFixture,
    designs: &[BalDesign],
) -> anyhow::Result<Vec<(BalDesign, DesignSizes)>> {
    let all = with_eip7928(designs);
    let dbs = Databases::build(options, fixture)?;
    let derived = derive_chain_designs(&dbs, fixture, &all)?;
    let recipients: Vec<Address> =
        fixture.blocks.iter().map(|b| b.block.header.beneficiary).collect();
    summarize(&derived, &recipients, &all, designs)
}

/// Sizes of `designs` over blocks whose designs `all` (`with_eip7928(designs)`) were
/// derived, one `Vec` per block in `all`'s order; `recipients[i]` is block `i`'s fee
/// recipient.
pub fn summarize(
    derived: &[Vec<DesignBal>],
    recipients: &[Address],
    all: &[BalDesign],
    designs: &[BalDesign],
) -> anyhow::Result<Vec<(BalDesign, DesignSizes)>> {
    anyhow::ensure!(derived.len() == recipients.len(), "one fee recipient per block");
    let splits: Vec<Vec<SizeSplit>> = (0..all.len())
        .map(|k| derived.iter().map(|block| block[k].size_split()).collect())
        .collect();
    let position = |design: BalDesign| {
        all.iter().position(|d| *d == design).with_context(|| format!("{design} not derived"))
    };
    let eip7928 = position(BalDesign::Type2)?;
    let mean_of = |k: usize, f: fn(&SizeSplit) -> usize| {
        let n = splits[k].len().max(1) as f64;
        splits[k].iter().map(f).sum::<usize>() as f64 / n
    };
    let base = mean_of(eip7928, |s| s.total);
    designs
        .iter()
        .map(|&design| {
            let k = position(design)?;
            let totals: Vec<usize> = splits[k].iter().map(|s| s.total).collect();
            let recipient_bytes: usize = derived
                .iter()
                .zip(recipients)
                .map(|(block, recipient)| {
                    let bal = &block[k];
                    let only = DesignBal {
                        design: bal.design,
                        accounts: bal
                            .accounts
                            .iter()
                            .filter(|a| a.address == *recipient)
                            .cloned()
                            .collect(),
                    };
                    only.encode().len()
                })
                .sum();
            let all_bytes: usize = totals.iter().sum();
            let stats = SizeStats::of(&totals);
            let sizes = DesignSizes {
                blocks: stats.blocks,
                mean_bytes: stats.mean,
                median_bytes: stats.median,
                p90_bytes: stats.p90,
                max_bytes: stats.max,
                vs_eip7928: if base > 0.0 { stats.mean / base } else { 0.0 },
                split: Split {
                    accounts: mean_of(k, |s| s.accounts),
                    slots: mean_of(k, |s| s.slots),
                    values: mean_of(k, |s| s.values),
                    code: mean_of(k, |s| s.code),
                },
                carries: design.describe(),
                published_bytes: PUBLISHED_BYTES
                    .iter()
                    .find(|(d, _)| *d == design)
                    .map(|(_, bytes)| *bytes),
                fee_recipient_pct: if all_bytes > 0 {
                    100.0 * recipient_bytes as f64 / all_bytes as f64
                } else {
                    0.0
                },
            };
            Ok((design, sizes))
        })
        .collect()
}

/// The sizes as a table, with the published means beside.
pub fn sizes_table(sizes: &[(BalDesign, DesignSizes)]) -> String {
    let mut out = format!(
        "{:<12} {:>6} {:>10} {:>10} {:>10} {:>10} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>11}  {}\n",
        "design",
        "blocks",
        "mean B",
        "median B",
        "p90 B",
        "max B",
        "vs 7928",
        "accounts",
        "slots",
        "values",
        "code",
        "fee rcpt",
        "published",
        "carries"
    );
    for (design, s) in sizes {
        let published =
            s.published_bytes.map(|b| format!("{:.0} KB", b / 1e3)).unwrap_or_else(|| "-".into());
        out.push_str(&format!(
            "{:<12} {:>6} {:>10.0} {:>10.0} {:>10.0} {:>10.0} {:>7.2}x {:>9.0} {:>9.0} {:>9.0} {:>9.0} {:>8.1}% {:>11}  {}\n",
            design.name(),
            s.blocks,
            s.mean_bytes,
            s.median_bytes,
            s.p90_bytes,
            s.max_bytes,
            s.vs_eip7928,
            s.split.accounts,
            s.split.slots,
            s.split.values,
            s.split.code,
            s.fee_recipient_pct,
            published,
            s.carries
        ));
    }
    out.push_str("(RLP bytes per block; accounts/slots/values/code: mean bytes per block by content; fee rcpt: the share\n describing the blocks' fee recipients; published: mean over 2,000 mainnet blocks, where the study gives one)\n");
    out
}

/// The JSON report: `{"designs": {"<name>": {...}}}`.
pub fn sizes_json(sizes: &[(BalDesign, DesignSizes)]) -> serde_json::Value {
    let designs: BTreeMap<&str, &DesignSizes> = sizes.iter().map(|(d, s)| (d.name(), s)).collect();
    serde_json::json!({ "designs": designs })
}

/// A stacked bar's part: name, colour, and its share of a design's bytes.
type Part = (&'static str, &'static str, fn(&Split) -> f64);

/// A bar chart of the mean bytes per block, stacked by content.
pub fn sizes_svg(sizes: &[(BalDesign, DesignSizes)]) -> String {
    let (w, bar_h, gap, left, top) = (760.0, 22.0, 10.0, 110.0, 40.0);
    let max = sizes.iter().map(|(_, s)| s.mean_bytes).fold(1.0, f64::max);
    let scale = (w - left - 40.0) / max;
    let h = top + sizes.len() as f64 * (bar_h + gap) + 50.0;
    let mut out = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">
<text x="{left}" y="20" font-size="14">BAL designs: mean RLP bytes per block, by content</text>
"#
    );
    let parts: [Part; 4] = [
        ("accounts", "#4e79a7", |s| s.accounts),
        ("slots", "#f28e2b", |s| s.slots),
        ("values", "#59a14f", |s| s.values),
        ("code", "#b07aa1", |s| s.code),
    ];
    for (i, (design, s)) in sizes.iter().enumerate() {
        let y = top + i as f64 * (bar_h + gap);
        out.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n",
            left - 8.0,
            y + bar_h * 0.7,
            design.name()
        ));
        let mut x = left;
        for (_, color, part) in &parts {
            let width = part(&s.split) * scale;
            out.push_str(&format!(
                "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{width:.1}\" height=\"{bar_h}\" fill=\"{color}\"/>\n"
            ));
            x += width;
        }
        out.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\">{:.0} B</text>\n",
            x + 4.0,
            y + bar_h * 0.7,
            s.mean_bytes
        ));
    }
    let legend_y = h - 20.0;
    for (i, (name, color, _)) in parts.iter().enumerate() {
        let x = left + i as f64 * 110.0;
        out.push_str(&format!(
            "<rect x=\"{x}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{color}\"/><text x=\"{}\" y=\"{legend_y}\">{name}</text>\n",
            legend_y - 10.0,
            x + 16.0
        ));
    }
    out.push_str("</svg>\n");
    out
}
