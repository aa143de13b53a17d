//! A small Zipf sampler: rank `k` (0-based) is drawn with probability proportional to
//! `1 / (k + 1)^s`. Used for token popularity, holder choice, hot senders and hot pools,
//! which on mainnet all follow heavy-tailed distributions.
//!
//! The exponent is restricted to multiples of 0.5 so the weights need only IEEE basic
//! operations (multiplication, division, square root), which are correctly rounded on every
//! platform. `powf` is not, and the workload must be byte-identical for a seed everywhere.

use rand::Rng;

#[derive(Debug, Clone)]
pub(crate) struct Zipf {
    /// Cumulative integer weights; sampling draws an integer below the total, so the
    /// draw itself involves no floating point.
    cumulative: Vec<u64>,
}

impl Zipf {
    /// `n` ranks, exponent `s` (a non-negative multiple of 0.5).
    pub(crate) fn new(n: usize, s: f64) -> Self {
        assert!(n > 0, "Zipf over zero items");
        let halves = s * 2.0;
        assert!(
            halves >= 0.0 && halves.fract() == 0.0,
            "Zipf exponent {s} is not a multiple of 0.5"
        );
        let (whole, half) = ((halves as u32) / 2, (halves as u32) % 2 == 1);
        let weights: Vec<f64> = (1..=n)
            .map(|k| {
                let k = k as f64;
                let mut denom = 1.0;
                for _ in 0..whole {
                    denom *= k;
                }
                if half {
                    denom *= k.sqrt();
                }
                1.0 / denom
            })
            .collect();
        let total: f64 = weights.iter().sum();
        // Scale to 2^52 in total: every rank keeps a non-zero weight for any n used here.
        let scale = (1u64 << 52) as f64 / total;
        let mut acc = 0u64;
        let cumulative = weights
            .iter()
            .map(|w| {
                acc += ((w * scale) as u64).max(1);
                acc
            })
            .collect();
        Self { cumulative }
    }

    /// A 0-based rank: 0 is the most popular.
    pub(crate) fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> usize {
        let total = *self.cumulative.last().expect("non-empty");
        let x = rng.random_range(0..total);
        // First rank whose cumulative weight exceeds x.
        self.cumulative.partition_point(|&c| c <= x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn ranks_follow_the_exponent() {
        let zipf = Zipf::new(100, 1.0);
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut counts = vec![0u32; 100];
        for _ in 0..200_000 {
            counts[zipf.sample(&mut rng)] += 1;
        }
        // With s = 1, rank 0 is twice as likely as rank 1 and ten times rank 9.
        let r01 = counts[0] as f64 / counts[1] as f64;
        let r09 = counts[0] as f64 / counts[9] as f64;
        assert!((1.8..2.2).contains(&r01), "rank0/rank1 = {r01}");
        assert!((8.5..11.5).contains(&r09), "rank0/rank9 = {r09}");
        assert!(counts.iter().all(|&c| c > 0));
    }

    #[test]
    fn half_exponent_and_uniform() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let zipf = Zipf::new(4, 0.0);
        let mut counts = [0u32; 4];
        for _ in 0..40_000 {
            counts[zipf.sample(&mut rng)] += 1;
        }
        assert!(counts.iter().all(|&c| (9_000..11_000).contains(&c)), "{counts:?}");
        let zipf = Zipf::new(4, 0.5);
        let mut counts = [0u32; 4];
        for _ in 0..40_000 {
            counts[zipf.sample(&mut rng)] += 1;
        }
        // 1/sqrt(1) : 1/sqrt(4) = 2.
        let r = counts[0] as f64 / counts[3] as f64;
        assert!((1.8..2.2).contains(&r), "{counts:?}");
    }
}
