//! Sequential zone sweep: N zones evenly spaced from the first to the last
//! byte of the target; in each, a chunk is read sequentially with 1 MiB
//! requests. The first request of a zone (the seek to it) is not timed.
//! A zone's rate is timed bytes / timed seconds.
//!
//! The time cap is shared out: each zone may use the time left divided by
//! the zones left, so a slow device still gets every zone measured (with a
//! shorter chunk) instead of only the first few.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::stats;
use super::target::{self, Target};
use super::{CancelToken, Phase, ProbeConfig, Progress, Stop, Throttle};
use crate::sys::aligned::AlignedBuf;

pub const REQUEST: u64 = 1 << 20;
pub const CHUNK: u64 = 64 << 20;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Zone {
    pub index: usize,
    /// Byte offset of the zone's first read.
    pub offset: u64,
    /// Bytes read in the timed part.
    pub bytes: u64,
    pub secs: f64,
    pub mb_per_s: f64,
    /// Regular files: byte position of `offset` on the whole disk (FIEMAP
    /// extent + partition start); `None` where unknown or for devices.
    pub disk_position: Option<u64>,
}

/// One zone's rate and where it is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ZonePoint {
    pub mb_per_s: f64,
    pub offset: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepResult {
    pub zones_planned: usize,
    pub request_bytes: u64,
    pub chunk_bytes: u64,
    pub time_cap_s: f64,
    /// Zones whose chunk was cut short by their share of the time cap.
    pub zones_shortened: usize,
    pub zones: Vec<Zone>,
    pub min: Option<ZonePoint>,
    pub median_mb_per_s: Option<f64>,
    pub max: Option<ZonePoint>,
    /// Mean rate of the first 10% of zones over the last 10% (for a
    /// regular file: zones ordered by disk position, `None` when those are
    /// unknown or span too little of the disk; see `positions`).
    pub first_last_ratio: Option<f64>,
    /// Regular files: how zone offsets were placed on the disk, or why not.
    pub positions: Option<String>,
    /// All timed bytes over all timed seconds.
    pub overall_mb_per_s: Option<f64>,
    pub duration_s: f64,
    /// Every request issued, untimed ones included (for the diskstats check).
    pub requests_issued: u64,
    pub bytes_issued: u64,
    pub stopped: Stop,
    pub disk_check: Option<super::DiskCheck>,
}

/// Zone layout: (request, chunk, offsets). The first zone starts at 0, the
/// last ends at the end of the target.
pub fn plan(size: u64, align: u64, zones: usize, chunk: u64) -> (u64, u64, Vec<u64>) {
    let align = align.max(1);
    let zones = zones.max(1) as u64;
    let down = |v: u64| v / align * align;
    let zone_span = down(size / zones).max(align.min(size));
    let chunk = down(chunk.min(zone_span)).max(align);
    let request = down(REQUEST.min(chunk)).max(align);
    let chunk = chunk / request * request;
    let last = size.saturating_sub(chunk);
    let offsets = (0..zones)
        .map(|z| {
            if zones == 1 {
                0
            } else {
                // u128: a petabyte times 10,000 zones overflows u64.
                down((u128::from(last) * u128::from(z) / u128::from(zones - 1)) as u64)
            }
        })
        .collect();
    (request, chunk, offsets)
}

/// Min, median, max and the first/last 10% ratio of `zones`.
pub fn summarize(zones: &[Zone]) -> (Option<ZonePoint>, Option<f64>, Option<ZonePoint>, Option<f64>) {
    let pt = |z: &Zone| ZonePoint {
        mb_per_s: z.mb_per_s,
        offset: z.offset,
    };
    let min = zones.iter().min_by(|a, b| a.mb_per_s.total_cmp(&b.mb_per_s)).map(pt);
    let max = zones.iter().max_by(|a, b| a.mb_per_s.total_cmp(&b.mb_per_s)).map(pt);
    let rates: Vec<f64> = zones.iter().map(|z| z.mb_per_s).collect();
    let median = stats::median(&rates);
    let ratio = (zones.len() >= 2)
        .then(|| {
            let k = zones.len().div_ceil(10);
            let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
            let (first, last) = (mean(&rates[..k]), mean(&rates[rates.len() - k..]));
            (last > 0.0).then(|| first / last)
        })
        .flatten();
    (min, median, max, ratio)
}

