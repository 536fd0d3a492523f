//! A job's position, rate, ETA and phase across samples. Pure: the inputs
//! (the job's source bytes read so far, its total as walked) and the time
//! come from the caller.
//!
//! - **position** = the bytes of its sources read so far: the read counters
//!   (`rchar`) of the job's processes that read sources — its root, not the
//!   compressor or `pv` reading its pipe — and for `cp`/`mv` the larger of
//!   its read and write counters plus what the destination it is writing
//!   holds beyond its fd's position. Within one filesystem they copy with
//!   `copy_file_range`, whose counters and file positions move once the
//!   call returns (a whole file; measured on 6.18: `rchar`, `wchar` and
//!   both fds' `pos` stay put through a 64 MiB copy while the destination's
//!   size grows along): see [`copy_position`];
//! - **percent** = position / total, only once the walk has finished;
//! - **rate** over the last [`RATE_SPAN_NS`] (30 s, or since the job
//!   started: its root's read counters were 0 then), **ETA** =
//!   (total − position) / rate: a whole job's end is
//!   asked for, and its speed read over a few samples swings by a fifth
//!   from one window to the next (measured on a job held at 50 MB/s by
//!   `pv -L`: the per-file view's window of 5 samples of 0.5 s);
//! - **files done** = the source files its processes read, counted one by
//!   one from the jobs' read trace where every read of theirs was traced
//!   ([`super::files`], as root); otherwise files total × position /
//!   total, an estimate (the files a tool finished are not observable
//!   between samples), with the reason the count is not exact;
//! - **phase**: counting (the walk runs), copying, finishing (all source
//!   bytes read, the job still running: compressing, flushing), done or
//!   ended when its root process is gone (done when its position had
//!   reached the total, or its rate took it there before it was seen gone).

use std::collections::{HashMap, VecDeque};

use serde::Serialize;

use super::Tool;
use crate::collect::fdinfo::{FdProc, FdTarget};
pub use crate::collect::jobproc::{JobInput, Total};
use crate::model::progress::DONE_KEEP_NS;

/// The span a job's rate is read over (ns).
pub const RATE_SPAN_NS: u64 = 30_000_000_000;
/// Positions kept for the rate at most (30 s at 0.1 s intervals).
const RATE_POINTS: usize = 301;

/// What is shown of a job.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobView {
    pub pid: i32,
    /// The root's start time (clock ticks after boot): with `pid`, its key.
    pub start_time: u64,
    pub tool: Tool,
    pub command: String,
    pub pids: Vec<i32>,
    /// counting, copying, finishing, done, ended.
    pub phase: &'static str,
    pub bytes_done: Option<u64>,
    pub total: Total,
    pub percent: Option<f64>,
    /// Why there is no percent.
    pub percent_na: Option<String>,
    pub rate_bps: Option<f64>,
    pub eta_s: Option<f64>,
    /// Source files read, counted one by one (exact; see
    /// [`super::files`]); `None` where they could not all be traced.
    pub files_done: Option<u64>,
    /// Estimated from the bytes (see the module notes).
    pub files_done_estimate: Option<u64>,
    /// Why the files done are only the estimate (where there is one).
    pub files_note: Option<String>,
    pub files_total: Option<u64>,
    pub notes: Vec<String>,
    pub current_file: Option<String>,
    pub current_pos: Option<u64>,
    pub current_size: Option<u64>,
    /// Monotonic ns when it was seen gone.
    pub ended_ns: Option<u64>,
    /// How its root process ended ("exit 0", "exit 2", "signal 9"), from
    /// its exit record; `None` while it runs or where that is not known
    /// (no exit records: not root, or `iolens progress`).
    pub exit: Option<String>,
}

#[derive(Debug, Clone, Default)]
struct State {
    window: VecDeque<(u64, u64)>,
    last: Option<JobView>,
    seen_ns: u64,
}

/// Jobs across samples.
#[derive(Debug, Clone, Default)]
pub struct JobTracker {
    jobs: HashMap<(i32, u64), State>,
    /// Current views: running jobs by ETA, then ended ones.
    pub views: Vec<JobView>,
    /// Exit statuses of jobs' roots that ended lately (pid -> wait
    /// status, when it was noted), for jobs found gone.
    exits: HashMap<i32, (u32, u64)>,
}

