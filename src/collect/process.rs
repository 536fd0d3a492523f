//! Per-process collection: `/proc/<pid>/stat`, `/proc/<pid>/io`, cmdline,
//! owner and I/O priority.
//!
//! The stat and io parsers are written here instead of using the procfs
//! crate's `Process` API because this is the hot path (thousands of processes
//! every second): these read into one reused buffer and allocate nothing but
//! the comm string, while procfs opens by path and allocates per field.
//! Things that rarely change (cmdline, owner) are read once per process and
//! cached by its key.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::io;
use std::os::fd::OwnedFd;

use serde::{Deserialize, Serialize};

use super::threads::{ThreadIo, read_threads};
use super::{Reader, parse_i64, parse_u64};

/// A process is identified by (pid, start time): a reused pid is a new process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ProcKey {
    pub pid: i32,
    /// Start time in clock ticks after boot (`/proc/<pid>/stat` field 22).
    pub start_time: u64,
}

/// The fields of `/proc/<pid>/stat` that iolens uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PidStat {
    pub pid: i32,
    pub comm: String,
    pub state: char,
    pub ppid: i32,
    pub utime: u64,
    pub stime: u64,
    pub nice: i64,
    pub num_threads: u64,
    pub start_time: u64,
    /// Aggregated block I/O delay in clock ticks (field 42); `None` when the
    /// kernel does not report it.
    pub blkio_ticks: Option<u64>,
}

/// Parse `/proc/<pid>/stat`. The comm is everything between the first '('
/// and the last ')', so a comm containing spaces, ')' or newlines is parsed
/// right; the fields after it are numbers.
pub fn parse_stat(buf: &[u8]) -> Option<PidStat> {
    let open = buf.iter().position(|&c| c == b'(')?;
    let close = buf.iter().rposition(|&c| c == b')')?;
    if close < open {
        return None;
    }
    let pid = i32::try_from(parse_i64(buf[..open].trim_ascii())?).ok()?;
    let comm = String::from_utf8_lossy(&buf[open + 1..close]).into_owned();
    let mut rest = buf[close + 1..].split(|c| *c == b' ').filter(|f| !f.is_empty());
    let state = *rest.next()?.first()? as char;
    // Fields after the state, numbered from 0 = field 4 (ppid). Only the
    // ones used are parsed (this runs for every process every sample); the
    // others are only counted.
    const USED: [usize; 7] = [0, 10, 11, 15, 16, 18, 38];
    let mut f = [0i64; 39];
    let mut n = 0;
    for field in rest.take(f.len()) {
        if USED.contains(&n) {
            let field = field.trim_ascii();
            // Unsigned values above i64::MAX saturate.
            f[n] = parse_i64(field).or_else(|| parse_u64(field).map(|_| i64::MAX))?;
        }
        n += 1;
    }
    if n < 19 {
        return None;
    }
    let u = |i: usize| u64::try_from(f[i]).unwrap_or(0);
    Some(PidStat {
        pid,
        comm,
        state,
        ppid: i32::try_from(f[0]).unwrap_or(0),
        utime: u(10),
        stime: u(11),
        nice: f[15],
        num_threads: u(16),
        start_time: u(18),
        blkio_ticks: (n > 38).then(|| u(38)),
    })
}

/// `/proc/<pid>/io`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProcIo {
    /// Bytes read through read-like syscalls (including from page cache).
    pub rchar: u64,
    pub wchar: u64,
    pub syscr: u64,
    pub syscw: u64,
    /// Bytes this process caused to be fetched from storage.
    pub read_bytes: u64,
    /// Bytes this process caused to be sent to storage (at dirtying time).
    pub write_bytes: u64,
    pub cancelled_write_bytes: u64,
}

/// Parse `/proc/<pid>/io`; `None` when a field is missing or malformed.
pub fn parse_io(buf: &[u8]) -> Option<ProcIo> {
    let mut io = ProcIo::default();
    let mut seen = 0u8;
    for line in buf.split(|&c| c == b'\n') {
        let Some(colon) = line.iter().position(|&c| c == b':') else {
            continue;
        };
        let v = parse_u64(line[colon + 1..].trim_ascii());
        let (slot, bit) = match &line[..colon] {
            b"rchar" => (&mut io.rchar, 1),
            b"wchar" => (&mut io.wchar, 2),
            b"syscr" => (&mut io.syscr, 4),
            b"syscw" => (&mut io.syscw, 8),
            b"read_bytes" => (&mut io.read_bytes, 16),
            b"write_bytes" => (&mut io.write_bytes, 32),
            b"cancelled_write_bytes" => (&mut io.cancelled_write_bytes, 64),
            _ => continue,
        };
        *slot = v?;
        seen |= bit;
    }
    (seen == 127).then_some(io)
}

