//! Open files of processes, for progress tracking: `/proc/<pid>/fd` and
//! `/proc/<pid>/fdinfo/<fd>`.
//!
//! Cost is the whole point of this module. Walking every fd of every process
//! each second is what makes tools like Xfennec/progress heavy on a busy box,
//! so [`FdScanner`] only scans processes where progress can matter:
//!
//! - processes that did I/O in the last interval (their `/proc/<pid>/io`
//!   rchar/wchar/syscr/syscw moved since the previous sample),
//! - watched processes (`--pid` / `--name`),
//! - processes already tracked (they did I/O or a file position moved within
//!   the last [`TRACK_IDLE_SAMPLES`] scans, so a stall stays visible),
//! - everything, once, when a full scan is requested (`iolens progress`
//!   without filters starts with one).
//!
//! And per fd it does as little as it can: the fd directory is opened once
//! and listed with `getdents64`; each fd's fdinfo is read (`openat` relative
//! to the fdinfo directory, one `read`) for its position, flags and mount
//! id. The mount id decides whether the file may be looked at any further:
//! a file on a FUSE, network or automount filesystem (see
//! [`super::mountinfo`], from the process's own mountinfo: mount namespaces
//! differ) is never stat'ed — a `stat` there can hang for as long as the
//! daemon or server does, uninterruptibly — and its size is unknown
//! ([`RawFd::remote`]). Any other fd is `statx`ed (`AT_STATX_DONT_SYNC`)
//! through the magic link, so the size is the open file's even when it was
//! deleted or renamed; regular files and block devices are kept. The link
//! text (the path shown: `readlinkat`, which never reaches the filesystem)
//! is read once per open file, and only once it can be a transfer (see
//! [`RawFd::path`]). Captured trees (`--root`) have no fds to scan: their fd
//! links would point at this machine's files.
//!
//! Every scan has a [`Budget`]: at most so many fd entries read and so much
//! time, so that a process holding tens of thousands of open files (which
//! any user can make) never holds a sample back. Watched processes are
//! read first, then the others from the smallest fd table to the biggest.
//! A table that does not fit in what is left is read in parts: its hot fds
//! (those whose position moved lately, at most [`HOT_FDS`]) every scan,
//! the rest swept a budget's worth at a time across scans, and only the fds
//! found moving are reported (with [`FdProc::unread`] saying how many were
//! not read); a process not reached at all is read at the next scan.
//! What is kept per fd of such a table is its position, inode and mount
//! (about 60 bytes), and a link text only for its hot fds.

mod lister;

pub mod maps;
mod mounts;
mod raw;
mod read;

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Reader;
use super::mountinfo::MountTable;
use super::process::{PidMap, PidTable, ProcIo, ProcKey};

pub use super::procdir::{MOUNTINFO_CAP, SMALL_CAP};
pub use lister::ProcLister;
pub use raw::{Access, FdInfo, FdProc, FdSnapshot, FdTarget, RawFd, ScanProc, ScanReason, Watch, parse_fdinfo};

/// A process stays scanned this many scans after its last sign of activity.
pub const TRACK_IDLE_SAMPLES: u32 = 60;

/// How much one scan may spend reading fds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// fd entries read per scan (each an fdinfo read, and a `statx` for a
    /// file; the hot fds of big tables count but are read even past it).
    pub fds: u32,
    /// Time per scan, checked every few fds.
    pub time: Duration,
}

/// The default [`Budget`]: 2,048 fds cost about 10-25 ms of a core (6-12
/// µs each, most of it the kernel's: an fdinfo open and read, a `statx`).
pub const BUDGET: Budget = Budget {
    fds: 2048,
    time: Duration::from_millis(50),
};

impl Default for Budget {
    fn default() -> Self {
        BUDGET
    }
}

/// At most this many fds of a table read in parts are re-read every scan:
/// the ones whose position moved most recently.
pub const HOT_FDS: usize = 32;

/// An fd as seen at the previous scan.
#[derive(Debug, Clone)]
struct SeenFd {
    pos: u64,
    ino: u64,
    mnt_id: Option<u64>,
    path: Option<Arc<[u8]>>,
    /// The scan in which its position last moved (0: never seen moving).
    moved: u64,
    /// What it was, when not a regular file or block device.
    not_file: NotFile,
}

