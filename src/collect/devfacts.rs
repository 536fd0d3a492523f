//! What a block device says about itself in sysfs beyond sizes and queue
//! settings: its volatile write cache and FUA, discard, zoned model, I/O
//! statistics, I/O size hints, and the transport it hangs on (SATA link,
//! NVMe over PCIe with the link's speed and width, USB, virtio), found by
//! walking up from `/sys/block/<disk>/device` under the reader's root.
//! Every value is one small sysfs file; a file the kernel does not have is
//! `None` (JSON `null`), never a default.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::Reader;

/// What kind of block device this is, from its name and sysfs layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DevKind {
    Disk,
    Partition,
    Loop,
    Dm,
    Md,
    Zram,
    Other,
}

/// How the device is attached, where sysfs says so.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transport {
    /// "nvme", "sata", "ata", "usb", "virtio", "mmc", "scsi" or "xen".
    pub kind: String,
    /// The link as the kernel words it: "6.0 Gbps" (SATA `sata_spd`),
    /// "8.0 GT/s PCIe x4" (`current_link_speed` and `current_link_width`
    /// of the PCI function), "5000 Mb/s" (USB `speed`).
    pub link: Option<String>,
    /// The most the link could do, where the kernel says: PCIe
    /// `max_link_speed` and `max_link_width`, USB `version`.
    pub link_max: Option<String>,
    /// The NVMe controller's own transport (`pcie`, `tcp`, `rdma`, `fc`, `loop`).
    pub nvme_transport: Option<String>,
}

/// Device facts from sysfs (a partition reports its disk's, and its own
/// `alignment_offset`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DeviceFacts {
    /// `queue/write_cache`: "write back" (a volatile cache: the kernel sends
    /// cache flushes) or "write through" (no flushes are sent).
    pub write_cache: Option<String>,
    /// `queue/fua`: the device takes Force Unit Access writes.
    pub fua: Option<bool>,
    /// Discard (TRIM/UNMAP) supported: `queue/discard_max_bytes` > 0.
    pub discard: Option<bool>,
    /// `queue/discard_granularity` in bytes.
    pub discard_granularity: Option<u64>,
    /// `queue/discard_max_bytes`.
    pub discard_max_bytes: Option<u64>,
    /// `queue/zoned`: "none", "host-aware" or "host-managed".
    pub zoned: Option<String>,
    /// `queue/iostats`: whether /proc/diskstats counts this device's I/O.
    pub iostats: Option<bool>,
    /// `queue/minimum_io_size` in bytes.
    pub minimum_io_size: Option<u64>,
    /// `queue/optimal_io_size` in bytes (0: the device gives none).
    pub optimal_io_size: Option<u64>,
    /// `alignment_offset` of this device or partition, in bytes: how far its
    /// start is from the device's natural alignment (0 = aligned).
    pub alignment_offset: Option<u64>,
    pub transport: Option<Transport>,
    /// Why `rotational` cannot be taken at its word on this device, if so.
    /// (A recording stores it; [`caveat`] recomputes it on replay.)
    #[serde(skip_deserializing)]
    pub rotational_caveat: Option<&'static str>,
}

const VIRTUAL_ROTATIONAL: &str = "a virtual disk: the hypervisor sets this flag (virtio-blk always says 1), it says nothing about the disk behind the host";
const LOOP_ROTATIONAL: &str = "a loop device copies this from the device holding its backing file";
const STACKED_ROTATIONAL: &str = "a stacked device (dm, md) derives this from the devices underneath";
const ZRAM_ROTATIONAL: &str = "memory, not a disk";

/// Why the `rotational` flag of a device of this kind and transport says
/// little (`disk`: the name of the whole disk).
pub fn caveat(kind: DevKind, transport: Option<&Transport>, disk: &str) -> Option<&'static str> {
    let disk_kind = match kind {
        DevKind::Partition => None,
        k => Some(k),
    };
    let c = match (disk_kind, transport) {
        (_, Some(t)) if t.kind == "virtio" || t.kind == "xen" => Some(VIRTUAL_ROTATIONAL),
        (Some(DevKind::Loop), _) => Some(LOOP_ROTATIONAL),
        (Some(DevKind::Dm | DevKind::Md), _) => Some(STACKED_ROTATIONAL),
        (Some(DevKind::Zram), _) => Some(ZRAM_ROTATIONAL),
        _ => None,
    };
    // A partition: the caveat of its disk, named from the disk's name.
    c.or_else(|| (kind == DevKind::Partition && disk.starts_with("loop")).then_some(LOOP_ROTATIONAL))
}

fn yes_no(v: Option<u64>) -> Option<bool> {
    v.map(|v| v != 0)
}

