//! getdents64(2) into a plain byte buffer. rustix wraps it only behind its
//! `RawDir` iterator, which always makes the final call that returns 0; the
//! fd scanner lists thousands of small procfs directories per second and
//! skips that call when the buffer came back far from full.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Fill `buf` with `struct linux_dirent64` records of the open directory
/// `dir`; returns the number of bytes written (0 at the end).
pub fn getdents64(dir: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        // SAFETY: `buf` is writable for `buf.len()` bytes and the kernel
        // writes at most that many; `dir` is an open descriptor borrowed for
        // the duration of the call.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, dir.as_raw_fd(), buf.as_mut_ptr(), buf.len()) };
        if n >= 0 {
            return usize::try_from(n).map_err(io::Error::other);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn lists_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["a", "bb", "123"] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        let d = std::fs::File::open(dir.path()).unwrap();
        let mut buf = vec![0u8; 4096];
        let mut names = Vec::new();
        loop {
            let n = getdents64(d.as_fd(), &mut buf).unwrap();
            if n == 0 {
                break;
            }
            let mut off = 0;
            while off < n {
                let reclen = usize::from(u16::from_ne_bytes([buf[off + 16], buf[off + 17]]));
                let name = buf[off + 19..off + reclen].split(|&c| c == 0).next().unwrap();
                names.push(String::from_utf8(name.to_vec()).unwrap());
                off += reclen;
            }
        }
        names.sort();
        assert_eq!(names, [".", "..", "123", "a", "bb"]);
    }
}
