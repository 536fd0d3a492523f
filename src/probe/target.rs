//! Opening a probe target read-only, and the facts needed to read it
//! correctly: size, direct-I/O alignment, the block device that serves it
//! (for the diskstats check) and the sysfs hints about that device.
//!
//! The target is opened `O_RDONLY | O_DIRECT | O_CLOEXEC` and nothing else.
//! Where the filesystem refuses `O_DIRECT` (EINVAL), it is opened
//! `O_RDONLY | O_CLOEXEC` and read through the page cache with
//! `posix_fadvise` (RANDOM for the file, DONTNEED on each range before it is
//! read), and the result says so. The only ioctls used are the sector-size
//! queries, and only when `statx` cannot give the direct-I/O alignment.

use std::fs::{File, OpenOptions};
use std::io;
use std::num::NonZeroU64;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

use rustix::fs::{Advice, AtFlags, SeekFrom, StatxFlags};
use serde::Serialize;

use crate::collect::Reader;
use crate::collect::sysblock::{self, DevKind};
use crate::format;
use crate::sys::blkdev;

/// What the target is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    BlockDevice,
    RegularFile,
    /// The sync probe's directory (it writes its own file there).
    Directory,
}

/// How the page cache is kept out of the measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheMode {
    /// `O_DIRECT`: reads bypass the page cache.
    Direct,
    /// `O_DIRECT` refused: buffered reads, `posix_fadvise` RANDOM and
    /// DONTNEED on each range before reading it.
    BufferedFadvise,
    /// The sync probe: buffered writes, each followed by `fdatasync`.
    SyncWrites,
}

impl CacheMode {
    pub fn describe(self) -> &'static str {
        match self {
            CacheMode::Direct => "O_DIRECT (page cache bypassed)",
            CacheMode::BufferedFadvise => {
                "buffered: O_DIRECT refused by the filesystem; posix_fadvise RANDOM + DONTNEED on each range"
            }
            CacheMode::SyncWrites => "buffered writes, each followed by fdatasync",
        }
    }
}

/// The block device whose `/proc/diskstats` line counts the target's reads,
/// and what sysfs says about the whole disk under it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DeviceHints {
    /// diskstats name of the device holding the target ("vda1", "loop3").
    pub name: String,
    /// The whole disk (same as `name` unless a partition).
    pub disk: String,
    pub major: u32,
    pub minor: u32,
    pub rotational: Option<bool>,
    pub model: Option<String>,
    /// Kernel driver of the disk ("virtio_blk", "nvme", "sd").
    pub driver: Option<String>,
    pub logical_block_size: Option<u64>,
    pub physical_block_size: Option<u64>,
    /// Largest request the device accepts, bytes (`max_sectors_kb`).
    pub max_request_bytes: Option<u64>,
    pub scheduler: Option<String>,
    /// Loop device: its backing file and whether it uses direct I/O.
    pub loop_backing_file: Option<String>,
    pub loop_direct_io: Option<bool>,
    /// Devices the disk is stacked on (dm, md).
    pub slaves: Vec<String>,
}

/// An opened target. The file is only ever read with `pread`.
#[derive(Debug)]
pub struct Target {
    pub file: File,
    /// Path as given, escaped for display.
    pub display: String,
    pub kind: TargetKind,
    pub size: u64,
    pub cache: CacheMode,
    /// Offsets and lengths must be multiples of this.
    pub align: u64,
    /// Buffers must be aligned to this (at least the page size).
    pub mem_align: usize,
    /// Where `align` came from.
    pub align_source: String,
    /// Regular files: bytes actually allocated on disk (`st_blocks` × 512).
    pub allocated_bytes: Option<u64>,
    /// `None` when no block device serves the target (tmpfs, btrfs'
    /// anonymous device numbers, network filesystems).
    pub device: Option<DeviceHints>,
}

/// A path as shown in messages and results: control characters and
/// invalid UTF-8 escaped.
pub fn describe_path(p: &Path) -> String {
    format::escape_bytes(p.as_os_str().as_bytes())
}

