//! What lies under a target: a block device, no device at all (tmpfs,
//! FUSE, network filesystems), or a device that cannot be named (btrfs,
//! overlayfs, ZFS: anonymous device numbers); and for regular files, where
//! their bytes are (FIEMAP, never with `FIEMAP_FLAG_SYNC`): written,
//! unwritten (fallocated), holes, or not yet allocated — and at which
//! position of the disk a file offset lies.

use std::fs::File;
use std::path::Path;

use serde::Serialize;

use super::sweep::Zone;
use super::target::DeviceHints;
use crate::collect::Reader;
use crate::sys::fiemap::{self, Extent};

/// What serves the target's reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Backing {
    /// A block device with a `/proc/diskstats` line.
    Device,
    /// No block device under this filesystem (memory, network, a FUSE daemon).
    NoDevice { filesystem: String },
    /// A block device is there, but the filesystem's anonymous device
    /// number does not say which.
    Unmappable { filesystem: String },
}

/// `statfs` magic numbers of filesystems without a device of their own,
/// and of those with anonymous device numbers (the second element: true).
const FILESYSTEMS: &[(u64, &str, bool)] = &[
    (0x0102_1994, "tmpfs", false),
    (0x8584_58f6, "ramfs", false),
    (0x6573_5546, "FUSE", false),
    (0x6969, "NFS", false),
    (0xff53_4d42, "CIFS", false),
    (0xfe53_4d42, "SMB2", false),
    (0x517b, "SMB", false),
    (0x0102_1997, "9p", false),
    (0x00c3_6400, "CephFS", false),
    (0x6b41_4653, "AFS", false),
    (0x5346_414f, "AFS", false),
    (0x0bd0_0bd0, "Lustre", false),
    (0x9fa0, "proc", false),
    (0x6265_6572, "sysfs", false),
    (0x9123_683e, "btrfs", true),
    (0x794c_7630, "overlayfs", true),
    (0x2fc1_2fc1, "ZFS", true),
    (0xca45_1a4e, "bcachefs", true),
];

/// Classify a target whose device number led to no block device
/// (`has_device` false) by its filesystem type.
pub fn backing(f: &File, has_device: bool) -> Backing {
    if has_device {
        return Backing::Device;
    }
    let magic = rustix::fs::fstatfs(f).ok().map(|s| s.f_type as u64);
    let known = magic.and_then(|m| FILESYSTEMS.iter().find(|(x, _, _)| *x == m));
    match (known, magic) {
        (Some((_, name, true)), _) => Backing::Unmappable {
            filesystem: (*name).to_string(),
        },
        (Some((_, name, false)), _) => Backing::NoDevice {
            filesystem: (*name).to_string(),
        },
        (None, Some(m)) => Backing::NoDevice {
            filesystem: format!("filesystem type {m:#x}"),
        },
        (None, None) => Backing::NoDevice {
            filesystem: "unknown filesystem".into(),
        },
    }
}

/// Where a regular file's bytes are.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FileLayout {
    pub extents: usize,
    /// More extents than were mapped (the counts cover the mapped part).
    pub truncated: bool,
    pub written_bytes: u64,
    /// Preallocated (fallocate) and never written: reads return zeros
    /// without touching the device.
    pub unwritten_bytes: u64,
    /// Holes: no extent at all.
    pub hole_bytes: u64,
    /// Delayed allocation or unknown location: data still in the page cache.
    pub pending_bytes: u64,
    /// Start of the partition holding the filesystem, bytes from the start
    /// of its disk (0 for a whole disk).
    pub partition_start: Option<u64>,
    /// Why file offsets cannot be turned into disk positions, if they
    /// cannot.
    pub unmappable: Option<String>,
    #[serde(skip)]
    pub map: Vec<Extent>,
}

/// Extents mapped at most (each 24 bytes kept).
const MAX_EXTENTS: usize = 200_000;

