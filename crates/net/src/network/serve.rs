//! Answering peers' requests from the store, within the serving limits (1024 items, a
//! ~2 MiB soft cap, truncated from the tail; eth/70 receipts paged inside a block).

use crate::eth::{
    fill_response, receipt_69_length, resolve_header_request, BlockAccessLists, BlockBodies,
    BlockHeaders, EthMessage, GetReceipts, PooledTransactions, Receipts, SOFT_RESPONSE_LIMIT,
};
use alloy_rlp::Encodable;
use ethrex_storage::{Store, StoreError};

/// The answer to `request`, a request message.
pub(crate) fn answer(
    host: &dyn crate::ChainHost,
    version: u32,
    request: &EthMessage,
) -> Result<EthMessage, StoreError> {
    let store = &host.chain().store;
    Ok(match request {
        EthMessage::GetBlockHeaders(r) => {
            // Lookups see only what the store holds; a read error ends the list there
            // (and is logged): a peer gets a shorter answer, never a wrong one.
            let by_hash = |hash| store.header(&hash).unwrap_or_else(log_none);
            let by_number = |number| {
                let hash = store.canonical_hash(number).unwrap_or_else(log_none)?;
                store.header(&hash).unwrap_or_else(log_none)
            };
            let headers =
                resolve_header_request(r.origin, r.amount, r.skip, r.reverse, by_hash, by_number);
            EthMessage::BlockHeaders(BlockHeaders { request_id: r.request_id, headers })
        }
        EthMessage::GetBlockBodies(r) => {
            let (mut bodies, mut bytes) = (Vec::new(), 0usize);
            for hash in r.hashes.iter().take(crate::eth::MAX_RESPONSE_ITEMS) {
                if let Some(body) = store.body(hash)? {
                    bytes = bytes.saturating_add(body.length());
                    bodies.push(body);
                    if bytes >= SOFT_RESPONSE_LIMIT {
                        break;
                    }
                }
            }
            EthMessage::BlockBodies(BlockBodies { request_id: r.request_id, bodies })
        }
        EthMessage::GetReceipts(r) => receipts(store, version, r)?,
        EthMessage::GetBlockAccessLists(r) => {
            // In request order; a block we do not have (or have no BAL for) is `None`,
            // sent as the RLP empty string.
            let mut lists = Vec::new();
            for hash in &r.hashes {
                lists.push(store.bal(hash)?);
            }
            let access_lists = fill_response(lists, |l| l.as_ref().map_or(1, |l| l.length()));
            EthMessage::BlockAccessLists(BlockAccessLists {
                request_id: r.request_id,
                access_lists,
            })
        }
        // In request order, unknown ones skipped, within the response limits (read one at
        // a time: a blob transaction with its sidecar is up to a megabyte).
        EthMessage::GetPooledTransactions(r) => {
            let mut bytes = 0;
            let raw: Vec<alloy_primitives::Bytes> = r
                .hashes
                .iter()
                .filter_map(|h| host.pooled_transaction(h))
                .map(|tx| alloy_primitives::Bytes::from(alloy_rlp::encode(tx)))
                .take_while(|t| {
                    let more = bytes < SOFT_RESPONSE_LIMIT;
                    bytes += t.len();
                    more
                })
                .collect();
            let transactions = fill_response(raw, |t| t.len());
            EthMessage::PooledTransactions(PooledTransactions {
                request_id: r.request_id,
                transactions,
            })
        }
        other => {
            return Err(StoreError::Invalid(format!("not a request: code {:#x}", other.code())))
        }
    })
}

fn log_none<T>(e: StoreError) -> Option<T> {
    tracing::warn!(%e, "store read failed while serving a peer");
    None
}

/// Receipts of the requested blocks. eth/69: whole blocks within the limits. eth/70: the
/// first block from `first_block_receipt_index` on, and a block cut where the size limit
/// falls (`last_block_incomplete`), so a block of any size can be fetched in pages.
fn receipts(store: &Store, version: u32, r: &GetReceipts) -> Result<EthMessage, StoreError> {
    let mut lists = Vec::new();
    let mut bytes = 0usize;
    let mut incomplete = false;
    for (i, hash) in r.hashes.iter().enumerate().take(crate::eth::MAX_RESPONSE_ITEMS) {
        let Some(receipts) = store.receipts(hash)? else { break };
        if version < 70 {
            bytes = bytes.saturating_add(receipts.iter().map(receipt_69_length).sum());
            lists.push(receipts);
            if bytes >= SOFT_RESPONSE_LIMIT {
                break;
            }
            continue;
        }
        let skip = if i == 0 { r.first_block_receipt_index as usize } else { 0 };
        let mut list = Vec::new();
        for receipt in receipts.into_iter().skip(skip) {
            // At least one receipt per answer, however large, so paging always advances.
            if bytes >= SOFT_RESPONSE_LIMIT && !(lists.is_empty() && list.is_empty()) {
                incomplete = true;
                break;
            }
            bytes = bytes.saturating_add(receipt_69_length(&receipt));
            list.push(receipt);
        }
        lists.push(list);
        if incomplete || bytes >= SOFT_RESPONSE_LIMIT {
            break;
        }
    }
    Ok(EthMessage::Receipts(Receipts {
        request_id: r.request_id,
        last_block_incomplete: incomplete,
        receipts: lists,
    }))
}
