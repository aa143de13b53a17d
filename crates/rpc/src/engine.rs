//! The Engine API's transport (Cancun through Amsterdam): each method's parameters
//! parsed into the engine crate's calls, its answers and errors (with their codes)
//! served. The rules themselves are in `ethrex_engine`.

use crate::api::{EngineApiServer, ExecutionPayloadV4Input};
use alloy_eips::eip7685::Requests;
use alloy_primitives::{B256, U64};
use alloy_rpc_types_engine::{
    BlobAndProofV1, BlobAndProofV2, ExecutionPayloadBodyV2, ExecutionPayloadEnvelopeV3,
    ExecutionPayloadEnvelopeV4, ExecutionPayloadEnvelopeV5, ExecutionPayloadEnvelopeV6,
    ExecutionPayloadV3, ExecutionPayloadV4, ForkchoiceState, ForkchoiceUpdated,
    PayloadAttributes as EnginePayloadAttributes, PayloadId, PayloadStatus,
};
use ethrex_common::Fork;
use ethrex_engine::{EngineError, NewPayload, Node};
use jsonrpsee::core::RpcResult;
use jsonrpsee::types::error::{INVALID_PARAMS_CODE, INVALID_PARAMS_MSG};
use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::RpcModule;
use std::sync::Arc;

/// The Engine API methods this node serves, as `engine_exchangeCapabilities` lists them.
pub(crate) const CAPABILITIES: &[&str] = &[
    "engine_exchangeCapabilities",
    "engine_newPayloadV3",
    "engine_newPayloadV4",
    "engine_newPayloadV5",
    "engine_forkchoiceUpdatedV3",
    "engine_forkchoiceUpdatedV4",
    "engine_getPayloadV4",
    "engine_getPayloadV5",
    "engine_getPayloadV6",
    "engine_getPayloadBodiesByHashV2",
    "engine_getPayloadBodiesByRangeV2",
    "engine_getBlobsV1",
    "engine_getBlobsV2",
    "engine_getBlobsV3",
];

/// The node builds its own payloads: it never asks the consensus client to prefer a
/// builder's.
const SHOULD_OVERRIDE_BUILDER: bool = false;

/// An engine error as a JSON-RPC error object.
fn rpc_error(e: EngineError) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(e.code(), e.to_string(), None::<()>)
}

/// The Engine API over the shared node state.
#[derive(Clone)]
pub(crate) struct EngineRpc {
    node: Arc<Node>,
}

impl EngineRpc {
    /// An Engine API server's handlers over `node`.
    pub(crate) fn new(node: Arc<Node>) -> Self {
        Self { node }
    }

    fn new_payload(&self, payload: NewPayload, forks: &[Fork]) -> RpcResult<PayloadStatus> {
        ethrex_engine::new_payload(&self.node, payload, forks).map_err(rpc_error)
    }

    fn built(
        &self,
        id: PayloadId,
        version: u8,
    ) -> RpcResult<(ethrex_engine::BuiltPayload, ExecutionPayloadV3)> {
        ethrex_engine::built_payload(&self.node, id, version).map_err(rpc_error)
    }
}

impl EngineApiServer for EngineRpc {
    fn exchange_capabilities(&self, _capabilities: Option<Vec<String>>) -> RpcResult<Vec<String>> {
        Ok(CAPABILITIES.iter().map(|c| c.to_string()).collect())
    }

    fn new_payload_v3(
        &self,
        payload: ExecutionPayloadV3,
        versioned_hashes: Vec<B256>,
        parent_beacon_block_root: B256,
    ) -> RpcResult<PayloadStatus> {
        let payload = NewPayload {
            payload,
            versioned_hashes,
            parent_beacon_block_root,
            execution_requests: None,
            amsterdam: None,
        };
        self.new_payload(payload, &[Fork::Cancun])
    }

    fn new_payload_v4(
        &self,
        payload: ExecutionPayloadV3,
        versioned_hashes: Vec<B256>,
        parent_beacon_block_root: B256,
        execution_requests: Requests,
    ) -> RpcResult<PayloadStatus> {
        let payload = NewPayload {
            payload,
            versioned_hashes,
            parent_beacon_block_root,
            execution_requests: Some(execution_requests),
            amsterdam: None,
        };
        self.new_payload(payload, &[Fork::Prague, Fork::Osaka])
    }

