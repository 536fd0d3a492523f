//! The two ways the queue-depth sweep keeps QD reads in flight: an io_uring
//! ring on the probe's own thread, or (fallback) QD threads each doing one
//! `pread` at a time — fio's `ioengine=io_uring iodepth=QD` and
//! `ioengine=psync numjobs=QD`. Both draw uniformly random block-aligned
//! offsets over the whole target, discard a warm-up of QD+8 completions,
//! then time every completion from submission to reaping.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::random::Rng;
use super::stats::Histogram;
use super::target::{self, Target};
use super::{CancelToken, Stop, Throttle};
use crate::sys::aligned::AlignedBuf;
use crate::sys::uring::{Completion, ReadOp, ReadRing};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    IoUring,
    PreadPool,
}

impl Engine {
    pub fn label(self) -> &'static str {
        match self {
            Engine::IoUring => "io_uring",
            Engine::PreadPool => "pread thread pool",
        }
    }
}

/// io_uring unless forced off or its setup (`try_ring`) fails; the note
/// says which and why.
pub fn choose(force_pread: bool, try_ring: impl FnOnce() -> std::io::Result<()>) -> (Engine, String) {
    if force_pread {
        return (
            Engine::PreadPool,
            "pread thread pool (one thread per request in flight), forced by --pread".into(),
        );
    }
    match try_ring() {
        Ok(()) => (Engine::IoUring, "io_uring (one ring on the probe thread)".into()),
        Err(e) => (
            Engine::PreadPool,
            format!("pread thread pool (one thread per request in flight): io_uring could not be set up ({e})"),
        ),
    }
}

/// When one depth ends: after `min_completions` and `min_time`, or at
/// `max_time` / `max_completions`, whichever first.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub min_time: Duration,
    pub max_time: Duration,
    pub min_completions: u64,
    pub max_completions: u64,
}

impl Limits {
    fn stop(&self, n: u64, elapsed: Duration, cancel: &CancelToken) -> Option<Stop> {
        if cancel.is_cancelled() {
            Some(Stop::Cancelled)
        } else if (n >= self.min_completions && elapsed >= self.min_time) || n >= self.max_completions {
            Some(Stop::Done)
        } else if elapsed >= self.max_time {
            Some(Stop::TimeCap)
        } else {
            None
        }
    }
}

/// What one depth measured.
#[derive(Debug, Clone)]
pub struct DepthRun {
    pub hist: Histogram,
    /// Completions in the measured window (= `hist.count()`).
    pub completions: u64,
    /// Length of the measured window.
    pub secs: f64,
    /// Every read issued, warm-up and drained ones included.
    pub issued: u64,
    pub stopped: Stop,
    /// Completions in each whole [`SLICE`] of the measured window, in
    /// order: how steady the rate was (the noise check).
    pub slices: Vec<u64>,
}

/// The length of one slice of [`DepthRun::slices`].
pub const SLICE: Duration = Duration::from_millis(100);

/// Counts completions per [`SLICE`] of a window.
#[derive(Debug, Default)]
struct Slices {
    counts: Vec<u64>,
}

