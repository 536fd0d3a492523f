//! Reading every process each sample, with what does not change cached
//! and the per-sample files kept open.

use std::io;
use std::num::NonZeroU64;
use std::sync::Arc;

use super::threads::{ThreadIo, read_threads_of};
use super::{
    CMDLINE_CAP, CMDLINE_CUT, IoPrio, IoUnavailable, PidMap, PidStat, PidTable, ProcIo, ProcKey, ProcSnapshot, RawProc,
    SchedStat, ioprio_get, parse_io, parse_stat,
};
use crate::collect::Reader;

mod kept;
pub use kept::KEEP_FILES_MAX;
use kept::{PidFiles, keep_fds, stat_room};

/// What is kept of a listed pid between samples, in one entry of a
/// [`PidTable`] (one lookup for an idle process, one position per pid).
#[derive(Debug, Default)]
struct Known {
    /// The start time of the process its facts belong to (the pid is the
    /// table's key), from its last stat read: a reused pid has them read
    /// again (its kept files, which read as ESRCH once their process
    /// ended, never follow it either).
    start: Option<u64>,
    /// `None` when no file of the pid is kept.
    files: Option<PidFiles>,
    facts: Option<Static>,
    /// The sample (generation) it was last read in.
    seen: u64,
}

impl Known {
    /// The facts are of process `key` (whose pid is this entry's).
    fn is(&self, key: ProcKey) -> bool {
        self.start == Some(key.start_time)
    }
}

#[derive(Debug)]
struct Static {
    /// The comm when cmdline and uid were read: an exec changes the comm
    /// (but not the pid or start time), and then they are read again.
    comm: Arc<str>,
    cmdline: Arc<str>,
    uid: Option<u32>,
    /// The user name of `uid` (looked up when the process was read in full).
    user: Option<Arc<str>>,
    /// The process's counters at the previous read: the threads are read
    /// again only when they moved.
    last_io: Option<ProcIo>,
    /// Its io file was not ours to read at the last read (another user's
    /// process, without CAP_SYS_PTRACE). That changes only with its
    /// credentials, which only what it runs changes.
    io_denied: bool,
    /// The sample (generation) its io file was last read in.
    io_at: u64,
    /// What its stat (and I/O priority) said when last read.
    stat: Option<StatRead>,
}

/// The per-sample fields of `/proc/<pid>/stat` and the I/O priority, as
/// last read: reused for an idle process (see [`ProcReader`]). Kept for
/// every process, so no wider than needed.
#[derive(Debug, Clone, Copy)]
struct StatRead {
    state: char,
    ppid: i32,
    cpu_ticks: u64,
    /// The kernel's range is -20..=19 (a process with another is not kept).
    nice: i8,
    num_threads: u32,
    blkio_ticks: Option<u64>,
    ioprio: Option<IoPrio>,
    /// [`SchedStat::mark`] of the main thread's schedstat, read just
    /// before this stat.
    sched: Option<NonZeroU64>,
    /// The sample (generation) it was read in.
    at: u64,
}

/// An idle process's stat and I/O priority are read again at least this
/// often (in samples; spread over the pids).
pub const STAT_RECHECK_SAMPLES: u64 = 5;

/// /proc is listed again at least this often (in samples), even when no
/// process was created.
pub const LIST_EVERY_SAMPLES: u64 = 30;

