//! What kind of storage is this? Measurements decide first; sysfs hints
//! come second and are only trusted where measurements cannot tell (the
//! `rotational` flag is 1 on virtio disks and loop devices, for example).
//!
//! Rules (4–64 KiB random reads at queue depth 1, O_DIRECT):
//!
//! | p50 latency     | measured class                                    |
//! |-----------------|---------------------------------------------------|
//! | < 5 µs          | impossible for a device: reads never reached one  |
//! | < 90 µs         | NVMe-class                                        |
//! | 90 – 600 µs     | SATA-class SSD                                    |
//! | 0.6 – 2 ms      | ambiguous (busy/slow flash, network, USB)         |
//! | ≥ 2 ms          | HDD (seek + rotation)                             |
//!
//! The zone sweep refines it: the first 10% of zones ≥ 1.25× faster than the
//! last 10% is the zoned recording of a spinning disk; a median above
//! 650 MB/s is more than SATA 6 Gb/s can carry, so NVMe-class. Latency that
//! grows with seek distance (correlation > 0.3) is a moving head. Then a
//! disk that is virtual (virtio, Xen, loop, nbd/rbd, a hypervisor's model
//! string) or a loop device without direct I/O makes the verdict "virtual or
//! cache-backed": the numbers describe the host's storage path, not a disk.

use serde::Serialize;

use super::layout::Backing;
use super::target::DeviceHints;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    Hdd,
    SataSsd,
    Nvme,
    VirtualOrCached,
    Inconclusive,
    /// tmpfs, FUSE, network filesystems: nothing to characterize.
    NoDevice,
    /// btrfs, overlayfs, ZFS: a device is there, but which one is unknown.
    Unmappable,
    /// Sync probe: fdatasync p99 within the 10 ms target at every size.
    SyncFast,
    /// Sync probe: fdatasync p99 over the target at some size.
    SyncSlow,
    /// Alignment probe: every partition on its physical sector and optimal I/O size.
    Aligned,
    /// Alignment probe: on the physical sector, off the optimal I/O size.
    AlignedNotOptimal,
    /// Alignment probe: a partition off its physical sector.
    Misaligned,
    /// Seek probe: no rotational wait in the latencies.
    NoRotation,
}

impl Class {
    pub fn label(self) -> &'static str {
        match self {
            Class::Hdd => "HDD",
            Class::SataSsd => "SATA-class SSD",
            Class::Nvme => "NVMe-class",
            Class::VirtualOrCached => "virtual or cache-backed",
            Class::Inconclusive => "inconclusive",
            Class::NoDevice => "no device under this target",
            Class::Unmappable => "device cannot be mapped",
            Class::SyncFast => "fdatasync fast enough (p99 ≤ 10 ms)",
            Class::SyncSlow => "fdatasync too slow for etcd and databases (p99 > 10 ms)",
            Class::Aligned => "aligned",
            Class::AlignedNotOptimal => "aligned to the physical sector, not to the optimal I/O size",
            Class::Misaligned => "misaligned partition",
            Class::NoRotation => "no rotation found",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub class: Class,
    /// The facts that led to the class, most important first.
    pub evidence: Vec<String>,
    /// Results that cannot be real (reads that never reached a device).
    pub impossible: Vec<String>,
}

/// Everything the verdict looks at.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    pub bs: u64,
    pub rand_count: u64,
    pub p50_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    /// Which test's QD1 reads gave `p50_ms` ("random read test",
    /// "request-size sweep", …), said beside the class.
    pub lat_from: Option<&'static str>,
    pub seek_correlation: Option<f64>,
    /// Queue-depth sweep: (best IOPS over QD1, knee depth, deepest depth run).
    pub qd_speedup: Option<(f64, u32, u32)>,
    pub sweep_zones: usize,
    pub sweep_median_mbps: Option<f64>,
    pub sweep_first_last_ratio: Option<f64>,
    /// From the diskstats check: `Some(false)` when the device saw far
    /// fewer reads than were issued.
    pub reached_device: Option<bool>,
    /// The diskstats check, in words, when it failed.
    pub reach_note: Option<String>,
    /// Regular files: allocated / size.
    pub allocated_fraction: Option<f64>,
    pub has_device: bool,
    /// What serves the target when no device was found (`None`: a device,
    /// or not checked).
    pub backing: Option<Backing>,
    /// Regular files, from FIEMAP: fractions of the size in unwritten
    /// (fallocated) extents and in holes.
    pub unwritten_fraction: Option<f64>,
    pub hole_fraction: Option<f64>,
    /// A file's zone sweep whose positions on the disk are unknown or
    /// cover too little of it (the zone ratio is then not given).
    pub zones_note: Option<String>,
    pub hints: Option<DeviceHints>,
    pub buffered: bool,
}

