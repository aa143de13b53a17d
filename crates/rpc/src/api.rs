//! The node's JSON-RPC interface as typed jsonrpsee traits: the Engine API (`engine_`,
//! behind JWT authentication) and the public `eth_`, `net_` and `web3_` methods.
//!
//! The `#[rpc(server)]` macro generates one `*Server` trait per namespace; the server code
//! it generates parses each method's parameters once, straight into the types named here,
//! and serializes the result type. A parameter that does not parse is answered with
//! JSON-RPC error -32602 (invalid params) before the method runs. `crate::engine` and
//! `crate::eth` implement the traits over the shared [`crate::Node`].

use alloy_eips::eip7685::Requests;
use alloy_eips::{BlockId, BlockNumberOrTag};
use alloy_primitives::{Address, Bytes, B256, U256, U64};
use alloy_rpc_types_engine::{
    BlobAndProofV1, BlobAndProofV2, ExecutionPayloadBodyV2, ExecutionPayloadEnvelopeV4,
    ExecutionPayloadEnvelopeV5, ExecutionPayloadEnvelopeV6, ExecutionPayloadV3, ForkchoiceState,
    ForkchoiceUpdated, PayloadAttributes, PayloadId, PayloadStatus,
};
use alloy_rpc_types_eth::SyncStatus;
use jsonrpsee::core::RpcResult;
use jsonrpsee::proc_macros::rpc;
use serde::{Deserialize, Deserializer};

pub use crate::block::RpcBlock;

/// The `ExecutionPayloadV4` (Amsterdam) that `engine_newPayloadV5` receives: the V3 fields,
/// the RLP-encoded block access list (EIP-7928) and the slot number (EIP-7843).
///
/// alloy's `ExecutionPayloadV4` has the same fields; this form keeps the two Amsterdam
/// fields optional while parsing, so that a payload without a block access list (a V3
/// payload sent to V5, say) is answered with the node's own `payload has no
/// blockAccessList` (invalid params) rather than a generic parse error naming whichever
/// field serde reports first. Present but malformed (or `null`) is still a parse error.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionPayloadV4Input {
    /// The fields every payload since Cancun carries.
    #[serde(flatten)]
    pub payload_inner: ExecutionPayloadV3,
    /// The RLP-encoded block access list; `None` only when the field is missing.
    #[serde(default, deserialize_with = "present")]
    pub block_access_list: Option<Bytes>,
    /// The consensus layer's slot of the block; `None` only when the field is missing.
    #[serde(default, deserialize_with = "present")]
    pub slot_number: Option<U64>,
}

/// A field that must be a value when it is there (`null` is a parse error), while its
/// absence is `None` (with `#[serde(default)]`).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// The Engine API (Cancun through Amsterdam), served on the JWT-authenticated port. Method
/// names are `engine_` plus the `name` given; every method in `CAPABILITIES` is here.
#[rpc(server, namespace = "engine")]
pub trait EngineApi {
    /// `engine_exchangeCapabilities`: the Engine API methods this node serves (the consensus
    /// client's list is not needed to answer).
    #[method(name = "exchangeCapabilities")]
    fn exchange_capabilities(&self, capabilities: Option<Vec<String>>) -> RpcResult<Vec<String>>;

    /// `engine_newPayloadV3` (Cancun): imports a payload; its status.
    #[method(name = "newPayloadV3", blocking)]
    fn new_payload_v3(
        &self,
        payload: ExecutionPayloadV3,
        versioned_hashes: Vec<B256>,
        parent_beacon_block_root: B256,
    ) -> RpcResult<PayloadStatus>;

    /// `engine_newPayloadV4` (Prague, Osaka): as V3, plus the EIP-7685 requests the header's
    /// `requestsHash` commits to.
    #[method(name = "newPayloadV4", blocking)]
    fn new_payload_v4(
        &self,
        payload: ExecutionPayloadV3,
        versioned_hashes: Vec<B256>,
        parent_beacon_block_root: B256,
        execution_requests: Requests,
    ) -> RpcResult<PayloadStatus>;

