//! Nibble paths and the yellow-paper hex-prefix (compact) encoding.
//!
//! Paths are kept unpacked (one nibble per byte): splitting and merging paths
//! at arbitrary nibble offsets is the common operation, and unpacked slices
//! make that a plain slice operation.

/// Expands raw key bytes into one nibble per byte.
pub(crate) fn unpack(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(b >> 4);
        out.push(b & 0x0f);
    }
    out
}

/// Length of the shared prefix of two nibble paths.
#[inline]
pub(crate) fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// `[first] ++ rest`, used when a branch collapses into its only child.
pub(crate) fn prepend(first: u8, rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(rest.len() + 1);
    out.push(first);
    out.extend_from_slice(rest);
    out
}

/// `a ++ b`, used when an extension absorbs its (collapsed) child.
pub(crate) fn concat(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    out.extend_from_slice(a);
    out.extend_from_slice(b);
    out
}

/// Byte length of the hex-prefix encoding of `nibbles`.
#[inline]
pub(crate) fn hp_len(nibbles: &[u8]) -> usize {
    nibbles.len() / 2 + 1
}

/// Appends the hex-prefix encoding of `nibbles` to `out`.
pub(crate) fn hp_encode(nibbles: &[u8], leaf: bool, out: &mut Vec<u8>) {
    let flag = if leaf { 2u8 } else { 0u8 };
    let odd = nibbles.len() % 2 == 1;
    let rest = if odd {
        out.push(((flag | 1) << 4) | nibbles[0]);
        &nibbles[1..]
    } else {
        out.push(flag << 4);
        nibbles
    };
    for pair in rest.chunks_exact(2) {
        out.push((pair[0] << 4) | pair[1]);
    }
}

/// Decodes a hex-prefix encoded path into `(nibbles, is_leaf)`.
/// Returns `None` for an empty input, an unknown flag or non-zero padding.
pub(crate) fn hp_decode(bytes: &[u8]) -> Option<(Vec<u8>, bool)> {
    let (&first, rest) = bytes.split_first()?;
    let flag = first >> 4;
    if flag > 3 {
        return None;
    }
    let leaf = flag & 2 != 0;
    let odd = flag & 1 != 0;
    let mut out = Vec::with_capacity(rest.len() * 2 + 1);
    if odd {
        out.push(first & 0x0f);
    } else if first & 0x0f != 0 {
        return None;
    }
    for b in rest {
        out.push(b >> 4);
        out.push(b & 0x0f);
    }
    Some((out, leaf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hp_roundtrip_and_known_encodings() {
        // Examples from the yellow paper appendix C.
        let cases: &[(&[u8], bool, &[u8])] = &[
            (&[1, 2, 3, 4, 5], false, &[0x11, 0x23, 0x45]),
            (&[0, 1, 2, 3, 4, 5], false, &[0x00, 0x01, 0x23, 0x45]),
            (&[0, 0xf, 1, 0xc, 0xb, 8], true, &[0x20, 0x0f, 0x1c, 0xb8]),
            (&[0xf, 1, 0xc, 0xb, 8], true, &[0x3f, 0x1c, 0xb8]),
            (&[], true, &[0x20]),
            (&[], false, &[0x00]),
        ];
        for (nibbles, leaf, expected) in cases {
            let mut out = Vec::new();
            hp_encode(nibbles, *leaf, &mut out);
            assert_eq!(&out[..], *expected);
            assert_eq!(out.len(), hp_len(nibbles));
            assert_eq!(hp_decode(&out), Some((nibbles.to_vec(), *leaf)));
        }
    }

    #[test]
    fn hp_decode_rejects_garbage() {
        assert_eq!(hp_decode(&[]), None);
        assert_eq!(hp_decode(&[0x40]), None);
        assert_eq!(hp_decode(&[0x01, 0x23]), None);
    }

    #[test]
    fn unpack_and_prefix() {
        assert_eq!(unpack(&[0xab, 0x01]), vec![0xa, 0xb, 0x0, 0x1]);
        assert_eq!(common_prefix(&[1, 2, 3], &[1, 2, 4, 5]), 2);
        assert_eq!(common_prefix(&[], &[1]), 0);
        assert_eq!(prepend(7, &[1, 2]), vec![7, 1, 2]);
        assert_eq!(concat(&[1], &[2, 3]), vec![1, 2, 3]);
    }
}
