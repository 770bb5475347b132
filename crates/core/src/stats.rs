//! How sure a figure is: distribution-free intervals, the Mann–Whitney
//! test, and whether a series of seconds is steady.
//!
//! Run-to-run variation on shared machines is neither small nor normal
//! (CONFIRM, OSDI'18), so nothing here assumes a distribution:
//!
//! - [`median_interval`]: the order-statistic interval of a median across
//!   repeats (binomial ranks; 6 values at least for 95 %).
//! - [`quantile_ranks`]: the ranks of a quantile's interval among `n`
//!   independent samples (Lancet's interval on a run's own histogram).
//! - [`batch_interval`]: a mean over per-second windows, merged until
//!   neighbouring windows are not correlated, as batch means do.
//! - [`mann_whitney`]: the exact two-sided p of a difference in location
//!   (benchstat's test), and [`Difference`], the judgement the verdict,
//!   the fit answer and `compare` share.
//! - [`theil_sen`], [`warmup_end`], [`stability`]: trend and level shifts
//!   of a per-second series (TriScale's convergence test; binary
//!   segmentation for a shift).
//!
//! Pure functions of numbers: the runner calls them after the measured
//! phase, never on the hot path.

use serde::{Deserialize, Serialize};

/// The confidence every interval of bakeoff is computed for.
pub const CONFIDENCE: f64 = 0.95;

/// Repeats a between-run 95 % interval of a median needs.
pub const REPEATS_FOR_INTERVAL: usize = 6;

/// Repeats a side the Mann–Whitney test needs to reach p < 0.05.
pub const REPEATS_FOR_TEST: usize = 4;

/// What an interval stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum IntervalKind {
    /// The median across repeats: would a rerun agree.
    BetweenRuns,
    /// The precision of one run: a rerun may differ more.
    WithinRun,
}

impl IntervalKind {
    /// As printed beside an interval.
    pub fn text(self) -> &'static str {
        match self {
            IntervalKind::BetweenRuns => "between runs",
            IntervalKind::WithinRun => "within one run",
        }
    }
}

/// A confidence interval of a figure.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Interval {
    /// Lower bound, in the figure's unit.
    pub low: f64,
    /// Upper bound, in the figure's unit.
    pub high: f64,
    /// The probability it holds the true value (at least 0.95 by
    /// construction; the exact binomial figure for order statistics).
    pub confidence: f64,
    /// What it stands for.
    pub kind: IntervalKind,
}

impl Interval {
    /// Half the width over `centre`: the precision `--precision` bounds.
    pub fn relative_half_width(&self, centre: f64) -> f64 {
        if centre == 0.0 {
            return f64::INFINITY;
        }
        (self.high - self.low) / 2.0 / centre.abs()
    }

    /// Whether the two intervals share no value.
    pub fn disjoint(&self, other: &Interval) -> bool {
        self.high < other.low || other.high < self.low
    }

    /// Whether `x` lies inside.
    pub fn contains(&self, x: f64) -> bool {
        self.low <= x && x <= self.high
    }
}

/// ln C(n, k).
fn ln_choose(n: usize, k: usize) -> f64 {
    ln_factorial(n) - ln_factorial(k) - ln_factorial(n - k)
}

fn ln_factorial(n: usize) -> f64 {
    (1..=n).map(|i| (i as f64).ln()).sum()
}

/// P(X = i) for X ~ Binomial(n, q).
fn binomial_pmf(n: usize, i: usize, q: f64) -> f64 {
    if q <= 0.0 {
        return f64::from(u8::from(i == 0));
    }
    if q >= 1.0 {
        return f64::from(u8::from(i == n));
    }
    (ln_choose(n, i) + i as f64 * q.ln() + (n - i) as f64 * (1.0 - q).ln()).exp()
}

