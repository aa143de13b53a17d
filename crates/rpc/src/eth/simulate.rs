//! `eth_simulateV1`: the request parsed as geth parses it (unknown keys in block and
//! account overrides refused), run by `ethrex_vm::simulate` on the state after the named
//! block, and answered as geth answers: each block in `eth_getBlockByNumber`'s form with
//! its `calls` beside it.
//!
//! The state root of a simulated block is the named block's state with everything
//! simulated so far applied. The store's trie is the head's, so for an older block the
//! changes since it are reverted first (from the change sets history reads); the root of
//! that reverted state is checked against the block's own before any block is answered.

use crate::block::{quantity, rpc_block_with_senders};
use crate::error::{EthApiError, EthResult};
use crate::eth::overrides::{overrides, BlockOverridesJson};
use crate::handler::EthRpc;
use crate::receipt::{log_json, BlockContext};
use alloy_eips::BlockId;
use alloy_primitives::{Address, Bytes, B256, U256};
use alloy_rpc_types_eth::state::StateOverride;
use alloy_rpc_types_eth::TransactionRequest;
use ethrex_common::Header;
use ethrex_storage::history::{HistoricalState, HistoryError};
use ethrex_vm::simulate::{SimBlockInput, SimOptions, SimulateError, SimulatedBlock, Simulator};
use ethrex_vm::AccountChange;
use jsonrpsee::proc_macros::rpc;
use jsonrpsee::types::ErrorObjectOwned;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The request's first parameter.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SimulatePayload {
    #[serde(default)]
    block_state_calls: Vec<SimBlockJson>,
    #[serde(default)]
    trace_transfers: bool,
    #[serde(default)]
    validation: bool,
    #[serde(default)]
    return_full_transactions: bool,
}

/// One block of the request.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SimBlockJson {
    #[serde(default)]
    block_overrides: Option<BlockOverridesJson>,
    /// alloy's account override refuses unknown keys, as geth does.
    #[serde(default)]
    state_overrides: Option<StateOverride>,
    #[serde(default)]
    calls: Vec<TransactionRequest>,
}

/// `eth_simulateV1`.
#[rpc(server, namespace = "eth")]
pub trait EthSimulateApi {
    /// Simulates blocks of calls on the state after `block` (default `latest`).
    #[method(name = "simulateV1", blocking)]
    fn simulate_v1(
        &self,
        payload: SimulatePayload,
        block: Option<BlockId>,
    ) -> Result<Vec<Value>, ErrorObjectOwned>;
}

fn simulate_error(e: SimulateError) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(e.code(), e.to_string(), None::<()>)
}

/// The base state with the changes since it reverted, as account changes against the
/// head's state: what the head's trie needs to give the older block's root.
pub(crate) fn reverted(state: &HistoricalState) -> EthResult<BTreeMap<Address, AccountChange>> {
    let (accounts, storage) = state.changes_since();
    let mut out: BTreeMap<Address, AccountChange> = BTreeMap::new();
    let touched = accounts.into_iter().chain(storage.iter().map(|(a, _, _)| *a));
    for address in touched {
        if let std::collections::btree_map::Entry::Vacant(slot) = out.entry(address) {
            let info = state.account(&address)?.map(|a| (a.nonce, a.balance, a.code_hash));
            slot.insert(AccountChange { address, info, storage_wiped: false, storage: Vec::new() });
        }
    }
    for (address, slot, value) in storage {
        if let Some(change) = out.get_mut(&address) {
            change.storage.push((slot, value));
        }
    }
    Ok(out)
}

/// `simulated` (changes against the base state) on top of `reverted` (the base state
/// against the head's).
fn against_head(
    reverted: &BTreeMap<Address, AccountChange>,
    simulated: &[AccountChange],
) -> Vec<AccountChange> {
    let mut merged = reverted.clone();
    for change in simulated {
        match merged.get_mut(&change.address) {
            Some(base) if !change.storage_wiped => {
                base.info = change.info;
                let mut slots: BTreeMap<U256, U256> = base.storage.iter().copied().collect();
                slots.extend(change.storage.iter().copied());
                base.storage = slots.into_iter().collect();
            }
            _ => {
                merged.insert(change.address, change.clone());
            }
        }
    }
    merged.into_values().collect()
}

