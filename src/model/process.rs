//! Per-process rates from two samples of `/proc/<pid>/io`.

use std::sync::Arc;

use serde::Serialize;

use super::counters::delta64;
use crate::collect::process::{ProcIo, ProcKey, RawProc};

/// Rates and totals handed to rows: most processes' rates are the same
/// zeros every sample, and their totals zero, so their rows share one
/// copy (copies were two fifths of a row, and a row is kept per process).
#[derive(Debug, Clone, Default)]
pub struct SharedRates {
    /// The last few different idle rates handed out.
    idle: Vec<Arc<ProcRates>>,
    zero_total: Arc<ProcIo>,
}

impl SharedRates {
    const KEEP: usize = 4;

    /// A total, shared when zero.
    pub fn total(&self, t: ProcIo) -> Arc<ProcIo> {
        if t == ProcIo::default() {
            self.zero_total.clone()
        } else {
            Arc::new(t)
        }
    }

    /// Rates, shared when idle and equal to one of the last [`Self::KEEP`]
    /// different idle ones handed out.
    pub fn share(&mut self, r: ProcRates) -> Arc<ProcRates> {
        if !r.is_idle() {
            return Arc::new(r);
        }
        if let Some(a) = self.idle.iter().find(|a| ***a == r) {
            return a.clone();
        }
        let a = Arc::new(r);
        if self.idle.len() == Self::KEEP {
            self.idle.remove(0);
        }
        self.idle.push(a.clone());
        a
    }
}

/// Δrchar below this is too little to say how much came from the page cache.
pub const CACHE_SHARE_MIN_BYTES: u64 = 64 * 1024;

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ProcRates {
    /// Bytes/s this process caused to be read from storage (read_bytes).
    pub read_bps: f64,
    /// Bytes/s this process dirtied for writeback (write_bytes): charged
    /// when a page is dirtied, not when the device writes it.
    pub write_bps: f64,
    /// Bytes/s of dirty page cache this process cancelled by truncating or
    /// deleting a file before writeback (cancelled_write_bytes), charged to
    /// whoever truncated, whoever dirtied the pages.
    pub cancelled_write_bps: f64,
    /// Bytes/s through read-like syscalls, cache hits included (rchar).
    pub rchar_bps: f64,
    /// Bytes/s through write-like syscalls (wchar).
    pub wchar_bps: f64,
    pub syscr_per_s: f64,
    pub syscw_per_s: f64,
    /// Average bytes per read syscall; `None` without read syscalls.
    pub avg_read: Option<f64>,
    pub avg_write: Option<f64>,
    /// Share of logical reads served from page cache, 0..=1:
    /// 1 − Δread_bytes/Δrchar, only when Δrchar ≥ [`CACHE_SHARE_MIN_BYTES`].
    pub cache_share: Option<f64>,
    /// Percent of the interval spent waiting for block I/O (delay accounting);
    /// `None` when the kernel does not account it.
    pub io_wait_pct: Option<f64>,
    /// Paused by the dirty throttle over the interval (traced
    /// `writeback:balance_dirty_pages`, summed over its bdis, see
    /// [`crate::model::dirty`]): the share of the interval, %, capped at
    /// 100 (a pause counts whole in the interval its event falls in); the
    /// milliseconds paused, the pauses, the longest pause. `None` while
    /// the throttle is not traced (0 only when traced and not paused).
    pub dirty_paused_pct: Option<f64>,
    pub dirty_paused_ms: Option<u64>,
    pub dirty_pauses: Option<u64>,
    pub dirty_max_pause_ms: Option<u64>,
}

impl ProcRates {
    /// No bytes and no system calls (the estimates and IO% aside).
    pub(crate) fn is_idle(&self) -> bool {
        !self.is_active() && self.syscr_per_s == 0.0 && self.syscw_per_s == 0.0
    }

    pub fn disk_bps(&self) -> f64 {
        self.read_bps + self.write_bps
    }

    pub fn is_active(&self) -> bool {
        self.read_bps > 0.0
            || self.write_bps > 0.0
            || self.cancelled_write_bps > 0.0
            || self.rchar_bps > 0.0
            || self.wchar_bps > 0.0
    }
}