/// The 1-based ranks `(j, k)` of the narrowest interval `[x(j), x(k)]`
/// around quantile `q` of `n` independent samples that holds it with at
/// least `confidence`, and the exact coverage; `None` when even
/// `[x(1), x(n)]` is short of it. Binomial for small `n`, the normal
/// approximation of Lancet (`n·q ± 1.96·√(n·q·(1−q))`) beyond 1,000.
pub fn quantile_ranks(n: usize, q: f64, confidence: f64) -> Option<(usize, usize, f64)> {
    if n == 0 {
        return None;
    }
    if n > 1000 {
        let z = normal_quantile(0.5 + confidence / 2.0);
        let centre = n as f64 * q;
        let half = z * (n as f64 * q * (1.0 - q)).sqrt();
        let j = ((centre - half).floor() as i64).clamp(1, n as i64) as usize;
        let k = ((centre + half).ceil() as i64 + 1).clamp(1, n as i64) as usize;
        return Some((j, k, confidence));
    }
    // P(x(j) <= Q < x(k)) = Σ_{i=j}^{k-1} P(Bin(n, q) = i).
    let pmf: Vec<f64> = (0..=n).map(|i| binomial_pmf(n, i, q)).collect();
    let coverage = |j: usize, k: usize| pmf[j..k].iter().sum::<f64>();
    if coverage(1, n) < confidence {
        return None;
    }
    // Grow outwards from the quantile's own rank, taking the side that
    // adds more probability, until the interval reaches the confidence.
    let centre = ((n as f64 * q).round() as usize).clamp(1, n);
    let (mut j, mut k) = (centre, centre);
    while coverage(j, k) < confidence {
        let down = if j > 1 { pmf[j - 1] } else { -1.0 };
        let up = if k < n { pmf[k] } else { -1.0 };
        if down >= up {
            j -= 1;
        } else {
            k += 1;
        }
    }
    Some((j, k, coverage(j, k)))
}

/// The distribution-free 95 % interval of the median of `values` (one per
/// repeat): `None` with fewer than [`REPEATS_FOR_INTERVAL`] values.
pub fn median_interval(values: &[f64]) -> Option<Interval> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let (j, k, confidence) = quantile_ranks(v.len(), 0.5, CONFIDENCE)?;
    // Symmetric ranks for the median: the binomial is symmetric at 1/2,
    // so the walk above may lean one way by a rank; take the wider side.
    let n = v.len();
    let lo = j.min(n + 1 - k);
    let hi = n + 1 - lo;
    let confidence = if (lo, hi) == (j, k) {
        confidence
    } else {
        (lo..hi).map(|i| binomial_pmf(n, i, 0.5)).sum()
    };
    Some(Interval {
        low: v[lo - 1],
        high: v[hi - 1],
        confidence,
        kind: IntervalKind::BetweenRuns,
    })
}

/// The median of `values` (the mean of the middle two for an even count).
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The inverse of the standard normal distribution function (Acklam's
/// rational approximation, good to 1e-9).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// The two-sided 97.5 % point of Student's t with `df` degrees of freedom.
fn t_975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        d if d <= 30 => TABLE[d - 1],
        _ => 1.96 + 2.4 / df as f64,
    }
}

/// Lag-1 autocorrelation of `x`.
fn lag1(x: &[f64]) -> f64 {
    let n = x.len();
    if n < 3 {
        return 0.0;
    }
    let mean = x.iter().sum::<f64>() / n as f64;
    let var: f64 = x.iter().map(|v| (v - mean).powi(2)).sum();
    if var == 0.0 {
        return 0.0;
    }
    let cov: f64 = x.windows(2).map(|w| (w[0] - mean) * (w[1] - mean)).sum();
    cov / var
}

/// The within-run 95 % interval of the mean of a per-window series (one
/// value a second): neighbouring windows are merged, two by two, until
/// their lag-1 correlation is within what independent windows show
/// (`|r| < 1.96/√k`), then a t interval over the batches. `None` with
/// fewer than 3 batches left.
pub fn batch_interval(windows: &[f64]) -> Option<Interval> {
    let mut batches: Vec<f64> = windows.iter().copied().filter(|x| x.is_finite()).collect();
    while batches.len() >= 3 && lag1(&batches).abs() >= 1.96 / (batches.len() as f64).sqrt() {
        batches = batches
            .chunks(2)
            .filter(|c| c.len() == 2)
            .map(|c| (c[0] + c[1]) / 2.0)
            .collect();
    }
    let k = batches.len();
    if k < 3 {
        return None;
    }
    let mean = batches.iter().sum::<f64>() / k as f64;
    let sd = (batches.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (k - 1) as f64).sqrt();
    let half = t_975(k - 1) * sd / (k as f64).sqrt();
    Some(Interval {
        low: mean - half,
        high: mean + half,
        confidence: CONFIDENCE,
        kind: IntervalKind::WithinRun,
    })
}

