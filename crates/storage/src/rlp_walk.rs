//! Walking RLP lists without decoding them: an item's header gives its length, so a
//! reader can find one item of a stored list (a transaction of a body, a receipt) and
//! skip the rest. alloy-rlp decodes whole values only, so the walk is written here.

use alloy_rlp::Header;

/// The items of an RLP list's payload, each with its header, in order.
pub(crate) struct Items<'a>(pub(crate) &'a [u8]);

impl<'a> Iterator for Items<'a> {
    type Item = Result<&'a [u8], alloy_rlp::Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.0.is_empty() {
            return None;
        }
        match split_item(self.0) {
            Ok((item, rest)) => {
                self.0 = rest;
                Some(Ok(item))
            }
            Err(e) => {
                self.0 = &[];
                Some(Err(e))
            }
        }
    }
}

/// The payload of the RLP list at the start of `bytes`.
pub(crate) fn list_payload(bytes: &[u8]) -> Result<&[u8], alloy_rlp::Error> {
    let mut buf = bytes;
    let header = Header::decode(&mut buf)?;
    if !header.list {
        return Err(alloy_rlp::Error::UnexpectedString);
    }
    buf.get(..header.payload_length).ok_or(alloy_rlp::Error::InputTooShort)
}

/// The first RLP item of `bytes` (header included) and what follows it.
pub(crate) fn split_item(bytes: &[u8]) -> Result<(&[u8], &[u8]), alloy_rlp::Error> {
    let mut buf = bytes;
    let header = Header::decode(&mut buf)?;
    let len = bytes.len() - buf.len() + header.payload_length;
    if len > bytes.len() {
        return Err(alloy_rlp::Error::InputTooShort);
    }
    Ok(bytes.split_at(len))
}
