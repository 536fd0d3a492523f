//! Histograms of per-request values: latency (log-linear, about 3%
//! resolution), request size and seek distance (powers of two).

use serde::{Deserialize, Serialize};

/// Sub-buckets per power of two: 2^4 = 16, so a bucket is at most 1/16
/// of its value wide and a percentile (the bucket's middle) is within 3%.
const SUB_BITS: u32 = 4;
const SUB: usize = 1 << SUB_BITS;
/// Largest power of two kept: 2^40 ns, about 18 minutes; longer values
/// land in the last bucket (the exact maximum is kept aside).
const MAX_EXP: u32 = 40;
const BUCKETS: usize = (MAX_EXP - SUB_BITS + 2) as usize * SUB;

/// Latency histogram over nanoseconds (recorded as its non-empty
/// buckets, see [`SparseHist`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "SparseHist", from = "SparseHist")]
pub struct LatHist {
    counts: Vec<u32>,
    pub n: u64,
    pub max: u64,
    pub sum: u64,
}

fn index(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let e = (63 - v.leading_zeros()).min(MAX_EXP);
    let v = v.min((1u64 << (MAX_EXP + 1)) - 1);
    let m = (v >> (e - SUB_BITS)) as usize - SUB;
    (e - SUB_BITS + 1) as usize * SUB + m
}

/// (lowest value, width) of a bucket.
fn bounds(i: usize) -> (u64, u64) {
    if i < SUB {
        return (i as u64, 1);
    }
    let e = (i / SUB) as u32 + SUB_BITS - 1;
    let m = (i % SUB + SUB) as u64;
    (m << (e - SUB_BITS), 1 << (e - SUB_BITS))
}

/// Percentiles of a histogram, ns.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Percentiles {
    pub p50: u64,
    pub p95: u64,
    pub p99: u64,
    pub max: u64,
}

impl LatHist {
    pub fn record(&mut self, ns: u64) {
        if self.counts.is_empty() {
            self.counts = vec![0; BUCKETS];
        }
        let i = index(ns);
        self.counts[i] = self.counts[i].saturating_add(1);
        self.n += 1;
        self.max = self.max.max(ns);
        self.sum = self.sum.saturating_add(ns);
    }

    pub fn merge(&mut self, o: &LatHist) {
        if o.n == 0 {
            return;
        }
        if self.counts.is_empty() {
            self.counts = vec![0; BUCKETS];
        }
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a = a.saturating_add(*b);
        }
        self.n += o.n;
        self.max = self.max.max(o.max);
        self.sum = self.sum.saturating_add(o.sum);
    }

    /// The value at quantile `q` (0..=1): the middle of the bucket holding
    /// the ⌈q·n⌉-th smallest value, never above the maximum. `None` when
    /// empty.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.n == 0 {
            return None;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += u64::from(c);
            if seen >= rank {
                let (lo, w) = bounds(i);
                return Some((lo + w / 2).min(self.max));
            }
        }
        Some(self.max)
    }

    pub fn percentiles(&self) -> Option<Percentiles> {
        Some(Percentiles {
            p50: self.quantile(0.50)?,
            p95: self.quantile(0.95)?,
            p99: self.quantile(0.99)?,
            max: self.max,
        })
    }

    /// Counts folded into power-of-two buckets: `(upper bound ns, count)`
    /// for each non-empty one, the bound exclusive.
    pub fn log2_buckets(&self) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        for (i, &c) in self.counts.iter().enumerate().filter(|(_, c)| **c > 0) {
            let (lo, _) = bounds(i);
            let upper = if lo == 0 { 1 } else { 1u64 << (64 - lo.leading_zeros()) };
            match out.last_mut() {
                Some((u, n)) if *u == upper => *n += u64::from(c),
                _ => out.push((upper, u64::from(c))),
            }
        }
        out
    }
}

/// A [`LatHist`] as recordings hold it: (bucket, count) of the non-empty
/// buckets. Buckets beyond this build's are dropped on reading.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SparseHist {
    b: Vec<(u32, u32)>,
    n: u64,
    max: u64,
    sum: u64,
}

