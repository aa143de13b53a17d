//! Chain files, as `ethrex import` reads and `ethrex export` / the fixture generator write
//! them:
//! - `*.rlp`: blocks 1..N, each RLP-encoded, concatenated (what `geth export` writes);
//! - `*.bal.rlp`: one RLP `BlockAccessList` per block, concatenated, same order;
//! - `*.genesis.json`: a geth-style genesis (chain config with fork times, alloc).

pub use alloy_genesis::Genesis;
use alloy_rlp::{Decodable, Encodable};
use ethrex_common::{Block, BlockAccessList, BlockWithBal};
use std::path::{Path, PathBuf};

/// Why a chain file could not be read or written; every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum ChainFileError {
    /// Reading, writing or creating the file failed.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done ("reading", "writing", ...).
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// An item of the file is not valid RLP of what it should hold.
    #[error("{path}: {what} #{item} at byte {offset} does not decode: {source}")]
    Decode {
        /// The file.
        path: PathBuf,
        /// What the item should be ("block", "BAL").
        what: &'static str,
        /// The item's position in the file, from 0.
        item: usize,
        /// The item's first byte in the file.
        offset: usize,
        /// The RLP error.
        source: alloy_rlp::Error,
    },
    /// The BAL file does not hold one BAL per block.
    #[error("{path} holds {bals} BALs for {blocks} blocks")]
    BalCount {
        /// The BAL file.
        path: PathBuf,
        /// BALs in it.
        bals: usize,
        /// Blocks in the chain file.
        blocks: usize,
    },
    /// A block to export has no BAL stored, so the BAL file cannot be written.
    #[error("block {number} has no BAL to write")]
    MissingBal {
        /// The block's number.
        number: u64,
    },
    /// The genesis file is not geth-style genesis JSON.
    #[error("{path} is not a geth-style genesis file: {source}")]
    Genesis {
        /// The genesis file.
        path: PathBuf,
        /// The JSON error.
        source: serde_json::Error,
    },
    /// The genesis file's chain configuration breaks a rule (an unknown fork key, forks
    /// out of order, ...).
    #[error("{path}: {source}")]
    Config {
        /// The genesis file.
        path: PathBuf,
        /// The rule it breaks.
        source: ethrex_common::ChainConfigError,
    },
}

fn write(path: &Path, bytes: Vec<u8>) -> Result<(), ChainFileError> {
    std::fs::write(path, bytes).map_err(|source| ChainFileError::Io {
        action: "writing",
        path: path.into(),
        source,
    })
}

fn read(path: &Path) -> Result<Vec<u8>, ChainFileError> {
    std::fs::read(path).map_err(|source| ChainFileError::Io {
        action: "reading",
        path: path.into(),
        source,
    })
}

/// Writes the blocks, RLP-encoded and concatenated.
pub fn write_blocks(path: &Path, blocks: &[BlockWithBal]) -> Result<(), ChainFileError> {
    let mut out = Vec::new();
    for b in blocks {
        b.block.encode(&mut out);
    }
    write(path, out)
}

/// Writes the blocks' BALs, RLP-encoded and concatenated; every block must have one.
pub fn write_bals(path: &Path, blocks: &[BlockWithBal]) -> Result<(), ChainFileError> {
    let mut out = Vec::new();
    for b in blocks {
        let bal =
            b.bal.as_ref().ok_or(ChainFileError::MissingBal { number: b.block.header.number })?;
        bal.encode(&mut out);
    }
    write(path, out)
}

/// Decodes a concatenation of RLP items, naming the file and item on error.
fn read_concatenated<T: Decodable>(
    path: &Path,
    what: &'static str,
) -> Result<Vec<T>, ChainFileError> {
    let bytes = read(path)?;
    let mut rest = bytes.as_slice();
    let mut items = Vec::new();
    while !rest.is_empty() {
        let offset = bytes.len() - rest.len();
        let item = T::decode(&mut rest).map_err(|source| ChainFileError::Decode {
            path: path.into(),
            what,
            item: items.len() + 1,
            offset,
            source,
        })?;
        items.push(item);
    }
    Ok(items)
}

/// Reads a file of concatenated RLP blocks.
pub fn read_blocks(path: &Path) -> Result<Vec<Block>, ChainFileError> {
    read_concatenated(path, "block")
}

