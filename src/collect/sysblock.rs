//! Per-device facts from `/sys/block/<dev>/` (and `/sys/block/<dev>/<part>/`
//! for partitions): queue settings, sizes, model, and the stacking relations
//! (partition → disk, dm/md/loop holders and slaves).

use serde::{Deserialize, Serialize};

use super::Reader;
use super::align::{self, Alignment};
pub use super::devfacts::DevKind;
use super::devfacts::{self, DeviceFacts};
use super::mounts::MountInfo;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    pub name: String,
    pub kind: DevKind,
    /// For a partition, the whole disk it belongs to.
    pub parent: Option<String>,
    /// For a partition, its first sector (512-byte units).
    pub start_sector: Option<u64>,
    /// Size in bytes (`size` × 512).
    pub size_bytes: Option<u64>,
    pub rotational: Option<bool>,
    pub logical_block_size: Option<u64>,
    pub physical_block_size: Option<u64>,
    pub model: Option<String>,
    /// For a device-mapper device, its name ("vg0-root").
    pub dm_name: Option<String>,
    pub scheduler: Option<String>,
    pub nr_requests: Option<u64>,
    pub max_sectors_kb: Option<u64>,
    pub read_ahead_kb: Option<u64>,
    pub queue_depth: Option<u64>,
    /// Increases every time a device with this name is (re)created.
    pub diskseq: Option<u64>,
    /// For a loop device, its backing file.
    pub backing_file: Option<String>,
    /// Devices stacked on top of this one (dm, md, ...).
    pub holders: Vec<String>,
    /// Devices this one is stacked on.
    pub slaves: Vec<String>,
    /// Where the device is mounted, if anywhere.
    pub mounts: Vec<MountInfo>,
    /// Write cache, FUA, discard, zoned model, transport, ...
    pub facts: DeviceFacts,
    /// A partition's start against the physical sector, the optimal I/O
    /// size and 1 MiB (`None` for whole devices).
    pub alignment: Option<Alignment>,
}

impl DeviceInfo {
    /// A device with nothing known but its name and kind (from the name),
    /// for tests and examples: the caller sets the fields that matter.
    #[cfg(any(test, feature = "test-support"))]
    pub fn example(name: &str) -> Self {
        DeviceInfo {
            name: name.to_string(),
            kind: kind_of(name),
            parent: None,
            start_sector: None,
            size_bytes: None,
            rotational: None,
            logical_block_size: None,
            physical_block_size: None,
            model: None,
            dm_name: None,
            scheduler: None,
            nr_requests: None,
            max_sectors_kb: None,
            read_ahead_kb: None,
            queue_depth: None,
            diskseq: None,
            backing_file: None,
            holders: Vec::new(),
            slaves: Vec::new(),
            mounts: Vec::new(),
            facts: DeviceFacts::default(),
            alignment: None,
        }
    }

    /// Whether this device's I/O counts toward machine totals: whole devices
    /// that do not sit on top of others (no slaves), excluding loop devices
    /// (their I/O lands on the device holding the backing file) and zram
    /// (memory). Partitions, dm and md are views of I/O counted elsewhere.
    pub fn counts_in_total(&self) -> bool {
        self.kind == DevKind::Disk && self.slaves.is_empty()
    }
}

fn kind_of(name: &str) -> DevKind {
    if name.starts_with("loop") {
        DevKind::Loop
    } else if name.starts_with("dm-") {
        DevKind::Dm
    } else if name.starts_with("md") {
        DevKind::Md
    } else if name.starts_with("zram") {
        DevKind::Zram
    } else if name.starts_with("ram") || name.starts_with("sr") || name.starts_with("fd") {
        DevKind::Other
    } else {
        DevKind::Disk
    }
}

fn opt_string(r: &mut Reader, rel: &str) -> Option<String> {
    r.read_string(rel).ok().filter(|s| !s.is_empty())
}

/// The active scheduler is the one in brackets: "none [mq-deadline] kyber".
pub fn active_scheduler(s: &str) -> Option<String> {
    let start = s.find('[')?;
    let end = s[start..].find(']')? + start;
    Some(s[start + 1..end].to_string())
}

