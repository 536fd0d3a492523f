//! Mounted filesystems, so each device row can say where it is mounted.
//!
//! On the live system this uses sysinfo (mount point, filesystem type, free
//! space). Under a replay root it parses `<root>/proc/mounts` instead, since
//! sysinfo only knows the live machine; space is then unknown.

use std::collections::HashMap;
use std::path::Path;

use serde::Serialize;

use super::Reader;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MountInfo {
    pub mount_point: String,
    pub fs_type: String,
    pub total_bytes: Option<u64>,
    pub available_bytes: Option<u64>,
}

/// Mounts keyed by kernel device name ("vda1", "dm-0").
pub type MountMap = HashMap<String, Vec<MountInfo>>;

/// Kernel device name for a mount source: "/dev/vda1" → "vda1",
/// "/dev/mapper/vg-root" → "dm-0" (following the symlink on the live system).
fn device_name(source: &str, live: bool) -> Option<String> {
    if !source.starts_with("/dev/") {
        return None;
    }
    let resolved = if live {
        std::fs::canonicalize(source)
            .ok()
            .and_then(|p| p.to_str().map(str::to_string))
    } else {
        None
    };
    let path = resolved.unwrap_or_else(|| source.to_string());
    Path::new(&path)
        .file_name()
        .and_then(|n| n.to_str())
        .map(str::to_string)
}

/// Undo the octal escapes of /proc/mounts ("\040" for a space).
fn unescape_mount_field(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            let v = (b[i + 1] - b'0') as u32 * 64 + (b[i + 2] - b'0') as u32 * 8 + (b[i + 3] - b'0') as u32;
            out.push(v as u8);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parse /proc/mounts text into a map (no space information).
pub fn parse_proc_mounts(text: &str) -> MountMap {
    let mut map = MountMap::new();
    for line in text.lines() {
        let mut f = line.split_ascii_whitespace();
        let (Some(src), Some(mp), Some(fs)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if let Some(dev) = device_name(&unescape_mount_field(src), false) {
            map.entry(dev).or_default().push(MountInfo {
                mount_point: unescape_mount_field(mp),
                fs_type: fs.to_string(),
                total_bytes: None,
                available_bytes: None,
            });
        }
    }
    map
}

/// Read the mounts: sysinfo on the live system, /proc/mounts under a replay root.
pub fn read_mounts(r: &mut Reader) -> MountMap {
    if !r.is_live() {
        return r
            .read_string("/proc/mounts")
            .map(|t| parse_proc_mounts(&t))
            .unwrap_or_default();
    }
    let mut map = MountMap::new();
    let Ok(disks) = sysinfo::Disks::new_with_refreshed_list() else {
        return map;
    };
    for d in disks.iter() {
        let Some(dev) = d.name().to_str().and_then(|n| device_name(n, true)) else {
            continue;
        };
        let entry = map.entry(dev).or_default();
        let mp = d.mount_point().to_string_lossy().into_owned();
        // A filesystem bind-mounted in several places is listed once per place;
        // keep them all but never the same mount point twice.
        if entry.iter().any(|m| m.mount_point == mp) {
            continue;
        }
        entry.push(MountInfo {
            mount_point: mp,
            fs_type: d.file_system().to_string_lossy().into_owned(),
            total_bytes: Some(d.total_space()),
            available_bytes: Some(d.available_space()),
        });
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_mounts_with_escapes() {
        let m = parse_proc_mounts(
            "proc /proc proc rw 0 0\n/dev/sda1 /mnt/my\\040disk ext4 rw 0 0\n/dev/sda1 /srv ext4 rw 0 0\n/dev/mapper/vg0-root / xfs rw 0 0\nbad\n",
        );
        assert_eq!(m["sda1"].len(), 2);
        assert_eq!(m["sda1"][0].mount_point, "/mnt/my disk");
        assert_eq!(m["vg0-root"][0].fs_type, "xfs");
        assert!(!m.contains_key("proc"));
    }
}