/// Reads processes, caching per-process facts that do not change.
///
/// On the live system each process's `stat`, `schedstat` and `io` files are
/// kept open and re-read with `pread` from offset 0 (the kernel regenerates
/// them), which saves an open and a close per file per sample: about half
/// the kernel time of a sample. A kept file of a process that has ended
/// reads as ESRCH, even when its pid has been reused, so the pid is then
/// opened afresh. Not done under a captured tree (`--root`), where files
/// can be replaced under a kept descriptor.
///
/// A kept single-threaded process whose `schedstat` did not change since
/// its last stat read has not run since then: its I/O counters cannot have
/// moved (the kernel counts I/O to the task that does it, when it does it),
/// so its `io` is not read (`schedstat` costs the kernel half as much);
/// nor is it tried again for one whose `io` was denied (another user's
/// process, without root): only what a process runs changes its
/// credentials. A process with several threads has its `io` read every
/// sample: the schedstat is its main thread's only.
///
/// /proc is listed only when a process or thread was created since the
/// last listing (the kernel's count of forks, `/proc/stat` "processes",
/// moved: set in [`ProcReader::forks`] before each read), and at least
/// every [`LIST_EVERY_SAMPLES`]; otherwise the processes are those of the
/// last listing, less the ones that have ended since.
///
/// A kept process whose I/O counters did not move since its last read, that
/// was sleeping (`S` or `I`) then, that has not run since (by its
/// schedstat, where there is one), and whose parent is still listed, is not
/// asked for its stat (two thirds of the kernel's cost per process): its
/// state, CPU ticks, nice, thread count and I/O priority are those of its
/// last read, which is at most [`STAT_RECHECK_SAMPLES`] samples old. A
/// process that reads or writes anything, runs, is in any other state, was
/// re-parented, or is watched, has them read every sample; so do all
/// processes while delay accounting is on (its block I/O delay can grow
/// without the counters moving).
#[derive(Debug, Default)]
pub struct ProcReader {
    known: PidTable<Known>,
    users: PidMap<u32, Arc<str>>,
    users_loaded: bool,
    generation: u64,
    pids: Vec<i32>,
    /// getdents64 buffer of the /proc listing.
    dents: Vec<u8>,
    /// Pids with kept files (counted at each sample's start, as `stat_kept`).
    files_kept: usize,
    /// How many descriptors kept files may use (from RLIMIT_NOFILE).
    keep_fds: Option<usize>,
    /// Every listed process can keep its io file too (this sample).
    keep_io: bool,
    /// Kept stat files (counted at each sample's start: an entry removed
    /// within a sample leaves it high, never low).
    stat_kept: usize,
    /// How many stat files may be kept this sample (`None`: every process
    /// can keep two files).
    stat_budget: Option<usize>,
    /// Read every process's stat every sample (delay accounting on).
    pub stat_every_sample: bool,
    /// Processes whose stat is read every sample (watched ones).
    pub always: Vec<i32>,
    /// The kernel's count of forks since boot, read just before
    /// [`ProcReader::read_all`] (`None`: unknown, /proc is listed).
    pub forks: Option<u64>,
    /// `forks` when /proc was last listed, and the sample it was in.
    listed: Option<(u64, u64)>,
    /// Pids of this sample that had ended (reused buffer).
    ended: Vec<i32>,
}

fn classify(e: &io::Error) -> IoUnavailable {
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ESRCH) => IoUnavailable::Exited,
        Some(libc::EACCES) | Some(libc::EPERM) => IoUnavailable::PermissionDenied,
        _ => IoUnavailable::Unreadable(e.to_string()),
    }
}

impl ProcReader {
    pub fn new() -> Self {
        Self::default()
    }

    fn user_name(&mut self, uid: u32) -> Option<Arc<str>> {
        if !self.users.contains_key(&uid) && !self.users_loaded {
            self.users_loaded = true;
            if let Ok(users) = sysinfo::Users::new_with_refreshed_list() {
                for u in users.iter() {
                    self.users.insert(**u.id(), u.name().into());
                }
            }
        }
        self.users.get(&uid).cloned()
    }

    /// Samples since the stat of a process was last read (0: this sample);
    /// `None` for a process not read.
    #[cfg(any(test, feature = "test-support"))]
    pub fn stat_age(&self, key: ProcKey) -> Option<u64> {
        let st = self.facts(key)?.stat?;
        Some(self.generation.saturating_sub(st.at))
    }

    /// Samples since the io file of a process was last read (0: this
    /// sample); `None` for a process not read.
    #[cfg(any(test, feature = "test-support"))]
    pub fn io_age(&self, key: ProcKey) -> Option<u64> {
        Some(self.generation.saturating_sub(self.facts(key)?.io_at))
    }

