//! Keccak-256 of many independent messages at once.
//!
//! Merkleizing a block hashes thousands of trie nodes whose hashes do not depend on each
//! other (all nodes at the same height), and Keccak-f\[1600\] is pure arithmetic on 25
//! words. So several permutations run side by side, one per 64-bit lane of 25 vector
//! registers: eight with AVX-512 (native 64-bit rotate, and the three-input logic
//! instruction doing chi's `a ^ (!b & c)` and theta's five-way xors in one op each), four
//! with AVX2. No maintained crate offers this on stable Rust (RustCrypto's parallel
//! backend needs nightly `core::simd`), hence this module. Without either, and for groups
//! too small to fill the lanes, each message goes through `alloy_primitives::keccak256`
//! (the assembly implementation).

use alloy_primitives::{keccak256, B256};

/// Bytes absorbed per permutation (1600 - 2 * 256 bits).
const RATE: usize = 136;
const RATE_WORDS: usize = RATE / 8;

/// `out[i] = keccak256(msgs[i])` for every `i`.
pub fn keccak256_many(msgs: &[&[u8]], out: &mut [B256]) {
    keccak256_indexed(msgs.len(), |i| msgs[i], out);
}

/// `keccak256` of each item, in order.
pub fn keccak256_all<T: AsRef<[u8]>>(items: &[T]) -> Vec<B256> {
    let mut out = vec![B256::ZERO; items.len()];
    keccak256_indexed(items.len(), |i| items[i].as_ref(), &mut out);
    out
}

