//! Progress of long file operations from fd positions: percent, rate, ETA,
//! and honest labels where progress cannot be known. Pure: time comes from
//! the samples.
//!
//! Rules (each interval, per open regular file or block device):
//!
//! - **rate** = Δpos over the last [`RATE_WINDOW`] intervals (the window
//!   restarts when `pos` goes backwards: a seek);
//! - **percent** = pos / size; **ETA** = (size − pos) / rate;
//! - [`Label::Truncated`]: pos > size (the file shrank under the reader);
//! - [`Label::Growing`]: open for writing and the file ends at `pos` (it grows
//!   as it is written): bytes and rate, no percent. A writer into a
//!   preallocated file (size > pos, not growing) or a block device keeps a
//!   percent;
//! - [`Label::Positional`]: `pos` did not move for two intervals while the
//!   process's rchar (for a file open for reading) or wchar (for writing)
//!   grew by at least [`POSITIONAL_MIN_BYTES`] more than its moving fds
//!   explain in the last one —
//!   `pread`/`pwrite`/`mmap`-style I/O. The process-level rate is shown, no
//!   percent;
//! - [`Label::Stalled`]: no movement for [`STALL_SAMPLES`] samples before the
//!   end of the file (shown as the seconds since it last moved);
//! - files smaller than [`TransferTracker::min_size`] are never transfers (a script
//!   or a small log read in one go is not a copy).
//!
//! Entries are grouped into one [`Job`] per process. Its main entry — whose
//! percent and ETA the job shows — is the file being read (the read side's
//! size is the job's size: `dd if=a of=b` is as far as it has read of `a`,
//! never measured against `b`'s device), the one that moved most recently.
//! A process that reads many files in turn (`tar`, `rsync`) shows its current
//! file, the number of files it finished, and its overall read rate (rchar).
//! A job whose files are all closed (or whose process ended) is kept for
//! [`DONE_KEEP_NS`] as done: `done` when its last position plus its rate
//! times the time until it was seen gone reaches the size (a copy that
//! finished between two samples), else `ended at N%` with the last seen
//! percent.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use crate::collect::fdinfo::{Access, FdProc, FdSnapshot, FdTarget, RawFd, ScanReason, TRACK_IDLE_SAMPLES};
use crate::collect::process::{PidMap, PidSet, ProcIo, ProcKey};

mod job;
#[cfg(any(test, feature = "test-support"))]
pub use job::example_job;
pub use job::{FdKey, Job, Label, REMOTE, Transfer, sort_jobs};

/// Intervals the rate is smoothed over.
pub const RATE_WINDOW: usize = 5;
/// Samples without movement before an entry is labelled stalled.
pub const STALL_SAMPLES: u32 = 3;
/// How long a finished job stays listed as done (ns).
pub const DONE_KEEP_NS: u64 = 30_000_000_000;
/// Unexplained Δrchar/Δwchar per interval needed to call a still fd positional.
pub const POSITIONAL_MIN_BYTES: u64 = 64 * 1024;

#[derive(Debug, Clone)]
struct EntryState {
    /// (mono_ns, pos, size) of the last samples, oldest first.
    window: VecDeque<(u64, u64, Option<u64>)>,
    still: u32,
    /// When the position last moved (or the entry was first seen), ns.
    moved_ns: u64,
    /// Moved at least once while tracked.
    moved_ever: bool,
    /// Seen last with a link text, opened for reading (a file read, should
    /// it close).
    read_path: bool,
    /// What is shown of it, once it is visible (it moved, did positional
    /// I/O, or is a file with data of a watched process) and from then on;
    /// `None` for the others (most are a full scan's idle files, kept for
    /// one sample as a baseline).
    last: Option<Box<Transfer>>,
    /// The update that last saw it (see [`TransferTracker::round`]).
    round: u64,
}

#[derive(Debug, Clone, Default)]
struct ProcTrack {
    window: VecDeque<(u64, ProcIo)>,
    files_seen_closed: u32,
    comm: String,
}

/// What one interval says of a process, for each of its fds.
struct ProcInterval {
    /// Process read/write rates over the window.
    read_bps: Option<f64>,
    write_bps: Option<f64>,
    /// This interval's Δrchar/Δwchar that its moving fds do not explain.
    unexp_r: u64,
    unexp_w: u64,
    /// Watched or a known command: files shown before they move.
    shown: bool,
    /// It finished a file already (reads many in turn).
    many: bool,
}