    /// What was last read of process `key`.
    #[cfg(any(test, feature = "test-support"))]
    fn facts(&self, key: ProcKey) -> Option<&Static> {
        self.known.get(key.pid).filter(|k| k.is(key))?.facts.as_ref()
    }

    fn facts_mut(&mut self, key: ProcKey) -> Option<&mut Static> {
        self.known.get_mut(key.pid).filter(|k| k.is(key))?.facts.as_mut()
    }

    /// Limit the descriptors that kept files may use (normally from
    /// RLIMIT_NOFILE: see `keep_fds`).
    #[cfg(any(test, feature = "test-support"))]
    pub fn set_fd_budget(&mut self, fds: usize) {
        self.keep_fds = Some(fds);
    }

    /// Kept files now: (stat, schedstat, io).
    #[cfg(any(test, feature = "test-support"))]
    pub fn kept_files(&self) -> (usize, usize, usize) {
        let count = |f: fn(&PidFiles) -> bool| {
            self.known
                .values()
                .filter_map(|k| k.files.as_ref())
                .filter(|p| f(p))
                .count()
        };
        (
            count(|p| p.stat.is_some()),
            count(|p| p.sched.is_some()),
            count(|p| p.io.is_some()),
        )
    }

    /// List the numeric entries of /proc.
    fn list_pids(&mut self, r: &Reader) -> io::Result<()> {
        self.pids.clear();
        if r.is_live() {
            // Straight from getdents64 into a reused buffer: no allocation
            // per entry (std's DirEntry allocates each name).
            use crate::collect::procdir::{list_fd_numbers, open_dir};
            let dir = open_dir(&r.path("/proc"))?;
            list_fd_numbers(&dir, &mut self.dents, &mut self.pids)?;
            self.pids.sort_unstable();
            return Ok(());
        }
        self.pids = r.list_numbers("/proc")?;
        Ok(())
    }

    /// Read every process visible under the root.
    pub fn read_all(&mut self, r: &mut Reader) -> Result<ProcSnapshot, crate::collect::ReadError> {
        self.generation += 1;
        let same = match (self.listed, self.forks) {
            (Some((at_forks, at)), Some(forks)) => {
                r.is_live() && forks == at_forks && self.generation - at < LIST_EVERY_SAMPLES
            }
            _ => false,
        };
        if !same {
            self.list_pids(r).map_err(|error| crate::collect::ReadError {
                path: r.path("/proc"),
                error,
            })?;
            self.listed = self.forks.map(|f| (f, self.generation));
            // The entries of processes gone from the listing go first, so
            // that the new ones take their room.
            let pids = &self.pids;
            self.known.retain(|pid, _| pids.binary_search(&pid).is_ok());
        }
        self.known.reserve_total(self.pids.len());
        if r.is_live() {
            let fds = *self.keep_fds.get_or_insert_with(keep_fds);
            let keep_io = self.pids.len().saturating_mul(3) <= fds;
            if self.keep_io && !keep_io {
                // Too many processes now: their io files make room.
                self.known
                    .values_mut()
                    .filter_map(|k| k.files.as_mut())
                    .for_each(|f| f.io = None);
            }
            self.keep_io = keep_io;
            // Two per process when they fit; else a schedstat each and
            // the rest for stat files, some of which make room.
            let n = self.pids.len();
            self.stat_budget = (n.saturating_mul(2) > fds).then(|| fds.saturating_sub(n));
            self.stat_kept = 0;
            self.files_kept = 0;
            for f in self.known.values_mut().filter_map(|k| k.files.as_mut()) {
                self.files_kept += 1;
                if f.stat.is_some() {
                    if stat_room(self.stat_budget, self.stat_kept) {
                        self.stat_kept += 1;
                    } else {
                        f.stat = None;
                    }
                }
            }
        }
        let mut snap = ProcSnapshot {
            procs: Vec::with_capacity(self.pids.len()),
            ..Default::default()
        };
        // By index: `read_one` looks parents up in `self.pids`.
        self.ended.clear();
        for i in 0..self.pids.len() {
            match self.read_one(r, self.pids[i]) {
                Ok(p) => snap.procs.push(p),
                Err(IoUnavailable::Exited) => {
                    snap.exited += 1;
                    self.ended.push(self.pids[i]);
                }
                Err(_) => snap.hidden += 1,
            }
        }
        if !self.ended.is_empty() {
            let ended = std::mem::take(&mut self.ended);
            self.pids.retain(|p| ended.binary_search(p).is_err());
            // Re-parented by an exit this sample, while the listing still
            // had the parent: read its stat now (what was given may come
            // from before the exit, even where its age is 0: a due idle
            // process is asked only for its priorities).
            for p in &mut snap.procs {
                if ended.binary_search(&p.ppid).is_ok()
                    && let Ok(fresh) = self.read(r, p.key.pid, true)
                {
                    *p = fresh;
                }
            }
            self.ended = ended;
        }
        let generation = self.generation;
        self.known.retain(|_, k| k.seen == generation);
        Ok(snap)
    }