fn read_one(r: &mut Reader, base: &str, name: &str, kind: DevKind, parent: Option<&str>) -> DeviceInfo {
    // Queue facts live on the whole disk; a partition inherits them.
    let qbase = match parent {
        Some(p) => format!("/sys/block/{p}"),
        None => base.to_string(),
    };
    let q = |k: &str| format!("{qbase}/queue/{k}");
    let mut info = DeviceInfo {
        name: name.to_string(),
        kind,
        parent: parent.map(str::to_string),
        start_sector: parent.and_then(|_| r.read_u64(format!("{base}/start"))),
        size_bytes: r.read_u64(format!("{base}/size")).map(|s| s.saturating_mul(512)),
        rotational: r.read_u64(q("rotational")).map(|v| v == 1),
        logical_block_size: r.read_u64(q("logical_block_size")),
        physical_block_size: r.read_u64(q("physical_block_size")),
        model: opt_string(r, &format!("{qbase}/device/model")),
        dm_name: opt_string(r, &format!("{base}/dm/name")),
        scheduler: opt_string(r, &q("scheduler")).and_then(|s| active_scheduler(&s)),
        nr_requests: r.read_u64(q("nr_requests")),
        max_sectors_kb: r.read_u64(q("max_sectors_kb")),
        read_ahead_kb: r.read_u64(q("read_ahead_kb")),
        queue_depth: r.read_u64(format!("{qbase}/device/queue_depth")),
        diskseq: r.read_u64(format!("{qbase}/diskseq")),
        backing_file: opt_string(r, &format!("{base}/loop/backing_file")),
        holders: r.list_names(format!("{base}/holders")),
        slaves: r.list_names(format!("{base}/slaves")),
        mounts: Vec::new(),
        facts: devfacts::read(r, &qbase, base, kind),
        alignment: None,
    };
    info.alignment = align::of(info.start_sector, info.physical_block_size, &info.facts);
    info
}

/// All block devices and their partitions, sorted by name (partitions right
/// after their disk).
pub fn read_devices(r: &mut Reader) -> Vec<DeviceInfo> {
    let mut out = Vec::new();
    for disk in r.list_names("/sys/block") {
        let base = format!("/sys/block/{disk}");
        out.push(read_one(r, &base, &disk, kind_of(&disk), None));
        for entry in r.list_names(&base) {
            let pbase = format!("{base}/{entry}");
            if r.exists(format!("{pbase}/partition")) {
                out.push(read_one(r, &pbase, &entry, DevKind::Partition, Some(&disk)));
            }
        }
    }
    out
}