impl Slices {
    /// One completion `since` the window opened.
    fn add(&mut self, since: Duration) {
        let i = (since.as_nanos() / SLICE.as_nanos()) as usize;
        if self.counts.len() <= i {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
    }

    /// The whole slices of a window `secs` long (a last partial one is
    /// dropped).
    fn whole(mut self, secs: f64) -> Vec<u64> {
        let n = (secs / SLICE.as_secs_f64()).floor() as usize;
        self.counts.resize(n, 0);
        self.counts
    }
}

/// Progress callback: (measured completions, seconds, p50 ms, IOPS).
pub type Report<'a> = dyn FnMut(u64, f64, Option<f64>, Option<f64>) + 'a;

#[allow(clippy::too_many_arguments)]
pub fn run_depth(
    engine: Engine,
    t: &Target,
    qd: u32,
    bs: u64,
    blocks: u64,
    limits: &Limits,
    cancel: &CancelToken,
    report: &mut Report,
) -> anyhow::Result<DepthRun> {
    anyhow::ensure!(blocks > 0, "{} is smaller than one read of {bs} B", t.display);
    match engine {
        Engine::IoUring => uring(t, qd, bs, blocks, limits, cancel, report),
        Engine::PreadPool => pool(t, qd, bs, blocks, limits, cancel, report),
    }
}

fn warmup(qd: u32) -> u64 {
    u64::from(qd) + 8
}

fn live(hist: &Histogram, secs: f64) -> (Option<f64>, Option<f64>) {
    let n = hist.count();
    (
        hist.quantile(0.5).map(|v| v / 1e6),
        (n > 0 && secs > 0.0).then(|| n as f64 / secs),
    )
}

fn uring(
    t: &Target,
    qd: u32,
    bs: u64,
    blocks: u64,
    limits: &Limits,
    cancel: &CancelToken,
    report: &mut Report,
) -> anyhow::Result<DepthRun> {
    let len = u32::try_from(bs).map_err(|_| anyhow::anyhow!("read size {bs} B is too large for io_uring"))?;
    let mut ring = ReadRing::new(&t.file, qd, len, t.mem_align)
        .map_err(|e| anyhow::anyhow!("setting up io_uring with {qd} entries: {e}"))?;
    let mut rng = Rng::seeded();
    let mut sent = vec![Instant::now(); qd as usize];
    let mut submit = |ring: &mut ReadRing, slot: u32, sent: &mut [Instant]| -> anyhow::Result<()> {
        let offset = rng.below(blocks) * bs;
        t.evict(offset, bs);
        sent[slot as usize] = Instant::now();
        ring.submit(ReadOp { slot, offset })
            .map_err(|e| anyhow::anyhow!("queueing a read of {}: {e}", t.display))
    };
    for slot in 0..qd {
        submit(&mut ring, slot, &mut sent)?;
    }
    let began = Instant::now();
    let mut window: Option<Instant> = None;
    let (mut seen, mut issued) = (0u64, u64::from(qd));
    let mut hist = Histogram::new();
    let mut slices = Slices::default();
    let mut done: Vec<Completion> = Vec::with_capacity(qd as usize);
    let mut throttle = Throttle::new();
    let (stopped, end) = loop {
        ring.enter(1, Duration::from_millis(50))
            .map_err(|e| anyhow::anyhow!("waiting for io_uring reads of {}: {e}", t.display))?;
        ring.reap(&mut done);
        let now = Instant::now();
        for c in done.drain(..) {
            if c.result < 0 {
                anyhow::bail!(
                    "reading {bs} B of {}: {}",
                    t.display,
                    std::io::Error::from_raw_os_error(-c.result)
                );
            }
            anyhow::ensure!(
                c.result as u64 == bs,
                "short read of {} B instead of {bs} B from {} (did it shrink?)",
                c.result,
                t.display
            );
            seen += 1;
            if let Some(w) = window {
                let ns = now.duration_since(sent[c.slot as usize]).as_nanos();
                hist.record(u64::try_from(ns).unwrap_or(u64::MAX));
                slices.add(now.duration_since(w));
            } else if seen >= warmup(qd) {
                window = Some(now);
            }
            submit(&mut ring, c.slot, &mut sent)?;
            issued += 1;
        }
        let elapsed = window.map_or(Duration::ZERO, |w| now.duration_since(w));
        let capped = limits.stop(hist.count(), elapsed, cancel);
        let total_capped = (now.duration_since(began) >= limits.max_time).then_some(Stop::TimeCap);
        if let Some(s) = capped.or(total_capped) {
            break (s, now);
        }
        if throttle.due() {
            let (p50, iops) = live(&hist, elapsed.as_secs_f64());
            report(hist.count(), elapsed.as_secs_f64(), p50, iops);
        }
    };
    // Dropping the ring waits for the reads still in flight.
    drop(ring);
    let secs = window.map_or(0.0, |w| end.duration_since(w).as_secs_f64());
    Ok(DepthRun {
        completions: hist.count(),
        hist,
        secs,
        issued,
        stopped,
        slices: slices.whole(secs),
    })
}

/// Set in the pool's count of measured reads when a depth's window closes:
/// a read that completes after it is neither counted nor recorded.
const CLOSED: u64 = 1 << 63;

fn pool(
    t: &Target,
    qd: u32,
    bs: u64,
    blocks: u64,
    limits: &Limits,
    cancel: &CancelToken,
    report: &mut Report,
) -> anyhow::Result<DepthRun> {
    let stop = AtomicBool::new(false);
    let measuring = AtomicBool::new(false);
    let seen = AtomicU64::new(0);
    let measured = AtomicU64::new(0);
    let issued = AtomicU64::new(0);
    let merged = Mutex::new(Histogram::new());
    let failure: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    let worker = |i: u64| -> anyhow::Result<()> {
        let mut buf = AlignedBuf::new(bs as usize, t.mem_align)?;
        let buf = buf.as_mut_slice();
        let mut rng = Rng::seeded_stream(i);
        let mut hist = Histogram::new();
        while !stop.load(Ordering::Relaxed) {
            let off = rng.below(blocks) * bs;
            t.evict(off, bs);
            issued.fetch_add(1, Ordering::Relaxed);
            let t0 = Instant::now();
            target::read_exact_at(t, buf, off)?;
            let ns = u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
            seen.fetch_add(1, Ordering::Relaxed);
            // Counted and recorded together, unless the window closed
            // first (one atomic orders both against the close).
            if measuring.load(Ordering::Relaxed) && measured.fetch_add(1, Ordering::Relaxed) & CLOSED == 0 {
                hist.record(ns);
            }
        }
        if let Ok(mut m) = merged.lock() {
            m.merge(&hist);
        }
        Ok(())
    };
    let mut window: Option<Instant> = None;
    let mut throttle = Throttle::new();
    let began = Instant::now();
    // Measured completions at the end of each whole slice so far.
    let mut marks: Vec<u64> = Vec::new();
    let (stopped, secs, counted) = std::thread::scope(|s| {
        let mut handles = Vec::new();
        for i in 0..qd {
            let worker = &worker;
            let (stop, failure) = (&stop, &failure);
            let h = std::thread::Builder::new()
                .name(format!("iolens-qd{i}"))
                .spawn_scoped(s, move || {
                    if let Err(e) = worker(u64::from(i)) {
                        if let Ok(mut f) = failure.lock() {
                            f.get_or_insert(e);
                        }
                        stop.store(true, Ordering::Relaxed);
                    }
                });
            match h {
                Ok(h) => handles.push(h),
                Err(e) => {
                    if let Ok(mut f) = failure.lock() {
                        f.get_or_insert(anyhow::anyhow!("starting read thread {i} of {qd}: {e}"));
                    }
                    stop.store(true, Ordering::Relaxed);
                    break;
                }
            }
        }
        let result = loop {
            std::thread::sleep(Duration::from_millis(5));
            let now = Instant::now();
            if stop.load(Ordering::Relaxed) {
                break (Stop::Cancelled, 0.0, measured.fetch_or(CLOSED, Ordering::Relaxed));
            }
            if window.is_none() && seen.load(Ordering::Relaxed) >= warmup(qd) {
                window = Some(now);
                measuring.store(true, Ordering::Relaxed);
            }
            let elapsed = window.map_or(Duration::ZERO, |w| now.duration_since(w));
            let n = measured.load(Ordering::Relaxed);
            // Polled every 5 ms: a slice boundary is seen within 5 ms of it.
            while window.is_some() && SLICE * (marks.len() as u32 + 1) <= elapsed {
                marks.push(n);
            }
            let s = limits
                .stop(n, elapsed, cancel)
                .or((now.duration_since(began) >= limits.max_time).then_some(Stop::TimeCap));
            if let Some(s) = s {
                measuring.store(false, Ordering::Relaxed);
                // Reads counted up to here are in the histograms, and no
                // later one is: the count is exactly what was recorded.
                let counted = measured.fetch_or(CLOSED, Ordering::Relaxed);
                stop.store(true, Ordering::Relaxed);
                break (s, elapsed.as_secs_f64(), counted);
            }
            if throttle.due() {
                let secs = elapsed.as_secs_f64();
                report(n, secs, None, (n > 0 && secs > 0.0).then(|| n as f64 / secs));
            }
        };
        for h in handles {
            let _ = h.join();
        }
        result
    });
    if let Some(e) = failure.into_inner().ok().flatten() {
        return Err(e);
    }
    let hist = merged
        .into_inner()
        .map_err(|_| anyhow::anyhow!("a read thread panicked"))?;
    debug_assert_eq!(counted, hist.count());
    let slices = marks
        .iter()
        .scan(0u64, |prev, &m| {
            let d = m.saturating_sub(*prev);
            *prev = m;
            Some(d)
        })
        .collect();
    Ok(DepthRun {
        completions: hist.count(),
        hist,
        secs,
        issued: issued.load(Ordering::Relaxed),
        stopped,
        slices,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallback_is_chosen_and_stated() {
        let (e, note) = choose(true, || panic!("a forced fallback never tries io_uring"));
        assert_eq!(e, Engine::PreadPool);
        assert!(note.contains("forced by --pread"), "{note}");
        let (e, note) = choose(false, || Err(std::io::Error::from_raw_os_error(libc::EPERM)));
        assert_eq!(e, Engine::PreadPool);
        assert!(note.contains("io_uring could not be set up"), "{note}");
        assert!(note.contains("Operation not permitted"), "{note}");
        let (e, _) = choose(false, || Ok(()));
        assert_eq!(e, Engine::IoUring);
    }

    #[test]
    fn limits() {
        let l = Limits {
            min_time: Duration::from_secs(1),
            max_time: Duration::from_secs(15),
            min_completions: 1000,
            max_completions: 5000,
        };
        let c = CancelToken::new();
        let s = Duration::from_secs;
        assert_eq!(l.stop(999, s(5), &c), None);
        assert_eq!(l.stop(1000, Duration::from_millis(999), &c), None);
        assert_eq!(l.stop(1000, s(1), &c), Some(Stop::Done));
        assert_eq!(l.stop(5000, Duration::ZERO, &c), Some(Stop::Done));
        assert_eq!(l.stop(10, s(15), &c), Some(Stop::TimeCap));
        c.cancel();
        assert_eq!(l.stop(10, s(1), &c), Some(Stop::Cancelled));
    }
}