/// Tracks transfers across samples.
#[derive(Debug, Clone, Default)]
pub struct TransferTracker {
    entries: HashMap<FdKey, EntryState>,
    procs: PidMap<ProcKey, ProcTrack>,
    /// Current jobs, sorted by ETA (unknown ETA after known, done last).
    pub jobs: Vec<Job>,
    /// Commands whose files are shown even before they move (like
    /// Xfennec/progress's list of known copy tools).
    pub known_names: Vec<String>,
    /// Files (regular files of a known size) smaller than this many bytes
    /// are not transfers; 0 shows all.
    pub min_size: u64,
    /// Time of the previous update, ns (when a job not seen now was last seen).
    last_ns: Option<u64>,
    /// Updates so far: the entries seen by this one are kept, in place (a
    /// full scan has an entry per open file of every process).
    round: u64,
}

fn window_rate(w: &VecDeque<(u64, u64, Option<u64>)>) -> Option<f64> {
    let (&(t0, p0, _), &(t1, p1, _)) = (w.front()?, w.back()?);
    (t1 > t0).then(|| p1.saturating_sub(p0) as f64 / ((t1 - t0) as f64 / 1e9))
}

fn proc_rates(w: &VecDeque<(u64, ProcIo)>) -> (Option<f64>, Option<f64>) {
    let (Some((t0, a)), Some((t1, b))) = (w.front(), w.back()) else {
        return (None, None);
    };
    if t1 <= t0 {
        return (None, None);
    }
    let dt = (t1 - t0) as f64 / 1e9;
    (
        Some(b.rchar.saturating_sub(a.rchar) as f64 / dt),
        Some(b.wchar.saturating_sub(a.wchar) as f64 / dt),
    )
}

fn push_window<T>(w: &mut VecDeque<T>, v: T) {
    if w.len() > RATE_WINDOW {
        w.pop_front();
    }
    w.push_back(v);
}

/// The label, percent, rate and ETA of an entry.
fn classify(
    raw: &RawFd,
    st: &EntryState,
    positional: bool,
    proc_rate: Option<f64>,
    now_ns: u64,
) -> (Label, Option<f64>, Option<f64>, Option<f64>) {
    let rate = window_rate(&st.window);
    let access = raw.access();
    let size = raw.size;
    if let Some(s) = size
        && raw.pos > s
    {
        return (Label::Truncated, None, rate, None);
    }
    let grows = raw.target == FdTarget::File
        && access.writes()
        && (size.is_some_and(|s| s <= raw.pos) || size > st.window.front().and_then(|w| w.2));
    if positional {
        return (Label::Positional, None, proc_rate, None);
    }
    if raw.remote {
        return (Label::Remote, None, rate, None);
    }
    let percent = if grows {
        None
    } else {
        size.filter(|s| *s > 0).map(|s| raw.pos as f64 / s as f64 * 100.0)
    };
    let at_end = size.is_some_and(|s| raw.pos >= s) && !grows;
    if st.still >= STALL_SAMPLES && !at_end {
        let seconds = (now_ns.saturating_sub(st.moved_ns) as f64 / 1e9).round() as u64;
        return (Label::Stalled { seconds }, percent, Some(0.0), None);
    }
    if grows {
        return (Label::Growing, None, rate, None);
    }
    let eta = match (size, rate) {
        (Some(s), Some(r)) if r > 0.0 => Some(s.saturating_sub(raw.pos) as f64 / r),
        (Some(s), _) if raw.pos >= s => Some(0.0),
        _ => None,
    };
    (Label::Progress, percent, rate, eta)
}

impl TransferTracker {
    /// A tracker for which files under `min_size` bytes are not transfers.
    pub fn with_min_size(min_size: u64) -> Self {
        TransferTracker {
            min_size,
            ..Default::default()
        }
    }

    /// Forget the rate windows (after a pause): rates restart from the next
    /// sample instead of averaging over the gap.
    pub fn rebaseline(&mut self) {
        for e in self.entries.values_mut() {
            e.window.clear();
        }
        for p in self.procs.values_mut() {
            p.window.clear();
        }
    }

