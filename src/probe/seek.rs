//! `iolens probe seek DISK`: the reads behind the spinning-disk estimator
//! ([`super::mechanics`]). On a whole block device only, one read of the
//! logical block size (at least 4 KiB) at a time, each at a fresh offset (a
//! block is never read twice, so the drive's cache cannot answer):
//!
//! 1. short distances: 1 to 4 MiB past the previous read (one to a few
//!    tracks) — the rotational wait and the track-to-track seek;
//! 2. distances of 0.1%, 1%, 10%, 30% and 60% of the disk — the seek curve;
//! 3. full stroke: alternating between the first and the last 0.1%.
//!
//! Bounded by a read count per step and a time cap for the whole test;
//! cancellable between two reads.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::mechanics::{self, DistanceSeries, Estimate};
use super::random::Rng;
use super::target::{self, Target, TargetKind};
use super::{CancelToken, Phase, ProbeConfig, Progress, Stop, Throttle};
use crate::sys::aligned::AlignedBuf;

/// The distances of the seek curve, as fractions of the disk.
pub const FRACTIONS: [f64; 5] = [0.001, 0.01, 0.1, 0.3, 0.6];
const MIB: u64 = 1 << 20;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeekResult {
    pub bs: u64,
    /// Timed reads per step (the cap).
    pub reads_per_step: usize,
    pub time_cap_s: f64,
    pub reads_issued: u64,
    pub duration_s: f64,
    pub stopped: Stop,
    pub short_reads: usize,
    pub full_stroke_reads: usize,
    pub estimate: Estimate,
    /// Steps that ended early because no fresh block was left in their range.
    pub notes: Vec<String>,
}

struct Reader<'a> {
    t: &'a Target,
    buf: &'a mut [u8],
    bs: u64,
    blocks: u64,
    used: HashSet<u64>,
    rng: Rng,
    issued: u64,
    prev: u64,
}

impl Reader<'_> {
    /// A block in `[lo, hi)` (block numbers) not read before.
    fn fresh(&mut self, lo: u64, hi: u64) -> Option<u64> {
        let hi = hi.min(self.blocks);
        if lo >= hi {
            return None;
        }
        (0..64)
            .map(|_| lo + self.rng.below(hi - lo))
            .find(|b| !self.used.contains(b))
    }

    /// Read block `b`, return the latency in ms.
    fn read(&mut self, b: u64) -> anyhow::Result<f64> {
        self.used.insert(b);
        let off = b * self.bs;
        self.t.evict(off, self.bs);
        let t0 = Instant::now();
        target::read_exact_at(self.t, self.buf, off)?;
        self.issued += 1;
        self.prev = b;
        Ok(t0.elapsed().as_secs_f64() * 1000.0)
    }

    /// The block `dist` blocks from the previous read (either way, where it
    /// fits), give or take 1/16 of the distance so each one is fresh.
    fn at_distance(&mut self, dist: u64) -> Option<u64> {
        let jitter = (dist / 16).max(1);
        let fwd = self.prev + dist;
        let (lo, hi) = if fwd + jitter < self.blocks {
            (fwd, fwd + jitter)
        } else {
            let back = self.prev.checked_sub(dist + jitter)?;
            (back, back + jitter)
        };
        self.fresh(lo, hi)
    }
}

/// A test in progress: the reader plus the caps and what was seen.
struct Steps<'a, 'p> {
    r: Reader<'a>,
    per_step: usize,
    total: f64,
    cap: Duration,
    began: Instant,
    throttle: Throttle,
    stopped: Stop,
    notes: Vec<String>,
    done: usize,
    cancel: &'a CancelToken,
    on_progress: &'p mut dyn FnMut(Progress),
}

