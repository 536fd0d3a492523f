//! The reads of `/proc/<pid>/fd` and `/proc/<pid>/fdinfo` that the fd
//! scanner and the process lister do for every process: relative to an open
//! directory, into reused buffers, with names built on the stack. Syscalls
//! through rustix; the one it lacks (getdents64 into a plain buffer) is in
//! [`crate::sys::dirent`], the block-device size ioctl in
//! [`crate::sys::blkdev`].

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::fs::{Mode, OFlags};

use crate::collect::{Reader, decimal, parse_u64, read_into};

/// A NUL-terminated relative path built on the stack:
/// `<prefix><number><suffix>` (prefixes and suffixes used are short).
#[derive(Default)]
pub(crate) struct CName {
    buf: [u8; 32],
}

impl CName {
    pub(crate) fn set(&mut self, prefix: &[u8], n: i32) -> &CStr {
        self.set3(prefix, n, b"")
    }

    pub(crate) fn set3(&mut self, prefix: &[u8], n: i32, suffix: &[u8]) -> &CStr {
        let mut digits = [0u8; 11];
        let num = decimal(n, &mut digits);
        let (a, b) = (prefix.len(), prefix.len() + num.len());
        let len = b + suffix.len();
        if len >= self.buf.len() {
            return c"";
        }
        self.buf[..a].copy_from_slice(prefix);
        self.buf[a..b].copy_from_slice(num);
        self.buf[b..len].copy_from_slice(suffix);
        self.buf[len] = 0;
        CStr::from_bytes_with_nul(&self.buf[..=len]).unwrap_or(c"")
    }
}

pub(crate) fn open_dir(path: &Path) -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// The numeric entries of an open procfs directory (`/proc/<pid>/fd`,
/// `/proc`), listed with getdents64.
pub(crate) fn list_fd_numbers(dir: &OwnedFd, buf: &mut Vec<u8>, out: &mut Vec<i32>) -> io::Result<()> {
    if buf.len() < 32 * 1024 {
        buf.resize(32 * 1024, 0);
    }
    loop {
        let n = crate::sys::dirent::getdents64(dir.as_fd(), buf)?;
        parse_dirents(&buf[..n], out);
        // procfs fills the buffer until it runs out of entries: one that is
        // far from full was the last (this saves the call returning 0).
        if n + 1024 < buf.len() {
            return Ok(());
        }
    }
}

