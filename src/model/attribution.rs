//! Who did the I/O: each process's own I/O over an interval.
//!
//! `/proc/<pid>/io` adds the counters of a process's exited threads and of
//! its reaped children (with everything they had reaped) to its own, so
//! the process-wide delta would show a parent that reaped a busy child as
//! busy itself. A row is the process's own I/O instead, computed per thread:
//!
//! - a live thread contributes its own counters' delta
//!   (`/proc/<pid>/task/<tid>/io`, read by the collector whenever the
//!   process's counters moved), against the value last read — or 0 for a
//!   thread, or a process, born after the previous sample;
//! - a thread that exited (taskstats exit record, root only) contributes its
//!   final counters minus the value last read, once, and is then known as
//!   dead so that a zombie still listed is not counted again.
//!
//! The process-wide delta minus that is what arrived from exited threads
//! and reaped children; without exit records (not root) the model shows it
//! apart, under the process, in the interval it arrived. With exit records
//! it is already on the rows of the threads and processes that did it.
//!
//! A process that exited gets its own I/O over the part of the interval it
//! lived, from its threads' records. Records arrive within one sample of
//! the exit; a thread that vanished keeps its last value a few samples so
//! that a late record is still counted from it.

use crate::collect::process::{PidMap, PidSet, ProcIo, ProcKey, ProcSnapshot};
use crate::collect::taskstats::ExitRecord;
use crate::model::process::{ProcRates, io_rates};

/// Samples a vanished thread or process is remembered for a late record.
const VANISHED_KEEP_SAMPLES: u64 = 5;

/// A thread's counters at its last read or exit record. The tid is kept
/// in it (set by [`Threads::slot`]) rather than beside it: a pair of the
/// two was 8 bytes wider, a size malloc rounds up to 96 bytes for the
/// single thread of most processes.
#[derive(Debug, Clone, Copy, Default)]
struct ThreadBase {
    io: ProcIo,
    seen: u64,
    tid: i32,
    /// Its exit record was counted: a listed zombie adds nothing more.
    dead: bool,
}

impl ThreadBase {
    fn new(io: ProcIo, seen: u64, dead: bool) -> Self {
        ThreadBase { io, seen, tid: 0, dead }
    }

    /// Its counters, as of sample `seen` (the tid stays).
    fn set(&mut self, io: ProcIo, seen: u64, dead: bool) {
        self.io = io;
        self.seen = seen;
        self.dead = dead;
    }
}

#[derive(Debug, Clone, Default)]
struct Base {
    threads: Threads,
    seen: u64,
    /// The sample it was made in.
    since: u64,
}

/// A process's threads by tid, sorted: most processes have one thread,
/// and a base is kept per listed process (a hash map's smallest room is 4
/// entries).
#[derive(Debug, Clone, Default)]
struct Threads(Vec<ThreadBase>);

impl Threads {
    fn get(&self, tid: i32) -> Option<&ThreadBase> {
        let i = self.0.binary_search_by_key(&tid, |e| e.tid).ok()?;
        Some(&self.0[i])
    }

    /// The thread's entry, inserted from `new` (given its tid) when missing.
    fn slot(&mut self, tid: i32, new: impl FnOnce() -> ThreadBase) -> &mut ThreadBase {
        let i = match self.0.binary_search_by_key(&tid, |e| e.tid) {
            Ok(i) => i,
            Err(i) => {
                // Room for exactly the few threads of most processes.
                if self.0.len() == self.0.capacity() && self.0.len() < 4 {
                    self.0.reserve_exact(1);
                }
                self.0.insert(i, ThreadBase { tid, ..new() });
                i
            }
        };
        &mut self.0[i]
    }

    fn retain(&mut self, keep: impl FnMut(&ThreadBase) -> bool) {
        self.0.retain(keep);
    }
}

/// A process whose threads' exit records came in and that is no longer
/// listed (reaped, or gone before it was ever seen).
#[derive(Debug, Clone, PartialEq)]
pub struct Exited {
    pub key: ProcKey,
    pub comm: std::sync::Arc<str>,
    pub ppid: i32,
    pub uid: u32,
    /// Its own I/O over the part of the interval it lived.
    pub own: ProcIo,
}

