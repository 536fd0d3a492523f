//! What every read probe sets up first: time caps, the block size, the
//! idle I/O class label and dropping the global page cache.

use std::path::Path;
use std::time::Duration;

use super::layout::{Backing, FileLayout};
use super::target::TargetKind;
use super::{Depth, Phase, ProbeConfig, SweepResult, Target};
use crate::sys::ioprio::IdleGuard;
use crate::sys::is_root;

/// Default time caps per test.
pub(super) fn time_cap(cfg: &ProbeConfig, phase: Phase) -> Duration {
    cfg.duration.unwrap_or(match (phase, cfg.depth) {
        (Phase::Random, Depth::Quick) => Duration::from_secs(10),
        (Phase::Random, Depth::Thorough) => Duration::from_secs(30),
        (Phase::Sweep, Depth::Quick) => Duration::from_secs(30),
        (Phase::Sweep, Depth::Thorough) => Duration::from_secs(120),
        (Phase::QueueDepth, Depth::Quick) => Duration::from_secs(60),
        (Phase::QueueDepth, Depth::Thorough) => Duration::from_secs(180),
        (Phase::SyncWrite, Depth::Quick) => Duration::from_secs(15),
        (Phase::SyncWrite, Depth::Thorough) => Duration::from_secs(90),
        (Phase::Align, Depth::Quick) => Duration::from_secs(10),
        (Phase::Align, Depth::Thorough) => Duration::from_secs(30),
        (Phase::Size, Depth::Quick) => Duration::from_secs(30),
        (Phase::Size, Depth::Thorough) => Duration::from_secs(120),
        (Phase::Seek, Depth::Quick) => Duration::from_secs(30),
        (Phase::Seek, Depth::Thorough) => Duration::from_secs(120),
    })
}

/// Block size for random reads: the user's, checked, or 4 KiB raised to the
/// physical block size and the alignment.
pub(super) fn block_size(cfg: &ProbeConfig, t: &Target) -> anyhow::Result<u64> {
    let bs = match cfg.bs {
        Some(bs) => {
            anyhow::ensure!(bs > 0, "--bs must be larger than 0");
            anyhow::ensure!(
                bs % t.align == 0,
                "block size {bs} B is not a multiple of the direct-I/O alignment of {} ({} B, from {}): misaligned reads would be refused",
                t.display,
                t.align,
                t.align_source
            );
            bs
        }
        None => 4096u64.max(t.physical_block().unwrap_or(0)).max(t.align),
    };
    anyhow::ensure!(
        bs <= t.size,
        "{} is {} B, smaller than one read of {bs} B",
        t.display,
        t.size
    );
    anyhow::ensure!(bs <= 64 << 20, "--bs {bs} B is larger than the 64 MiB limit");
    Ok(bs)
}

/// Whether the idle I/O class limits the probe's impact on `sched` (the
/// device's scheduler), and the note that says so. Only bfq serves the idle
/// class after everything else; none, kyber and mq-deadline dispatch it
/// like any other request.
pub(super) fn idle_label(sched: Option<&str>) -> (bool, String) {
    match sched {
        Some("bfq") => (
            true,
            "impact-limited: idle I/O class (bfq serves it only when the disk has nothing else to do)".into(),
        ),
        Some(s) => (
            false,
            format!(
                "idle I/O class set, but the '{s}' scheduler does not honour I/O classes: not impact-limited, the probe competes with other I/O as usual"
            ),
        ),
        None => (
            false,
            "idle I/O class set, but no scheduler is known for this target (no block device under it): not impact-limited".into(),
        ),
    }
}

pub(super) fn drop_global_cache(root: &Path) -> anyhow::Result<()> {
    anyhow::ensure!(
        is_root(),
        "--drop-caches needs root: it drops the page cache of the whole machine"
    );
    let p = root.join("proc/sys/vm/drop_caches");
    std::fs::write(&p, "1").map_err(|e| anyhow::anyhow!("writing {}: {e}", p.display()))
}

/// Enter the idle I/O class when asked: the guard that leaves it again,
/// whether the device's scheduler makes the class limit the probe's
/// impact, and the note saying so (or why the class could not be set).
pub(super) fn enter_idle(cfg: &ProbeConfig, t: &Target) -> (Option<IdleGuard>, bool, Option<String>) {
    if !cfg.idle {
        return (None, false, None);
    }
    match IdleGuard::enter() {
        Ok(g) => {
            let sched = t.device.as_ref().and_then(|d| d.scheduler.as_deref());
            let (limited, note) = idle_label(sched);
            (Some(g), limited, Some(note))
        }
        Err(e) => (None, false, Some(format!("idle I/O class could not be set: {e}"))),
    }
}

/// The extents of a regular file on a block device (FIEMAP); `None`, with a
/// note where they cannot be read, and for other targets.
pub(super) fn read_layout(
    cfg: &ProbeConfig,
    t: &Target,
    backing: &Backing,
    notes: &mut Vec<String>,
) -> Option<FileLayout> {
    match t.kind {
        TargetKind::RegularFile if !matches!(backing, Backing::NoDevice { .. }) => {
            match FileLayout::read(&t.file, t.size, t.device.as_ref(), &cfg.root) {
                Ok(l) => Some(l),
                Err(e) => {
                    notes.push(format!("file extents unknown: {e}"));
                    None
                }
            }
        }
        _ => None,
    }
}

/// Place a file's sweep zones on the disk (from its extents and the disk's
/// size), setting the sweep's first/last ratio and positions; returns the
/// positions note.
pub(super) fn place_zones(
    cfg: &ProbeConfig,
    t: &Target,
    s: &mut SweepResult,
    file_layout: Option<&FileLayout>,
) -> String {
    let disk_bytes = t.device.as_ref().and_then(|d| {
        crate::collect::Reader::new(&cfg.root)
            .read_u64(format!("/sys/block/{}/size", d.disk))
            .map(|n| n * 512)
    });
    let (ratio, note) = super::layout::place_zones(&mut s.zones, file_layout, disk_bytes);
    s.first_last_ratio = ratio;
    s.positions = Some(note.clone());
    note
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bfq_makes_the_idle_class_impact_limited() {
        assert!(idle_label(Some("bfq")).0);
        for s in ["none", "mq-deadline", "kyber"] {
            let (limited, note) = idle_label(Some(s));
            assert!(!limited, "{s}");
            assert!(
                note.contains(&format!("'{s}' scheduler does not honour I/O classes")),
                "{note}"
            );
        }
        assert!(!idle_label(None).0);
    }
}