    /// Fold in the fd part of a sample taken at `now_ns`.
    pub fn update(&mut self, snap: &FdSnapshot, now_ns: u64) {
        let prev_jobs = std::mem::take(&mut self.jobs);
        self.round += 1;
        // Room for this snapshot's fds: most are tracked already (the
        // ones not seen again are dropped below).
        let fds: usize = snap.procs.iter().map(|p| p.fds.len()).sum();
        self.entries.reserve(fds.saturating_sub(self.entries.len()));
        for p in &snap.procs {
            self.fold_proc(p, now_ns);
        }
        // Entries that were not seen again: closed, reused, or their process
        // ended (when it was scanned or is known to have exited).
        // A process whose table was read in parts did not close the files
        // that were not read: they stay a while (its moving ones are read
        // every scan).
        let scanned: PidSet<ProcKey> = snap.procs.iter().filter(|p| p.unread == 0).map(|p| p.key).collect();
        let parts: PidSet<ProcKey> = snap.procs.iter().filter(|p| p.unread > 0).map(|p| p.key).collect();
        self.drop_unseen(snap, &scanned, &parts);
        // Give back the room of a full scan once its files are untracked.
        if self.entries.capacity() > 4 * self.entries.len().max(64) {
            self.entries.shrink_to_fit();
        }
        let mut jobs = self.open_jobs();
        self.end_gone_jobs(prev_jobs, &mut jobs, snap, &scanned, now_ns);
        // Forget processes that are gone and have nothing left to show.
        self.procs
            .retain(|k, _| scanned.contains(k) || parts.contains(k) || jobs.iter().any(|j| j.proc == *k));
        sort_jobs(&mut jobs);
        self.jobs = jobs;
        self.last_ns = Some(now_ns);
    }

    /// Fold in one process of the sample: its I/O counters, then each fd.
    fn fold_proc(&mut self, p: &FdProc, now_ns: u64) {
        let pt = self.procs.entry(p.key).or_default();
        pt.comm.clone_from(&p.comm);
        let prev_io = pt.window.back().map(|(_, io)| *io);
        if let Some(io) = p.io {
            push_window(&mut pt.window, (now_ns, io));
        }
        let (read_bps, write_bps) = proc_rates(&pt.window);
        let (unexp_r, unexp_w) = match (prev_io, p.io) {
            (Some(a), Some(b)) => {
                let (moved_r, moved_w) = self.moved_bytes(p);
                (
                    b.rchar.saturating_sub(a.rchar).saturating_sub(moved_r),
                    b.wchar.saturating_sub(a.wchar).saturating_sub(moved_w),
                )
            }
            _ => (0, 0),
        };
        let ctx = ProcInterval {
            read_bps,
            write_bps,
            unexp_r,
            unexp_w,
            shown: p.reason == ScanReason::Watched || self.known_names.contains(&p.comm),
            many: self.procs.get(&p.key).is_some_and(|pt| pt.files_seen_closed > 0),
        };
        for f in &p.fds {
            self.fold_fd(fd_key(p.key, f), f, &ctx, now_ns);
        }
    }

    /// How much of this interval's logical I/O (read, written) the moving
    /// fds of `p` explain.
    fn moved_bytes(&self, p: &FdProc) -> (u64, u64) {
        let (mut moved_r, mut moved_w) = (0u64, 0u64);
        for f in &p.fds {
            let key = fd_key(p.key, f);
            if let Some(old) = self.entries.get(&key).and_then(|e| e.window.back()) {
                let d = f.pos.saturating_sub(old.1);
                match f.access() {
                    Access::Read => moved_r += d,
                    Access::Write => moved_w += d,
                    Access::ReadWrite => {
                        moved_r += d;
                        moved_w += d;
                    }
                }
            }
        }
        (moved_r, moved_w)
    }

