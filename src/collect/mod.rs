//! Collection: the only code that touches /proc and /sys.
//!
//! Every read goes through a [`Reader`], which resolves paths under a
//! configurable root (default "/") so that tests and `--root` can replay a
//! captured tree, and which reads each file with one `read` into a reused
//! buffer. Parsers are pure functions over `&[u8]`.

pub mod diskstats;
pub mod mounts;
pub mod process;
pub mod sample;
pub mod sysblock;
pub mod system;

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

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

/// Reads files under a root directory into one reused buffer.
#[derive(Debug)]
pub struct Reader {
    root: PathBuf,
    buf: Vec<u8>,
}

impl Reader {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Reader {
            root: root.into(),
            buf: Vec::with_capacity(64 * 1024),
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
        let path = self.path(rel);
        let n = self.read_abs(&path).map_err(|error| ReadError { path, error })?;
        Ok(&self.buf[..n])
    }

    fn read_abs(&mut self, path: &Path) -> io::Result<usize> {
        let mut f = File::open(path)?;
        read_into(&mut f, &mut self.buf)
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

/// Read everything from `f` into `buf` (cleared first), growing it only when
/// the file does not fit. procfs files are generated on the first `read`, so a
/// buffer large enough for the file means a single `read` call plus the one
/// that sees EOF.
///
/// `buf` is kept initialized to its full length between calls (only growth
/// is zero-filled, once); the returned count says how much of it is the file.
pub fn read_into(f: &mut impl Read, buf: &mut Vec<u8>) -> io::Result<usize> {
    if buf.len() < 4096 {
        buf.resize(4096, 0);
    }
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(len * 2, 0);
        }
        match f.read(&mut buf[len..]) {
            Ok(0) => return Ok(len),
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
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
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we own; CLOCK_MONOTONIC
    // is always supported on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64).saturating_mul(1_000_000_000) + ts.tv_nsec as u64
}

/// CPU time used by this process so far, in nanoseconds (for benchmarks).
pub fn process_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: as above, with a clock every Linux kernel has.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    (ts.tv_sec as u64).saturating_mul(1_000_000_000) + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

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