impl From<LatHist> for SparseHist {
    fn from(h: LatHist) -> Self {
        let b = h
            .counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| (i as u32, *c))
            .collect();
        SparseHist {
            b,
            n: h.n,
            max: h.max,
            sum: h.sum,
        }
    }
}

impl From<SparseHist> for LatHist {
    fn from(s: SparseHist) -> Self {
        let mut counts = Vec::new();
        if !s.b.is_empty() {
            counts = vec![0; BUCKETS];
            for (i, c) in s.b {
                if let Some(slot) = counts.get_mut(i as usize) {
                    *slot = c;
                }
            }
        }
        LatHist {
            counts,
            n: s.n,
            max: s.max,
            sum: s.sum,
        }
    }
}

/// A power-of-two histogram of sizes or distances: bucket 0 holds 0, bucket
/// k ≥ 1 holds values in [2^(k-1), 2^k).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Log2Hist {
    pub counts: Vec<u64>,
}

impl Log2Hist {
    pub fn record(&mut self, v: u64) {
        let k = (64 - v.leading_zeros()) as usize;
        if self.counts.len() <= k {
            self.counts.resize(k + 1, 0);
        }
        self.counts[k] += 1;
    }

    /// `(upper bound exclusive, count)` of the non-empty buckets.
    pub fn buckets(&self) -> Vec<(u64, u64)> {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(k, c)| (if k == 0 { 1 } else { 1u64 << k.min(63) }, *c))
            .collect()
    }

    pub fn merge(&mut self, o: &Log2Hist) {
        if self.counts.len() < o.counts.len() {
            self.counts.resize(o.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_values() {
        for v in [
            0u64,
            1,
            15,
            16,
            17,
            31,
            32,
            100,
            1000,
            4095,
            4096,
            123_456,
            1 << 39,
            1 << 40,
        ] {
            let (lo, w) = bounds(index(v));
            assert!(lo <= v && v < lo + w, "{v} not in [{lo}, {})", lo + w);
            assert!(w * 16 <= lo.max(16), "bucket of {v} too wide: {w}");
        }
        assert_eq!(index(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn percentiles_hand_computed() {
        // 100 values: 1..=100 µs. p50 is the 50th = 50 µs, p95 = 95 µs,
        // p99 = 99 µs; each reported as its bucket's middle.
        let mut h = LatHist::default();
        for us in 1..=100u64 {
            h.record(us * 1000);
        }
        let p = h.percentiles().unwrap();
        // 50_000 ns: e = 15, width 2^11 = 2048, bucket [49152, 51200) -> 50176
        assert_eq!(p.p50, 50_176);
        // 95_000: e = 16, width 4096, bucket [94208, 98304) -> 96256
        assert_eq!(p.p95, 96_256);
        // 99_000: [98304, 102400) -> 100352, under the max 100_000 -> clamped
        assert_eq!(p.p99, 100_000);
        assert_eq!(p.max, 100_000);
        for (q, exact) in [(0.5, 50_000.0), (0.95, 95_000.0), (0.99, 99_000.0)] {
            let v = h.quantile(q).unwrap() as f64;
            assert!((v - exact).abs() / exact < 0.035, "q{q}: {v}");
        }
        assert_eq!(LatHist::default().percentiles(), None);
    }

    #[test]
    fn merge_and_log2() {
        let mut a = LatHist::default();
        a.record(3);
        a.record(1500);
        let mut b = LatHist::default();
        b.record(1600);
        a.merge(&b);
        assert_eq!((a.n, a.max, a.sum), (3, 1600, 3103));
        // 3 -> [2,4): upper 4; 1500 and 1600 -> [1024, 2048): upper 2048
        assert_eq!(a.log2_buckets(), vec![(4, 1), (2048, 2)]);
        let mut s = Log2Hist::default();
        for v in [0, 1, 4096, 4096, 5000, 1 << 20] {
            s.record(v);
        }
        assert_eq!(s.buckets(), vec![(1, 1), (2, 1), (8192, 3), (1 << 21, 1)]);
    }
}
