//! In-memory node representation and its RLP encoding / decoding.

use crate::{
    nibbles::{hp_decode, hp_encode, hp_len},
    TrieError,
};
use alloy_primitives::{keccak256, B256};
use alloy_rlp::{length_of_length, Encodable, Header, EMPTY_STRING_CODE};

/// How a node is referenced from its parent: by hash when its RLP is >= 32
/// bytes, otherwise by embedding the RLP itself. Fixed-size so that caching it
/// per node costs no allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NodeRef {
    Hash(B256),
    Inline { len: u8, buf: [u8; 31] },
}

impl NodeRef {
    pub(crate) fn from_rlp(rlp: &[u8]) -> Self {
        if rlp.len() < 32 {
            let mut buf = [0u8; 31];
            buf[..rlp.len()].copy_from_slice(rlp);
            NodeRef::Inline { len: rlp.len() as u8, buf }
        } else {
            NodeRef::Hash(keccak256(rlp))
        }
    }

    /// Length of this reference inside the parent's RLP.
    #[inline]
    fn encoded_len(&self) -> usize {
        match self {
            NodeRef::Hash(_) => 33,
            NodeRef::Inline { len, .. } => *len as usize,
        }
    }

    #[inline]
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            NodeRef::Hash(h) => {
                out.push(EMPTY_STRING_CODE + 32);
                out.extend_from_slice(h.as_slice());
            }
            NodeRef::Inline { len, buf } => out.extend_from_slice(&buf[..*len as usize]),
        }
    }

    /// The hash a node would have as a trie root (roots are always hashed,
    /// even when short).
    pub(crate) fn root_hash(&self) -> B256 {
        match self {
            NodeRef::Hash(h) => *h,
            NodeRef::Inline { len, buf } => keccak256(&buf[..*len as usize]),
        }
    }
}

/// A child slot. `Hash` is a stored node that has not been needed yet; it is
/// only read from the store when a lookup or update walks through it.
#[derive(Debug, Default, Clone)]
pub(crate) enum Child {
    #[default]
    Empty,
    Hash(B256),
    Node(Box<Cell>),
}

/// A decoded node plus its cached reference. `cached == None` means the
/// reference must be recomputed; `dirty` means the node differs from what is in
/// the store (kept separate from `cached` because `root_hash` fills the cache
/// without persisting anything). `measured` is the size of the cell's subtree as the
/// last `PreservedTrie::keep` counted it, dropped whenever an update walks through the
/// cell (so a cell that still has it heads a subtree no update has touched since).
#[derive(Debug, Clone)]
pub(crate) struct Cell {
    pub(crate) node: Node,
    pub(crate) cached: Option<NodeRef>,
    pub(crate) dirty: bool,
    pub(crate) measured: Option<Measured>,
}

/// The memory a subtree of kept nodes takes, and how many nodes it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Measured {
    pub(crate) bytes: usize,
    pub(crate) nodes: usize,
}

impl Cell {
    pub(crate) fn new_dirty(node: Node) -> Box<Self> {
        Box::new(Cell { node, cached: None, dirty: true, measured: None })
    }

    #[inline]
    pub(crate) fn mark_dirty(&mut self) {
        self.cached = None;
        self.dirty = true;
        self.measured = None;
    }
}

#[derive(Debug, Clone)]
pub(crate) enum Node {
    Leaf { path: Vec<u8>, value: Vec<u8> },
    Extension { path: Vec<u8>, child: Child },
    Branch { children: Box<[Child; 16]>, value: Option<Vec<u8>> },
}

impl Node {
    pub(crate) fn empty_branch() -> Self {
        Node::Branch { children: Box::default(), value: None }
    }

    /// The child slot on `path` below this node (reached after `depth` nibbles of it),
    /// and the nibbles consumed to reach that slot; `None` where `path` leaves the node
    /// (a leaf, an extension off the path, a path that ends here or is no nibble path).
    pub(crate) fn child_on(&self, path: &[u8], depth: usize) -> Option<(&Child, usize)> {
        match self {
            Node::Leaf { .. } => None,
            Node::Extension { path: prefix, child } => {
                path.get(depth..)?.starts_with(prefix).then(|| (child, depth + prefix.len()))
            }
            Node::Branch { children, .. } => {
                Some((children.get(*path.get(depth)? as usize)?, depth + 1))
            }
        }
    }
}