/// Rates from I/O counter deltas over `dt_s`. `None` when a counter went
/// backwards (which only a different process could cause).
pub fn io_rates(prev: &ProcIo, cur: &ProcIo, dt_s: f64) -> Option<ProcRates> {
    if dt_s <= 0.0 || implausible_jump(prev, cur, dt_s) {
        return None;
    }
    let d = |p: u64, c: u64| delta64(p, c);
    let (rb, wb) = (
        d(prev.read_bytes, cur.read_bytes)?,
        d(prev.write_bytes, cur.write_bytes)?,
    );
    let (rc, wc) = (d(prev.rchar, cur.rchar)?, d(prev.wchar, cur.wchar)?);
    let cw = d(prev.cancelled_write_bytes, cur.cancelled_write_bytes)?;
    let (sr, sw) = (d(prev.syscr, cur.syscr)?, d(prev.syscw, cur.syscw)?);
    Some(ProcRates {
        read_bps: rb as f64 / dt_s,
        write_bps: wb as f64 / dt_s,
        cancelled_write_bps: cw as f64 / dt_s,
        rchar_bps: rc as f64 / dt_s,
        wchar_bps: wc as f64 / dt_s,
        syscr_per_s: sr as f64 / dt_s,
        syscw_per_s: sw as f64 / dt_s,
        avg_read: (sr > 0).then(|| rc as f64 / sr as f64),
        avg_write: (sw > 0).then(|| wc as f64 / sw as f64),
        // read_bytes can exceed rchar (readahead, mmap faults): clamp at 0.
        cache_share: (rc >= CACHE_SHARE_MIN_BYTES).then(|| (1.0 - rb as f64 / rc as f64).clamp(0.0, 1.0)),
        ..ProcRates::default()
    })
}

/// No process moves more bytes than this per second (100 TB/s, far beyond
/// any machine's memory bandwidth) nor makes more than this many system
/// calls per second: a bigger jump of its counters is a bad sample (a
/// captured tree, a counter reset), re-baselined rather than shown.
pub const MAX_PLAUSIBLE_BPS: f64 = 1e14;
pub const MAX_PLAUSIBLE_SYSCALLS: f64 = 1e10;

/// Whether the counters moved more than [`MAX_PLAUSIBLE_BPS`] or
/// [`MAX_PLAUSIBLE_SYSCALLS`] allow over `dt_s` (counters that went
/// backwards are not a jump: see [`io_rates`]).
pub fn implausible_jump(prev: &ProcIo, cur: &ProcIo, dt_s: f64) -> bool {
    let per_s = |p: u64, c: u64| c.saturating_sub(p) as f64 / dt_s;
    let bytes = [
        per_s(prev.read_bytes, cur.read_bytes),
        per_s(prev.write_bytes, cur.write_bytes),
        per_s(prev.rchar, cur.rchar),
        per_s(prev.wchar, cur.wchar),
        per_s(prev.cancelled_write_bytes, cur.cancelled_write_bytes),
    ];
    let calls = [per_s(prev.syscr, cur.syscr), per_s(prev.syscw, cur.syscw)];
    dt_s > 0.0 && (bytes.iter().any(|b| *b > MAX_PLAUSIBLE_BPS) || calls.iter().any(|c| *c > MAX_PLAUSIBLE_SYSCALLS))
}

/// What a process's next rates are taken against: its counters and block
/// I/O delays at its previous read. A row holds far more; keeping these
/// alone between updates, the model never holds two samples' rows at once.
#[derive(Debug, Clone, PartialEq)]
pub struct Baseline {
    pub key: ProcKey,
    /// `None` when its io could not be read.
    pub io: Option<ProcIo>,
    /// Its counters when they were first read, where they differ from
    /// `io` (see [`Baseline::first`]). Boxed: most processes' counters
    /// never move, and two vectors of baselines are kept.
    first_moved: Option<Box<ProcIo>>,
    delays: Delays,
}

/// Block I/O delay ticks of a process's threads at one read (see
/// [`thread_ticks`]), kept without an allocation for one thread.
#[derive(Debug, Clone, PartialEq)]
enum Delays {
    Unknown,
    /// Its main thread only.
    Main(u64),
    /// (tid, ticks) of every thread, sorted by tid.
    Threads(Box<[(i32, u64)]>),
}