/// Read the facts of one device. `qbase` is the whole disk's sysfs
/// directory (`/sys/block/<disk>`), `base` the device's own (the same, or
/// the partition's directory).
pub fn read(r: &mut Reader, qbase: &str, base: &str, kind: DevKind) -> DeviceFacts {
    let q = |k: &str| format!("{qbase}/queue/{k}");
    let discard_max_bytes = r.read_u64(q("discard_max_bytes"));
    let transport = transport(r, qbase);
    let rotational_caveat = caveat(kind, transport.as_ref(), qbase.rsplit('/').next().unwrap_or_default());
    DeviceFacts {
        write_cache: r.read_string(q("write_cache")).ok().filter(|s| !s.is_empty()),
        fua: yes_no(r.read_u64(q("fua"))),
        discard: discard_max_bytes.map(|b| b > 0),
        discard_granularity: r.read_u64(q("discard_granularity")),
        discard_max_bytes,
        zoned: r.read_string(q("zoned")).ok().filter(|s| !s.is_empty()),
        iostats: yes_no(r.read_u64(q("iostats"))),
        minimum_io_size: r.read_u64(q("minimum_io_size")),
        optimal_io_size: r.read_u64(q("optimal_io_size")),
        alignment_offset: r.read_u64(format!("{base}/alignment_offset")),
        transport,
        rotational_caveat,
    }
}