/// What one sample says about the interval that ends at it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Interval {
    /// Own I/O of listed processes that did any (see [`Interval::own_of`]
    /// for the others: most processes do none in an interval, and a map
    /// of every one was a sample's largest passing allocation).
    pub own: PidMap<ProcKey, ProcIo>,
    /// Listed processes whose own I/O cannot be told: no thread counters
    /// (not readable, a captured tree), or first seen although they existed
    /// at the previous sample.
    pub untold: PidSet<ProcKey>,
    /// There was no previous sample: nothing can be told.
    pub first: bool,
    /// Listed processes born after the previous sample: their counters
    /// count from zero.
    pub born: PidSet<ProcKey>,
    pub exited: Vec<Exited>,
}

impl Interval {
    /// The own I/O of listed process `key` over the interval; `None` when
    /// it cannot be told.
    pub fn own_of(&self, key: &ProcKey) -> Option<ProcIo> {
        if self.first || self.untold.contains(key) {
            return None;
        }
        Some(self.own.get(key).copied().unwrap_or_default())
    }
}

/// Per-thread baselines carried from sample to sample.
#[derive(Debug, Clone, Default)]
pub struct Attribution {
    bases: PidMap<ProcKey, Base>,
    sample: u64,
}

/// `a - b` field by field, never below 0 (exit records are rounded down
/// to KiB, so they can be a little below the last exact value read).
pub fn minus(a: &ProcIo, b: &ProcIo) -> ProcIo {
    ProcIo {
        rchar: a.rchar.saturating_sub(b.rchar),
        wchar: a.wchar.saturating_sub(b.wchar),
        syscr: a.syscr.saturating_sub(b.syscr),
        syscw: a.syscw.saturating_sub(b.syscw),
        read_bytes: a.read_bytes.saturating_sub(b.read_bytes),
        write_bytes: a.write_bytes.saturating_sub(b.write_bytes),
        cancelled_write_bytes: a.cancelled_write_bytes.saturating_sub(b.cancelled_write_bytes),
    }
}

pub fn plus(a: &ProcIo, b: &ProcIo) -> ProcIo {
    ProcIo {
        rchar: a.rchar.saturating_add(b.rchar),
        wchar: a.wchar.saturating_add(b.wchar),
        syscr: a.syscr.saturating_add(b.syscr),
        syscw: a.syscw.saturating_add(b.syscw),
        read_bytes: a.read_bytes.saturating_add(b.read_bytes),
        write_bytes: a.write_bytes.saturating_add(b.write_bytes),
        cancelled_write_bytes: a.cancelled_write_bytes.saturating_add(b.cancelled_write_bytes),
    }
}

/// `r` (rates from the process-wide counters, when there are any) with its
/// byte and syscall rates replaced by the process's own I/O over `dt_s`.
/// What `r` says beyond the counters stays: IO%, and a cache share that
/// another rule declared unknown.
pub fn own_rates(r: Option<ProcRates>, own: &ProcIo, dt_s: f64) -> ProcRates {
    let mut o = io_rates(&ProcIo::default(), own, dt_s).unwrap_or_default();
    if let Some(r) = r {
        o.io_wait_pct = r.io_wait_pct;
        o.cache_share = r.cache_share.and(o.cache_share);
    }
    o
}

/// The previous sample, as far as attribution needs it.
#[derive(Debug, Clone, Copy)]
pub struct Prev<'a> {
    /// The processes listed in it, sorted.
    pub listed: &'a [ProcKey],
    /// CLOCK_BOOTTIME of the previous sample, ns.
    pub boot_ns: u64,
}

impl Attribution {
    /// The baseline of `key`, made now when there is none, seen in this
    /// sample.
    fn base(&mut self, key: ProcKey) -> &mut Base {
        let sample = self.sample;
        let base = self.bases.entry(key).or_insert_with(|| Base {
            since: sample,
            ..Base::default()
        });
        base.seen = sample;
        base
    }

