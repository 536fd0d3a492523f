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
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{parse_i64, parse_u64};
use threads::ThreadIo;

mod pidtable;
mod reader;
pub mod threads;
pub use pidtable::PidTable;
pub use reader::{KEEP_FILES_MAX, LIST_EVERY_SAMPLES, ProcReader, STAT_RECHECK_SAMPLES};

/// A process is identified by (pid, start time): a reused pid is a new process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ProcKey {
    pub pid: i32,
    /// Start time in clock ticks after boot (`/proc/<pid>/stat` field 22).
    pub start_time: u64,
}

impl ProcKey {
    /// The key of the live process `pid` (its start time from
    /// `/proc/<pid>/stat`), `None` when there is none.
    pub fn of_live(pid: i32) -> Option<ProcKey> {
        let mut r = crate::collect::Reader::new("/");
        let st = parse_stat(r.read_pid_file(pid, "stat").ok()?)?;
        Some(ProcKey {
            pid,
            start_time: st.start_time,
        })
    }

    /// Whether this process still runs on the live system: its pid has the
    /// same start time (a reused pid is another process) and is not a
    /// zombie (ended, its parent has not reaped it yet).
    pub fn running(&self) -> bool {
        let mut r = crate::collect::Reader::new("/");
        r.read_pid_file(self.pid, "stat")
            .ok()
            .and_then(parse_stat)
            .is_some_and(|st| st.start_time == self.start_time && !matches!(st.state, 'Z' | 'X' | 'x'))
    }
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
    pub nice: i32,
    pub num_threads: u32,
    pub start_time: u64,
    /// Aggregated block I/O delay in clock ticks (field 42); `None` when the
    /// kernel does not report it.
    pub blkio_ticks: Option<u64>,
    /// A kernel thread (`PF_KTHREAD` in the flags, field 9): it never
    /// execs, has no command line and runs as root.
    pub kthread: bool,
}

/// `PF_KTHREAD` (include/linux/sched.h).
const PF_KTHREAD: i64 = 0x0020_0000;

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
    const USED: [usize; 8] = [0, 5, 10, 11, 15, 16, 18, 38];
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
        // The kernel's range is -20..=19; a thread count fits in 32 bits.
        nice: i32::try_from(f[15]).ok()?,
        num_threads: u32::try_from(f[16]).unwrap_or(u32::MAX),
        start_time: u(18),
        blkio_ticks: (n > 38).then(|| u(38)),
        kthread: f[5] & PF_KTHREAD != 0,
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

impl ProcIo {
    /// A number that stays the same exactly while none of the counters
    /// moves, for a cache that only asks whether a process did anything
    /// since it last looked (8 bytes kept per process instead of 56): the
    /// sum of all seven, each of which only grows for one process (an
    /// exited thread's counts move into the process-wide total).
    pub fn mark(&self) -> u64 {
        self.syscalls_mark()
            .wrapping_add(self.read_bytes)
            .wrapping_add(self.write_bytes)
            .wrapping_add(self.cancelled_write_bytes)
    }

    /// Like [`ProcIo::mark`], for the read/write syscalls alone (rchar,
    /// wchar, syscr and syscw): moves exactly when the process read or
    /// wrote through a syscall.
    pub fn syscalls_mark(&self) -> u64 {
        self.rchar
            .wrapping_add(self.wchar)
            .wrapping_add(self.syscr)
            .wrapping_add(self.syscw)
    }
}

/// `/proc/<pid>/schedstat` of a process's main thread: time on a CPU (ns),
/// time waiting for one (ns), and how many times it was switched in.
/// Every time the thread runs it is switched in first, so while the three
/// stand still it has not run since they were read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchedStat {
    pub run_ns: u64,
    pub wait_ns: u64,
    pub switches: u64,
}

impl SchedStat {
    /// A number that changes whenever the thread runs, for a cache that
    /// only asks whether it ran (8 bytes kept per process instead of 32):
    /// the sum of the three, which only grow, and the switches at least 1.
    /// `None` only if the sum wrapped to 0.
    pub fn mark(&self) -> Option<std::num::NonZeroU64> {
        std::num::NonZeroU64::new(self.run_ns.wrapping_add(self.wait_ns).wrapping_add(self.switches))
    }
}