pub fn run(
    t: &Target,
    cfg: &ProbeConfig,
    cap: Duration,
    cancel: &CancelToken,
    on_progress: &mut dyn FnMut(Progress),
) -> anyhow::Result<SweepResult> {
    let n = cfg.zones.unwrap_or(match cfg.depth {
        super::Depth::Quick => 20,
        super::Depth::Thorough => 100,
    });
    anyhow::ensure!((1..=10_000).contains(&n), "zone count {n} must be between 1 and 10000");
    let (request, chunk, offsets) = plan(t.size, t.align, n, cfg.chunk.unwrap_or(CHUNK));
    anyhow::ensure!(
        chunk <= t.size,
        "{} ({} B) is too small for one sweep request",
        t.display,
        t.size
    );
    let mut buf = AlignedBuf::new(request as usize, t.mem_align)?;
    let buf = buf.as_mut_slice();
    let began = Instant::now();
    let mut zones = Vec::new();
    let (mut requests, mut bytes_issued, mut shortened) = (0u64, 0u64, 0usize);
    let mut stopped = Stop::Done;
    let mut throttle = Throttle::new();
    // The first request of a zone includes the seek to it and is not timed,
    // unless it is the zone's only one.
    let untimed_first = chunk > request;
    'zones: for (i, &zstart) in offsets.iter().enumerate() {
        let left = cap.saturating_sub(began.elapsed());
        if left.is_zero() {
            stopped = Stop::TimeCap;
            break;
        }
        let budget = left / (offsets.len() - i) as u32;
        t.evict(zstart, chunk);
        let zone_began = Instant::now();
        let mut timed = Duration::ZERO;
        let mut timed_bytes = 0;
        let mut off = zstart;
        while off < zstart + chunk {
            if cancel.is_cancelled() {
                stopped = Stop::Cancelled;
                break 'zones;
            }
            // At least two timed requests, then stop at the zone's budget.
            if timed_bytes >= 2 * request && zone_began.elapsed() >= budget {
                shortened += 1;
                break;
            }
            let t0 = Instant::now();
            target::read_exact_at(t, buf, off)?;
            let dt = t0.elapsed();
            requests += 1;
            bytes_issued += request;
            if off > zstart || !untimed_first {
                timed += dt;
                timed_bytes += request;
            }
            off += request;
            if throttle.due() {
                on_progress(Progress {
                    phase: Phase::Sweep,
                    fraction: ((i as f64 + (off - zstart) as f64 / chunk as f64) / offsets.len() as f64)
                        .max(began.elapsed().as_secs_f64() / cap.as_secs_f64())
                        .min(1.0),
                    elapsed_s: began.elapsed().as_secs_f64(),
                    reads: requests,
                    p50_ms: None,
                    iops: None,
                    zones: zones.clone(),
                    size_bytes: t.size,
                    queue_depth: None,
                    depths: Vec::new(),
                });
            }
        }
        let secs = timed.as_secs_f64();
        if timed_bytes > 0 && secs > 0.0 {
            zones.push(Zone {
                index: i,
                offset: zstart,
                bytes: timed_bytes,
                secs,
                mb_per_s: timed_bytes as f64 / secs / 1e6,
                disk_position: None,
            });
        }
    }
    let (min, median, max, ratio) = summarize(&zones);
    let (tb, ts) = zones.iter().fold((0u64, 0f64), |(b, s), z| (b + z.bytes, s + z.secs));
    Ok(SweepResult {
        zones_planned: offsets.len(),
        request_bytes: request,
        chunk_bytes: chunk,
        time_cap_s: cap.as_secs_f64(),
        zones_shortened: shortened,
        zones,
        min,
        median_mb_per_s: median,
        max,
        first_last_ratio: ratio,
        positions: None,
        overall_mb_per_s: (ts > 0.0).then(|| tb as f64 / ts / 1e6),
        duration_s: began.elapsed().as_secs_f64(),
        requests_issued: requests,
        bytes_issued,
        stopped,
        disk_check: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_spans_first_to_last_byte() {
        let gib = 1u64 << 30;
        let (req, chunk, offs) = plan(100 * gib, 512, 20, CHUNK);
        assert_eq!((req, chunk), (REQUEST, CHUNK));
        assert_eq!(offs.len(), 20);
        assert_eq!(offs[0], 0);
        assert_eq!(offs[19] + chunk, 100 * gib);
        assert!(offs.iter().all(|o| o % 512 == 0));
        // Small target: the chunk shrinks to the zone span.
        let (req, chunk, offs) = plan(256 << 20, 4096, 20, CHUNK);
        assert_eq!(chunk, 12 << 20);
        assert_eq!(req, REQUEST);
        assert_eq!(offs[19] + chunk, 256 << 20);
        // Huge target, many zones: no overflow, still ends at the last byte.
        let (_, chunk, offs) = plan(1 << 60, 4096, 10_000, CHUNK);
        assert_eq!(offs[9_999] + chunk, 1 << 60);
        // Tiny target: one request per zone.
        let (req, chunk, _) = plan(64 * 1024, 512, 4, CHUNK);
        assert_eq!((req, chunk), (16 * 1024, 16 * 1024));
    }

    #[test]
    fn summary_of_a_falling_profile() {
        let zones: Vec<Zone> = (0..20)
            .map(|i| Zone {
                index: i,
                offset: i as u64 * 1000,
                bytes: 1,
                secs: 1.0,
                mb_per_s: 200.0 - 5.0 * i as f64,
                disk_position: None,
            })
            .collect();
        let (min, med, max, ratio) = summarize(&zones);
        assert_eq!(
            min.unwrap(),
            ZonePoint {
                mb_per_s: 105.0,
                offset: 19_000
            }
        );
        assert_eq!(
            max.unwrap(),
            ZonePoint {
                mb_per_s: 200.0,
                offset: 0
            }
        );
        assert_eq!(med, Some(152.5));
        // first 2 zones mean 197.5, last 2 mean 107.5
        assert!((ratio.unwrap() - 197.5 / 107.5).abs() < 1e-12);
        assert_eq!(summarize(&[]), (None, None, None, None));
    }
}
