//! The `eth_`, `net_` and `web3_` methods served without authentication, and how they
//! resolve block numbers, tags and hashes. State queries read the state after any block
//! within the readable history (`ethrex_storage::history`).

use crate::api::{EthApiServer, NetApiServer, RpcBlock, Web3ApiServer};
use crate::error::{EthApiError, EthResult};
pub(crate) use crate::handler::EthRpc;
use alloy_eips::{BlockId, BlockNumberOrTag};
use alloy_primitives::{Address, Bytes, B256, U256, U64};
use alloy_rpc_types_eth::SyncStatus;
use ethrex_common::Header;
use ethrex_storage::history::{HistoricalState, HistoryError};
use jsonrpsee::core::RpcResult;
use jsonrpsee::types::ErrorObjectOwned;

pub(crate) mod call;
pub(crate) mod config;
pub(crate) mod fees;
pub(crate) mod filter_registry;
pub(crate) mod filters;
pub(crate) mod logs;
pub(crate) mod overrides;
pub(crate) mod proof;
pub(crate) mod pubsub;
pub(crate) mod simulate;
pub(crate) mod state;
pub(crate) mod transactions;

use crate::error::SERVER_ERROR;

fn err(code: i32, message: impl Into<String>) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(code, message.into(), None::<()>)
}

fn internal(e: impl std::fmt::Display) -> ErrorObjectOwned {
    err(jsonrpsee::types::error::INTERNAL_ERROR_CODE, e.to_string())
}

impl EthRpc {
    /// The sync's progress while the node syncs from peers, `None` otherwise
    /// (`eth_syncing` and the `syncing` subscription).
    pub(crate) fn sync_info(&self) -> Option<alloy_rpc_types_eth::SyncInfo> {
        let p = self.node.network.get().and_then(|n| n.sync_progress())?;
        Some(alloy_rpc_types_eth::SyncInfo {
            starting_block: U256::from(p.starting),
            current_block: U256::from(p.current),
            highest_block: U256::from(p.highest),
            ..Default::default()
        })
    }

    /// The head's number (0 before genesis is stored).
    fn head_number(&self) -> RpcResult<u64> {
        Ok(self
            .node
            .chain
            .store
            .head_header()
            .map_err(internal)?
            .map(|h| h.number)
            .unwrap_or_default())
    }

    /// A block number or tag, resolved to a canonical block's hash: `latest` and
    /// `pending` are the head, `safe` and `finalized` what the consensus layer last named
    /// (an error before it named one); `None` past the head.
    pub(crate) fn resolve_tag(&self, tag: BlockNumberOrTag) -> EthResult<Option<B256>> {
        let store = &self.node.chain.store;
        let label = |name: &'static str, hash: B256| {
            if hash.is_zero() {
                Err(EthApiError::LabelNotSet(name))
            } else {
                Ok(Some(hash))
            }
        };
        match tag {
            BlockNumberOrTag::Latest | BlockNumberOrTag::Pending => Ok(store.head()?),
            BlockNumberOrTag::Safe => label("safe", self.node.labels.lock().safe),
            BlockNumberOrTag::Finalized => label("finalized", self.node.labels.lock().finalized),
            BlockNumberOrTag::Earliest => Ok(store.canonical_hash(0)?),
            BlockNumberOrTag::Number(n) => Ok(store.canonical_hash(n)?),
        }
    }

    /// A block id (number, tag, or hash with `requireCanonical`), resolved to a stored
    /// block's hash and header; `None` if there is no such block.
    pub(crate) fn resolve(&self, id: BlockId) -> EthResult<Option<(B256, Header)>> {
        let store = &self.node.chain.store;
        let hash = match id {
            BlockId::Number(tag) => self.resolve_tag(tag)?,
            BlockId::Hash(h) => {
                let hash = h.block_hash;
                if h.require_canonical == Some(true) {
                    let number = store.block_number(&hash)?;
                    if number.and_then(|n| store.canonical_hash(n).ok().flatten()) != Some(hash) {
                        return Err(EthApiError::InvalidParams(format!(
                            "hash {hash} is not currently canonical"
                        )));
                    }
                }
                Some(hash)
            }
        };
        let Some(hash) = hash else { return Ok(None) };
        Ok(store.header(&hash)?.map(|h| (hash, h)))
    }

    /// The state after block `id` (default `latest`).
    pub(crate) fn state(&self, id: Option<BlockId>) -> EthResult<HistoricalState> {
        Ok(self.block_state(id.unwrap_or(BlockId::latest()))?.1)
    }

    /// Block `id`'s header and the state after it, for the same block (a tag resolved
    /// once: the head may move between two resolutions).
    pub(crate) fn block_state(&self, id: BlockId) -> EthResult<(Header, HistoricalState)> {
        let (hash, header) = self.resolve(id)?.ok_or(EthApiError::HeaderNotFound)?;
        Ok((header, self.node.chain.store.state_at(hash)?))
    }

    /// `run` again when the head moved under it in a way its state view cannot follow
    /// (the tries of the head it read, or its block leaving the canonical chain), a few
    /// times: a block lands about once a slot, so the next run almost always settles.
    /// A run that failed otherwise while the head moved is run again too: a trie node
    /// the new head replaced reads as missing, which is the move, not a broken store.
    pub(crate) fn again_if_head_moved<T>(
        &self,
        mut run: impl FnMut() -> EthResult<T>,
    ) -> EthResult<T> {
        const RUNS: usize = 3;
        let store = &self.node.chain.store;
        let mut runs = 1;
        loop {
            let before = store.head()?;
            match run() {
                Err(EthApiError::History(HistoryError::HeadMoved)) if runs < RUNS => runs += 1,
                Err(_) if runs < RUNS && store.head()? != before => runs += 1,
                done => return done,
            }
        }
    }

    /// The stored block `hash` in its RPC form; `None` if it is not stored.
    fn block(&self, hash: &B256, full: bool) -> RpcResult<Option<RpcBlock>> {
        let Some(block) = self.node.chain.store.block(hash).map_err(internal)? else {
            return Ok(None);
        };
        Ok(Some(crate::block::rpc_block(&block, *hash, full)))
    }
}

