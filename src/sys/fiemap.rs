//! File extents through `FS_IOC_FIEMAP`, always without
//! `FIEMAP_FLAG_SYNC` (which would write out dirty pages, other processes'
//! data included): extents whose data is still only in the page cache show
//! up as delayed-allocation extents instead.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// `_IOWR('f', 11, struct fiemap)`.
const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
/// Extents asked for per call.
const BATCH: usize = 256;

pub const EXTENT_LAST: u32 = 0x1;
pub const EXTENT_UNKNOWN: u32 = 0x2;
pub const EXTENT_DELALLOC: u32 = 0x4;
pub const EXTENT_ENCODED: u32 = 0x8;
pub const EXTENT_DATA_INLINE: u32 = 0x200;
pub const EXTENT_UNWRITTEN: u32 = 0x800;
pub const EXTENT_SHARED: u32 = 0x2000;

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct RawExtent {
    logical: u64,
    physical: u64,
    length: u64,
    reserved64: [u64; 2],
    flags: u32,
    reserved: [u32; 3],
}

#[repr(C)]
struct Request {
    start: u64,
    length: u64,
    flags: u32,
    mapped_extents: u32,
    extent_count: u32,
    reserved: u32,
    extents: [RawExtent; BATCH],
}

/// One extent: bytes `[logical, logical+length)` of the file are at byte
/// `physical` of the filesystem's device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    pub logical: u64,
    pub physical: u64,
    pub length: u64,
    pub flags: u32,
}

/// The extents of `f` from byte 0 to `len`, at most `max` of them; the
/// flag says whether the list was cut at `max`. Errors: the filesystem has
/// no FIEMAP (EOPNOTSUPP, tmpfs before 6.x, FUSE, NFS) or another failure.
pub fn extents(f: &File, len: u64, max: usize) -> io::Result<(Vec<Extent>, bool)> {
    let mut out = Vec::new();
    let mut start = 0u64;
    // Boxed: the request is 14 KiB.
    let mut req = Box::new(Request {
        start: 0,
        length: 0,
        flags: 0,
        mapped_extents: 0,
        extent_count: BATCH as u32,
        reserved: 0,
        extents: [RawExtent::default(); BATCH],
    });
    while start < len {
        req.start = start;
        req.length = len - start;
        req.flags = 0; // never FIEMAP_FLAG_SYNC
        req.mapped_extents = 0;
        req.extent_count = BATCH as u32;
        // SAFETY: FS_IOC_FIEMAP reads the header and writes at most
        // extent_count extents into the array that follows it, all inside
        // the boxed Request we own.
        let rc = unsafe { libc::ioctl(f.as_raw_fd(), FS_IOC_FIEMAP, &mut *req as *mut Request) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = (req.mapped_extents as usize).min(BATCH);
        if n == 0 {
            break;
        }
        let mut last = false;
        for e in &req.extents[..n] {
            if out.len() >= max {
                return Ok((out, true));
            }
            out.push(Extent {
                logical: e.logical,
                physical: e.physical,
                length: e.length,
                flags: e.flags,
            });
            last |= e.flags & EXTENT_LAST != 0;
        }
        let end = req.extents[n - 1].logical.saturating_add(req.extents[n - 1].length);
        if last || end <= start {
            break;
        }
        start = end;
    }
    Ok((out, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_layout_matches_the_kernel() {
        assert_eq!(std::mem::size_of::<RawExtent>(), 56);
        assert_eq!(std::mem::offset_of!(Request, extents), 32);
    }
}
