//! The per-process files the reader keeps open between samples
//! (`stat`, `schedstat`, `io`), re-read with `pread`, within a budget of
//! descriptors; and what they said.

use std::io;
use std::os::fd::OwnedFd;

use super::super::{IoUnavailable, ProcIo, ProcKey, SchedStat, parse_io, parse_schedstat};
use super::ProcReader;
use crate::collect::Reader;

/// `/proc/<pid>/stat`, `schedstat` and `io` kept open between samples
/// (live system only).
#[derive(Debug, Default)]
pub(super) struct PidFiles {
    /// `None` while there are too few descriptors for every process to
    /// keep two (see [`KEEP_FILES_MAX`]).
    pub(super) stat: Option<OwnedFd>,
    /// `None` on a kernel without scheduler statistics.
    pub(super) sched: Option<OwnedFd>,
    /// Kept while every listed process can keep three files.
    pub(super) io: Option<OwnedFd>,
}

/// At most this many processes keep their stat and schedstat files open
/// (and fewer when RLIMIT_NOFILE's hard limit is lower: see `keep_fds`);
/// their io file too while every listed process can keep three. Each kept
/// file costs a descriptor and about 4 KiB of kernel memory (its seq_file
/// buffer, kept while the file is open), so 10,000 processes hold 20,000
/// to 30,000 descriptors and ~80-120 MiB of kernel memory. With fewer
/// descriptors than two per process, every process keeps its schedstat
/// (what tells an idle one, whose stat and io are then not read) and the
/// descriptors left keep stat files; processes beyond the budget have
/// their files opened, read and closed every sample, which costs about
/// twice the CPU per process.
pub const KEEP_FILES_MAX: usize = 32_768;

/// How many descriptors kept files may use: raises RLIMIT_NOFILE to what
/// [`KEEP_FILES_MAX`] processes with three files need, both limits when
/// allowed (root has CAP_SYS_RESOURCE: only iolens's own limit changes),
/// else the soft one up to the hard one (as Go programs do by default), and
/// leaves 512 descriptors for everything else.
pub(super) fn keep_fds() -> usize {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let lim = getrlimit(Resource::Nofile);
    let (cur, max) = (lim.current.unwrap_or(u64::MAX), lim.maximum);
    let need = 3 * KEEP_FILES_MAX as u64 + 1024;
    let set = |current: u64, maximum: Option<u64>| {
        setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(current),
                maximum,
            },
        )
        .is_ok()
    };
    let cur = if cur >= need {
        cur
    } else if max.is_some_and(|m| m < need) && set(need, Some(need)) {
        need
    } else {
        let want = max.unwrap_or(u64::MAX).min(need);
        if cur < want && set(want, max) { want } else { cur }
    };
    usize::try_from(cur).unwrap_or(usize::MAX).saturating_sub(512)
}

/// Whether another stat file may be kept, with `kept` kept of `budget`
/// (`None`: every process can keep two files).
pub(super) fn stat_room(budget: Option<usize>, kept: usize) -> bool {
    budget.is_none_or(|b| kept < b)
}

impl ProcReader {
    /// The counters of a process whose files are kept, through its
    /// descriptors: `None` when it has none, or has ended (its files are
    /// then dropped, and its pid is read afresh). Its io is not read when
    /// it has not run since its last stat read (see [`ProcReader`]).
    pub(super) fn kept_counters(&mut self, r: &mut Reader, pid: i32) -> Option<Kept> {
        let generation = self.generation;
        let known = self.known.get_mut(pid)?;
        let key = ProcKey {
            pid,
            start_time: known.start?,
        };
        let f = known.files.as_ref()?;
        let sched = match &f.sched {
            Some(fd) => match r.reread(fd) {
                Ok(b) if !b.is_empty() => parse_schedstat(b),
                _ => {
                    known.files = None;
                    return None;
                }
            },
            None => None,
        };
        known.seen = generation;
        let last = known
            .facts
            .as_ref()
            .and_then(|s| Some((s.stat?, s.last_io, s.io_denied)));
        let still = match (last, sched) {
            (Some((st, ..)), Some(now)) if st.sched.is_some() => Some(st.sched == now.mark()),
            _ => None,
        };
        if let (Some(true), Some((st, last_io, denied))) = (still, last)
            && st.num_threads == 1
        {
            // Not run: the same counters, or still not ours to read.
            let io = if denied {
                Some(Err(IoUnavailable::PermissionDenied))
            } else {
                last_io.map(Ok)
            };
            if io.is_some() {
                return Some(Kept { key, sched, io, still });
            }
        }
        let Some(fd) = f.io.as_ref() else {
            return Some(Kept {
                key,
                sched,
                io: None,
                still,
            });
        };
        match r.reread(fd) {
            Ok(b) if !b.is_empty() => {
                if let Some(s) = known.facts.as_mut() {
                    s.io_at = generation;
                }
                Some(Kept {
                    key,
                    sched,
                    io: Some(
                        parse_io(b).ok_or_else(|| IoUnavailable::Unreadable(format!("/proc/{pid}/io: malformed"))),
                    ),
                    still,
                })
            }
            _ => {
                known.files = None;
                None
            }
        }
    }
}