/// Parse `/proc/<pid>/schedstat`; `None` when malformed, or "0 0 0": what
/// kernels before 5.14 print while scheduler statistics are off (no thread
/// that ever ran was switched in 0 times).
pub fn parse_schedstat(buf: &[u8]) -> Option<SchedStat> {
    let mut f = buf.trim_ascii().split(|c| *c == b' ');
    let mut next = || parse_u64(f.next()?);
    let s = SchedStat {
        run_ns: next()?,
        wait_ns: next()?,
        switches: next()?,
    };
    (s.switches > 0).then_some(s)
}

/// Parse `/proc/<pid>/io`; `None` when a field is missing or malformed.
pub fn parse_io(buf: &[u8]) -> Option<ProcIo> {
    parse_io_in_order(buf).or_else(|| parse_io_any_order(buf))
}

/// The fields of `/proc/<pid>/io` in the kernel's order.
const IO_FIELDS: [&[u8]; 7] = [
    b"rchar: ",
    b"wchar: ",
    b"syscr: ",
    b"syscw: ",
    b"read_bytes: ",
    b"write_bytes: ",
    b"cancelled_write_bytes: ",
];

/// The file exactly as the kernel writes it (every process, every sample):
/// the seven fields in order, one decimal number each.
fn parse_io_in_order(mut buf: &[u8]) -> Option<ProcIo> {
    let mut v = [0u64; 7];
    for (slot, key) in v.iter_mut().zip(IO_FIELDS) {
        buf = buf.strip_prefix(key)?;
        let end = buf.iter().position(|&c| c == b'\n')?;
        *slot = parse_u64(&buf[..end])?;
        buf = &buf[end + 1..];
    }
    Some(ProcIo {
        rchar: v[0],
        wchar: v[1],
        syscr: v[2],
        syscw: v[3],
        read_bytes: v[4],
        write_bytes: v[5],
        cancelled_write_bytes: v[6],
    })
}

/// Any other layout with the same fields (another order, extra fields,
/// spaces).
fn parse_io_any_order(buf: &[u8]) -> Option<ProcIo> {
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
    /// The kernel's comm (unescaped; escape before display). Shared with
    /// the reader's cache: copying a process costs no allocation.
    pub comm: Arc<str>,
    /// Command line with NULs turned into spaces (empty for kernel threads).
    pub cmdline: Arc<str>,
    pub state: char,
    pub nice: i32,
    pub uid: Option<u32>,
    pub user: Option<Arc<str>>,
    pub ioprio: Option<IoPrio>,
    /// CPU ticks (user + system).
    pub cpu_ticks: u64,
    /// Block I/O delay of the main thread (`stat` field 42), clock ticks.
    pub blkio_ticks: Option<u64>,
    pub num_threads: u32,
    /// (tid, block I/O delay in ticks) of every thread, read only for
    /// multi-threaded processes that matter while delay accounting is on
    /// (see `delayacct`).
    pub thread_blkio: Option<Box<[(i32, u64)]>>,
    pub io: Result<ProcIo, IoUnavailable>,
    /// Each live thread's own counters, read when the process's counters
    /// moved since the previous sample or it is seen for the first time;
    /// `None` otherwise (then no thread did I/O) or when unreadable.
    pub threads: Option<Box<[ThreadIo]>>,
}

