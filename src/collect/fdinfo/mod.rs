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

mod lister;
pub(crate) mod procdir;

use std::borrow::Cow;
use std::io;
use std::sync::Arc;

use rustix::fs::{AtFlags, StatxFlags, statx};
use serde::{Deserialize, Serialize};

use super::mountinfo::MountTable;
use super::process::{PidMap, PidTable, ProcIo, ProcKey, RawProc};
use super::{Reader, parse_u64};
use procdir::{CName, block_size, list_fd_numbers, open_dir, read_at, read_link_at, read_small};

pub use lister::ProcLister;
pub use procdir::{MOUNTINFO_CAP, SMALL_CAP};

/// A process stays scanned this many scans after its last sign of activity.
pub const TRACK_IDLE_SAMPLES: u32 = 60;

/// `/proc/<pid>/fdinfo/<fd>`: the fields iolens uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FdInfo {
    /// File position (what `lseek(fd, 0, SEEK_CUR)` would return).
    pub pos: u64,
    /// open(2) flags, printed by the kernel in octal.
    pub flags: u32,
    /// Mount id (3.15+); `None` on older kernels.
    pub mnt_id: Option<u64>,
    /// Inode number (5.14+); `None` on older kernels.
    pub ino: Option<u64>,
}

/// A directory or an `O_PATH` descriptor, by its open flags (`O_TMPFILE`
/// includes the `O_DIRECTORY` bit but opens a regular file).
fn is_dir_or_path(flags: u32) -> bool {
    let tmpfile = (libc::O_TMPFILE & !libc::O_DIRECTORY) as u32;
    flags & libc::O_PATH as u32 != 0 || (flags & libc::O_DIRECTORY as u32 != 0 && flags & tmpfile == 0)
}

/// Parse an octal number (fdinfo's `flags`).
fn parse_octal(b: &[u8]) -> Option<u32> {
    if b.is_empty() {
        return None;
    }
    let mut v: u32 = 0;
    for &c in b {
        if !(b'0'..=b'7').contains(&c) {
            return None;
        }
        v = v.checked_mul(8)?.checked_add(u32::from(c - b'0'))?;
    }
    Some(v)
}

/// Parse `/proc/<pid>/fdinfo/<fd>`. `pos` and `flags` are required; `mnt_id`
/// and `ino` are optional (older kernels); other lines (eventfd counts,
/// inotify watches, lock lines) are ignored.
pub fn parse_fdinfo(buf: &[u8]) -> Option<FdInfo> {
    let (mut pos, mut flags) = (None, None);
    let mut info = FdInfo::default();
    for line in buf.split(|&c| c == b'\n') {
        let Some(colon) = line.iter().position(|&c| c == b':') else {
            continue;
        };
        let v = line[colon + 1..].trim_ascii();
        match &line[..colon] {
            b"pos" => pos = Some(parse_u64(v)?),
            b"flags" => flags = Some(parse_octal(v)?),
            b"mnt_id" => info.mnt_id = parse_u64(v),
            b"ino" => info.ino = parse_u64(v),
            _ => {}
        }
    }
    info.pos = pos?;
    info.flags = flags?;
    Some(info)
}

/// How a file is open, from the `O_ACCMODE` bits of its flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    Read,
    Write,
    ReadWrite,
}

impl Access {
    pub fn from_flags(flags: u32) -> Self {
        match flags & libc::O_ACCMODE as u32 {
            x if x == libc::O_WRONLY as u32 => Access::Write,
            x if x == libc::O_RDWR as u32 => Access::ReadWrite,
            _ => Access::Read,
        }
    }

    pub fn reads(self) -> bool {
        matches!(self, Access::Read | Access::ReadWrite)
    }

    pub fn writes(self) -> bool {
        matches!(self, Access::Write | Access::ReadWrite)
    }
}

/// What an fd points at (only these two are tracked).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FdTarget {
    File,
    BlockDevice,
}