impl Steps<'_, '_> {
    /// Position the head with one untimed read in `[lo, hi)`, then time
    /// `per_step` reads chosen by `next` (repositioning in `[lo, hi)` when
    /// `next` finds no room).
    fn step(
        &mut self,
        name: &str,
        (lo, hi): (u64, u64),
        next: &mut dyn FnMut(&mut Reader) -> Option<u64>,
    ) -> anyhow::Result<Vec<f64>> {
        let mut lat = Vec::with_capacity(self.per_step);
        if self.stopped != Stop::Done {
            return Ok(lat);
        }
        let start = self.r.fresh(lo, hi).unwrap_or(lo);
        self.r.read(start)?;
        while lat.len() < self.per_step {
            if self.cancel.is_cancelled() {
                self.stopped = Stop::Cancelled;
                break;
            }
            let elapsed = self.began.elapsed();
            if elapsed >= self.cap {
                self.stopped = Stop::TimeCap;
                break;
            }
            // Out of room from here (a long distance from the middle of
            // the disk): move the head with one untimed read and try again.
            let b = match next(&mut self.r) {
                Some(b) => Some(b),
                None => match self.r.fresh(lo, hi) {
                    Some(p) => {
                        self.r.read(p)?;
                        next(&mut self.r)
                    }
                    None => None,
                },
            };
            let Some(b) = b else {
                self.notes.push(format!(
                    "{name}: no fresh block left in range after {} reads",
                    lat.len()
                ));
                break;
            };
            lat.push(self.r.read(b)?);
            self.done += 1;
            if self.throttle.due() {
                (self.on_progress)(Progress {
                    phase: Phase::Seek,
                    fraction: (self.done as f64 / self.total)
                        .max(elapsed.as_secs_f64() / self.cap.as_secs_f64())
                        .min(1.0),
                    elapsed_s: elapsed.as_secs_f64(),
                    reads: self.done as u64,
                    p50_ms: None,
                    iops: None,
                    zones: Vec::new(),
                    size_bytes: self.r.t.size,
                    queue_depth: None,
                    depths: Vec::new(),
                });
            }
        }
        Ok(lat)
    }
}

pub fn run(
    t: &Target,
    cfg: &ProbeConfig,
    cap: Duration,
    cancel: &CancelToken,
    on_progress: &mut dyn FnMut(Progress),
) -> anyhow::Result<SeekResult> {
    anyhow::ensure!(
        t.kind == TargetKind::BlockDevice,
        "probe seek works on a whole block device (/dev/sda), not on {}: file offsets are not disk positions",
        t.display
    );
    if let Some(d) = &t.device {
        anyhow::ensure!(
            d.name == d.disk,
            "probe seek needs the whole disk (/dev/{}), not the partition {}: positions must be the disk's own",
            d.disk,
            t.display
        );
    }
    let bs = 4096u64.max(t.align);
    let blocks = t.size / bs;
    anyhow::ensure!(
        blocks >= 4096,
        "{} holds only {blocks} blocks of {bs} B: too small to seek across",
        t.display
    );
    let per_step = match cfg.depth {
        super::Depth::Quick => 150,
        super::Depth::Thorough => 500,
    };
    let mut buf = AlignedBuf::new(bs as usize, t.mem_align)?;
    let mut s = Steps {
        r: Reader {
            t,
            buf: buf.as_mut_slice(),
            bs,
            blocks,
            used: HashSet::new(),
            rng: Rng::seeded(),
            issued: 0,
            prev: 0,
        },
        per_step,
        total: ((2 + FRACTIONS.len()) * per_step) as f64,
        cap,
        began: Instant::now(),
        throttle: Throttle::new(),
        stopped: Stop::Done,
        notes: Vec::new(),
        done: 0,
        cancel,
        on_progress,
    };
    let short = s.step("short distances", (0, blocks), &mut |r| {
        let d = (MIB + r.rng.below(3 * MIB)) / r.bs;
        r.at_distance(d)
    })?;
    let mut series = Vec::new();
    for f in FRACTIONS {
        let dist = ((blocks as f64 * f) as u64).max(1);
        let room = (0, blocks.saturating_sub(dist + dist / 16 + 1).max(1));
        let lat = s.step(&format!("{:.1}% of the disk", f * 100.0), room, &mut |r| {
            r.at_distance(dist)
        })?;
        if !lat.is_empty() {
            series.push(DistanceSeries {
                distance_bytes: dist * bs,
                fraction: f,
                latencies_ms: lat,
            });
        }
    }
    // Full stroke: start in the last 0.1%, then first, last, first, ...
    let edge = (blocks / 1000).max(1);
    let mut low = false;
    let full = s.step("full stroke", (blocks - edge, blocks), &mut |r| {
        low = !low;
        if low {
            r.fresh(0, edge)
        } else {
            r.fresh(blocks - edge, blocks)
        }
    })?;
    let estimate = mechanics::estimate(&short, &series, &full);
    Ok(SeekResult {
        bs,
        reads_per_step: per_step,
        time_cap_s: cap.as_secs_f64(),
        reads_issued: s.r.issued,
        duration_s: s.began.elapsed().as_secs_f64(),
        stopped: s.stopped,
        short_reads: short.len(),
        full_stroke_reads: full.len(),
        estimate,
        notes: s.notes,
    })
}