    /// tgid -> the process a record belongs to: listed now, listed before,
    /// or remembered (the latest start for a reused pid). Only the
    /// records' tgids: the bases of a fork storm's exited processes (kept
    /// a few samples) outnumber them several times.
    fn index(
        &self,
        records: &[ExitRecord],
        prev_listed: &[ProcKey],
        listed: &PidMap<i32, ProcKey>,
    ) -> PidMap<i32, ProcKey> {
        let wanted: PidSet<i32> = records.iter().map(|r| r.tgid).collect();
        let mut index: PidMap<i32, ProcKey> = PidMap::default();
        index.reserve(wanted.len());
        for k in self.bases.keys().filter(|k| wanted.contains(&k.pid)) {
            let e = index.entry(k.pid).or_insert(*k);
            if k.start_time > e.start_time {
                *e = *k;
            }
        }
        let prev = prev_listed.iter().filter(|k| wanted.contains(&k.pid));
        index.extend(prev.map(|k| (k.pid, *k)));
        let now = listed.iter().filter(|(p, _)| wanted.contains(*p));
        index.extend(now.map(|(p, k)| (*p, *k)));
        index
    }

    /// Fold in one sample: the processes listed now, and the exit records
    /// received since `prev` (with `records_active` while the listener
    /// runs). Without `prev` only the baselines are taken.
    pub fn update(
        &mut self,
        prev: Option<Prev<'_>>,
        cur: &ProcSnapshot,
        records: &[ExitRecord],
        records_active: bool,
        clk_tck: f64,
    ) -> Interval {
        self.sample += 1;
        let sample = self.sample;
        let tick_ns = 1e9 / if clk_tck > 0.0 { clk_tck } else { 100.0 };
        let prev_listed: &[ProcKey] = prev.map_or(&[], |p| p.listed);
        let was_listed = |key: &ProcKey| prev_listed.binary_search(key).is_ok();
        let mut out = Interval {
            first: prev.is_none(),
            ..Interval::default()
        };
        let mut exited: PidMap<ProcKey, Exited> = PidMap::default();
        if !records.is_empty() {
            let listed: PidMap<i32, ProcKey> = cur.procs.iter().map(|p| (p.key.pid, p.key)).collect();
            let mut index = self.index(records, prev_listed, &listed);
            for r in records {
                let start_ticks = (r.start_boot_ns() as f64 / tick_ns) as u64;
                let key = match index.get(&r.tgid) {
                    // A leader's record names its process's start: another
                    // start (beyond the reception delay) is a reused pid.
                    Some(k) if r.pid != r.tgid || k.start_time.abs_diff(start_ticks) <= 2 + (1e9 / tick_ns) as u64 => {
                        *k
                    }
                    _ => ProcKey {
                        pid: r.tgid,
                        start_time: start_ticks,
                    },
                };
                index.insert(r.tgid, key);
                let base = self.base(key);
                let before = base.threads.get(r.pid).map(|t| t.io).unwrap_or_default();
                base.threads.slot(r.pid, ThreadBase::default).set(r.io, sample, true);
                if prev.is_none() {
                    continue;
                }
                let d = minus(&r.io, &before);
                let own = out.own.entry(key).or_default();
                *own = plus(own, &d);
                if listed.get(&r.tgid) != Some(&key) {
                    let e = exited.entry(key).or_insert_with(|| Exited {
                        key,
                        comm: r.comm.clone(),
                        ppid: r.ppid,
                        uid: r.uid,
                        own: ProcIo::default(),
                    });
                    if r.pid == r.tgid {
                        e.comm = r.comm.clone();
                    }
                    e.own = plus(&e.own, &d);
                }
            }
        }
        for p in &cur.procs {
            let key = p.key;
            // Started since the previous sample (checked first: the search
            // is the dearer test).
            let born =
                prev.is_some_and(|pv| ((key.start_time + 1) as f64 * tick_ns) as u64 > pv.boot_ns && !was_listed(&key));
            // A baseline from before this sample (not one its exit
            // records just made).
            let known = self.bases.get(&key).is_some_and(|b| b.since < sample);
            if !known && !born {
                // First seen, but older than the previous sample: nothing
                // to count from. Take the baseline.
                out.own.remove(&key);
                if prev.is_some() {
                    out.untold.insert(key);
                }
                if let Some(threads) = &p.threads {
                    let base = self.base(key);
                    for t in threads {
                        base.threads.slot(t.tid, || ThreadBase::new(t.io, sample, false));
                    }
                }
                continue;
            }
            if !known && p.threads.is_none() && !out.own.contains_key(&key) {
                if prev.is_some() {
                    out.untold.insert(key);
                }
                continue;
            }
            let base = self.base(key);
            let mut own = out.own.get(&key).copied().unwrap_or_default();
            if let Some(threads) = &p.threads {
                for t in threads {
                    let e = base.threads.slot(t.tid, ThreadBase::default);
                    if e.dead {
                        e.seen = sample;
                        continue;
                    }
                    own = plus(&own, &minus(&t.io, &e.io));
                    e.set(t.io, sample, false);
                }
                // Vanished threads: without exit records their last part is
                // in the process-wide delta only; with them, kept a while
                // for the record.
                base.threads
                    .retain(|t| t.seen == sample || (records_active && t.seen + VANISHED_KEEP_SAMPLES > sample));
            }
            if prev.is_some() {
                if own == ProcIo::default() {
                    out.own.remove(&key);
                } else {
                    out.own.insert(key, own);
                }
                if born {
                    out.born.insert(key);
                }
            }
        }
        self.bases.retain(|_, b| b.seen + VANISHED_KEEP_SAMPLES > sample);
        let mut exited: Vec<Exited> = exited.into_values().collect();
        exited.sort_by_key(|e| e.key);
        for e in &exited {
            out.own.remove(&e.key);
        }
        out.exited = exited;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::process::RawProc;
    use crate::collect::process::threads::ThreadIo;

    const TICK: u64 = 10_000_000;

    fn io(read_bytes: u64, rchar: u64) -> ProcIo {
        ProcIo {
            read_bytes,
            rchar,
            ..Default::default()
        }
    }

    fn proc(pid: i32, start: u64, total: ProcIo, threads: Option<&[(i32, ProcIo)]>) -> RawProc {
        RawProc {
            io: Ok(total),
            threads: threads.map(|t| t.iter().map(|&(tid, io)| ThreadIo { tid, io }).collect()),
            ..RawProc::example(pid, start, "x")
        }
    }

    fn snap(procs: Vec<RawProc>) -> ProcSnapshot {
        ProcSnapshot {
            procs,
            ..Default::default()
        }
    }

    fn record(pid: i32, tgid: i32, start_ticks: u64, recv_ticks: u64, io: ProcIo) -> ExitRecord {
        ExitRecord {
            pid,
            tgid,
            ppid: 1,
            uid: 0,
            comm: format!("t{pid}").into(),
            etime_us: (recv_ticks - start_ticks) * TICK / 1000,
            exit_status: Some(0),
            recv_boot_ns: recv_ticks * TICK,
            io,
        }
    }

    const MIB: u64 = 1 << 20;

    fn key(pid: i32, start_time: u64) -> ProcKey {
        ProcKey { pid, start_time }
    }

    /// The previous sample, taken at `ticks` after boot.
    fn at(listed: &[ProcKey], ticks: u64) -> Prev<'_> {
        Prev {
            listed,
            boot_ns: ticks * TICK,
        }
    }