/// Why a process's I/O counters are not available.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IoUnavailable {
    /// Another user's process and we lack CAP_SYS_PTRACE: run as root to see it.
    PermissionDenied,
    /// The process ended between listing and reading.
    Exited,
    /// Malformed file, or a kernel without task I/O accounting.
    Unreadable(String),
}

pub use crate::sys::ioprio::{IoClass, IoPrio, get as ioprio_get};

/// One process as read in one sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RawProc {
    pub key: ProcKey,
    pub ppid: i32,
    /// The kernel's comm (unescaped; escape before display).
    pub comm: String,
    /// Command line with NULs turned into spaces (empty for kernel threads).
    pub cmdline: String,
    pub state: char,
    pub nice: i64,
    pub uid: Option<u32>,
    pub user: Option<String>,
    pub ioprio: Option<IoPrio>,
    /// CPU ticks (user + system).
    pub cpu_ticks: u64,
    /// Block I/O delay of the main thread (`stat` field 42), clock ticks.
    pub blkio_ticks: Option<u64>,
    pub num_threads: u64,
    /// (tid, block I/O delay in ticks) of every thread, read only for
    /// multi-threaded processes that matter while delay accounting is on
    /// (see `delayacct`).
    pub thread_blkio: Option<Vec<(i32, u64)>>,
    pub io: Result<ProcIo, IoUnavailable>,
    /// Each live thread's own counters, read when the process's counters
    /// moved since the previous sample or it is seen for the first time;
    /// `None` otherwise (then no thread did I/O) or when unreadable.
    pub threads: Option<Vec<ThreadIo>>,
}

impl RawProc {
    /// A readable process with zero counters, for tests and examples: the
    /// caller sets the fields that matter to it.
    pub fn example(pid: i32, start_time: u64, comm: &str) -> Self {
        RawProc {
            key: ProcKey { pid, start_time },
            ppid: 1,
            comm: comm.to_string(),
            cmdline: String::new(),
            state: 'S',
            nice: 0,
            uid: Some(0),
            user: Some("root".to_string()),
            ioprio: None,
            cpu_ticks: 0,
            blkio_ticks: None,
            num_threads: 1,
            thread_blkio: None,
            io: Ok(ProcIo::default()),
            threads: None,
        }
    }
}

/// All processes of one sample, with counts of those that could not be read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProcSnapshot {
    pub procs: Vec<RawProc>,
    /// Listed in /proc but their stat could not be read (hidepid, or not allowed).
    pub hidden: u32,
    /// Listed, then gone before their stat was read.
    pub exited: u32,
}

impl ProcSnapshot {
    /// Processes whose I/O counters we were not allowed to read.
    pub fn denied(&self) -> usize {
        self.procs
            .iter()
            .filter(|p| matches!(p.io, Err(IoUnavailable::PermissionDenied)))
            .count()
    }
}

#[derive(Debug)]
struct Static {
    /// The comm when cmdline and uid were read: an exec changes the comm
    /// (but not the pid or start time), and then they are read again.
    comm: String,
    cmdline: String,
    uid: Option<u32>,
    seen: u64,
    /// The process's counters at the previous read: the threads are read
    /// again only when they moved.
    last_io: Option<ProcIo>,
}

/// A hasher for pid-keyed maps, looked up several times per process per
/// sample: one multiply per word instead of SipHash. Pids are small
/// integers chosen by the kernel, so hash flooding is not a concern here.
#[derive(Debug, Default, Clone, Copy)]
pub struct PidHasher(u64);