impl Delays {
    /// (tid, ticks) of every thread, sorted by tid; one main thread's in
    /// `one`. `None` when unknown.
    fn per_thread<'a>(&'a self, pid: i32, one: &'a mut [(i32, u64); 1]) -> Option<&'a [(i32, u64)]> {
        match self {
            Delays::Unknown => None,
            Delays::Main(t) => {
                one[0] = (pid, *t);
                Some(one)
            }
            Delays::Threads(t) => Some(t),
        }
    }
}

/// (tid, ticks) of the block I/O delay of every thread of a process at one
/// read, sorted by tid: a single-threaded process's from field 42 of its
/// stat (put in `one`); a multi-threaded one's only where they were read
/// per thread (field 42 is the main thread's alone). `None` when unknown.
fn thread_ticks<'a>(p: &'a RawProc, one: &'a mut [(i32, u64); 1]) -> Option<&'a [(i32, u64)]> {
    if p.num_threads == 1 {
        one[0] = (p.key.pid, p.blkio_ticks?);
        Some(one)
    } else {
        p.thread_blkio.as_deref()
    }
}

impl Baseline {
    pub fn of(p: &RawProc) -> Self {
        let mut one = [(0, 0)];
        let delays = match thread_ticks(p, &mut one) {
            None => Delays::Unknown,
            Some(&[(tid, t)]) if tid == p.key.pid => Delays::Main(t),
            Some(t) => Delays::Threads(t.into()),
        };
        Baseline {
            key: p.key,
            io: p.io.as_ref().ok().copied(),
            first_moved: None,
            delays,
        }
    }

    /// Its counters when they were first read: a row's total since iolens
    /// saw it counts from these (kept while the process is listed).
    pub fn first(&self) -> Option<ProcIo> {
        self.first_moved.as_deref().copied().or(self.io)
    }

    fn set_first(&mut self, first: ProcIo) {
        self.first_moved = (Some(first) != self.io).then(|| Box::new(first));
    }
}

/// The baselines of a sample's processes, sorted by key (for the lookups
/// of the next update), each with the first counters its process has in
/// `before` (the previous baselines, sorted), in the room of `into` (its
/// entries are dropped).
pub fn baselines(procs: &[RawProc], before: &[Baseline], into: Vec<Baseline>) -> Vec<Baseline> {
    let mut walk = BaselineWalk::new(before);
    let mut b = into;
    b.clear();
    b.extend(procs.iter().map(|p| {
        let mut b = Baseline::of(p);
        if let Some(first) = walk.find(&p.key).and_then(Baseline::first) {
            b.set_first(first);
        }
        b
    }));
    b.sort_unstable_by_key(|b| b.key);
    b
}

/// Finds processes' baselines in a sorted slice of them. The processes of
/// a sample come in pid order, so each search starts where the last one
/// ended and steps forward (a binary search per process was most of an
/// update's time with 2,000 processes); a key behind the last one found is
/// searched for in the whole slice.
pub struct BaselineWalk<'a> {
    sorted: &'a [Baseline],
    /// The last key asked for, and where it is or would be.
    last: Option<ProcKey>,
    at: usize,
}

impl<'a> BaselineWalk<'a> {
    pub fn new(sorted: &'a [Baseline]) -> Self {
        BaselineWalk {
            sorted,
            last: None,
            at: 0,
        }
    }

    pub fn find(&mut self, key: &ProcKey) -> Option<&'a Baseline> {
        let from = if self.last.is_some_and(|l| l <= *key) {
            self.at
        } else {
            0
        };
        self.last = Some(*key);
        let rest = &self.sorted[from..];
        // Steps while they are few, else a binary search of the rest.
        let i = match rest.iter().take(8).position(|b| b.key >= *key) {
            Some(i) => i,
            None => rest.partition_point(|b| b.key < *key),
        };
        self.at = from + i;
        self.sorted.get(self.at).filter(|b| b.key == *key)
    }
}