/// The verdict: a spinning disk where a rotation was found, else "no
/// rotation found" (never an invented RPM).
pub fn verdict(r: &SeekResult) -> super::Verdict {
    let e = &r.estimate;
    let mut evidence = vec![e.rotation.reason.clone()];
    if let Some(rpm) = e.rotation.rpm {
        evidence.insert(0, format!("{rpm:.0} RPM"));
    }
    if let Some(d) = e.distance_effect_ms {
        evidence.push(format!(
            "mean latency {d:+.2} ms from the shortest to the longest distance{}",
            if d.abs() < 1.0 { ": no head movement shows" } else { "" }
        ));
    }
    super::Verdict {
        class: if e.rotation.found {
            super::Class::Hdd
        } else {
            super::Class::NoRotation
        },
        evidence,
        impossible: Vec::new(),
    }
}

/// The text report's section.
pub fn report(s: &mut String, r: &SeekResult) {
    use std::fmt::Write as _;
    let e = &r.estimate;
    let ms = |v: Option<f64>| v.map_or_else(|| crate::format::NA.to_string(), |v| format!("{v:.2} ms"));
    let _ = writeln!(
        s,
        "\nseek and rotation: {} reads of {} B at fresh offsets in {:.1} s (at most {} timed reads per step, cap {:.0} s{})",
        r.reads_issued,
        r.bs,
        r.duration_s,
        r.reads_per_step,
        r.time_cap_s,
        match r.stopped {
            Stop::Done => "",
            Stop::TimeCap => "; time cap reached",
            Stop::Cancelled => "; cancelled",
        }
    );
    match e.rotation.rpm {
        Some(rpm) => {
            let _ = writeln!(
                s,
                "  rotation: {rpm:.0} RPM (revolution {})",
                ms(e.rotation.revolution_ms)
            );
            let _ = writeln!(s, "    {}", e.rotation.reason);
        }
        None => {
            let _ = writeln!(s, "  rotation: {}", e.rotation.reason);
        }
    }
    let _ = writeln!(
        s,
        "  track-to-track seek {}   full-stroke seek {} ({} reads alternating between the first and last 0.1%)",
        ms(e.track_to_track_ms),
        ms(e.full_stroke_ms),
        r.full_stroke_reads
    );
    let _ = writeln!(
        s,
        "  {:>8} {:>12} {:>6} {:>10} {:>10} {:>10}",
        "distance", "bytes", "reads", "mean", "p50", "seek"
    );
    for p in &e.curve {
        let _ = writeln!(
            s,
            "  {:>7.1}% {:>12} {:>6} {:>10} {:>10} {:>10}",
            p.fraction * 100.0,
            p.distance_bytes,
            p.reads,
            ms(Some(p.mean_ms)),
            ms(Some(p.p50_ms)),
            ms(p.seek_ms)
        );
    }
    if let Some(d) = e.distance_effect_ms {
        let _ = writeln!(s, "  longest minus shortest distance: {d:+.2} ms of mean latency");
    }
    for n in &r.notes {
        let _ = writeln!(s, "  note: {n}");
    }
}
