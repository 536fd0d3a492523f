//! What the fd scanner reports: the parsed `fdinfo` of an fd, how and what
//! it opens, and the open files of the processes scanned in one sample.

use std::borrow::Cow;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::collect::parse_u64;
use crate::collect::process::{ProcIo, ProcKey, RawProc};

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
pub(super) fn is_dir_or_path(flags: u32) -> bool {
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
    /// Open fds not read in this sample (0: every fd was read, so a file
    /// missing from `fds` is closed). A table bigger than the scan's budget
    /// is read in parts, and only its moving fds are in `fds`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unread: u32,
    /// For a table read in parts: the devices of its files seen in the
    /// last whole sweep (`fds` has only the moving ones).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devs: Vec<u64>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
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
    /// Files the processes the page-cache events came from have mapped,
    /// where their fds did not name them (see [`super::maps`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mapped: Vec<super::maps::MappedFile>,
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn directories_and_o_path_are_skipped_but_not_o_tmpfile() {
        // Flags as fdinfo prints them (this machine, x86-64).
        assert!(is_dir_or_path(0o2200000)); // opendir: O_DIRECTORY|O_CLOEXEC
        assert!(is_dir_or_path(0o12000000)); // O_PATH|O_CLOEXEC
        assert!(!is_dir_or_path(0o22700002)); // tempfile(): O_TMPFILE|O_RDWR
        assert!(!is_dir_or_path(0o2100000)); // a plain read
    }
}