/// `out[i] = keccak256(msg(i))` for `i < n`; lets callers hash slices of one buffer
/// without collecting them first.
pub(crate) fn keccak256_indexed<'a>(n: usize, msg: impl Fn(usize) -> &'a [u8], out: &mut [B256]) {
    assert_eq!(n, out.len(), "one output per message");
    #[cfg(target_arch = "x86_64")]
    match simd::best() {
        // SAFETY: `best()` picks a width only after checking the CPU has its instructions.
        Some(simd::Width::Eight) => {
            return unsafe { simd::hash_all::<8>(n, &msg, out, simd::permute8) }
        }
        Some(simd::Width::Four) => {
            return unsafe { simd::hash_all::<4>(n, &msg, out, simd::permute4) }
        }
        None => {}
    }
    for (i, o) in out.iter_mut().enumerate() {
        *o = keccak256(msg(i));
    }
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
mod simd {
    use super::{blocks, padded_word, RATE_WORDS};
    use alloy_primitives::B256;
    use std::arch::x86_64::*;
    use std::sync::OnceLock;

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(super) enum Width {
        Four,
        Eight,
    }

    /// The widest permutation this CPU runs; `ETHREX_KECCAK_LANES=1|4|8` caps it (for
    /// measuring, and for testing the narrower path on a wider CPU).
    pub(super) fn best() -> Option<Width> {
        static BEST: OnceLock<Option<Width>> = OnceLock::new();
        *BEST.get_or_init(|| {
            let cap: usize =
                std::env::var("ETHREX_KECCAK_LANES").ok().and_then(|v| v.parse().ok()).unwrap_or(8);
            if cap >= 8 && is_x86_feature_detected!("avx512f") {
                Some(Width::Eight)
            } else if cap >= 4 && is_x86_feature_detected!("avx2") {
                Some(Width::Four)
            } else {
                None
            }
        })
    }

    /// Eight or four lanes: `state[i][l]` is word `i` of lane `l`'s state.
    pub(super) type State<const N: usize> = [[u64; N]; 25];

    /// Below this many messages in a group the scalar code is cheaper than a vector
    /// permutation with idle lanes (measured on the reference machine: a permutation of
    /// eight lanes, or of four, costs about two scalar ones).
    const MIN_LANES: usize = 3;

    /// Sorts the messages by block count so that each group of `N` wastes few lane
    /// permutations, hashes the groups `N` at a time and leaves groups too small to pay
    /// for a vector permutation to the scalar code.
    ///
    /// # Safety
    /// `permute` must be supported by the CPU.
    pub(super) unsafe fn hash_all<'a, const N: usize>(
        n: usize,
        msg: &impl Fn(usize) -> &'a [u8],
        out: &mut [B256],
        permute: unsafe fn(&mut State<N>),
    ) {
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_unstable_by_key(|&i| blocks(msg(i as usize).len()));
        for group in order.chunks(N) {
            if group.len() < MIN_LANES {
                for &i in group {
                    out[i as usize] = alloy_primitives::keccak256(msg(i as usize));
                }
                continue;
            }
            let mut lanes: [&[u8]; N] = [&[]; N];
            for (lane, &i) in lanes.iter_mut().zip(group) {
                *lane = msg(i as usize);
            }
            // SAFETY: passed on from this function's contract.
            let digests = unsafe { hash_lanes(&lanes, permute) };
            for (lane, &i) in group.iter().enumerate() {
                out[i as usize] = digests[lane];
            }
        }
    }

    /// Keccak-256 of `N` messages, one per lane. Lanes whose message needs fewer blocks
    /// absorb zeros after their last block; their digest is taken right after their own
    /// last permutation.
    ///
    /// # Safety
    /// `permute` must be supported by the CPU.
    pub(super) unsafe fn hash_lanes<const N: usize>(
        msgs: &[&[u8]; N],
        permute: unsafe fn(&mut State<N>),
    ) -> [B256; N] {
        let nblocks: [usize; N] = std::array::from_fn(|l| blocks(msgs[l].len()));
        let max_blocks = nblocks.iter().copied().max().unwrap_or(0);
        let mut state: State<N> = [[0; N]; 25];
        let mut digests = [B256::ZERO; N];
        for b in 0..max_blocks {
            for (w, words) in state.iter_mut().enumerate().take(RATE_WORDS) {
                for (l, word) in words.iter_mut().enumerate() {
                    if b < nblocks[l] {
                        *word ^= padded_word(msgs[l], b, w);
                    }
                }
            }
            permute(&mut state);
            for (l, digest) in digests.iter_mut().enumerate() {
                if nblocks[l] == b + 1 {
                    for w in 0..4 {
                        digest[w * 8..w * 8 + 8].copy_from_slice(&state[w][l].to_le_bytes());
                    }
                }
            }
        }
        digests
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

    /// Rotation of word `x + 5y` (rho).
    const RHO: [u32; 25] = [
        0, 1, 62, 28, 27, //
        36, 44, 6, 55, 20, //
        3, 10, 43, 25, 39, //
        41, 45, 15, 21, 8, //
        18, 2, 61, 56, 14,
    ];

    /// Destination of word `x + 5y` after pi: `(y, 2x + 3y)`.
    const fn pi(i: usize) -> usize {
        let (x, y) = (i % 5, i / 5);
        y + 5 * ((2 * x + 3 * y) % 5)
    }

    /// Keccak-f\[1600\] on eight states, one per 64-bit lane of 25 `zmm` registers.
    ///
    /// # Safety
    /// The CPU must support AVX-512F.
    #[target_feature(enable = "avx512f")]
    #[allow(clippy::needless_range_loop)] // the index loops are what LLVM unrolls (above)
    pub(super) unsafe fn permute8(state: &mut State<8>) {
        let mut a: [__m512i; 25] =
            std::array::from_fn(|i| _mm512_loadu_si512(state[i].as_ptr().cast()));
        for rc in RC {
            // theta: column parities, then each word absorbs its two neighbouring columns.
            let c: [__m512i; 5] = std::array::from_fn(|x| {
                let t = _mm512_ternarylogic_epi64::<0x96>(a[x], a[x + 5], a[x + 10]);
                _mm512_ternarylogic_epi64::<0x96>(t, a[x + 15], a[x + 20])
            });
            let d: [__m512i; 5] = std::array::from_fn(|x| {
                _mm512_xor_si512(c[(x + 4) % 5], _mm512_rol_epi64::<1>(c[(x + 1) % 5]))
            });
            // rho and pi.
            // (Nested loops over x and y: LLVM unrolls these fully, keeping every word in
            // a register; a single loop over 25 was left rolled and ran 3x slower.)
            let mut b = [_mm512_setzero_si512(); 25];
            for y in 0..5 {
                for x in 0..5 {
                    let i = x + 5 * y;
                    let v = _mm512_xor_si512(a[i], d[x]);
                    b[pi(i)] = _mm512_rolv_epi64(v, _mm512_set1_epi64(RHO[i] as i64));
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
        for (i, word) in a.iter().enumerate() {
            _mm512_storeu_si512(state[i].as_mut_ptr().cast(), *word);
        }
    }

    /// Rotates each 64-bit lane left by `n` (AVX2 has no rotate instruction).
    #[target_feature(enable = "avx2")]
    #[inline]
    fn rol4(v: __m256i, n: u32) -> __m256i {
        if n == 0 {
            return v;
        }
        let left = _mm256_sll_epi64(v, _mm_cvtsi32_si128(n as i32));
        let right = _mm256_srl_epi64(v, _mm_cvtsi32_si128(64 - n as i32));
        _mm256_or_si256(left, right)
    }

    /// Keccak-f\[1600\] on four states, one per 64-bit lane of 25 `ymm` registers.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    #[allow(clippy::needless_range_loop)] // as in `permute8`
    pub(super) unsafe fn permute4(state: &mut State<4>) {
        let mut a: [__m256i; 25] =
            std::array::from_fn(|i| _mm256_loadu_si256(state[i].as_ptr().cast()));
        for rc in RC {
            let c: [__m256i; 5] = std::array::from_fn(|x| {
                let t = _mm256_xor_si256(_mm256_xor_si256(a[x], a[x + 5]), a[x + 10]);
                _mm256_xor_si256(_mm256_xor_si256(t, a[x + 15]), a[x + 20])
            });
            let d: [__m256i; 5] =
                std::array::from_fn(|x| _mm256_xor_si256(c[(x + 4) % 5], rol4(c[(x + 1) % 5], 1)));
            let mut b = [_mm256_setzero_si256(); 25];
            for y in 0..5 {
                for x in 0..5 {
                    let i = x + 5 * y;
                    b[pi(i)] = rol4(_mm256_xor_si256(a[i], d[x]), RHO[i]);
                }
            }
            // chi: andnot(b, c) is !b & c.
            for y in 0..5 {
                for x in 0..5 {
                    let (b1, b2) = (b[(x + 1) % 5 + 5 * y], b[(x + 2) % 5 + 5 * y]);
                    a[x + 5 * y] = _mm256_xor_si256(b[x + 5 * y], _mm256_andnot_si256(b1, b2));
                }
            }
            a[0] = _mm256_xor_si256(a[0], _mm256_set1_epi64x(rc as i64));
        }
        for (i, word) in a.iter().enumerate() {
            _mm256_storeu_si256(state[i].as_mut_ptr().cast(), *word);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(len: usize, seed: u64) -> Vec<u8> {
        (0..len).map(|i| (i as u64).wrapping_mul(0x9e37_79b9).wrapping_add(seed) as u8).collect()
    }

    /// Batches of many shapes: lengths around every padding boundary (0, 135, 136, 271,
    /// 272, ...) and mixed block counts inside one group of lanes.
    fn check_against_scalar(hash: impl Fn(&[&[u8]], &mut [B256])) {
        for batch in [1usize, 2, 3, 4, 5, 7, 8, 9, 17, 64] {
            for start in (0..700).step_by(batch.max(13)) {
                let msgs: Vec<Vec<u8>> =
                    (0..batch).map(|j| message((start + j * 37) % 700, j as u64)).collect();
                let refs: Vec<&[u8]> = msgs.iter().map(|m| m.as_slice()).collect();
                let mut out = vec![B256::ZERO; batch];
                hash(&refs, &mut out);
                for (m, o) in msgs.iter().zip(&out) {
                    assert_eq!(*o, keccak256(m), "length {}", m.len());
                }
            }
        }
    }

    #[test]
    fn matches_scalar_keccak_for_every_length_and_batch_shape() {
        check_against_scalar(keccak256_many);
        check_against_scalar(|m, o| o.copy_from_slice(&keccak256_all(m)));
    }

    /// Each vector width on its own, whichever one `keccak256_many` picks on this CPU
    /// (skipped, and said so, where the CPU lacks the instructions).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn each_vector_width_matches_scalar_keccak() {
        // SAFETY (both): each width runs only after its instructions were detected.
        if is_x86_feature_detected!("avx512f") {
            check_against_scalar(|m, o| unsafe {
                simd::hash_all::<8>(m.len(), &|i| m[i], o, simd::permute8)
            });
        } else {
            eprintln!("no AVX-512 on this CPU: eight-lane path not tested");
        }
        if is_x86_feature_detected!("avx2") {
            check_against_scalar(|m, o| unsafe {
                simd::hash_all::<4>(m.len(), &|i| m[i], o, simd::permute4)
            });
        } else {
            eprintln!("no AVX2 on this CPU: four-lane path not tested");
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

    /// Per-hash cost of each path against the scalar assembly, for typical node sizes.
    #[cfg(target_arch = "x86_64")]
    #[test]
    #[ignore = "microbenchmark: cargo test --release -p ethrex-trie keccak::tests::bench -- --ignored --nocapture"]
    fn bench() {
        fn time(f: impl Fn()) -> f64 {
            let t = std::time::Instant::now();
            for _ in 0..20 {
                f();
            }
            t.elapsed().as_nanos() as f64 / (20.0 * 4096.0)
        }
        for len in [40usize, 110, 200, 532] {
            let msgs: Vec<Vec<u8>> = (0..4096).map(|j| message(len, j)).collect();
            let refs: Vec<&[u8]> = msgs.iter().map(|m| m.as_slice()).collect();
            let out = std::cell::RefCell::new(vec![B256::ZERO; refs.len()]);
            let scalar = time(|| {
                for (m, o) in refs.iter().zip(out.borrow_mut().iter_mut()) {
                    *o = keccak256(m);
                }
            });
            let mut line = format!("{len:4} bytes: scalar {scalar:6.1} ns");
            if is_x86_feature_detected!("avx2") {
                // SAFETY: AVX2 detected just above.
                let four = time(|| unsafe {
                    simd::hash_all::<4>(
                        refs.len(),
                        &|i| refs[i],
                        &mut out.borrow_mut(),
                        simd::permute4,
                    )
                });
                line += &format!(", 4 lanes {four:6.1} ns ({:.2}x)", scalar / four);
            }
            if is_x86_feature_detected!("avx512f") {
                // SAFETY: AVX-512F detected just above.
                let eight = time(|| unsafe {
                    simd::hash_all::<8>(
                        refs.len(),
                        &|i| refs[i],
                        &mut out.borrow_mut(),
                        simd::permute8,
                    )
                });
                line += &format!(", 8 lanes {eight:6.1} ns ({:.2}x)", scalar / eight);
            }
            eprintln!("{line}");
        }
    }
}