/// Reference of an already-hashed child, `None` for an empty slot.
#[inline]
fn child_ref(child: &Child) -> Option<NodeRef> {
    match child {
        Child::Empty => None,
        Child::Hash(h) => Some(NodeRef::Hash(*h)),
        // Invariant upheld by the hasher: children are hashed before parents.
        Child::Node(cell) => Some(cell.cached.expect("child hashed before parent")),
    }
}

#[inline]
fn bytes_len(b: &[u8]) -> usize {
    b.length()
}

#[inline]
fn path_len(path: &[u8]) -> usize {
    let n = hp_len(path);
    // A one-byte hex-prefix is always < 0x80 (flag <= 3), so it encodes as itself.
    if n == 1 {
        1
    } else {
        length_of_length(n) + n
    }
}

#[inline]
fn write_path(path: &[u8], leaf: bool, out: &mut Vec<u8>) {
    let n = hp_len(path);
    if n > 1 {
        Header { list: false, payload_length: n }.encode(out);
    }
    hp_encode(path, leaf, out);
}

/// Appends the RLP of `node` to `out`. All node-children must carry a cached
/// reference.
pub(crate) fn encode(node: &Node, out: &mut Vec<u8>) {
    match node {
        Node::Leaf { path, value } => {
            let payload = path_len(path) + bytes_len(value);
            Header { list: true, payload_length: payload }.encode(out);
            write_path(path, true, out);
            value.as_slice().encode(out);
        }
        Node::Extension { path, child } => {
            let r = child_ref(child);
            let payload = path_len(path) + r.map_or(1, |r| r.encoded_len());
            Header { list: true, payload_length: payload }.encode(out);
            write_path(path, false, out);
            match r {
                Some(r) => r.write(out),
                None => out.push(EMPTY_STRING_CODE),
            }
        }
        Node::Branch { children, value } => {
            let refs: [Option<NodeRef>; 16] = std::array::from_fn(|i| child_ref(&children[i]));
            let payload = refs.iter().map(|r| r.map_or(1, |r| r.encoded_len())).sum::<usize>()
                + value.as_deref().map_or(1, bytes_len);
            Header { list: true, payload_length: payload }.encode(out);
            for r in &refs {
                match r {
                    Some(r) => r.write(out),
                    None => out.push(EMPTY_STRING_CODE),
                }
            }
            match value {
                Some(v) => v.as_slice().encode(out),
                None => out.push(EMPTY_STRING_CODE),
            }
        }
    }
}

fn corrupt(hash: B256, reason: impl Into<String>) -> TrieError {
    TrieError::CorruptNode { hash, reason: reason.into() }
}

/// One RLP item: whether it is a list, its full encoding and its payload.
#[derive(Default, Clone, Copy)]
struct Item<'a> {
    list: bool,
    raw: &'a [u8],
    payload: &'a [u8],
}