    /// Read one process. `Err` when its stat could not be read.
    pub fn read_one(&mut self, r: &mut Reader, pid: i32) -> Result<RawProc, IoUnavailable> {
        self.read(r, pid, false)
    }

    /// Read one process; `full`: its stat even when idle.
    fn read(&mut self, r: &mut Reader, pid: i32, full: bool) -> Result<RawProc, IoUnavailable> {
        let live = r.is_live();
        let generation = self.generation;
        let kept = if live { self.kept_counters(r, pid) } else { None };
        if let Some(k) = &kept
            && !full
            && let Some(io) = &k.io
            && let Some(p) = self.idle(k.key, io, k.still)
        {
            return Ok(p);
        }
        let sched = match self.read_stat(r, pid, live, kept.as_ref().and_then(|k| k.sched)) {
            Ok(sched) => sched,
            Err(e) => return Err(classify(&e)),
        };
        let stat =
            parse_stat(r.last()).ok_or_else(|| IoUnavailable::Unreadable(format!("/proc/{pid}/stat: malformed")))?;
        let key = ProcKey {
            pid,
            start_time: stat.start_time,
        };
        let known = self.known.get_or_default(pid);
        if !known.is(key) {
            known.start = Some(key.start_time);
            known.facts = None;
        }
        known.seen = generation;
        // A kept io file read this sample was stamped then.
        let (io, io_read) = match kept.filter(|k| k.key == key).and_then(|k| k.io.map(|io| (io, false))) {
            Some(io) => io,
            None => (self.read_io_parsed(r, pid), true),
        };
        let (comm, cmdline, uid, user) = self.statics(r, key, &stat, generation);
        let ioprio = if live { ioprio_get(pid) } else { None };
        let threads = self.threads_if_moved(r, key, &io, stat.num_threads);
        if let Some(s) = self.facts_mut(key) {
            if io_read {
                s.io_at = generation;
            }
            s.io_denied = matches!(io, Err(IoUnavailable::PermissionDenied));
            s.stat = i8::try_from(stat.nice).ok().map(|nice| StatRead {
                state: stat.state,
                ppid: stat.ppid,
                cpu_ticks: stat.utime + stat.stime,
                nice,
                num_threads: stat.num_threads,
                blkio_ticks: stat.blkio_ticks,
                ioprio,
                sched: sched.as_ref().and_then(SchedStat::mark),
                at: generation,
            });
        }
        Ok(RawProc {
            key,
            ppid: stat.ppid,
            comm,
            cmdline,
            state: stat.state,
            nice: stat.nice,
            uid,
            user,
            ioprio,
            cpu_ticks: stat.utime + stat.stime,
            blkio_ticks: stat.blkio_ticks,
            num_threads: stat.num_threads,
            thread_blkio: None,
            io,
            threads,
        })
    }