/// An fd of a table read whole that is no file to follow, remembered so
/// that the next scan spends less on it: under a fork storm the active
/// processes' pipes and terminals were most of the fds read each scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NotFile {
    /// A regular file or a block device.
    No,
    /// A kernel object whose link text is no path (`pipe:[ino]`,
    /// `socket:[ino]`, `anon_inode:[eventfd]`): while its link still
    /// reads as no path it is no file, and its fdinfo is not read.
    Object,
    /// A file of another type (a character device, a FIFO, a socket
    /// file) with the inode and mount it had: the same inode on the same
    /// mount is of the same type, so it is not `statx`ed again.
    Other,
}

#[derive(Debug, Clone)]
struct ProcState {
    start_time: u64,
    /// [`ProcIo::syscalls_mark`] of its counters at the last scan.
    io: Option<u64>,
    /// Scans since the last sign of activity; `None` when not tracked.
    idle: Option<u32>,
    /// What each fd was at the last scan, while tracked (a state is kept
    /// for every listed process, most of them never tracked).
    fds: Option<Box<PidMap<i32, SeenFd>>>,
    /// The last scan that listed the process.
    seen: u64,
    /// Its open fds at the last listing (0: not listed yet).
    table: u32,
    /// Owed a full-scan read that the budget did not reach.
    full_owed: bool,
    /// While its table is read in parts: where the sweep is.
    sweep: Option<Box<Sweep>>,
}

/// The sweep of a table read in parts.
#[derive(Debug, Clone, Default)]
struct Sweep {
    /// The fd number the sweep goes on from (0: a new sweep).
    cursor: i32,
    /// Entries this sweep has listed so far.
    count: u32,
    /// Devices of the files this sweep has read so far, and of the last
    /// whole sweep (a process's devices column).
    devs: Vec<u64>,
    devs_last: Vec<u64>,
}

/// One process to read in a scan.
#[derive(Debug, Clone, Copy)]
struct Todo {
    /// Its index in the listing.
    at: usize,
    reason: ScanReason,
    /// Some(false): no read/write syscall since the last sample; None: unknown.
    moved_io: Option<bool>,
    table: u32,
}

/// Processes another part of iolens wants read at the next scan (at most
/// [`AlsoScan::MAX`]), and per process the files (MAJ, MIN, inode; at
/// most [`AlsoScan::FILES`]) it wants named: those its fds do not name are
/// looked for in its `maps`. Each scan takes them.
#[derive(Default)]
pub struct AlsoScan(std::sync::Mutex<Wanted>, std::sync::OnceLock<Flusher>);

/// A file by its filesystem's MAJ, MIN and its inode.
pub type FileId = (u32, u32, u64);

/// Processes and, for each, the files wanted named.
pub type Wanted = foldhash::HashMap<i32, Vec<FileId>>;

/// Brings the pids up to date before a scan (the tracer's buffers read).
pub type Flusher = Box<dyn Fn() + Send + Sync>;

impl std::fmt::Debug for AlsoScan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AlsoScan")
    }
}

impl AlsoScan {
    pub const MAX: usize = 64;
    pub const FILES: usize = 8;

    /// Set what brings the pids up to date before each scan (once).
    pub fn set_flusher(&self, f: Flusher) {
        let _ = self.1.set(f);
    }

    pub fn add(&self, pids: impl IntoIterator<Item = i32>) {
        self.add_files(pids.into_iter().map(|p| (p, None)));
    }

    /// Processes, each with a file it touched when known.
    pub fn add_files(&self, files: impl IntoIterator<Item = (i32, Option<FileId>)>) {
        let mut set = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for (p, file) in files {
            if set.len() >= Self::MAX && !set.contains_key(&p) {
                continue;
            }
            let v = set.entry(p).or_default();
            if let Some(f) = file.filter(|f| v.len() < Self::FILES && !v.contains(f)) {
                v.push(f);
            }
        }
    }

