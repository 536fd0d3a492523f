//! Latency statistics: a log-linear histogram (HDR-style) with a bounded
//! relative error, plus exact count, min, max, mean and standard deviation.
//!
//! Values are nanoseconds. Values below [`SUB`] get one bucket each (exact);
//! above, every power of two is split into [`SUB`] equal buckets, so a bucket
//! is at most 1/[`SUB`] of its lower bound wide. A percentile is reported as
//! the midpoint of its bucket, so its relative error is at most 1/(2·[`SUB`])
//! = 0.39% (the requirement is under 1%).

use serde::Serialize;

/// Buckets per power of two (and the width of the exact range).
pub const SUB: u64 = 128;
const SUB_BITS: u32 = 7;
/// Largest value that gets its own bucket; larger values are clamped here
/// (2^40 ns is about 18 minutes).
const MAX_BITS: u32 = 40;
const N_BUCKETS: usize = ((MAX_BITS - SUB_BITS + 1) as usize) * SUB as usize;

/// One non-empty histogram bucket: values in `[lo_ns, hi_ns]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Bucket {
    pub lo_ns: u64,
    pub hi_ns: u64,
    pub count: u64,
}

#[derive(Debug, Clone)]
pub struct Histogram {
    counts: Vec<u64>,
    n: u64,
    min: u64,
    max: u64,
    sum: f64,
    sum_sq: f64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

fn index_of(v: u64) -> usize {
    let v = v.min((1u64 << MAX_BITS) - 1);
    if v < SUB {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros(); // >= SUB_BITS
    let shift = msb - SUB_BITS;
    let top = v >> shift; // in [SUB, 2*SUB)
    ((shift as u64 + 1) * SUB + (top - SUB)) as usize
}

/// Inclusive value range of bucket `i`.
fn range_of(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < SUB {
        return (i, i);
    }
    let shift = i / SUB - 1;
    let top = SUB + i % SUB;
    let lo = top << shift;
    (lo, lo + (1u64 << shift) - 1)
}

impl Histogram {
    pub fn new() -> Self {
        Histogram {
            counts: vec![0; N_BUCKETS],
            n: 0,
            min: u64::MAX,
            max: 0,
            sum: 0.0,
            sum_sq: 0.0,
        }
    }

    pub fn record(&mut self, ns: u64) {
        self.counts[index_of(ns)] += 1;
        self.n += 1;
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        let v = ns as f64;
        self.sum += v;
        self.sum_sq += v * v;
    }

    pub fn count(&self) -> u64 {
        self.n
    }

    /// Add every value of `other` (as if recorded here).
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.n += other.n;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
    }

    pub fn min(&self) -> Option<u64> {
        (self.n > 0).then_some(self.min)
    }

    pub fn max(&self) -> Option<u64> {
        (self.n > 0).then_some(self.max)
    }

    pub fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / self.n as f64)
    }

    /// Population standard deviation.
    pub fn stddev(&self) -> Option<f64> {
        let mean = self.mean()?;
        let var = (self.sum_sq / self.n as f64 - mean * mean).max(0.0);
        Some(var.sqrt())
    }

    /// Value at quantile `q` (0..=1) by nearest rank, as the midpoint of its
    /// bucket clamped to the observed min/max. `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.n == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, hi) = range_of(i);
                let mid = (lo as f64 + hi as f64) / 2.0;
                return Some(mid.clamp(self.min as f64, self.max as f64));
            }
        }
        Some(self.max as f64)
    }

    /// A quantile only when at least `min_tail` samples lie beyond it, so
    /// that p99.9 of 500 samples is "n/a" rather than the maximum in disguise.
    pub fn quantile_if_enough(&self, q: f64, min_tail: f64) -> Option<f64> {
        ((self.n as f64) * (1.0 - q) >= min_tail)
            .then(|| self.quantile(q))
            .flatten()
    }

    /// The non-empty buckets, lowest first.
    pub fn buckets(&self) -> Vec<Bucket> {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, &count)| {
                let (lo_ns, hi_ns) = range_of(i);
                Bucket { lo_ns, hi_ns, count }
            })
            .collect()
    }
}

/// Summary of a latency distribution, in milliseconds. Percentiles with too
/// few samples beyond them are `None` ("n/a").
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    pub count: u64,
    pub min_ms: Option<f64>,
    pub mean_ms: Option<f64>,
    pub stddev_ms: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub p99_9_ms: Option<f64>,
    pub max_ms: Option<f64>,
}

/// Samples that must lie beyond a percentile for it to be reported.
pub const MIN_TAIL: f64 = 10.0;

impl LatencySummary {
    pub fn of(h: &Histogram) -> Self {
        let ms = |ns: f64| ns / 1e6;
        LatencySummary {
            count: h.count(),
            min_ms: h.min().map(|v| ms(v as f64)),
            mean_ms: h.mean().map(ms),
            stddev_ms: h.stddev().map(ms),
            p50_ms: h.quantile_if_enough(0.5, 1.0).map(ms),
            p90_ms: h.quantile_if_enough(0.9, MIN_TAIL).map(ms),
            p99_ms: h.quantile_if_enough(0.99, MIN_TAIL).map(ms),
            p99_9_ms: h.quantile_if_enough(0.999, MIN_TAIL).map(ms),
            max_ms: h.max().map(|v| ms(v as f64)),
        }
    }
}

