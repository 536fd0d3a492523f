//! Which devices a process's I/O can go to: the devices of its open files.
//!
//! A regular file lives on its filesystem's device (`st_dev`), a block
//! device is itself (`st_rdev`). Partitions are folded to their disk;
//! filesystems on anonymous devices (major 0) are named by type (overlay,
//! btrfs with its source device, NFS, FUSE, ...); memory and pseudo
//! filesystems (tmpfs, proc, ...) hold no storage and are left out.

use serde::Serialize;

use crate::collect::diskstats::DiskStat;
use crate::collect::mountinfo::AnonMount;
use crate::collect::sysblock::DeviceInfo;

/// Where a process–device link comes from. Per-request tracing, where it is
/// available, is exact and takes precedence over open files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DevSource {
    /// Traced block requests issued by the process.
    Trace,
    /// The process has a file open on the device (it may or may not be
    /// doing I/O to it).
    OpenFiles,
}

/// One device a process is linked to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct ProcDevice {
    /// Kernel name of the whole disk ("vda", "loop0", "dm-0"), or the
    /// filesystem of an anonymous device ("overlay", "btrfs:vdb1", "nfs").
    pub name: String,
    pub source: DevSource,
}

/// Filesystems that hold no storage of their own.
const NO_STORAGE: [&str; 22] = [
    "tmpfs",
    "ramfs",
    "proc",
    "sysfs",
    "devtmpfs",
    "devpts",
    "cgroup",
    "cgroup2",
    "debugfs",
    "tracefs",
    "securityfs",
    "pstore",
    "bpf",
    "mqueue",
    "hugetlbfs",
    "configfs",
    "fusectl",
    "autofs",
    "binfmt_misc",
    "efivarfs",
    "nsfs",
    "rpc_pipefs",
];

/// Major and minor of a Linux `dev_t` (glibc's encoding).
pub fn major_minor(dev: u64) -> (u32, u32) {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    (major as u32, minor as u32)
}

/// The name a filesystem on an anonymous device is shown by (its type;
/// btrfs with its source device), or `None` when it holds no storage.
pub fn anon_name(m: &AnonMount) -> Option<String> {
    if NO_STORAGE.contains(&m.fs_type.as_str()) {
        return None;
    }
    Some(match m.fs_type.as_str() {
        "btrfs" => match m.source.strip_prefix("/dev/") {
            Some(src) => format!("btrfs:{}", src.rsplit('/').next().unwrap_or(src)),
            None => "btrfs".to_string(),
        },
        t => t.to_string(),
    })
}

/// The name a device number is shown by, or `None` when it holds no storage
/// (or is not known).
pub fn device_name(dev: u64, disks: &[DiskStat], infos: &[DeviceInfo], anon: &[AnonMount]) -> Option<String> {
    let (major, minor) = major_minor(dev);
    if major == 0 {
        return anon_name(anon.iter().find(|m| m.minor == minor)?);
    }
    let d = disks.iter().find(|d| d.major == major && d.minor == minor)?;
    let parent = infos.iter().find(|i| i.name == d.name).and_then(|i| i.parent.clone());
    Some(parent.unwrap_or_else(|| d.name.clone()))
}

/// The devices of a process's open files (their `dev`), sorted, each once.
pub fn devices_of(
    devs: impl IntoIterator<Item = u64>,
    disks: &[DiskStat],
    infos: &[DeviceInfo],
    anon: &[AnonMount],
) -> Vec<ProcDevice> {
    let mut devs: Vec<u64> = devs.into_iter().collect();
    devs.sort_unstable();
    devs.dedup();
    let mut out: Vec<ProcDevice> = devs
        .into_iter()
        .filter_map(|d| device_name(d, disks, infos, anon))
        .map(|name| ProcDevice {
            name,
            source: DevSource::OpenFiles,
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Whether `dev` (a row's name) is one of these devices: `name` is the
/// device or its whole disk.
pub fn on_device(devices: &[ProcDevice], name: &str, parent: Option<&str>) -> bool {
    devices
        .iter()
        .any(|d| d.name == name || Some(d.name.as_str()) == parent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::fdinfo::{FdTarget, RawFd};

    fn makedev(major: u64, minor: u64) -> u64 {
        ((major & 0xfffff000) << 32) | ((major & 0xfff) << 8) | ((minor & 0xffffff00) << 12) | (minor & 0xff)
    }

    fn disk(name: &str, major: u32, minor: u32) -> DiskStat {
        let line = format!("{major} {minor} {name} 1 0 8 1 0 0 0 0 0 1 1");
        crate::collect::diskstats::parse(line.as_bytes()).disks.remove(0)
    }

    fn fd(dev: u64) -> RawFd {
        RawFd {
            fd: 3,
            target: FdTarget::File,
            pos: 0,
            flags: 0,
            mnt_id: None,
            ino: 1,
            dev,
            size: Some(0),
            remote: false,
            path: None,
        }
    }

    #[test]
    fn dev_t_encoding_round_trips() {
        assert_eq!(major_minor(makedev(254, 1)), (254, 1));
        assert_eq!(major_minor(makedev(259, 300)), (259, 300));
        assert_eq!(major_minor(makedev(4095 + 1, 1 << 20)), (4096, 1 << 20));
        // What the kernel gives userspace for 8:17 (sdb1).
        assert_eq!(major_minor(0x811), (8, 17));
    }

    #[test]
    fn partitions_fold_and_anonymous_devices_are_named() {
        let disks = [disk("sda", 8, 0), disk("sda1", 8, 1), disk("loop0", 7, 0)];
        let infos = vec![DeviceInfo {
            parent: Some("sda".into()),
            ..DeviceInfo::example("sda1")
        }];
        let anon = vec![
            AnonMount {
                minor: 35,
                fs_type: "btrfs".into(),
                source: "/dev/vdb1".into(),
                mount_point: String::new(),
            },
            AnonMount {
                minor: 50,
                fs_type: "overlay".into(),
                source: "overlay".into(),
                mount_point: String::new(),
            },
            AnonMount {
                minor: 21,
                fs_type: "tmpfs".into(),
                source: "tmpfs".into(),
                mount_point: String::new(),
            },
        ];
        let fds = [
            fd(makedev(8, 1)),
            fd(makedev(8, 0)),
            fd(makedev(7, 0)),
            fd(makedev(0, 35)),
            fd(makedev(0, 50)),
            fd(makedev(0, 21)),
            fd(makedev(0, 99)),
            fd(makedev(8, 1)),
        ];
        let names: Vec<String> = devices_of(fds.iter().map(|f| f.dev), &disks, &infos, &anon)
            .into_iter()
            .map(|d| {
                assert_eq!(d.source, DevSource::OpenFiles);
                d.name
            })
            .collect();
        assert_eq!(names, ["btrfs:vdb1", "loop0", "overlay", "sda"]);
        let devs = devices_of(fds.iter().map(|f| f.dev), &disks, &infos, &anon);
        assert!(on_device(&devs, "sda1", Some("sda")));
        assert!(on_device(&devs, "loop0", None));
        assert!(!on_device(&devs, "sdb", None));
    }
}