    /// `/proc/<pid>/io`, read and parsed.
    fn read_io_parsed(&mut self, r: &mut Reader, pid: i32) -> Result<ProcIo, IoUnavailable> {
        match self.read_io(r, pid) {
            Ok(()) => parse_io(r.last()).ok_or_else(|| IoUnavailable::Unreadable(format!("/proc/{pid}/io: malformed"))),
            // No io file while the process is still there: a kernel without
            // task I/O accounting, not an exit.
            Err(e) if e.kind() == io::ErrorKind::NotFound && r.read_pid_file(pid, "stat").is_ok() => Err(
                IoUnavailable::Unreadable(format!("/proc/{pid}/io: missing (kernel without task I/O accounting)")),
            ),
            Err(e) => Err(classify(&e)),
        }
    }

    /// The comm, command line, uid and user name of a process, read when
    /// it is new or exec'd (its comm changed) and cached.
    fn statics(
        &mut self,
        r: &mut Reader,
        key: ProcKey,
        stat: &PidStat,
        generation: u64,
    ) -> (Arc<str>, Arc<str>, Option<u32>, Option<Arc<str>>) {
        let pid = key.pid;
        // Kernel threads (kthreadd and its children) have an empty cmdline.
        let kthread = pid == 2 || stat.ppid == 2;
        let known = self.known.get_or_default(pid);
        let (comm, cmdline, uid) = match known.facts.as_mut() {
            // Still valid unless the process exec'd (new comm) or was first
            // seen mid-exec (empty cmdline of a user process).
            Some(s) if *s.comm == *stat.comm && (kthread || !s.cmdline.is_empty()) => {
                (s.comm.clone(), s.cmdline.clone(), s.uid)
            }
            // A kernel thread that renamed itself (a kworker names the
            // workqueue it serves: several times a second under load)
            // never execs: its empty command line, its uid and its last
            // counters stay.
            Some(s) if stat.kthread && s.cmdline.is_empty() => {
                s.comm = stat.comm.as_str().into();
                (s.comm.clone(), s.cmdline.clone(), s.uid)
            }
            _ => {
                let dir = format!("/proc/{pid}");
                let cmdline = r
                    .read_capped(format!("{dir}/cmdline"), CMDLINE_CAP + 1)
                    .map(cmdline_text)
                    .unwrap_or_default();
                let uid = r.stat(&dir).ok().map(|st| st.st_uid);
                let s = Static {
                    comm: stat.comm.as_str().into(),
                    cmdline: cmdline.into(),
                    uid,
                    user: None,
                    last_io: None,
                    io_denied: false,
                    io_at: generation,
                    stat: None,
                };
                let out = (s.comm.clone(), s.cmdline.clone(), s.uid);
                known.facts = Some(s);
                out
            }
        };
        let user = uid.and_then(|u| self.user_name(u));
        if let Some(s) = self.facts_mut(key) {
            s.user.clone_from(&user);
        }
        (comm, cmdline, uid, user)
    }

    /// The threads' own counters when the process's counters moved since
    /// its last read (or it is new); records the counters. `num_threads`:
    /// what its stat, just read, said.
    fn threads_if_moved(
        &mut self,
        r: &mut Reader,
        key: ProcKey,
        io: &Result<ProcIo, IoUnavailable>,
        num_threads: u32,
    ) -> Option<Box<[ThreadIo]>> {
        match (io, self.facts_mut(key)) {
            (Ok(now), Some(s)) if s.last_io != Some(*now) => {
                s.last_io = Some(*now);
                read_threads_of(r, key.pid, num_threads).map(Vec::into_boxed_slice)
            }
            _ => None,
        }
    }