/// Open `path` for probing; refuses anything but a block device or a
/// regular file with a message that says why. `root` is where /sys and
/// /proc are read (normally "/").
pub fn open(path: &Path, root: &Path) -> anyhow::Result<Target> {
    let shown = describe_path(path);
    let meta = std::fs::metadata(path)
        .map_err(|e| anyhow::anyhow!("cannot open {shown}: {e}{}", needs_root(&e, TargetKind::RegularFile)))?;
    let checked = (meta.dev(), meta.ino());
    let ft = meta.file_type();
    let kind = if ft.is_block_device() {
        TargetKind::BlockDevice
    } else if ft.is_file() {
        TargetKind::RegularFile
    } else {
        let what = if ft.is_dir() {
            "a directory"
        } else if ft.is_char_device() {
            "a character device"
        } else if ft.is_fifo() {
            "a FIFO"
        } else if ft.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        anyhow::bail!("{shown} is {what}: a probe reads a block device, a partition or a regular file");
    };

    let (file, cache) = match open_flags(path, true) {
        Ok(f) => (f, CacheMode::Direct),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            let f = open_flags(path, false)
                .map_err(|e| anyhow::anyhow!("cannot open {shown} read-only: {e}{}", needs_root(&e, kind)))?;
            fadvise(&f, 0, 0, Advice::Random);
            (f, CacheMode::BufferedFadvise)
        }
        Err(e) => anyhow::bail!(
            "cannot open {shown} read-only with O_DIRECT: {e}{}",
            needs_root(&e, kind)
        ),
    };
    // Check again on the descriptor: the path may have been replaced between
    // the check above and the open.
    let meta = file
        .metadata()
        .map_err(|e| anyhow::anyhow!("cannot stat {shown}: {e}"))?;
    anyhow::ensure!(
        (meta.dev(), meta.ino()) == checked,
        "{shown} changed while it was being opened: not probed"
    );
    let size = match kind {
        TargetKind::RegularFile | TargetKind::Directory => meta.len(),
        TargetKind::BlockDevice => {
            device_size(&file).map_err(|e| anyhow::anyhow!("cannot read the size of {shown}: {e}"))?
        }
    };
    anyhow::ensure!(size > 0, "{shown} is empty: nothing to read");

    let (maj, min) = match kind {
        TargetKind::BlockDevice => split_dev(meta.rdev()),
        TargetKind::RegularFile | TargetKind::Directory => split_dev(meta.dev()),
    };
    let device = device_hints(root, maj, min);

    let stx = statx_dio(&file);
    let (align, mem_align, align_source) = match stx {
        Some((mem, off)) if off > 0 => (u64::from(off), mem.max(1) as usize, "statx STATX_DIOALIGN".to_string()),
        _ => {
            let lbs = match kind {
                TargetKind::BlockDevice => blkdev::logical_block(&file).map(u64::from),
                TargetKind::RegularFile | TargetKind::Directory => None,
            };
            match lbs.or(device.as_ref().and_then(|d| d.logical_block_size)) {
                Some(l) if l.is_power_of_two() => (l, 512, "logical block size".to_string()),
                _ => (4096, 4096, "default: block size unknown".to_string()),
            }
        }
    };
    let allocated_bytes = (kind == TargetKind::RegularFile).then(|| meta.blocks().saturating_mul(512));
    Ok(Target {
        file,
        display: shown,
        kind,
        size,
        cache,
        align,
        mem_align: mem_align.max(page_size()),
        align_source,
        allocated_bytes,
        device,
    })
}

impl Target {
    /// Physical block size of the device, or of the ioctl on a block device.
    pub fn physical_block(&self) -> Option<u64> {
        if self.kind == TargetKind::BlockDevice
            && let Some(p) = blkdev::physical_block(&self.file)
        {
            return Some(u64::from(p));
        }
        self.device.as_ref().and_then(|d| d.physical_block_size)
    }

    /// Evict `[off, off+len)` from the page cache (buffered mode only).
    pub fn evict(&self, off: u64, len: u64) {
        if self.cache == CacheMode::BufferedFadvise {
            fadvise(&self.file, off, len, Advice::DontNeed);
        }
    }
}

/// What to add to a refused open: probing a device needs root (or the
/// device's group), and without root a file may just not be readable.
pub fn needs_root(e: &io::Error, kind: TargetKind) -> &'static str {
    let denied = matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM));
    match (denied, crate::sys::is_root(), kind) {
        (true, false, TargetKind::BlockDevice) => {
            " (reading a block device needs root: run iolens as root, e.g. with sudo)"
        }
        (true, false, _) => " (you are not root, and it is not readable by you)",
        _ => "",
    }
}

fn open_flags(path: &Path, direct: bool) -> io::Result<File> {
    // std adds O_CLOEXEC; read(true) alone is O_RDONLY.
    let mut o = OpenOptions::new();
    o.read(true);
    if direct {
        o.custom_flags(libc::O_DIRECT);
    }
    o.open(path)
}

fn fadvise(f: &File, off: u64, len: u64, advice: Advice) {
    // Advice only: a failure changes nothing we rely on beyond what the
    // result already states.
    let _ = rustix::fs::fadvise(f, off, NonZeroU64::new(len), advice);
}

fn page_size() -> usize {
    rustix::param::page_size()
}

fn split_dev(dev: u64) -> (u32, u32) {
    (rustix::fs::major(dev), rustix::fs::minor(dev))
}

