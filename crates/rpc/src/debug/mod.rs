//! The `debug_` methods: stored blocks, headers, receipts and transactions in their
//! consensus encodings (here) and traces (`trace.rs`; the struct logger's answer in
//! `struct_logs.rs`).

mod struct_logs;
pub(crate) mod trace;

use crate::error::{EthApiError, EthResult};
use crate::handler::EthRpc;
use crate::params::StrictHash;
use alloy_eips::eip2718::Encodable2718;
use alloy_eips::BlockId;
use alloy_primitives::Bytes;
use jsonrpsee::proc_macros::rpc;

/// The `debug_getRaw*` methods.
#[rpc(server, namespace = "debug")]
pub trait DebugRawApi {
    /// `debug_getRawBlock`: the block's RLP; an error for an unknown block, as geth.
    #[method(name = "getRawBlock", blocking)]
    fn raw_block(&self, block: BlockId) -> EthResult<Bytes>;

    /// `debug_getRawHeader`: the header's RLP.
    #[method(name = "getRawHeader", blocking)]
    fn raw_header(&self, block: BlockId) -> EthResult<Bytes>;

    /// `debug_getRawReceipts`: each receipt's EIP-2718 encoding.
    #[method(name = "getRawReceipts", blocking)]
    fn raw_receipts(&self, block: BlockId) -> EthResult<Vec<Bytes>>;

    /// `debug_getRawTransaction`: a canonical transaction's EIP-2718 encoding (a blob
    /// transaction without its sidecar); empty for an unknown one, as geth.
    #[method(name = "getRawTransaction", blocking)]
    fn raw_transaction(&self, hash: StrictHash) -> EthResult<Bytes>;
}

impl DebugRawApiServer for EthRpc {
    fn raw_block(&self, block: BlockId) -> EthResult<Bytes> {
        let (_, block) = self.block_by_id(block)?.ok_or(EthApiError::HeaderNotFound)?;
        Ok(alloy_rlp::encode(&block).into())
    }

    fn raw_header(&self, block: BlockId) -> EthResult<Bytes> {
        let (_, header) = self.resolve(block)?.ok_or(EthApiError::HeaderNotFound)?;
        Ok(alloy_rlp::encode(&header).into())
    }

    fn raw_receipts(&self, block: BlockId) -> EthResult<Vec<Bytes>> {
        let (hash, _) = self.resolve(block)?.ok_or(EthApiError::HeaderNotFound)?;
        let receipts = self.node().chain.store.receipts(&hash)?.unwrap_or_default();
        Ok(receipts.iter().map(|r| r.encoded_2718().into()).collect())
    }

    fn raw_transaction(&self, StrictHash(hash): StrictHash) -> EthResult<Bytes> {
        let location = self.node().chain.store.transaction_location(&hash)?;
        Ok(location.map(|l| l.body.transactions[l.index].encoded_2718().into()).unwrap_or_default())
    }
}