    /// The processes listed in a sample.
    fn keys(procs: &ProcSnapshot) -> Vec<ProcKey> {
        let mut keys: Vec<ProcKey> = procs.procs.iter().map(|p| p.key).collect();
        keys.sort_unstable();
        keys
    }

    /// Parent 100 (start 50) reaps child 200, which read 100 MiB: the
    /// parent's own row stays at what its thread did; the child's bytes are
    /// on the child's row in the interval it exited, and never on the
    /// parent's.
    #[test]
    fn reaped_child_is_not_the_parents_io() {
        let mut a = Attribution::default();
        // Sample 1 at tick 1000: parent, child alive with 10 MiB read.
        let s1 = snap(vec![
            proc(100, 50, io(MIB, MIB), Some(&[(100, io(MIB, MIB))])),
            proc(200, 900, io(10 * MIB, 10 * MIB), Some(&[(200, io(10 * MIB, 10 * MIB))])),
        ]);
        let first = Interval {
            first: true,
            ..Interval::default()
        };
        assert_eq!(a.update(None, &s1, &[], true, 100.0), first);
        // Sample 2 at tick 1100: the child read 90 MiB more, exited and was
        // reaped (the parent's counters took in its 100 MiB; its own
        // thread read 4 KiB).
        let s2 = snap(vec![proc(
            100,
            50,
            io(MIB + 100 * MIB + 4096, MIB + 100 * MIB + 4096),
            Some(&[(100, io(MIB + 4096, MIB + 4096))]),
        )]);
        let r = [record(200, 200, 900, 1050, io(100 * MIB, 100 * MIB))];
        let listed = keys(&s1);
        let prev = at(&listed, 1000);
        let i = a.update(Some(prev), &s2, &r, true, 100.0);
        assert_eq!(i.own[&key(100, 50)], io(4096, 4096));
        assert_eq!(i.exited.len(), 1);
        assert_eq!(i.exited[0].key, key(200, 900));
        assert_eq!(i.exited[0].own, io(90 * MIB, 90 * MIB));
        assert!(!i.own.contains_key(&i.exited[0].key));
    }

