//! The `eth_`, `net_` and `web3_` methods served without authentication. State queries
//! answer for the head block: the flat state holds the head's state only.

use crate::api::{EthApiServer, NetApiServer, RpcBlock, TxpoolApiServer, Web3ApiServer};
use crate::node::Node;
use alloy_eips::BlockNumberOrTag;
use alloy_primitives::{Address, Bytes, B256, U256, U64};
use alloy_rpc_types_eth::SyncStatus;
use jsonrpsee::core::RpcResult;
use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::RpcModule;
use std::sync::Arc;

const SERVER_ERROR: i32 = -32000;

fn err(code: i32, message: impl Into<String>) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(code, message.into(), None::<()>)
}

fn internal(e: impl std::fmt::Display) -> ErrorObjectOwned {
    err(jsonrpsee::types::error::INTERNAL_ERROR_CODE, e.to_string())
}

/// The `eth_`, `net_` and `web3_` methods over the shared node state.
#[derive(Clone)]
pub(crate) struct EthRpc {
    node: Arc<Node>,
}

impl EthRpc {
    /// The shared node state.
    pub(crate) fn node(&self) -> &Node {
        &self.node
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

    /// A block number or tag, resolved to a block number: `latest`, `safe`, `finalized`
    /// and `pending` are the head.
    fn resolve_number(&self, tag: BlockNumberOrTag) -> RpcResult<u64> {
        Ok(match tag {
            BlockNumberOrTag::Latest
            | BlockNumberOrTag::Safe
            | BlockNumberOrTag::Finalized
            | BlockNumberOrTag::Pending => self.head_number()?,
            BlockNumberOrTag::Earliest => 0,
            BlockNumberOrTag::Number(n) => n,
        })
    }

    /// State reads are served for the head only; older blocks' state is not kept flat.
    /// A tag naming the head is served as is: resolving it to a number and comparing that
    /// with a second read of the head would race with an import between the two reads.
    fn require_head_state(&self, tag: Option<BlockNumberOrTag>) -> RpcResult<()> {
        let number = match tag {
            None
            | Some(
                BlockNumberOrTag::Latest
                | BlockNumberOrTag::Safe
                | BlockNumberOrTag::Finalized
                | BlockNumberOrTag::Pending,
            ) => return Ok(()),
            Some(BlockNumberOrTag::Earliest) => 0,
            Some(BlockNumberOrTag::Number(n)) => n,
        };
        if number == self.head_number()? {
            Ok(())
        } else {
            Err(err(
                SERVER_ERROR,
                "historical state is not available: only the head block's state is served",
            ))
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
        let progress = self.node.network.get().and_then(|n| n.sync_progress());
        Ok(match progress {
            None => SyncStatus::None,
            Some(p) => SyncStatus::Info(Box::new(alloy_rpc_types_eth::SyncInfo {
                starting_block: U256::from(p.starting),
                current_block: U256::from(p.current),
                highest_block: U256::from(p.highest),
                ..Default::default()
            })),
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
        let number = self.resolve_number(number)?;
        match self.node.chain.store.canonical_hash(number).map_err(internal)? {
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

    fn balance(&self, address: Address, block: Option<BlockNumberOrTag>) -> RpcResult<U256> {
        self.require_head_state(block)?;
        let account = self.node.chain.store.account(&address).map_err(internal)?;
        Ok(account.map(|a| a.balance).unwrap_or_default())
    }

    fn send_raw_transaction(&self, raw: Bytes) -> RpcResult<B256> {
        let pool = &self.node.pool;
        let tx =
            ethrex_txpool::decode_network(&raw).map_err(|e| err(SERVER_ERROR, e.to_string()))?;
        // As geth by default: a signature valid on every chain is not taken over RPC.
        if alloy_consensus::Transaction::chain_id(&tx).is_none() {
            return Err(err(
                SERVER_ERROR,
                "only replay-protected (EIP-155) transactions allowed over RPC",
            ));
        }
        let accounts = crate::node::HeadAccounts(&self.node.chain.store);
        let added =
            pool.add(tx.clone(), &accounts).map_err(|e| err(SERVER_ERROR, e.to_string()))?;
        if let Some(network) = self.node.network.get() {
            network.broadcast_transactions(vec![tx]);
        }
        Ok(added.hash())
    }

    fn transaction_count(
        &self,
        address: Address,
        block: Option<BlockNumberOrTag>,
    ) -> RpcResult<U64> {
        if block == Some(BlockNumberOrTag::Pending) {
            let accounts = crate::node::HeadAccounts(&self.node.chain.store);
            return Ok(U64::from(self.node.pool.pending_nonce(&address, &accounts)));
        }
        self.require_head_state(block)?;
        let account = self.node.chain.store.account(&address).map_err(internal)?;
        Ok(U64::from(account.map(|a| a.nonce).unwrap_or_default()))
    }

    fn code(&self, address: Address, block: Option<BlockNumberOrTag>) -> RpcResult<Bytes> {
        self.require_head_state(block)?;
        let store = &self.node.chain.store;
        Ok(match store.account(&address).map_err(internal)? {
            Some(a) => store.code(&a.code_hash).map_err(internal)?.unwrap_or_default(),
            None => Bytes::new(),
        })
    }

    fn storage_at(
        &self,
        address: Address,
        slot: U256,
        block: Option<BlockNumberOrTag>,
    ) -> RpcResult<B256> {
        self.require_head_state(block)?;
        let value = self.node.chain.store.storage(&address, &slot).map_err(internal)?;
        Ok(B256::from(value))
    }
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

/// The unauthenticated `eth_`, `net_` and `web3_` methods over the shared node state.
pub(crate) fn module(node: Arc<Node>) -> RpcModule<()> {
    let rpc = EthRpc { node };
    let mut module = RpcModule::new(());
    // The three namespaces are disjoint, so merging cannot find a name twice.
    module.merge(EthApiServer::into_rpc(rpc.clone())).expect("method names are unique");
    module.merge(NetApiServer::into_rpc(rpc.clone())).expect("method names are unique");
    module.merge(TxpoolApiServer::into_rpc(rpc.clone())).expect("method names are unique");
    module.merge(Web3ApiServer::into_rpc(rpc)).expect("method names are unique");
    module
}
