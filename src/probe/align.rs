//! `iolens probe align DEVICE`: is this partition (or every partition of
//! this disk) aligned? The verdict comes from sysfs (the partition's start
//! against the physical sector, the optimal I/O size and 1 MiB). Timed
//! reads at block offsets and at the same offsets shifted by 512 bytes are
//! supporting evidence only: a misaligned read costs little (the penalty
//! is on writes, which a probe never does), and where the logical sector
//! (or the direct-I/O alignment) is larger than 512 bytes such offsets
//! cannot be read at all, which the result says instead of trying.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::random::Rng;
use super::stats::{Histogram, LatencySummary};
use super::target::{self, Target, TargetKind};
use super::{CancelToken, Phase, ProbeConfig, Progress, Stop, Throttle};
use crate::collect::align::{AlignVerdict, Alignment};
use crate::collect::sysblock::{self, DevKind};
use crate::sys::aligned::AlignedBuf;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PartAlignment {
    pub name: String,
    pub alignment: Alignment,
}

/// Timed 4 KiB reads at block offsets and at the same offsets + 512 B,
/// interleaved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShiftedReads {
    pub bs: u64,
    pub aligned: LatencySummary,
    pub shifted: LatencySummary,
    /// shifted p50 / aligned p50.
    pub p50_ratio: Option<f64>,
    pub stopped: Stop,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AlignResult {
    pub device: String,
    pub logical_block_size: Option<u64>,
    pub physical_block_size: Option<u64>,
    pub optimal_io_size: Option<u64>,
    /// The target partition, or every partition of the target disk.
    pub partitions: Vec<PartAlignment>,
    /// The worst verdict of `partitions`; `None` for a disk without partitions.
    pub worst: Option<AlignVerdict>,
    pub reads: Option<ShiftedReads>,
    /// Why there are no shifted reads (a 4 KiB logical sector, ...).
    pub reads_note: Option<String>,
}

fn rank(v: AlignVerdict) -> u8 {
    match v {
        AlignVerdict::Aligned => 0,
        AlignVerdict::AlignedNot1Mib => 1,
        AlignVerdict::NotOptimal => 2,
        AlignVerdict::Misaligned => 3,
    }
}

/// The sysfs part: the partitions of `name` (or `name` itself when it is a
/// partition) with their alignment, from the tree under `root`.
pub fn from_sysfs(root: &std::path::Path, name: &str) -> anyhow::Result<AlignResult> {
    let devs = sysblock::read_devices(&mut crate::collect::Reader::new(root));
    let dev = devs
        .iter()
        .find(|d| d.name == name)
        .ok_or_else(|| anyhow::anyhow!("{name} is not in /sys/block"))?;
    let partitions: Vec<PartAlignment> = if dev.kind == DevKind::Partition {
        dev.alignment
            .iter()
            .map(|a| PartAlignment {
                name: dev.name.clone(),
                alignment: a.clone(),
            })
            .collect()
    } else {
        devs.iter()
            .filter(|d| d.parent.as_deref() == Some(name))
            .filter_map(|d| {
                Some(PartAlignment {
                    name: d.name.clone(),
                    alignment: d.alignment.clone()?,
                })
            })
            .collect()
    };
    Ok(AlignResult {
        device: name.to_string(),
        logical_block_size: dev.logical_block_size,
        physical_block_size: dev.physical_block_size,
        optimal_io_size: dev.facts.optimal_io_size.filter(|&o| o > 0),
        worst: partitions.iter().map(|p| p.alignment.verdict).max_by_key(|v| rank(*v)),
        partitions,
        reads: None,
        reads_note: None,
    })
}

/// The sysfs verdict plus, where 512-byte offsets can be read, timed reads
/// at aligned and shifted offsets.
pub fn run(
    t: &Target,
    cfg: &ProbeConfig,
    cap: Duration,
    cancel: &CancelToken,
    on_progress: &mut dyn FnMut(Progress),
) -> anyhow::Result<AlignResult> {
    anyhow::ensure!(
        t.kind == TargetKind::BlockDevice,
        "probe align works on block devices (a disk or a partition), not on {}",
        t.display
    );
    let dev = t
        .device
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("{}: no device found in /sys/block", t.display))?;
    let mut res = from_sysfs(&cfg.root, &dev.name)?;
    if t.align > 512 {
        res.reads_note = Some(format!(
            "reads at +512 B offsets are not possible here: the {} ({} B) is larger than 512 B, so every read starts on a boundary of it",
            if res.logical_block_size == Some(t.align) {
                "logical sector"
            } else {
                "direct-I/O alignment"
            },
            t.align
        ));
        return Ok(res);
    }
    let bs = 4096u64;
    let slots = t.size / bs;
    anyhow::ensure!(slots >= 2, "{} is too small for 4 KiB reads", t.display);
    let max_reads = match cfg.depth {
        super::Depth::Quick => 500,
        super::Depth::Thorough => 2000,
    };
    let mut buf = AlignedBuf::new(bs as usize, t.mem_align)?;
    let b = buf.as_mut_slice();
    let mut rng = Rng::seeded();
    let (mut aligned, mut shifted) = (Histogram::new(), Histogram::new());
    let mut throttle = Throttle::new();
    let began = Instant::now();
    let stopped = loop {
        if cancel.is_cancelled() {
            break Stop::Cancelled;
        }
        if aligned.count() >= max_reads {
            break Stop::Done;
        }
        if began.elapsed() >= cap {
            break Stop::TimeCap;
        }
        // The last slot has no room for a shifted read.
        let off = rng.below(slots - 1) * bs;
        for (hist, o) in [(&mut aligned, off), (&mut shifted, off + 512)] {
            t.evict(o, bs);
            let t0 = Instant::now();
            target::read_exact_at(t, b, o)?;
            hist.record(u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX));
        }
        if throttle.due() {
            on_progress(Progress {
                phase: Phase::Align,
                fraction: (aligned.count() as f64 / max_reads as f64)
                    .max(began.elapsed().as_secs_f64() / cap.as_secs_f64())
                    .min(1.0),
                elapsed_s: began.elapsed().as_secs_f64(),
                reads: aligned.count() * 2,
                p50_ms: aligned.quantile(0.5).map(|v| v / 1e6),
                iops: None,
                zones: Vec::new(),
                size_bytes: t.size,
                queue_depth: None,
                depths: Vec::new(),
            });
        }
    };
    let (a, s) = (LatencySummary::of(&aligned), LatencySummary::of(&shifted));
    res.reads = Some(ShiftedReads {
        bs,
        p50_ratio: match (a.p50_ms, s.p50_ms) {
            (Some(x), Some(y)) if x > 0.0 => Some(y / x),
            _ => None,
        },
        aligned: a,
        shifted: s,
        stopped,
    });
    Ok(res)
}