const IMPOSSIBLE_P50_MS: f64 = 0.005;
const NVME_P50_MS: f64 = 0.09;
const SATA_P50_MS: f64 = 0.6;
const HDD_P50_MS: f64 = 2.0;
const HDD_ZONE_RATIO: f64 = 1.25;
const SATA_MAX_MBPS: f64 = 650.0;
const IMPOSSIBLE_MBPS: f64 = 20_000.0;
const SEEK_CORR: f64 = 0.3;

fn us(ms: f64) -> String {
    if ms < 1.0 {
        format!("{:.0} µs", ms * 1000.0)
    } else {
        format!("{ms:.2} ms")
    }
}

/// The class the QD1 p50 reads as, and the evidence line that names the
/// figure compared, the line it was compared with and the reads it came
/// from; the p90 follows in brackets (the class is never read from it).
fn latency_class(e: &Evidence, p50: f64) -> (Option<Class>, String) {
    let (c, cmp) = if p50 < NVME_P50_MS {
        (Some(Class::Nvme), "< 90 µs: NVMe-class".to_string())
    } else if p50 < SATA_P50_MS {
        (Some(Class::SataSsd), "within 90–600 µs: SATA-class SSD".into())
    } else if p50 < HDD_P50_MS {
        (
            None,
            "within 0.6–2 ms: between flash and a spinning disk, a busy or slow device, USB or network storage".into(),
        )
    } else {
        (Some(Class::Hdd), "≥ 2 ms: a spinning disk, seek and rotation".into())
    };
    let from = e.lat_from.map(|f| format!(" in the {f}")).unwrap_or_default();
    let p90 = e.p90_ms.map(|p| format!("p90 {}; ", us(p))).unwrap_or_default();
    let line = format!(
        "p50 {} {cmp} ({p90}{} random {} reads at QD1{from})",
        us(p50),
        e.rand_count,
        size(e.bs)
    );
    (c, line)
}