/// What the tracker takes of the rest of the sample.
pub struct Seen<'a> {
    /// The transfers (the jobs' current files).
    pub files: &'a [crate::model::progress::Job],
    /// The open files read in this sample (the destinations being written).
    pub fds: &'a [FdProc],
}

/// The position of a `cp` or `mv` whose process `pid` is in the sample's
/// open files: the larger of its read and write counters as read with its
/// fds, plus what the regular files it has open for writing hold beyond
/// their fds' positions (a `copy_file_range` or `sendfile` call moves the
/// positions and the counters only when it returns; a `write` moves both at
/// once, leaving nothing over). Files of unknown size (on a FUSE or network
/// filesystem) add nothing. `None` when its fds or counters were not read.
pub fn copy_position(fds: &[FdProc], pid: i32) -> Option<u64> {
    let p = fds.iter().find(|p| p.key.pid == pid)?;
    let io = p.io?;
    let in_flight: u64 = p
        .fds
        .iter()
        .filter(|f| f.target == FdTarget::File && f.access().writes())
        .filter_map(|f| Some(f.size?.saturating_sub(f.pos)))
        .sum();
    Some(io.rchar.max(io.wchar) + in_flight)
}

/// The file a process is reading as the transfers show it (path, position,
/// size): a job's current file.
pub fn current_file(files: &[crate::model::progress::Job], pid: i32) -> Option<(String, u64, Option<u64>)> {
    let j = files.iter().find(|j| j.proc.pid == pid && !j.is_done())?;
    let m = &j.main;
    Some((String::from_utf8_lossy(&m.path).into_owned(), m.pos, m.size))
}

/// A wait status as text: "exit 0", "signal 9".
pub fn exit_text(status: u32) -> String {
    match status & 0x7f {
        0 => format!("exit {}", (status >> 8) & 0xff),
        sig => format!("signal {sig}"),
    }
}

fn rate(w: &VecDeque<(u64, u64)>) -> Option<f64> {
    let (&(t0, p0), &(t1, p1)) = (w.front()?, w.back()?);
    (t1 > t0).then(|| p1.saturating_sub(p0) as f64 / ((t1 - t0) as f64 / 1e9))
}

impl JobTracker {
    /// A process ended with wait status `status` (its exit record): kept
    /// when it is a tracked job's root, the only status asked for. (Every
    /// exit was kept, up to 4,096 of the last minute, pruned at each exit
    /// once full: under a fork storm a tenth of iolens's CPU, and a job's
    /// own exit then found no room.)
    pub fn note_exit(&mut self, pid: i32, status: u32, now_ns: u64) {
        if self.jobs.keys().any(|k| k.0 == pid) {
            self.exits.insert(pid, (status, now_ns));
        }
    }