    /// `engine_newPayloadV5` (Amsterdam): as V4, with the payload's block access list and
    /// slot number.
    #[method(name = "newPayloadV5", blocking)]
    fn new_payload_v5(
        &self,
        payload: ExecutionPayloadV4Input,
        versioned_hashes: Vec<B256>,
        parent_beacon_block_root: B256,
        execution_requests: Requests,
    ) -> RpcResult<PayloadStatus>;

    /// `engine_forkchoiceUpdatedV3` (attributes for Cancun through Osaka): moves the head,
    /// and with attributes starts building a payload on it.
    #[method(name = "forkchoiceUpdatedV3", blocking)]
    fn forkchoice_updated_v3(
        &self,
        state: ForkchoiceState,
        attributes: Option<PayloadAttributes>,
    ) -> RpcResult<ForkchoiceUpdated>;

    /// `engine_forkchoiceUpdatedV4` (attributes for Amsterdam on, with `slotNumber`).
    #[method(name = "forkchoiceUpdatedV4", blocking)]
    fn forkchoice_updated_v4(
        &self,
        state: ForkchoiceState,
        attributes: Option<PayloadAttributes>,
    ) -> RpcResult<ForkchoiceUpdated>;

    /// `engine_getPayloadV4`: a built Prague payload.
    #[method(name = "getPayloadV4", blocking)]
    fn get_payload_v4(&self, payload_id: PayloadId) -> RpcResult<ExecutionPayloadEnvelopeV4>;

    /// `engine_getPayloadV5`: a built Osaka payload.
    #[method(name = "getPayloadV5", blocking)]
    fn get_payload_v5(&self, payload_id: PayloadId) -> RpcResult<ExecutionPayloadEnvelopeV5>;

    /// `engine_getPayloadV6`: a built Amsterdam payload, with its block access list.
    #[method(name = "getPayloadV6", blocking)]
    fn get_payload_v6(&self, payload_id: PayloadId) -> RpcResult<ExecutionPayloadEnvelopeV6>;

    /// `engine_getPayloadBodiesByHashV2`: the bodies of the blocks asked for, `null` for an
    /// unknown block; at most 1024.
    #[method(name = "getPayloadBodiesByHashV2", blocking)]
    fn get_payload_bodies_by_hash_v2(
        &self,
        block_hashes: Vec<B256>,
    ) -> RpcResult<Vec<Option<ExecutionPayloadBodyV2>>>;

    /// `engine_getPayloadBodiesByRangeV2`: the bodies of `count` canonical blocks from
    /// `start`, stopping at the head; at most 1024.
    #[method(name = "getPayloadBodiesByRangeV2", blocking)]
    fn get_payload_bodies_by_range_v2(
        &self,
        start: U64,
        count: U64,
    ) -> RpcResult<Vec<Option<ExecutionPayloadBodyV2>>>;

    /// `engine_getBlobsV1`: pooled blobs with their proofs by versioned hash, `null` where
    /// missing (before Osaka).
    #[method(name = "getBlobsV1", blocking)]
    fn get_blobs_v1(&self, versioned_hashes: Vec<B256>) -> RpcResult<Vec<Option<BlobAndProofV1>>>;

    /// `engine_getBlobsV2`: pooled blobs with their cell proofs, or `null` if any is
    /// missing.
    #[method(name = "getBlobsV2", blocking)]
    fn get_blobs_v2(&self, versioned_hashes: Vec<B256>) -> RpcResult<Option<Vec<BlobAndProofV2>>>;

    /// `engine_getBlobsV3`: pooled blobs with their cell proofs, `null` where missing.
    #[method(name = "getBlobsV3", blocking)]
    fn get_blobs_v3(
        &self,
        versioned_hashes: Vec<B256>,
    ) -> RpcResult<Option<Vec<Option<BlobAndProofV2>>>>;
}

/// The `eth_` methods, served on both ports. State queries take a block number, tag or
/// hash (EIP-1898) within the readable history (`ethrex_storage::history`).
#[rpc(server, namespace = "eth")]
pub trait EthApi {
    /// `eth_chainId`.
    #[method(name = "chainId")]
    fn chain_id(&self) -> RpcResult<U64>;

    /// `eth_syncing`: `false`, or the progress of a sync from peers.
    #[method(name = "syncing")]
    fn syncing(&self) -> RpcResult<SyncStatus>;