/// "4 KiB", "1 MiB", "4096 B".
fn size(bs: u64) -> String {
    match bs {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

/// A p50 within this factor of a class line may read as the next class
/// at a busier moment or in the next probe.
const FIRM_FACTOR: f64 = 1.5;

/// How stable the latency class is: how far the p50 lies from the
/// nearest class line.
pub fn firmness(p50: f64) -> String {
    let lines = [
        (NVME_P50_MS, "NVMe-class and SATA-class SSD"),
        (SATA_P50_MS, "SATA-class SSD and the 0.6–2 ms band"),
        (HDD_P50_MS, "the 0.6–2 ms band and a spinning disk"),
    ];
    let factor = |l: f64| if p50 > l { p50 / l } else { l / p50 };
    let Some((line, between)) = lines.iter().min_by(|a, b| factor(a.0).total_cmp(&factor(b.0))) else {
        return String::new();
    };
    let f = factor(*line);
    if f < FIRM_FACTOR {
        format!(
            "not firm: the p50 is within {FIRM_FACTOR}× of the {} line between {between}, so other I/O on the device can move it across and another probe may read the other class",
            us(*line)
        )
    } else {
        format!("firm: the p50 is {f:.1}× from the nearest class line ({})", us(*line))
    }
}

/// Why a disk is virtual, if its sysfs facts say so.
pub fn virtual_reason(h: &DeviceHints) -> Option<String> {
    if h.disk.starts_with("loop") {
        return Some(match (h.loop_direct_io, &h.loop_backing_file) {
            (Some(false), _) => format!(
                "{} is a loop device without direct I/O: its reads are served through the page cache of the backing file",
                h.disk
            ),
            (_, Some(f)) => format!("{} is a loop device backed by the file {f}", h.disk),
            _ => format!("{} is a loop device", h.disk),
        });
    }
    let by_driver = match h.driver.as_deref() {
        Some("virtio_blk") => Some("a virtio disk (driver virtio_blk)"),
        Some("xen_blkfront" | "vbd") => Some("a Xen virtual disk"),
        _ => None,
    };
    if let Some(d) = by_driver {
        return Some(format!("{} is {d}", h.disk));
    }
    for (prefix, what) in [
        ("vd", "a virtio disk"),
        ("xvd", "a Xen virtual disk"),
        ("nbd", "a network block device"),
        ("rbd", "a Ceph RBD device"),
        ("zram", "compressed RAM"),
        ("ram", "a RAM disk"),
        ("pmem", "persistent memory"),
    ] {
        if h.disk.starts_with(prefix) {
            return Some(format!("{} is {what}", h.disk));
        }
    }
    let model = h.model.as_deref().unwrap_or("");
    let lower = model.to_ascii_lowercase();
    for m in [
        "qemu",
        "vbox",
        "vmware",
        "virtual",
        "elastic block store",
        "persistentdisk",
        "msft",
    ] {
        if lower.contains(m) {
            return Some(format!("{}'s model \"{model}\" is a hypervisor's virtual disk", h.disk));
        }
    }
    None
}

pub fn judge(e: &Evidence) -> Verdict {
    let impossible = impossible_results(e);
    let mut evidence = Vec::new();
    let sparse = sparse_evidence(e, &mut evidence);
    if let Some(class) = not_from_a_device(e, &mut evidence, &impossible, sparse.is_some()) {
        return Verdict {
            class,
            evidence,
            impossible,
        };
    }
    let measured = measured_class(e, &mut evidence);
    let class = apply_hints(e, measured, &mut evidence);
    Verdict {
        class,
        evidence,
        impossible,
    }
}

/// Rule 1: results that cannot come from a device.
fn impossible_results(e: &Evidence) -> Vec<String> {
    let mut impossible = Vec::new();
    if let Some(p50) = e.p50_ms.filter(|p| *p < IMPOSSIBLE_P50_MS) {
        impossible.push(format!(
            "p50 of {:.1} µs is faster than any storage device: the reads were served without reaching one (sparse or unwritten extents, tmpfs, page cache, a loop device without direct I/O)",
            p50 * 1000.0
        ));
    }
    if let Some(m) = e.sweep_median_mbps.filter(|m| *m > IMPOSSIBLE_MBPS) {
        impossible.push(format!(
            "sequential {m:.0} MB/s at queue depth 1 is beyond any single device"
        ));
    }
    if e.reached_device == Some(false) {
        impossible.push(
            e.reach_note
                .clone()
                .unwrap_or_else(|| "the device's read counter did not grow with the reads issued".into()),
        );
    }
    impossible
}

/// Holes and unwritten extents, which read as zeros without touching the
/// device: their evidence lines, and the fraction last reported.
fn sparse_evidence(e: &Evidence, evidence: &mut Vec<String>) -> Option<f64> {
    let mut sparse = None;
    if let Some(f) = e.hole_fraction.filter(|f| *f >= 0.1) {
        evidence.push(format!(
            "{:.0}% of the file is holes (sparse, FIEMAP): they read as zeros without touching the device",
            f * 100.0
        ));
        sparse = Some(f);
    } else if let Some(f) = e.allocated_fraction.filter(|f| *f < 0.9 && e.hole_fraction.is_none()) {
        evidence.push(format!(
            "only {:.0}% of the file is allocated on disk: holes read as zeros without touching the device",
            f * 100.0
        ));
        sparse = Some(f);
    }
    if let Some(f) = e.unwritten_fraction.filter(|f| *f >= 0.1) {
        evidence.push(format!(
            "{:.0}% of the file is unwritten extents (preallocated with fallocate, never written; FIEMAP): the filesystem returns zeros for them without reading the device",
            f * 100.0
        ));
        sparse = Some(f);
    }
    sparse
}

/// The class when the reads demonstrably did not measure a block device (no
/// device under the filesystem, impossible results, fast reads with nothing
/// behind them); `None` when the measurements are worth judging. Adds the
/// backing and access-mode lines to `evidence` either way.
fn not_from_a_device(e: &Evidence, evidence: &mut Vec<String>, impossible: &[String], sparse: bool) -> Option<Class> {
    if let Some(Backing::NoDevice { filesystem }) = &e.backing {
        evidence.insert(
            0,
            format!(
                "{filesystem} has no block device under it: the numbers describe memory, the network or a FUSE daemon, not a disk"
            ),
        );
        if e.buffered {
            evidence
                .push("O_DIRECT was refused: buffered reads with posix_fadvise eviction, which is best-effort".into());
        }
        return Some(Class::NoDevice);
    }
    if let Some(n) = &e.zones_note {
        evidence.push(n.clone());
    }
    if !e.has_device && e.backing.is_none() {
        evidence.push("no block device serves this target (tmpfs, network filesystem, or an anonymous device number): reads cannot be checked against diskstats".into());
    }
    if e.buffered {
        evidence.push("O_DIRECT was refused: buffered reads with posix_fadvise eviction, which is best-effort".into());
    }
    if !impossible.is_empty() {
        let class = if sparse {
            evidence.insert(0, "the reads did not reach a device (holes or unwritten extents, listed below), so nothing can be said about it: probe a fully written file or the device itself".into());
            Class::Inconclusive
        } else {
            evidence.insert(0, "the reads were served from memory, not from a disk".into());
            Class::VirtualOrCached
        };
        return Some(class);
    }
    if !e.has_device && e.backing.is_none() && e.p50_ms.is_some_and(|p| p < NVME_P50_MS) {
        evidence.insert(
            0,
            "fast reads with no block device behind them: memory or a remote cache".into(),
        );
        return Some(Class::VirtualOrCached);
    }
    None
}

/// Rule 2: the class the measurements agree on (latency, seek dependence,
/// sequential sweep, queue-depth scaling), `None` when they disagree or are
/// too thin.
fn measured_class(e: &Evidence, evidence: &mut Vec<String>) -> Option<Class> {
    let lat_class = latency_evidence(e, evidence);
    let (sweep_class, sweep_flat) = sweep_evidence(e, evidence);
    if let Some((x, knee, deepest)) = e.qd_speedup {
        evidence.push(format!(
            "IOPS grew {x:.1}× from QD1 (knee QD{knee}, up to QD{deepest}): weak evidence of the device type only (spinning disks with command queueing gain 1.5–2.5×, IOPS-capped cloud volumes stay flat, flash gains more)"
        ));
    }
    let seek_bound = e.seek_correlation.is_some_and(|r| r > SEEK_CORR);
    let measured = match (lat_class, sweep_class) {
        (Some(l), Some(s)) if l == s => Some(l),
        (Some(Class::Hdd), Some(Class::Nvme))
        | (Some(Class::Nvme), Some(Class::Hdd))
        | (Some(Class::SataSsd), Some(Class::Hdd)) => {
            evidence.push("latency and sequential rate disagree".into());
            None
        }
        (Some(Class::SataSsd), Some(Class::Nvme)) => Some(Class::Nvme),
        (Some(l), _) => Some(l),
        (None, Some(Class::Hdd)) if e.p50_ms.is_none() || seek_bound => Some(Class::Hdd),
        (None, Some(s)) if e.p50_ms.is_none() => Some(s),
        _ => None,
    };
    if measured == Some(Class::Hdd) && sweep_flat {
        evidence.push("a flat sweep is unusual for a spinning disk (small target span?)".into());
    }
    measured
}

/// The class the random-read latency points to, with the seek-distance line.
fn latency_evidence(e: &Evidence, evidence: &mut Vec<String>) -> Option<Class> {
    let mut lat_class = None;
    if let Some(p50) = e.p50_ms {
        if e.rand_count < 20 {
            evidence.push(format!("only {} random reads: too few to judge latency", e.rand_count));
        } else if e.bs > 64 * 1024 {
            evidence.push(format!(
                "random reads of {} KiB: latency classes are defined for 4–64 KiB reads",
                e.bs / 1024
            ));
        } else {
            let (c, line) = latency_class(e, p50);
            evidence.push(line);
            evidence.push(firmness(p50));
            lat_class = c;
        }
    }
    if let Some(r) = e.seek_correlation {
        if r > SEEK_CORR {
            evidence.push(format!("latency grows with seek distance (r = {r:.2}): a moving head"));
        } else if lat_class == Some(Class::Hdd) {
            evidence.push(format!("latency barely depends on seek distance (r = {r:.2})"));
        }
    }
    lat_class
}

/// The class the sequential sweep points to, and whether it was flat across
/// the zones.
fn sweep_evidence(e: &Evidence, evidence: &mut Vec<String>) -> (Option<Class>, bool) {
    let mut sweep_class = None;
    let mut sweep_flat = false;
    if let Some(med) = e.sweep_median_mbps {
        let ratio = e.sweep_first_last_ratio.filter(|_| e.sweep_zones >= 5);
        if let Some(r) = ratio.filter(|r| *r >= HDD_ZONE_RATIO) {
            evidence.push(format!(
                "sequential rate falls from the outer to the inner zones (first/last 10% = {r:.2}): zoned recording of a spinning disk"
            ));
            sweep_class = Some(Class::Hdd);
        } else if med > SATA_MAX_MBPS {
            evidence.push(format!(
                "sequential median {med:.0} MB/s is more than SATA 6 Gb/s can carry"
            ));
            sweep_class = Some(Class::Nvme);
        } else {
            sweep_flat = ratio.is_some();
            let shape = ratio
                .map(|r| format!(", flat across the zones (first/last 10% = {r:.2})"))
                .unwrap_or_default();
            evidence.push(format!("sequential median {med:.0} MB/s{shape}"));
        }
    }
    (sweep_class, sweep_flat)
}

/// Rule 3: sysfs hints and the backing filesystem, applied to the measured
/// class.
fn apply_hints(e: &Evidence, measured: Option<Class>, evidence: &mut Vec<String>) -> Class {
    let mut class = measured.unwrap_or(Class::Inconclusive);
    if let Some(h) = &e.hints {
        let measured_like = match measured {
            Some(Class::Hdd) => "measured like an HDD",
            Some(Class::SataSsd) => "measured like a SATA-class SSD",
            Some(Class::Nvme) => "measured like an NVMe-class device",
            _ => "the measurements alone are inconclusive",
        };
        if let Some(why) = virtual_reason(h) {
            evidence.insert(
                0,
                format!("{why}; {measured_like}: the numbers describe the host's storage path, not a physical disk"),
            );
            class = Class::VirtualOrCached;
        } else {
            match (h.rotational, measured) {
                (Some(true), Some(Class::SataSsd | Class::Nvme)) => evidence.push(format!(
                    "sysfs says {} is rotational, which these latencies rule out: the flag is ignored (it is often wrong)",
                    h.disk
                )),
                (Some(false), Some(Class::Hdd)) => evidence.push(format!(
                    "sysfs says {} is not rotational, but the measurements say spinning disk",
                    h.disk
                )),
                (Some(r), Some(_)) => evidence.push(format!(
                    "sysfs rotational={} agrees",
                    u8::from(r)
                )),
                _ => {}
            }
            if measured.is_none() && h.driver.as_deref() == Some("nvme") {
                evidence.push(format!("{} is on the nvme driver (a hint, not a measurement)", h.disk));
                class = Class::Nvme;
            }
            if let Some(m) = &h.model {
                evidence.push(format!("model: {m}"));
            }
        }
    }
    if let Some(Backing::Unmappable { filesystem }) = &e.backing {
        let like = match measured {
            Some(c) => format!("measured like: {}", c.label()),
            None => "the measurements alone are inconclusive".into(),
        };
        evidence.insert(
            0,
            format!(
                "{filesystem} gives its files an anonymous device number: which disk serves them cannot be known here, and the reads cannot be checked against diskstats; {like}"
            ),
        );
        class = Class::Unmappable;
    }
    if class == Class::Inconclusive && evidence.is_empty() {
        evidence.push("no measurement was completed".into());
    }
    class
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hints(disk: &str, driver: Option<&str>, rotational: Option<bool>) -> DeviceHints {
        DeviceHints {
            name: disk.into(),
            disk: disk.into(),
            driver: driver.map(str::to_string),
            rotational,
            ..Default::default()
        }
    }

    fn base(p50: f64, p90: f64) -> Evidence {
        Evidence {
            bs: 4096,
            rand_count: 5000,
            p50_ms: Some(p50),
            p90_ms: Some(p90),
            reached_device: Some(true),
            has_device: true,
            ..Default::default()
        }
    }

    #[test]
    fn hdd_from_latency_zones_and_seek_distance() {
        let mut e = base(8.1, 13.0);
        e.seek_correlation = Some(0.52);
        e.sweep_zones = 20;
        e.sweep_median_mbps = Some(150.0);
        e.sweep_first_last_ratio = Some(1.9);
        e.hints = Some(hints("sda", Some("sd"), Some(true)));
        let v = judge(&e);
        assert_eq!(v.class, Class::Hdd, "{v:?}");
        assert!(v.impossible.is_empty());
        assert!(v.evidence.iter().any(|s| s.contains("8.10 ms")), "{v:?}");
        assert!(v.evidence.iter().any(|s| s.contains("first/last 10% = 1.90")));
        assert!(v.evidence.iter().any(|s| s.contains("r = 0.52")));
        assert!(v.evidence.iter().any(|s| s.contains("rotational=1 agrees")));
    }

    #[test]
    fn sata_ssd_and_a_wrong_rotational_flag() {
        let mut e = base(0.16, 0.21);
        e.sweep_zones = 20;
        e.sweep_median_mbps = Some(530.0);
        e.sweep_first_last_ratio = Some(1.01);
        e.hints = Some(hints("sdb", Some("sd"), Some(true)));
        let v = judge(&e);
        assert_eq!(v.class, Class::SataSsd, "{v:?}");
        assert!(v.evidence.iter().any(|s| s.contains("flag is ignored")), "{v:?}");
    }

    #[test]
    fn nvme_by_latency_or_by_bandwidth() {
        let mut e = base(0.07, 0.09);
        e.hints = Some(hints("nvme0n1", Some("nvme"), Some(false)));
        assert_eq!(judge(&e).class, Class::Nvme);
        // SATA-like latency but a sweep SATA cannot carry.
        let mut e = base(0.12, 0.2);
        e.sweep_zones = 20;
        e.sweep_median_mbps = Some(2400.0);
        e.sweep_first_last_ratio = Some(1.0);
        let v = judge(&e);
        assert_eq!(v.class, Class::Nvme, "{v:?}");
        assert!(v.evidence.iter().any(|s| s.contains("more than SATA")));
    }

    #[test]
    fn virtual_disk_overrides_measured_class() {
        let mut e = base(0.15, 0.3);
        e.hints = Some(hints("vda", Some("virtio_blk"), Some(true)));
        let v = judge(&e);
        assert_eq!(v.class, Class::VirtualOrCached);
        assert!(
            v.evidence[0].contains("virtio") && v.evidence[0].contains("SATA-class SSD"),
            "{v:?}"
        );
        let mut h = hints("loop3", None, Some(true));
        h.loop_direct_io = Some(false);
        e.hints = Some(h);
        let v = judge(&e);
        assert_eq!(v.class, Class::VirtualOrCached);
        assert!(v.evidence[0].contains("without direct I/O"), "{v:?}");
        let mut h = hints("sdc", Some("sd"), Some(true));
        h.model = Some("QEMU HARDDISK".into());
        e.hints = Some(h);
        assert_eq!(judge(&e).class, Class::VirtualOrCached);
    }

    #[test]
    fn memory_speed_is_flagged_impossible() {
        let mut e = base(0.002, 0.003);
        e.hints = Some(hints("sda", Some("sd"), Some(false)));
        let v = judge(&e);
        assert_eq!(v.class, Class::VirtualOrCached);
        assert!(v.impossible[0].contains("2.0 µs"), "{v:?}");
        // No block device behind the file (tmpfs), fast but possible-looking.
        let mut e = base(0.02, 0.03);
        e.has_device = false;
        e.reached_device = None;
        assert_eq!(judge(&e).class, Class::VirtualOrCached);
    }

    #[test]
    fn sparse_file_is_inconclusive_and_flagged() {
        let mut e = base(0.0015, 0.002);
        e.allocated_fraction = Some(0.0);
        e.reached_device = Some(false);
        e.reach_note = Some("vda saw 3 reads for 2000 issued".into());
        let v = judge(&e);
        assert_eq!(v.class, Class::Inconclusive);
        assert_eq!(v.impossible.len(), 2, "{v:?}");
        assert!(v.evidence.iter().any(|s| s.contains("0% of the file is allocated")));
    }

    #[test]
    fn tmpfs_fuse_and_network_filesystems_have_no_device() {
        // Memory speed on tmpfs: not "NVMe", not "virtual": no device at all.
        for (p50, fs) in [(0.001, "tmpfs"), (0.2, "FUSE"), (0.9, "NFS")] {
            let mut e = base(p50, p50 * 1.5);
            e.has_device = false;
            e.reached_device = None;
            e.backing = Some(Backing::NoDevice { filesystem: fs.into() });
            let v = judge(&e);
            assert_eq!(v.class, Class::NoDevice, "{fs}: {v:?}");
            assert_eq!(v.class.label(), "no device under this target");
            assert!(
                v.evidence[0].starts_with(&format!("{fs} has no block device under it")),
                "{v:?}"
            );
        }
    }

    #[test]
    fn btrfs_and_overlay_devices_cannot_be_mapped() {
        let mut e = base(0.15, 0.2);
        e.has_device = false;
        e.reached_device = None;
        e.backing = Some(Backing::Unmappable {
            filesystem: "btrfs".into(),
        });
        let v = judge(&e);
        assert_eq!(v.class, Class::Unmappable, "{v:?}");
        assert_eq!(v.class.label(), "device cannot be mapped");
        assert!(
            v.evidence[0].contains("btrfs gives its files an anonymous device number"),
            "{v:?}"
        );
        assert!(v.evidence[0].ends_with("measured like: SATA-class SSD"), "{v:?}");
        // Fast reads on overlayfs are not called "memory" either.
        e.p50_ms = Some(0.05);
        e.backing = Some(Backing::Unmappable {
            filesystem: "overlayfs".into(),
        });
        assert_eq!(judge(&e).class, Class::Unmappable);
    }

    #[test]
    fn unwritten_extents_are_named_as_the_reason_for_impossible_speed() {
        // A fallocated file: fully allocated (st_blocks), but unwritten.
        let mut e = base(0.001, 0.0012);
        e.allocated_fraction = Some(1.0);
        e.unwritten_fraction = Some(1.0);
        e.hole_fraction = Some(0.0);
        e.reached_device = Some(false);
        let v = judge(&e);
        assert_eq!(v.class, Class::Inconclusive, "{v:?}");
        assert!(v.evidence[0].contains("holes or unwritten extents"), "{v:?}");
        assert!(
            v.evidence
                .iter()
                .any(|s| s.starts_with("100% of the file is unwritten extents")),
            "{v:?}"
        );
        // FIEMAP holes replace the st_blocks estimate.
        let mut e = base(0.001, 0.0012);
        e.allocated_fraction = Some(0.0);
        e.hole_fraction = Some(1.0);
        e.unwritten_fraction = Some(0.0);
        let v = judge(&e);
        assert!(
            v.evidence.iter().any(|s| s.starts_with("100% of the file is holes")),
            "{v:?}"
        );
        assert!(!v.evidence.iter().any(|s| s.contains("allocated on disk")), "{v:?}");
    }

    #[test]
    fn inconclusive_cases() {
        // Between flash and disk, flat sweep, no hints.
        let mut e = base(1.1, 1.6);
        e.sweep_zones = 20;
        e.sweep_median_mbps = Some(180.0);
        e.sweep_first_last_ratio = Some(1.02);
        assert_eq!(judge(&e).class, Class::Inconclusive);
        // Too few samples.
        let mut e = base(0.1, 0.2);
        e.rand_count = 5;
        assert_eq!(judge(&e).class, Class::Inconclusive);
        // Latency says NVMe, zones say spinning disk.
        let mut e = base(0.05, 0.06);
        e.sweep_zones = 20;
        e.sweep_median_mbps = Some(150.0);
        e.sweep_first_last_ratio = Some(1.8);
        let v = judge(&e);
        assert_eq!(v.class, Class::Inconclusive);
        assert!(v.evidence.iter().any(|s| s.contains("disagree")));
        // Nothing measured at all.
        let v = judge(&Evidence {
            has_device: true,
            ..Default::default()
        });
        assert_eq!(v.class, Class::Inconclusive);
        assert_eq!(v.evidence, ["no measurement was completed"]);
    }

    /// The case: p50 65 µs, p90 119 µs. The figure compared and
    /// the line it is compared with stand side by side (before: "p50 65 µs,
    /// p90 119 µs: NVMe-class (< 90 µs)", as if 119 < 90), with the reads it
    /// came from and how firm the class is.
    #[test]
    fn the_compared_figure_its_source_and_the_firmness_are_stated() {
        let mut e = base(0.065, 0.119);
        e.lat_from = Some("random read test");
        let v = judge(&e);
        assert_eq!(v.class, Class::Nvme);
        assert_eq!(
            v.evidence[0],
            "p50 65 µs < 90 µs: NVMe-class (p90 119 µs; 5000 random 4 KiB reads at QD1 in the random read test)"
        );
        assert!(
            v.evidence[1].starts_with(
                "not firm: the p50 is within 1.5× of the 90 µs line between NVMe-class and SATA-class SSD"
            ),
            "{v:?}"
        );
        // The size sweep's first point a little later: 95 µs reads as
        // SATA-class by the same rule, and says it is not firm either.
        let mut e = base(0.095, 0.13);
        e.lat_from = Some("request-size sweep");
        let v = judge(&e);
        assert_eq!(v.class, Class::SataSsd);
        assert!(
            v.evidence[0].starts_with("p50 95 µs within 90–600 µs: SATA-class SSD (p90 130 µs; ")
                && v.evidence[0].ends_with("in the request-size sweep)"),
            "{v:?}"
        );
        assert!(v.evidence[1].starts_with("not firm"), "{v:?}");
        // Far from every line: firm.
        assert_eq!(
            firmness(0.02),
            "firm: the p50 is 4.5× from the nearest class line (90 µs)"
        );
        assert_eq!(
            firmness(8.0),
            "firm: the p50 is 4.0× from the nearest class line (2.00 ms)"
        );
        assert!(firmness(0.7).contains("0.6–2 ms band"), "{}", firmness(0.7));
    }

    #[test]
    fn sweep_only() {
        let e = Evidence {
            has_device: true,
            sweep_zones: 20,
            sweep_median_mbps: Some(120.0),
            sweep_first_last_ratio: Some(1.7),
            ..Default::default()
        };
        assert_eq!(judge(&e).class, Class::Hdd);
    }
}