/// One open regular file or block device of a process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RawFd {
    pub fd: i32,
    pub target: FdTarget,
    pub pos: u64,
    /// open(2) flags.
    pub flags: u32,
    pub mnt_id: Option<u64>,
    /// Inode of the open file (from fdinfo, else from fstat).
    pub ino: u64,
    /// The device the data lives on: `st_dev` of a regular file (its
    /// filesystem's device; major 0 for an anonymous one such as overlay or
    /// btrfs), `st_rdev` of a block device (the device itself).
    pub dev: u64,
    /// Size in bytes: `st_size` of the open file, or the block device's size.
    /// `None` when a block device's size could not be read, and for a file
    /// on a FUSE, network or automount filesystem (`remote`).
    pub size: Option<u64>,
    /// On a FUSE, network or automount filesystem: never stat'ed (that can
    /// hang), so its size is unknown and its target assumed a regular file.
    pub remote: bool,
    /// The link text of `/proc/<pid>/fd/<fd>` (may end in " (deleted)"; not
    /// escaped: escape before display). `None` until the fd can be a
    /// transfer: read into, written, moving, or in a process doing I/O.
    #[serde(serialize_with = "ser_lossy", deserialize_with = "de_lossy", default)]
    pub path: Option<Arc<[u8]>>,
}

/// A path as [`ser_lossy`] wrote it (a recording).
fn de_lossy<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Arc<[u8]>>, D::Error> {
    let s: Option<String> = Deserialize::deserialize(d)?;
    Ok(s.map(|s| Arc::from(s.into_bytes().into_boxed_slice())))
}

fn ser_lossy<S: serde::Serializer>(b: &Option<Arc<[u8]>>, s: S) -> Result<S::Ok, S::Error> {
    match b {
        Some(b) => s.serialize_str(&String::from_utf8_lossy(b)),
        None => s.serialize_none(),
    }
}

impl RawFd {
    pub fn access(&self) -> Access {
        Access::from_flags(self.flags)
    }
}

/// Why a process was scanned (for the model's honesty rules and for display).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScanReason {
    Watched,
    Active,
    Tracked,
    Full,
}

/// The open files of one scanned process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FdProc {
    pub key: ProcKey,
    /// The kernel's comm (unescaped).
    pub comm: String,
    /// I/O counters read in the same sample; `None` when not allowed.
    pub io: Option<ProcIo>,
    pub reason: ScanReason,
    pub fds: Vec<RawFd>,
}

/// The fd part of one sample.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FdSnapshot {
    /// Processes whose fds were read in this sample.
    pub procs: Vec<FdProc>,
    /// Processes scanned or tracked before that are gone now.
    pub exited: Vec<ProcKey>,
    /// Processes in the listing (candidates).
    pub listed: u32,
    /// fd entries looked at in this sample.
    pub fds_seen: u64,
    /// Processes whose fds we were not allowed to read.
    pub denied: u32,
}

/// A process as the scanner needs it: from the collector's process snapshot
/// or from [`ProcLister`].
#[derive(Debug, Clone, PartialEq)]
pub struct ScanProc<'a> {
    pub key: ProcKey,
    pub comm: Cow<'a, str>,
    pub io: Option<ProcIo>,
}

impl<'a> From<&'a RawProc> for ScanProc<'a> {
    fn from(p: &'a RawProc) -> Self {
        ScanProc {
            key: p.key,
            comm: Cow::Borrowed(&p.comm),
            io: p.io.as_ref().ok().copied(),
        }
    }
}

/// Which processes are watched (always scanned).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Watch {
    pub pids: Vec<i32>,
    /// Exact comm names.
    pub names: Vec<String>,
}

impl Watch {
    pub fn is_empty(&self) -> bool {
        self.pids.is_empty() && self.names.is_empty()
    }