    /// `eth_blockNumber`: the head's number.
    #[method(name = "blockNumber", blocking)]
    fn block_number(&self) -> RpcResult<U64>;

    /// `eth_getBlockByNumber`: a canonical block by number or tag (`latest`, `safe`,
    /// `finalized` and `pending` are the head); `null` past the head.
    #[method(name = "getBlockByNumber", blocking)]
    fn block_by_number(
        &self,
        number: BlockNumberOrTag,
        full_transactions: Option<bool>,
    ) -> RpcResult<Option<RpcBlock>>;

    /// `eth_getBlockByHash`: a stored block; `null` if unknown.
    #[method(name = "getBlockByHash", blocking)]
    fn block_by_hash(
        &self,
        hash: B256,
        full_transactions: Option<bool>,
    ) -> RpcResult<Option<RpcBlock>>;

    /// `eth_getBalance` after a block (default `latest`).
    #[method(name = "getBalance", blocking)]
    fn balance(&self, address: Address, block: Option<BlockId>) -> RpcResult<U256>;

    /// `eth_sendRawTransaction`: a signed transaction (EIP-2718 network form) into the
    /// pool; its hash, or the pool's refusal in geth's words (-32000).
    #[method(name = "sendRawTransaction", blocking)]
    fn send_raw_transaction(&self, raw: Bytes) -> RpcResult<B256>;

    /// `eth_getTransactionCount` (the nonce) after a block; with `pending`, after the
    /// sender's pending pooled transactions.
    #[method(name = "getTransactionCount", blocking)]
    fn transaction_count(&self, address: Address, block: Option<BlockId>) -> RpcResult<U64>;

    /// `eth_getCode` after a block.
    #[method(name = "getCode", blocking)]
    fn code(&self, address: Address, block: Option<BlockId>) -> RpcResult<Bytes>;

    /// `eth_getStorageAt` after a block: the slot's value as 32 bytes.
    #[method(name = "getStorageAt", blocking)]
    fn storage_at(&self, address: Address, slot: String, block: Option<BlockId>)
        -> RpcResult<B256>;
}

/// The `net_` methods.
#[rpc(server, namespace = "net")]
pub trait NetApi {
    /// `net_version`: the chain id in decimal.
    #[method(name = "version")]
    fn version(&self) -> RpcResult<String>;
}

/// The `web3_` methods.
#[rpc(server, namespace = "web3")]
pub trait Web3Api {
    /// `web3_clientVersion`: `ethrex/v<version>/<os>-<arch>/rust`.
    #[method(name = "clientVersion")]
    fn client_version(&self) -> RpcResult<String>;
}

/// `txpool_` methods: what the transaction pool holds (geth's shapes).
#[rpc(server, namespace = "txpool")]
pub trait TxpoolApi {
    /// `txpool_status`: `{pending, queued}` counts.
    #[method(name = "status", blocking)]
    fn status(&self) -> RpcResult<serde_json::Value>;

    /// `txpool_content`: `{pending: {sender: {nonce: tx}}, queued: {...}}`.
    #[method(name = "content", blocking)]
    fn content(&self) -> RpcResult<serde_json::Value>;

    /// `txpool_contentFrom`: one sender's `{pending: {nonce: tx}, queued: {...}}`.
    #[method(name = "contentFrom", blocking)]
    fn content_from(&self, address: Address) -> RpcResult<serde_json::Value>;
}

/// `admin_` methods: the node's own enode and its peers (served on the HTTP port).
#[rpc(server, namespace = "admin")]
pub trait AdminApi {
    /// `admin_nodeInfo`: our enode, id, addresses and ports.
    #[method(name = "nodeInfo")]
    fn node_info(&self) -> RpcResult<serde_json::Value>;

    /// `admin_addPeer`: adds a static peer by enode URL (dialed now, kept and redialed).
    #[method(name = "addPeer")]
    fn add_peer(&self, enode: String) -> RpcResult<bool>;

    /// `admin_peers`: the connected peers.
    #[method(name = "peers")]
    fn peers(&self) -> RpcResult<Vec<serde_json::Value>>;
}