impl FileLayout {
    /// The layout of `f` (`size` bytes), or the reason FIEMAP failed.
    pub fn read(f: &File, size: u64, hints: Option<&DeviceHints>, root: &Path) -> Result<FileLayout, String> {
        let (map, truncated) =
            fiemap::extents(f, size, MAX_EXTENTS).map_err(|e| format!("FIEMAP is not available here ({e})"))?;
        let mut l = FileLayout {
            extents: map.len(),
            truncated,
            ..Default::default()
        };
        let mut covered = 0u64;
        let mut encoded = false;
        for e in &map {
            let len = e.length.min(size.saturating_sub(e.logical));
            covered += len;
            if e.flags & fiemap::EXTENT_UNWRITTEN != 0 {
                l.unwritten_bytes += len;
            } else if e.flags & (fiemap::EXTENT_DELALLOC | fiemap::EXTENT_UNKNOWN) != 0 {
                l.pending_bytes += len;
            } else {
                l.written_bytes += len;
            }
            encoded |= e.flags & (fiemap::EXTENT_ENCODED | fiemap::EXTENT_DATA_INLINE) != 0;
        }
        if !truncated {
            l.hole_bytes = size.saturating_sub(covered);
        }
        l.unmappable = match hints {
            None => Some("no block device is known for this file".into()),
            Some(h) if !h.slaves.is_empty() || h.disk.starts_with("dm-") || h.disk.starts_with("md") => Some(format!(
                "{} is a dm/md device: its positions are not positions on a disk",
                h.disk
            )),
            Some(_) if encoded => Some("the file has compressed or inline extents".into()),
            Some(_) => None,
        };
        if let Some(h) = hints {
            l.partition_start = if h.name == h.disk {
                Some(0)
            } else {
                Reader::new(root)
                    .read_u64(format!("/sys/class/block/{}/start", h.name))
                    .map(|s| s * 512)
            };
            if l.partition_start.is_none() && l.unmappable.is_none() {
                l.unmappable = Some(format!("the start of partition {} is unknown", h.name));
            }
        }
        l.map = map;
        Ok(l)
    }

    /// Byte position on the whole disk of file offset `off`, where known.
    pub fn disk_position(&self, off: u64) -> Option<u64> {
        if self.unmappable.is_some() {
            return None;
        }
        let i = self.map.partition_point(|e| e.logical <= off).checked_sub(1)?;
        let e = self.map[i];
        let written = e.flags & (fiemap::EXTENT_UNWRITTEN | fiemap::EXTENT_DELALLOC | fiemap::EXTENT_UNKNOWN) == 0;
        (off < e.logical + e.length && written)
            .then(|| self.partition_start.unwrap_or(0) + e.physical + (off - e.logical))
    }

    /// Fraction of `size` that is unwritten, holes, or pending.
    pub fn fractions(&self, size: u64) -> (f64, f64) {
        let s = size.max(1) as f64;
        (self.unwritten_bytes as f64 / s, self.hole_bytes as f64 / s)
    }
}

/// Share of the disk a file's zones must span for their profile to say
/// anything about the disk's zones.
const MIN_SPAN: f64 = 0.5;

