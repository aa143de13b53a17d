//! Keccak-256 of many independent messages at once.
//!
//! Merkleizing a block hashes thousands of trie nodes whose hashes do not depend on each
//! other (all nodes at the same height), and Keccak-f[1600] is pure arithmetic on 25
//! words. With AVX-512 eight permutations run side by side, one per 64-bit lane of each
//! of 25 `zmm` registers, using the native 64-bit rotate and the three-input logic
//! instruction (one op for chi's `a ^ (!b & c)` and for theta's five-way xors). No
//! maintained crate offers this on stable Rust (RustCrypto's parallel backend needs
//! nightly `core::simd`), hence this module. Without AVX-512, and for batches too small
//! to fill the lanes, each message goes through `alloy_primitives::keccak256` (the
//! assembly implementation).

use alloy_primitives::{keccak256, B256};

/// Bytes absorbed per permutation (1600 - 2 * 256 bits).
const RATE: usize = 136;
const RATE_WORDS: usize = RATE / 8;

/// Below this many messages in a group the scalar code is faster than filling the eight
/// lanes (measured: one eight-lane permutation costs about as much as two or three scalar
/// ones on the reference machine).
const MIN_LANES: usize = 3;

/// `out[i] = keccak256(msgs[i])` for every `i`.
pub fn keccak256_many(msgs: &[&[u8]], out: &mut [B256]) {
    keccak256_indexed(msgs.len(), |i| msgs[i], out);
}

/// `out[i] = keccak256(msg(i))` for `i < n`; lets callers hash slices of one buffer
/// without collecting them first.
pub(crate) fn keccak256_indexed<'a>(n: usize, msg: impl Fn(usize) -> &'a [u8], out: &mut [B256]) {
    assert_eq!(n, out.len(), "one output per message");
    #[cfg(target_arch = "x86_64")]
    if n >= MIN_LANES && avx512::available() {
        return avx512::hash_all(n, msg, out);
    }
    for (i, o) in out.iter_mut().enumerate() {
        *o = keccak256(msg(i));
    }
}

/// `keccak256` of each item, in order.
pub fn keccak256_all<T: AsRef<[u8]>>(items: &[T]) -> Vec<B256> {
    let msgs: Vec<&[u8]> = items.iter().map(AsRef::as_ref).collect();
    let mut out = vec![B256::ZERO; msgs.len()];
    keccak256_many(&msgs, &mut out);
    out
}

/// Number of permutations (rate blocks after padding) a message of `len` bytes needs.
#[inline]
fn blocks(len: usize) -> usize {
    len / RATE + 1
}