    /// A name longer than the kernel's 15-byte comm matches its first 15 bytes.
    pub fn matches(&self, pid: i32, comm: &str) -> bool {
        self.pids.contains(&pid)
            || self
                .names
                .iter()
                .any(|n| n == comm || (n.len() > 15 && comm.len() == 15 && n.as_bytes().starts_with(comm.as_bytes())))
    }
}

/// An fd as seen at the previous scan.
#[derive(Debug, Clone)]
struct SeenFd {
    pos: u64,
    ino: u64,
    mnt_id: Option<u64>,
    path: Option<Arc<[u8]>>,
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
}

/// Decides which processes to scan and reads their fds; keeps what it needs
/// from the previous sample (I/O counters, positions, link texts).
#[derive(Debug, Default)]
pub struct FdScanner {
    pub watch: Watch,
    /// When set, the next scan reads every listed process (then clears).
    pub full_next: bool,
    state: PidTable<ProcState>,
    /// Scans made.
    scans: u64,
    buf: Vec<u8>,
    dents: Vec<u8>,
    numbers: Vec<i32>,
    /// Mounts by id, emptied at every scan (a mount id is reused as soon
    /// as its mount is gone) and filled from the mountinfo of the first
    /// process that has a file on a mount not in it.
    mounts: MountTable,
    /// Mount ids found in no mountinfo read this scan (pipefs, sockfs,
    /// anon_inodefs: every pipe and socket), so that the next fd on one
    /// does not have its process's mountinfo read again.
    unlisted: Vec<u64>,
    /// Where the watchdog learns which process is being read.
    pub activity: std::sync::Arc<super::activity::Activity>,
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
        self.mounts.clear();
        self.unlisted.clear();
        if !r.is_live() {
            // A captured tree's fd links point at this machine's files.
            return FdSnapshot {
                listed: procs.len() as u32,
                ..Default::default()
            };
        }
        let own_pid = if r.is_live() { std::process::id() as i32 } else { -1 };
        let mut snap = FdSnapshot {
            listed: procs.len() as u32,
            ..Default::default()
        };
        self.scans += 1;
        let scan = self.scans;
        self.state.reserve_total(procs.len());
        for p in procs {
            let io = p.io.as_ref().map(ProcIo::syscalls_mark);
            // Most processes: known, not tracked, no read or write since the
            // last sample, nothing to scan; updated in place.
            if let Some(s) = self.state.get_mut(p.key.pid)
                && s.start_time == p.key.start_time
                && s.idle.is_none()
                && !full
                && !matches!((s.io, io), (Some(a), Some(b)) if a != b)
                && !self.watch.matches(p.key.pid, &p.comm)
            {
                s.io = io;
                s.seen = scan;
                continue;
            }
            let prev = match self.state.remove(p.key.pid) {
                Some(s) if s.start_time == p.key.start_time => Some(s),
                Some(old) => {
                    // The pid was reused: the tracked process ended.
                    if old.idle.is_some() {
                        snap.exited.push(ProcKey {
                            pid: p.key.pid,
                            start_time: old.start_time,
                        });
                    }
                    None
                }
                None => None,
            };
            // Some(false): known to have made no read/write syscall since the
            // last sample; None: unknown (first sight, or no counters).
            let moved_io = match (prev.as_ref().and_then(|s| s.io), io) {
                (Some(a), Some(b)) => Some(a != b),
                _ => None,
            };
            let active = moved_io == Some(true);
            let tracked = prev.as_ref().is_some_and(|s| s.idle.is_some());
            let reason = if self.watch.matches(p.key.pid, &p.comm) {
                Some(ScanReason::Watched)
            } else if p.key.pid == own_pid {
                None // iolens itself (its log and terminal are not transfers)
            } else if active {
                Some(ScanReason::Active)
            } else if tracked {
                Some(ScanReason::Tracked)
            } else if full {
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
            });
            st.io = io;
            st.seen = scan;
            let Some(reason) = reason else {
                st.idle = None;
                st.fds = None;
                self.state.insert(p.key.pid, st);
                continue;
            };
            self.activity.set_pid(p.key.pid);
            match self.read_fds(r, p.key.pid, moved_io, &mut st, &mut snap.fds_seen) {
                Ok((fds, moved)) => {
                    let busy = active || moved || reason == ScanReason::Watched;
                    st.idle = match (busy, st.idle) {
                        (true, _) => Some(0),
                        (false, Some(n)) if n + 1 < TRACK_IDLE_SAMPLES => Some(n + 1),
                        // Seen by a full scan: look once more, to see whether it moves.
                        (false, None) if reason == ScanReason::Full && !fds.is_empty() => Some(TRACK_IDLE_SAMPLES - 1),
                        _ => None,
                    };
                    if st.idle.is_none() {
                        st.fds = None;
                    }
                    snap.procs.push(FdProc {
                        key: p.key,
                        comm: p.comm.to_string(),
                        io: p.io,
                        reason,
                        fds,
                    });
                }
                Err(e) => {
                    match e.raw_os_error() {
                        Some(libc::ENOENT) | Some(libc::ESRCH) => {
                            if st.idle.is_some() {
                                snap.exited.push(p.key);
                            }
                            continue;
                        }
                        Some(libc::EACCES) | Some(libc::EPERM) => snap.denied += 1,
                        _ => {}
                    }
                    st.idle = None;
                    st.fds = None;
                }
            }
            self.state.insert(p.key.pid, st);
        }
        // Tracked processes missing from the listing have exited.
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

    /// Whether a file of `pid` on mount `id` may block when stat'ed. A mount
    /// missing from the table has the process's own mountinfo read (it may
    /// live in another mount namespace); one still missing, or a mountinfo
    /// that cannot be read, counts as one that may block.
    fn mount_may_block(&mut self, r: &Reader, pid: i32, id: u64) -> bool {
        if let Some(b) = self.mounts.fd_may_block(id) {
            return b;
        }
        if self.unlisted.contains(&id) {
            return true;
        }
        let mut name = CName::default();
        if let Ok(dir) = open_dir(&r.path("/proc"))
            && let Ok(text) = read_at(
                &dir,
                name.set3(b"", pid, b"/mountinfo"),
                &mut self.buf,
                false,
                MOUNTINFO_CAP,
            )
        {
            self.mounts.extend(super::mountinfo::parse(text));
        }
        self.mounts.fd_may_block(id).unwrap_or_else(|| {
            self.unlisted.push(id);
            true
        })
    }

    /// Read the regular files and block devices open in one process. Returns
    /// them and whether any position moved since the previous scan.
    fn read_fds(
        &mut self,
        r: &Reader,
        pid: i32,
        moved_io: Option<bool>,
        st: &mut ProcState,
        fds_seen: &mut u64,
    ) -> io::Result<(Vec<RawFd>, bool)> {
        let mut name = CName::default();
        let fd_dir = open_dir(&r.path(format!("/proc/{pid}/fd")))?;
        // One more directory open per process saves two path components
        // ("../fdinfo/") on every fd.
        let info_dir = open_dir(&r.path(format!("/proc/{pid}/fdinfo")))?;
        let mut numbers = std::mem::take(&mut self.numbers);
        numbers.clear();
        list_fd_numbers(&fd_dir, &mut self.dents, &mut numbers)?;
        *fds_seen += numbers.len() as u64;
        let mut out = Vec::new();
        let mut moved = false;
        let mut old = st.fds.take().unwrap_or_default();
        let active = moved_io == Some(true);
        for &fd in &numbers {
            // fdinfo first: its mnt_id says whether the file may be stat'ed.
            let Some(info) = read_small(&info_dir, name.set(b"", fd), &mut self.buf)
                .ok()
                .and_then(parse_fdinfo)
            else {
                continue; // closed meanwhile
            };
            if is_dir_or_path(info.flags) {
                continue;
            }
            let remote = match info.mnt_id {
                Some(id) => self.mount_may_block(r, pid, id),
                // Before Linux 3.15 fdinfo has no mnt_id: nothing to go by.
                None => false,
            };
            // A pipe, socket or anonymous inode lives on an internal mount
            // that no mountinfo lists, so it counts as "may block"; its
            // link text ("pipe:[123]") is no path: not a file, skipped
            // (readlinkat of an fd link never reaches the filesystem).
            if remote
                && info.mnt_id.is_some_and(|id| self.mounts.fd_may_block(id).is_none())
                && read_link_at(&fd_dir, name.set(b"", fd)).is_some_and(|l| !l.starts_with(b"/"))
            {
                continue;
            }
            let prev = old.remove(&fd);
            let (target, ino, dev, size) = if remote {
                // Never stat a file on FUSE, network or automount
                // filesystems: that can wait on the daemon or server for
                // ever, uninterruptibly. Its size stays unknown; its device
                // is the mount's (mountinfo's major:minor is its st_dev).
                let dev = info
                    .mnt_id
                    .and_then(|id| self.mounts.get(id))
                    .map_or(0, |m| libc::makedev(m.major, m.minor));
                (FdTarget::File, info.ino.unwrap_or(0), dev, None)
            } else {
                let Ok(sx) = statx(
                    &fd_dir,
                    name.set(b"", fd),
                    AtFlags::STATX_DONT_SYNC,
                    StatxFlags::TYPE | StatxFlags::SIZE | StatxFlags::INO,
                ) else {
                    continue; // closed meanwhile, or a target we may not stat
                };
                let target = match u32::from(sx.stx_mode) & libc::S_IFMT {
                    libc::S_IFREG => FdTarget::File,
                    libc::S_IFBLK => FdTarget::BlockDevice,
                    _ => continue,
                };
                let size = match target {
                    FdTarget::File => Some(sx.stx_size),
                    FdTarget::BlockDevice => block_size(
                        r,
                        &fd_dir,
                        name.set(b"", fd),
                        (sx.stx_rdev_major, sx.stx_rdev_minor),
                        &mut self.buf,
                    ),
                };
                let dev = match target {
                    FdTarget::File => libc::makedev(sx.stx_dev_major, sx.stx_dev_minor),
                    FdTarget::BlockDevice => libc::makedev(sx.stx_rdev_major, sx.stx_rdev_minor),
                };
                (target, info.ino.unwrap_or(sx.stx_ino), dev, size)
            };
            let access = Access::from_flags(info.flags);
            let (fd_moved, cached) = match prev {
                Some(seen) if seen.ino == ino && seen.mnt_id == info.mnt_id => (seen.pos != info.pos, seen.path),
                _ => (false, None),
            };
            moved |= fd_moved;
            // The link text only for what can be a transfer: a file already
            // read into, written to, or moving, or in a process doing I/O.
            // An fd at 0 that never moved is not read until it does.
            let path = cached.or_else(|| {
                (info.pos > 0 || access.writes() || active || fd_moved)
                    .then(|| read_link_at(&fd_dir, name.set(b"", fd)).map_or_else(|| Arc::from(&b"?"[..]), Arc::from))
            });
            st.fds.get_or_insert_default().insert(
                fd,
                SeenFd {
                    pos: info.pos,
                    ino,
                    mnt_id: info.mnt_id,
                    path: path.clone(),
                },
            );
            out.push(RawFd {
                fd,
                target,
                pos: info.pos,
                flags: info.flags,
                mnt_id: info.mnt_id,
                ino,
                dev,
                size,
                remote,
                path,
            });
        }
        self.numbers = numbers;
        Ok((out, moved))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn fdinfo_of_a_file() {
        let b = b"pos:\t4096\nflags:\t0100002\nmnt_id:\t29\nino:\t1234567\n";
        let i = parse_fdinfo(b).unwrap();
        assert_eq!(i.pos, 4096);
        assert_eq!(i.flags, 0o100002);
        assert_eq!(Access::from_flags(i.flags), Access::ReadWrite);
        assert_eq!(i.mnt_id, Some(29));
        assert_eq!(i.ino, Some(1_234_567));
    }

    #[test]
    fn fdinfo_old_kernel_and_extra_lines() {
        // 4.x: no ino line; an eventfd has an extra line.
        let i = parse_fdinfo(b"pos:\t0\nflags:\t02000001\nmnt_id:\t12\neventfd-count: 0\n").unwrap();
        assert_eq!(i.flags, 0o2000001);
        assert_eq!(Access::from_flags(i.flags), Access::Write);
        assert_eq!(i.ino, None);
        let i = parse_fdinfo(b"pos:\t7\nflags:\t00\n").unwrap();
        assert_eq!((i.pos, i.mnt_id), (7, None));
        assert_eq!(Access::from_flags(i.flags), Access::Read);
    }

    #[test]
    fn fdinfo_malformed() {
        assert_eq!(parse_fdinfo(b""), None);
        assert_eq!(parse_fdinfo(b"pos:\t1\n"), None);
        assert_eq!(parse_fdinfo(b"pos:\tx\nflags:\t0\n"), None);
        // 8 is not an octal digit.
        assert_eq!(parse_fdinfo(b"pos:\t1\nflags:\t08\n"), None);
        assert_eq!(parse_octal(b"77777777777777"), None);
    }

    #[test]
    fn watch_matches_truncated_comm() {
        let w = Watch {
            pids: vec![7],
            names: vec!["tar".into(), "very-long-backup-tool".into()],
        };
        assert!(w.matches(7, "x"));
        assert!(w.matches(1, "tar"));
        assert!(!w.matches(1, "ta"));
        assert!(w.matches(1, "very-long-backu"));
        assert!(!w.matches(1, "very-long"));
    }

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
        let _ = child.kill();
        let _ = child.wait();
    }

    #[test]
    fn positions_are_read_every_scan_even_for_idle_processes() {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&[1u8; 100]).unwrap();
        let me = ProcKey {
            pid: std::process::id() as i32,
            start_time: 1,
        };
        let r = Reader::new("/");
        let raw = f.as_raw_fd();
        let mut sc = FdScanner::new(Watch {
            pids: vec![me.pid],
            names: vec![],
        });
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

    #[test]
    fn directories_and_o_path_are_skipped_but_not_o_tmpfile() {
        // Flags as fdinfo prints them (this machine, x86-64).
        assert!(is_dir_or_path(0o2200000)); // opendir: O_DIRECTORY|O_CLOEXEC
        assert!(is_dir_or_path(0o12000000)); // O_PATH|O_CLOEXEC
        assert!(!is_dir_or_path(0o22700002)); // tempfile(): O_TMPFILE|O_RDWR
        assert!(!is_dir_or_path(0o2100000)); // a plain read
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
        let pid = std::process::id() as i32;
        let r = Reader::new("/");
        let mut sc = FdScanner::new(Watch {
            pids: vec![pid],
            names: vec![],
        });
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
        let pid = std::process::id() as i32;
        let r = Reader::new("/");
        let mut sc = FdScanner::new(Watch {
            pids: vec![pid],
            names: vec![],
        });
        let mut lister = ProcLister::default();
        let procs = lister.list(&r, &sc.watch.clone(), false).unwrap();
        let snap = sc.scan(&r, &procs);
        let fds: Vec<i32> = snap.procs[0].fds.iter().map(|e| e.fd).collect();
        assert!(
            !fds.contains(&rx.as_raw_fd()) && !fds.contains(&tx.as_raw_fd()),
            "{fds:?}"
        );
    }
}