impl EthApiServer for EthRpc {
    fn chain_id(&self) -> RpcResult<U64> {
        Ok(U64::from(self.node.chain.config.chain_id()))
    }

    fn syncing(&self) -> RpcResult<SyncStatus> {
        Ok(match self.sync_info() {
            None => SyncStatus::None,
            Some(info) => SyncStatus::Info(Box::new(info)),
        })
    }

    fn block_number(&self) -> RpcResult<U64> {
        Ok(U64::from(self.head_number()?))
    }

    fn block_by_number(
        &self,
        number: BlockNumberOrTag,
        full_transactions: Option<bool>,
    ) -> RpcResult<Option<RpcBlock>> {
        match self.resolve_tag(number)? {
            Some(hash) => self.block(&hash, full_transactions.unwrap_or(false)),
            None => Ok(None),
        }
    }

    fn block_by_hash(
        &self,
        hash: B256,
        full_transactions: Option<bool>,
    ) -> RpcResult<Option<RpcBlock>> {
        self.block(&hash, full_transactions.unwrap_or(false))
    }

    fn balance(&self, address: Address, block: Option<BlockId>) -> RpcResult<U256> {
        let account = self.state(block)?.account(&address).map_err(EthApiError::from)?;
        Ok(account.map(|a| a.balance).unwrap_or_default())
    }

    fn send_raw_transaction(&self, raw: Bytes) -> RpcResult<B256> {
        let tx =
            ethrex_txpool::decode_network(&raw).map_err(|e| err(SERVER_ERROR, e.to_string()))?;
        // As geth by default: a signature valid on every chain is not taken over RPC.
        if alloy_consensus::Transaction::chain_id(&tx).is_none() {
            return Err(err(
                SERVER_ERROR,
                "only replay-protected (EIP-155) transactions allowed over RPC",
            ));
        }
        let added = self.node.admit(tx.clone()).map_err(|e| err(SERVER_ERROR, e.to_string()))?;
        if let Some(network) = self.node.network.get() {
            network.broadcast_transactions(vec![tx]);
        }
        Ok(added.hash())
    }

    fn transaction_count(&self, address: Address, block: Option<BlockId>) -> RpcResult<U64> {
        if block == Some(BlockId::Number(BlockNumberOrTag::Pending)) {
            let accounts = crate::node::HeadAccounts(&self.node.chain.store);
            return Ok(U64::from(self.node.pool.pending_nonce(&address, &accounts)));
        }
        let account = self.state(block)?.account(&address).map_err(EthApiError::from)?;
        Ok(U64::from(account.map(|a| a.nonce).unwrap_or_default()))
    }

    fn code(&self, address: Address, block: Option<BlockId>) -> RpcResult<Bytes> {
        let account = self.state(block)?.account(&address).map_err(EthApiError::from)?;
        let store = &self.node.chain.store;
        Ok(match account {
            Some(a) => store.code(&a.code_hash).map_err(internal)?.unwrap_or_default(),
            None => Bytes::new(),
        })
    }

    fn storage_at(
        &self,
        address: Address,
        slot: String,
        block: Option<BlockId>,
    ) -> RpcResult<B256> {
        let slot = storage_key(&slot)?;
        let value = self.state(block)?.storage(&address, &slot).map_err(EthApiError::from)?;
        Ok(B256::from(value))
    }
}
/// A storage key as geth reads one: hex with an optional `0x`, at most 32 bytes, an odd
/// digit count padded on the left.
pub(crate) fn storage_key(text: &str) -> EthResult<U256> {
    let digits = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")).unwrap_or(text);
    if digits.len() > 64 {
        return Err(EthApiError::InvalidParams(format!(
            "storage key too long (want at most 32 bytes): {text:?}"
        )));
    }
    if digits.is_empty() {
        return Ok(U256::ZERO);
    }
    U256::from_str_radix(digits, 16)
        .map_err(|_| EthApiError::InvalidParams(format!("invalid hex in storage key: {text:?}")))
}

impl NetApiServer for EthRpc {
    fn version(&self) -> RpcResult<String> {
        Ok(self.node.chain.config.chain_id().to_string())
    }
}

impl Web3ApiServer for EthRpc {
    fn client_version(&self) -> RpcResult<String> {
        Ok(format!(
            "ethrex/v{}/{}-{}/rust",
            env!("CARGO_PKG_VERSION"),
            std::env::consts::OS,
            std::env::consts::ARCH
        ))
    }
}