impl Hasher for PidHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }
    fn write_i32(&mut self, v: i32) {
        self.write_u32(v as u32);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map keyed by pid or [`ProcKey`], hashed with [`PidHasher`].
pub type PidMap<K, V> = HashMap<K, V, BuildHasherDefault<PidHasher>>;
/// A set of pids or [`ProcKey`]s, hashed with [`PidHasher`].
pub type PidSet<K> = std::collections::HashSet<K, BuildHasherDefault<PidHasher>>;

/// `/proc/<pid>/stat` and `io` kept open between samples (live system only).
#[derive(Debug)]
struct PidFiles {
    stat: OwnedFd,
    io: Option<OwnedFd>,
    seen: u64,
}

/// At most this many processes keep their stat and io files open (and
/// fewer when RLIMIT_NOFILE's hard limit is lower: see `keep_budget`). Each
/// kept file costs a descriptor and about 4 KiB of kernel memory (its
/// seq_file buffer, kept while the file is open), so 10,000 processes hold
/// 20,000 descriptors and ~80 MiB of kernel memory; processes beyond the
/// budget have their files opened, read and closed every sample, which
/// costs about twice the CPU per process.
pub const KEEP_FILES_MAX: usize = 32_768;

/// Reads processes, caching per-process facts that do not change.
///
/// On the live system each process's `stat` and `io` files are kept open
/// and re-read with `pread` from offset 0 every sample (the kernel
/// regenerates them), which saves an open and a close per file per sample:
/// about half the kernel time of a sample. A kept file of a process that
/// has ended reads as ESRCH, even when its pid has been reused, so the pid
/// is then opened afresh. Not done under a captured tree (`--root`), where files can be
/// replaced under a kept descriptor.
#[derive(Debug, Default)]
pub struct ProcReader {
    cache: PidMap<ProcKey, Static>,
    users: PidMap<u32, String>,
    users_loaded: bool,
    generation: u64,
    pids: Vec<i32>,
    files: PidMap<i32, PidFiles>,
    /// How many processes may keep files open (from RLIMIT_NOFILE).
    keep_budget: Option<usize>,
}

/// How many processes may keep two files open: raises the soft
/// RLIMIT_NOFILE to the hard one (as Go programs do by default; at most
/// what [`KEEP_FILES_MAX`] needs), and leaves 512 descriptors for
/// everything else.
fn keep_budget() -> usize {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let lim = getrlimit(Resource::Nofile);
    let (cur, max) = (lim.current.unwrap_or(u64::MAX), lim.maximum);
    let want = max.unwrap_or(u64::MAX).min(2 * KEEP_FILES_MAX as u64 + 1024);
    let cur = if cur < want
        && setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(want),
                maximum: max,
            },
        )
        .is_ok()
    {
        want
    } else {
        cur
    };
    let fds = usize::try_from(cur).unwrap_or(usize::MAX).saturating_sub(512);
    (fds / 2).min(KEEP_FILES_MAX)
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

    fn user_name(&mut self, uid: u32) -> Option<String> {
        if !self.users.contains_key(&uid) && !self.users_loaded {
            self.users_loaded = true;
            if let Ok(users) = sysinfo::Users::new_with_refreshed_list() {
                for u in users.iter() {
                    self.users.insert(**u.id(), u.name().to_string());
                }
            }
        }
        self.users.get(&uid).cloned()
    }

    /// Forget the user table so the next unknown uid reloads it.
    pub fn reload_users(&mut self) {
        self.users_loaded = false;
    }

    /// List the numeric entries of /proc.
    fn list_pids(&mut self, r: &Reader) -> io::Result<()> {
        self.pids.clear();
        for e in std::fs::read_dir(r.path("/proc"))? {
            let Ok(e) = e else { continue };
            if let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) {
                self.pids.push(pid);
            }
        }
        self.pids.sort_unstable();
        Ok(())
    }

    /// Read every process visible under the root.
    pub fn read_all(&mut self, r: &mut Reader) -> Result<ProcSnapshot, super::ReadError> {
        self.list_pids(r).map_err(|error| super::ReadError {
            path: r.path("/proc"),
            error,
        })?;
        self.generation += 1;
        let mut snap = ProcSnapshot {
            procs: Vec::with_capacity(self.pids.len()),
            ..Default::default()
        };
        let pids = std::mem::take(&mut self.pids);
        for &pid in &pids {
            match self.read_one(r, pid) {
                Ok(p) => snap.procs.push(p),
                Err(IoUnavailable::Exited) => snap.exited += 1,
                Err(_) => snap.hidden += 1,
            }
        }
        self.pids = pids;
        let generation = self.generation;
        self.cache.retain(|_, s| s.seen == generation);
        self.files.retain(|_, f| f.seen == generation);
        Ok(snap)
    }

    /// Read one process. `Err` when its stat could not be read.
    pub fn read_one(&mut self, r: &mut Reader, pid: i32) -> Result<RawProc, IoUnavailable> {
        let live = r.is_live();
        let generation = self.generation;
        let stat = match self.read_stat(r, pid, live) {
            Ok(()) => {
                parse_stat(r.last()).ok_or_else(|| IoUnavailable::Unreadable(format!("/proc/{pid}/stat: malformed")))?
            }
            Err(e) => return Err(classify(&e)),
        };
        let key = ProcKey {
            pid,
            start_time: stat.start_time,
        };
        let io = match self.read_io(r, pid) {
            Ok(()) => parse_io(r.last()).ok_or_else(|| IoUnavailable::Unreadable(format!("/proc/{pid}/io: malformed"))),
            // No io file while the process is still there: a kernel without
            // task I/O accounting, not an exit.
            Err(e) if e.kind() == io::ErrorKind::NotFound && r.read_pid_file(pid, "stat").is_ok() => Err(
                IoUnavailable::Unreadable(format!("/proc/{pid}/io: missing (kernel without task I/O accounting)")),
            ),
            Err(e) => Err(classify(&e)),
        };
        // Kernel threads (kthreadd and its children) have an empty cmdline.
        let kthread = pid == 2 || stat.ppid == 2;
        let st = match self.cache.get_mut(&key) {
            // Still valid unless the process exec'd (new comm) or was first
            // seen mid-exec (empty cmdline of a user process).
            Some(s) if s.comm == stat.comm && (kthread || !s.cmdline.is_empty()) => {
                s.seen = generation;
                (s.cmdline.clone(), s.uid)
            }
            _ => {
                let dir = format!("/proc/{pid}");
                let cmdline = r
                    .read_capped(format!("{dir}/cmdline"), CMDLINE_CAP + 1)
                    .map(cmdline_text)
                    .unwrap_or_default();
                let uid = {
                    use std::os::unix::fs::MetadataExt;
                    std::fs::metadata(r.path(&dir)).ok().map(|m| m.uid())
                };
                let s = Static {
                    comm: stat.comm.clone(),
                    cmdline,
                    uid,
                    seen: generation,
                    last_io: None,
                };
                let out = (s.cmdline.clone(), s.uid);
                self.cache.insert(key, s);
                out
            }
        };
        let (cmdline, uid) = st;
        let threads = match (&io, self.cache.get_mut(&key)) {
            (Ok(now), Some(s)) if s.last_io != Some(*now) => {
                s.last_io = Some(*now);
                read_threads(r, pid)
            }
            _ => None,
        };
        let user = uid.and_then(|u| self.user_name(u));
        Ok(RawProc {
            key,
            ppid: stat.ppid,
            comm: stat.comm,
            cmdline,
            state: stat.state,
            nice: stat.nice,
            uid,
            user,
            ioprio: if live { ioprio_get(pid) } else { None },
            cpu_ticks: stat.utime + stat.stime,
            blkio_ticks: stat.blkio_ticks,
            num_threads: stat.num_threads,
            thread_blkio: None,
            io,
            threads,
        })
    }
}

