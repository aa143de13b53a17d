//! The little RLP reading and writing discovery needs: splitting a list into its raw items
//! (so extra items can be ignored, EIP-8) and reading byte strings and small integers from
//! them, never panicking on arbitrary input.

use alloy_rlp::{Encodable, Header};

/// Why RLP data was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad RLP: {0}")]
pub struct RlpError(pub &'static str);

/// Splits `buf` into its first item (header included) and the rest.
pub(crate) fn split_item(buf: &[u8]) -> Result<(&[u8], &[u8]), RlpError> {
    let mut rest = buf;
    let header = Header::decode(&mut rest).map_err(|_| RlpError("bad header"))?;
    let header_len = buf.len() - rest.len();
    let total = header_len.checked_add(header.payload_length).ok_or(RlpError("length overflow"))?;
    if total > buf.len() {
        return Err(RlpError("item longer than input"));
    }
    Ok(buf.split_at(total))
}

/// The payload of a single item, and whether it is a list.
fn payload(item: &[u8]) -> Result<(bool, &[u8]), RlpError> {
    let mut rest = item;
    let header = Header::decode(&mut rest).map_err(|_| RlpError("bad header"))?;
    if header.payload_length > rest.len() {
        return Err(RlpError("item longer than input"));
    }
    Ok((header.list, &rest[..header.payload_length]))
}

/// The items of the list at the start of `buf` (trailing data after it is ignored).
pub(crate) fn list_items(buf: &[u8]) -> Result<Vec<&[u8]>, RlpError> {
    let (item, _) = split_item(buf)?;
    let (is_list, mut body) = payload(item)?;
    if !is_list {
        return Err(RlpError("expected a list"));
    }
    let mut items = Vec::new();
    while !body.is_empty() {
        let (first, rest) = split_item(body)?;
        items.push(first);
        body = rest;
    }
    Ok(items)
}

/// The contents of a byte-string item.
pub(crate) fn bytes(item: &[u8]) -> Result<&[u8], RlpError> {
    let (is_list, body) = payload(item)?;
    if is_list {
        return Err(RlpError("expected a string, found a list"));
    }
    Ok(body)
}

/// A big-endian unsigned integer of at most 8 bytes.
pub(crate) fn uint(item: &[u8]) -> Result<u64, RlpError> {
    let body = bytes(item)?;
    if body.len() > 8 {
        return Err(RlpError("integer too large"));
    }
    Ok(body.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
}

/// A 16-bit port.
pub(crate) fn port(item: &[u8]) -> Result<u16, RlpError> {
    u16::try_from(uint(item)?).map_err(|_| RlpError("port too large"))
}

/// A fixed-size byte string.
pub(crate) fn fixed<const N: usize>(item: &[u8]) -> Result<[u8; N], RlpError> {
    bytes(item)?.try_into().map_err(|_| RlpError("wrong length"))
}

/// Wraps already-encoded items into a list.
pub(crate) fn list(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 4);
    Header { list: true, payload_length: payload.len() }.encode(&mut out);
    out.extend_from_slice(payload);
    out
}

/// Appends the encoding of `value` to `out`.
pub(crate) fn put<T: Encodable + ?Sized>(out: &mut Vec<u8>, value: &T) {
    value.encode(out);
}
