//! Merkle proofs (EIP-1186): the nodes on the path from the root to a key, each as
//! stored (RLP). A node embedded in its parent (under 32 bytes) is part of the parent's
//! RLP and not listed on its own. The path ends where the key's value is, or where the
//! trie shows it absent (an empty branch slot, a leaf or extension off the key).

use crate::nibbles::unpack;
use crate::node::{decode, Child, Node};
use crate::{NodeReader, TrieError};
use alloy_primitives::{keccak256, Bytes, B256};

/// The proof of `key` (unhashed: pass the keccak of an address or slot) in the trie of
/// `owner` (`None`: the account trie) with root `root`, read through `reader`.
///
/// # Errors
/// A missing or corrupt node on the path.
pub fn proof<R: NodeReader + ?Sized>(
    reader: &R,
    owner: Option<&B256>,
    root: B256,
    key: &[u8],
) -> Result<Vec<Bytes>, TrieError> {
    let path = unpack(key);
    let mut out = Vec::new();
    if root == crate::EMPTY_ROOT_HASH {
        return Ok(out);
    }
    let mut hash = root;
    let mut depth = 0;
    loop {
        let rlp =
            reader.get_node(owner, &path[..depth], &hash)?.ok_or(TrieError::MissingNode(hash))?;
        let bytes = rlp.as_ref().to_vec();
        if keccak256(&bytes) != hash {
            return Err(TrieError::MissingNode(hash));
        }
        let mut node = decode(&bytes, hash)?;
        out.push(Bytes::from(bytes));
        // Follow the path through this node and any nodes embedded in it.
        loop {
            let Some((child, next)) = node.child_on(&path, depth) else { return Ok(out) };
            match child {
                Child::Empty => return Ok(out),
                Child::Hash(h) => {
                    hash = *h;
                    depth = next;
                    break;
                }
                Child::Node(cell) => {
                    let inner: Node = cell.node.clone();
                    node = inner;
                    depth = next;
                }
            }
        }
    }
}
