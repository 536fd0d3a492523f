//! Collection: the only code that touches /proc and /sys.
//!
//! Every read goes through a [`Reader`], which resolves paths under a
//! configurable root (default "/") so that tests and `--root` can read a
//! captured /proc and /sys tree, and which reads each file with one `read` into a reused
//! buffer. Parsers are pure functions over `&[u8]`.

pub mod activity;
pub mod align;
pub mod blocked;
pub mod cgroup;
pub mod delayacct;
pub mod devfacts;
pub mod diskstats;
pub mod fdinfo;
pub mod jobproc;
pub mod mountinfo;
pub mod mounts;
pub mod procdir;
pub mod process;
pub mod procinfo;
pub mod sample;
pub mod sysblock;
pub mod system;
pub mod taskstats;
pub mod trace;
pub mod tree;
pub mod vmstat;
pub mod walk;

use std::ffi::CStr;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::OFlags;
use rustix::time::ClockId;

pub use sample::{Collector, RawSample};

/// An error that says what was being read.
#[derive(Debug)]
pub struct ReadError {
    pub path: PathBuf,
    pub error: io::Error,
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "reading {}: {}", self.path.display(), self.error)
    }
}

impl std::error::Error for ReadError {}

/// No file is read beyond this many bytes (a `/proc/diskstats` with
/// 50,000 devices is ~7 MB); what is cut off is not seen.
pub const READ_CAP: usize = 64 << 20;

/// Reads files under a root directory into one reused buffer, never more
/// than [`READ_CAP`] bytes of one file.
///
/// Under a captured tree (a root other than "/") every file is opened
/// with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV)`
/// relative to the root and `O_NONBLOCK`, and only regular files are read:
/// a symlink (to `/dev/zero`, or out of the tree), a mount inside the
/// tree, a FIFO or a device in the tree is an error, never a hang or an
/// endless read. Directories are listed and stat'ed the same way (see
/// [`tree`]).
#[derive(Debug)]
pub struct Reader {
    root: PathBuf,
    buf: Vec<u8>,
    /// `<root>/proc`, opened on first use, so per-process files are opened
    /// with `openat` relative to it (no path building, a shorter lookup).
    proc_dir: Option<OwnedFd>,
    /// The root directory of a captured tree, opened on first use.
    root_dir: std::sync::OnceLock<OwnedFd>,
}

impl Reader {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Reader {
            root: root.into(),
            buf: Vec::with_capacity(64 * 1024),
            proc_dir: None,
            root_dir: std::sync::OnceLock::new(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// True when reading the live system rather than a captured tree.
    pub fn is_live(&self) -> bool {
        self.root == Path::new("/")
    }

    /// `rel` (absolute like "/proc/diskstats" or relative) under the root.
    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        let rel = rel.as_ref();
        self.root.join(rel.strip_prefix("/").unwrap_or(rel))
    }

    /// Read a whole file under the root. The file is read with as few `read`
    /// calls as possible (one, when it fits the buffer) into a buffer that is
    /// reused between calls, so a steady-state sample allocates nothing here.
    pub fn read(&mut self, rel: impl AsRef<Path>) -> Result<&[u8], ReadError> {
        self.read_capped(rel, READ_CAP)
    }

    /// [`Reader::read`] of at most `cap` bytes: a longer file is cut.
    pub fn read_capped(&mut self, rel: impl AsRef<Path>, cap: usize) -> Result<&[u8], ReadError> {
        let rel = rel.as_ref();
        let res = self
            .open(rel)
            .and_then(|f| read_fd(f.as_fd(), &mut self.buf, false, false, cap));
        res.map_err(|error| ReadError {
            path: self.path(rel),
            error,
        })?;
        Ok(&self.buf)
    }

