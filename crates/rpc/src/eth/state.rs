//! State in bulk and what the node can serve: `eth_getStorageValues` and
//! `eth_capabilities`.

use crate::error::{EthApiError, EthResult};
use crate::handler::EthRpc;
use alloy_eips::BlockId;
use alloy_primitives::{Address, B256};
use ethrex_storage::history::HISTORY_WINDOW;
use jsonrpsee::proc_macros::rpc;
use serde_json::{json, Map, Value};

/// The most slots one `eth_getStorageValues` may ask for (geth's limit).
const MAX_STORAGE_VALUES: usize = 1024;

/// The `eth_` methods on state in bulk and on the node's reach.
#[rpc(server, namespace = "eth")]
pub trait EthStateApi {
    /// `eth_getStorageValues`: `{address: [slot, ...]}` answered with the values, in the
    /// request's order, after a block (default `latest`).
    #[method(name = "getStorageValues", blocking)]
    fn storage_values(&self, slots: Map<String, Value>, block: Option<BlockId>)
        -> EthResult<Value>;

    /// `eth_getProof` (EIP-1186): the account and the slots with their Merkle proofs,
    /// after a block (default `latest`) within the history window (`eth/proof.rs`).
    #[method(name = "getProof", blocking)]
    fn proof(
        &self,
        address: Address,
        slots: Vec<String>,
        block: Option<BlockId>,
    ) -> EthResult<Value>;

    /// `eth_capabilities`: the head, and from which block each kind of data is served.
    #[method(name = "capabilities", blocking)]
    fn capabilities(&self) -> EthResult<Value>;
}

/// The most slots one `eth_getProof` may prove.
const MAX_PROOF_SLOTS: usize = 1024;

impl EthStateApiServer for EthRpc {
    fn proof(
        &self,
        address: Address,
        slots: Vec<String>,
        block: Option<BlockId>,
    ) -> EthResult<Value> {
        if slots.len() > MAX_PROOF_SLOTS {
            return Err(EthApiError::InvalidParams(format!(
                "too many slots (max {MAX_PROOF_SLOTS})"
            )));
        }
        let keys = slots
            .iter()
            .map(|text| super::storage_key(text).map(|k| (text, k)))
            .collect::<EthResult<Vec<_>>>()?;
        let id = block.unwrap_or(BlockId::latest());
        self.again_if_head_moved(|| self.proof_at(address, keys.clone(), id))
    }

    fn storage_values(
        &self,
        slots: Map<String, Value>,
        block: Option<BlockId>,
    ) -> EthResult<Value> {
        if slots.is_empty() {
            return Err(EthApiError::InvalidParams("empty request".into()));
        }
        let mut asked = Vec::with_capacity(slots.len());
        let mut total = 0;
        for (address, keys) in slots {
            let parsed: Address = address
                .parse()
                .map_err(|_| EthApiError::InvalidParams(format!("invalid address {address:?}")))?;
            let keys: Vec<B256> = serde_json::from_value(keys)
                .map_err(|e| EthApiError::InvalidParams(format!("slots of {address}: {e}")))?;
            total += keys.len();
            if total > MAX_STORAGE_VALUES {
                return Err(EthApiError::InvalidParams(format!(
                    "too many slots (max {MAX_STORAGE_VALUES})"
                )));
            }
            asked.push((address, parsed, keys));
        }
        let state = self.state(block)?;
        let mut out = Map::new();
        for (text, address, keys) in asked {
            let mut values = Vec::with_capacity(keys.len());
            for key in keys {
                let value = state.storage(&address, &key.into())?;
                values.push(json!(B256::from(value)));
            }
            out.insert(text.to_lowercase(), Value::Array(values));
        }
        Ok(Value::Object(out))
    }

    fn capabilities(&self) -> EthResult<Value> {
        let store = &self.node().chain.store;
        let head = store.head_header()?.ok_or(EthApiError::HeaderNotFound)?;
        let head_hash = store.head()?.ok_or(EthApiError::HeaderNotFound)?;
        let all = json!({"disabled": false, "oldestBlock": "0x0"});
        let state = json!({
            "disabled": false,
            "oldestBlock": format!("{:#x}", head.number.saturating_sub(HISTORY_WINDOW)),
            "deleteStrategy": {"type": "window", "retentionBlocks": format!("{HISTORY_WINDOW:#x}")},
        });
        Ok(json!({
            "head": {"number": format!("{:#x}", head.number), "hash": head_hash},
            "state": state,
            "tx": all,
            "logs": all,
            "receipts": all,
            "blocks": all,
            // Proofs of older states are rebuilt from the change sets (`eth/proof.rs`).
            "stateproofs": state,
        }))
    }
}