/// Reads a file of concatenated RLP block access lists.
pub fn read_bals(path: &Path) -> Result<Vec<BlockAccessList>, ChainFileError> {
    read_concatenated(path, "block access list")
}

/// Blocks with their BALs (when a BAL file is given, it must have one per block).
pub fn read_chain(blocks: &Path, bals: Option<&Path>) -> Result<Vec<BlockWithBal>, ChainFileError> {
    let blocks = read_blocks(blocks)?;
    let Some(bal_path) = bals else {
        return Ok(blocks.into_iter().map(|block| BlockWithBal { block, bal: None }).collect());
    };
    let bals = read_bals(bal_path)?;
    if bals.len() != blocks.len() {
        return Err(ChainFileError::BalCount {
            path: bal_path.into(),
            bals: bals.len(),
            blocks: blocks.len(),
        });
    }
    Ok(blocks
        .into_iter()
        .zip(bals)
        .map(|(block, bal)| BlockWithBal { block, bal: Some(bal) })
        .collect())
}

/// Reads a geth-style genesis file and checks its chain configuration.
pub fn read_genesis(path: &Path) -> Result<alloy_genesis::Genesis, ChainFileError> {
    let text = read(path)?;
    parse_genesis(&text, path)
}

/// geth's gas limit for a genesis that names none.
pub const DEFAULT_GENESIS_GAS_LIMIT: u64 = 4_712_388;
/// geth's difficulty for an ethash genesis that names none (and no mix hash).
pub const DEFAULT_GENESIS_DIFFICULTY: u64 = 131_072;

/// Parses geth-style genesis JSON (`source` names it in errors), filling in what geth
/// fills in for absent keys (the gas limit; an ethash chain's difficulty), then checks
/// the chain configuration (`ChainConfig::validate`).
pub fn parse_genesis(json: &[u8], source: &Path) -> Result<alloy_genesis::Genesis, ChainFileError> {
    let bad_json = |e| ChainFileError::Genesis { path: source.into(), source: e };
    let raw: serde_json::Value = serde_json::from_slice(json).map_err(bad_json)?;
    let mut genesis: alloy_genesis::Genesis =
        serde_json::from_value(raw.clone()).map_err(bad_json)?;
    let absent = |key: &str| raw.get(key).is_none_or(serde_json::Value::is_null);
    if absent("gasLimit") {
        genesis.gas_limit = DEFAULT_GENESIS_GAS_LIMIT;
    }
    if absent("difficulty") && genesis.config.ethash.is_some() && genesis.mix_hash.is_zero() {
        genesis.difficulty = alloy_primitives::U256::from(DEFAULT_GENESIS_DIFFICULTY);
    }
    ethrex_common::ChainConfig::new(genesis.config.clone())
        .validate()
        .map_err(|e| ChainFileError::Config { path: source.into(), source: e })?;
    Ok(genesis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_truncated_file_names_the_item_and_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bals.rlp");
        let bal = BlockAccessList::default();
        let mut bytes = Vec::new();
        bal.encode(&mut bytes);
        bal.encode(&mut bytes);
        bytes.push(0xf8); // a list header with its length byte missing
        std::fs::write(&path, &bytes).unwrap();
        let err = read_bals(&path).unwrap_err();
        assert!(matches!(err, ChainFileError::Decode { item: 3, offset: 2, .. }), "{err}");
        assert!(err.to_string().starts_with(&path.display().to_string()), "{err}");
    }

    #[test]
    fn a_bal_file_must_cover_every_block() {
        let dir = tempfile::tempdir().unwrap();
        let (blocks, bals) = (dir.path().join("c.rlp"), dir.path().join("c.bal.rlp"));
        let chain =
            vec![BlockWithBal { block: Block::default(), bal: Some(BlockAccessList::default()) }];
        write_blocks(&blocks, &chain).unwrap();
        write_bals(&bals, &[]).unwrap();
        let err = read_chain(&blocks, Some(&bals)).unwrap_err();
        assert!(matches!(err, ChainFileError::BalCount { bals: 0, blocks: 1, .. }), "{err}");
        write_bals(&bals, &chain).unwrap();
        assert_eq!(read_chain(&blocks, Some(&bals)).unwrap().len(), 1);
    }
}