    /// Open a file under the root for reading (see the type's doc for
    /// captured trees).
    /// Open a file under the root for reading (to keep it open and read
    /// it again with [`Reader::reread`]).
    pub fn open(&self, rel: &Path) -> io::Result<OwnedFd> {
        if self.is_live() {
            return File::open(self.path(rel)).map(OwnedFd::from);
        }
        let fd = self.open_beneath(rel, OFlags::RDONLY | OFlags::NONBLOCK, tree::STRICT)?;
        let st = rustix::fs::fstat(&fd)?;
        if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "not a regular file (captured trees hold regular files only)",
            ));
        }
        Ok(fd)
    }

    /// Read a file under the root that must not be larger than `limit`
    /// bytes (files whose size the system does not bound, such as a
    /// cgroup's process list or a container's config): a larger file is an
    /// error naming it, not an unbounded allocation.
    pub fn read_limited(&mut self, rel: impl AsRef<Path>, limit: usize) -> Result<&[u8], ReadError> {
        let rel = rel.as_ref();
        let path = self.path(rel);
        let res = self.open(rel).and_then(|fd| {
            self.buf.clear();
            let n = File::from(fd).take(limit as u64 + 1).read_to_end(&mut self.buf)?;
            if n > limit {
                return Err(io::Error::other(format!("larger than {limit} bytes")));
            }
            Ok(())
        });
        res.map_err(|error| ReadError { path, error })?;
        Ok(&self.buf)
    }

    /// Read `/proc/<pid>/<file>` under the root, for the per-process hot
    /// path. The file is opened with `openat` relative to a cached
    /// `<root>/proc` descriptor, and read with a single `read` when it fits
    /// the buffer: only for files the kernel generates in one piece
    /// (`stat`, `io`, `statm`: a short read is the whole file).
    pub fn read_pid_file(&mut self, pid: i32, file: &str) -> Result<&[u8], ReadError> {
        let res = self
            .open_pid_file(pid, file)
            .and_then(|fd| read_fd(fd.as_fd(), &mut self.buf, true, false, READ_CAP));
        res.map_err(|error| ReadError {
            path: self.path(format!("/proc/{pid}/{file}")),
            error,
        })?;
        Ok(&self.buf)
    }

    /// Open `/proc/<pid>/<file>` under the root (see [`Reader::read_pid_file`]),
    /// to keep it open and read it again with [`Reader::reread`].
    pub fn open_pid_file(&mut self, pid: i32, file: &str) -> io::Result<OwnedFd> {
        if !self.is_live() {
            return self.open(Path::new(&format!("/proc/{pid}/{file}")));
        }
        let dir: &OwnedFd = match self.proc_dir {
            Some(ref fd) => fd,
            None => {
                let p = self.path("/proc");
                self.proc_dir
                    .insert(open_at(rustix::fs::CWD, p.as_path(), OFlags::DIRECTORY)?)
            }
        };
        // "<pid>/<file>\0" in a stack buffer: no allocation per open.
        let mut name = [0u8; 64];
        let mut len = 0;
        let mut digits = [0u8; 11];
        for part in [decimal(pid, &mut digits), b"/", file.as_bytes()] {
            if len + part.len() >= name.len() || part.contains(&0) {
                return Err(io::Error::from(io::ErrorKind::InvalidInput));
            }
            name[len..len + part.len()].copy_from_slice(part);
            len += part.len();
        }
        let name = CStr::from_bytes_until_nul(&name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        open_at(dir.as_fd(), name, OFlags::empty())
    }

    /// Read an open single-record procfs file (see [`Reader::read_pid_file`])
    /// again from its start: the kernel generates fresh contents, so a kept
    /// descriptor saves the open and close of every sample. A file of a
    /// process that has ended fails with ESRCH, even if its pid was reused.
    pub fn reread(&mut self, fd: &OwnedFd) -> io::Result<&[u8]> {
        read_fd(fd.as_fd(), &mut self.buf, true, true, READ_CAP)?;
        Ok(&self.buf)
    }

    /// What the last successful read returned.
    pub fn last(&self) -> &[u8] {
        &self.buf
    }

    /// Read a file under the root into an owned string (lossy UTF-8, trimmed).
    pub fn read_string(&mut self, rel: impl AsRef<Path>) -> Result<String, ReadError> {
        let b = self.read(rel)?;
        Ok(String::from_utf8_lossy(b).trim().to_string())
    }

    /// Read a small file holding one unsigned number.
    pub fn read_u64(&mut self, rel: impl AsRef<Path>) -> Option<u64> {
        let b = self.read(rel).ok()?;
        parse_u64(trim_ascii(b))
    }
}