/// Word `w` of padded block `b` of `msg` (Keccak's pad10*1 with the 0x01 domain byte,
/// little-endian words).
#[inline]
fn padded_word(msg: &[u8], b: usize, w: usize) -> u64 {
    let start = b * RATE + w * 8;
    let mut bytes = [0u8; 8];
    if start + 8 <= msg.len() {
        bytes.copy_from_slice(&msg[start..start + 8]);
    } else {
        if start < msg.len() {
            bytes[..msg.len() - start].copy_from_slice(&msg[start..]);
        }
        let last_block = blocks(msg.len()) - 1;
        if b == last_block {
            let pad_at = msg.len() % RATE;
            if (w * 8..w * 8 + 8).contains(&pad_at) {
                bytes[pad_at - w * 8] ^= 0x01;
            }
            if w == RATE_WORDS - 1 {
                bytes[7] ^= 0x80;
            }
        }
    }
    u64::from_le_bytes(bytes)
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{blocks, padded_word, RATE_WORDS};
    use alloy_primitives::B256;
    use std::arch::x86_64::*;
    use std::sync::OnceLock;

    pub(super) fn available() -> bool {
        static AVAILABLE: OnceLock<bool> = OnceLock::new();
        *AVAILABLE.get_or_init(|| std::arch::is_x86_feature_detected!("avx512f"))
    }

    const RC: [u64; 24] = [
        0x0000000000000001,
        0x0000000000008082,
        0x800000000000808a,
        0x8000000080008000,
        0x000000000000808b,
        0x0000000080000001,
        0x8000000080008081,
        0x8000000000008009,
        0x000000000000008a,
        0x0000000000000088,
        0x0000000080008009,
        0x000000008000000a,
        0x000000008000808b,
        0x800000000000008b,
        0x8000000000008089,
        0x8000000000008003,
        0x8000000000008002,
        0x8000000000000080,
        0x000000000000800a,
        0x800000008000000a,
        0x8000000080008081,
        0x8000000000008080,
        0x0000000080000001,
        0x8000000080008008,
    ];

    /// Rotation of lane `x + 5y` (rho).
    const RHO: [u32; 25] = [
        0, 1, 62, 28, 27, //
        36, 44, 6, 55, 20, //
        3, 10, 43, 25, 39, //
        41, 45, 15, 21, 8, //
        18, 2, 61, 56, 14,
    ];

    /// Sorts the messages by block count so that each group of eight wastes few lane
    /// permutations, hashes full groups eight at a time and leaves a short tail to the
    /// scalar code.
    pub(super) fn hash_all<'a>(n: usize, msg: impl Fn(usize) -> &'a [u8], out: &mut [B256]) {
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_unstable_by_key(|&i| blocks(msg(i as usize).len()));
        for group in order.chunks(8) {
            if group.len() < super::MIN_LANES {
                for &i in group {
                    out[i as usize] = alloy_primitives::keccak256(msg(i as usize));
                }
                continue;
            }
            let mut lanes: [&[u8]; 8] = [&[]; 8];
            for (lane, &i) in lanes.iter_mut().zip(group) {
                *lane = msg(i as usize);
            }
            // SAFETY: `available()` checked that the CPU has AVX-512F.
            let digests = unsafe { hash8(&lanes) };
            for (lane, &i) in group.iter().enumerate() {
                out[i as usize] = digests[lane];
            }
        }
    }

    /// Keccak-256 of eight messages, one per lane. Lanes whose message needs fewer blocks
    /// keep absorbing padding-free zeros after their last block; their digest is taken
    /// right after their own last permutation.
    #[target_feature(enable = "avx512f")]
    unsafe fn hash8(msgs: &[&[u8]; 8]) -> [B256; 8] {
        let nblocks: [usize; 8] = std::array::from_fn(|l| blocks(msgs[l].len()));
        let max_blocks = *nblocks.iter().max().expect("eight lanes");
        let mut state = [_mm512_setzero_si512(); 25];
        let mut digests = [B256::ZERO; 8];
        for b in 0..max_blocks {
            for (w, lane) in state.iter_mut().enumerate().take(RATE_WORDS) {
                let words: [u64; 8] = std::array::from_fn(|l| {
                    if b < nblocks[l] {
                        padded_word(msgs[l], b, w)
                    } else {
                        0
                    }
                });
                *lane = _mm512_xor_si512(*lane, _mm512_loadu_si512(words.as_ptr().cast()));
            }
            permute(&mut state);
            for (l, digest) in digests.iter_mut().enumerate() {
                if nblocks[l] == b + 1 {
                    for w in 0..4 {
                        let mut words = [0u64; 8];
                        _mm512_storeu_si512(words.as_mut_ptr().cast(), state[w]);
                        digest[w * 8..w * 8 + 8].copy_from_slice(&words[l].to_le_bytes());
                    }
                }
            }
        }
        digests
    }

    /// Keccak-f[1600] on eight states at once (lane `i` of `a[x + 5y]` is word `x + 5y`
    /// of state `i`).
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn permute(a: &mut [__m512i; 25]) {
        for rc in RC {
            // theta: column parities, then each word absorbs its two neighbouring columns.
            let c: [__m512i; 5] = std::array::from_fn(|x| {
                let t = _mm512_ternarylogic_epi64::<0x96>(a[x], a[x + 5], a[x + 10]);
                _mm512_ternarylogic_epi64::<0x96>(t, a[x + 15], a[x + 20])
            });
            let d: [__m512i; 5] = std::array::from_fn(|x| {
                _mm512_xor_si512(c[(x + 4) % 5], _mm512_rol_epi64::<1>(c[(x + 1) % 5]))
            });
            // rho and pi: word (x, y) rotated moves to (y, 2x + 3y).
            let mut b = [_mm512_setzero_si512(); 25];
            for y in 0..5 {
                for x in 0..5 {
                    let i = x + 5 * y;
                    let v = _mm512_xor_si512(a[i], d[x]);
                    b[y + 5 * ((2 * x + 3 * y) % 5)] =
                        _mm512_rolv_epi64(v, _mm512_set1_epi64(RHO[i] as i64));
                }
            }
            // chi: a ^ (!b & c) in one instruction.
            for y in 0..5 {
                for x in 0..5 {
                    a[x + 5 * y] = _mm512_ternarylogic_epi64::<0xD2>(
                        b[x + 5 * y],
                        b[(x + 1) % 5 + 5 * y],
                        b[(x + 2) % 5 + 5 * y],
                    );
                }
            }
            // iota
            a[0] = _mm512_xor_si512(a[0], _mm512_set1_epi64(rc as i64));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(len: usize, seed: u64) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u64).wrapping_mul(0x9e37_79b9).wrapping_add(seed) as u8)
            .collect()
    }

    #[test]
    fn matches_scalar_keccak_for_every_length_and_batch_shape() {
        // Lengths around every padding boundary (0, 135, 136, 271, 272, ...) and mixed
        // block counts inside one group of eight.
        let lengths: Vec<usize> = (0..700).collect();
        for batch in [1usize, 2, 3, 7, 8, 9, 17, 64] {
            for start in (0..lengths.len()).step_by(batch.max(13)) {
                let msgs: Vec<Vec<u8>> = (0..batch)
                    .map(|j| message(lengths[(start + j * 37) % lengths.len()], j as u64))
                    .collect();
                let refs: Vec<&[u8]> = msgs.iter().map(|m| m.as_slice()).collect();
                let mut out = vec![B256::ZERO; batch];
                keccak256_many(&refs, &mut out);
                for (m, o) in msgs.iter().zip(&out) {
                    assert_eq!(*o, keccak256(m), "length {}", m.len());
                }
            }
        }
    }

    #[test]
    fn padded_words_follow_keccak_padding() {
        // Empty message: 0x01 first, 0x80 in the last byte of the block.
        assert_eq!(padded_word(&[], 0, 0), 0x01);
        assert_eq!(padded_word(&[], 0, RATE_WORDS - 1), 0x80 << 56);
        // 135 bytes: the domain byte and the final bit share the last byte.
        let m = vec![0u8; 135];
        assert_eq!(padded_word(&m, 0, RATE_WORDS - 1), 0x81 << 56);
        // 136 bytes: a second, all-padding block.
        let m = vec![0u8; 136];
        assert_eq!(blocks(m.len()), 2);
        assert_eq!(padded_word(&m, 1, 0), 0x01);
    }

    #[test]
    #[ignore = "microbenchmark: cargo test --release -p ethrex-trie keccak::tests::bench -- --ignored --nocapture"]
    fn bench() {
        for len in [40usize, 110, 200, 532] {
            let msgs: Vec<Vec<u8>> = (0..4096).map(|j| message(len, j)).collect();
            let refs: Vec<&[u8]> = msgs.iter().map(|m| m.as_slice()).collect();
            let mut out = vec![B256::ZERO; refs.len()];
            let t = std::time::Instant::now();
            for _ in 0..20 {
                keccak256_many(&refs, &mut out);
            }
            let many = t.elapsed().as_nanos() as f64 / (20.0 * refs.len() as f64);
            let t = std::time::Instant::now();
            for _ in 0..20 {
                for (m, o) in refs.iter().zip(out.iter_mut()) {
                    *o = keccak256(m);
                }
            }
            let scalar = t.elapsed().as_nanos() as f64 / (20.0 * refs.len() as f64);
            eprintln!(
                "{len:4} bytes: batched {many:6.1} ns, scalar {scalar:6.1} ns, {:.2}x",
                scalar / many
            );
        }
    }
}