/// Rates of a process against its previous read. `None` when that was
/// another process (pid reuse: another start time), or either side's
/// counters are unavailable. `delayacct`: block I/O delay was accounted at
/// both samples (else IO% is unknown, whatever the frozen values say).
pub fn proc_rates(prev: &Baseline, cur: &RawProc, dt_s: f64, ticks_per_s: f64, delayacct: bool) -> Option<ProcRates> {
    if prev.key != cur.key {
        return None;
    }
    let (Some(p), Ok(c)) = (&prev.io, &cur.io) else {
        return None;
    };
    let mut r = io_rates(p, c, dt_s)?;
    r.io_wait_pct = if delayacct {
        blkio_delta(prev, cur).map(|t| io_wait_pct(t, u64::from(cur.num_threads.max(1)), ticks_per_s, dt_s))
    } else {
        None
    };
    Some(r)
}

/// Block I/O delay ticks of all the process's threads over the interval.
/// A single-threaded process at both ends: field 42 of its stat. Else the
/// per-thread values at both ends are needed: each thread's own delta, a
/// thread started within the interval counting from 0 (the delay of a
/// thread that ended within the interval is lost). `None` when it cannot
/// be known.
pub fn blkio_delta(prev: &Baseline, cur: &RawProc) -> Option<u64> {
    let (mut a, mut b) = ([(0, 0)], [(0, 0)]);
    let before = prev.delays.per_thread(prev.key.pid, &mut a)?;
    let now = thread_ticks(cur, &mut b)?;
    let mut sum = 0u64;
    for (tid, t) in now {
        let was = match before.binary_search_by_key(tid, |(id, _)| *id) {
            Ok(i) => before[i].1,
            Err(_) => 0,
        };
        sum = sum.saturating_add(t.saturating_sub(was));
    }
    Some(sum)
}

