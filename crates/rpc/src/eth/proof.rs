//! `eth_getProof` (EIP-1186) after any block within the history window.
//!
//! The store keeps the head's tries only. For an older block the changes since it (its
//! change sets, `HistoricalState::changes_since`) are reverted on the head's tries in
//! memory (`compute_state_update_detached`): the nodes that differ come from that
//! commit, the rest are the head's, read from the store by position and hash. The
//! rebuilt root must equal the block's `stateRoot` before any proof is answered, and the
//! head must not move during the request (if it does, the request is made again:
//! `EthRpc::again_if_head_moved`).

use crate::error::{EthApiError, EthResult};
use crate::eth::simulate::reverted;
use crate::handler::EthRpc;
use alloy_eips::BlockId;
use alloy_primitives::{keccak256, Address, B256, U256};
use ethrex_storage::history::HistoryError;
use ethrex_storage::Store;
use ethrex_trie::{NodeReader, NodeRlp, TrieError};
use serde_json::{json, Value};
use std::collections::HashMap;

/// The head's trie nodes, with the nodes of an older state over them (by hash).
struct Rebuilt<'a> {
    store: &'a Store,
    nodes: HashMap<B256, NodeRlp>,
}

impl NodeReader for Rebuilt<'_> {
    fn get_node(
        &self,
        owner: Option<&B256>,
        path: &[u8],
        hash: &B256,
    ) -> Result<Option<NodeRlp>, TrieError> {
        match self.nodes.get(hash) {
            Some(node) => Ok(Some(node.clone())),
            None => self.store.get_node(owner, path, hash),
        }
    }
}

impl EthRpc {
    /// The proof of `address` and its slots `keys` (each with the text it was asked as)
    /// after block `id`.
    pub(crate) fn proof_at(
        &self,
        address: Address,
        keys: Vec<(&String, U256)>,
        id: BlockId,
    ) -> EthResult<Value> {
        let store = &self.node().chain.store;
        let (header, state) = self.block_state(id)?;
        // The tries read are the head's the view is at now.
        let at = state.head();
        let head = store.header(&at)?.ok_or(EthApiError::HeaderNotFound)?;
        let nodes = if state.is_head() {
            HashMap::new()
        } else {
            let changes: Vec<_> = reverted(&state)?.into_values().collect();
            let (root, update) = ethrex_blockchain::state_root::compute_state_update_detached(
                store,
                head.state_root,
                &changes,
            )
            .map_err(|e| {
                EthApiError::Internal(format!("rebuilding block {}'s tries: {e}", header.number))
            })?;
            if root != header.state_root {
                return Err(EthApiError::Internal(format!(
                    "the tries of block {} cannot be rebuilt: root {root}, expected {}",
                    header.number, header.state_root
                )));
            }
            update
                .tries
                .into_iter()
                .flat_map(|t| t.into_hashed())
                .map(|(hash, rlp)| (hash, NodeRlp::from(rlp)))
                .collect()
        };
        let reader = Rebuilt { store, nodes };
        let trie_error = |e: TrieError| EthApiError::Internal(e.to_string());
        let hashed = keccak256(address);
        let account_proof = ethrex_trie::proof(&reader, None, header.state_root, hashed.as_slice())
            .map_err(trie_error)?;
        // An account that does not exist is answered with zero hashes, as geth answers it
        // (its slots proven against the empty trie).
        let found = state.account(&address)?;
        let account = found.unwrap_or_default();
        let storage_root = if account.storage_root.is_zero() {
            ethrex_trie::EMPTY_ROOT_HASH
        } else {
            account.storage_root
        };
        let mut storage_proof = Vec::with_capacity(keys.len());
        for (text, key) in keys {
            let slot = B256::from(key);
            let proof = ethrex_trie::proof(
                &reader,
                Some(&hashed),
                storage_root,
                keccak256(slot).as_slice(),
            )
            .map_err(trie_error)?;
            let value = state.storage(&address, &key)?;
            let digits = text.strip_prefix("0x").unwrap_or(text);
            let shown = if digits.len() == 64 { json!(slot) } else { json!(format!("{key:#x}")) };
            storage_proof
                .push(json!({"key": shown, "value": format!("{value:#x}"), "proof": proof}));
        }
        if store.head()? != Some(at) || state.head() != at {
            return Err(EthApiError::History(HistoryError::HeadMoved));
        }
        let (code_hash, storage_hash) = match found {
            None => (B256::ZERO, B256::ZERO),
            Some(a) if a.code_hash.is_zero() => (ethrex_common::KECCAK_EMPTY, storage_root),
            Some(a) => (a.code_hash, storage_root),
        };
        Ok(json!({
            "address": address,
            "accountProof": account_proof,
            "balance": format!("{:#x}", account.balance),
            "codeHash": code_hash,
            "nonce": format!("{:#x}", account.nonce),
            "storageHash": storage_hash,
            "storageProof": storage_proof,
        }))
    }
}