    /// Without exit records, the process row has its live threads only.
    #[test]
    fn without_records_only_live_threads() {
        let mut a = Attribution::default();
        let s1 = snap(vec![proc(100, 50, io(0, 0), Some(&[(100, io(0, 0)), (101, io(0, 0))]))]);
        a.update(None, &s1, &[], false, 100.0);
        // Thread 101 read 64 MiB and exited; 100 read 1 MiB; a child's
        // 5 MiB was reaped.
        let s2 = snap(vec![proc(
            100,
            50,
            io(70 * MIB, 70 * MIB),
            Some(&[(100, io(MIB, MIB))]),
        )]);
        let listed = keys(&s1);
        let prev = at(&listed, 1000);
        let i = a.update(Some(prev), &s2, &[], false, 100.0);
        assert_eq!(i.own[&key(100, 50)], io(MIB, MIB));
        assert!(i.exited.is_empty());
    }

    /// A worker thread that read 64 MiB and exited: counted once on its
    /// process (root), also while a record arrives one sample late.
    #[test]
    fn exited_worker_thread_stays_on_its_process_once() {
        let mut a = Attribution::default();
        let key = key(100, 50);
        let s1 = snap(vec![proc(100, 50, io(0, 0), Some(&[(100, io(0, 0)), (101, io(0, 0))]))]);
        a.update(None, &s1, &[], true, 100.0);
        // Sample 2: thread 101 has read 16 MiB.
        let s2 = snap(vec![proc(
            100,
            50,
            io(16 * MIB, 16 * MIB),
            Some(&[(100, io(0, 0)), (101, io(16 * MIB, 16 * MIB))]),
        )]);
        let p1_listed = keys(&s1);
        let p1 = at(&p1_listed, 1000);
        let i = a.update(Some(p1), &s2, &[], true, 100.0);
        assert_eq!(i.own[&key], io(16 * MIB, 16 * MIB));
        // Sample 3: 101 read 48 MiB more and exited; its record is late.
        let s3 = snap(vec![proc(100, 50, io(64 * MIB, 64 * MIB), Some(&[(100, io(0, 0))]))]);
        let p2_listed = keys(&s2);
        let p2 = at(&p2_listed, 1100);
        let i = a.update(Some(p2), &s3, &[], true, 100.0);
        assert_eq!(i.own_of(&key), Some(io(0, 0)));
        // Sample 4: the record (64 MiB in all) arrives: the 48 MiB not yet
        // shown, nothing twice.
        let p3_listed = keys(&s3);
        let p3 = at(&p3_listed, 1200);
        let r = [record(101, 100, 60, 1250, io(64 * MIB, 64 * MIB))];
        let i = a.update(Some(p3), &s3, &r, true, 100.0);
        assert_eq!(i.own[&key], io(48 * MIB, 48 * MIB));
        assert!(i.exited.is_empty());
    }