impl EthRpc {
    /// The simulated blocks, or why the simulation failed (the inner error), or why it
    /// could not be run (the outer one).
    fn simulate(
        &self,
        payload: SimulatePayload,
        block: Option<BlockId>,
    ) -> EthResult<Result<Vec<Value>, SimulateError>> {
        let id = block.unwrap_or(BlockId::latest());
        let (base, state) = self.block_state(id)?;
        // The roots are computed on the tries of the head the view is at now.
        let at = state.head();
        let head = self.node().chain.store.header(&at)?;
        let head_root = head.ok_or(EthApiError::HeaderNotFound)?.state_root;
        let mut inputs = Vec::with_capacity(payload.block_state_calls.len());
        for block in payload.block_state_calls {
            let calls = block
                .calls
                .into_iter()
                .map(crate::eth::call::input)
                .collect::<EthResult<Vec<_>>>()?;
            inputs.push(SimBlockInput {
                overrides: overrides(block.block_overrides)?,
                state: block.state_overrides,
                calls,
            });
        }
        let chain = &self.node().chain;
        let reverted = if state.is_head() { BTreeMap::new() } else { reverted(&state)? };
        let store = chain.store.clone();
        let roots = |changes: &[AccountChange], codes: &[(B256, Bytes)]| {
            let changes = against_head(&reverted, changes);
            ethrex_blockchain::state_root::compute_state_root(
                &store,
                head_root,
                &changes,
                codes.to_vec(),
            )
            .map_err(ethrex_vm::error::DatabaseError::new)
        };
        if !reverted.is_empty() {
            let root = roots(&[], &[]).map_err(|e| EthApiError::Internal(e.to_string()))?;
            if root != base.state_root {
                return Err(EthApiError::Internal(format!(
                    "the state of block {} cannot be rebuilt: root {root}, expected {}",
                    base.number, base.state_root
                )));
            }
        }
        let options = SimOptions {
            validation: payload.validation,
            trace_transfers: payload.trace_transfers,
            gas_cap: self.limits.gas_cap,
        };
        let simulator =
            Simulator::new(&chain.config, &base, store.clone(), Arc::new(state), &roots, options)
                .with_deadline(self.deadline());
        let blocks = simulator.run(inputs);
        // The roots were computed on the head's trie: it must not have moved meanwhile
        // (a run that failed reading a trie node the new head replaced is run again too;
        // one that ran out of time is answered so, not run for that long again).
        let timed_out = matches!(blocks, Err(SimulateError::Timeout(_)));
        if !timed_out && chain.store.head()? != Some(at) {
            return Err(EthApiError::History(HistoryError::HeadMoved));
        }
        let blocks = match blocks {
            Ok(blocks) => blocks,
            Err(e) => return Ok(Err(e)),
        };
        Ok(Ok(blocks.iter().map(|b| block_json(b, payload.return_full_transactions)).collect()))
    }
}

/// A simulated block as geth answers it.
fn block_json(simulated: &SimulatedBlock, full: bool) -> Value {
    let SimulatedBlock { block, hash, senders, calls } = simulated;
    let mut out = rpc_block_with_senders(block, *hash, full, Some(senders));
    let header: &Header = &block.header;
    let at = BlockContext {
        hash: *hash,
        number: header.number,
        timestamp: header.timestamp,
        base_fee: header.base_fee_per_gas,
        blob_base_fee: None,
    };
    let calls: Vec<Value> = calls
        .iter()
        .zip(&block.body.transactions)
        .enumerate()
        .map(|(index, (call, tx))| {
            let logs: Vec<Value> = call
                .logs
                .iter()
                .map(|l| log_json(&l.log, &at, *tx.tx_hash(), index, l.index as usize))
                .collect();
            let mut result = json!({
                "returnData": call.return_data,
                "logs": logs,
                "gasUsed": quantity(call.gas_used),
                "maxUsedGas": quantity(call.max_used_gas),
                "status": quantity(u8::from(call.failure.is_none())),
            });
            if let Some(failure) = &call.failure {
                let mut error = json!({ "message": failure.message, "code": failure.code });
                if let Some(data) = &failure.data {
                    error["data"] = json!(data);
                }
                result["error"] = error;
            }
            result
        })
        .collect();
    out.insert("calls", Value::Array(calls));
    json!(out)
}

impl EthSimulateApiServer for EthRpc {
    fn simulate_v1(
        &self,
        payload: SimulatePayload,
        block: Option<BlockId>,
    ) -> Result<Vec<Value>, ErrorObjectOwned> {
        self.again_if_head_moved(|| self.simulate(payload.clone(), block))?.map_err(simulate_error)
    }
}