/// Check a `--root` at once: a missing root, or one without a `proc`
/// directory, is an error that says so (instead of reports with nothing).
pub fn check_root(root: &Path) -> Result<(), String> {
    if root == Path::new("/") {
        return Ok(());
    }
    let shown = root.display();
    match std::fs::metadata(root) {
        Err(e) => Err(format!("--root {shown}: {e}")),
        Ok(m) if !m.is_dir() => Err(format!("--root {shown}: not a directory")),
        // Not followed: a tree's `proc` must be its own directory.
        Ok(_) if !std::fs::symlink_metadata(root.join("proc")).is_ok_and(|m| m.is_dir()) => Err(format!(
            "--root {shown}: no proc/ directory in it, so not a captured tree (tests/fixtures/capture.sh DIR captures one)"
        )),
        Ok(_) => Ok(()),
    }
}

/// Read everything from `f` into `buf` (cleared first), growing it only when
/// the file does not fit.
pub fn read_into(f: &mut impl Read, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.clear();
    f.take(READ_CAP as u64).read_to_end(buf).map(drop)
}

/// Read everything from `fd` into `buf` (cleared first) with `read(2)`
/// straight into the buffer's spare capacity: no zeroing of the buffer, and
/// one `read` when the file fits plus the one that sees EOF. With
/// `one_shot`, a read that did not fill the buffer ends the file: right for
/// procfs files generated as one record (seq_file `single_open`), wrong for
/// multi-record files such as /proc/diskstats, whose reads stop at a record
/// boundary before the buffer is full. With `from_start`, reads with
/// `pread` from offset 0 whatever the file position. Stops after `cap`
/// bytes: the rest of a longer file is not read.
fn read_fd(fd: BorrowedFd<'_>, buf: &mut Vec<u8>, one_shot: bool, from_start: bool, cap: usize) -> io::Result<()> {
    buf.clear();
    if buf.capacity() < 4096 {
        buf.reserve(4096);
    }
    loop {
        if buf.len() >= cap {
            buf.truncate(cap);
            return Ok(());
        }
        if buf.len() == buf.capacity() {
            buf.reserve_exact(buf.len().min(cap - buf.len()));
        }
        let asked = buf.capacity() - buf.len();
        let offset = buf.len() as u64;
        // rustix reads into the spare capacity and marks only the bytes the
        // kernel wrote as initialised.
        let spare = rustix::buffer::spare_capacity(buf);
        let n = match if from_start {
            rustix::io::pread(fd, spare, offset)
        } else {
            rustix::io::read(fd, spare)
        } {
            Ok(n) => n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        };
        if n == 0 || (one_shot && n < asked) {
            return Ok(());
        }
    }
}

/// `openat(dir, path, O_RDONLY | O_CLOEXEC | flags)` as an owned descriptor.
fn open_at(dir: BorrowedFd<'_>, path: impl rustix::path::Arg, flags: OFlags) -> io::Result<OwnedFd> {
    Ok(rustix::fs::openat(
        dir,
        path,
        OFlags::RDONLY | OFlags::CLOEXEC | flags,
        rustix::fs::Mode::empty(),
    )?)
}

/// `n` in decimal (with a '-' when negative) in the end of `buf`, for paths
/// built on the stack in the per-process hot path.
pub fn decimal(n: i32, buf: &mut [u8; 11]) -> &[u8] {
    let mut i = buf.len();
    let mut v = n.unsigned_abs();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if n < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    &buf[i..]
}

/// Parse an unsigned decimal number; `None` on anything else (including
/// overflow), never a panic.
pub fn parse_u64(b: &[u8]) -> Option<u64> {
    if b.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some(v)
}

/// Parse a signed decimal number.
pub fn parse_i64(b: &[u8]) -> Option<i64> {
    match b.split_first() {
        Some((b'-', rest)) => parse_u64(rest).and_then(|v| i64::try_from(v).ok()).map(|v| -v),
        _ => parse_u64(b).and_then(|v| i64::try_from(v).ok()),
    }
}

pub fn trim_ascii(b: &[u8]) -> &[u8] {
    b.trim_ascii()
}

/// CLOCK_MONOTONIC in nanoseconds: the timestamp every raw sample carries.
pub fn monotonic_ns() -> u64 {
    timespec_ns(rustix::time::clock_gettime(ClockId::Monotonic))
}

