//! Node paths (the bits from the root to a node) and the store keys made from them.

use crate::key::{Stem, STEM_LEN};

/// A path of up to 248 bits, most significant bit of byte 0 first; bits past `len` are 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct NodePath {
    bits: [u8; STEM_LEN],
    len: u8,
}

impl NodePath {
    /// The root's (empty) path.
    pub(crate) const ROOT: Self = Self { bits: [0; STEM_LEN], len: 0 };

    /// The first `len` bits of `stem`: where a node at depth `len` on the way to it sits.
    pub(crate) fn of_stem(stem: &Stem, len: usize) -> Self {
        debug_assert!(len <= STEM_LEN * 8);
        let mut bits = [0u8; STEM_LEN];
        let full = len / 8;
        bits[..full].copy_from_slice(&stem[..full]);
        if !len.is_multiple_of(8) {
            bits[full] = stem[full] & (0xff << (8 - len % 8));
        }
        Self { bits, len: len as u8 }
    }

    /// Number of bits (the depth of the node at this path).
    pub(crate) fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// This path extended by one bit (0 = left, 1 = right).
    pub(crate) fn child(&self, bit: u8) -> Self {
        let mut child = *self;
        let len = self.len();
        if bit == 1 {
            child.bits[len / 8] |= 0x80 >> (len % 8);
        }
        child.len += 1;
        child
    }

    /// Whether this path is a prefix of `stem`.
    pub(crate) fn is_prefix_of(&self, stem: &Stem) -> bool {
        *self == Self::of_stem(stem, self.len())
    }

    /// The store key: the path bits packed into `ceil(len / 8)` bytes, then one byte
    /// holding `len`. The root's key is the single byte `0x00`.
    pub(crate) fn key(&self) -> Vec<u8> {
        let bytes = self.len().div_ceil(8);
        let mut key = Vec::with_capacity(bytes + 1);
        key.extend_from_slice(&self.bits[..bytes]);
        key.push(self.len);
        key
    }
}

impl std::fmt::Display for NodePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.len == 0 {
            return f.write_str("root");
        }
        for index in 0..self.len() {
            let bit = (self.bits[index / 8] >> (7 - index % 8)) & 1;
            write!(f, "{bit}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        assert_eq!(NodePath::ROOT.key(), vec![0]);
        let path = NodePath::ROOT.child(1).child(0).child(1);
        assert_eq!(path.key(), vec![0b1010_0000, 3]);
        assert_eq!(path.to_string(), "101");
        let mut stem = [0xffu8; STEM_LEN];
        stem[1] = 0;
        assert_eq!(NodePath::of_stem(&stem, 11).key(), vec![0xff, 0x00, 11]);
        assert_eq!(NodePath::of_stem(&stem, 248).key().len(), 32);
        assert!(NodePath::of_stem(&stem, 9).is_prefix_of(&stem));
        assert!(!NodePath::ROOT.child(0).is_prefix_of(&stem));
    }
}