/// Percent of the interval spent waiting for block I/O, summed over threads
/// like top's CPU%: at most 100 per thread (delays are counted in whole
/// ticks, so one thread can round above the interval).
pub fn io_wait_pct(ticks: u64, threads: u64, ticks_per_s: f64, dt_s: f64) -> f64 {
    (ticks as f64 / ticks_per_s / dt_s * 100.0).min(100.0 * threads as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_rates_and_zero_totals_are_shared_and_others_are_not() {
        let mut shared = SharedRates::default();
        let zero = ProcRates::default();
        let waiting = ProcRates {
            io_wait_pct: Some(100.0),
            ..zero
        };
        let reading = ProcRates {
            read_bps: 4096.0,
            rchar_bps: 4096.0,
            ..zero
        };
        let polling = ProcRates {
            syscr_per_s: 10.0,
            ..zero
        };
        let a = shared.share(zero);
        assert!(Arc::ptr_eq(&a, &shared.share(zero)));
        assert!(Arc::ptr_eq(&shared.share(waiting), &shared.share(waiting)));
        assert!(!Arc::ptr_eq(&a, &shared.share(waiting)));
        for r in [reading, polling] {
            assert!(!Arc::ptr_eq(&shared.share(r), &shared.share(r)));
            assert_eq!(*shared.share(r), r);
        }
        // At most a few kept: the oldest goes first.
        for pct in 1..=SharedRates::KEEP {
            shared.share(ProcRates {
                io_wait_pct: Some(pct as f64),
                ..zero
            });
        }
        assert_eq!(shared.idle.len(), SharedRates::KEEP);
        assert!(!Arc::ptr_eq(&a, &shared.share(zero)));
        // Totals: zero ones shared, others not.
        let moved = ProcIo {
            rchar: 1,
            ..ProcIo::default()
        };
        assert!(Arc::ptr_eq(
            &shared.total(ProcIo::default()),
            &shared.total(ProcIo::default())
        ));
        assert!(!Arc::ptr_eq(&shared.total(moved), &shared.total(moved)));
        assert_eq!(*shared.total(moved), moved);
    }

    #[test]
    fn the_first_counters_are_kept_while_listed_and_stored_only_once_moved() {
        let p = |read_bytes| RawProc {
            io: Ok(ProcIo {
                read_bytes,
                ..ProcIo::default()
            }),
            ..RawProc::example(10, 1, "a")
        };
        let first = |b: &[Baseline]| b[0].first().map(|f| f.read_bytes);
        let b1 = baselines(&[p(100)], &[], Vec::new());
        let b2 = baselines(&[p(100)], &b1, Vec::new());
        assert_eq!((first(&b1), first(&b2)), (Some(100), Some(100)));
        assert!(b2[0].first_moved.is_none());
        let b3 = baselines(&[p(250)], &b2, Vec::new());
        let b4 = baselines(&[p(300)], &b3, b1);
        assert_eq!((first(&b3), first(&b4)), (Some(100), Some(100)));
        assert_eq!(b4[0].io.map(|io| io.read_bytes), Some(300));
        // Unreadable for a sample: still counted from the first.
        let denied = RawProc {
            io: Err(IoUnavailable::PermissionDenied),
            ..p(0)
        };
        let b5 = baselines(&[denied], &b4, Vec::new());
        assert_eq!(first(&b5), Some(100));
        assert_eq!(first(&baselines(&[p(400)], &b5, Vec::new())), Some(100));
        // Not in the previous sample: counted afresh.
        assert_eq!(first(&baselines(&[p(500)], &[], b2)), Some(500));
    }
    use crate::collect::process::IoUnavailable;

    fn proc(pid: i32, start: u64, io: ProcIo) -> RawProc {
        RawProc {
            blkio_ticks: Some(0),
            io: Ok(io),
            ..RawProc::example(pid, start, "x")
        }
    }

    /// Keys asked for in any order (ascending, repeated, behind, missing,
    /// beyond the end) are found exactly where a binary search finds them.
    #[test]
    fn the_baseline_walk_finds_what_a_binary_search_finds() {
        let procs: Vec<RawProc> = [
            (3, 1),
            (5, 1),
            (5, 9),
            (8, 2),
            (20, 4),
            (21, 1),
            (30, 7),
            (31, 1),
            (40, 1),
            (41, 1),
        ]
        .into_iter()
        .map(|(pid, start)| proc(pid, start, ProcIo::default()))
        .collect();
        let sorted = baselines(&procs, &[], Vec::new());
        let key = |pid, start_time| ProcKey { pid, start_time };
        let orders: [&[(i32, u64)]; 4] = [
            &[(3, 1), (4, 1), (5, 1), (5, 9), (20, 4), (30, 7), (41, 1), (50, 1)],
            &[(41, 1), (3, 1), (31, 1), (31, 1), (8, 2), (5, 2), (40, 1)],
            &[(1, 1), (2, 1), (60, 1), (61, 1), (3, 1)],
            &[(5, 9), (5, 1), (21, 1), (20, 4), (30, 6), (30, 7)],
        ];
        for order in orders {
            let mut walk = BaselineWalk::new(&sorted);
            for &(pid, start) in order {
                let k = key(pid, start);
                let want = sorted.binary_search_by_key(&k, |b| b.key).ok().map(|i| &sorted[i]);
                assert_eq!(walk.find(&k), want, "{k:?} in {order:?}");
            }
        }
        assert_eq!(BaselineWalk::new(&[]).find(&key(1, 1)), None);
    }

    #[test]
    fn hand_computed_rates() {
        let a = ProcIo {
            rchar: 1_000_000,
            syscr: 100,
            read_bytes: 0,
            ..Default::default()
        };
        let b = ProcIo {
            rchar: 1_000_000 + 4_000_000,
            wchar: 8192,
            syscr: 100 + 1000,
            syscw: 2,
            read_bytes: 1_000_000,
            write_bytes: 40960,
            cancelled_write_bytes: 8192,
        };
        let r = io_rates(&a, &b, 2.0).unwrap();
        assert_eq!(r.cancelled_write_bps, 4096.0);
        assert_eq!(r.rchar_bps, 2_000_000.0);
        assert_eq!(r.read_bps, 500_000.0);
        assert_eq!(r.write_bps, 20_480.0);
        assert_eq!(r.syscr_per_s, 500.0);
        assert_eq!(r.avg_read, Some(4000.0));
        assert_eq!(r.avg_write, Some(4096.0));
        assert_eq!(r.cache_share, Some(0.75));
        assert_eq!(r.disk_bps(), 520_480.0);
    }

    #[test]
    fn little_reading_gives_no_cache_share_and_readahead_clamps() {
        let a = ProcIo::default();
        let small = ProcIo {
            rchar: 1000,
            syscr: 1,
            ..Default::default()
        };
        assert_eq!(io_rates(&a, &small, 1.0).unwrap().cache_share, None);
        let ra = ProcIo {
            rchar: 100_000,
            read_bytes: 400_000,
            syscr: 1,
            ..Default::default()
        };
        assert_eq!(io_rates(&a, &ra, 1.0).unwrap().cache_share, Some(0.0));
        assert_eq!(io_rates(&a, &a, 1.0).unwrap().avg_read, None);
    }

    #[test]
    fn pid_reuse_is_never_a_delta() {
        let a = proc(
            42,
            1000,
            ProcIo {
                rchar: 5_000_000,
                ..Default::default()
            },
        );
        let b = proc(
            42,
            2000,
            ProcIo {
                rchar: 10,
                ..Default::default()
            },
        );
        assert_eq!(proc_rates(&Baseline::of(&a), &b, 1.0, 100.0, true), None);
        let c = proc(
            42,
            1000,
            ProcIo {
                rchar: 6_000_000,
                ..Default::default()
            },
        );
        assert_eq!(
            proc_rates(&Baseline::of(&a), &c, 1.0, 100.0, true).unwrap().rchar_bps,
            1_000_000.0
        );
    }

    #[test]
    fn unreadable_counters_give_no_rates() {
        let a = proc(42, 1000, ProcIo::default());
        let mut b = a.clone();
        b.io = Err(IoUnavailable::PermissionDenied);
        assert_eq!(proc_rates(&Baseline::of(&a), &b, 1.0, 100.0, true), None);
    }

    #[test]
    fn io_wait_from_delay_accounting() {
        let a = proc(1, 1, ProcIo::default());
        let mut b = a.clone();
        b.blkio_ticks = Some(50);
        assert_eq!(
            proc_rates(&Baseline::of(&a), &b, 1.0, 100.0, true).unwrap().io_wait_pct,
            Some(50.0)
        );
        // Accounting off: unknown, whatever the (frozen) values say.
        assert_eq!(
            proc_rates(&Baseline::of(&a), &b, 1.0, 100.0, false)
                .unwrap()
                .io_wait_pct,
            None
        );
        // Rounded up to a tick beyond the interval: capped at 100.
        b.blkio_ticks = Some(104);
        assert_eq!(
            proc_rates(&Baseline::of(&a), &b, 1.0, 100.0, true).unwrap().io_wait_pct,
            Some(100.0)
        );
    }

    #[test]
    fn io_wait_of_all_threads() {
        let mut a = proc(10, 1, ProcIo::default());
        a.num_threads = 3;
        a.blkio_ticks = Some(0);
        let mut b = a.clone();
        // Without per-thread values a multi-threaded process's IO% is unknown:
        // field 42 is the main thread's alone.
        b.blkio_ticks = Some(5);
        assert_eq!(
            proc_rates(&Baseline::of(&a), &b, 2.0, 100.0, true).unwrap().io_wait_pct,
            None
        );
        // Thread 11 waited 60 ticks, 12 ended (lost), 13 is new with 20.
        a.thread_blkio = Some([(10, 0), (11, 40), (12, 7)].into());
        b.thread_blkio = Some([(10, 5), (11, 100), (13, 20)].into());
        assert_eq!(blkio_delta(&Baseline::of(&a), &b), Some(85));
        assert_eq!(
            proc_rates(&Baseline::of(&a), &b, 2.0, 100.0, true).unwrap().io_wait_pct,
            Some(42.5)
        );
        // A process that was single-threaded at the start: its main thread
        // is the only one to subtract.
        let mut c = proc(10, 1, ProcIo::default());
        c.blkio_ticks = Some(3);
        assert_eq!(blkio_delta(&Baseline::of(&c), &b), Some(2 + 100 + 20));
        // Several threads each waiting the whole interval: above 100.
        assert_eq!(io_wait_pct(200, 2, 100.0, 1.0), 200.0);
        assert_eq!(io_wait_pct(250, 2, 100.0, 1.0), 200.0);
    }
}
