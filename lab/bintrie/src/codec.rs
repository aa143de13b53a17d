//! Stored node blobs.
//!
//! A stored node is either a stem or a *group*: the `group_depth` levels of internal nodes
//! below an internal node whose depth is a multiple of `group_depth`. Values:
//!
//! - stem: `0x02 | stem (31) | bitmap (32 bytes, bit i = MSB-first bit i, set when value
//!   i is present) | the present values (32 bytes each) by increasing sub-index`;
//! - group: `0x01 | group_depth (1) | exits`, where an exit is a non-internal node inside
//!   the group (a stem), or any node right below its last level (a stem or the next
//!   group), written as `depth (1) | position (1) | hash (32)`: `depth` in
//!   `1..=group_depth` is its depth below the group's root, `position` the `depth` path
//!   bits from the root to it, as a number. Exits are sorted left to right; the internal
//!   nodes of the group are exactly the proper prefixes of their paths, so the group's
//!   shape is rebuilt from them and only the exits' hashes are stored.
//!
//! The hash of a stored node is kept by its parent (the root's by the caller), never in
//! its own blob.

use crate::key::{Stem, STEM_LEN};
use crate::node::{InternalNode, Node, StemNode};
use alloy_primitives::B256;

pub(crate) const GROUP_TAG: u8 = 0x01;
const STEM_TAG: u8 = 0x02;
const EXIT_LEN: usize = 2 + 32;
const STEM_HEADER_LEN: usize = 1 + STEM_LEN + 32;

/// Group depths a store can be laid out with.
pub const GROUP_DEPTHS: std::ops::RangeInclusive<u8> = 1..=8;

/// A node leaving a group (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GroupExit {
    pub(crate) depth: u8,
    pub(crate) position: u8,
    pub(crate) hash: B256,
}

/// The blob of a stem node.
pub(crate) fn encode_stem(node: &StemNode) -> Vec<u8> {
    let mut blob = Vec::with_capacity(STEM_HEADER_LEN + 32 * node.values.len());
    blob.push(STEM_TAG);
    blob.extend_from_slice(&node.stem);
    let mut bitmap = [0u8; 32];
    for (index, _) in &node.values {
        bitmap[usize::from(*index / 8)] |= 0x80 >> (index % 8);
    }
    blob.extend_from_slice(&bitmap);
    for (_, value) in &node.values {
        blob.extend_from_slice(value.as_slice());
    }
    blob
}

/// The blob of a group from its exits (in left-to-right order).
pub(crate) fn encode_group(group_depth: u8, exits: &[GroupExit]) -> Vec<u8> {
    let mut blob = Vec::with_capacity(2 + EXIT_LEN * exits.len());
    blob.push(GROUP_TAG);
    blob.push(group_depth);
    for exit in exits {
        blob.push(exit.depth);
        blob.push(exit.position);
        blob.extend_from_slice(exit.hash.as_slice());
    }
    blob
}

/// A decoded blob.
#[derive(Debug)]
pub(crate) enum Decoded {
    /// A stem node (clean, stored).
    Stem(Box<StemNode>),
    /// A group's root internal node (clean), exits as [`Node::Hashed`].
    Group {
        /// The group depth the blob was written with.
        group_depth: u8,
        /// The group's root; its hash is left unset.
        root: Box<InternalNode>,
    },
}

/// Decodes a blob, refusing anything [`encode_stem`] / [`encode_group`] would not write.
pub(crate) fn decode(blob: &[u8]) -> Result<Decoded, String> {
    match blob.first() {
        Some(&STEM_TAG) => decode_stem(blob).map(Decoded::Stem),
        Some(&GROUP_TAG) => decode_group(blob),
        Some(tag) => Err(format!("unknown node tag {tag:#04x}")),
        None => Err("empty blob".into()),
    }
}

fn decode_stem(blob: &[u8]) -> Result<Box<StemNode>, String> {
    if blob.len() < STEM_HEADER_LEN {
        return Err(format!("stem blob of {} bytes", blob.len()));
    }
    let stem: Stem = blob[1..1 + STEM_LEN].try_into().expect("31 bytes");
    let bitmap = &blob[1 + STEM_LEN..STEM_HEADER_LEN];
    let present: Vec<u8> =
        (0..=255u8).filter(|i| bitmap[usize::from(i / 8)] & (0x80 >> (i % 8)) != 0).collect();
    if present.is_empty() {
        return Err("stem blob without values".into());
    }
    let data = &blob[STEM_HEADER_LEN..];
    if data.len() != 32 * present.len() {
        return Err(format!("stem blob: {} values but {} value bytes", present.len(), data.len()));
    }
    let values = present
        .into_iter()
        .zip(data.chunks_exact(32))
        .map(|(index, value)| (index, B256::from_slice(value)))
        .collect();
    Ok(Box::new(StemNode { stem, values, hash: None, dirty: false, stored: true }))
}

