//! The EF `blockchain_test` fixture format, as far as the runner reads it.

use alloy_eips::eip7840::BlobParams;
use alloy_primitives::{Address, Bytes, B256, U256};
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlockchainTest {
    pub network: String,
    pub genesis_block_header: GenesisHeaderRef,
    #[serde(rename = "genesisRLP")]
    pub genesis_rlp: Bytes,
    pub pre: BTreeMap<Address, FixtureAccount>,
    pub post_state: Option<BTreeMap<Address, FixtureAccount>>,
    pub lastblockhash: B256,
    pub config: Option<FixtureConfig>,
    pub blocks: Vec<FixtureBlock>,
}

#[derive(Debug, Deserialize)]
pub struct GenesisHeaderRef {
    pub hash: B256,
}

#[derive(Debug, Deserialize)]
pub struct FixtureAccount {
    pub nonce: U256,
    pub balance: U256,
    pub code: Bytes,
    #[serde(default)]
    pub storage: BTreeMap<U256, U256>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FixtureConfig {
    pub chainid: Option<U256>,
    #[serde(default)]
    pub blob_schedule: BTreeMap<String, FixtureBlobParams>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FixtureBlobParams {
    pub target: U256,
    pub max: U256,
    pub base_fee_update_fraction: U256,
}

impl FixtureBlobParams {
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
    pub rlp: Bytes,
    pub block_access_list: Option<serde_json::Value>,
    pub expect_exception: Option<String>,
    #[serde(rename = "rlp_decoded")]
    pub rlp_decoded: Option<RlpDecoded>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RlpDecoded {
    pub block_access_list: Option<serde_json::Value>,
}

impl FixtureBlock {
    pub fn bal_json(&self) -> Option<&serde_json::Value> {
        self.block_access_list
            .as_ref()
            .or_else(|| self.rlp_decoded.as_ref().and_then(|d| d.block_access_list.as_ref()))
    }
}