    fn take(&self) -> Wanted {
        if let Some(f) = self.1.get() {
            f();
        }
        std::mem::take(&mut *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }
}

/// Decides which processes to scan and reads their fds within a [`Budget`];
/// keeps what it needs from the previous sample (I/O counters, positions,
/// link texts).
#[derive(Debug, Default)]
pub struct FdScanner {
    pub watch: Watch,
    /// Processes to read at the next scan as if watched (the processes
    /// the page-cache events came from: their files need names).
    pub also: Option<Arc<AlsoScan>>,
    also_now: Wanted,
    /// When set, the next scan reads every listed process (then clears).
    pub full_next: bool,
    pub budget: Budget,
    /// Report every fd read of a table read in parts, not only the moving
    /// ones (a one-off listing: the process detail).
    pub report_all: bool,
    state: PidTable<ProcState>,
    /// Scans made.
    scans: u64,
    todo: Vec<Todo>,
    buf: Vec<u8>,
    dents: Vec<u8>,
    numbers: Vec<i32>,
    /// iolens's own namespace's mounts, kept across scans while they do
    /// not change, and the ids of kernel objects' mounts.
    own_mounts: mounts::OwnMounts,
    /// Other mounts by id, emptied at every scan (a mount id is reused as
    /// soon as its mount is gone) and filled from the mountinfo of the
    /// first process that has a file on a mount in neither table.
    mounts: MountTable,
    /// Mount ids found in no mountinfo read this scan (pipefs, sockfs,
    /// anon_inodefs: every pipe and socket), so that the next fd on one
    /// does not have its process's mountinfo read again.
    unlisted: Vec<u64>,
    /// Where the watchdog learns which process is being read.
    pub activity: std::sync::Arc<super::activity::Activity>,
}

/// What is left of one scan's [`Budget`].
struct Spend {
    left: u32,
    deadline: Instant,
    taken: u32,
}

impl Spend {
    fn new(b: Budget) -> Self {
        Spend {
            left: b.fds,
            deadline: Instant::now() + b.time,
            taken: 0,
        }
    }

    /// Take one fd entry; false once the budget is spent (in fds or time).
    fn take(&mut self) -> bool {
        if self.left == 0 {
            return false;
        }
        self.taken += 1;
        if self.taken.is_multiple_of(32) && Instant::now() >= self.deadline {
            self.left = 0;
            return false;
        }
        self.left -= 1;
        true
    }

    /// A hot fd: read even past the budget, but counted.
    fn take_hot(&mut self) {
        self.taken += 1;
        self.left = self.left.saturating_sub(1);
    }

    fn fits(&self, n: usize) -> bool {
        n <= self.left as usize
    }
}

impl FdScanner {
    /// A scanner that reports the process being read to `activity`.
    pub fn with_activity(activity: std::sync::Arc<super::activity::Activity>) -> Self {
        FdScanner {
            activity,
            ..Default::default()
        }
    }

    pub fn new(watch: Watch) -> Self {
        FdScanner {
            watch,
            ..Default::default()
        }
    }