/// The verdict: the worst partition's, with each partition's numbers.
pub fn verdict(a: &AlignResult) -> super::Verdict {
    use super::Class;
    let class = match a.worst {
        None | Some(AlignVerdict::Aligned | AlignVerdict::AlignedNot1Mib) => Class::Aligned,
        Some(AlignVerdict::NotOptimal) => Class::AlignedNotOptimal,
        Some(AlignVerdict::Misaligned) => Class::Misaligned,
    };
    let mut evidence: Vec<String> = a
        .partitions
        .iter()
        .map(|p| format!("{}: {}: {}", p.name, p.alignment.verdict.text(), p.alignment.explain()))
        .collect();
    if a.partitions.is_empty() {
        evidence.push(format!("{} has no partitions: it starts at byte 0", a.device));
    }
    if let Some(n) = &a.reads_note {
        evidence.push(n.clone());
    }
    evidence.push(
        "the verdict comes from sysfs; timed reads are supporting evidence only (misalignment costs writes, not reads)"
            .into(),
    );
    super::Verdict {
        class,
        evidence,
        impossible: Vec::new(),
    }
}

/// The text report's section.
pub fn report(s: &mut String, a: &AlignResult) {
    use std::fmt::Write as _;
    let opt = |v: Option<u64>| v.map_or_else(|| crate::format::NA.to_string(), |b| format!("{b} B"));
    let _ = writeln!(
        s,
        "\nalignment of {} (from sysfs): logical sector {}, physical sector {}, optimal I/O size {}",
        a.device,
        opt(a.logical_block_size),
        opt(a.physical_block_size),
        a.optimal_io_size
            .map_or_else(|| "none given".to_string(), |b| format!("{b} B"))
    );
    if a.partitions.is_empty() {
        let _ = writeln!(s, "  no partitions: the device starts at byte 0, on every boundary");
    }
    for p in &a.partitions {
        let al = &p.alignment;
        let _ = writeln!(
            s,
            "  {:<12} start {:>14} B  {}: {}{}",
            p.name,
            al.start_bytes,
            al.verdict.text(),
            al.explain(),
            al.kernel_alignment_offset
                .filter(|&o| o > 0)
                .map_or_else(String::new, |o| format!(" (kernel alignment_offset {o} B)"))
        );
    }
    match (&a.reads, &a.reads_note) {
        (Some(r), _) => {
            let _ = writeln!(
                s,
                "  supporting evidence only (reads; the penalty of misalignment is on writes): {} reads at block offsets p50 {} p99 {}, at +512 B p50 {} p99 {}{}",
                r.aligned.count,
                super::view::lat(r.aligned.p50_ms),
                super::view::lat(r.aligned.p99_ms),
                super::view::lat(r.shifted.p50_ms),
                super::view::lat(r.shifted.p99_ms),
                r.p50_ratio.map_or_else(String::new, |x| format!(" (×{x:.2})"))
            );
        }
        (None, Some(n)) => {
            let _ = writeln!(s, "  {n}");
        }
        (None, None) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_disk_and_partition_from_the_fixture() {
        let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/devfacts"));
        let sda = from_sysfs(root, "sda").unwrap();
        let names: Vec<&str> = sda.partitions.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["sda1", "sda2"]);
        assert_eq!(sda.worst, Some(AlignVerdict::Misaligned));
        assert_eq!(sda.physical_block_size, Some(4096));
        let p1 = from_sysfs(root, "nvme0n1p1").unwrap();
        assert_eq!(p1.worst, Some(AlignVerdict::Aligned));
        assert_eq!(p1.optimal_io_size, Some(131072));
        let nvme = from_sysfs(root, "nvme0n1").unwrap();
        assert_eq!(nvme.worst, Some(AlignVerdict::NotOptimal));
        // 4Kn: logical 4096.
        let sdb = from_sysfs(root, "sdb").unwrap();
        assert_eq!(sdb.logical_block_size, Some(4096));
        assert_eq!(sdb.worst, Some(AlignVerdict::AlignedNot1Mib));
        // No partitions: nothing to judge.
        let vda = from_sysfs(root, "vda").unwrap();
        assert!(vda.partitions.is_empty() && vda.worst.is_none());
        assert!(from_sysfs(root, "nope").is_err());
    }
}