/// At most about `max` entries of an open `/proc/<pid>/fd` directory, from
/// fd number `from` on (procfs numbers its entries fd + 2, after "." and
/// ".."), so a part of a big table costs a part of its listing (procfs
/// makes a dentry for every entry it lists). Returns whether the listing
/// reached the end of the table.
pub(crate) fn list_fd_numbers_from(
    dir: &OwnedFd,
    from: i32,
    max: usize,
    buf: &mut Vec<u8>,
    out: &mut Vec<i32>,
) -> io::Result<bool> {
    // An fd's entry: 19 bytes of header, up to 11 of name and its NUL, 8-aligned.
    const ENTRY: usize = 32;
    rustix::fs::seek(
        dir,
        rustix::fs::SeekFrom::Start(u64::from(from.max(0).unsigned_abs()) + 2),
    )?;
    if buf.len() < 32 * 1024 {
        buf.resize(32 * 1024, 0);
    }
    let start = out.len();
    while out.len() - start < max {
        let want = ((max - (out.len() - start)) * ENTRY).clamp(ENTRY * 2, buf.len());
        let n = crate::sys::dirent::getdents64(dir.as_fd(), &mut buf[..want])?;
        parse_dirents(&buf[..n], out);
        // procfs fills the buffer until it runs out of entries.
        if n + 2 * ENTRY <= want {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The numeric names of the `linux_dirent64` records in `buf`.
fn parse_dirents(buf: &[u8], out: &mut Vec<i32>) {
    let mut off = 0;
    // struct linux_dirent64 { u64 d_ino; i64 d_off; u16 d_reclen; u8 d_type; char d_name[]; }
    while off + 19 <= buf.len() {
        let reclen = usize::from(u16::from_ne_bytes([buf[off + 16], buf[off + 17]]));
        if reclen < 19 || off + reclen > buf.len() {
            break;
        }
        let name = &buf[off + 19..off + reclen];
        let name = name.split(|&c| c == 0).next().unwrap_or(&[]);
        if let Some(fd) = parse_u64(name).and_then(|v| i32::try_from(v).ok()) {
            out.push(fd);
        }
        off += reclen;
    }
}

/// Read a small procfs file relative to `dir`. `buf` keeps its length
/// between calls so nothing is zeroed per read. A single-record seq_file
/// (stat, io, fdinfo) returns everything that fits in one `read`, so a short
/// read is the end: the call that would return 0 is skipped. At most
/// [`SMALL_CAP`] bytes are read (fdinfo of an epoll or inotify fd lists
/// every watch; the fields iolens uses come first).
pub(crate) fn read_small<'b>(dir: &OwnedFd, name: &CStr, buf: &'b mut Vec<u8>) -> io::Result<&'b [u8]> {
    read_at(dir, name, buf, true, SMALL_CAP)
}

/// Cap of [`read_small`].
pub const SMALL_CAP: usize = 256 * 1024;

/// Cap of a mountinfo read: ~50,000 mounts. What is cut off counts as
/// mounts that may block.
pub const MOUNTINFO_CAP: usize = 8 << 20;

/// Read a procfs file relative to `dir` into `buf`, at most `cap` bytes;
/// with `one_shot`, a short read ends it (see [`read_small`]), otherwise
/// reads go on until end of file (multi-record files such as mountinfo).
pub(crate) fn read_at<'b>(
    dir: &OwnedFd,
    name: &CStr,
    buf: &'b mut Vec<u8>,
    one_shot: bool,
    cap: usize,
) -> io::Result<&'b [u8]> {
    if buf.len() < 4096 {
        buf.resize(4096, 0);
    }
    let f = rustix::fs::openat(dir, name, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?;
    let mut len = 0;
    loop {
        let want = (buf.len() - len).min(cap - len);
        let n = match rustix::io::read(&f, &mut buf[len..len + want]) {
            Ok(n) => n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        };
        len += n;
        if n == 0 || (one_shot && n < want) || len >= cap {
            return Ok(&buf[..len]);
        }
        if len == buf.len() {
            let grown = (buf.len() * 2).min(cap);
            buf.resize(grown, 0);
        }
    }
}

pub(crate) fn read_link_at(dir: &OwnedFd, name: &CStr) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; 4096];
    let n = rustix::fs::readlinkat_raw(dir, name, &mut buf[..]).ok()?;
    buf.truncate(n);
    Some(buf)
}

/// Size of a block device: `/sys/dev/block/<maj>:<min>/size` (512-byte
/// sectors), else `BLKGETSIZE64` on an O_RDONLY open of the fd link (which
/// reopens the device read-only and never writes to it).
pub(crate) fn block_size(
    r: &Reader,
    fd_dir: &OwnedFd,
    name: &CStr,
    (maj, min): (u32, u32),
    buf: &mut Vec<u8>,
) -> Option<u64> {
    let sys = r.path(format!("/sys/dev/block/{maj}:{min}/size"));
    if let Ok(mut f) = std::fs::File::open(&sys)
        && read_into(&mut f, buf).is_ok()
        && let Some(sectors) = parse_u64(buf.trim_ascii())
    {
        return sectors.checked_mul(512);
    }
    let f = rustix::fs::openat(
        fd_dir,
        name,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK,
        Mode::empty(),
    )
    .ok()?;
    crate::sys::blkdev::size_bytes(&f).ok()
}
