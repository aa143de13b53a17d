//! Transactions and receipts: by hash (the canonical chain's transaction index, then
//! the pool), by block and position, whole blocks' receipts and transaction counts.

use crate::block::{RpcTransaction, TxLocation};
use crate::error::{EthApiError, EthResult};
use crate::handler::EthRpc;
use crate::params::StrictHash;
use crate::receipt::{block_receipts, BlockContext};
use alloy_eips::{BlockId, BlockNumberOrTag};
use alloy_primitives::{B256, U64};
use ethrex_common::{Block, Header};
use jsonrpsee::proc_macros::rpc;
use serde_json::Value;

/// The `eth_` methods on transactions and receipts.
#[rpc(server, namespace = "eth")]
pub trait EthTransactionsApi {
    /// `eth_getTransactionByHash`: a canonical or pooled transaction; `null` if neither.
    #[method(name = "getTransactionByHash", blocking)]
    fn transaction_by_hash(&self, hash: StrictHash) -> EthResult<Option<Value>>;

    /// `eth_getTransactionByBlockHashAndIndex`.
    #[method(name = "getTransactionByBlockHashAndIndex", blocking)]
    fn transaction_by_block_hash_and_index(
        &self,
        hash: B256,
        index: U64,
    ) -> EthResult<Option<Value>>;

    /// `eth_getTransactionByBlockNumberAndIndex`.
    #[method(name = "getTransactionByBlockNumberAndIndex", blocking)]
    fn transaction_by_block_number_and_index(
        &self,
        number: BlockNumberOrTag,
        index: U64,
    ) -> EthResult<Option<Value>>;

    /// `eth_getTransactionReceipt`: a canonical transaction's receipt; `null` otherwise.
    #[method(name = "getTransactionReceipt", blocking)]
    fn transaction_receipt(&self, hash: StrictHash) -> EthResult<Option<Value>>;

    /// `eth_getBlockReceipts`: every receipt of a block; `null` for an unknown block.
    #[method(name = "getBlockReceipts", blocking)]
    fn block_receipts(&self, block: BlockId) -> EthResult<Option<Vec<Value>>>;

    /// `eth_getBlockTransactionCountByHash`.
    #[method(name = "getBlockTransactionCountByHash", blocking)]
    fn block_transaction_count_by_hash(&self, hash: B256) -> EthResult<Option<U64>>;

    /// `eth_getBlockTransactionCountByNumber`.
    #[method(name = "getBlockTransactionCountByNumber", blocking)]
    fn block_transaction_count_by_number(&self, number: BlockNumberOrTag)
        -> EthResult<Option<U64>>;
}

impl EthRpc {
    /// The stored block `id` with its hash.
    pub(crate) fn block_by_id(&self, id: BlockId) -> EthResult<Option<(B256, Block)>> {
        let Some((hash, header)) = self.resolve(id)? else { return Ok(None) };
        let Some(body) = self.node().chain.store.body(&hash)? else { return Ok(None) };
        Ok(Some((hash, Block { header, body })))
    }

    /// What the receipts of block `hash` share.
    pub(crate) fn block_context(&self, hash: B256, header: &Header) -> BlockContext {
        let config = &self.node().chain.config;
        let blob_base_fee = header.excess_blob_gas.and_then(|excess| {
            config.blob_params_at(header.timestamp).map(|p| p.calc_blob_fee(excess))
        });
        BlockContext {
            hash,
            number: header.number,
            timestamp: header.timestamp,
            base_fee: header.base_fee_per_gas,
            blob_base_fee,
        }
    }

    /// The transaction at `index` of `block` (hash `hash`), in RPC form.
    fn transaction_in(&self, hash: B256, block: &Block, index: usize) -> EthResult<Option<Value>> {
        let Some(tx) = block.body.transactions.get(index) else { return Ok(None) };
        let at = TxLocation {
            block_hash: hash,
            block_number: block.header.number,
            block_timestamp: block.header.timestamp,
            base_fee: block.header.base_fee_per_gas,
            index,
        };
        let tx = RpcTransaction::new(tx, at).ok_or_else(|| {
            EthApiError::Internal(format!(
                "stored transaction {index} of block {hash} has no sender"
            ))
        })?;
        serde_json::to_value(tx).map(Some).map_err(|e| EthApiError::Internal(e.to_string()))
    }
}

impl EthTransactionsApiServer for EthRpc {
    fn transaction_by_hash(&self, StrictHash(hash): StrictHash) -> EthResult<Option<Value>> {
        let store = &self.node().chain.store;
        if let Some(location) = store.transaction_location(&hash)? {
            let header = store.header(&location.block_hash)?.ok_or(EthApiError::HeaderNotFound)?;
            let block = Block { header, body: location.body };
            return self.transaction_in(location.block_hash, &block, location.index);
        }
        let pool = &self.node().pool;
        Ok(pool.get(&hash).map(|pooled| crate::txpool::pending_json(&pooled, pool.head().base_fee)))
    }

    fn transaction_by_block_hash_and_index(
        &self,
        hash: B256,
        index: U64,
    ) -> EthResult<Option<Value>> {
        let Some((hash, block)) = self.block_by_id(BlockId::from(hash))? else { return Ok(None) };
        self.transaction_in(hash, &block, index.to::<usize>())
    }

    fn transaction_by_block_number_and_index(
        &self,
        number: BlockNumberOrTag,
        index: U64,
    ) -> EthResult<Option<Value>> {
        let Some((hash, block)) = self.block_by_id(BlockId::Number(number))? else {
            return Ok(None);
        };
        self.transaction_in(hash, &block, index.to::<usize>())
    }

    fn transaction_receipt(&self, StrictHash(hash): StrictHash) -> EthResult<Option<Value>> {
        let Some(stored) = self.node().chain.store.transaction_receipt(&hash)? else {
            return Ok(None);
        };
        let at = self.block_context(stored.block_hash, &stored.header);
        crate::receipt::receipt_json(
            &stored.transaction,
            &stored.receipt,
            stored.index,
            stored.gas_before,
            stored.logs_before,
            &at,
        )
        .map(Some)
        .ok_or_else(|| {
            EthApiError::Internal(format!(
                "the sender of stored transaction {hash} cannot be recovered"
            ))
        })
    }

    fn block_receipts(&self, id: BlockId) -> EthResult<Option<Vec<Value>>> {
        let Some((hash, block)) = self.block_by_id(id)? else { return Ok(None) };
        self.receipts_of(hash, &block).map(Some)
    }

    fn block_transaction_count_by_hash(&self, hash: B256) -> EthResult<Option<U64>> {
        let body = self.node().chain.store.body(&hash)?;
        Ok(body.map(|b| U64::from(b.transactions.len())))
    }

    fn block_transaction_count_by_number(
        &self,
        number: BlockNumberOrTag,
    ) -> EthResult<Option<U64>> {
        let Some(hash) = self.resolve_tag(number)? else { return Ok(None) };
        self.block_transaction_count_by_hash(hash)
    }
}

impl EthRpc {
    /// Every receipt of the stored block `hash`, in RPC form.
    fn receipts_of(&self, hash: B256, block: &Block) -> EthResult<Vec<Value>> {
        let receipts =
            self.node().chain.store.receipts(&hash)?.ok_or_else(|| {
                EthApiError::Internal(format!("receipts of block {hash} missing"))
            })?;
        block_receipts(block, &receipts, self.block_context(hash, &block.header))
            .ok_or_else(|| mismatch(hash))
    }
}

fn mismatch(hash: B256) -> EthApiError {
    EthApiError::Internal(format!("receipts of block {hash} do not match its transactions"))
}
