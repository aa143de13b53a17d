//! Medians, coefficients of variation and the Mann-Whitney U test.
//!
//! No maintained Rust crate offers the Mann-Whitney U test with the tie correction and
//! the small-sample exact distribution (statrs has the distributions, not the test), so
//! it is implemented here, following the conventions of `scipy.stats.mannwhitneyu`
//! (two-sided; `method="auto"`: exact when a sample has at most 8 values and there are
//! no ties, otherwise the normal approximation with tie and continuity corrections). The
//! tests pin it against values computed by full enumeration and by the textbook formula.

/// The median (mean of the two middle values for an even count); `NaN` when empty.
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

/// Coefficient of variation in percent: sample standard deviation (n - 1) over the mean;
/// 0 for fewer than two values.
pub fn cv_pct(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if mean == 0.0 {
        return 0.0;
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    var.sqrt() / mean * 100.0
}

/// A Mann-Whitney U test's outcome.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitney {
    /// U of the first sample: the number of (x, y) pairs with x > y, ties counting 1/2.
    pub u: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// Whether `p` comes from the exact distribution (else the normal approximation).
    pub exact: bool,
}

/// Two-sided Mann-Whitney U test of `x` against `y`; `None` when either is empty.
pub fn mann_whitney_u(x: &[f64], y: &[f64]) -> Option<MannWhitney> {
    let (n1, n2) = (x.len(), y.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    // Ranks of the pooled sample, ties sharing their mean rank.
    let mut pooled: Vec<(f64, bool)> =
        x.iter().map(|&v| (v, true)).chain(y.iter().map(|&v| (v, false))).collect();
    pooled.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut rank_sum_x = 0.0;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < pooled.len() {
        let mut j = i;
        while j < pooled.len() && pooled[j].0 == pooled[i].0 {
            j += 1;
        }
        let rank = (i + 1 + j) as f64 / 2.0;
        let t = (j - i) as f64;
        tie_term += t * t * t - t;
        rank_sum_x += rank * pooled[i..j].iter().filter(|(_, from_x)| *from_x).count() as f64;
        i = j;
    }
    let u1 = rank_sum_x - (n1 * (n1 + 1)) as f64 / 2.0;
    let (n1f, n2f) = (n1 as f64, n2 as f64);
    let ties = tie_term > 0.0;
    if n1.min(n2) <= 8 && !ties {
        return Some(MannWhitney { u: u1, p: exact_p(n1, n2, u1 as usize), exact: true });
    }
    let n = n1f + n2f;
    let mu = n1f * n2f / 2.0;
    let sigma = (n1f * n2f / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)))).sqrt();
    if sigma == 0.0 {
        // Every value equal: no evidence of a difference.
        return Some(MannWhitney { u: u1, p: 1.0, exact: false });
    }
    let u = u1.max(n1f * n2f - u1);
    let z = (u - mu - 0.5) / sigma;
    let p = (2.0 * normal_sf(z)).min(1.0);
    Some(MannWhitney { u: u1, p, exact: false })
}

/// Exact two-sided p of U = `u` for samples of `n1` and `n2` without ties:
/// `2 * min(P(U <= u), P(U >= u))`, from the count of rank arrangements per U.
fn exact_p(n1: usize, n2: usize, u: usize) -> f64 {
    let max_u = n1 * n2;
    // counts[i][j][u]: arrangements of i x's and j y's with U = u, built row by row:
    // the largest value is an x (adding j to U) or a y.
    let mut prev: Vec<Vec<f64>> = vec![vec![0.0; max_u + 1]; n2 + 1];
    for row in prev.iter_mut() {
        row[0] = 1.0; // no x: U = 0, one arrangement
    }
    for _ in 1..=n1 {
        let mut cur: Vec<Vec<f64>> = vec![vec![0.0; max_u + 1]; n2 + 1];
        cur[0][0] = 1.0; // no y: U = 0
        for j in 1..=n2 {
            for v in 0..=max_u {
                let with_x_last = if v >= j { prev[j][v - j] } else { 0.0 };
                cur[j][v] = with_x_last + cur[j - 1][v];
            }
        }
        prev = cur;
    }
    let counts = &prev[n2];
    let total: f64 = counts.iter().sum();
    let le: f64 = counts[..=u].iter().sum();
    let ge: f64 = counts[u..].iter().sum();
    (2.0 * le.min(ge) / total).min(1.0)
}

