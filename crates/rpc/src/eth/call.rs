//! Execution on demand: `eth_call`, `eth_estimateGas`, `eth_createAccessList`, run by
//! `ethrex_vm::call` against the state after the named block with the request's state
//! and block overrides (the keys `eth_simulateV1` takes), answered as geth answers (a
//! revert is error 3 with the revert data and its decoded reason).

use crate::error::{EthApiError, EthResult};
use crate::eth::overrides::{overrides, BlockOverridesJson};
use crate::handler::EthRpc;
use alloy_eips::BlockId;
use alloy_primitives::{Bytes, TxKind, U64};
use alloy_rpc_types_eth::state::StateOverride;
use alloy_rpc_types_eth::TransactionRequest;
use ethrex_vm::call::{revert_reason, CallError, CallInput, CallOutcome, Caller, EstimateError};
use jsonrpsee::proc_macros::rpc;
use jsonrpsee::types::ErrorObjectOwned;
use serde_json::{json, Value};
use std::sync::Arc;

/// geth's code for a reverted call.
const REVERTED: i32 = 3;

/// The `eth_` methods that execute.
#[rpc(server, namespace = "eth")]
pub trait EthCallApi {
    /// `eth_call`: the call's return data after a block (default `latest`).
    #[method(name = "call")]
    fn call(
        &self,
        request: TransactionRequest,
        block: Option<BlockId>,
        state_overrides: Option<StateOverride>,
        block_overrides: Option<BlockOverridesJson>,
    ) -> Result<Bytes, ErrorObjectOwned>;

    /// `eth_estimateGas`: a gas limit the call succeeds with (geth's search).
    #[method(name = "estimateGas", blocking)]
    fn estimate_gas(
        &self,
        request: TransactionRequest,
        block: Option<BlockId>,
        state_overrides: Option<StateOverride>,
        block_overrides: Option<BlockOverridesJson>,
    ) -> Result<U64, ErrorObjectOwned>;

    /// `eth_createAccessList`: the access list the call needs and its gas with it.
    #[method(name = "createAccessList", blocking)]
    fn create_access_list(
        &self,
        request: TransactionRequest,
        block: Option<BlockId>,
    ) -> Result<Value, ErrorObjectOwned>;
}

/// The request as the VM takes it.
pub(crate) fn input(request: TransactionRequest) -> EthResult<CallInput> {
    let data = request
        .input
        .try_into_unique_input()
        .map_err(|e| EthApiError::InvalidParams(e.to_string()))?
        .unwrap_or_default();
    Ok(CallInput {
        from: request.from,
        to: match request.to {
            Some(TxKind::Call(to)) => Some(to),
            _ => None,
        },
        gas: request.gas,
        gas_price: request.gas_price,
        max_fee_per_gas: request.max_fee_per_gas,
        max_priority_fee_per_gas: request.max_priority_fee_per_gas,
        max_fee_per_blob_gas: request.max_fee_per_blob_gas,
        value: request.value,
        input: data,
        nonce: request.nonce,
        access_list: request.access_list,
        authorization_list: request.authorization_list,
        blob_versioned_hashes: request.blob_versioned_hashes,
        chain_id: request.chain_id,
    })
}

/// A call that did not succeed, as geth reports it.
fn failed(outcome: CallOutcome) -> ErrorObjectOwned {
    match outcome {
        CallOutcome::Revert { output, .. } => {
            let message = match revert_reason(&output) {
                Some(reason) => format!("execution reverted: {reason}"),
                None => "execution reverted".to_string(),
            };
            ErrorObjectOwned::owned(REVERTED, message, Some(output))
        }
        CallOutcome::Halt { reason, .. } => {
            ErrorObjectOwned::owned(crate::error::SERVER_ERROR, reason, None::<()>)
        }
        CallOutcome::Success { .. } => ErrorObjectOwned::owned(
            crate::error::SERVER_ERROR,
            "internal error: a successful call reported as failed",
            None::<()>,
        ),
    }
}

pub(crate) fn call_error(e: CallError) -> ErrorObjectOwned {
    let code = match e {
        CallError::State(_) => jsonrpsee::types::error::INTERNAL_ERROR_CODE,
        CallError::InvalidInput(_) => jsonrpsee::types::error::INVALID_PARAMS_CODE,
        CallError::Trace(_) => crate::error::SERVER_ERROR,
        _ => crate::error::SERVER_ERROR,
    };
    ErrorObjectOwned::owned(code, e.to_string(), None::<()>)
}

impl EthRpc {
    /// Runs `f` with a caller on the state after block `id`.
    pub(crate) fn with_caller<T>(
        &self,
        id: Option<BlockId>,
        state_overrides: Option<&StateOverride>,
        block_overrides: Option<BlockOverridesJson>,
        f: impl FnOnce(&Caller<'_>) -> Result<T, ErrorObjectOwned>,
    ) -> Result<T, ErrorObjectOwned> {
        let block_overrides = block_overrides.map(|o| overrides(Some(o))).transpose()?;
        let id = id.unwrap_or(BlockId::latest());
        let (header, state) = self.block_state(id)?;
        let chain = &self.node().chain;
        let caller = Caller::new(
            &chain.config,
            &header,
            chain.store.clone(),
            Arc::new(state),
            self.limits.gas_cap,
        )
        .with_deadline(self.deadline())
        .with_overrides(state_overrides, block_overrides)
        .map_err(call_error)?;
        f(&caller)
    }
}

impl EthCallApiServer for EthRpc {
    fn call(
        &self,
        request: TransactionRequest,
        block: Option<BlockId>,
        state_overrides: Option<StateOverride>,
        block_overrides: Option<BlockOverridesJson>,
    ) -> Result<Bytes, ErrorObjectOwned> {
        let input = input(request)?;
        crate::handler::in_place(|| {
            self.with_caller(
                block,
                state_overrides.as_ref(),
                block_overrides,
                |caller| match caller.call(&input).map_err(call_error)? {
                    CallOutcome::Success { output, .. } => Ok(output),
                    failure => Err(failed(failure)),
                },
            )
        })
    }

    fn estimate_gas(
        &self,
        request: TransactionRequest,
        block: Option<BlockId>,
        state_overrides: Option<StateOverride>,
        block_overrides: Option<BlockOverridesJson>,
    ) -> Result<U64, ErrorObjectOwned> {
        let input = input(request)?;
        self.with_caller(block, state_overrides.as_ref(), block_overrides, |caller| {
            match caller.estimate_gas(&input) {
                Ok(gas) => Ok(U64::from(gas)),
                Err(EstimateError::Failed(outcome)) => Err(failed(outcome)),
                Err(EstimateError::Call(e)) => Err(call_error(e)),
            }
        })
    }

    fn create_access_list(
        &self,
        request: TransactionRequest,
        block: Option<BlockId>,
    ) -> Result<Value, ErrorObjectOwned> {
        let input = input(request)?;
        self.with_caller(block, None, None, |caller| {
            let (list, gas_used, failure) =
                caller.create_access_list(&input).map_err(call_error)?;
            let mut out = serde_json::Map::new();
            out.insert("accessList".into(), json!(list));
            if let Some(failure) = failure {
                let error = match failure {
                    CallOutcome::Halt { reason, .. } => reason,
                    _ => "execution reverted".to_string(),
                };
                out.insert("error".into(), json!(error));
            }
            out.insert("gasUsed".into(), json!(format!("{gas_used:#x}")));
            Ok(Value::Object(out))
        })
    }
}