/// The file behind a loop device (its `backing_file` in sysfs), as
/// (MAJ, MIN, inode), so that its cache is not counted as a second file:
/// `statx` of the path (`AT_STATX_DONT_SYNC`), but never for a file on a
/// FUSE, network or automount filesystem or under one (`mounts`: this
/// process's mountinfo; the walk could hang), nor one the kernel marks
/// " (deleted)" (the path would name another file). Live system only.
pub fn backing_inode(r: &Reader, path: &str, mounts: &super::mountinfo::MountTable) -> Option<(u32, u32, u64)> {
    if !r.is_live() || !path.starts_with('/') || path.ends_with(" (deleted)") {
        return None;
    }
    let under = |point: &str| {
        point == "/" || path == point || path.strip_prefix(point).is_some_and(|rest| rest.starts_with('/'))
    };
    // The mount the path is on: the longest mount point above it (the
    // last listed of those, the one on top).
    let on = mounts
        .iter()
        .filter(|m| under(&m.mount_point))
        .max_by_key(|m| (m.mount_point.len(), m.id))?;
    if mounts.path_may_block(on.id) {
        return None;
    }
    let sx = rustix::fs::statx(
        rustix::fs::CWD,
        path,
        rustix::fs::AtFlags::STATX_DONT_SYNC,
        rustix::fs::StatxFlags::INO,
    )
    .ok()?;
    Some((sx.stx_dev_major, sx.stx_dev_minor, sx.stx_ino))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::align::AlignVerdict;

    #[test]
    fn scheduler_in_brackets() {
        assert_eq!(
            active_scheduler("none [mq-deadline] kyber bfq"),
            Some("mq-deadline".into())
        );
        assert_eq!(active_scheduler("[none] mq-deadline"), Some("none".into()));
        assert_eq!(active_scheduler("none"), None);
    }

    #[test]
    fn reads_fixture_tree() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/root-6.8");
        let mut r = Reader::new(root);
        let devs = read_devices(&mut r);
        let names: Vec<&str> = devs.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["dm-0", "loop0", "sda", "sda1", "sda2", "sdb"]);
        let sda = &devs[2];
        assert_eq!(sda.kind, DevKind::Disk);
        assert_eq!(sda.rotational, Some(true));
        assert_eq!(sda.size_bytes, Some(1_000_204_886_016));
        assert_eq!(sda.model.as_deref(), Some("WDC WD10EZEX-08W"));
        assert_eq!(sda.scheduler.as_deref(), Some("mq-deadline"));
        assert_eq!(sda.queue_depth, Some(32));
        assert_eq!(sda.physical_block_size, Some(4096));
        assert!(sda.counts_in_total());
        let sda1 = &devs[3];
        assert_eq!(sda1.parent.as_deref(), Some("sda"));
        assert_eq!(sda1.start_sector, Some(2048));
        assert_eq!(sda1.alignment.as_ref().map(|a| a.verdict), Some(AlignVerdict::Aligned));
        assert_eq!(sda1.physical_block_size, Some(4096));
        assert!(!sda1.counts_in_total());
        let sda2 = &devs[4];
        assert_eq!(sda2.start_sector, Some(63));
        assert_eq!(
            sda2.alignment.as_ref().map(|a| a.verdict),
            Some(AlignVerdict::Misaligned)
        );
        assert_eq!(sda2.holders, ["dm-0"]);
        let dm = &devs[0];
        assert_eq!(dm.kind, DevKind::Dm);
        assert_eq!(dm.slaves, ["sda2"]);
        assert_eq!(dm.dm_name.as_deref(), Some("vg0-root"));
        assert!(!dm.counts_in_total());
        let lo = &devs[1];
        assert_eq!(lo.backing_file.as_deref(), Some("/var/tmp/disk.img"));
        assert!(!lo.counts_in_total());
        assert_eq!(devs[5].diskseq, Some(3));
    }

    #[test]
    fn backing_inodes_never_under_fuse() {
        use crate::collect::mountinfo::{MountTable, parse};
        use std::os::unix::fs::MetadataExt;
        let f = tempfile::NamedTempFile::new().unwrap();
        let path = f.path().to_str().unwrap().to_string();
        let m = f.as_file().metadata().unwrap();
        let want = (libc::major(m.dev()), libc::minor(m.dev()), m.ino());
        let r = Reader::new("/");
        let table = |text: &str| MountTable::new(parse(text.as_bytes()));
        let local = table("1 1 254:1 / / rw - ext4 /dev/vda1 rw\n");
        assert_eq!(backing_inode(&r, &path, &local), Some(want));
        // the same path under a FUSE mount (or under one via its parent):
        // not stat'ed
        let top = path.rsplit_once('/').unwrap().0;
        let fuse = table(&format!(
            "1 1 254:1 / / rw - ext4 /dev/vda1 rw\n2 1 0:50 / {top} rw - fuse.slowfs slowfs rw\n"
        ));
        assert_eq!(backing_inode(&r, &path, &fuse), None);
        let under = table(&format!(
            "1 1 254:1 / / rw - ext4 /dev/vda1 rw\n2 1 0:50 / /x rw - fuse.sshfs h:/ rw\n3 2 7:0 / {top} rw - ext4 /dev/loop0 rw\n"
        ));
        assert_eq!(backing_inode(&r, &path, &under), None);
        assert_eq!(backing_inode(&r, &format!("{path} (deleted)"), &local), None);
        assert_eq!(backing_inode(&Reader::new("/tmp"), &path, &local), None);
    }
}
