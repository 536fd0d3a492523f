//! The verdict's evidence, gathered from the results of the tests a probe
//! ran and from what is known of its target.

use super::check::{self, DiskCheck};
use super::layout::{Backing, FileLayout};
use super::size::SizeResult;
use super::verdict::Evidence;
use super::{CacheMode, QdResult, RandomResult, SweepResult, Target};

/// The results of the tests that measure the device, as far as they ran.
pub(super) struct Runs<'a> {
    pub random: Option<&'a RandomResult>,
    pub sweep: Option<&'a SweepResult>,
    pub qd: Option<&'a QdResult>,
    pub size: Option<&'a SizeResult>,
}

/// The evidence the verdict judges; the disk checks' disturbances and
/// partial reaches are added to `notes`.
pub(super) fn gather(
    t: &Target,
    bs: u64,
    runs: &Runs,
    backing: &Backing,
    file_layout: Option<&FileLayout>,
    zones_note: Option<String>,
    notes: &mut Vec<String>,
) -> Evidence {
    let Runs {
        random,
        sweep: sweep_res,
        qd: qd_res,
        size: size_res,
    } = *runs;
    let checks: Vec<&DiskCheck> = random
        .iter()
        .filter_map(|r| r.disk_check.as_ref())
        .chain(sweep_res.iter().filter_map(|s| s.disk_check.as_ref()))
        .chain(qd_res.iter().filter_map(|q| q.disk_check.as_ref()))
        .chain(size_res.iter().filter_map(|s| s.disk_check.as_ref()))
        .collect();
    for c in &checks {
        notes.extend(c.disturbance.clone());
        if c.reach == check::Reach::Partial {
            notes.push(c.describe());
        }
    }
    let not_reached = checks.iter().find(|c| c.reach == check::Reach::NotReached);
    // Latency class: the QD1 random reads, from the random test or the
    // first depth of the queue-depth sweep.
    let qd1 = qd_res
        .and_then(|q| q.points.first())
        .filter(|p| p.queue_depth == 1)
        .map(|p| &p.latency);
    let smallest = size_res.and_then(|s| s.points.first());
    // The same figure whichever test gave it: the p50 of random reads at QD1.
    let (lat, lat_bs, lat_from) = match (random, qd1, smallest) {
        (Some(r), _, _) => (Some(&r.latency), bs, Some("random read test")),
        (None, Some(l), _) => (Some(l), bs, Some("queue-depth sweep")),
        (None, None, Some(p)) => (Some(&p.latency), p.bytes, Some("request-size sweep")),
        _ => (None, bs, None),
    };
    Evidence {
        bs: lat_bs,
        rand_count: lat.map_or(0, |l| l.count),
        p50_ms: lat.and_then(|l| l.p50_ms),
        p90_ms: lat.and_then(|l| l.p90_ms),
        lat_from,
        qd_speedup: qd_res.and_then(|q| {
            let deepest = q.points.iter().rfind(|p| p.iops.is_some())?;
            Some((q.speedup?, q.knee?, deepest.queue_depth))
        }),
        seek_correlation: random.and_then(|r| r.seek_correlation),
        sweep_zones: sweep_res.map_or(0, |s| s.zones.len()),
        sweep_median_mbps: sweep_res.and_then(|s| s.median_mb_per_s),
        sweep_first_last_ratio: sweep_res.and_then(|s| s.first_last_ratio),
        reached_device: (!checks.is_empty()).then_some(not_reached.is_none()),
        reach_note: not_reached.map(|c| c.describe()),
        allocated_fraction: t.allocated_bytes.map(|a| (a as f64 / t.size as f64).min(1.0)),
        has_device: t.device.is_some(),
        backing: (*backing != Backing::Device).then(|| backing.clone()),
        unwritten_fraction: file_layout.map(|l| l.fractions(t.size).0),
        hole_fraction: file_layout.filter(|l| !l.truncated).map(|l| l.fractions(t.size).1),
        zones_note,
        hints: t.device.clone(),
        buffered: t.cache == CacheMode::BufferedFadvise,
    }
}
