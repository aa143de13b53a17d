//! RLP helpers shared by the message decoders: list headers, bounded lists, list
//! encoding from an already-encoded payload.

use super::EthError;
use alloy_rlp::{BufMut, Decodable, Header};

/// Decodes a list header at the front of `buf` and returns the list's payload, advancing
/// `buf` past the whole list.
pub(super) fn list_payload<'a>(buf: &mut &'a [u8]) -> Result<&'a [u8], EthError> {
    let header = Header::decode(buf)?;
    if !header.list {
        return Err(alloy_rlp::Error::UnexpectedString.into());
    }
    // `Header::decode` checked that the payload is in `buf`.
    let (payload, rest) = buf.split_at(header.payload_length);
    *buf = rest;
    Ok(payload)
}

/// Decodes the whole of `payload` as one list and returns its payload: the message's
/// outer list, with nothing after it.
pub(super) fn outer_list(payload: &[u8]) -> Result<&[u8], EthError> {
    let mut buf = payload;
    let inner = list_payload(&mut buf)?;
    if !buf.is_empty() {
        return Err(EthError::TrailingBytes);
    }
    Ok(inner)
}

/// Fails unless a list's payload was consumed entirely.
pub(super) fn finish(rest: &[u8]) -> Result<(), EthError> {
    if rest.is_empty() {
        Ok(())
    } else {
        Err(alloy_rlp::Error::ListLengthMismatch { expected: 0, got: rest.len() }.into())
    }
}

/// A per-message allowance of items shared by several lists (transactions over all
/// bodies, receipts over all blocks).
pub(super) struct Budget {
    left: usize,
    max: usize,
}

impl Budget {
    /// An allowance of `max` items.
    pub(super) fn new(max: usize) -> Self {
        Budget { left: max, max }
    }

    /// Charges one item.
    pub(super) fn charge(&mut self) -> Result<(), EthError> {
        self.left = self.left.checked_sub(1).ok_or(EthError::TooManyItems { max: self.max })?;
        Ok(())
    }
}

/// Decodes a list of `T`, failing once it has more than `max` items; each item is also
/// charged to `budget`, when given.
pub(super) fn decode_list<T, F>(
    buf: &mut &[u8],
    max: usize,
    mut budget: Option<&mut Budget>,
    mut item: F,
) -> Result<Vec<T>, EthError>
where
    F: FnMut(&mut &[u8]) -> Result<T, EthError>,
{
    let mut payload = list_payload(buf)?;
    let mut out = Vec::new();
    while !payload.is_empty() {
        if out.len() >= max {
            return Err(EthError::TooManyItems { max });
        }
        if let Some(budget) = budget.as_deref_mut() {
            budget.charge()?;
        }
        out.push(item(&mut payload)?);
    }
    Ok(out)
}

/// Decodes a list of `T` with its `Decodable` impl, at most `max` items.
pub(super) fn decode_vec<T: Decodable>(buf: &mut &[u8], max: usize) -> Result<Vec<T>, EthError> {
    decode_list(buf, max, None, |b| Ok(T::decode(b)?))
}

/// Decodes one `T` with its `Decodable` impl.
pub(super) fn decode<T: Decodable>(buf: &mut &[u8]) -> Result<T, EthError> {
    Ok(T::decode(buf)?)
}

/// The raw RLP item at the front of `buf` (header included), advancing past it.
pub(super) fn raw_item<'a>(buf: &mut &'a [u8]) -> Result<&'a [u8], EthError> {
    let start = *buf;
    let header = Header::decode(buf)?;
    let consumed = start.len() - buf.len() + header.payload_length;
    *buf = &buf[header.payload_length..];
    Ok(&start[..consumed])
}

/// Writes a list header for `payload` and then the payload.
pub(super) fn write_list(payload: &[u8], out: &mut dyn BufMut) {
    Header { list: true, payload_length: payload.len() }.encode(out);
    out.put_slice(payload);
}

/// Encodes a list whose items are written by `items` into a fresh buffer.
pub(super) fn list_of(items: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut payload = Vec::new();
    items(&mut payload);
    let mut out = Vec::with_capacity(payload.len() + 9);
    write_list(&payload, &mut out);
    out
}