    /// Fold in one fd: its window, stillness, label and what is shown of it.
    fn fold_fd(&mut self, key: FdKey, f: &RawFd, ctx: &ProcInterval, now_ns: u64) {
        let round = self.round;
        // No link text: never read into nor moved, not a transfer
        // (yet); tracked, not shown. The scanner reads it once it moves.
        let has_path = f.path.is_some();
        let st = self.entries.entry(key).or_insert_with(|| EntryState {
            // Room for one: most entries are of a full scan's idle files.
            window: VecDeque::with_capacity(1),
            still: 0,
            moved_ns: now_ns,
            moved_ever: false,
            read_path: false,
            last: None,
            round: 0,
        });
        if st.round == round {
            return; // the same fd twice in one snapshot: the first counts
        }
        st.round = round;
        let before = st.window.back().map(|w| w.1);
        if before.is_some_and(|b| f.pos < b) {
            st.window.clear(); // seek backwards: restart the rate
        }
        push_window(&mut st.window, (now_ns, f.pos, f.size));
        let moved = before.is_some_and(|b| b != f.pos);
        st.still = if moved || before.is_none() { 0 } else { st.still + 1 };
        if moved {
            st.moved_ns = now_ns;
        }
        let unfinished = f.size.is_none_or(|s| f.pos < s);
        // Two still intervals: one could be a race between reading
        // /proc/<pid>/io and fdinfo (a read in between shows in pos
        // first, in rchar one sample later).
        let positional = st.still >= 2
            && unfinished
            && ((f.access().reads() && ctx.unexp_r >= POSITIONAL_MIN_BYTES)
                || (f.access().writes() && ctx.unexp_w >= POSITIONAL_MIN_BYTES));
        let proc_rate = if f.access().reads() && ctx.unexp_r >= POSITIONAL_MIN_BYTES {
            ctx.read_bps
        } else {
            ctx.write_bps
        };
        st.moved_ever |= moved;
        // Small files are not transfers, except for a process that
        // reads many in turn (tar, rsync: it finished one already).
        let tiny = f.target == FdTarget::File && f.size.is_some_and(|s| s < self.min_size) && !ctx.many;
        let visible = st.last.is_some()
            || (has_path && !tiny && (moved || positional || (ctx.shown && f.size.is_some_and(|s| s > 0))));
        st.read_path = has_path && f.access().reads();
        if !visible {
            return;
        }
        let (label, percent, rate_bps, eta_s) = classify(f, st, positional, proc_rate, now_ns);
        let path = f.path.clone().unwrap_or_else(|| Arc::from(&b""[..]));
        let t = Transfer {
            percent,
            rate_bps,
            eta_s,
            label,
            ..blank(key, f, path)
        };
        match &mut st.last {
            Some(last) => **last = t,
            None => st.last = Some(Box::new(t)),
        }
    }

    /// Drop the entries this update did not see (counting a file read and
    /// closed as done for its process); those of a process whose table was
    /// read in parts stay a while.
    fn drop_unseen(&mut self, snap: &FdSnapshot, scanned: &PidSet<ProcKey>, parts: &PidSet<ProcKey>) {
        let round = self.round;
        let procs = &mut self.procs;
        self.entries.retain(|key, st| {
            if st.round == round {
                return true;
            }
            let pk = key.proc_key();
            if parts.contains(&pk) {
                return round - st.round < u64::from(TRACK_IDLE_SAMPLES);
            }
            // Seen with a path (read into, or in a process doing I/O), then closed.
            if st.read_path
                && (scanned.contains(&pk) || snap.exited.contains(&pk))
                && let Some(pt) = procs.get_mut(&pk)
            {
                pt.files_seen_closed += 1;
            }
            false
        });
    }

    /// Jobs built from the visible open entries, one per process.
    fn open_jobs(&self) -> Vec<Job> {
        let mut by_proc: HashMap<ProcKey, Vec<(&EntryState, &Transfer)>> = HashMap::new();
        for st in self.entries.values() {
            if let Some(last) = st.last.as_deref() {
                by_proc.entry(last.key.proc_key()).or_default().push((st, last));
            }
        }
        let mut jobs = Vec::new();
        for (pk, mut sts) in by_proc {
            // Main: the read side, most recently moving, then the largest.
            sts.sort_by(|a, b| {
                let rank =
                    |(e, t): &(&EntryState, &Transfer)| (t.access != Access::Read, e.still, std::cmp::Reverse(t.size));
                rank(a).cmp(&rank(b)).then(a.1.key.fd.cmp(&b.1.key.fd))
            });
            let pt = self.procs.get(&pk).cloned().unwrap_or_default();
            let (read_bps, write_bps) = proc_rates(&pt.window);
            let Some((first, rest)) = sts.split_first() else {
                continue;
            };
            // Other files only when they move (or do positional I/O).
            let others = rest
                .iter()
                .filter(|(e, t)| e.moved_ever || t.label == Label::Positional)
                .map(|(_, t)| (*t).clone())
                .collect();
            jobs.push(Job {
                proc: pk,
                comm: pt.comm.clone(),
                main: first.1.clone(),
                others,
                files_seen_closed: pt.files_seen_closed,
                read_bps,
                write_bps,
                ended_ns: None,
            });
        }
        jobs
    }