/// Pearson correlation coefficient; `None` with fewer than 3 points or no
/// variance.
pub fn correlation(xs: &[f64], ys: &[f64]) -> Option<f64> {
    let n = xs.len().min(ys.len());
    if n < 3 {
        return None;
    }
    let nf = n as f64;
    let mx = xs[..n].iter().sum::<f64>() / nf;
    let my = ys[..n].iter().sum::<f64>() / nf;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (x, y) in xs[..n].iter().zip(&ys[..n]) {
        let (dx, dy) = (x - mx, y - my);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx.sqrt() * syy.sqrt()))
}

/// Median of a slice (average of the two middle values for an even length).
pub fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    Some(if s.len().is_multiple_of(2) {
        (s[m - 1] + s[m]) / 2.0
    } else {
        s[m]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_values_without_gaps() {
        let mut prev_hi = None;
        for i in 0..N_BUCKETS {
            let (lo, hi) = range_of(i);
            if let Some(p) = prev_hi {
                assert_eq!(lo, p + 1, "gap before bucket {i}");
            }
            assert!(hi >= lo);
            assert_eq!(index_of(lo), i);
            assert_eq!(index_of(hi), i);
            prev_hi = Some(hi);
        }
    }

    #[test]
    fn relative_error_is_under_one_percent() {
        // Every value from 1 ns to ~1 s (sampled geometrically) is reported
        // within 1% by the midpoint of its bucket.
        let mut v = 1u64;
        let mut worst: f64 = 0.0;
        while v < 1_000_000_000 {
            let (lo, hi) = range_of(index_of(v));
            let mid = (lo as f64 + hi as f64) / 2.0;
            worst = worst.max((mid - v as f64).abs() / v as f64);
            v = v + v / 97 + 1;
        }
        assert!(worst < 0.01, "worst relative error {worst}");
        assert!(worst <= 1.0 / (2.0 * SUB as f64) + 1e-12, "worst {worst}");
    }

    #[test]
    fn percentiles_of_a_uniform_distribution() {
        // 1..=100_000 µs in ns: p50 = 50_000 µs, p90 = 90_000 µs, p99 = 99_000 µs.
        let mut h = Histogram::new();
        for i in 1..=100_000u64 {
            h.record(i * 1000);
        }
        for (q, want) in [(0.5, 50_000e3), (0.9, 90_000e3), (0.99, 99_000e3), (0.999, 99_900e3)] {
            let got = h.quantile(q).unwrap();
            assert!((got - want).abs() / want < 0.01, "q{q}: got {got} want {want}");
        }
        assert_eq!(h.min(), Some(1000));
        assert_eq!(h.max(), Some(100_000_000));
        let mean = h.mean().unwrap();
        assert!((mean - 50_000.5e3).abs() < 1e-3, "{mean}");
        // stddev of a discrete uniform 1..N is sqrt((N²-1)/12).
        let sd = h.stddev().unwrap() / 1000.0;
        let want = ((1e10f64 - 1.0) / 12.0).sqrt();
        assert!((sd - want).abs() / want < 1e-6, "{sd} vs {want}");
    }

    #[test]
    fn percentiles_of_an_exponential_distribution() {
        // Deterministic quantiles of Exp(mean 100 µs): q-th value = -mean·ln(1-q).
        let n = 50_000;
        let mut h = Histogram::new();
        for i in 0..n {
            let u = (i as f64 + 0.5) / n as f64;
            h.record((-100_000.0 * (1.0 - u).ln()) as u64);
        }
        for q in [0.5, 0.9, 0.99, 0.999] {
            let want = -100_000.0 * (1.0f64 - q).ln();
            let got = h.quantile(q).unwrap();
            assert!((got - want).abs() / want < 0.01, "q{q}: {got} vs {want}");
        }
        let mean = h.mean().unwrap();
        assert!((mean - 100_000.0).abs() / 100_000.0 < 0.01, "{mean}");
    }

    #[test]
    fn small_counts_hide_extreme_percentiles() {
        let mut h = Histogram::new();
        for i in 0..500 {
            h.record(1000 + i);
        }
        let s = LatencySummary::of(&h);
        assert!(s.p50_ms.is_some() && s.p90_ms.is_some());
        assert_eq!(s.p99_ms, None, "500 samples leave 5 beyond p99");
        assert_eq!(s.p99_9_ms, None);
        assert_eq!(LatencySummary::of(&Histogram::new()).p50_ms, None);
    }

    #[test]
    fn merged_histograms_equal_one_recording() {
        let (mut a, mut b, mut all) = (Histogram::new(), Histogram::new(), Histogram::new());
        for i in 0..1000u64 {
            let v = 1000 + i * 37;
            if i % 3 == 0 {
                a.record(v)
            } else {
                b.record(v)
            }
            all.record(v);
        }
        a.merge(&b);
        a.merge(&Histogram::new());
        assert_eq!(a.buckets(), all.buckets());
        assert_eq!((a.count(), a.min(), a.max()), (all.count(), all.min(), all.max()));
        assert!((a.mean().unwrap() - all.mean().unwrap()).abs() < 1e-9);
    }

    #[test]
    fn single_value_and_huge_values() {
        let mut h = Histogram::new();
        h.record(42);
        assert_eq!(h.quantile(0.5), Some(42.0));
        h.record(u64::MAX);
        assert_eq!(h.max(), Some(u64::MAX));
        assert_eq!(h.buckets().len(), 2);
    }

    #[test]
    fn correlation_and_median() {
        let xs = [1.0, 2.0, 3.0, 4.0];
        assert!((correlation(&xs, &[2.0, 4.0, 6.0, 8.0]).unwrap() - 1.0).abs() < 1e-12);
        assert!((correlation(&xs, &[8.0, 6.0, 4.0, 2.0]).unwrap() + 1.0).abs() < 1e-12);
        assert_eq!(correlation(&xs, &[1.0, 1.0, 1.0, 1.0]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }
}
