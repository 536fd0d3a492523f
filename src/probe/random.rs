//! Random read latency at queue depth 1: uniformly random offsets aligned to
//! the block size over the whole target (or a span), one `pread` at a time,
//! each timed with the monotonic clock (`Instant`) into a log-linear
//! histogram. A few warm-up reads are discarded. The test stops at its sample
//! cap, its time cap, or when cancelled.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::stats::{self, Bucket, Histogram, LatencySummary};
use super::target::{self, Target};
use super::{CancelToken, DiskCheck, Phase, ProbeConfig, Progress, Stop, Throttle};
use crate::sys::aligned::AlignedBuf;

/// Reads issued before timing starts (not recorded).
pub const WARMUP_READS: u64 = 16;
/// Warm-up median at or above this looks rotational: the time cap triples
/// (unless the user set one), so enough slow samples are collected.
const ROTATIONAL_WARMUP_MS: f64 = 2.0;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RandomResult {
    pub bs: u64,
    pub queue_depth: u32,
    /// `[start, end)` of the offsets drawn.
    pub span: (u64, u64),
    pub warmup_reads: u64,
    pub sample_cap: u64,
    pub time_cap_s: f64,
    /// Every read issued, warm-up included (for the diskstats check).
    pub reads_issued: u64,
    pub duration_s: f64,
    pub iops: Option<f64>,
    pub mb_per_s: Option<f64>,
    pub latency: LatencySummary,
    /// Correlation of latency with √(seek distance): > 0.3 means a head moves.
    pub seek_correlation: Option<f64>,
    pub stopped: Stop,
    /// Non-empty buckets of the latency histogram, in ns.
    pub histogram: Vec<Bucket>,
    pub disk_check: Option<DiskCheck>,
}

/// splitmix64: small, fast, good enough to spread offsets uniformly.
pub struct Rng(u64);

impl Rng {
    /// A fixed seed: the same sequence every time (tests).
    #[cfg(any(test, feature = "test-support"))]
    pub fn from_seed(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn seeded() -> Self {
        let t = crate::collect::monotonic_ns();
        Rng(t ^ (u64::from(std::process::id()) << 32) ^ 0x9e37_79b9_7f4a_7c15)
    }
    /// A seeded generator for thread `i` of a pool (distinct streams even
    /// when seeded in the same nanosecond).
    pub fn seeded_stream(i: u64) -> Self {
        let mut r = Self::seeded();
        r.0 ^= i.wrapping_mul(0xd1b5_4a32_d192_ed03);
        r
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `[0, n)` (Lemire's multiply-shift; bias below 2^-40 for
    /// any n a disk can have).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

pub fn run(
    t: &Target,
    cfg: &ProbeConfig,
    bs: u64,
    cap: Duration,
    cancel: &CancelToken,
    on_progress: &mut dyn FnMut(Progress),
) -> anyhow::Result<RandomResult> {
    let (start, end) = match cfg.span {
        Some((s, e)) => {
            anyhow::ensure!(
                s % bs == 0 && s < e && e <= t.size && e - s >= bs,
                "span {s}..{e} must lie inside {} ({} B), start on a {bs} B boundary and hold one read",
                t.display,
                t.size
            );
            (s, e)
        }
        None => (0, t.size),
    };
    let blocks = (end - start) / bs;
    let sample_cap = cfg.max_reads.unwrap_or(match cfg.depth {
        super::Depth::Quick => 20_000,
        super::Depth::Thorough => 100_000,
    });
    let mut buf = AlignedBuf::new(bs as usize, t.mem_align)?;
    let buf = buf.as_mut_slice();
    let mut rng = Rng::seeded();
    let mut issued = 0u64;
    let mut read_one = |off: u64| -> anyhow::Result<Duration> {
        t.evict(off, bs);
        let t0 = Instant::now();
        target::read_exact_at(t, buf, off)?;
        Ok(t0.elapsed())
    };

    let mut warm = Vec::new();
    for _ in 0..WARMUP_READS {
        if cancel.is_cancelled() {
            break;
        }
        let off = start + rng.below(blocks) * bs;
        warm.push(read_one(off)?.as_secs_f64() * 1000.0);
        issued += 1;
    }
    let mut cap = cap;
    if cfg.duration.is_none() && stats::median(&warm).is_some_and(|m| m >= ROTATIONAL_WARMUP_MS) {
        cap *= 3;
    }

    let mut hist = Histogram::new();
    let mut seek = Vec::new();
    let mut lat = Vec::new();
    let mut prev = None;
    let mut throttle = Throttle::new();
    let began = Instant::now();
    let mut stopped = Stop::Done;
    while hist.count() < sample_cap {
        if cancel.is_cancelled() {
            stopped = Stop::Cancelled;
            break;
        }
        let elapsed = began.elapsed();
        if elapsed >= cap {
            stopped = Stop::TimeCap;
            break;
        }
        let off = start + rng.below(blocks) * bs;
        let dt = read_one(off)?;
        issued += 1;
        let ns = u64::try_from(dt.as_nanos()).unwrap_or(u64::MAX);
        hist.record(ns);
        if let Some(p) = prev {
            let d = off.abs_diff(p);
            seek.push((d as f64).sqrt());
            lat.push(ns as f64);
        }
        prev = Some(off);
        if throttle.due() {
            let n = hist.count();
            on_progress(Progress {
                phase: Phase::Random,
                fraction: (n as f64 / sample_cap as f64)
                    .max(elapsed.as_secs_f64() / cap.as_secs_f64())
                    .min(1.0),
                elapsed_s: elapsed.as_secs_f64(),
                reads: n,
                p50_ms: hist.quantile(0.5).map(|v| v / 1e6),
                iops: (elapsed.as_secs_f64() > 0.0).then(|| n as f64 / elapsed.as_secs_f64()),
                zones: Vec::new(),
                size_bytes: t.size,
                queue_depth: None,
                depths: Vec::new(),
            });
        }
    }
    let duration = began.elapsed().as_secs_f64();
    let n = hist.count();
    let iops = (n > 0 && duration > 0.0).then(|| n as f64 / duration);
    Ok(RandomResult {
        bs,
        queue_depth: 1,
        span: (start, end),
        warmup_reads: WARMUP_READS.min(issued),
        sample_cap,
        time_cap_s: cap.as_secs_f64(),
        reads_issued: issued,
        duration_s: duration,
        iops,
        mb_per_s: iops.map(|i| i * bs as f64 / 1e6),
        latency: LatencySummary::of(&hist),
        seek_correlation: stats::correlation(&seek, &lat),
        stopped,
        histogram: hist.buckets(),
        disk_check: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_uniform_and_in_range() {
        let mut r = Rng(1);
        let mut counts = [0u32; 10];
        for _ in 0..100_000 {
            let v = r.below(10);
            counts[v as usize] += 1;
        }
        for c in counts {
            assert!((9_500..10_500).contains(&c), "{counts:?}");
        }
        assert_eq!(r.below(1), 0);
    }
}