impl ProcReader {
    /// Read `/proc/<pid>/stat` into the reader's buffer, through a kept
    /// descriptor when there is one (`sched`: its schedstat, read just
    /// before); on the live system, keep newly opened ones (within the
    /// budget), reading the schedstat first. Returns the schedstat read
    /// before the stat.
    pub(super) fn read_stat(
        &mut self,
        r: &mut Reader,
        pid: i32,
        live: bool,
        sched: Option<SchedStat>,
    ) -> io::Result<Option<SchedStat>> {
        let stat_room = stat_room(self.stat_budget, self.stat_kept);
        let generation = self.generation;
        if let Some(known) = self.known.get_mut(pid)
            && let Some(f) = known.files.as_mut()
        {
            match &f.stat {
                Some(fd) => match r.reread(fd) {
                    Ok(b) if !b.is_empty() => {
                        known.seen = generation;
                        return Ok(sched);
                    }
                    // Ended (ESRCH), maybe with its pid reused: open afresh.
                    _ => {
                        known.files = None;
                        self.stat_kept = self.stat_kept.saturating_sub(1);
                    }
                },
                // Its schedstat alone is kept (and was read just before).
                None => {
                    let fd = r.open_pid_file(pid, "stat")?;
                    r.reread(&fd)?;
                    known.seen = generation;
                    if stat_room {
                        f.stat = Some(fd);
                        self.stat_kept += 1;
                    }
                    return Ok(sched);
                }
            }
        }
        // A schedstat and maybe a stat file, within the descriptors.
        let fds = *self.keep_fds.get_or_insert_with(keep_fds);
        let keep = live && self.files_kept + self.stat_kept + 2 <= fds && self.files_kept < KEEP_FILES_MAX;
        let sched_fd = if keep {
            r.open_pid_file(pid, "schedstat").ok()
        } else {
            None
        };
        let sched = match &sched_fd {
            Some(fd) => r.reread(fd).ok().and_then(parse_schedstat),
            None => None,
        };
        let fd = r.open_pid_file(pid, "stat")?;
        r.reread(&fd)?;
        if keep {
            let stat = stat_room.then_some(fd);
            self.stat_kept += usize::from(stat.is_some());
            self.files_kept += 1;
            let known = self.known.get_or_default(pid);
            known.files = Some(PidFiles {
                stat,
                sched: sched_fd,
                io: None,
            });
            known.seen = generation;
        }
        Ok(sched)
    }

    /// Read `/proc/<pid>/io` into the reader's buffer, keeping its
    /// descriptor beside the stat one when that is kept.
    pub(super) fn read_io(&mut self, r: &mut Reader, pid: i32) -> io::Result<()> {
        let kept = self.known.get_mut(pid).and_then(|k| k.files.as_mut());
        if let Some(fd) = kept.as_ref().and_then(|f| f.io.as_ref()) {
            return r.reread(fd).map(drop);
        }
        let fd = r.open_pid_file(pid, "io")?;
        r.reread(&fd)?;
        if let Some(f) = kept
            && self.keep_io
        {
            f.io = Some(fd);
        }
        Ok(())
    }
}

/// What the kept files of a process said this sample.
pub(super) struct Kept {
    pub(super) key: ProcKey,
    pub(super) sched: Option<SchedStat>,
    /// `None`: not read (its io file is not kept); else read, or the last
    /// read's counters of a process that has not run since.
    pub(super) io: Option<Result<ProcIo, IoUnavailable>>,
    /// It has not run since its stat was read (`Some(false)`: it has;
    /// `None`: not known).
    pub(super) still: Option<bool>,
}