    /// Scan the fds of the processes that matter, given every process listed
    /// in this sample.
    pub fn scan(&mut self, r: &Reader, procs: &[ScanProc<'_>]) -> FdSnapshot {
        let full = std::mem::take(&mut self.full_next);
        self.also_now = self.also.as_ref().map(|a| a.take()).unwrap_or_default();
        // Not iolens itself for its own page-cache events (its report
        // written to a file, a recording): that would read its thousands
        // of /proc directory fds every sample; its files stay named by
        // inode.
        self.also_now.remove(&(std::process::id() as i32));
        self.mounts.clear();
        self.unlisted.clear();
        let mut snap = FdSnapshot {
            listed: procs.len() as u32,
            ..Default::default()
        };
        if !r.is_live() {
            // A captured tree's fd links point at this machine's files.
            return snap;
        }
        self.scans += 1;
        self.own_mounts.refresh(self.scans, &mut self.buf);
        self.state.reserve_total(procs.len());
        let mut todo = std::mem::take(&mut self.todo);
        todo.clear();
        for (at, p) in procs.iter().enumerate() {
            if let Some((reason, moved_io, table)) = self.decide(p, full, &mut snap.exited) {
                todo.push(Todo {
                    at,
                    reason,
                    moved_io,
                    table,
                });
            }
        }
        // Watched processes first, then from the smallest table: the
        // biggest are read last, in parts where the budget runs out.
        todo.sort_by_key(|t| (t.reason != ScanReason::Watched, t.table));
        let mut spend = Spend::new(self.budget);
        for t in &todo {
            self.read_proc(r, &procs[t.at], *t, &mut spend, &mut snap);
        }
        self.todo = todo;
        // Tracked processes missing from the listing have exited.
        let scan = self.scans;
        self.state.retain(|pid, s| {
            let keep = s.seen == scan;
            if !keep && s.idle.is_some() {
                snap.exited.push(ProcKey {
                    pid,
                    start_time: s.start_time,
                });
            }
            keep
        });
        snap.exited.sort_unstable();
        snap
    }

    /// Whether `p` is read in this scan, and why; its state stays in the
    /// table, marked seen in this scan.
    fn decide(
        &mut self,
        p: &ScanProc<'_>,
        full: bool,
        exited: &mut Vec<ProcKey>,
    ) -> Option<(ScanReason, Option<bool>, u32)> {
        let scan = self.scans;
        let io = p.io.as_ref().map(ProcIo::syscalls_mark);
        let watched = self.watch.matches(p.key.pid, &p.comm) || self.also_now.contains_key(&p.key.pid);
        // Most processes: known, not tracked, no read or write since the
        // last sample, nothing to scan; updated in place.
        if let Some(s) = self.state.get_mut(p.key.pid)
            && s.start_time == p.key.start_time
            && s.idle.is_none()
            && !s.full_owed
            && !full
            && !matches!((s.io, io), (Some(a), Some(b)) if a != b)
            && !watched
        {
            s.io = io;
            s.seen = scan;
            return None;
        }
        let prev = match self.state.remove(p.key.pid) {
            Some(s) if s.start_time == p.key.start_time => Some(s),
            Some(old) => {
                // The pid was reused: the tracked process ended.
                if old.idle.is_some() {
                    exited.push(ProcKey {
                        pid: p.key.pid,
                        start_time: old.start_time,
                    });
                }
                None
            }
            None => None,
        };
        let moved_io = match (prev.as_ref().and_then(|s| s.io), io) {
            (Some(a), Some(b)) => Some(a != b),
            _ => None,
        };
        let tracked = prev.as_ref().is_some_and(|s| s.idle.is_some());
        let owed = prev.as_ref().is_some_and(|s| s.full_owed);
        let reason = if watched {
            Some(ScanReason::Watched)
        } else if p.key.pid == std::process::id() as i32 {
            None // iolens itself (its log and terminal are not transfers)
        } else if moved_io == Some(true) {
            Some(ScanReason::Active)
        } else if tracked {
            Some(ScanReason::Tracked)
        } else if full || owed {
            Some(ScanReason::Full)
        } else {
            None
        };
        let mut st = prev.unwrap_or(ProcState {
            start_time: p.key.start_time,
            io: None,
            idle: None,
            fds: None,
            seen: scan,
            table: 0,
            full_owed: false,
            sweep: None,
        });
        st.io = io;
        st.seen = scan;
        st.full_owed = false;
        if reason.is_none() {
            st.idle = None;
            st.fds = None;
            st.sweep = None;
        }
        let table = st.table;
        self.state.insert(p.key.pid, st);
        reason.map(|r| (r, moved_io, table))
    }

    /// Read the fds of one process chosen by [`FdScanner::decide`] and
    /// report them in `snap`.
    fn read_proc(&mut self, r: &Reader, p: &ScanProc<'_>, t: Todo, spend: &mut Spend, snap: &mut FdSnapshot) {
        let Some(mut st) = self.state.remove(p.key.pid) else {
            return;
        };
        self.activity.set_pid(p.key.pid);
        match self.read_fds(r, p.key.pid, t.moved_io, &mut st, spend, &mut snap.fds_seen) {
            Ok(out) if out.reached => {
                let active = t.moved_io == Some(true);
                let busy = active || out.moved || t.reason == ScanReason::Watched;
                st.idle = match (busy, st.idle) {
                    (true, _) => Some(0),
                    (false, Some(n)) if n + 1 < TRACK_IDLE_SAMPLES => Some(n + 1),
                    // Seen by a full scan: look once more, to see whether it moves.
                    (false, None) if t.reason == ScanReason::Full && !out.fds.is_empty() => {
                        Some(TRACK_IDLE_SAMPLES - 1)
                    }
                    _ => None,
                };
                if st.idle.is_none() {
                    st.fds = None;
                    st.sweep = None;
                }
                self.read_maps(r, p.key.pid, &out.fds, snap);
                snap.procs.push(FdProc {
                    key: p.key,
                    comm: p.comm.to_string(),
                    io: p.io,
                    reason: t.reason,
                    fds: out.fds,
                    unread: out.unread,
                    devs: out.devs,
                });
            }
            Ok(_) => {
                // Not reached: the budget was spent. Read at the next scan;
                // reported with nothing read, so its transfers stay.
                st.full_owed = t.reason == ScanReason::Full;
                if st.idle.is_some() || t.reason != ScanReason::Full {
                    st.idle = Some(st.idle.unwrap_or(0));
                    snap.procs.push(FdProc {
                        key: p.key,
                        comm: p.comm.to_string(),
                        io: p.io,
                        reason: t.reason,
                        fds: Vec::new(),
                        unread: st.table.max(1),
                        devs: st.sweep.as_ref().map(|s| s.devs_last.clone()).unwrap_or_default(),
                    });
                }
            }
            Err(e) => {
                match e.raw_os_error() {
                    Some(libc::ENOENT) | Some(libc::ESRCH) => {
                        if st.idle.is_some() {
                            snap.exited.push(p.key);
                        }
                        return;
                    }
                    Some(libc::EACCES) | Some(libc::EPERM) => snap.denied += 1,
                    _ => {}
                }
                st.idle = None;
                st.fds = None;
                st.sweep = None;
            }
        }
        self.state.insert(p.key.pid, st);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;
    use std::os::fd::{AsRawFd, OwnedFd};

    #[test]
    fn scan_policy_active_tracked_full() {
        let r = Reader::new("/");
        // A child (iolens never scans itself unless watched by pid).
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let me = ProcKey {
            pid: child.id() as i32,
            start_time: 1,
        };
        let proc_with = |rchar| ScanProc {
            key: me,
            comm: Cow::Borrowed("me"),
            io: Some(ProcIo {
                rchar,
                ..Default::default()
            }),
        };
        let mut sc = FdScanner::default();
        // First sight: no previous counters, not watched: not scanned.
        assert!(sc.scan(&r, &[proc_with(10)]).procs.is_empty());
        // Counters moved: scanned as active.
        let snap = sc.scan(&r, &[proc_with(20)]);
        assert_eq!(snap.procs[0].reason, ScanReason::Active);
        assert!(snap.fds_seen > 0);
        // Idle now, but tracked for a while.
        assert_eq!(sc.scan(&r, &[proc_with(20)]).procs[0].reason, ScanReason::Tracked);
        // Gone from the listing: reported as exited, once.
        assert_eq!(sc.scan(&r, &[]).exited, vec![me]);
        assert!(sc.scan(&r, &[]).exited.is_empty());
        // A full scan reads everything once.
        sc.full_next = true;
        assert_eq!(sc.scan(&r, &[proc_with(20)]).procs[0].reason, ScanReason::Full);
        // Never itself, unless watched by pid.
        let own = ScanProc {
            key: ProcKey {
                pid: std::process::id() as i32,
                start_time: 1,
            },
            ..proc_with(0)
        };
        sc.full_next = true;
        assert!(sc.scan(&r, std::slice::from_ref(&own)).procs.is_empty());
        // Nor for its own page-cache events.
        let also = Arc::new(AlsoScan::default());
        also.add([own.key.pid]);
        sc.also = Some(also);
        assert!(sc.scan(&r, std::slice::from_ref(&own)).procs.is_empty());
        let _ = child.kill();
        let _ = child.wait();
    }

    /// This test process as a scanned process, a reader of the live
    /// system, and a scanner that watches this process by pid.
    fn watching_me() -> (ProcKey, Reader, FdScanner) {
        let me = ProcKey {
            pid: std::process::id() as i32,
            start_time: 1,
        };
        let sc = FdScanner::new(Watch {
            pids: vec![me.pid],
            names: vec![],
        });
        (me, Reader::new("/"), sc)
    }

    #[test]
    fn positions_are_read_every_scan_even_for_idle_processes() {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&[1u8; 100]).unwrap();
        let (me, r, mut sc) = watching_me();
        let raw = f.as_raw_fd();
        let scan = |sc: &mut FdScanner| {
            let snap = sc.scan(
                &r,
                &[ScanProc {
                    key: me,
                    comm: Cow::Borrowed("me"),
                    io: Some(ProcIo::default()),
                }],
            );
            snap.procs[0].fds.iter().find(|e| e.fd == raw).cloned().unwrap()
        };
        let e = scan(&mut sc);
        assert_eq!((e.pos, e.size, e.remote), (100, Some(100), false));
        // Moved by lseek alone (no read/write syscall): seen at once.
        f.seek(SeekFrom::Start(10)).unwrap();
        assert_eq!(scan(&mut sc).pos, 10);
    }

    /// A process the page-cache events came from, with a file it has
    /// mapped but closed: named from its maps; a file it has open is
    /// named by its fd and its maps are not read for it.
    #[test]
    fn mapped_files_of_the_processes_the_events_came_from() {
        use std::os::unix::fs::MetadataExt;
        let py = std::path::Path::new("/usr/bin/python3");
        if !py.exists() {
            eprintln!("skipped: no /usr/bin/python3");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let (mapped, open) = (dir.path().join("mapped"), dir.path().join("open"));
        std::fs::write(&mapped, [7u8; 8192]).unwrap();
        std::fs::write(&open, [7u8; 100]).unwrap();
        let script = "import mmap,sys,time\nf=open(sys.argv[1],'rb')\nm=mmap.mmap(f.fileno(),0,prot=mmap.PROT_READ)\nf.close()\ng=open(sys.argv[2],'rb')\ng.read(10)\nprint('ok',flush=True)\ntime.sleep(30)\n";
        let mut child = std::process::Command::new(py)
            .args(["-c", script])
            .arg(&mapped)
            .arg(&open)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
        let key = |p: &std::path::Path| {
            let m = std::fs::metadata(p).unwrap();
            (libc::major(m.dev()), libc::minor(m.dev()), m.ino())
        };
        let pid = child.id() as i32;
        let also = Arc::new(AlsoScan::default());
        also.add_files([(pid, Some(key(&mapped))), (pid, Some(key(&open)))]);
        let mut sc = FdScanner {
            also: Some(also),
            ..Default::default()
        };
        let snap = sc.scan(
            &Reader::new("/"),
            &[ScanProc {
                key: ProcKey { pid, start_time: 1 },
                comm: Cow::Borrowed("python3"),
                io: Some(ProcIo::default()),
            }],
        );
        let _ = child.kill();
        let _ = child.wait();
        let (major, minor, ino) = key(&mapped);
        assert_eq!(
            snap.mapped,
            vec![maps::MappedFile {
                pid,
                dev: (major, minor),
                ino,
                path: Arc::from(mapped.as_os_str().as_encoded_bytes()),
            }]
        );
        assert!(
            snap.procs[0]
                .fds
                .iter()
                .any(|f| f.ino == key(&open).2 && f.path.is_some())
        );
    }

    #[test]
    fn a_memfd_is_no_file_on_a_disk() {
        use std::io::Write;
        let fd = rustix::fs::memfd_create("iolens-test", rustix::fs::MemfdFlags::empty()).unwrap();
        let mut f = std::fs::File::from(fd);
        f.write_all(&[1u8; 100]).unwrap();
        let (me, r, mut sc) = watching_me();
        let snap = sc.scan(
            &r,
            &[ScanProc {
                key: me,
                comm: Cow::Borrowed("me"),
                io: Some(ProcIo::default()),
            }],
        );
        let raw = f.as_raw_fd();
        let seen = snap.procs.iter().flat_map(|p| p.fds.iter()).find(|e| e.fd == raw);
        assert!(seen.is_none(), "memfd reported as a file: {seen:?}");
    }

    #[test]
    fn captured_trees_have_no_fds_to_scan() {
        let dir = tempfile::tempdir().unwrap();
        let r = Reader::new(dir.path());
        let mut sc = FdScanner {
            full_next: true,
            ..Default::default()
        };
        let p = ScanProc {
            key: ProcKey { pid: 1, start_time: 1 },
            comm: Cow::Borrowed("x"),
            io: None,
        };
        let snap = sc.scan(&r, &[p]);
        assert!(snap.procs.is_empty());
        assert_eq!(snap.listed, 1);
    }

    #[test]
    fn scans_own_open_file_with_position() {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&vec![7u8; 10_000]).unwrap();
        f.seek(SeekFrom::Start(1234)).unwrap();
        let (_, r, mut sc) = watching_me();
        let mut lister = ProcLister::default();
        let procs = lister.list(&r, &sc.watch.clone(), false).unwrap();
        assert_eq!(procs.len(), 1);
        let snap = sc.scan(&r, &procs);
        let p = &snap.procs[0];
        assert_eq!(p.reason, ScanReason::Watched);
        let e = p.fds.iter().find(|e| e.fd == f.as_raw_fd()).unwrap();
        assert_eq!((e.pos, e.size, e.target), (1234, Some(10_000), FdTarget::File));
        assert_eq!(e.access(), Access::ReadWrite);
        // tempfile() is unlinked: the size still comes through the fd.
        let path = e.path.as_deref().unwrap();
        assert!(String::from_utf8_lossy(path).ends_with("(deleted)"), "{path:?}");
    }

    #[test]
    fn pipes_are_not_files() {
        use std::io::Write;
        // A pipe's mount (pipefs) is in no mountinfo: once taken for a
        // file on a mount that may block ("size unknown: FUSE/net").
        let (rx, mut tx) = std::io::pipe().unwrap();
        tx.write_all(b"x").unwrap();
        let (_, r, mut sc) = watching_me();
        let mut lister = ProcLister::default();
        let procs = lister.list(&r, &sc.watch.clone(), false).unwrap();
        let snap = sc.scan(&r, &procs);
        let fds: Vec<i32> = snap.procs[0].fds.iter().map(|e| e.fd).collect();
        assert!(
            !fds.contains(&rx.as_raw_fd()) && !fds.contains(&tx.as_raw_fd()),
            "{fds:?}"
        );
    }

    /// A pipe and a character device are remembered as no files (the
    /// pipe by its link, /dev/null by its inode), and a file put in their
    /// place at the same fd numbers is reported at the next scan.
    #[test]
    fn fds_that_are_no_files_are_remembered_and_a_file_in_their_place_is_seen() {
        use std::io::Write;
        let (rx, mut tx) = std::io::pipe().unwrap();
        tx.write_all(b"x").unwrap();
        let mut pipe_end: OwnedFd = rx.into();
        let mut null: OwnedFd = std::fs::File::open("/dev/null").unwrap().into();
        let (me, r, mut sc) = watching_me();
        let p = ScanProc {
            key: me,
            comm: Cow::Borrowed("me"),
            io: Some(ProcIo::default()),
        };
        let (pfd, nfd) = (pipe_end.as_raw_fd(), null.as_raw_fd());
        let reported = |sc: &mut FdScanner| -> Vec<(i32, u64)> {
            sc.scan(&r, std::slice::from_ref(&p)).procs[0]
                .fds
                .iter()
                .filter(|e| e.fd == pfd || e.fd == nfd)
                .map(|e| (e.fd, e.pos))
                .collect()
        };
        for _ in 0..2 {
            assert!(reported(&mut sc).is_empty());
            let kinds = sc
                .state
                .get(me.pid)
                .and_then(|s| s.fds.as_ref())
                .map(|m| (m.get(&pfd).map(|f| f.not_file), m.get(&nfd).map(|f| f.not_file)));
            assert_eq!(kinds, Some((Some(NotFile::Object), Some(NotFile::Other))));
        }
        // Files at both numbers: read and reported.
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&[5u8; 300]).unwrap();
        rustix::io::dup2(&f, &mut pipe_end).unwrap();
        let mut g = tempfile::tempfile().unwrap();
        g.write_all(&[5u8; 30]).unwrap();
        rustix::io::dup2(&g, &mut null).unwrap();
        let mut seen = reported(&mut sc);
        seen.sort_unstable();
        let mut want = vec![(pfd, 300), (nfd, 30)];
        want.sort_unstable();
        assert_eq!(seen, want);
    }