fn decode_group(blob: &[u8]) -> Result<Decoded, String> {
    let Some(&group_depth) = blob.get(1) else {
        return Err("group blob without a depth".into());
    };
    if !GROUP_DEPTHS.contains(&group_depth) {
        return Err(format!("group depth {group_depth}"));
    }
    let entries = &blob[2..];
    if entries.is_empty() || !entries.len().is_multiple_of(EXIT_LEN) {
        return Err(format!("group blob of {} bytes", blob.len()));
    }
    let mut root = Box::new(InternalNode::default());
    let mut previous: Option<u16> = None;
    for entry in entries.chunks_exact(EXIT_LEN) {
        let exit =
            GroupExit { depth: entry[0], position: entry[1], hash: B256::from_slice(&entry[2..]) };
        if exit.depth == 0 || exit.depth > group_depth {
            return Err(format!("exit depth {} in a group of depth {group_depth}", exit.depth));
        }
        if u16::from(exit.position) >> exit.depth != 0 {
            return Err(format!("exit position {} at depth {}", exit.position, exit.depth));
        }
        if exit.hash.is_zero() {
            return Err("exit with a zero hash".into());
        }
        let aligned = u16::from(exit.position) << (group_depth - exit.depth);
        if previous.is_some_and(|p| p >= aligned) {
            return Err("exits out of order".into());
        }
        previous = Some(aligned);
        attach(&mut root, exit)?;
    }
    Ok(Decoded::Group { group_depth, root })
}

/// Places `exit` under `root`, creating the internal nodes on its way.
fn attach(root: &mut InternalNode, exit: GroupExit) -> Result<(), String> {
    let bit = |level: u8| (exit.position >> (exit.depth - 1 - level)) & 1;
    let mut node = root;
    for level in 0..exit.depth - 1 {
        let child = node.child_mut(bit(level));
        if matches!(child, Node::Empty) {
            *child = Node::Internal(Box::default());
        }
        node = match child {
            Node::Internal(inner) => inner,
            _ => return Err("exit below another exit".into()),
        };
    }
    let slot = node.child_mut(bit(exit.depth - 1));
    if !matches!(slot, Node::Empty) {
        return Err("exit above another exit".into());
    }
    *slot = Node::Hashed(exit.hash);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stem_round_trip() {
        let node = StemNode::new([7; STEM_LEN], &[(0, B256::ZERO), (200, B256::repeat_byte(9))]);
        let blob = encode_stem(&node);
        assert_eq!(blob.len(), STEM_HEADER_LEN + 64);
        let Decoded::Stem(decoded) = decode(&blob).unwrap() else { panic!("not a stem") };
        assert_eq!(decoded.stem, node.stem);
        assert_eq!(decoded.values, node.values);
        assert!(decode(&blob[..blob.len() - 1]).is_err());
    }

    #[test]
    fn group_round_trip_and_refusals() {
        let exits = [
            GroupExit { depth: 1, position: 0, hash: B256::repeat_byte(1) },
            GroupExit { depth: 3, position: 0b100, hash: B256::repeat_byte(2) },
            GroupExit { depth: 3, position: 0b111, hash: B256::repeat_byte(3) },
        ];
        let blob = encode_group(3, &exits);
        let Decoded::Group { group_depth, root } = decode(&blob).unwrap() else {
            panic!("not a group")
        };
        assert_eq!(group_depth, 3);
        assert!(matches!(root.left, Node::Hashed(h) if h == B256::repeat_byte(1)));
        let Node::Internal(right) = &root.right else { panic!("right is not internal") };
        assert!(matches!(right.left, Node::Internal(_)));
        assert!(matches!(right.right, Node::Internal(_)));

        let reversed = encode_group(3, &[exits[1], exits[0]]);
        assert!(decode(&reversed).unwrap_err().contains("order"));
        let overlapping = encode_group(
            3,
            &[exits[0], GroupExit { depth: 2, position: 0b01, hash: B256::repeat_byte(4) }],
        );
        assert!(decode(&overlapping).is_err());
        let too_deep = encode_group(2, &[exits[1]]);
        assert!(decode(&too_deep).is_err());
        assert!(decode(&encode_group(9, &exits)).is_err());
        assert!(decode(&encode_group(3, &[])).is_err());
        assert!(decode(&[0x07]).is_err());
    }
}