/// A directory name of the form `<prefix><digits>` ("ata3", "virtio1").
fn numbered(name: &str, prefix: &str) -> bool {
    name.strip_prefix(prefix)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// `path` (a path under the reader's root, as [`Reader::resolve`] gives)
/// as a path from the root ("/sys/...").
fn in_root(r: &Reader, path: &Path) -> Option<PathBuf> {
    Some(Path::new("/").join(path.strip_prefix(r.root()).ok()?))
}

/// Whether `path` (under the reader's root) exists.
fn exists(r: &Reader, path: &Path) -> bool {
    in_root(r, path).is_some_and(|rel| r.exists(rel))
}

/// A short sysfs file at `path` (a path under the reader's root).
fn small_string(r: &mut Reader, path: &Path) -> Option<String> {
    let rel = in_root(r, path)?;
    let b = r.read_limited(rel, 256).ok()?;
    let s = String::from_utf8_lossy(b).trim().to_string();
    (!s.is_empty() && s != "<unknown>" && s != "Unknown").then_some(s)
}

/// For a disk whose `device` link leads into an NVMe subsystem (native
/// multipath: `/sys/devices/virtual/nvme-subsystem/nvme-subsys0`), the first
/// controller's directory (its `nvmeN` entries link to the controllers).
fn nvme_controller(r: &Reader, dev: &Path) -> Option<PathBuf> {
    let rel = in_root(r, dev)?;
    let mut ctrls: Vec<PathBuf> = r
        .list_dir(&rel)
        .ok()?
        .into_iter()
        .filter(|e| e.name_str().is_some_and(|n| numbered(n, "nvme")))
        .filter_map(|e| r.resolve(rel.join(&e.name)).ok())
        .collect();
    ctrls.sort();
    ctrls.into_iter().next()
}

/// How the disk at `qbase` (`/sys/block/<disk>`) is attached: walk up from
/// its `device` directory (resolved under the root) to the root of the
/// device tree, naming the first bus that says what it is.
pub fn transport(r: &mut Reader, qbase: &str) -> Option<Transport> {
    let top = r.path("/sys");
    let mut dev = r.resolve(format!("{qbase}/device")).ok()?;
    if dev.components().any(|c| c.as_os_str() == "nvme-subsystem") {
        dev = nvme_controller(r, &dev)?;
    }
    let mut t: Option<Transport> = None;
    let new = |kind: &str| Transport {
        kind: kind.to_string(),
        link: None,
        link_max: None,
        nvme_transport: None,
    };
    for anc in dev.ancestors() {
        if !anc.starts_with(&top) || anc == top {
            break;
        }
        let name = anc.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if t.is_none() && anc.parent().and_then(Path::file_name).is_some_and(|p| p == "nvme") {
            let mut n = new("nvme");
            n.nvme_transport = small_string(r, &anc.join("transport"));
            t = Some(n);
            continue;
        }
        if let Some(n) = t.as_mut().filter(|n| n.kind == "nvme" && n.link.is_none()) {
            // The PCI function under the controller: the PCIe link.
            if let Some(speed) = small_string(r, &anc.join("current_link_speed")) {
                let width = small_string(r, &anc.join("current_link_width"));
                n.link = Some(pcie(&speed, width.as_deref()));
                let max = small_string(r, &anc.join("max_link_speed"));
                let max_w = small_string(r, &anc.join("max_link_width"));
                n.link_max = max.map(|m| pcie(&m, max_w.as_deref()));
            }
            continue;
        }
        if t.is_some() {
            continue;
        }
        if numbered(name, "ata") {
            let digits = &name[3..];
            let spd = anc.join(format!("link{digits}/ata_link/link{digits}/sata_spd"));
            let link = small_string(r, &spd);
            let mut a = new(if link.is_some() { "sata" } else { "ata" });
            a.link = link;
            t = Some(a);
        } else if exists(r, &anc.join("idVendor")) && exists(r, &anc.join("speed")) {
            let mut u = new("usb");
            u.link = small_string(r, &anc.join("speed")).map(|s| format!("{s} Mb/s"));
            u.link_max = small_string(r, &anc.join("version")).map(|v| format!("USB {v}"));
            t = Some(u);
        } else if numbered(name, "virtio") {
            t = Some(new("virtio"));
        } else if numbered(name, "mmc") {
            t = Some(new("mmc"));
        } else if name.starts_with("vbd-") {
            t = Some(new("xen"));
        }
    }
    if t.is_none() && exists(r, &dev.join("scsi_level")) {
        t = Some(new("scsi"));
    }
    t
}

/// "8.0 GT/s PCIe" and "4" → "8.0 GT/s PCIe x4".
fn pcie(speed: &str, width: Option<&str>) -> String {
    match width {
        Some(w) => format!("{speed} x{w}"),
        None => speed.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_names() {
        assert!(numbered("ata12", "ata"));
        assert!(!numbered("ata", "ata"));
        assert!(!numbered("ata_link", "ata"));
        assert!(numbered("virtio1", "virtio"));
    }

    fn fixture() -> Vec<crate::collect::sysblock::DeviceInfo> {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/devfacts");
        crate::collect::sysblock::read_devices(&mut Reader::new(root))
    }

    fn dev<'a>(devs: &'a [crate::collect::sysblock::DeviceInfo], name: &str) -> &'a DeviceFacts {
        &devs.iter().find(|d| d.name == name).unwrap().facts
    }

    #[test]
    fn nvme_over_pcie() {
        let devs = fixture();
        let f = dev(&devs, "nvme0n1");
        let t = f.transport.as_ref().unwrap();
        assert_eq!(t.kind, "nvme");
        assert_eq!(t.nvme_transport.as_deref(), Some("pcie"));
        assert_eq!(t.link.as_deref(), Some("8.0 GT/s PCIe x4"));
        assert_eq!(t.link_max.as_deref(), Some("16.0 GT/s PCIe x4"));
        assert_eq!(f.write_cache.as_deref(), Some("write back"));
        assert_eq!(f.fua, Some(true));
        assert_eq!(f.discard, Some(true));
        assert_eq!(f.discard_granularity, Some(512));
        assert_eq!(f.optimal_io_size, Some(131072));
        assert_eq!(f.iostats, Some(true));
        assert_eq!(f.rotational_caveat, None);
        // A partition reports its disk's facts, its own alignment offset.
        let p = dev(&devs, "nvme0n1p2");
        assert_eq!(p.transport.as_ref().map(|t| t.kind.as_str()), Some("nvme"));
        assert_eq!(p.alignment_offset, Some(0));
    }

    #[test]
    fn sata_usb_sas_virtio_loop() {
        let devs = fixture();
        let sda = dev(&devs, "sda");
        let t = sda.transport.as_ref().unwrap();
        assert_eq!((t.kind.as_str(), t.link.as_deref()), ("sata", Some("6.0 Gbps")));
        assert_eq!(sda.discard, Some(false));
        assert_eq!(sda.fua, Some(false));
        assert_eq!(dev(&devs, "sda2").alignment_offset, Some(512));
        let sdb = dev(&devs, "sdb");
        let t = sdb.transport.as_ref().unwrap();
        assert_eq!(t.kind, "usb");
        assert_eq!(t.link.as_deref(), Some("5000 Mb/s"));
        assert_eq!(t.link_max.as_deref(), Some("USB 3.20"));
        assert_eq!(sdb.write_cache.as_deref(), Some("write through"));
        let sdc = dev(&devs, "sdc");
        assert_eq!(sdc.transport.as_ref().map(|t| t.kind.as_str()), Some("scsi"));
        assert_eq!(sdc.zoned.as_deref(), Some("host-managed"));
        let vda = dev(&devs, "vda");
        assert_eq!(vda.transport.as_ref().map(|t| t.kind.as_str()), Some("virtio"));
        assert_eq!(vda.rotational_caveat, Some(VIRTUAL_ROTATIONAL));
        let lo = dev(&devs, "loop0");
        assert_eq!(lo.transport, None);
        assert_eq!(lo.rotational_caveat, Some(LOOP_ROTATIONAL));
        assert_eq!(lo.write_cache.as_deref(), Some("write through"));
    }

    #[test]
    fn missing_files_are_unknown() {
        // root-6.8 was captured before these facts: all unknown, none invented.
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/root-6.8");
        let devs = crate::collect::sysblock::read_devices(&mut Reader::new(root));
        let sda = &devs.iter().find(|d| d.name == "sda").unwrap().facts;
        assert_eq!(sda.write_cache, None);
        assert_eq!(sda.fua, None);
        assert_eq!(sda.discard, None);
        assert_eq!(sda.transport, None);
        assert_eq!(sda.rotational_caveat, None);
    }

    #[test]
    fn pcie_link() {
        assert_eq!(pcie("8.0 GT/s PCIe", Some("4")), "8.0 GT/s PCIe x4");
        assert_eq!(pcie("2.5 GT/s", None), "2.5 GT/s");
    }
}
