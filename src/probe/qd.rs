//! Queue-depth sweep: random reads (4 KiB by default) at queue depths 1, 2,
//! 4, … 64, each until at least [`MIN_COMPLETIONS`] completions and its
//! minimum time, stopping when IOPS grew less than 10% twice in a row.
//!
//! Reads go through io_uring ([`crate::sys::uring`], one ring per depth on
//! the probe's own thread); where io_uring cannot be set up (old kernel,
//! a container's seccomp profile, `kernel.io_uring_disabled`) or `--pread`
//! asks for it, a pool of QD threads each doing one `pread` at a time
//! serves instead, and the result says which one ran and why ([`engine`]).
//!
//! Per depth: IOPS and MB/s over the measured window (after a warm-up of
//! QD+8 completions), p50/p99 of the completion latency (submission to
//! reaping, as fio's `clat`). Over the sweep: the knee (the last depth that
//! still gained ≥ 10% over the one before), the latency-bounded IOPS (the
//! most IOPS at a depth whose p99 stayed under the target, 10 ms by
//! default) and the speed-up of the best depth over QD1.

use std::time::Duration;

use serde::Serialize;

use super::engine::{self, DepthRun, Engine};
use super::stats::{Bucket, LatencySummary};
use super::target::Target;
use super::{CancelToken, Phase, ProbeConfig, Progress, Stop};

/// The depths of a full sweep.
pub const DEPTHS: [u32; 7] = [1, 2, 4, 8, 16, 32, 64];
/// Largest depth accepted in an explicit list.
pub const MAX_DEPTH: u32 = 256;
/// Completions a depth needs before it may end (unless capped).
pub const MIN_COMPLETIONS: u64 = 1000;
/// Completions after which a depth ends in any case (the I/O cap).
pub const MAX_COMPLETIONS: u64 = 1_000_000;
/// A depth "gains" when its IOPS are at least this much above the previous.
pub const GAIN: f64 = 0.10;
/// Default p99 bound for the latency-bounded IOPS.
pub const P99_TARGET_MS: f64 = 10.0;
/// A depth whose rate varied more than this between 100 ms slices (beyond
/// counting noise) makes the sweep noisy: its IOPS may be off by 15%.
pub const NOISE_CV: f64 = 0.15;
/// A depth this much below a shallower one makes the sweep noisy: more
/// requests in flight do not slow a device down by that much.
pub const NOISE_FALL: f64 = 0.10;

/// Options of the sweep (all optional on the command line).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct QdConfig {
    /// Explicit depths (no stop rule); `None`: 1, 2, 4, … 64 with the rule.
    pub depths: Option<Vec<u32>>,
    /// Minimum measured time per depth (default 1 s quick, 3 s thorough).
    pub step: Option<Duration>,
    /// p99 bound in ms (default 10).
    pub p99_target_ms: Option<f64>,
    /// Use the pread thread pool even where io_uring works.
    pub force_pread: bool,
}

/// One depth's numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QdPoint {
    pub queue_depth: u32,
    /// Measured completions (warm-up excluded).
    pub completions: u64,
    pub duration_s: f64,
    pub iops: Option<f64>,
    pub mb_per_s: Option<f64>,
    pub latency: LatencySummary,
    /// IOPS over the previous depth's, minus 1 (0.25 = +25%).
    pub gain: Option<f64>,
    /// IOPS over QD1's.
    pub speedup: Option<f64>,
    /// How much the rate varied between 100 ms slices beyond counting
    /// noise ([`excess_cv`]); `None` under 5 slices.
    pub iops_cv: Option<f64>,
    /// Fewer than [`MIN_COMPLETIONS`] (time cap or cancel): p99 may be n/a.
    pub short: bool,
    pub stopped: Stop,
    /// Non-empty buckets of the latency histogram, in ns.
    pub histogram: Vec<Bucket>,
}

/// The first depth measured again at the end of the sweep.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Repeat {
    pub queue_depth: u32,
    pub iops: f64,
}

/// Noise when the repeat of the first depth read more than
/// [`NOISE_FALL`] away from the first reading.
pub fn repeat_noise(first: &QdPoint, again: Option<f64>) -> Option<String> {
    let (a, b) = (first.iops?, again?);
    let change = b / a - 1.0;
    (a > 0.0 && change.abs() > NOISE_FALL).then(|| {
        format!(
            "QD{} read {a:.0} IOPS first and {b:.0} ({:+.0}%) when measured again after the sweep",
            first.queue_depth,
            change * 100.0
        )
    })
}