impl ProcReader {
    /// Read `/proc/<pid>/stat` into the reader's buffer, through a kept
    /// descriptor when there is one; on the live system, keep a newly
    /// opened one (within the budget).
    fn read_stat(&mut self, r: &mut Reader, pid: i32, live: bool) -> io::Result<()> {
        if let Some(f) = self.files.get_mut(&pid) {
            match r.reread(&f.stat) {
                Ok(b) if !b.is_empty() => {
                    f.seen = self.generation;
                    return Ok(());
                }
                // Ended (ESRCH), maybe with its pid reused: open afresh.
                _ => {
                    self.files.remove(&pid);
                }
            }
        }
        let fd = r.open_pid_file(pid, "stat")?;
        r.reread(&fd)?;
        if live && self.files.len() < *self.keep_budget.get_or_insert_with(keep_budget) {
            self.files.insert(
                pid,
                PidFiles {
                    stat: fd,
                    io: None,
                    seen: self.generation,
                },
            );
        }
        Ok(())
    }

    /// Read `/proc/<pid>/io` into the reader's buffer, keeping its
    /// descriptor beside the stat one when that is kept.
    fn read_io(&mut self, r: &mut Reader, pid: i32) -> io::Result<()> {
        let kept = self.files.get_mut(&pid);
        if let Some(fd) = kept.as_ref().and_then(|f| f.io.as_ref()) {
            return r.reread(fd).map(drop);
        }
        let fd = r.open_pid_file(pid, "io")?;
        r.reread(&fd)?;
        if let Some(f) = kept {
            f.io = Some(fd);
        }
        Ok(())
    }
}

