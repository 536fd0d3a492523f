//! `iolens probe size TARGET`: random reads of 4 KiB, 8 KiB, … 4 MiB at
//! queue depth 1 (offsets uniformly random, aligned to the request size),
//! one size after the other: IOPS, MB/s and latency per size, and the size
//! where throughput stops growing (the smallest size that reaches 90% of
//! the best MB/s of the sweep). Each size runs until its read cap, its
//! byte cap or its share of the time cap; cancellable between two reads.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::random::Rng;
use super::stats::{Histogram, LatencySummary};
use super::target::{self, Target};
use super::{CancelToken, Phase, ProbeConfig, Progress, Stop, Throttle};
use crate::sys::aligned::AlignedBuf;

pub const MIN_SIZE: u64 = 4 << 10;
pub const MAX_SIZE: u64 = 4 << 20;
/// Throughput within this share of the best counts as "stopped growing".
pub const PLATEAU: f64 = 0.9;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizePoint {
    pub bytes: u64,
    pub reads: u64,
    pub duration_s: f64,
    pub iops: Option<f64>,
    pub mb_per_s: Option<f64>,
    pub latency: LatencySummary,
    pub stopped: Stop,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizeResult {
    pub points: Vec<SizePoint>,
    /// The smallest size reaching [`PLATEAU`] of the best MB/s; `None`
    /// without throughput or when the largest size was still the only one
    /// there (throughput may grow further).
    pub plateau_bytes: Option<u64>,
    /// The best MB/s of the sweep and its size.
    pub best_mb_per_s: Option<f64>,
    pub best_bytes: Option<u64>,
    /// Caps per size.
    pub reads_cap: u64,
    pub bytes_cap: u64,
    pub time_per_size_s: f64,
    pub reads_issued: u64,
    pub bytes_issued: u64,
    pub stopped: Stop,
    /// The device's diskstats against the reads issued.
    pub disk_check: Option<super::DiskCheck>,
}

/// The sizes of the sweep that fit the target and its alignment.
pub fn sizes(align: u64, target_size: u64) -> Vec<u64> {
    std::iter::successors(Some(MIN_SIZE), |s| (*s < MAX_SIZE).then_some(s * 2))
        .filter(|s| s % align.max(1) == 0 && *s <= target_size)
        .collect()
}

/// The smallest size whose MB/s reaches [`PLATEAU`] of the best; `None`
/// when that is the largest size measured (it may still be growing).
pub fn plateau(points: &[(u64, f64)]) -> Option<u64> {
    let best = points.iter().map(|p| p.1).fold(0.0, f64::max);
    if best <= 0.0 {
        return None;
    }
    let first = points.iter().find(|p| p.1 >= PLATEAU * best)?;
    let largest = points.iter().map(|p| p.0).max()?;
    (first.0 < largest).then_some(first.0)
}

pub fn run(
    t: &Target,
    cfg: &ProbeConfig,
    cap: Duration,
    cancel: &CancelToken,
    on_progress: &mut dyn FnMut(Progress),
) -> anyhow::Result<SizeResult> {
    let list = sizes(t.align, t.size);
    anyhow::ensure!(
        !list.is_empty(),
        "{} is too small (or its alignment of {} B too large) for reads of 4 KiB to 4 MiB",
        t.display,
        t.align
    );
    let (reads_cap, bytes_cap) = match cfg.depth {
        super::Depth::Quick => (2_000u64, 256u64 << 20),
        super::Depth::Thorough => (10_000, 1 << 30),
    };
    let per_size = cap / list.len() as u32;
    let mut buf = AlignedBuf::new(*list.last().unwrap_or(&MIN_SIZE) as usize, t.mem_align)?;
    let mut rng = Rng::seeded();
    let mut throttle = Throttle::new();
    let began = Instant::now();
    let mut points = Vec::new();
    let (mut reads_issued, mut bytes_issued) = (0u64, 0u64);
    let mut stopped = Stop::Done;
    for (i, &bs) in list.iter().enumerate() {
        if cancel.is_cancelled() {
            stopped = Stop::Cancelled;
            break;
        }
        let slots = t.size / bs;
        let b = &mut buf.as_mut_slice()[..bs as usize];
        // One untimed read first: the first read of a size pays for the
        // previous size's last one.
        let off = rng.below(slots) * bs;
        t.evict(off, bs);
        target::read_exact_at(t, b, off)?;
        reads_issued += 1;
        bytes_issued += bs;
        let mut hist = Histogram::new();
        let start = Instant::now();
        let why = loop {
            if cancel.is_cancelled() {
                break Stop::Cancelled;
            }
            let n = hist.count();
            if n >= reads_cap || n * bs >= bytes_cap {
                break Stop::Done;
            }
            if start.elapsed() >= per_size {
                break Stop::TimeCap;
            }
            let off = rng.below(slots) * bs;
            t.evict(off, bs);
            let t0 = Instant::now();
            target::read_exact_at(t, b, off)?;
            hist.record(u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX));
            reads_issued += 1;
            bytes_issued += bs;
            if throttle.due() {
                let elapsed = began.elapsed().as_secs_f64();
                on_progress(Progress {
                    phase: Phase::Size,
                    fraction: ((i as f64 + start.elapsed().as_secs_f64() / per_size.as_secs_f64().max(1e-9))
                        / list.len() as f64)
                        .min(1.0),
                    elapsed_s: elapsed,
                    reads: hist.count(),
                    p50_ms: hist.quantile(0.5).map(|v| v / 1e6),
                    iops: None,
                    zones: Vec::new(),
                    size_bytes: bs,
                    queue_depth: None,
                    depths: Vec::new(),
                });
            }
        };
        let duration = start.elapsed().as_secs_f64();
        let n = hist.count();
        let iops = (n > 0 && duration > 0.0).then(|| n as f64 / duration);
        points.push(SizePoint {
            bytes: bs,
            reads: n,
            duration_s: duration,
            iops,
            mb_per_s: iops.map(|i| i * bs as f64 / 1e6),
            latency: LatencySummary::of(&hist),
            stopped: why,
        });
        if why == Stop::Cancelled {
            stopped = Stop::Cancelled;
            break;
        }
        if why == Stop::TimeCap {
            stopped = Stop::TimeCap;
        }
    }
    let pairs: Vec<(u64, f64)> = points.iter().filter_map(|p| Some((p.bytes, p.mb_per_s?))).collect();
    let best = pairs.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1));
    Ok(SizeResult {
        plateau_bytes: plateau(&pairs),
        best_mb_per_s: best.map(|b| b.1),
        best_bytes: best.map(|b| b.0),
        points,
        reads_cap,
        bytes_cap,
        time_per_size_s: per_size.as_secs_f64(),
        reads_issued,
        bytes_issued,
        stopped,
        disk_check: None,
    })
}