/// CLOCK_REALTIME in nanoseconds since the Unix epoch: the wall-clock time
/// a raw sample carries next to its monotonic stamp (0 before 1970).
pub fn realtime_ns() -> u64 {
    timespec_ns(rustix::time::clock_gettime(ClockId::Realtime))
}

/// CPU time used by the calling thread so far, in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    timespec_ns(rustix::time::clock_gettime(ClockId::ThreadCPUTime))
}

/// CPU time used by this process so far, in nanoseconds (for benchmarks).
pub fn process_cpu_ns() -> u64 {
    timespec_ns(rustix::time::clock_gettime(ClockId::ProcessCPUTime))
}

fn timespec_ns(ts: rustix::time::Timespec) -> u64 {
    u64::try_from(ts.tv_sec)
        .unwrap_or(0)
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::try_from(ts.tv_nsec).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_digits() {
        let mut b = [0u8; 11];
        assert_eq!(decimal(0, &mut b), b"0");
        assert_eq!(decimal(4242, &mut b), b"4242");
        assert_eq!(decimal(-5, &mut b), b"-5");
        assert_eq!(decimal(i32::MIN, &mut b), b"-2147483648");
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_u64(b"0"), Some(0));
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b"12a"), None);
        assert_eq!(parse_u64(b""), None);
        assert_eq!(parse_i64(b"-20"), Some(-20));
        assert_eq!(parse_i64(b"7"), Some(7));
    }

    #[test]
    fn missing_or_empty_roots_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let e = check_root(&dir.path().join("nonexistent")).unwrap_err();
        assert!(e.contains("No such file"), "{e}");
        let e = check_root(dir.path()).unwrap_err();
        assert!(e.contains("no proc/"), "{e}");
        std::fs::create_dir(dir.path().join("proc")).unwrap();
        assert_eq!(check_root(dir.path()), Ok(()));
        assert_eq!(check_root(Path::new("/")), Ok(()));
    }

    #[test]
    fn captured_trees_read_regular_files_only_and_never_leave_the_root() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let proc = dir.path().join("proc");
        std::fs::create_dir_all(proc.join("1")).unwrap();
        std::fs::write(dir.path().join("secret"), "s").unwrap();
        symlink("/dev/zero", proc.join("meminfo")).unwrap();
        symlink("../secret", proc.join("stat")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            proc.join("diskstats").as_path(),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        std::fs::write(proc.join("1/stat"), "ok").unwrap();
        symlink("/proc/self/io", proc.join("1/io")).unwrap();
        let mut r = Reader::new(dir.path());
        // A FIFO: an error at once (O_NONBLOCK, then not a regular file).
        let t = std::time::Instant::now();
        let e = r.read("/proc/diskstats").unwrap_err();
        assert!(t.elapsed() < std::time::Duration::from_secs(1));
        assert!(e.to_string().contains("not a regular file"), "{e}");
        // Symlinks, to /dev/zero or out of the tree: refused.
        assert!(r.read("/proc/meminfo").is_err());
        assert!(r.read("/proc/stat").is_err());
        assert!(r.read("/proc/../../../../etc/passwd").is_err());
        assert!(r.read_pid_file(1, "io").is_err());
        assert_eq!(r.read_pid_file(1, "stat").unwrap(), b"ok");
    }

    #[test]
    fn reads_are_capped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        std::fs::write(dir.path().join("proc/big"), vec![b'x'; 10_000]).unwrap();
        let mut r = Reader::new(dir.path());
        assert_eq!(r.read_capped("/proc/big", 4097).unwrap().len(), 4097);
        assert_eq!(r.read("/proc/big").unwrap().len(), 10_000);
    }

    #[test]
    fn reader_resolves_under_root_and_reuses_buffer() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        let big = "x".repeat(100_000);
        std::fs::write(dir.path().join("proc/big"), &big).unwrap();
        std::fs::write(dir.path().join("proc/n"), "42\n").unwrap();
        let mut r = Reader::new(dir.path());
        assert_eq!(r.read("/proc/big").unwrap().len(), 100_000);
        assert_eq!(r.read_u64("/proc/n"), Some(42));
        let err = r.read("/proc/missing").unwrap_err();
        assert!(err.to_string().contains("proc/missing"), "{err}");
    }
}
