//! Mounting and unmounting a pseudo filesystem (tracefs for block tracing).

use std::io;
use std::path::Path;

use rustix::mount::{MountFlags, UnmountFlags};

/// Mount a pseudo filesystem of type `fstype` (no backing device) at `dir`;
/// `source` is the name `/proc/mounts` shows for it.
pub fn mount_pseudo(source: &str, fstype: &str, dir: &Path) -> io::Result<()> {
    rustix::mount::mount(source, dir, fstype, MountFlags::empty(), None).map_err(io::Error::from)
}

/// Unmount `dir` (fails with EBUSY while it is in use).
pub fn unmount(dir: &Path) -> io::Result<()> {
    rustix::mount::unmount(dir, UnmountFlags::empty()).map_err(io::Error::from)
}