/// The text report's section.
pub fn report(s: &mut String, r: &SizeResult) {
    use crate::format;
    use std::fmt::Write as _;
    let _ = writeln!(
        s,
        "\nrequest-size sweep: random reads at queue depth 1; per size at most {} reads, {} or {:.1} s",
        r.reads_cap,
        format::binary(r.bytes_cap as f64),
        r.time_per_size_s
    );
    let _ = writeln!(
        s,
        "  {:>9} {:>7} {:>9} {:>10} {:>9} {:>9}",
        "size", "reads", "IOPS", "MB/s", "p50", "p99"
    );
    let best = r.best_mb_per_s.unwrap_or(0.0);
    for p in &r.points {
        let _ = writeln!(
            s,
            "  {:>9} {:>7} {:>9} {:>10} {:>9} {:>9} {}{}",
            format::binary(p.bytes as f64),
            p.reads,
            p.iops.map_or_else(|| format::NA.into(), |v| format!("{v:.0}")),
            p.mb_per_s.map_or_else(|| format::NA.into(), |v| format::rate(v * 1e6)),
            super::view::lat(p.latency.p50_ms),
            super::view::lat(p.latency.p99_ms),
            super::view::text_bar(p.mb_per_s, best),
            match p.stopped {
                Stop::Done => "",
                Stop::TimeCap => " (time cap)",
                Stop::Cancelled => " (cancelled)",
            }
        );
    }
    let _ = writeln!(s, "  {}", plateau_text(r));
}

/// Where throughput stops growing, in words.
pub fn plateau_text(r: &SizeResult) -> String {
    use crate::format;
    match (r.plateau_bytes, r.best_mb_per_s, r.best_bytes) {
        (Some(p), Some(b), Some(bb)) => format!(
            "throughput stops growing at {} (≥ {:.0}% of the best, {} at {})",
            format::binary(p as f64),
            PLATEAU * 100.0,
            format::rate(b * 1e6),
            format::binary(bb as f64)
        ),
        (None, Some(b), Some(bb)) => format!(
            "throughput still growing at the largest size measured ({} at {}): no plateau found",
            format::rate(b * 1e6),
            format::binary(bb as f64)
        ),
        _ => "no throughput measured".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sizes() {
        assert_eq!(sizes(512, 1 << 30).len(), 11);
        assert_eq!(sizes(512, 1 << 30)[10], 4 << 20);
        // A 64 KiB target: 4 to 64 KiB.
        assert_eq!(sizes(4096, 64 << 10), [4096, 8192, 16384, 32768, 65536]);
        // An 8 KiB direct-I/O alignment drops 4 KiB.
        assert_eq!(sizes(8192, 1 << 20)[0], 8192);
    }

    #[test]
    fn plateau_is_the_smallest_size_near_the_best() {
        // An SSD: MB/s grows to 512 KiB, then flat around 2,000.
        let ssd = [
            (4096, 50.0),
            (65536, 600.0),
            (262_144, 1500.0),
            (524_288, 1900.0),
            (1 << 20, 2000.0),
            (4 << 20, 1980.0),
        ];
        assert_eq!(plateau(&ssd), Some(524_288));
        // Still growing at the largest size: unknown.
        assert_eq!(plateau(&[(4096, 1.0), (8192, 2.0), (16384, 4.0)]), None);
        assert_eq!(plateau(&[]), None);
        assert_eq!(plateau(&[(4096, 0.0)]), None);
    }
}