    /// The process from what was last read of it, when it is idle: its
    /// counters `io` are those of its last read (or were denied then and
    /// now), and its stat need not be read again (see [`ProcReader`]).
    /// `still`: whether it has run since its stat was read. One that ran
    /// is not idle; one that has not, when its stat is due again, is asked
    /// only for what another process can change without it running (its
    /// nice and I/O priority), with two system calls.
    fn idle(&mut self, key: ProcKey, io: &Result<ProcIo, IoUnavailable>, still: Option<bool>) -> Option<RawProc> {
        let generation = self.generation;
        let pid = key.pid;
        let (pids, always) = (&self.pids, &self.always);
        let known = self.known.get_mut(pid).filter(|k| k.is(key))?;
        let s = known.facts.as_mut()?;
        let mut st = s.stat?;
        let due = generation.saturating_sub(st.at) >= STAT_RECHECK_SAMPLES
            || (u64::from(pid.unsigned_abs()) + generation).is_multiple_of(STAT_RECHECK_SAMPLES);
        if self.stat_every_sample
            || still == Some(false)
            || (due && still.is_none())
            || !match io {
                Ok(io) => s.last_io == Some(*io),
                Err(IoUnavailable::PermissionDenied) => s.io_denied,
                Err(_) => false,
            }
            || !matches!(st.state, 'S' | 'I')
            || (st.ppid != 0 && pids.binary_search(&st.ppid).is_err())
            || always.contains(&pid)
        {
            return None;
        }
        if due {
            let nice = rustix::process::Pid::from_raw(pid).map(|p| rustix::process::getpriority_process(Some(p)));
            let Some(Ok(Ok(nice))) = nice.map(|n| n.map(i8::try_from)) else {
                return None;
            };
            st.nice = nice;
            st.ioprio = ioprio_get(pid);
            st.at = generation;
            s.stat = Some(st);
        }
        known.seen = generation;
        Some(RawProc {
            key,
            ppid: st.ppid,
            comm: s.comm.clone(),
            cmdline: s.cmdline.clone(),
            state: st.state,
            nice: i32::from(st.nice),
            uid: s.uid,
            user: s.user.clone(),
            ioprio: st.ioprio,
            cpu_ticks: st.cpu_ticks,
            blkio_ticks: st.blkio_ticks,
            num_threads: st.num_threads,
            thread_blkio: None,
            io: io.clone(),
            threads: None,
        })
    }
}

