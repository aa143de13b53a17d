//! The files a stress fixture consists of, and reading them back:
//! - `*.rlp`: blocks 1..N, each RLP-encoded, concatenated (what `geth export` writes);
//! - `*.bal.rlp`: one RLP `BlockAccessList` per block, concatenated, same order;
//! - `*.genesis.json`: geth-style genesis (chain config with fork times, alloc).

use alloy_rlp::{Decodable, Encodable};
use anyhow::{bail, Context};
use ethrex_common::{Block, BlockAccessList, BlockWithBal};
use std::path::Path;

pub fn write_blocks(path: &Path, blocks: &[BlockWithBal]) -> anyhow::Result<()> {
    let mut out = Vec::new();
    for b in blocks {
        b.block.encode(&mut out);
    }
    std::fs::write(path, out).with_context(|| format!("writing {}", path.display()))
}

pub fn write_bals(path: &Path, blocks: &[BlockWithBal]) -> anyhow::Result<()> {
    let mut out = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        let bal = b.bal.as_ref().with_context(|| format!("block {} has no BAL", i + 1))?;
        bal.encode(&mut out);
    }
    std::fs::write(path, out).with_context(|| format!("writing {}", path.display()))
}

/// Decodes a concatenation of RLP items, naming the file and item on error.
fn read_concatenated<T: Decodable>(path: &Path, what: &str) -> anyhow::Result<Vec<T>> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let mut rest = bytes.as_slice();
    let mut items = Vec::new();
    while !rest.is_empty() {
        let offset = bytes.len() - rest.len();
        let item = T::decode(&mut rest)
            .map_err(|e| anyhow::anyhow!("{}: {what} #{} at byte {offset} does not decode: {e}", path.display(), items.len() + 1))?;
        items.push(item);
    }
    Ok(items)
}

pub fn read_blocks(path: &Path) -> anyhow::Result<Vec<Block>> {
    read_concatenated(path, "block")
}

pub fn read_bals(path: &Path) -> anyhow::Result<Vec<BlockAccessList>> {
    read_concatenated(path, "block access list")
}

/// Blocks with their BALs (when a BAL file is given, it must have one per block).
pub fn read_chain(blocks: &Path, bals: Option<&Path>) -> anyhow::Result<Vec<BlockWithBal>> {
    let blocks = read_blocks(blocks)?;
    let Some(bal_path) = bals else {
        return Ok(blocks.into_iter().map(|block| BlockWithBal { block, bal: None }).collect());
    };
    let bals = read_bals(bal_path)?;
    if bals.len() != blocks.len() {
        bail!("{} holds {} BALs for {} blocks", bal_path.display(), bals.len(), blocks.len());
    }
    Ok(blocks.into_iter().zip(bals).map(|(block, bal)| BlockWithBal { block, bal: Some(bal) }).collect())
}

pub fn read_genesis(path: &Path) -> anyhow::Result<alloy_genesis::Genesis> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not a geth-style genesis file", path.display()))
}