    /// A short-lived process born and gone between two samples: all its
    /// I/O on its own exited row, its start from the record.
    #[test]
    fn short_lived_process_counts_from_zero() {
        let mut a = Attribution::default();
        let s = snap(vec![proc(100, 50, io(0, 0), Some(&[(100, io(0, 0))]))]);
        a.update(None, &s, &[], true, 100.0);
        let listed = keys(&s);
        let prev = at(&listed, 1000);
        let r = [record(300, 300, 1020, 1030, io(4 * MIB, 4 * MIB))];
        let i = a.update(Some(prev), &s, &r, true, 100.0);
        assert_eq!(i.exited.len(), 1);
        assert_eq!(i.exited[0].key, key(300, 1020));
        assert_eq!(i.exited[0].own, io(4 * MIB, 4 * MIB));
        assert_eq!(&*i.exited[0].comm, "t300");
    }

    /// A zombie still listed after its exit record: its I/O counted once,
    /// in the interval of the record, and nothing more while it stays.
    #[test]
    fn listed_zombie_is_not_counted_again() {
        let mut a = Attribution::default();
        let key = key(200, 900);
        let s1 = snap(vec![proc(200, 900, io(MIB, MIB), Some(&[(200, io(MIB, MIB))]))]);
        a.update(None, &s1, &[], true, 100.0);
        let mut z = proc(200, 900, io(3 * MIB, 3 * MIB), Some(&[(200, io(3 * MIB, 3 * MIB))]));
        z.state = 'Z';
        let s2 = snap(vec![z.clone()]);
        let r = [record(200, 200, 900, 1050, io(3 * MIB, 3 * MIB))];
        let p1_listed = keys(&s1);
        let p1 = at(&p1_listed, 1000);
        let i = a.update(Some(p1), &s2, &r, true, 100.0);
        assert_eq!(i.own[&key], io(2 * MIB, 2 * MIB));
        assert!(i.exited.is_empty());
        let p2_listed = keys(&s2);
        let p2 = at(&p2_listed, 1100);
        let i = a.update(Some(p2), &s2, &[], true, 100.0);
        assert_eq!(i.own_of(&key), Some(io(0, 0)));
    }

    /// A process first seen now: from zero when born after the previous
    /// sample, unknown when it is older.
    #[test]
    fn first_seen_processes() {
        let mut a = Attribution::default();
        let s1 = snap(vec![]);
        a.update(None, &s1, &[], false, 100.0);
        let s2 = snap(vec![
            proc(400, 1005, io(MIB, MIB), Some(&[(400, io(MIB, MIB))])),
            proc(401, 500, io(MIB, MIB), Some(&[(401, io(MIB, MIB))])),
        ]);
        let listed = keys(&s1);
        let prev = at(&listed, 1000);
        let i = a.update(Some(prev), &s2, &[], false, 100.0);
        let born = key(400, 1005);
        assert_eq!(i.own[&born], io(MIB, MIB));
        assert!(i.born.contains(&born));
        assert_eq!(i.own_of(&key(401, 500)), None);
        // Counters not moved (threads not read): nothing, still known.
        let s3 = snap(vec![
            proc(400, 1005, io(MIB, MIB), None),
            proc(401, 500, io(MIB, MIB), None),
        ]);
        let listed = keys(&s2);
        let prev = at(&listed, 1100);
        let i = a.update(Some(prev), &s3, &[], false, 100.0);
        assert_eq!(i.own_of(&born), Some(io(0, 0)));
        assert_eq!(i.own_of(&key(401, 500)), Some(io(0, 0)));
    }

    /// A process never given thread counters (a captured tree) is left to
    /// the process-wide delta.
    #[test]
    fn no_thread_counters_no_attribution() {
        let mut a = Attribution::default();
        let s = snap(vec![proc(100, 50, io(0, 0), None)]);
        a.update(None, &s, &[], false, 100.0);
        let listed = keys(&s);
        let prev = at(&listed, 1000);
        let i = a.update(Some(prev), &s, &[], false, 100.0);
        assert_eq!(i.own_of(&key(100, 50)), None);
    }
}