/// A regular file's zone sweep: puts each zone at its position on the
/// disk (`disk_bytes` long) and returns the first/last 10% ratio of the
/// zones ordered by that position — `None` when the positions are unknown
/// or span less than half the disk — and a note saying which.
pub fn place_zones(zones: &mut [Zone], layout: Option<&FileLayout>, disk_bytes: Option<u64>) -> (Option<f64>, String) {
    let why_not = match layout {
        None => Some("its extents are unknown".to_string()),
        Some(l) => l.unmappable.clone(),
    };
    if let Some(why) = why_not {
        return (
            None,
            format!(
                "the zone sweep read file offsets that cannot be placed on the disk ({why}): its profile says nothing about the disk's zones"
            ),
        );
    }
    let Some(l) = layout else {
        return (None, String::new());
    };
    for z in zones.iter_mut() {
        z.disk_position = l.disk_position(z.offset);
    }
    let mut placed: Vec<Zone> = zones.iter().filter(|z| z.disk_position.is_some()).cloned().collect();
    placed.sort_by_key(|z| z.disk_position);
    let lo = placed.first().and_then(|z| z.disk_position).unwrap_or(0);
    let hi = placed.last().and_then(|z| z.disk_position).unwrap_or(0);
    if placed.is_empty() {
        return (
            None,
            "none of the zones lies in a written extent of the file: the sweep read nothing from the disk".into(),
        );
    }
    let span = disk_bytes.filter(|d| *d > 0).map(|d| (hi - lo) as f64 / d as f64);
    match span {
        Some(f) if f >= MIN_SPAN && placed.len() >= 5 => (
            super::sweep::summarize(&placed).3,
            format!(
                "zones placed on the disk through FIEMAP: {} of {} zones, spanning {:.0}% of the disk (ratio by disk position)",
                placed.len(),
                zones.len(),
                f * 100.0
            ),
        ),
        _ => (
            None,
            format!(
                "the file's zones span {} of the disk: too little to show zoned recording",
                span.map_or_else(|| "an unknown share".into(), |f| format!("only {:.1}%", f * 100.0))
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(logical: u64, physical: u64, length: u64, flags: u32) -> Extent {
        Extent {
            logical,
            physical,
            length,
            flags,
        }
    }

    #[test]
    fn file_offsets_map_to_disk_positions() {
        let l = FileLayout {
            partition_start: Some(1 << 20),
            map: vec![
                ext(0, 4096 * 100, 8192, 0),
                ext(16384, 4096 * 900, 4096, fiemap::EXTENT_UNWRITTEN),
                ext(65536, 4096 * 5000, 65536, fiemap::EXTENT_LAST),
            ],
            ..Default::default()
        };
        assert_eq!(l.disk_position(0), Some((1 << 20) + 409_600));
        assert_eq!(l.disk_position(8191), Some((1 << 20) + 409_600 + 8191));
        assert_eq!(l.disk_position(8192), None, "a hole");
        assert_eq!(l.disk_position(16384), None, "unwritten: never read from the disk");
        assert_eq!(l.disk_position(70_000), Some((1 << 20) + 4096 * 5000 + 70_000 - 65536));
        assert_eq!(l.disk_position(200_000), None, "past the last extent");
        let dm = FileLayout {
            unmappable: Some("dm".into()),
            ..l
        };
        assert_eq!(dm.disk_position(0), None);
    }

    fn zones(n: u64, step: u64) -> Vec<Zone> {
        (0..n)
            .map(|i| Zone {
                index: i as usize,
                offset: i * step,
                bytes: 1,
                secs: 1.0,
                mb_per_s: 100.0 + i as f64,
                disk_position: None,
            })
            .collect()
    }

    #[test]
    fn zones_of_a_file_are_ordered_by_disk_position() {
        // A file in two extents stored in reverse order at both ends of a
        // 1000-unit disk: file zones 0-4 are at the inner end.
        let l = FileLayout {
            partition_start: Some(0),
            map: vec![ext(0, 900, 500, 0), ext(500, 0, 500, fiemap::EXTENT_LAST)],
            ..Default::default()
        };
        let mut z = zones(10, 100);
        let (ratio, note) = place_zones(&mut z, Some(&l), Some(1000));
        assert_eq!(z[0].disk_position, Some(900));
        assert_eq!(z[5].disk_position, Some(0));
        // Ordered by position, zone 5 (105 MB/s) comes first and zone 4
        // (104 MB/s) last.
        assert!((ratio.unwrap() - 105.0 / 104.0).abs() < 1e-12, "{ratio:?}");
        assert!(note.contains("10 of 10 zones"), "{note}");
        // The same file on a disk 100× larger: too small a span.
        let (ratio, note) = place_zones(&mut zones(10, 100), Some(&l), Some(100_000));
        assert_eq!(ratio, None);
        assert!(note.contains("only 1.3%"), "{note}");
        // dm device: cannot place at all.
        let dm = FileLayout {
            unmappable: Some("dm-0 is a dm/md device".into()),
            ..l
        };
        let (ratio, note) = place_zones(&mut zones(10, 100), Some(&dm), Some(1000));
        assert_eq!(ratio, None);
        assert!(
            note.contains("cannot be placed on the disk (dm-0 is a dm/md device)"),
            "{note}"
        );
    }
}
