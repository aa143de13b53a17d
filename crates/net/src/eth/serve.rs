//! Serving helpers: building responses within the serving limits, and resolving a
//! `GetBlockHeaders` query over the store's lookups.

use super::messages::HashOrNumber;
use super::{MAX_REQUEST_ITEMS, SOFT_RESPONSE_LIMIT};
use alloy_primitives::B256;
use alloy_rlp::Encodable;
use ethrex_common::Header;

/// Takes items from `items` while the response has fewer than [`MAX_REQUEST_ITEMS`] items
/// and their sizes (as `size` reports, typically the encoded length) add up to less than
/// [`SOFT_RESPONSE_LIMIT`]: the item that crosses the soft limit is still included, the
/// rest of the request is dropped (truncation from the tail, as geth does). The iterator
/// is not advanced past the last item taken, so a lazy lookup stops there.
///
/// To stop at the first missing item, pass `lookups.map_while(|x| x)`; to skip missing
/// ones, `lookups.flatten()`.
pub fn fill_response<T>(
    items: impl IntoIterator<Item = T>,
    mut size: impl FnMut(&T) -> usize,
) -> Vec<T> {
    let mut out = Vec::new();
    let mut bytes = 0usize;
    for item in items {
        bytes = bytes.saturating_add(size(&item));
        out.push(item);
        if out.len() >= MAX_REQUEST_ITEMS || bytes >= SOFT_RESPONSE_LIMIT {
            break;
        }
    }
    out
}

/// Resolves a `GetBlockHeaders` query: `amount` headers from `origin`, `skip` blocks
/// apart, towards lower numbers when `reverse`. Stops at the first missing block, at
/// [`MAX_REQUEST_ITEMS`] headers, past [`SOFT_RESPONSE_LIMIT`] bytes, or when the next
/// block number would leave the `u64` range (any `skip` is safe).
///
/// Lookups after the origin are by number (canonical chain), except for a reverse query
/// without skip from a hash, which follows parent hashes (and so also serves a side
/// chain). A query from a hash that is not on the canonical chain, going forward or with
/// a skip, yields only that header.
pub fn resolve_header_request(
    origin: HashOrNumber,
    amount: u64,
    skip: u64,
    reverse: bool,
    mut lookup_by_hash: impl FnMut(B256) -> Option<Header>,
    mut lookup_by_number: impl FnMut(u64) -> Option<Header>,
) -> Vec<Header> {
    let limit = usize::try_from(amount).unwrap_or(usize::MAX).min(MAX_REQUEST_ITEMS);
    if limit == 0 {
        return Vec::new();
    }
    let first = match origin {
        HashOrNumber::Hash(hash) => lookup_by_hash(hash),
        HashOrNumber::Number(number) => lookup_by_number(number),
    };
    let Some(first) = first else {
        return Vec::new();
    };
    let follow_parents = matches!(origin, HashOrNumber::Hash(_)) && reverse && skip == 0;
    let mut canonical = true;
    if let HashOrNumber::Hash(hash) = origin {
        if !follow_parents && limit > 1 {
            canonical = lookup_by_number(first.number).is_some_and(|h| h.hash_slow() == hash);
        }
    }
    let step = skip.checked_add(1);
    let mut bytes = first.length();
    let mut out = vec![first];
    while canonical && out.len() < limit && bytes < SOFT_RESPONSE_LIMIT {
        let Some(last) = out.last() else { break };
        let next = if follow_parents {
            if last.number == 0 {
                break;
            }
            lookup_by_hash(last.parent_hash)
        } else {
            let number = match (step, reverse) {
                (Some(step), true) => last.number.checked_sub(step),
                (Some(step), false) => last.number.checked_add(step),
                (None, _) => None,
            };
            let Some(number) = number else { break };
            lookup_by_number(number)
        };
        let Some(next) = next else { break };
        bytes = bytes.saturating_add(next.length());
        out.push(next);
    }
    out
}