    /// Add to `jobs` the previous jobs that disappeared: done, when we know
    /// why (scanned or exited), for [`DONE_KEEP_NS`].
    fn end_gone_jobs(
        &self,
        prev_jobs: Vec<Job>,
        jobs: &mut Vec<Job>,
        snap: &FdSnapshot,
        scanned: &PidSet<ProcKey>,
        now_ns: u64,
    ) {
        for mut j in prev_jobs {
            let gone = !jobs.iter().any(|n| n.proc == j.proc);
            let known = scanned.contains(&j.proc) || snap.exited.contains(&j.proc) || j.is_done();
            if !gone || !known || j.ended_ns.is_some_and(|t| now_ns.saturating_sub(t) > DONE_KEEP_NS) {
                continue;
            }
            if j.ended_ns.is_none() {
                j.ended_ns = Some(now_ns);
                // It was last seen at the previous update; at its rate, how
                // far could it have got before it was gone?
                let gone_s = self.last_ns.map_or(0.0, |t| now_ns.saturating_sub(t) as f64 / 1e9);
                for t in std::iter::once(&mut j.main).chain(j.others.iter_mut()) {
                    let reach = t.pos as f64 + t.rate_bps.unwrap_or(0.0).max(0.0) * gone_s;
                    let complete = t.label == Label::Growing || t.size.is_some_and(|s| reach >= s as f64);
                    t.label = Label::Done { complete };
                    t.rate_bps = None;
                    t.eta_s = None;
                }
            }
            jobs.push(j);
        }
    }
}

fn fd_key(p: ProcKey, f: &RawFd) -> FdKey {
    FdKey {
        pid: p.pid,
        start_time: p.start_time,
        fd: f.fd,
        mnt_id: f.mnt_id,
        ino: f.ino,
    }
}