    /// A process that holds `n` open regular files (and nothing to do).
    fn holder(dir: &std::path::Path, n: usize) -> std::process::Child {
        let f = dir.join(format!("data{n}"));
        std::fs::write(&f, b"0123456789").unwrap();
        let code = format!(
            "import os,sys,time\nfds=[os.open({f:?},os.O_RDONLY) for _ in range({n})]\nprint(flush=True)\ntime.sleep(60)"
        );
        let mut child = std::process::Command::new("python3")
            .args(["-c", &code])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
        child
    }

    fn listed(child: &std::process::Child) -> ScanProc<'static> {
        ScanProc {
            key: ProcKey {
                pid: child.id() as i32,
                start_time: 1,
            },
            comm: Cow::Borrowed("holder"),
            io: None,
        }
    }

    #[test]
    fn small_tables_first_and_what_the_budget_did_not_reach_at_the_next_scan() {
        if std::process::Command::new("python3").arg("-V").output().is_err() {
            eprintln!("skipped: python3 is not installed");
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let (mut big, mut small) = (holder(d.path(), 300), holder(d.path(), 2));
        let r = Reader::new("/");
        let mut sc = FdScanner {
            budget: Budget {
                fds: 100,
                time: Duration::from_secs(600),
            },
            ..Default::default()
        };
        let procs = [listed(&big), listed(&small)];
        let by_pid = |snap: &FdSnapshot, c: &std::process::Child| {
            snap.procs.iter().find(|p| p.key.pid == c.id() as i32).cloned()
        };
        // Neither table is known: in listing order; the big one takes the
        // whole budget (in part), the small one is not reached.
        sc.full_next = true;
        let s1 = sc.scan(&r, &procs);
        let b = by_pid(&s1, &big).unwrap();
        assert!(
            b.fds.is_empty() && b.unread >= 200,
            "{} read, {} unread",
            b.fds.len(),
            b.unread
        );
        assert_eq!(by_pid(&s1, &small), None);
        // Owed: read at the next scan, first (its table is not known yet).
        let s2 = sc.scan(&r, &procs);
        let s = by_pid(&s2, &small).unwrap();
        // Its two files (python may hold others: counted, not asserted).
        assert_eq!((s.unread, s.reason), (0, ScanReason::Full));
        assert!(s.fds.len() >= 2, "{:?}", s.fds);
        // Another full scan: the small table first although listed last.
        sc.full_next = true;
        sc.budget.fds = 10;
        let s3 = sc.scan(&r, &procs);
        assert_eq!(
            by_pid(&s3, &small).map(|p| (p.fds.len(), p.unread)),
            Some((s.fds.len(), 0))
        );
        assert!(by_pid(&s3, &big).is_some_and(|p| p.unread > 0));
        for c in [&mut big, &mut small] {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    #[test]
    fn a_big_table_is_swept_in_parts_and_its_moving_fds_read_every_scan() {
        use std::io::{Seek, SeekFrom, Write};
        let mut files: Vec<std::fs::File> = (0..300).map(|_| tempfile::tempfile().unwrap()).collect();
        for f in &mut files {
            f.write_all(b"0123456789").unwrap();
        }
        let (me, r, mut sc) = watching_me();
        sc.budget.fds = 100;
        let scan = |sc: &mut FdScanner| {
            let p = ScanProc {
                key: me,
                comm: Cow::Borrowed("me"),
                io: Some(ProcIo::default()),
            };
            sc.scan(&r, &[p]).procs.remove(0)
        };
        // Other tests move their own files in this process meanwhile.
        let ours: Vec<i32> = files.iter().map(|f| f.as_raw_fd()).collect();
        let of_ours = |p: &FdProc| -> Vec<(i32, u64)> {
            p.fds
                .iter()
                .filter(|f| ours.contains(&f.fd))
                .map(|f| (f.fd, f.pos))
                .collect()
        };
        let first = scan(&mut sc);
        assert!(of_ours(&first).is_empty(), "first sight: nothing moved yet");
        assert!(first.unread >= 200, "{}", first.unread);
        let table = first.unread as usize + 100;
        // One sweep over the whole table, then one file moves: it is
        // reported by the scan whose part reaches it, within one more sweep.
        for _ in 1..table.div_ceil(100) {
            assert!(of_ours(&scan(&mut sc)).is_empty());
        }
        let moving = files[150].as_raw_fd();
        files[150].seek(SeekFrom::Start(3)).unwrap();
        let mut found = None;
        for i in 0..=table.div_ceil(100) {
            let p = scan(&mut sc);
            assert!(p.unread > 0);
            if let Some(f) = p.fds.iter().find(|f| f.fd == moving) {
                found = Some((i, f.pos, f.path.is_some()));
                break;
            }
        }
        assert!(matches!(found, Some((_, 3, true))), "{found:?}");
        // Hot now: read at every scan, even with no budget left.
        files[150].seek(SeekFrom::Start(7)).unwrap();
        sc.budget.fds = 0;
        let p = scan(&mut sc);
        assert_eq!(of_ours(&p), vec![(moving, 7)]);
        // The devices column still has the files' device.
        assert!(!p.devs.is_empty());
        // Most files closed: once a sweep ends, the small table is read whole.
        files.truncate(20);
        sc.budget.fds = 1000;
        assert!((0..3).any(|_| scan(&mut sc).unread == 0));
    }

    #[test]
    fn a_part_of_a_listing_is_the_whole_listing_from_a_number() {
        // Other tests open and close fds in this process meanwhile: only
        // this test's own files are sure to stay.
        let files: Vec<std::fs::File> = (0..200).map(|_| tempfile::tempfile().unwrap()).collect();
        let dir = crate::collect::procdir::open_dir(std::path::Path::new("/proc/self/fd")).unwrap();
        let mut buf = Vec::new();
        // Numbers freed by other tests are taken first: sorted, ours from
        // the 101st on are the ones at or after `from`.
        let mut ours: Vec<i32> = files.iter().map(|f| f.as_raw_fd()).collect();
        ours.sort_unstable();
        let from = ours[100];
        let mut part = Vec::new();
        let end = crate::collect::procdir::list_fd_numbers_from(&dir, from, 50, &mut buf, &mut part).unwrap();
        assert!(!end && part.len() >= 50, "{} listed", part.len());
        assert_eq!(part[0], from);
        assert!(part.windows(2).all(|w| w[0] < w[1]), "{part:?}");
        // To the end of the table.
        part.clear();
        assert!(crate::collect::procdir::list_fd_numbers_from(&dir, from, 100_000, &mut buf, &mut part).unwrap());
        let missing: Vec<i32> = ours[100..].iter().copied().filter(|n| !part.contains(n)).collect();
        assert!(missing.is_empty(), "{missing:?} missing from {part:?}");
        assert!(!part.contains(&ours[99]));
        drop(files);
    }
}