fn limits_for(step: Duration) -> engine::Limits {
    engine::Limits {
        min_time: step,
        max_time: step,
        min_completions: MIN_COMPLETIONS,
        max_completions: MAX_COMPLETIONS,
    }
}

/// The first depth once more after the sweep: a load that changed between
/// depths without showing within one (a busy neighbour) shows here.
/// Returns its IOPS and the reads issued.
fn measure_again(
    engine: Engine,
    t: &Target,
    qd: u32,
    bs: u64,
    limits: &engine::Limits,
    cancel: &CancelToken,
) -> anyhow::Result<(Option<f64>, u64)> {
    let run = engine::run_depth(engine, t, qd, bs, t.size / bs, limits, cancel, &mut |_, _, _, _| {})?;
    let iops = (run.completions > 0 && run.secs > 0.0).then(|| run.completions as f64 / run.secs);
    Ok((iops, run.issued))
}

/// The most IOPS at a depth whose p99 stayed under the target.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Bounded {
    pub queue_depth: u32,
    pub iops: f64,
    pub p99_ms: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QdResult {
    pub engine: Engine,
    /// Why the engine was chosen ("io_uring", or the reason for the fallback).
    pub engine_note: String,
    pub bs: u64,
    pub depths_planned: Vec<u32>,
    /// The stop rule applies (false for an explicit list of depths).
    pub stop_rule: bool,
    pub step_s: f64,
    pub depth_cap_s: f64,
    pub time_cap_s: f64,
    pub p99_target_ms: f64,
    pub points: Vec<QdPoint>,
    /// Last depth that still gained ≥ 10%.
    pub knee: Option<u32>,
    pub latency_bounded: Option<Bounded>,
    /// Best IOPS over QD1's.
    pub speedup: Option<f64>,
    /// Why the sweep ended, in words.
    pub end: String,
    /// Why the IOPS may be off by more than 15% (other I/O on the device,
    /// an unsteady rate, a deeper depth slower than a shallower one);
    /// empty when none of that was seen.
    pub noise: Vec<String>,
    /// The first depth measured once more after the sweep.
    pub repeat: Option<Repeat>,
    pub stopped: Stop,
    /// Every read issued, warm-up and drained ones included.
    pub reads_issued: u64,
    pub duration_s: f64,
    pub disk_check: Option<super::DiskCheck>,
}

/// True when the last two depths both gained less than [`GAIN`].
pub fn plateaued(points: &[QdPoint]) -> bool {
    points.len() >= 3
        && points[points.len() - 2..]
            .iter()
            .all(|p| p.gain.is_some_and(|g| g < GAIN))
}

/// Knee, latency-bounded IOPS and speed-up of a finished list of points.
pub fn summarize(points: &[QdPoint], p99_target_ms: f64) -> (Option<u32>, Option<Bounded>, Option<f64>) {
    let first = points.first();
    let knee = points
        .iter()
        .skip(1)
        .filter(|p| p.gain.is_some_and(|g| g >= GAIN))
        .map(|p| p.queue_depth)
        .next_back()
        .or(first.filter(|p| p.iops.is_some()).map(|p| p.queue_depth));
    let bounded = points
        .iter()
        .filter_map(|p| {
            let (iops, p99) = (p.iops?, p.latency.p99_ms?);
            (p99 <= p99_target_ms).then_some(Bounded {
                queue_depth: p.queue_depth,
                iops,
                p99_ms: p99,
            })
        })
        .max_by(|a, b| a.iops.total_cmp(&b.iops));
    let best = points.iter().filter_map(|p| p.iops).max_by(f64::total_cmp);
    let base = first.filter(|p| p.queue_depth == 1).and_then(|p| p.iops);
    let speedup = match (best, base) {
        (Some(b), Some(q1)) if q1 > 0.0 => Some(b / q1),
        _ => None,
    };
    (knee, bounded, speedup)
}

/// The point for one depth run, given the previous points.
pub fn point(qd: u32, bs: u64, run: &DepthRun, before: &[QdPoint]) -> QdPoint {
    let n = run.hist.count();
    let iops = (n > 0 && run.secs > 0.0).then(|| run.completions as f64 / run.secs);
    let prev = before.last().and_then(|p| p.iops);
    let base = before
        .first()
        .filter(|p| p.queue_depth == 1)
        .and_then(|p| p.iops)
        .or(if qd == 1 { iops } else { None });
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    QdPoint {
        queue_depth: qd,
        completions: run.completions,
        duration_s: run.secs,
        iops,
        mb_per_s: iops.map(|i| i * bs as f64 / 1e6),
        latency: LatencySummary::of(&run.hist),
        gain: ratio(iops, prev).map(|r| r - 1.0),
        speedup: ratio(iops, base),
        iops_cv: excess_cv(&run.slices),
        short: run.completions < MIN_COMPLETIONS,
        stopped: run.stopped,
        histogram: run.hist.buckets(),
    }
}