/// `/proc/<pid>/cmdline`: NUL-separated arguments, joined with spaces; cut
/// at [`CMDLINE_CAP`] bytes with a mark (read with one byte more, to know).
fn cmdline_text(b: &[u8]) -> String {
    let cut = b.len() > CMDLINE_CAP;
    let b = if cut {
        &b[..CMDLINE_CAP]
    } else {
        b.strip_suffix(b"\0").unwrap_or(b)
    };
    let mut s = String::from_utf8_lossy(b).replace('\0', " ");
    if cut {
        s.push_str(CMDLINE_CUT);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

    #[test]
    fn long_command_lines_are_cut_with_a_mark() {
        assert_eq!(cmdline_text(b"dd\0if=x\0"), "dd if=x");
        let long = vec![b'a'; CMDLINE_CAP + 1];
        let t = cmdline_text(&long);
        assert!(t.ends_with(CMDLINE_CUT));
        assert_eq!(t.len(), CMDLINE_CAP + CMDLINE_CUT.len());
        // Cut inside a multi-byte character: replaced, never a panic.
        let mut multi = vec![b'a'; CMDLINE_CAP - 1];
        multi.extend_from_slice("é".as_bytes());
        assert!(cmdline_text(&multi).ends_with(CMDLINE_CUT));
    }

    #[test]
    fn reads_processes_of_a_fixture_tree() {
        let mut r = Reader::new(format!("{FIX}/root-6.8"));
        let mut pr = ProcReader::new();
        let snap = pr.read_all(&mut r).unwrap();
        let pids: Vec<i32> = snap.procs.iter().map(|p| p.key.pid).collect();
        assert_eq!(pids, [1, 4242]);
        let dd = &snap.procs[1];
        assert_eq!(&*dd.cmdline, "dd if=/dev/sda of=/dev/null bs=1M");
        assert_eq!(dd.io.as_ref().unwrap().read_bytes, 1_069_547_520);
        // pid 1 has a stat but no io file: not exited, unreadable.
        assert!(
            matches!(&snap.procs[0].io, Err(IoUnavailable::Unreadable(m)) if m.contains("/proc/1/io: missing")),
            "{:?}",
            snap.procs[0].io
        );
        // pid 77 has no stat: listed then gone.
        assert_eq!(snap.exited, 1);
    }

    /// A pid reused by a process with the same comm: what was read of the
    /// old one (its command line) is not carried over.
    #[test]
    fn a_reused_pid_has_its_command_line_read_again() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("proc/4242");
        std::fs::create_dir_all(&dir).unwrap();
        let fix = format!("{FIX}/root-6.8/proc/4242");
        std::fs::copy(format!("{fix}/io"), dir.join("io")).unwrap();
        let stat = std::fs::read_to_string(format!("{fix}/stat")).unwrap();
        std::fs::write(dir.join("stat"), &stat).unwrap();
        std::fs::write(dir.join("cmdline"), b"dd\0if=/dev/sda\0").unwrap();
        let mut r = Reader::new(root.path());
        let mut pr = ProcReader::new();
        let first = pr.read_all(&mut r).unwrap();
        assert_eq!(&*first.procs[0].cmdline, "dd if=/dev/sda");
        // Same comm, another start time: another process.
        std::fs::write(dir.join("stat"), stat.replace(" 987654 ", " 999999 ")).unwrap();
        std::fs::write(dir.join("cmdline"), b"dd\0if=/dev/sdb\0").unwrap();
        let second = pr.read_all(&mut r).unwrap();
        assert_eq!(second.procs[0].key.start_time, 999_999);
        assert_eq!(&*second.procs[0].cmdline, "dd if=/dev/sdb");
        assert_eq!(pr.stat_age(first.procs[0].key), None, "the old process is gone");
        assert_eq!(pr.stat_age(second.procs[0].key), Some(0));
    }

    /// A kernel thread that renames itself keeps its facts (its command
    /// line is not read again); a child of kthreadd that is no kernel
    /// thread (a usermode helper, exec'ing) has them read again.
    #[test]
    fn a_renamed_kernel_thread_keeps_its_facts_a_helper_does_not() {
        let root = tempfile::tempdir().unwrap();
        let io = std::fs::read(format!("{FIX}/root-6.8/proc/4242/io")).unwrap();
        let stat = |pid: i32, comm: &str, flags: u32| {
            format!(
                "{pid} ({comm}) I 2 0 0 0 -1 {flags} 0 0 0 0 0 3 0 0 20 0 1 0 1057 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0"
            )
        };
        let put = |pid: i32, comm: &str, flags: u32, cmdline: &[u8]| {
            let dir = root.path().join(format!("proc/{pid}"));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("stat"), stat(pid, comm, flags)).unwrap();
            std::fs::write(dir.join("io"), &io).unwrap();
            std::fs::write(dir.join("cmdline"), cmdline).unwrap();
        };
        // 70: a kworker (PF_KTHREAD); 71: a usermode helper before its exec.
        put(70, "kworker/0:2-events", 0x0420_8060, b"");
        put(71, "kworker/u8:1", 0x0040_0100, b"");
        let mut r = Reader::new(root.path());
        let mut pr = ProcReader::new();
        let first = pr.read_all(&mut r).unwrap();
        assert_eq!(first.procs.len(), 2);
        // Renamed; the files now say what no kernel thread could (a
        // command line): read again, it would show.
        put(70, "kworker/0:2-mm_percpu_wq", 0x0420_8060, b"not\0read\0");
        put(71, "modprobe", 0x0040_0100, b"/sbin/modprobe\0-q\0");
        let second = pr.read_all(&mut r).unwrap();
        let by_pid = |pid: i32| second.procs.iter().find(|p| p.key.pid == pid).unwrap();
        assert_eq!(
            (&*by_pid(70).comm, &*by_pid(70).cmdline),
            ("kworker/0:2-mm_percpu_wq", "")
        );
        assert_eq!(
            (&*by_pid(71).comm, &*by_pid(71).cmdline),
            ("modprobe", "/sbin/modprobe -q")
        );
    }

    #[test]
    fn reads_own_process_live() {
        let mut r = Reader::new("/");
        let mut pr = ProcReader::new();
        let me = pr.read_one(&mut r, std::process::id() as i32).unwrap();
        assert!(me.io.is_ok(), "{:?}", me.io);
        assert!(me.ioprio.is_some());
        assert!(me.uid.is_some());
    }
}