impl RawProc {
    /// A readable process with zero counters (also what an exit record
    /// gives of a process never seen alive): the caller sets the fields
    /// that matter to it.
    pub fn example(pid: i32, start_time: u64, comm: &str) -> Self {
        RawProc {
            key: ProcKey { pid, start_time },
            ppid: 1,
            comm: comm.into(),
            cmdline: "".into(),
            state: 'S',
            nice: 0,
            uid: Some(0),
            user: Some("root".into()),
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

/// Command lines are read up to this many bytes: an unprivileged process
/// can have one of several MB, which would otherwise be read, kept and
/// copied every sample. A longer one ends in [`CMDLINE_CUT`].
pub const CMDLINE_CAP: usize = 4096;

/// The mark at the end of a command line cut at [`CMDLINE_CAP`].
pub const CMDLINE_CUT: &str = " …[cut at 4 KiB]";

#[cfg(test)]
mod tests {
    use super::*;

    const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

    fn fixture(name: &str) -> Vec<u8> {
        std::fs::read(format!("{FIX}/{name}")).unwrap()
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

    /// Field 9's PF_KTHREAD, as a kworker has it (this VM, 6.18); a
    /// user process (dd) has not.
    #[test]
    fn stat_says_a_kernel_thread() {
        let kworker = b"7284 (kworker/0:2-mm_percpu_wq) I 2 0 0 0 -1 69238880 0 0 0 0 0 3 0 0 20 0 1 0 1057 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 0 0 0 0 0 0 0 0 0";
        assert!(parse_stat(kworker).unwrap().kthread);
        assert!(!parse_stat(&fixture("proc-pid/stat-dd")).unwrap().kthread);
    }

    #[test]
    fn stat_truncated_is_none() {
        assert_eq!(parse_stat(b"12 (x) S 1 2 3"), None);
        assert_eq!(parse_stat(b"12 x S 1"), None);
        assert_eq!(parse_stat(b""), None);
    }

    #[test]
    fn io_file_in_another_order_or_with_extra_fields() {
        let kernel = fixture("proc-pid/io-dd");
        let fast = parse_io_in_order(&kernel).unwrap();
        assert_eq!(parse_io_any_order(&kernel), Some(fast));
        let mut lines: Vec<&[u8]> = kernel.split(|&c| c == b'\n').filter(|l| !l.is_empty()).collect();
        lines.reverse();
        lines.insert(3, b"future_field: 7");
        let shuffled = lines.join(&b'\n');
        assert_eq!(parse_io_in_order(&shuffled), None);
        assert_eq!(parse_io(&shuffled), Some(fast));
    }

    #[test]
    fn schedstat_file_and_scheduler_statistics_off() {
        assert_eq!(
            parse_schedstat(&fixture("proc-pid/schedstat")),
            Some(SchedStat {
                run_ns: 218_578_584,
                wait_ns: 23_428_895,
                switches: 1189,
            })
        );
        assert_eq!(parse_schedstat(b"0 0 0\n"), None);
        assert_eq!(parse_schedstat(b"12 3\n"), None);
        assert_eq!(parse_schedstat(b"12 x 3\n"), None);
        assert_eq!(parse_schedstat(b""), None);
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
    fn a_schedstat_mark_moves_when_the_thread_ran() {
        let s = parse_schedstat(&fixture("proc-pid/schedstat")).unwrap();
        let mark = s.mark().unwrap().get();
        assert_eq!(mark, 218_578_584 + 23_428_895 + 1189);
        let ran = SchedStat {
            run_ns: s.run_ns + 40_000,
            wait_ns: s.wait_ns + 1_000,
            switches: s.switches + 1,
        };
        assert_ne!(ran.mark(), s.mark());
        assert_ne!(
            SchedStat {
                switches: s.switches + 1,
                ..s
            }
            .mark(),
            s.mark()
        );
    }

    #[test]
    fn a_mark_moves_with_every_counter() {
        let io = parse_io(&fixture("proc-pid/io-dd")).unwrap();
        assert_eq!(io.mark(), 1_073_741_824 * 2 + 16_384 * 2 + 1_069_547_520);
        assert_eq!(io.syscalls_mark(), 1_073_741_824 * 2 + 16_384 * 2);
        let bumps: [fn(&mut ProcIo); 7] = [
            |i| i.rchar += 1,
            |i| i.wchar += 1,
            |i| i.syscr += 1,
            |i| i.syscw += 1,
            |i| i.read_bytes += 4096,
            |i| i.write_bytes += 4096,
            |i| i.cancelled_write_bytes += 4096,
        ];
        for (n, bump) in bumps.iter().enumerate() {
            let mut moved = io;
            bump(&mut moved);
            assert_ne!(moved.mark(), io.mark(), "field {n}");
            assert_eq!(moved.syscalls_mark() != io.syscalls_mark(), n < 4, "field {n}");
        }
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
}