/// Size of a block device: `lseek(SEEK_END)` (no ioctl needed). Reads use
/// pread, so the offset does not matter afterwards.
fn device_size(f: &File) -> io::Result<u64> {
    Ok(rustix::fs::seek(f, SeekFrom::End(0))?)
}

/// (dio_mem_align, dio_offset_align) from statx, when the kernel and
/// filesystem report them (files: 6.1+, block devices: 6.11+).
fn statx_dio(f: &File) -> Option<(u32, u32)> {
    // The empty path with AT_EMPTY_PATH refers to the descriptor itself.
    let stx = rustix::fs::statx(f, c"", AtFlags::EMPTY_PATH, StatxFlags::DIOALIGN).ok()?;
    (stx.stx_mask & StatxFlags::DIOALIGN.bits() != 0).then_some((stx.stx_dio_mem_align, stx.stx_dio_offset_align))
}

/// Find the diskstats name of device `maj:min` through `/sys/dev/block`,
/// and the sysfs facts of its whole disk. `None` for device numbers that no
/// block device has (major 0: tmpfs, btrfs, NFS...).
pub fn device_hints(root: &Path, maj: u32, min: u32) -> Option<DeviceHints> {
    if maj == 0 {
        return None;
    }
    let mut r = Reader::new(root);
    let link = r.read_link(format!("/sys/dev/block/{maj}:{min}")).ok()?;
    let name = link.file_name()?.to_str()?.to_string();
    let devs = sysblock::read_devices(&mut r);
    let dev = devs.iter().find(|d| d.name == name)?;
    let disk_name = dev.parent.clone().unwrap_or_else(|| name.clone());
    let disk = devs.iter().find(|d| d.name == disk_name).unwrap_or(dev);
    let driver = r
        .read_link(format!("/sys/block/{disk_name}/device/driver"))
        .ok()
        .and_then(|p| p.file_name().and_then(|n| n.to_str()).map(str::to_string));
    let loop_direct_io = (disk.kind == DevKind::Loop)
        .then(|| r.read_u64(format!("/sys/block/{disk_name}/loop/dio")).map(|v| v == 1))
        .flatten();
    Some(DeviceHints {
        name,
        disk: disk_name,
        major: maj,
        minor: min,
        rotational: dev.rotational,
        model: disk.model.as_deref().map(format::escape),
        driver,
        logical_block_size: dev.logical_block_size,
        physical_block_size: dev.physical_block_size,
        max_request_bytes: dev.max_sectors_kb.map(|k| k * 1024),
        scheduler: dev.scheduler.clone(),
        loop_backing_file: disk.backing_file.as_deref().map(format::escape),
        loop_direct_io,
        slaves: disk.slaves.clone(),
    })
}

/// Read exactly `buf.len()` bytes at `off` (retrying on EINTR and short
/// reads); an error says where.
pub fn read_exact_at(t: &Target, buf: &mut [u8], off: u64) -> anyhow::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut done = 0;
    while done < buf.len() {
        match t.file.read_at(&mut buf[done..], off + done as u64) {
            Ok(0) => anyhow::bail!(
                "short read of {} at offset {off}: end of {} (did it shrink?)",
                format::binary(buf.len() as f64),
                t.display
            ),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => anyhow::bail!(
                "reading {} of {} at offset {off}: {e}",
                format::binary(buf.len() as f64),
                t.display
            ),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_of_a_partition_come_from_its_disk() {
        let fixture = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/root-6.8"));
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("sys/dev/block")).unwrap();
        // A copy, not a symlink: the reader of a replayed tree follows none.
        let ok = std::process::Command::new("cp")
            .arg("-r")
            .arg(fixture.join("sys/block"))
            .arg(root.path().join("sys/block"))
            .status()
            .unwrap()
            .success();
        assert!(ok, "copying the fixture");
        for (dev, to) in [("8:1", "../../block/sda/sda1"), ("7:0", "../../block/loop0")] {
            std::os::unix::fs::symlink(to, root.path().join("sys/dev/block").join(dev)).unwrap();
        }
        let h = device_hints(root.path(), 8, 1).unwrap();
        assert_eq!((h.name.as_str(), h.disk.as_str()), ("sda1", "sda"));
        assert_eq!(h.rotational, Some(true));
        assert_eq!(h.model.as_deref(), Some("WDC WD10EZEX-08W"));
        assert_eq!(h.physical_block_size, Some(4096));
        let lo = device_hints(root.path(), 7, 0).unwrap();
        assert_eq!(lo.loop_backing_file.as_deref(), Some("/var/tmp/disk.img"));
        // tmpfs, btrfs: anonymous device numbers; unknown numbers.
        assert_eq!(device_hints(root.path(), 0, 45), None);
        assert_eq!(device_hints(root.path(), 8, 99), None);
    }
}