/// Splits a list payload into its items without allocating (nodes have at
/// most 17). Returns the items array and how many were filled.
fn split_items(mut payload: &[u8], hash: B256) -> Result<([Item<'_>; 17], usize), TrieError> {
    let mut items = [Item::default(); 17];
    let mut count = 0;
    while !payload.is_empty() {
        if count == items.len() {
            return Err(corrupt(hash, "too many list items"));
        }
        let start = payload;
        let h = Header::decode(&mut payload).map_err(|e| corrupt(hash, e.to_string()))?;
        let header_len = start.len() - payload.len();
        let (body, rest) = payload.split_at(h.payload_length);
        items[count] =
            Item { list: h.list, raw: &start[..header_len + h.payload_length], payload: body };
        count += 1;
        payload = rest;
    }
    Ok((items, count))
}

/// Decodes the RLP of a node. `hash` is the stored node this data came from and
/// is only used to label errors.
pub(crate) fn decode(rlp: &[u8], hash: B256) -> Result<Node, TrieError> {
    let mut buf = rlp;
    let h = Header::decode(&mut buf).map_err(|e| corrupt(hash, e.to_string()))?;
    if !h.list {
        return Err(corrupt(hash, "node is not an RLP list"));
    }
    if buf.len() != h.payload_length {
        return Err(corrupt(hash, "trailing bytes after node"));
    }
    let (items, count) = split_items(buf, hash)?;
    match count {
        2 => {
            if items[0].list {
                return Err(corrupt(hash, "node path is a list"));
            }
            let (path, leaf) =
                hp_decode(items[0].payload).ok_or_else(|| corrupt(hash, "bad hex-prefix path"))?;
            if leaf {
                if items[1].list {
                    return Err(corrupt(hash, "leaf value is a list"));
                }
                Ok(Node::Leaf { path, value: items[1].payload.to_vec() })
            } else {
                if path.is_empty() {
                    return Err(corrupt(hash, "extension with empty path"));
                }
                let child = decode_child(&items[1], hash)?;
                if matches!(child, Child::Empty) {
                    return Err(corrupt(hash, "extension without child"));
                }
                Ok(Node::Extension { path, child })
            }
        }
        17 => {
            let mut children: Box<[Child; 16]> = Box::default();
            for (slot, item) in children.iter_mut().zip(&items[..16]) {
                *slot = decode_child(item, hash)?;
            }
            let v = &items[16];
            if v.list {
                return Err(corrupt(hash, "branch value is a list"));
            }
            let value = (!v.payload.is_empty()).then(|| v.payload.to_vec());
            Ok(Node::Branch { children, value })
        }
        n => Err(corrupt(hash, format!("node has {n} items"))),
    }
}

fn decode_child(item: &Item<'_>, hash: B256) -> Result<Child, TrieError> {
    if item.list {
        if item.raw.len() >= 32 {
            return Err(corrupt(hash, "embedded node longer than 31 bytes"));
        }
        let node = decode(item.raw, hash)?;
        return Ok(Child::Node(Box::new(Cell {
            node,
            cached: Some(NodeRef::from_rlp(item.raw)),
            dirty: false,
            measured: None,
        })));
    }
    match item.payload.len() {
        0 => Ok(Child::Empty),
        32 => Ok(Child::Hash(B256::from_slice(item.payload))),
        n => Err(corrupt(hash, format!("child reference of {n} bytes"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(node: &Node) -> Vec<u8> {
        let mut out = Vec::new();
        encode(node, &mut out);
        let back = decode(&out, B256::ZERO).unwrap();
        let mut again = Vec::new();
        encode(&back, &mut again);
        assert_eq!(out, again);
        out
    }

    #[test]
    fn leaf_encoding_is_canonical() {
        let node = Node::Leaf { path: vec![1, 2, 3], value: b"hello".to_vec() };
        // rlp([hp(0x31 0x23), "hello"])
        let mut expected = vec![0xc9, 0x82, 0x31, 0x23, 0x85];
        expected.extend_from_slice(b"hello");
        assert_eq!(roundtrip(&node), expected);
    }

    #[test]
    fn branch_and_extension_roundtrip() {
        let mut children: Box<[Child; 16]> = Box::default();
        children[3] = Child::Hash(B256::repeat_byte(7));
        children[9] = Child::Node(Box::new(Cell {
            node: Node::Leaf { path: vec![], value: vec![1] },
            cached: Some(NodeRef::from_rlp(&[0xc2, 0x20, 0x01])),
            dirty: false,
            measured: None,
        }));
        let branch = Node::Branch { children, value: Some(vec![0xff; 40]) };
        roundtrip(&branch);
        let ext = Node::Extension { path: vec![0xa], child: Child::Hash(B256::repeat_byte(1)) };
        roundtrip(&ext);
    }

    #[test]
    fn garbage_is_rejected() {
        for bad in [
            &[][..],
            &[0x80],
            &[0xc0],
            &[0xc1, 0x80],
            &[0xc3, 0x80, 0x80],
            &[0xc3, 0x00, 0x80, 0x80],
            &[0xc2, 0x40, 0x80],
            &[0xc4, 0x00, 0x82, 0x01, 0x02],
            &[0xf8, 0x01, 0x00],
            &[0xc5, 0x20, 0x83, 0x01],
        ] {
            assert!(
                matches!(decode(bad, B256::ZERO), Err(TrieError::CorruptNode { .. })),
                "{bad:x?}"
            );
        }
    }
}