/// The number of orderings of `m` + `n` distinct values that give each
/// Mann–Whitney U from 0 to m·n (U counts pairs with the first side's
/// value above the second's).
fn u_counts(m: usize, n: usize) -> Vec<f64> {
    // f(i, j)[u]: arrangements of i values of one side and j of the other
    // with U = u; f(i, j) = f(i-1, j) shifted by j + f(i, j-1).
    let mut table: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); n + 1]; m + 1];
    for i in 0..=m {
        for j in 0..=n {
            let mut f = vec![0.0; i * j + 1];
            if i == 0 || j == 0 {
                f[0] = 1.0;
            } else {
                for (u, c) in table[i - 1][j].iter().enumerate() {
                    f[u + j] += c;
                }
                for (u, c) in table[i][j - 1].iter().enumerate() {
                    f[u] += c;
                }
            }
            table[i][j] = f;
        }
    }
    std::mem::take(&mut table[m][n])
}

/// The two-sided p of the Mann–Whitney U test that `a` and `b` come from
/// one distribution: exact (the permutation distribution) up to 30 values
/// a side, ties split by mid-ranks; the normal approximation with a tie
/// correction beyond. `None` when either side is empty.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<f64> {
    let (m, n) = (a.len(), b.len());
    if m == 0 || n == 0 {
        return None;
    }
    // U as pairs where a is above b, a tie counting a half.
    let mut u: f64 = 0.0;
    for x in a {
        for y in b {
            u += if x > y {
                1.0
            } else if x == y {
                0.5
            } else {
                0.0
            };
        }
    }
    let mn = (m * n) as f64;
    if m <= 30 && n <= 30 {
        let counts = u_counts(m, n);
        let total: f64 = counts.iter().sum();
        let lower = u.min(mn - u);
        // P(U <= lower), the ties' halves rounded towards the centre.
        let at_most = lower.floor() as usize;
        let tail: f64 = counts[..=at_most.min(counts.len() - 1)].iter().sum::<f64>() / total;
        return Some((2.0 * tail).min(1.0_f64));
    }
    let mut all: Vec<f64> = a.iter().chain(b).copied().collect();
    all.sort_by(f64::total_cmp);
    let ties: f64 = all
        .chunk_by(|x, y| x == y)
        .map(|g| {
            let t = g.len() as f64;
            t * t * t - t
        })
        .sum();
    let total = (m + n) as f64;
    let var = mn / 12.0 * ((total + 1.0) - ties / (total * (total - 1.0)));
    if var <= 0.0 {
        return Some(1.0);
    }
    let z = ((u - mn / 2.0).abs() - 0.5).max(0.0) / var.sqrt();
    Some((2.0 * (1.0 - normal_cdf(z))).min(1.0))
}

/// The standard normal distribution function.
pub fn normal_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

/// The complementary error function (Numerical Recipes' erfcc, 1.2e-7).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// How two figures compare, and on what the judgement rests.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Difference {
    /// The first side's median over the second's.
    pub ratio: f64,
    /// Whether the difference is beyond what the samples can tell apart at
    /// 95 %.
    pub significant: bool,
    /// The Mann–Whitney p, where both sides had repeats to test.
    pub p: Option<f64>,
    /// What the judgement rests on.
    pub basis: Basis,
}

/// What a [`Difference`] was judged on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Basis {
    /// Repeats on both sides (intervals across runs, or the test).
    Repeats,
    /// One run a side: their within-run intervals.
    OneRun,
    /// Nothing to judge by: no interval on a side.
    Nothing,
}