    fn new_payload_v5(
        &self,
        payload: ExecutionPayloadV4Input,
        versioned_hashes: Vec<B256>,
        parent_beacon_block_root: B256,
        execution_requests: Requests,
    ) -> RpcResult<PayloadStatus> {
        let ExecutionPayloadV4Input { payload_inner, block_access_list, slot_number } = payload;
        let Some(bal) = block_access_list else {
            return Err(rpc_error(EngineError::InvalidParams(
                "payload has no blockAccessList".into(),
            )));
        };
        let Some(slot_number) = slot_number else {
            // As the parser reports any other missing field.
            return Err(ErrorObjectOwned::owned(
                INVALID_PARAMS_CODE,
                INVALID_PARAMS_MSG,
                Some("missing field `slotNumber`"),
            ));
        };
        let payload = NewPayload {
            payload: payload_inner,
            versioned_hashes,
            parent_beacon_block_root,
            execution_requests: Some(execution_requests),
            amsterdam: Some((bal, slot_number.to())),
        };
        self.new_payload(payload, &[Fork::Amsterdam])
    }

    fn forkchoice_updated_v3(
        &self,
        state: ForkchoiceState,
        attributes: Option<EnginePayloadAttributes>,
    ) -> RpcResult<ForkchoiceUpdated> {
        ethrex_engine::fork_choice(&self.node, state, attributes, 3).map_err(rpc_error)
    }

    fn forkchoice_updated_v4(
        &self,
        state: ForkchoiceState,
        attributes: Option<EnginePayloadAttributes>,
    ) -> RpcResult<ForkchoiceUpdated> {
        ethrex_engine::fork_choice(&self.node, state, attributes, 4).map_err(rpc_error)
    }

    fn get_payload_v4(&self, payload_id: PayloadId) -> RpcResult<ExecutionPayloadEnvelopeV4> {
        let (built, execution_payload) = self.built(payload_id, 4)?;
        Ok(ExecutionPayloadEnvelopeV4 {
            envelope_inner: ExecutionPayloadEnvelopeV3 {
                blobs_bundle: ethrex_engine::bundle_v1(&built.sidecars),
                execution_payload,
                block_value: built.fees,
                should_override_builder: SHOULD_OVERRIDE_BUILDER,
            },
            execution_requests: Requests::new(built.requests),
        })
    }

    fn get_payload_v5(&self, payload_id: PayloadId) -> RpcResult<ExecutionPayloadEnvelopeV5> {
        let (built, execution_payload) = self.built(payload_id, 5)?;
        Ok(ExecutionPayloadEnvelopeV5 {
            blobs_bundle: ethrex_engine::bundle_v2(&built.sidecars),
            execution_payload,
            block_value: built.fees,
            should_override_builder: SHOULD_OVERRIDE_BUILDER,
            execution_requests: Requests::new(built.requests),
        })
    }

    fn get_payload_v6(&self, payload_id: PayloadId) -> RpcResult<ExecutionPayloadEnvelopeV6> {
        let (built, payload_inner) = self.built(payload_id, 6)?;
        let header = &built.block.block.header;
        let execution_payload = ExecutionPayloadV4 {
            payload_inner,
            block_access_list: alloy_rlp::encode(built.block.bal.clone().unwrap_or_default())
                .into(),
            slot_number: header.slot_number.unwrap_or_default(),
        };
        Ok(ExecutionPayloadEnvelopeV6 {
            blobs_bundle: ethrex_engine::bundle_v2(&built.sidecars),
            execution_payload,
            block_value: built.fees,
            should_override_builder: SHOULD_OVERRIDE_BUILDER,
            execution_requests: Requests::new(built.requests),
        })
    }

    fn get_payload_bodies_by_hash_v2(
        &self,
        block_hashes: Vec<B256>,
    ) -> RpcResult<Vec<Option<ExecutionPayloadBodyV2>>> {
        ethrex_engine::bodies_by_hash(&self.node, &block_hashes).map_err(rpc_error)
    }

    fn get_payload_bodies_by_range_v2(
        &self,
        start: U64,
        count: U64,
    ) -> RpcResult<Vec<Option<ExecutionPayloadBodyV2>>> {
        ethrex_engine::bodies_by_range(&self.node, start.to(), count.to()).map_err(rpc_error)
    }

    fn get_blobs_v1(&self, versioned_hashes: Vec<B256>) -> RpcResult<Vec<Option<BlobAndProofV1>>> {
        ethrex_engine::get_blobs_v1(&self.node, &versioned_hashes).map_err(rpc_error)
    }

    fn get_blobs_v2(&self, versioned_hashes: Vec<B256>) -> RpcResult<Option<Vec<BlobAndProofV2>>> {
        ethrex_engine::get_blobs_v2(&self.node, &versioned_hashes).map_err(rpc_error)
    }

    fn get_blobs_v3(
        &self,
        versioned_hashes: Vec<B256>,
    ) -> RpcResult<Option<Vec<Option<BlobAndProofV2>>>> {
        ethrex_engine::get_blobs_v3(&self.node, &versioned_hashes).map_err(rpc_error)
    }
}

/// The Engine API methods (the ones in [`CAPABILITIES`]) over the shared node state.
pub(crate) fn module(node: Arc<Node>) -> RpcModule<EngineRpc> {
    EngineRpc::new(node).into_rpc()
}