    pub fn update(&mut self, inputs: Vec<JobInput>, seen: &Seen, now_ns: u64) {
        let mut views = Vec::new();
        for mut inp in inputs {
            if inp.gone {
                // The reads its processes made before it ended: the count
                // stays exact where it was.
                if let Some(v) = self.jobs.get_mut(&inp.key).and_then(|st| st.last.as_mut())
                    && v.files_done.is_some()
                    && let Some(d) = inp.files_done
                {
                    v.files_done = Some(d);
                }
                continue;
            }
            if inp.current.is_none() {
                inp.current = current_file(seen.files, inp.key.0);
            }
            // Both are what was done at some moment of the sample (the
            // counters read with the fds may be older than the job's own:
            // a call that returned between the two reads is in the later
            // counters, not in the fds): the larger is the nearer.
            if matches!(inp.tool, Tool::Cp | Tool::Mv)
                && let Some(p) = copy_position(seen.fds, inp.key.0)
            {
                inp.position = Some(inp.position.map_or(p, |q| q.max(p)));
            }
            let st = self.jobs.entry(inp.key).or_default();
            if let Some(p) = inp.position {
                if st.window.back().is_some_and(|&(_, last)| p < last) {
                    st.window.clear();
                } else if st.window.is_empty()
                    && let Some(age) = inp.age_ns.filter(|&a| a > 0 && a < RATE_SPAN_NS)
                {
                    // Its start: no byte read yet.
                    st.window.push_back((now_ns.saturating_sub(age), 0));
                }
                st.window.push_back((now_ns, p));
                while st.window.len() > 2
                    && (st.window.len() > RATE_POINTS
                        || st
                            .window
                            .get(1)
                            .is_some_and(|&(t, _)| now_ns.saturating_sub(t) >= RATE_SPAN_NS))
                {
                    st.window.pop_front();
                }
            }
            st.seen_ns = now_ns;
            let v = view(&inp, rate(&st.window));
            st.last = Some(v.clone());
            views.push(v);
        }
        // Jobs not seen now: their root is gone.
        let exits = &self.exits;
        self.jobs.retain(|_, st| {
            if st.seen_ns == now_ns {
                return true;
            }
            let Some(v) = st.last.as_mut() else {
                return false;
            };
            if v.ended_ns.is_none() {
                end(v, st.seen_ns, now_ns, exits.get(&v.pid).map(|e| e.0));
            }
            let keep = v.ended_ns.is_some_and(|e| now_ns.saturating_sub(e) < DONE_KEEP_NS);
            if keep {
                views.push(v.clone());
            }
            keep
        });
        views.sort_by(|a, b| {
            let k = |v: &JobView| (v.ended_ns.is_some(), v.eta_s.is_none(), v.eta_s.unwrap_or(0.0), v.pid);
            let (ka, kb) = (k(a), k(b));
            ka.0.cmp(&kb.0)
                .then(ka.1.cmp(&kb.1))
                .then(ka.2.total_cmp(&kb.2))
                .then(ka.3.cmp(&kb.3))
        });
        self.views = views;
        self.exits.retain(|_, (_, t)| now_ns.saturating_sub(*t) < DONE_KEEP_NS);
    }
}

/// A job found gone at `now_ns`, last seen at `seen_ns`; `status`: its
/// root's wait status where known. Exit 0 is done (the tool finished what
/// it meant to); another status failed; unknown: done when its position
/// reached the total (or its rate took it there before it was seen gone).
fn end(v: &mut JobView, seen_ns: u64, now_ns: u64, status: Option<u32>) {
    v.ended_ns = Some(now_ns);
    v.eta_s = None;
    v.exit = status.map(exit_text);
    let reached = match (&v.total, v.bytes_done, v.rate_bps) {
        (Total::Known { bytes, .. }, Some(d), r) => {
            let extra = r.unwrap_or(0.0) * now_ns.saturating_sub(seen_ns) as f64 / 1e9;
            d as f64 + extra >= *bytes as f64 * 0.999
        }
        _ => false,
    };
    let reached = match status {
        Some(0) => matches!(v.total, Total::Known { .. }),
        Some(_) => false,
        None => reached,
    };
    v.phase = match status {
        Some(0) => "done",
        Some(_) => "failed",
        None if reached => "done",
        None => "ended",
    };
    if reached {
        v.percent = Some(100.0);
        if let Total::Known { files, .. } = v.total {
            v.files_done_estimate = Some(files);
        }
    }
    v.rate_bps = None;
}