/// Judges two sides of one figure: significant when their between-run
/// intervals are disjoint, or the Mann–Whitney p is below 0.05 with at
/// least [`REPEATS_FOR_TEST`] repeats a side; with one run a side, when
/// their within-run intervals are disjoint (and [`Basis::OneRun`] says it
/// rests on one run).
pub fn judge(
    a: &[f64],
    a_interval: Option<&Interval>,
    b: &[f64],
    b_interval: Option<&Interval>,
) -> Difference {
    let ratio = match (median(a), median(b)) {
        (Some(x), Some(y)) if y != 0.0 => x / y,
        _ => f64::NAN,
    };
    let disjoint = matches!((a_interval, b_interval), (Some(x), Some(y)) if x.disjoint(y));
    if a.len() >= 2 && b.len() >= 2 {
        let p = mann_whitney(a, b);
        let tested = a.len() >= REPEATS_FOR_TEST
            && b.len() >= REPEATS_FOR_TEST
            && p.is_some_and(|p| p < 1.0 - CONFIDENCE);
        let between = matches!(
            (a_interval, b_interval),
            (Some(x), Some(y)) if x.kind == IntervalKind::BetweenRuns && y.kind == IntervalKind::BetweenRuns
        );
        return Difference {
            ratio,
            significant: tested || (between && disjoint),
            p,
            basis: Basis::Repeats,
        };
    }
    let basis = if a_interval.is_some() && b_interval.is_some() {
        Basis::OneRun
    } else {
        Basis::Nothing
    };
    Difference {
        ratio,
        significant: disjoint,
        p: None,
        basis,
    }
}

/// The Theil–Sen slope of `y` against its index (the median of pairwise
/// slopes), and its 95 % interval (Sen's ranks); `None` under 3 values.
pub fn theil_sen(y: &[f64]) -> Option<(f64, f64, f64)> {
    let n = y.len();
    if n < 3 {
        return None;
    }
    let mut slopes = Vec::with_capacity(n * (n - 1) / 2);
    for i in 0..n {
        for j in i + 1..n {
            slopes.push((y[j] - y[i]) / (j - i) as f64);
        }
    }
    slopes.sort_by(f64::total_cmp);
    let big_n = slopes.len();
    let slope = median(&slopes)?;
    // Sen's interval: C = z·√(n(n−1)(2n+5)/18) ranks either side.
    let c = 1.96 * ((n * (n - 1) * (2 * n + 5)) as f64 / 18.0).sqrt();
    let lo = (((big_n as f64 - c) / 2.0).floor() as i64).clamp(0, big_n as i64 - 1) as usize;
    let hi = (((big_n as f64 + c) / 2.0).ceil() as i64).clamp(0, big_n as i64 - 1) as usize;
    Some((slope, slopes[lo], slopes[hi]))
}

/// Seconds of a sliding window the warm-up's trend is judged over.
pub const STEADY_WINDOW_S: usize = 5;

/// Largest trend, per second as a fraction of the level, a steady window
/// may show (TriScale's ±1 %/s).
pub const STEADY_SLOPE: f64 = 0.01;

/// Whether `y` has no trend: its Theil–Sen slope is within
/// ±[`STEADY_SLOPE`] of the level a second, or its 95 % interval has
/// zero strictly inside (on a machine whose seconds move by 10 %, five
/// seconds cannot show a slope of 1 %/s, and a trend they cannot show is
/// not one to wait for; strictly, because five seconds' interval runs
/// from the least pairwise slope to the greatest, and one flat pair at a
/// ramp's end would put zero on its edge); and its first value looks like the rest (within three robust
/// deviations, or 2 % of the level), so that the last second of a ramp
/// does not start a steady window. The level is the window's median.
pub fn is_flat(y: &[f64]) -> bool {
    let Some((slope, lo, hi)) = theil_sen(y) else {
        return false;
    };
    let level = median(y).unwrap_or(0.0);
    if level == 0.0 {
        return slope == 0.0;
    }
    let deviations: Vec<f64> = y.iter().map(|v| (v - level).abs()).collect();
    let spread = 3.0 * 1.4826 * median(&deviations).unwrap_or(0.0);
    (slope.abs() <= STEADY_SLOPE * level.abs() || (lo < 0.0 && hi > 0.0))
        && (y[0] - level).abs() <= spread.max(0.02 * level.abs())
}

