//! The exporter's latency histograms: traced requests' log2 buckets
//! accumulated since iolens started, written with Prometheus's fixed bounds.

use std::collections::BTreeMap;

/// A cumulative histogram in power-of-two ns buckets.
#[derive(Debug, Clone, Default)]
pub struct Hist {
    /// Upper bound (exclusive, ns, a power of two) → count.
    buckets: BTreeMap<u64, u64>,
    pub(super) sum_ns: u64,
    pub(super) count: u64,
}

impl Hist {
    pub(super) fn add(&mut self, h: &crate::model::trace::hist::LatHist) {
        for (lt, n) in h.log2_buckets() {
            *self.buckets.entry(lt).or_default() += n;
        }
        self.sum_ns = self.sum_ns.saturating_add(h.sum);
        self.count += h.n;
    }

    /// Buckets as (le seconds, count in the bucket): values are whole ns,
    /// so `< 2^k` ns is `<= 2^k - 1` ns. Every bound from 1 µs to 32 s is
    /// listed (Prometheus needs the same bounds on every scrape).
    pub(super) fn prometheus_buckets(&self) -> Vec<(f64, u64)> {
        let mut out: Vec<(f64, u64)> = (10..=35).map(|k| (((1u64 << k) - 1) as f64 / 1e9, 0)).collect();
        let mut over = 0;
        for (&lt, &n) in &self.buckets {
            match (10..=35u32).position(|k| lt <= 1u64 << k) {
                Some(i) => out[i].1 += n,
                None => over += n,
            }
        }
        out.push((f64::MAX, over));
        out
    }
}
