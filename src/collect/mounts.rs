//! Mounted filesystems, so each device row can say where it is mounted.
//!
//! On the live system the mounts come from `/proc/self/mountinfo`, whose
//! `major:minor` names the device without any lookup; free space comes from
//! `statvfs` only for local filesystems whose mount point is not reached
//! through a FUSE, network or automount mount (see [`MountTable`]): a
//! `statvfs` there can wait forever (or trigger an automount). Those mounts
//! say "n/a" for space. Under a captured tree (`--root`) `<root>/proc/mounts` is parsed
//! instead (captured trees hold it); space is then unknown.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::Reader;
use super::mountinfo::{self, MountTable, unescape};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MountInfo {
    pub mount_point: String,
    pub fs_type: String,
    pub total_bytes: Option<u64>,
    pub available_bytes: Option<u64>,
}

/// Mounts keyed by kernel device name ("vda1", "dm-0").
pub type MountMap = HashMap<String, Vec<MountInfo>>;

/// Kernel device name for a mount source by its text alone: "/dev/vda1" →
/// "vda1", "/dev/mapper/vg-root" → "vg-root" (matched against dm names).
fn device_name(source: &str) -> Option<String> {
    let rest = source.strip_prefix("/dev/")?;
    let name = rest.rsplit('/').next()?;
    (!name.is_empty() && name != "." && name != "..").then(|| name.to_string())
}

fn push(map: &mut MountMap, dev: String, m: MountInfo) {
    let entry = map.entry(dev).or_default();
    // A filesystem bind-mounted in several places is listed once per place;
    // keep them all but never the same mount point twice.
    if !entry.iter().any(|e| e.mount_point == m.mount_point) {
        entry.push(m);
    }
}

/// Parse /proc/mounts text into a map (no space information).
pub fn parse_proc_mounts(text: &str) -> MountMap {
    let mut map = MountMap::new();
    for line in text.lines() {
        let mut f = line.split_ascii_whitespace();
        let (Some(src), Some(mp), Some(fs)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if let Some(dev) = device_name(&unescape(src)) {
            let m = MountInfo {
                mount_point: unescape(mp),
                fs_type: fs.to_string(),
                total_bytes: None,
                available_bytes: None,
            };
            push(&mut map, dev, m);
        }
    }
    map
}

/// Map mountinfo entries to device names: by `major:minor` through `devs`
/// (name, major, minor from /proc/diskstats), else by the source's name (a
/// btrfs mount has an anonymous device number). `space` gives the free
/// space of a mount whose mount point is safe to walk to.
pub fn map_mounts(
    table: &MountTable,
    devs: &[(String, u32, u32)],
    space: impl Fn(&str) -> Option<(u64, u64)>,
) -> MountMap {
    let by_num: HashMap<(u32, u32), &str> = devs.iter().map(|(n, a, b)| ((*a, *b), n.as_str())).collect();
    let mut mounts: Vec<&mountinfo::Mount> = table.iter().collect();
    mounts.sort_by_key(|m| m.id);
    let mut map = MountMap::new();
    for m in mounts {
        let dev = match by_num.get(&(m.major, m.minor)) {
            Some(n) => n.to_string(),
            None => match device_name(&m.source) {
                Some(n) => n,
                None => continue,
            },
        };
        let sp = (!table.path_may_block(m.id)).then(|| space(&m.mount_point)).flatten();
        push(
            &mut map,
            dev,
            MountInfo {
                mount_point: m.mount_point.clone(),
                fs_type: m.fs_type.clone(),
                total_bytes: sp.map(|s| s.0),
                available_bytes: sp.map(|s| s.1),
            },
        );
    }
    map
}

/// `statvfs` of a local mount point: (total, available) bytes.
fn statvfs_space(path: &str) -> Option<(u64, u64)> {
    let s = rustix::fs::statvfs(path).ok()?;
    Some((s.f_blocks.checked_mul(s.f_frsize)?, s.f_bavail.checked_mul(s.f_frsize)?))
}

/// Read the mounts: /proc/self/mountinfo on the live system, /proc/mounts
/// under a captured tree. `devs` are (name, major, minor) of the block devices.
pub fn read_mounts(r: &mut Reader, devs: &[(String, u32, u32)]) -> MountMap {
    if !r.is_live() {
        return r
            .read_string("/proc/mounts")
            .map(|t| parse_proc_mounts(&t))
            .unwrap_or_default();
    }
    let table = match r.read("/proc/self/mountinfo") {
        Ok(b) => MountTable::new(mountinfo::parse(b)),
        Err(_) => return MountMap::new(),
    };
    map_mounts(&table, devs, statvfs_space)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_mounts_with_escapes() {
        let m = parse_proc_mounts(
            "proc /proc proc rw 0 0\n/dev/sda1 /mnt/my\\040disk ext4 rw 0 0\n/dev/sda1 /srv ext4 rw 0 0\n/dev/mapper/vg0-root / xfs rw 0 0\nbad\n/dev/.. /x ext4 rw 0 0\n",
        );
        assert_eq!(m["sda1"].len(), 2);
        assert_eq!(m["sda1"][0].mount_point, "/mnt/my disk");
        assert_eq!(m["vg0-root"][0].fs_type, "xfs");
        assert!(!m.contains_key("proc"));
        assert!(!m.contains_key(".."));
    }

    #[test]
    fn maps_by_device_number_and_never_stats_through_fuse() {
        let table = MountTable::new(mountinfo::parse(
            b"22 1 252:1 / / rw - ext4 /dev/root rw\n\
              40 22 0:35 / /mnt/s rw - fuse.sshfs h:/ rw\n\
              41 40 7:0 / /mnt/s/in rw - xfs /dev/loop0 rw\n\
              50 22 0:40 / /data rw - btrfs /dev/vdb rw\n\
              51 22 8:17 / /usb rw - fuseblk /dev/sdb1 rw\n",
        ));
        let devs = vec![
            ("vda1".to_string(), 252, 1),
            ("loop0".to_string(), 7, 0),
            ("sdb1".to_string(), 8, 17),
        ];
        let asked = std::cell::RefCell::new(Vec::new());
        let map = map_mounts(&table, &devs, |p| {
            asked.borrow_mut().push(p.to_string());
            Some((100, 40))
        });
        assert_eq!(map["vda1"][0].mount_point, "/");
        assert_eq!(map["vda1"][0].available_bytes, Some(40));
        assert_eq!(map["vdb"][0].fs_type, "btrfs");
        assert_eq!(map["loop0"][0].available_bytes, None);
        assert_eq!(map["sdb1"][0].total_bytes, None);
        assert_eq!(*asked.borrow(), vec!["/".to_string(), "/data".to_string()]);
    }
}