/// The spread of completions between slices beyond what counting alone
/// gives (a steady rate of random arrivals has variance = mean):
/// `sqrt(max(0, variance − mean)) / mean`; `None` under 5 slices.
pub fn excess_cv(slices: &[u64]) -> Option<f64> {
    if slices.len() < 5 {
        return None;
    }
    let n = slices.len() as f64;
    let mean = slices.iter().sum::<u64>() as f64 / n;
    if mean <= 0.0 {
        return None;
    }
    let var = slices.iter().map(|&c| (c as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some((var - mean).max(0.0).sqrt() / mean)
}

/// Why a sweep's IOPS may be off by more than 15%, from its points.
pub fn noise(points: &[QdPoint]) -> Vec<String> {
    let mut why = Vec::new();
    for p in points {
        if let Some(cv) = p.iops_cv.filter(|cv| *cv > NOISE_CV) {
            why.push(format!(
                "the rate at QD{} varied {:.0}% between 100 ms slices",
                p.queue_depth,
                cv * 100.0
            ));
        }
    }
    let mut best: Option<&QdPoint> = None;
    for p in points {
        if let (Some(b), Some(i)) = (best, p.iops)
            && let Some(bi) = b.iops
            && i < bi * (1.0 - NOISE_FALL)
        {
            why.push(format!(
                "QD{} read {:.0} IOPS, {:.0}% below QD{}'s {:.0}: more requests in flight do not slow a device down that much, so other I/O changed during the sweep",
                p.queue_depth,
                i,
                (1.0 - i / bi) * 100.0,
                b.queue_depth,
                bi
            ));
        }
        if p.iops
            .is_some_and(|i| best.and_then(|b| b.iops).is_none_or(|bi| i > bi))
        {
            best = Some(p);
        }
    }
    why
}

/// "NOISY: … (the IOPS may be off by more than 15%; …)" for reports.
pub fn noisy_text(why: &[String]) -> String {
    format!(
        "NOISY, the IOPS may be off by more than 15%: {}; measure longer (--thorough: 3 s per depth, or --qd-time 5) or when the device is quieter",
        why.join("; ")
    )
}

/// Parse "1,4,16": depths between 1 and [`MAX_DEPTH`], increasing.
pub fn parse_depths(s: &str) -> anyhow::Result<Vec<u32>> {
    let v: Vec<u32> = s
        .split(',')
        .map(|x| {
            x.trim()
                .parse::<u32>()
                .map_err(|_| anyhow::anyhow!("--qd {s:?}: expected a list like 1,4,16"))
        })
        .collect::<anyhow::Result<_>>()?;
    anyhow::ensure!(
        v.iter().all(|d| (1..=MAX_DEPTH).contains(d)),
        "--qd {s:?}: depths must be between 1 and {MAX_DEPTH}"
    );
    anyhow::ensure!(v.windows(2).all(|w| w[0] < w[1]), "--qd {s:?}: depths must increase");
    Ok(v)
}

pub fn run(
    t: &Target,
    cfg: &ProbeConfig,
    bs: u64,
    cap: Duration,
    cancel: &CancelToken,
    on_progress: &mut dyn FnMut(Progress),
) -> anyhow::Result<QdResult> {
    let q = &cfg.qd;
    let planned = q.depths.clone().unwrap_or_else(|| DEPTHS.to_vec());
    let stop_rule = q.depths.is_none();
    let step = q.step.unwrap_or(match cfg.depth {
        super::Depth::Quick => Duration::from_secs(1),
        super::Depth::Thorough => Duration::from_secs(3),
    });
    let depth_cap = (step * 2).max(Duration::from_secs(15));
    let p99_target_ms = q.p99_target_ms.unwrap_or(P99_TARGET_MS);
    anyhow::ensure!(
        p99_target_ms.is_finite() && p99_target_ms > 0.0,
        "--p99-target must be a positive number of ms"
    );
    let (engine, engine_note) = engine::choose(q.force_pread, || {
        crate::sys::uring::ReadRing::new(&t.file, 1, bs as u32, t.mem_align).map(drop)
    });
    let blocks = t.size / bs;
    let began = std::time::Instant::now();
    let mut points: Vec<QdPoint> = Vec::new();
    let mut issued = 0;
    let mut stopped = Stop::Done;
    let mut end = "every planned depth was measured".to_string();
    for (i, &qd) in planned.iter().enumerate() {
        let left = cap.saturating_sub(began.elapsed());
        if cancel.is_cancelled() {
            stopped = Stop::Cancelled;
            end = "cancelled".into();
            break;
        }
        if left.is_zero() {
            stopped = Stop::TimeCap;
            end = format!("time cap of {:.0} s reached", cap.as_secs_f64());
            break;
        }
        let limits = engine::Limits {
            max_time: depth_cap.min(left),
            ..limits_for(step)
        };
        let done_points = points.clone();
        let mut report = |reads: u64, elapsed: f64, p50_ms: Option<f64>, iops: Option<f64>| {
            let within = (reads as f64 / MIN_COMPLETIONS as f64)
                .max(elapsed / step.as_secs_f64())
                .min(1.0);
            on_progress(Progress {
                phase: Phase::QueueDepth,
                fraction: ((i as f64 + within) / planned.len() as f64)
                    .max(began.elapsed().as_secs_f64() / cap.as_secs_f64())
                    .min(1.0),
                elapsed_s: began.elapsed().as_secs_f64(),
                reads,
                p50_ms,
                iops,
                zones: Vec::new(),
                size_bytes: t.size,
                queue_depth: Some(qd),
                depths: done_points.clone(),
            });
        };
        let run = engine::run_depth(engine, t, qd, bs, blocks, &limits, cancel, &mut report)?;
        issued += run.issued;
        let p = point(qd, bs, &run, &points);
        let run_stop = run.stopped;
        if run.completions > 0 {
            points.push(p);
        }
        if run_stop == Stop::Cancelled {
            stopped = Stop::Cancelled;
            end = "cancelled".into();
            break;
        }
        if stop_rule && plateaued(&points) {
            end = format!(
                "IOPS grew less than {:.0}% at two depths in a row (QD{} and QD{})",
                GAIN * 100.0,
                points[points.len() - 2].queue_depth,
                qd
            );
            break;
        }
    }
    let (knee, latency_bounded, speedup) = summarize(&points, p99_target_ms);
    let mut noise = noise(&points);
    let mut repeat = None;
    let left = cap.saturating_sub(began.elapsed());
    if let Some(first) = points.first().filter(|_| stopped == Stop::Done && left >= step) {
        let limits = engine::Limits {
            max_time: depth_cap.min(left),
            ..limits_for(step)
        };
        let (again, n) = measure_again(engine, t, first.queue_depth, bs, &limits, cancel)?;
        issued += n;
        noise.extend(repeat_noise(first, again));
        repeat = again.map(|iops| Repeat {
            queue_depth: first.queue_depth,
            iops,
        });
    }
    Ok(QdResult {
        engine,
        engine_note,
        bs,
        depths_planned: planned,
        stop_rule,
        step_s: step.as_secs_f64(),
        depth_cap_s: depth_cap.as_secs_f64(),
        time_cap_s: cap.as_secs_f64(),
        p99_target_ms,
        points,
        knee,
        latency_bounded,
        speedup,
        end,
        noise,
        repeat,
        stopped,
        reads_issued: issued,
        duration_s: began.elapsed().as_secs_f64(),
        disk_check: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::stats::Histogram;

    fn run(iops: f64, p99_ms: f64) -> DepthRun {
        let mut hist = Histogram::new();
        for i in 0..2000u64 {
            // 98% at 0.1 ms, 2% at p99_ms: p99 is p99_ms.
            hist.record(if i % 50 == 0 { (p99_ms * 1e6) as u64 } else { 100_000 });
        }
        DepthRun {
            hist,
            completions: 2000,
            secs: 2000.0 / iops,
            issued: 2010,
            stopped: Stop::Done,
            slices: Vec::new(),
        }
    }

    fn sweep(data: &[(u32, f64, f64)]) -> Vec<QdPoint> {
        let mut pts = Vec::new();
        for &(qd, iops, p99) in data {
            let p = point(qd, 4096, &run(iops, p99), &pts);
            pts.push(p);
        }
        pts
    }

    #[test]
    fn spinning_disk_with_ncq() {
        // 100 IOPS at QD1, gains to QD8, then flat; p99 crosses 10 ms at QD4.
        let pts = sweep(&[
            (1, 100.0, 8.0),
            (2, 140.0, 9.5),
            (4, 180.0, 14.0),
            (8, 210.0, 30.0),
            (16, 215.0, 60.0),
            (32, 220.0, 120.0),
        ]);
        assert!((pts[1].gain.unwrap() - 0.4).abs() < 1e-9);
        assert!((pts[3].speedup.unwrap() - 2.1).abs() < 1e-9);
        assert!(!plateaued(&pts[..5]), "one flat step is not a plateau");
        assert!(plateaued(&pts));
        let (knee, bounded, speedup) = summarize(&pts, 10.0);
        assert_eq!(knee, Some(8));
        let b = bounded.unwrap();
        assert_eq!(b.queue_depth, 2);
        assert!((b.iops - 140.0).abs() < 1e-9);
        assert!((speedup.unwrap() - 2.2).abs() < 1e-9);
        // A looser bound admits QD8.
        assert_eq!(summarize(&pts, 30.0).1.unwrap().queue_depth, 8);
    }

    #[test]
    fn flat_volume_and_nothing_under_the_bound() {
        // IOPS-capped cloud volume: no gain at all.
        let pts = sweep(&[(1, 3000.0, 12.0), (2, 3050.0, 15.0), (4, 3000.0, 20.0)]);
        assert!(plateaued(&pts));
        let (knee, bounded, speedup) = summarize(&pts, 10.0);
        assert_eq!(knee, Some(1), "nothing gained: the knee is QD1");
        assert_eq!(bounded, None);
        assert!((speedup.unwrap() - 3050.0 / 3000.0).abs() < 1e-9);
        assert_eq!(summarize(&[], 10.0), (None, None, None));
    }

    /// The busy box: QD4 read below QD2. The sweep says it is
    /// noisy instead of presenting the dip as the device's curve.
    #[test]
    fn a_deeper_depth_slower_than_a_shallower_one_is_noise() {
        let pts = sweep(&[
            (1, 10_000.0, 1.0),
            (2, 18_000.0, 1.0),
            (4, 15_000.0, 1.0),
            (8, 30_000.0, 1.0),
        ]);
        let why = noise(&pts);
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(
            why[0].starts_with("QD4 read 15000 IOPS, 17% below QD2's 18000"),
            "{why:?}"
        );
        // A flat or slightly lower curve past the knee is not noise.
        let pts = sweep(&[
            (1, 10_000.0, 1.0),
            (2, 18_000.0, 1.0),
            (4, 17_500.0, 1.0),
            (8, 17_200.0, 1.0),
        ]);
        assert_eq!(noise(&pts), Vec::<String>::new());
        assert!(noisy_text(&why).starts_with("NOISY, the IOPS may be off by more than 15%: QD4 read"));
    }

    #[test]
    fn an_unsteady_rate_is_noise_and_counting_noise_is_not() {
        // A steady device at 100 completions per slice: Poisson-like
        // spread (±10) is what counting gives, not noise.
        let steady = [92, 108, 100, 95, 105, 110, 90, 101, 99, 100];
        assert_eq!(excess_cv(&steady), Some(0.0));
        // Other I/O took half the device for 0.4 s of the second.
        let bursty = [100, 100, 100, 50, 50, 50, 50, 100, 100, 100];
        let cv = excess_cv(&bursty).unwrap();
        assert!(cv > NOISE_CV && cv < 0.35, "{cv}");
        assert_eq!(excess_cv(&[100, 100, 100, 100]), None, "too few slices");
        assert_eq!(excess_cv(&[0; 10]), None);
        let mut r = run(1000.0, 1.0);
        r.slices = bursty.to_vec();
        let p = point(2, 4096, &r, &[]);
        assert_eq!(p.iops_cv, Some(cv));
        let why = noise(&[p]);
        assert_eq!(why.len(), 1);
        assert!(why[0] == "the rate at QD2 varied 30% between 100 ms slices", "{why:?}");
    }

    #[test]
    fn a_repeat_that_reads_otherwise_is_noise() {
        let p = sweep(&[(1, 10_000.0, 1.0)]).remove(0);
        assert_eq!(repeat_noise(&p, Some(10_800.0)), None);
        assert_eq!(
            repeat_noise(&p, Some(8_000.0)).as_deref(),
            Some("QD1 read 10000 IOPS first and 8000 (-20%) when measured again after the sweep")
        );
        assert_eq!(repeat_noise(&p, None), None);
    }

    #[test]
    fn depth_lists() {
        assert_eq!(parse_depths("1,4,16").unwrap(), [1, 4, 16]);
        assert_eq!(parse_depths(" 2 , 8").unwrap(), [2, 8]);
        assert!(parse_depths("4,1").is_err());
        assert!(parse_depths("0,1").is_err());
        assert!(parse_depths("1,512").is_err());
        assert!(parse_depths("1,x").is_err());
    }
}