/// P(Z > z) for a standard normal Z.
fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// The complementary error function, by the Chebyshev fit of Numerical Recipes
/// (`erfcc`, fractional error below 1.2e-7 everywhere): ample for p-values.
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-12)
    }

    #[test]
    fn medians_and_cv() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        // mean 5, sample sd sqrt(32/7) = 2.138
        let v = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert!(close(cv_pct(&v), (32.0f64 / 7.0).sqrt() / 5.0 * 100.0, 1e-12));
        assert_eq!(cv_pct(&[1.0]), 0.0);
    }

    #[test]
    fn erfc_matches_known_values() {
        // erfc(0) = 1, erfc(1) = 0.157299207, erfc(2) = 0.004677735, erfc(-1) = 1.842700793
        assert!(close(erfc(0.0), 1.0, 1e-6));
        assert!(close(erfc(1.0), 0.157_299_207, 1e-6));
        assert!(close(erfc(2.0), 0.004_677_735, 1e-6));
        assert!(close(erfc(-1.0), 1.842_700_793, 1e-6));
    }

    // Reference p-values were computed by enumerating every rank arrangement (exact) and
    // by the normal approximation with tie and continuity corrections, the conventions of
    // scipy.stats.mannwhitneyu(alternative="two-sided", method="auto").

    #[test]
    fn exact_small_samples() {
        // Complete separation of 5 vs 5: 2 / C(10, 5) = 2/252.
        let r = mann_whitney_u(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]).unwrap();
        assert!(r.exact);
        assert_eq!(r.u, 0.0);
        assert!(close(r.p, 2.0 / 252.0, 1e-12));
        // Symmetric: the other way round, U = 25, same p.
        let r = mann_whitney_u(&[6.0, 7.0, 8.0, 9.0, 10.0], &[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert_eq!(r.u, 25.0);
        assert!(close(r.p, 2.0 / 252.0, 1e-12));
        // Interleaved 4 vs 5: U = 4, p = 24/126 = 0.19047619.
        let r = mann_whitney_u(&[1.1, 2.5, 3.0, 4.2], &[2.0, 3.5, 5.1, 6.0, 7.2]).unwrap();
        assert_eq!(r.u, 4.0);
        assert!(close(r.p, 0.190_476_190_476, 1e-9), "{}", r.p);
    }

    #[test]
    fn normal_approximation_for_nine_runs() {
        // 9 vs 9 (the study's measured runs), separated: U = 0, p = 0.000412295.
        let x: Vec<f64> = (1..=9).map(f64::from).collect();
        let y: Vec<f64> = (10..=18).map(f64::from).collect();
        let r = mann_whitney_u(&x, &y).unwrap();
        assert!(!r.exact);
        assert_eq!(r.u, 0.0);
        assert!(close(r.p, 0.000_412_294_802, 1e-5), "{}", r.p);
        // Overlapping timings: U = 7, p = 0.003568628.
        let x = [10.2, 11.5, 9.8, 12.1, 10.9, 11.0, 10.4, 12.5, 11.8];
        let y = [11.9, 12.8, 13.1, 12.2, 11.7, 13.5, 12.9, 12.4, 13.0];
        let r = mann_whitney_u(&x, &y).unwrap();
        assert_eq!(r.u, 7.0);
        assert!(close(r.p, 0.003_568_628_437, 1e-5), "{}", r.p);
    }

    #[test]
    fn ties_use_the_corrected_variance() {
        // Ties in both samples: U = 13, p = 0.015934147.
        let x = [1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 4.0, 5.0, 6.0];
        let y = [3.0, 4.0, 4.0, 5.0, 5.0, 6.0, 7.0, 8.0, 8.0];
        let r = mann_whitney_u(&x, &y).unwrap();
        assert!(!r.exact);
        assert_eq!(r.u, 13.0);
        assert!(close(r.p, 0.015_934_147_250, 1e-5), "{}", r.p);
        // All equal: no difference.
        let r = mann_whitney_u(&[2.0; 9], &[2.0; 9]).unwrap();
        assert_eq!(r.p, 1.0);
        assert!(mann_whitney_u(&[], &[1.0]).is_none());
    }
}