/// The first second from which every named series is flat over a window
/// of [`STEADY_WINDOW_S`] seconds: the warm-up's end. `None` when no such
/// window starts in `series` (never steady).
pub fn warmup_end(series: &[&[f64]]) -> Option<usize> {
    let len = series.iter().map(|s| s.len()).min()?;
    (0..=len.checked_sub(STEADY_WINDOW_S)?).find(|&start| {
        series
            .iter()
            .all(|s| is_flat(&s[start..start + STEADY_WINDOW_S]))
    })
}

/// How steady the measured seconds of a run were.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum Stability {
    /// No trend and no shift of level.
    Steady,
    /// A trend: the level moves by `percent_per_s` a second.
    Drifting {
        /// The Theil–Sen slope, percent of the level per second.
        percent_per_s: f64,
    },
    /// The level moved from one value to another at a second.
    LevelShift {
        /// The measured second the new level starts at (0 is the first).
        at_s: u32,
        /// The level before, in the series' unit.
        before: f64,
        /// The level after.
        after: f64,
    },
    /// Too few seconds to tell (fewer than 4).
    TooShort,
}

impl Stability {
    /// As printed beside a run's figures.
    pub fn text(&self) -> String {
        match self {
            Stability::Steady => "steady".into(),
            Stability::Drifting { percent_per_s } => {
                format!("drifting ({percent_per_s:+.1} %/s)")
            }
            Stability::LevelShift {
                at_s,
                before,
                after,
            } => format!(
                "level shift at second {at_s} ({:+.0} %)",
                (after / before - 1.0) * 100.0
            ),
            Stability::TooShort => "too short to tell".into(),
        }
    }

    /// Whether the run's figures stand for one steady state.
    pub fn is_steady(&self) -> bool {
        matches!(self, Stability::Steady | Stability::TooShort)
    }
}

/// Smallest change of level, as a fraction, called a shift: smaller ones
/// are within what a second-by-second series of these machines moves.
pub const SHIFT_FRACTION: f64 = 0.15;

