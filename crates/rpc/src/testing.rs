//! `testing_buildBlockV1` (execution-apis `testing` namespace): a block built on the
//! head from given transactions (`null`: the pool's) and returned as the Engine API's
//! `getPayload` of the block's fork would return it. Nothing is imported.

use crate::handler::EthRpc;
use alloy_eips::eip7685::Requests;
use alloy_primitives::{Bytes, B256};
use alloy_rpc_types_engine::{
    ExecutionPayloadEnvelopeV4, ExecutionPayloadEnvelopeV5, ExecutionPayloadEnvelopeV6,
    ExecutionPayloadV3, ExecutionPayloadV4, PayloadAttributes,
};
use ethrex_common::Fork;
use jsonrpsee::proc_macros::rpc;
use jsonrpsee::types::ErrorObjectOwned;
use serde_json::Value;

/// The `testing_` methods.
#[rpc(server, namespace = "testing")]
pub trait TestingApi {
    /// `testing_buildBlockV1`.
    #[method(name = "buildBlockV1", blocking)]
    fn build_block_v1(
        &self,
        parent: B256,
        attributes: PayloadAttributes,
        transactions: Option<Vec<Bytes>>,
        extra_data: Option<Bytes>,
    ) -> Result<Value, ErrorObjectOwned>;
}

fn error(code: i32, message: impl Into<String>) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(code, message.into(), None::<()>)
}

fn json<T: serde::Serialize>(value: T) -> Result<Value, ErrorObjectOwned> {
    serde_json::to_value(value).map_err(|e| error(-32603, e.to_string()))
}

impl TestingApiServer for EthRpc {
    fn build_block_v1(
        &self,
        parent: B256,
        attributes: PayloadAttributes,
        transactions: Option<Vec<Bytes>>,
        extra_data: Option<Bytes>,
    ) -> Result<Value, ErrorObjectOwned> {
        let transactions = transactions
            .map(|raw| {
                raw.iter()
                    .enumerate()
                    .map(|(i, bytes)| {
                        ethrex_txpool::decode_network(bytes)
                            .map(|tx| ethrex_txpool::split_sidecar(tx).0)
                            .map_err(|e| error(-32602, format!("transaction {i}: {e}")))
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?;
        let built = ethrex_engine::build_block_for_testing(
            self.node(),
            parent,
            &attributes,
            transactions,
            extra_data.unwrap_or_default(),
        )
        .map_err(|e| match e {
            // The builder's refusal of a transaction: geth answers -32000.
            ethrex_engine::EngineError::Internal(reason) => error(-32000, reason),
            other => error(other.code(), other.to_string()),
        })?;
        let block = &built.block.block;
        let payload = ExecutionPayloadV3::from_block_unchecked(block.header.hash_slow(), block);
        let requests = Requests::new(built.requests.clone());
        match ethrex_engine::fork_of(self.node(), block.header.timestamp) {
            fork if fork >= Fork::Amsterdam => json(ExecutionPayloadEnvelopeV6 {
                blobs_bundle: ethrex_engine::bundle_v2(&built.sidecars),
                execution_payload: ExecutionPayloadV4 {
                    payload_inner: payload,
                    block_access_list: alloy_rlp::encode(
                        built.block.bal.clone().unwrap_or_default(),
                    )
                    .into(),
                    slot_number: block.header.slot_number.unwrap_or_default(),
                },
                block_value: built.fees,
                should_override_builder: false,
                execution_requests: requests,
            }),
            Fork::Osaka => json(ExecutionPayloadEnvelopeV5 {
                blobs_bundle: ethrex_engine::bundle_v2(&built.sidecars),
                execution_payload: payload,
                block_value: built.fees,
                should_override_builder: false,
                execution_requests: requests,
            }),
            _ => json(ExecutionPayloadEnvelopeV4 {
                envelope_inner: alloy_rpc_types_engine::ExecutionPayloadEnvelopeV3 {
                    execution_payload: payload,
                    block_value: built.fees,
                    blobs_bundle: ethrex_engine::bundle_v1(&built.sidecars),
                    should_override_builder: false,
                },
                execution_requests: requests,
            }),
        }
    }
}