fn view(inp: &JobInput, rate: Option<f64>) -> JobView {
    let (percent, percent_na, files_total) = match (&inp.total, inp.position) {
        (Total::Known { bytes, files }, Some(p)) if *bytes > 0 => {
            (Some((p as f64 / *bytes as f64 * 100.0).min(100.0)), None, Some(*files))
        }
        (Total::Known { files, .. }, Some(_)) => (None, Some("the sources hold no data".to_string()), Some(*files)),
        (_, None) => (None, Some("the job's read counters are not readable".into()), None),
        (Total::Counting { .. }, _) => (None, Some("counting the sources".into()), None),
        (Total::Unknown { why }, _) => (None, Some(why.clone()), None),
    };
    let total_bytes = match inp.total {
        Total::Known { bytes, .. } => Some(bytes),
        _ => None,
    };
    let eta_s = match (total_bytes, inp.position, rate) {
        (Some(t), Some(p), _) if p >= t => Some(0.0),
        (Some(t), Some(p), Some(r)) if r > 0.0 => Some((t - p) as f64 / r),
        _ => None,
    };
    let phase = match (&inp.total, total_bytes, inp.position) {
        (Total::Counting { .. }, _, _) => "counting",
        (_, Some(t), Some(p)) if p >= t => "finishing",
        _ => "copying",
    };
    let files_done_estimate = match (files_total, total_bytes, inp.position) {
        (Some(f), Some(t), Some(p)) if t > 0 => Some(((f as f64) * (p.min(t) as f64 / t as f64)).round() as u64),
        _ => None,
    };
    let files_done = inp.files_done.filter(|_| files_total.is_some());
    let files_note = match (files_done, files_done_estimate) {
        (None, Some(_)) => inp.files_why.clone(),
        _ => None,
    };
    JobView {
        pid: inp.key.0,
        start_time: inp.key.1,
        tool: inp.tool,
        command: inp.command.clone(),
        pids: inp.pids.clone(),
        phase,
        bytes_done: inp.position,
        total: inp.total.clone(),
        percent,
        percent_na,
        rate_bps: rate,
        eta_s,
        files_done,
        files_done_estimate,
        files_note,
        files_total,
        notes: inp.notes.clone(),
        current_file: inp.current.as_ref().map(|c| c.0.clone()),
        current_pos: inp.current.as_ref().map(|c| c.1),
        current_size: inp.current.as_ref().and_then(|c| c.2),
        ended_ns: None,
        exit: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(pos: u64, total: Total) -> JobInput {
        JobInput {
            key: (7, 1),
            tool: Tool::Tar,
            command: "tar cf - d".into(),
            pids: vec![7, 8],
            position: Some(pos),
            total,
            notes: vec![],
            current: None,
            files_done: None,
            files_why: None,
            age_ns: None,
            gone: false,
        }
    }

    const S: u64 = 1_000_000_000;
    const NONE: Seen = Seen { files: &[], fds: &[] };

    #[test]
    fn percent_rate_eta_and_end() {
        let mut t = JobTracker::default();
        let known = Total::Known {
            files: 100,
            bytes: 1000,
        };
        t.update(vec![input(0, Total::Counting { files: 3, bytes: 30 })], &NONE, 0);
        assert_eq!(t.views[0].phase, "counting");
        assert_eq!(t.views[0].percent, None);
        assert_eq!(t.views[0].percent_na.as_deref(), Some("counting the sources"));
        t.update(vec![input(100, known.clone())], &NONE, S);
        t.update(vec![input(250, known.clone())], &NONE, 2 * S);
        let v = &t.views[0];
        assert_eq!(v.percent, Some(25.0));
        assert_eq!(v.rate_bps, Some(125.0));
        assert_eq!(v.eta_s, Some(6.0));
        assert_eq!(v.files_done_estimate, Some(25));
        assert_eq!(v.phase, "copying");
        // Gone 1 s later: its rate (125/s) did not take it to 1000.
        t.update(vec![], &NONE, 3 * S);
        assert_eq!(t.views[0].phase, "ended");
        assert_eq!(t.views[0].percent, Some(25.0));
        // Kept a while, then forgotten.
        t.update(vec![], &NONE, 3 * S + DONE_KEEP_NS);
        assert!(t.views.is_empty());
    }

    /// The rate is read over the last 30 s: 100 B/s for 20 s, then 50.
    #[test]
    fn the_rate_spans_30_s() {
        let mut t = JobTracker::default();
        let known = Total::Known {
            files: 1,
            bytes: 100_000,
        };
        let pos = |s: u64| if s <= 20 { 100 * s } else { 2000 + 50 * (s - 20) };
        for s in 0..=40 {
            t.update(vec![input(pos(s), known.clone())], &NONE, s * S);
        }
        let v = &t.views[0];
        // (3000 - 1000) B over 10..40 s
        assert_eq!(v.rate_bps, Some(2000.0 / 30.0));
        assert_eq!(v.eta_s, Some(97_000.0 / (2000.0 / 30.0)));
    }

    /// A job first seen 2 s after it started, 200 B read: 100 B/s from
    /// its start (position 0), not n/a; one started over 30 s ago waits
    /// for a second sample.
    #[test]
    fn the_rate_counts_from_the_jobs_start() {
        let known = Total::Known { files: 1, bytes: 1000 };
        let at = |age: u64| JobInput {
            age_ns: Some(age),
            ..input(200, known.clone())
        };
        let mut t = JobTracker::default();
        t.update(vec![at(2 * S)], &NONE, 10 * S);
        assert_eq!((t.views[0].rate_bps, t.views[0].eta_s), (Some(100.0), Some(8.0)));
        let mut t = JobTracker::default();
        t.update(vec![at(40 * S)], &NONE, 50 * S);
        assert_eq!(t.views[0].rate_bps, None);
    }

    #[test]
    fn finishing_then_done() {
        let mut t = JobTracker::default();
        let known = Total::Known { files: 2, bytes: 1000 };
        t.update(vec![input(900, known.clone())], &NONE, 0);
        t.update(vec![input(1000, known.clone())], &NONE, S);
        assert_eq!(t.views[0].phase, "finishing");
        assert_eq!(t.views[0].eta_s, Some(0.0));
        t.update(vec![], &NONE, 2 * S);
        assert_eq!((t.views[0].phase, t.views[0].percent), ("done", Some(100.0)));
    }

    #[test]
    fn the_exit_status_says_done_or_failed() {
        let known = Total::Known { files: 4, bytes: 1000 };
        // Last seen at 30 % and slow: without its status it ended short;
        // exit 0 says it finished (a tar that wrote a complete archive).
        let run = |status: Option<u32>| {
            let mut t = JobTracker::default();
            t.update(vec![input(200, known.clone())], &NONE, 0);
            t.update(vec![input(300, known.clone())], &NONE, S);
            if let Some(s) = status {
                t.note_exit(7, s, 2 * S);
                t.note_exit(99, 0, 2 * S);
            }
            t.update(vec![], &NONE, 2 * S);
            let v = t.views[0].clone();
            (v.phase, v.percent, v.files_done_estimate, v.exit)
        };
        assert_eq!(run(None), ("ended", Some(30.0), Some(1), None));
        assert_eq!(run(Some(0)), ("done", Some(100.0), Some(4), Some("exit 0".into())));
        assert_eq!(
            run(Some(2 << 8)),
            ("failed", Some(30.0), Some(1), Some("exit 2".into()))
        );
        assert_eq!(run(Some(9)), ("failed", Some(30.0), Some(1), Some("signal 9".into())));
    }

    /// A fork storm's exits around it: the job's own status still counts,
    /// and no other exit is kept.
    #[test]
    fn a_job_exit_among_many_others() {
        let known = Total::Known { files: 4, bytes: 1000 };
        let mut t = JobTracker::default();
        t.update(vec![input(200, known.clone())], &NONE, 0);
        t.update(vec![input(300, known)], &NONE, S);
        for pid in 10_000..15_000 {
            t.note_exit(pid, 0, S + 1);
        }
        t.note_exit(7, 0, 2 * S);
        assert_eq!(t.exits.len(), 1);
        t.update(vec![], &NONE, 2 * S);
        assert_eq!((t.views[0].phase, t.views[0].exit.as_deref()), ("done", Some("exit 0")));
    }

    /// cp inside a copy_file_range call: counters at the files before it
    /// (300, as read with its fds), its destination fd at 0 with 250 bytes
    /// already there; a file it reads, one of unknown size and one of
    /// another process add nothing.
    #[test]
    fn cp_counts_its_destination_in_flight() {
        use crate::collect::fdinfo::RawFd;
        use crate::collect::process::ProcKey;
        let fd = |fd, flags, pos, size| RawFd {
            fd,
            target: FdTarget::File,
            pos,
            flags,
            mnt_id: Some(1),
            ino: fd as u64,
            dev: 1,
            size,
            remote: false,
            path: None,
        };
        let proc_ = |pid, fds| FdProc {
            key: ProcKey { pid, start_time: 1 },
            comm: "cp".into(),
            io: Some(crate::collect::process::ProcIo {
                rchar: 300,
                wchar: 290,
                ..Default::default()
            }),
            reason: crate::collect::fdinfo::ScanReason::Active,
            fds,
            unread: 0,
            devs: vec![],
        };
        let wr = libc::O_WRONLY as u32;
        let fds = vec![
            proc_(
                7,
                vec![fd(3, 0, 0, Some(1000)), fd(4, wr, 0, Some(250)), fd(5, wr, 9, None)],
            ),
            proc_(9, vec![fd(4, wr, 0, Some(5000))]),
        ];
        assert_eq!(copy_position(&fds, 7), Some(550));
        assert_eq!(copy_position(&fds, 8), None);
        let known = Total::Known { files: 2, bytes: 1000 };
        let mut t = JobTracker::default();
        let cp = JobInput {
            tool: Tool::Cp,
            ..input(100, known.clone())
        };
        let seen = Seen { files: &[], fds: &fds };
        t.update(vec![cp.clone()], &seen, 0);
        assert_eq!(t.views[0].bytes_done, Some(550));
        // The job's own counters, read after a call returned: they win.
        t.update(
            vec![JobInput {
                tool: Tool::Cp,
                ..input(700, known.clone())
            }],
            &seen,
            S,
        );
        assert_eq!(t.views[0].bytes_done, Some(700));
        // tar reads: its written archive is not a source.
        t.update(vec![JobInput { tool: Tool::Tar, ..cp }], &seen, 2 * S);
        assert_eq!(t.views[0].bytes_done, Some(100));
    }

    /// Exact where the input counted the files, the estimate with its
    /// reason otherwise; a job found gone takes its last reads' count.
    #[test]
    fn files_done_exact_or_estimated_with_reason() {
        let known = Total::Known { files: 10, bytes: 1000 };
        let why = "the job started before iolens traced its reads";
        let exact = |done, gone| JobInput {
            files_done: Some(done),
            gone,
            ..input(500, known.clone())
        };
        let mut t = JobTracker::default();
        t.update(vec![exact(3, false)], &NONE, 0);
        let v = &t.views[0];
        assert_eq!(
            (v.files_done, v.files_done_estimate, v.files_note.as_deref()),
            (Some(3), Some(5), None)
        );
        // Its reads of the last interval, drained as it was found gone.
        t.note_exit(7, 0, S);
        t.update(vec![exact(10, true)], &NONE, S);
        assert_eq!((t.views[0].phase, t.views[0].files_done), ("done", Some(10)));

        let mut t = JobTracker::default();
        let est = JobInput {
            files_why: Some(why.into()),
            ..input(500, known.clone())
        };
        t.update(vec![est], &NONE, 0);
        let v = &t.views[0];
        assert_eq!(
            (v.files_done, v.files_done_estimate, v.files_note.as_deref()),
            (None, Some(5), Some(why))
        );
        // A count for a job estimated so far is not taken as exact.
        t.update(vec![exact(9, true)], &NONE, S);
        assert_eq!((t.views[0].phase, t.views[0].files_done), ("ended", None));

        // While counting: no files done of either kind, no note.
        let mut t = JobTracker::default();
        let counting = JobInput {
            files_done: Some(2),
            files_why: Some(why.into()),
            ..input(5, Total::Counting { files: 3, bytes: 30 })
        };
        t.update(vec![counting], &NONE, 0);
        let v = &t.views[0];
        assert_eq!(
            (v.files_done, v.files_done_estimate, v.files_note.as_deref()),
            (None, None, None)
        );
    }

    #[test]
    fn unknown_total_has_no_percent() {
        let mut t = JobTracker::default();
        let u = Total::Unknown {
            why: "the file list is read from standard input".into(),
        };
        t.update(vec![input(5, u.clone())], &NONE, 0);
        t.update(vec![input(15, u)], &NONE, S);
        let v = &t.views[0];
        assert_eq!((v.percent, v.eta_s), (None, None));
        assert_eq!(v.rate_bps, Some(10.0));
        assert_eq!(
            v.percent_na.as_deref(),
            Some("the file list is read from standard input")
        );
    }
}
