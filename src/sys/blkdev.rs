//! Block-device ioctls (include/uapi/linux/fs.h), all of them reads: the
//! size in bytes and the logical / physical sector sizes. rustix has no
//! named wrappers for these, so they are raw ioctls here, each writing one
//! integer into a variable we own.

use std::io;
use std::os::fd::{AsFd, AsRawFd};

/// `BLKGETSIZE64 = _IOR(0x12, 114, size_t)`: the size in bytes.
const BLKGETSIZE64: libc::Ioctl = 0x8008_1272;

/// Size in bytes of the block device open as `fd`.
pub fn size_bytes(fd: impl AsFd) -> io::Result<u64> {
    let mut size: u64 = 0;
    // SAFETY: BLKGETSIZE64 writes one u64 (size_t on 64-bit Linux; the
    // kernel writes a u64 on every ABI) into `size`, which we own.
    let rc = unsafe { libc::ioctl(fd.as_fd().as_raw_fd(), BLKGETSIZE64, &mut size) };
    if rc == 0 {
        Ok(size)
    } else {
        Err(io::Error::last_os_error())
    }
}

fn get_int(fd: impl AsFd, req: libc::Ioctl) -> Option<u32> {
    let mut v: libc::c_int = 0;
    // SAFETY: BLKSSZGET and BLKPBSZGET write one int into `v`, which we own.
    let rc = unsafe { libc::ioctl(fd.as_fd().as_raw_fd(), req, &mut v) };
    (rc == 0 && v > 0).then_some(v as u32)
}

/// Logical sector size (`BLKSSZGET`), when the ioctl answers and is positive.
pub fn logical_block(fd: impl AsFd) -> Option<u32> {
    get_int(fd, libc::BLKSSZGET)
}

/// Physical sector size (`BLKPBSZGET`).
pub fn physical_block(fd: impl AsFd) -> Option<u32> {
    get_int(fd, libc::BLKPBSZGET)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_is_not_a_block_device() {
        let f = tempfile::tempfile().unwrap();
        let e = size_bytes(&f).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOTTY), "{e}");
        assert_eq!(physical_block(&f), None);
        assert_eq!(logical_block(&f), None);
    }
}
