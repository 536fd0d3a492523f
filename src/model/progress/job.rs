//! What the tracker shows: one [`Transfer`] per open file with its
//! [`Label`], grouped into one [`Job`] per process, and the order jobs are
//! listed in.

use std::sync::Arc;

use serde::Serialize;

use crate::collect::fdinfo::{Access, FdTarget};
use crate::collect::process::ProcKey;

/// Identity of one tracked open file: the same fd number pointing at another
/// file (other inode or mount) is a new entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct FdKey {
    pub pid: i32,
    pub start_time: u64,
    pub fd: i32,
    pub mnt_id: Option<u64>,
    pub ino: u64,
}

impl FdKey {
    pub fn proc_key(&self) -> ProcKey {
        ProcKey {
            pid: self.pid,
            start_time: self.start_time,
        }
    }
}

/// The label of a file whose size iolens does not look up.
pub const REMOTE: &str = "size unknown: network or FUSE filesystem";

/// What can honestly be said about an entry.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Label {
    /// Position against a known size (percent when the size is known).
    Progress,
    /// Written file that grows with `pos`: bytes and rate, no percent.
    Growing,
    /// `pos` still while the process does I/O (pread/pwrite/mmap).
    Positional,
    /// `pos` beyond the size: truncated under the reader.
    Truncated,
    /// On a FUSE, network or automount filesystem, whose files are never
    /// stat'ed (that can hang): position and rate, no size.
    Remote,
    /// No movement for [`STALL_SAMPLES`](super::STALL_SAMPLES) samples or more: `seconds` since
    /// the position last moved.
    Stalled { seconds: u64 },
    /// Closed, or the process ended; `complete` when it had reached the end.
    Done { complete: bool },
}

impl Transfer {
    /// The percent to show, and whether it is an estimate: a transfer
    /// found done whose last seen position was short of the end, but which
    /// its rate took to the end before it was seen gone, shows 100 as an
    /// estimate (its last seen percent is still in `percent`).
    pub fn shown_percent(&self) -> (Option<f64>, bool) {
        match (self.label, self.percent) {
            (Label::Done { complete: true }, Some(p)) if p < 100.0 => (Some(100.0), true),
            (_, p) => (p, false),
        }
    }

    /// The label as text, with the percent where a transfer ended short:
    /// "ended at 50%".
    pub fn label_text(&self) -> String {
        match (self.label, self.percent) {
            (Label::Done { complete: false }, Some(p)) => format!("ended at {p:.0}%"),
            (l, _) => l.text(),
        }
    }
}

impl Label {
    pub fn text(&self) -> String {
        match self {
            Label::Progress => String::new(),
            Label::Growing => "writing (size grows)".into(),
            Label::Positional => "positional I/O: progress unknowable".into(),
            Label::Truncated => "pos beyond size: truncated".into(),
            Label::Remote => REMOTE.into(),
            Label::Stalled { seconds } => format!("stalled {seconds} s"),
            Label::Done { complete: true } => "done".into(),
            Label::Done { complete: false } => "ended".into(),
        }
    }
}

/// One open file as shown.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Transfer {
    pub key: FdKey,
    pub target: FdTarget,
    pub access: Access,
    /// Link text of the fd (unescaped: escape before display).
    #[serde(serialize_with = "ser_lossy")]
    pub path: Arc<[u8]>,
    pub pos: u64,
    pub size: Option<u64>,
    pub percent: Option<f64>,
    /// Bytes/s: Δpos over the window; for positional I/O the process's rate.
    pub rate_bps: Option<f64>,
    pub eta_s: Option<f64>,
    pub label: Label,
}

fn ser_lossy<S: serde::Serializer>(b: &Arc<[u8]>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&String::from_utf8_lossy(b))
}

/// One process's transfer: its main file, the others, and process totals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Job {
    pub proc: ProcKey,
    /// The kernel's comm (unescaped).
    pub comm: String,
    /// The file whose progress is the job's (the read side when there is one).
    pub main: Transfer,
    /// Other open files of the process (e.g. the write side).
    pub others: Vec<Transfer>,
    /// Files this process was seen reading and then closed: a lower
    /// bound, never called files done (a file opened and closed entirely
    /// between two samples is not seen: the process read rate counts it,
    /// this does not). A job's exact count is its `files_done`.
    pub files_seen_closed: u32,
    /// Process read/write rates (rchar/wchar over the window).
    pub read_bps: Option<f64>,
    pub write_bps: Option<f64>,
    /// Monotonic ns when the job ended, for done jobs.
    pub ended_ns: Option<u64>,
}

impl Job {
    pub fn is_done(&self) -> bool {
        self.ended_ns.is_some()
    }
}

/// A job as the tracker fills it in for `label` (for snapshot tests of the
/// progress pane and the dashboard).
#[cfg(any(test, feature = "test-support"))]
pub fn example_job(pid: i32, comm: &str, path: &[u8], pos: u64, size: u64, rate: f64, label: Label) -> Job {
    // As the model fills them in for each label.
    let has_pct = matches!(label, Label::Progress | Label::Stalled { .. } | Label::Done { .. });
    let percent = has_pct.then(|| pos as f64 / size as f64 * 100.0);
    let eta = (rate > 0.0 && label == Label::Progress).then(|| size.saturating_sub(pos) as f64 / rate);
    let done = matches!(label, Label::Done { .. });
    Job {
        proc: ProcKey { pid, start_time: 1 },
        comm: comm.into(),
        main: Transfer {
            key: FdKey {
                pid,
                start_time: 1,
                fd: 3,
                mnt_id: Some(1),
                ino: 2,
            },
            target: FdTarget::File,
            access: Access::Read,
            path: Arc::from(path),
            pos,
            size: Some(size),
            percent,
            rate_bps: (!done).then_some(rate),
            eta_s: eta,
            label,
        },
        others: vec![],
        files_seen_closed: 0,
        read_bps: Some(rate),
        write_bps: None,
        ended_ns: done.then_some(5),
    }
}

/// By ETA (soonest first), then unknown ETA, then done; ties by pid and fd.
pub fn sort_jobs(jobs: &mut [Job]) {
    jobs.sort_by(|a, b| {
        let k = |j: &Job| (j.is_done(), j.main.eta_s.is_none(), j.main.eta_s.unwrap_or(0.0));
        let (ka, kb) = (k(a), k(b));
        ka.0.cmp(&kb.0)
            .then(ka.1.cmp(&kb.1))
            .then(ka.2.total_cmp(&kb.2))
            .then(a.main.key.cmp(&b.main.key))
    });
}