/// Command lines are read up to this many bytes: an unprivileged process
/// can have one of several MB, which would otherwise be read, kept and
/// copied every sample. A longer one ends in [`CMDLINE_CUT`].
pub const CMDLINE_CAP: usize = 4096;

/// The mark at the end of a command line cut at [`CMDLINE_CAP`].
pub const CMDLINE_CUT: &str = " …[cut at 4 KiB]";

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

    fn fixture(name: &str) -> Vec<u8> {
        std::fs::read(format!("{FIX}/{name}")).unwrap()
    }

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
    fn stat_of_a_normal_process() {
        let s = parse_stat(&fixture("proc-pid/stat-dd")).unwrap();
        assert_eq!(s.pid, 4242);
        assert_eq!(s.comm, "dd");
        assert_eq!(s.state, 'D');
        assert_eq!(s.ppid, 4100);
        assert_eq!((s.utime, s.stime), (12, 345));
        assert_eq!(s.nice, 0);
        assert_eq!(s.num_threads, 1);
        assert_eq!(s.start_time, 987_654);
        assert_eq!(s.blkio_ticks, Some(77));
    }

    #[test]
    fn stat_with_spaces_parens_and_newline_in_comm() {
        let s = parse_stat(&fixture("proc-pid/stat-evil-comm")).unwrap();
        assert_eq!(s.comm, "a) (b\nc) d");
        assert_eq!(s.state, 'S');
        assert_eq!(s.start_time, 5555);
        assert_eq!(s.nice, -5);
    }

    #[test]
    fn stat_truncated_is_none() {
        assert_eq!(parse_stat(b"12 (x) S 1 2 3"), None);
        assert_eq!(parse_stat(b"12 x S 1"), None);
        assert_eq!(parse_stat(b""), None);
    }

    #[test]
    fn io_file() {
        let io = parse_io(&fixture("proc-pid/io-dd")).unwrap();
        assert_eq!(
            io,
            ProcIo {
                rchar: 1_073_741_824,
                wchar: 1_073_741_824,
                syscr: 16_384,
                syscw: 16_384,
                read_bytes: 1_069_547_520,
                write_bytes: 0,
                cancelled_write_bytes: 0,
            }
        );
        assert_eq!(parse_io(b"rchar: 1\nwchar: 2\n"), None);
        assert_eq!(
            parse_io(
                b"rchar: x\nwchar: 2\nsyscr: 1\nsyscw: 1\nread_bytes: 1\nwrite_bytes: 1\ncancelled_write_bytes: 0\n"
            ),
            None
        );
    }

    #[test]
    fn ioprio_labels() {
        assert_eq!(IoPrio::from_raw(3 << 13).label(0), "idle");
        assert_eq!(IoPrio::from_raw((2 << 13) | 7).label(0), "be/7");
        assert_eq!(IoPrio::from_raw((1 << 13) | 2).label(0), "rt/2");
        assert_eq!(IoPrio::from_raw(0).label(0), "be/4");
        assert_eq!(IoPrio::from_raw(0).label(19), "be/7");
        assert_eq!(IoPrio::from_raw(0).label(-20), "be/0");
    }

    #[test]
    fn reads_processes_of_a_fixture_tree() {
        let mut r = Reader::new(format!("{FIX}/root-6.8"));
        let mut pr = ProcReader::new();
        let snap = pr.read_all(&mut r).unwrap();
        let pids: Vec<i32> = snap.procs.iter().map(|p| p.key.pid).collect();
        assert_eq!(pids, [1, 4242]);
        let dd = &snap.procs[1];
        assert_eq!(dd.cmdline, "dd if=/dev/sda of=/dev/null bs=1M");
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
