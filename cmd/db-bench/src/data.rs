//! The benchmark's entries: entry `i` has a key that sorts by `i` and a value derived
//! from `i`, so the load writes keys in order and every read can be checked without
//! keeping the data set in memory.

/// SplitMix64's finaliser: a cheap bijective mix of a 64-bit word.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Fills `out` with bytes derived from `(i, salt)`.
fn fill(out: &mut [u8], i: u64, salt: u64) {
    for (j, chunk) in out.chunks_mut(8).enumerate() {
        let word = mix(i ^ salt.wrapping_mul(j as u64 + 1)).to_le_bytes();
        chunk.copy_from_slice(&word[..chunk.len()]);
    }
}

/// The smallest key size: the entry's index, big-endian, leads the key.
pub(crate) const MIN_KEY_SIZE: usize = 8;

/// Writes entry `i`'s key into `out` (`out.len()` >= `MIN_KEY_SIZE`): the index
/// big-endian (so keys sort by index), then bytes derived from it.
pub(crate) fn key(i: u64, out: &mut [u8]) {
    out[..8].copy_from_slice(&i.to_be_bytes());
    fill(&mut out[8..], i, 0x6b65_7973);
}

/// Writes into `out` the key the write phase inserts beside entry `i` in its batch `batch`:
/// entry `i`'s index, then bytes derived from `(i, batch)` that differ from `key(i)`'s, so
/// it lands at a random place in the key order, as a new hash-keyed trie node does.
pub(crate) fn insert_key(i: u64, batch: u64, out: &mut [u8]) {
    out[..8].copy_from_slice(&i.to_be_bytes());
    fill(&mut out[8..], i, 0x696e_7365_7274 ^ (batch + 1).wrapping_mul(0x9E37_79B9));
}

/// Writes entry `i`'s value into `out`.
pub(crate) fn value(i: u64, out: &mut [u8]) {
    fill(out, i, 0x7661_6c75_6573);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_by_index_and_values_differ() {
        let (mut a, mut b) = ([0u8; 16], [0u8; 16]);
        key(255, &mut a);
        key(256, &mut b);
        assert!(a < b);
        let (mut va, mut vb) = ([0u8; 32], [0u8; 32]);
        value(255, &mut va);
        value(256, &mut vb);
        assert_ne!(va, vb);
        let mut again = [0u8; 32];
        value(255, &mut again);
        assert_eq!(va, again);
        // Odd sizes fill every byte.
        let mut odd = [0u8; 13];
        value(7, &mut odd);
        assert_ne!(&odd[8..], &[0u8; 5]);
    }
}