fn blank(key: FdKey, f: &RawFd, path: Arc<[u8]>) -> Transfer {
    Transfer {
        key,
        target: f.target,
        access: f.access(),
        path,
        pos: f.pos,
        size: f.size,
        percent: None,
        rate_bps: None,
        eta_s: None,
        label: Label::Progress,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::fdinfo::FdProc;

    const S: u64 = 1_000_000_000;

    fn fd(fd: i32, flags: u32, pos: u64, size: u64, ino: u64) -> RawFd {
        RawFd {
            fd,
            target: FdTarget::File,
            pos,
            flags,
            mnt_id: Some(1),
            ino,
            dev: (254 << 8) | 1,
            size: Some(size),
            remote: false,
            path: Some(Arc::from(&b"/data/f"[..])),
        }
    }

    /// A full scan of idle processes: each fd is kept one sample as a
    /// baseline, in a table that does not grow when the same fds come again
    /// (it had room for twice as many), and nothing shown is built for it.
    #[test]
    fn a_full_scan_of_idle_files_keeps_small_baselines() {
        let idle = || FdSnapshot {
            procs: (0..1000)
                .map(|pid| FdProc {
                    key: ProcKey { pid, start_time: 9 },
                    comm: "sleep".into(),
                    io: Some(ProcIo::default()),
                    reason: ScanReason::Full,
                    fds: vec![fd(3, 0, 0, 10, pid as u64)],
                    unread: 0,
                    devs: Vec::new(),
                })
                .collect(),
            ..Default::default()
        };
        let mut t = TransferTracker::default();
        t.update(&idle(), S);
        let room = t.entries.capacity();
        t.update(&idle(), 2 * S);
        assert_eq!(t.entries.len(), 1000);
        assert_eq!(t.entries.capacity(), room);
        assert!(room < 2000, "{room}");
        assert!(t.entries.values().all(|e| e.last.is_none()));
        assert!(t.jobs.is_empty());
    }

    fn snap(pid: i32, rchar: u64, wchar: u64, fds: Vec<RawFd>) -> FdSnapshot {
        FdSnapshot {
            procs: vec![FdProc {
                key: ProcKey { pid, start_time: 9 },
                comm: "dd".into(),
                io: Some(ProcIo {
                    rchar,
                    wchar,
                    ..Default::default()
                }),
                reason: ScanReason::Active,
                fds,
                unread: 0,
                devs: Vec::new(),
            }],
            ..Default::default()
        }
    }

    #[test]
    fn reader_percent_rate_eta() {
        let mut t = TransferTracker::default();
        for i in 0..=6u64 {
            // 2 MB/s through a 100 MB file.
            let pos = i * 2_000_000;
            t.update(&snap(5, pos, 0, vec![fd(3, 0, pos, 100_000_000, 7)]), i * S);
        }
        let j = &t.jobs[0];
        assert_eq!(j.main.label, Label::Progress);
        assert!((j.main.percent.unwrap() - 12.0).abs() < 1e-9);
        assert!((j.main.rate_bps.unwrap() - 2e6).abs() < 1e-6);
        assert!((j.main.eta_s.unwrap() - 44.0).abs() < 1e-6);
        assert!((j.read_bps.unwrap() - 2e6).abs() < 1e-6);
    }

    #[test]
    fn read_side_is_the_job_and_writer_grows() {
        let mut t = TransferTracker::default();
        let w = libc::O_WRONLY as u32;
        for i in 0..3u64 {
            let pos = i * 1_000_000;
            let fds = vec![fd(3, 0, pos, 10_000_000, 7), fd(4, w, pos, pos, 8)];
            t.update(&snap(5, pos, pos, fds), i * S);
        }
        let j = &t.jobs[0];
        assert_eq!(j.main.key.fd, 3);
        assert!((j.main.percent.unwrap() - 20.0).abs() < 1e-9);
        assert_eq!(j.others[0].label, Label::Growing);
        assert_eq!(j.others[0].percent, None);
    }

    #[test]
    fn preallocated_writer_has_percent() {
        let mut t = TransferTracker::default();
        for i in 0..3u64 {
            let pos = i * 1_000_000;
            let fds = vec![fd(4, libc::O_WRONLY as u32, pos, 8_000_000, 8)];
            t.update(&snap(5, 0, pos, fds), i * S);
        }
        let m = &t.jobs[0].main;
        assert_eq!(m.label, Label::Progress);
        assert!((m.percent.unwrap() - 25.0).abs() < 1e-9);
    }

    #[test]
    fn positional_truncated_stalled_reuse_done() {
        let mut t = TransferTracker::default();
        // pread: pos stays 0 while rchar grows 1 MB/s.
        for i in 0..3u64 {
            t.update(&snap(5, i * 1_000_000, 0, vec![fd(3, 0, 0, 10_000_000, 7)]), i * S);
        }
        let m = &t.jobs[0].main;
        assert_eq!(m.label, Label::Positional);
        assert_eq!(m.percent, None);
        assert!((m.rate_bps.unwrap() - 1e6).abs() < 1e-6);

        // Truncated: pos beyond size.
        let mut t = TransferTracker::default();
        t.update(&snap(6, 0, 0, vec![fd(3, 0, 100, 1000, 7)]), 0);
        t.update(&snap(6, 500, 0, vec![fd(3, 0, 600, 10, 7)]), S);
        assert_eq!(t.jobs[0].main.label, Label::Truncated);

        // Stalled, then the fd is reused for another file: a new entry.
        for i in 2..6u64 {
            t.update(&snap(6, 500, 0, vec![fd(3, 0, 600, 1000, 7)]), i * S);
        }
        assert_eq!(t.jobs[0].main.label, Label::Stalled { seconds: 4 });
        assert_eq!(t.jobs[0].main.label_text(), "stalled 4 s");
        t.update(&snap(6, 600, 0, vec![fd(3, 0, 0, 50, 99)]), 6 * S);
        // The new file has not moved yet: the job is done (ended), 1 file done.
        assert_eq!(t.jobs.len(), 1);
        assert_eq!(t.jobs[0].main.key.ino, 7);
        assert_eq!(t.jobs[0].main.label, Label::Done { complete: false });
        t.update(&snap(6, 650, 0, vec![fd(3, 0, 50, 50, 99)]), 7 * S);
        let live = t.jobs.iter().find(|j| !j.is_done()).unwrap();
        assert_eq!(live.main.key.ino, 99);
        assert_eq!(live.main.percent, Some(100.0));
        assert_eq!(live.files_seen_closed, 1);
        // Done jobs go after 30 s.
        t.update(&snap(6, 650, 0, vec![fd(3, 0, 50, 50, 99)]), 40 * S);
        assert!(t.jobs.iter().all(|j| !j.is_done()));
    }

    #[test]
    fn exited_process_is_done_and_sorting_by_eta() {
        let mut t = TransferTracker::default();
        for i in 0..3u64 {
            let mut s = snap(5, 0, 0, vec![fd(3, 0, i * 1000, 10_000, 7)]);
            let mut s2 = snap(8, 0, 0, vec![fd(3, 0, i * 1000, 5_000, 7)]);
            s.procs.append(&mut s2.procs);
            t.update(&s, i * S);
        }
        assert_eq!(t.jobs.iter().map(|j| j.proc.pid).collect::<Vec<_>>(), vec![8, 5]);
        let s = FdSnapshot {
            exited: vec![ProcKey { pid: 8, start_time: 9 }],
            ..snap(5, 0, 0, vec![fd(3, 0, 3000, 10_000, 7)])
        };
        t.update(&s, 3 * S);
        assert_eq!(t.jobs.len(), 2);
        assert_eq!(t.jobs[1].proc.pid, 8);
        assert_eq!(t.jobs[1].main.label, Label::Done { complete: false });
        // Last seen at 2000 of 5000 at 1000 B/s, gone within 1 s: 60% at most.
        assert_eq!(t.jobs[1].main.label_text(), "ended at 40%");
    }

    #[test]
    fn a_copy_that_finished_between_samples_is_done() {
        // 1 MB/s through 2.5 MB: last seen at 2 MB (80%), gone 1 s later;
        // 2 MB + 1 MB/s × 1 s reaches the size.
        let mut t = TransferTracker::default();
        for i in 0..3u64 {
            t.update(&snap(5, 0, 0, vec![fd(3, 0, i * 1_000_000, 2_500_000, 7)]), i * S);
        }
        let gone = FdSnapshot {
            exited: vec![ProcKey { pid: 5, start_time: 9 }],
            ..Default::default()
        };
        t.update(&gone, 3 * S);
        assert_eq!(t.jobs[0].main.label, Label::Done { complete: true });
        assert_eq!(t.jobs[0].main.label_text(), "done");
        // Shown as 100 %, marked as an estimate; the last seen 80 % is kept.
        assert_eq!(t.jobs[0].main.shown_percent(), (Some(100.0), true));
        assert_eq!(t.jobs[0].main.percent, Some(80.0));
        // The same killed at 40% (last seen at 1 MB of 2.5 MB): ended at 40%.
        let mut t = TransferTracker::default();
        for i in 0..2u64 {
            t.update(&snap(5, 0, 0, vec![fd(3, 0, i * 1_000_000, 2_500_000, 7)]), i * S);
        }
        t.update(&gone, 2 * S);
        assert_eq!(t.jobs[0].main.label_text(), "ended at 40%");
    }

    #[test]
    fn files_under_the_size_floor_are_not_transfers() {
        let mut t = TransferTracker::with_min_size(1 << 20);
        for i in 0..3u64 {
            let mut s = snap(5, 0, 0, vec![fd(3, 0, i * 200, 681, 7)]);
            s.procs
                .append(&mut snap(6, 0, 0, vec![fd(3, 0, i * 1_000_000, 8_000_000, 8)]).procs);
            t.update(&s, i * S);
        }
        assert_eq!(t.jobs.iter().map(|j| j.proc.pid).collect::<Vec<_>>(), [6]);
    }
}