/// Judges a measured per-second series (throughput): a level shift when
/// the split into two segments of at least 2 seconds each that fits two
/// levels best (least absolute deviation) moves the median by more than
/// [`SHIFT_FRACTION`] and the two segments do not
/// overlap in their middle halves (binary segmentation, one split);
/// else drifting when the Theil–Sen slope's interval excludes zero and
/// the slope passes ±[`STEADY_SLOPE`] of the level a second; else steady.
pub fn stability(y: &[f64]) -> Stability {
    let n = y.len();
    if n < 4 {
        return Stability::TooShort;
    }
    // The split that fits two levels best: least absolute deviation from
    // each side's median (the split that moves the median most can be a
    // second off, where one side's median shifts with a single value).
    let mut best: Option<(usize, f64, f64, f64)> = None;
    let mut best_cost = f64::INFINITY;
    let deviation = |side: &[f64], m: f64| side.iter().map(|v| (v - m).abs()).sum::<f64>();
    for at in 2..=n - 2 {
        let (Some(before), Some(after)) = (median(&y[..at]), median(&y[at..])) else {
            continue;
        };
        let scale = before.abs().max(after.abs());
        if scale == 0.0 {
            continue;
        }
        let cost = deviation(&y[..at], before) + deviation(&y[at..], after);
        if cost < best_cost {
            best_cost = cost;
            best = Some((at, before, after, (after - before).abs() / scale));
        }
    }
    if let Some((at, before, after, moved)) = best {
        let separated = {
            let quartiles = |s: &[f64]| {
                let mut v = s.to_vec();
                v.sort_by(f64::total_cmp);
                let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
                (q(0.25), q(0.75))
            };
            let (a, b) = (quartiles(&y[..at]), quartiles(&y[at..]));
            a.1 < b.0 || b.1 < a.0
        };
        // A step, not a ramp: neither side climbs on its own.
        let flat_sides = [&y[..at], &y[at..]].iter().all(|side| {
            side.len() < 3 || theil_sen(side).is_some_and(|(_, lo, hi)| lo <= 0.0 && hi >= 0.0)
        });
        if moved > SHIFT_FRACTION && separated && flat_sides {
            return Stability::LevelShift {
                at_s: at as u32,
                before,
                after,
            };
        }
    }
    if let Some((slope, lo, hi)) = theil_sen(y) {
        let level = median(y).unwrap_or(0.0).abs();
        if level > 0.0 && (lo > 0.0 || hi < 0.0) && slope.abs() > STEADY_SLOPE * level {
            return Stability::Drifting {
                percent_per_s: slope / level * 100.0,
            };
        }
    }
    Stability::Steady
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Six values give [min, max] at 96.9 %, the textbook figure; five
    /// give none.
    #[test]
    fn the_median_of_six_repeats_has_its_interval_at_the_extremes() {
        let i = median_interval(&[5.0, 1.0, 3.0, 2.0, 6.0, 4.0]).expect("six suffice");
        assert_eq!((i.low, i.high), (1.0, 6.0));
        assert!(
            (i.confidence - 62.0 / 64.0).abs() < 1e-9,
            "{}",
            i.confidence
        );
        assert!(median_interval(&[1.0, 2.0, 3.0, 4.0, 5.0]).is_none());
        // Twenty values: ranks 6 and 15 (95.9 %).
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        let i = median_interval(&v).expect("twenty");
        assert_eq!((i.low, i.high), (6.0, 15.0), "{i:?}");
        assert!(i.confidence >= 0.95 && i.confidence < 0.97, "{i:?}");
    }

    /// TriScale's sizing: p90 needs 29 samples for a 95 % interval, p99
    /// needs 299.
    #[test]
    fn a_quantile_needs_the_samples_triscale_says() {
        assert!(quantile_ranks(28, 0.9, 0.95).is_none());
        assert!(quantile_ranks(29, 0.9, 0.95).is_some());
        assert!(quantile_ranks(298, 0.99, 0.95).is_none());
        assert!(quantile_ranks(299, 0.99, 0.95).is_some());
    }

    /// The exact p of the smallest samples: 3 a side can never reach
    /// 0.05 (0.10), 4 a side can (0.029), as benchstat's notes say.
    #[test]
    fn mann_whitney_has_the_textbook_smallest_p() {
        let p3 = mann_whitney(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).expect("p");
        assert!((p3 - 0.1).abs() < 1e-9, "{p3}");
        let p4 = mann_whitney(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0]).expect("p");
        assert!((p4 - 2.0 / 70.0).abs() < 1e-9, "{p4}");
        let same = mann_whitney(&[1.0, 3.0, 5.0, 7.0], &[2.0, 4.0, 6.0, 8.0]).expect("p");
        assert!(same > 0.5, "{same}");
        // Large samples take the normal approximation: a clear shift.
        let a: Vec<f64> = (0..40).map(f64::from).collect();
        let b: Vec<f64> = (0..40).map(|i| f64::from(i) + 20.0).collect();
        assert!(mann_whitney(&a, &b).expect("p") < 0.001);
    }

    /// Three repeats a side never make a difference significant by the
    /// test; disjoint between-run intervals of six do.
    #[test]
    fn judging_needs_enough_repeats() {
        let d = judge(&[1.0, 1.1, 1.2], None, &[2.0, 2.1, 2.2], None);
        assert!(!d.significant, "{d:?}");
        let a = [1.0, 1.1, 1.2, 1.05, 1.15, 1.12];
        let b = [2.0, 2.1, 2.2, 2.05, 2.15, 2.12];
        let d = judge(
            &a,
            median_interval(&a).as_ref(),
            &b,
            median_interval(&b).as_ref(),
        );
        assert!(d.significant && d.basis == Basis::Repeats, "{d:?}");
        assert!((d.ratio - 1.11 / 2.11).abs() < 1e-9, "{d:?}");
    }

    /// Independent windows keep their count; a slow wave is merged into
    /// fewer, longer batches, and the interval holds the mean.
    #[test]
    fn batch_means_merge_correlated_windows() {
        let mut rng = crate::workload::Rng::new(7, 0);
        let noise: Vec<f64> = (0..32).map(|_| 100.0 + rng.unit()).collect();
        let i = batch_interval(&noise).expect("an interval");
        assert!(i.contains(100.5) && i.high - i.low < 0.5, "{i:?}");
        let wave: Vec<f64> = (0..32)
            .map(|t| 100.0 + (f64::from(t) / 5.0).sin())
            .collect();
        let w = batch_interval(&wave);
        assert!(w.is_none_or(|w| w.high - w.low > i.high - i.low), "{w:?}");
    }

    /// A 10 s ramp to a flat level is over at second 10, give or take one.
    #[test]
    fn the_warmup_ends_where_a_ramp_does() {
        let mut rng = crate::workload::Rng::new(3, 0);
        let y: Vec<f64> = (0..30)
            .map(|t| {
                let level = if t < 10 {
                    1000.0 * f64::from(t + 1) / 10.0
                } else {
                    1000.0
                };
                level * (1.0 + 0.02 * (rng.unit() - 0.5))
            })
            .collect();
        let end = warmup_end(&[&y]).expect("steady after the ramp");
        assert!((9..=11).contains(&end), "{end}");
        let climbing: Vec<f64> = (0..30).map(|t| 100.0 + 10.0 * f64::from(t)).collect();
        assert_eq!(warmup_end(&[&climbing]), None);
        // Seconds that move by ±10 % about one level hold no trend to
        // wait for: a Redis server's first eight warm-up seconds here,
        // throughput and p99 (ns).
        let noisy = [
            91_881.0, 98_713.0, 79_073.0, 89_954.0, 94_719.0, 81_384.0, 91_068.0, 92_296.0,
        ];
        let p99 = [
            1_132_543.0,
            900_607.0,
            1_412_095.0,
            1_428_479.0,
            1_740_799.0,
            1_418_239.0,
            1_282_047.0,
            1_523_711.0,
        ];
        let end = warmup_end(&[&noisy, &p99]);
        assert!(end.is_some_and(|s| s <= 2), "{end:?}");
        // The mock's 10 s ramp, throughput and p99 each second: its last
        // seconds beside the first flat ones do not make a steady window.
        let ramp_ops = [
            950.0, 1022.0, 1104.0, 1200.0, 1314.0, 1454.0, 1623.0, 1842.0, 2126.0, 2514.0, 2759.0,
            2759.0, 2758.0, 2759.0, 2760.0,
        ];
        let ramp_p99 = [
            5_656_575.0,
            5_292_031.0,
            4_907_007.0,
            4_521_983.0,
            4_136_959.0,
            3_766_271.0,
            3_377_151.0,
            3_006_463.0,
            2_623_487.0,
            2_236_415.0,
            1_900_543.0,
            1_900_543.0,
            1_900_543.0,
            1_900_543.0,
            1_900_543.0,
        ];
        assert_eq!(warmup_end(&[&ramp_ops, &ramp_p99]), Some(10));
    }

    /// A level shift is found at its second; a flat series is steady; a
    /// steady climb is drifting.
    #[test]
    fn stability_names_shifts_and_drifts() {
        let mut rng = crate::workload::Rng::new(5, 0);
        let mut noisy = |level: f64| level * (1.0 + 0.04 * (rng.unit() - 0.5));
        let shift: Vec<f64> = (0..12)
            .map(|t| noisy(if t < 7 { 1000.0 } else { 600.0 }))
            .collect();
        match stability(&shift) {
            Stability::LevelShift { at_s, .. } => assert_eq!(at_s, 7),
            other => panic!("{other:?}"),
        }
        // The split that moves the median most is one late here (the
        // median after it, 65, is lower than at the true split's, 65.5):
        // the split that fits two levels best is at the step.
        let step = [
            100.0, 101.0, 99.0, 100.0, 102.0, 100.0, 67.0, 66.0, 64.0, 65.0, 66.0, 64.0,
        ];
        match stability(&step) {
            Stability::LevelShift { at_s, .. } => assert_eq!(at_s, 6),
            other => panic!("{other:?}"),
        }
        let flat: Vec<f64> = (0..12).map(|_| noisy(1000.0)).collect();
        assert_eq!(stability(&flat), Stability::Steady);
        let climb: Vec<f64> = (0..12)
            .map(|t| noisy(1000.0 + 40.0 * f64::from(t)))
            .collect();
        assert!(
            matches!(stability(&climb), Stability::Drifting { percent_per_s } if percent_per_s > 2.0),
            "{:?}",
            stability(&climb)
        );
    }
}
