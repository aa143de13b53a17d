//! The EF `blockchain_test` fixture format, as far as the runner reads it.

use alloy_eips::eip7840::BlobParams;
use alloy_primitives::{Address, Bytes, B256, U256};
use serde::Deserialize;
use std::collections::BTreeMap;

/// One `blockchain_test`: a genesis, blocks to import, and the expected end state.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlockchainTest {
    /// The fork (`Amsterdam`, ...) the chain runs from genesis.
    pub network: String,
    /// The genesis header, as far as the runner reads it.
    pub genesis_block_header: GenesisHeaderRef,
    /// The RLP of the genesis block.
    #[serde(rename = "genesisRLP")]
    pub genesis_rlp: Bytes,
    /// The genesis state.
    pub pre: BTreeMap<Address, FixtureAccount>,
    /// The full state after the last valid block.
    pub post_state: Option<BTreeMap<Address, FixtureAccount>>,
    /// Fixtures filled without the full post state carry its root instead.
    pub post_state_hash: Option<B256>,
    /// The hash the chain's head must have at the end.
    pub lastblockhash: B256,
    /// Chain id and blob schedule.
    pub config: Option<FixtureConfig>,
    /// The blocks, in import order (invalid ones included).
    pub blocks: Vec<FixtureBlock>,
}

/// Why a fixture entry is not run as a `blockchain_test`, or `None` when it is one.
///
/// The format is taken from `_info.fixture-format` when the fixture names it, else from
/// its shape: `engineNewPayloads` (engine fixtures, `blockchain_test_engine`, with
/// `syncPayload` `blockchain_test_sync`, without `pre` but with `preHash`
/// `blockchain_test_engine_x`), `transaction` + `post` (`state_test`), `txbytes`
/// (`transaction_test`), `blocks` + `genesisBlockHeader` (`blockchain_test`).
pub fn not_a_blockchain_test(value: &serde_json::Value) -> Option<String> {
    let Some(object) = value.as_object() else {
        return Some("not a test: the entry is not a JSON object".into());
    };
    let named = value
        .get("_info")
        .and_then(|i| i.get("fixture-format").or_else(|| i.get("fixture_format")))
        .and_then(|f| f.as_str());
    let has = |key: &str| object.contains_key(key);
    let format = match named {
        Some(name) => name.to_string(),
        None if has("engineNewPayloads") && has("syncPayload") => "blockchain_test_sync".into(),
        None if has("engineNewPayloads") && !has("pre") && has("preHash") => {
            "blockchain_test_engine_x".into()
        }
        None if has("engineNewPayloads") => "blockchain_test_engine".into(),
        None if has("transaction") && has("post") => "state_test".into(),
        None if has("txbytes") => "transaction_test".into(),
        None if has("blocks") && has("genesisBlockHeader") => "blockchain_test".into(),
        None => {
            let keys: Vec<&str> = object.keys().map(String::as_str).take(8).collect();
            return Some(format!("unknown fixture format (keys: {})", keys.join(", ")));
        }
    };
    match format.as_str() {
        // A fixture that names itself a blockchain_test is run; missing fields fail it.
        "blockchain_test" => None,
        f if f.starts_with("blockchain_test_engine") || f == "blockchain_test_sync" => {
            Some(format!("{f} fixture: Engine API payloads, not a blockchain_test (run it with hive/consume_engine.py)"))
        }
        f => Some(format!("{f} fixture: not a blockchain_test")),
    }
}

/// The part of `genesisBlockHeader` the runner checks.
#[derive(Debug, Deserialize)]
pub struct GenesisHeaderRef {
    /// The genesis block hash.
    pub hash: B256,
}

/// An account of `pre` or `postState`.
#[derive(Debug, Deserialize)]
pub struct FixtureAccount {
    /// Nonce.
    pub nonce: U256,
    /// Balance in wei.
    pub balance: U256,
    /// Code (empty for none).
    pub code: Bytes,
    /// Storage slots (absent means none).
    #[serde(default)]
    pub storage: BTreeMap<U256, U256>,
}

/// The fixture's `config`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FixtureConfig {
    /// Chain id (1 when absent).
    pub chainid: Option<U256>,
    /// Blob parameters per fork name.
    #[serde(default)]
    pub blob_schedule: BTreeMap<String, FixtureBlobParams>,
}

/// One fork's blob parameters.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FixtureBlobParams {
    /// Target blobs per block.
    pub target: U256,
    /// Maximum blobs per block.
    pub max: U256,
    /// Base fee update fraction.
    pub base_fee_update_fraction: U256,
}

impl FixtureBlobParams {
    /// As the chain config's blob parameters.
    pub fn to_params(&self) -> BlobParams {
        let max = self.max.saturating_to::<u64>();
        BlobParams {
            target_blob_count: self.target.saturating_to(),
            max_blob_count: max,
            update_fraction: self.base_fee_update_fraction.saturating_to(),
            min_blob_fee: alloy_eips::eip4844::BLOB_TX_MIN_BLOB_GASPRICE,
            max_blobs_per_tx: max,
            blob_base_cost: 0,
        }
    }
}

/// A block entry. The BAL is kept as raw JSON so that one that does not decode is a
/// rejection of that block, not a failure to read the whole fixture.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FixtureBlock {
    /// The block's RLP.
    pub rlp: Bytes,
    /// The block's BAL as JSON (valid blocks).
    pub block_access_list: Option<serde_json::Value>,
    /// Why the block must be rejected (`A|B` lists alternatives); absent for valid blocks.
    pub expect_exception: Option<String>,
    /// What the fixture decodes an invalid block to.
    #[serde(rename = "rlp_decoded")]
    pub rlp_decoded: Option<RlpDecoded>,
}

/// `rlp_decoded` of an invalid block.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RlpDecoded {
    /// The block's BAL as JSON.
    pub block_access_list: Option<serde_json::Value>,
}

impl FixtureBlock {
    /// The block's BAL JSON, wherever the fixture puts it.
    pub fn bal_json(&self) -> Option<&serde_json::Value> {
        self.block_access_list
            .as_ref()
            .or_else(|| self.rlp_decoded.as_ref().and_then(|d| d.block_access_list.as_ref()))
    }
}
