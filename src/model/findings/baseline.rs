//! What the device rules compare against: each device's own latency at
//! low load (a low percentile of the recent low-load intervals, bounded),
//! the traced latency split of an interval (device, queue and the whole
//! wait from the bio's queueing), whether a device's rotation
//! flag can be trusted, and the basis its saturation is judged on.

use std::collections::{HashMap, VecDeque};

use super::FindingsCfg;
use super::cfg::MIN_IOS;
use crate::collect::devfacts;
use crate::collect::sysblock::DeviceInfo;
use crate::model::saved::SavedProbe;
use crate::model::trace::hist::LatHist;
use crate::model::{DevKind, DeviceRow, Model};

/// Low-load intervals kept per device (5 minutes at 1 s).
pub const BASELINE_LEN: usize = 300;
/// Intervals needed before a baseline is claimed.
pub const BASELINE_MIN: usize = 5;
/// The percentile of the kept values taken as the baseline.
pub const BASELINE_PCT: f64 = 0.10;
/// An interval is low-load when aqu-sz is at most this.
pub const LOW_LOAD_AQU: f64 = 1.0;

/// The traced latency of one device over the last interval: reads and
/// writes together, issue → completion (device) and start → issue (queue).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TracedLat {
    /// Requests completed (reads and writes).
    pub n: u64,
    pub device_p50_ms: Option<f64>,
    pub queue_p50_ms: Option<f64>,
    /// Bio queued → issue (`block_bio_queue`), `None` where not traced.
    pub wait_p50_ms: Option<f64>,
    /// The means of the same: with many waiters for few tags (unfairly
    /// served) the p50 can fall below the device time while the mean, by
    /// Little's law the waiting queue over the device's, stays above it.
    pub device_mean_ms: Option<f64>,
    pub queue_mean_ms: Option<f64>,
    pub wait_mean_ms: Option<f64>,
}

fn p50_ms(a: &LatHist, b: &LatHist) -> Option<f64> {
    let mut h = a.clone();
    h.merge(b);
    h.quantile(0.5).map(|ns| ns as f64 / 1e6)
}

fn mean_ms(a: &LatHist, b: &LatHist) -> Option<f64> {
    let n = a.n + b.n;
    (n > 0).then(|| (a.sum + b.sum) as f64 / n as f64 / 1e6)
}

/// The device's traced latency, `None` when tracing is off or the device
/// completed no traced read or write.
pub fn traced(m: &Model, d: &DeviceRow) -> Option<TracedLat> {
    if !m.trace.active {
        return None;
    }
    let t = m.trace.device(d.major, d.minor)?;
    let n = t.latency[0].device.n + t.latency[1].device.n;
    (n > 0).then(|| TracedLat {
        n,
        device_p50_ms: p50_ms(&t.latency[0].device, &t.latency[1].device),
        queue_p50_ms: p50_ms(&t.latency[0].queue, &t.latency[1].queue),
        wait_p50_ms: p50_ms(&t.latency[0].wait, &t.latency[1].wait),
        device_mean_ms: mean_ms(&t.latency[0].device, &t.latency[1].device),
        queue_mean_ms: mean_ms(&t.latency[0].queue, &t.latency[1].queue),
        wait_mean_ms: mean_ms(&t.latency[0].wait, &t.latency[1].wait),
    })
}

/// Recent low-load values of one device.
#[derive(Debug, Clone, Default)]
struct DevBase {
    /// Traced device-side p50, ms.
    device_ms: VecDeque<f64>,
    /// await, ms (all intervals with requests and a short queue).
    await_ms: VecDeque<f64>,
}

fn push(q: &mut VecDeque<f64>, v: f64) {
    if q.len() >= BASELINE_LEN {
        q.pop_front();
    }
    q.push_back(v);
}

fn low_pct(q: &VecDeque<f64>) -> Option<f64> {
    if q.len() < BASELINE_MIN {
        return None;
    }
    let mut v: Vec<f64> = q.iter().copied().collect();
    v.sort_by(f64::total_cmp);
    v.get(((v.len() - 1) as f64 * BASELINE_PCT).round() as usize).copied()
}

/// Per-device baselines.
#[derive(Debug, Clone, Default)]
pub struct Baselines {
    devs: HashMap<String, DevBase>,
}

impl Baselines {
    /// Device-side latency at low load, ms (traced).
    pub fn device_ms(&self, dev: &str) -> Option<f64> {
        self.devs.get(dev).and_then(|b| low_pct(&b.device_ms))
    }

    /// await at low load, ms.
    pub fn await_ms(&self, dev: &str) -> Option<f64> {
        self.devs.get(dev).and_then(|b| low_pct(&b.await_ms))
    }

    /// Fold in the last interval's low-load values; devices gone lose theirs.
    pub fn update(&mut self, m: &Model, _cfg: &FindingsCfg) {
        for d in &m.devices {
            let Some(r) = &d.rates else { continue };
            if r.aqu_sz > LOW_LOAD_AQU || ((r.read.d_ios + r.write.d_ios) as f64) < MIN_IOS {
                continue;
            }
            let b = self.devs.entry(d.name.clone()).or_default();
            if let Some(a) = r.await_ms() {
                push(&mut b.await_ms, a);
            }
            if let Some(v) = traced(m, d)
                .filter(|t| t.n as f64 >= MIN_IOS)
                .and_then(|t| t.device_p50_ms)
            {
                push(&mut b.device_ms, v);
            }
        }
        if self.devs.len() > m.devices.len() {
            self.devs.retain(|n, _| m.devices.iter().any(|d| &d.name == n));
        }
    }
}

/// Whether the device rotates, where its `rotational` flag can be
/// believed: `None` for loop, virtio/xen, dm, md and zram devices, whose
/// flag is copied or made up (see [`devfacts::caveat`]), and where sysfs
/// has no flag.
pub fn rotates(info: &DeviceInfo) -> Option<bool> {
    let disk = info.parent.as_deref().unwrap_or(&info.name);
    if devfacts::caveat(info.kind, info.facts.transport.as_ref(), disk).is_some() {
        return None;
    }
    info.rotational
}

/// What a device's saturation is judged on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SaturationBasis {
    /// One request at a time is the device's limit (a disk that rotates):
    /// %util near 100 is saturation.
    Util,
    /// Its saved depth probe found no gain beyond QD 1: one request at a
    /// time is its limit, %util near 100 is saturation.
    UtilProbed,
    /// The device serves requests in parallel, or it is not known that it
    /// does not: %util says only that something was in flight; saturation
    /// comes from the queue (traced queue time, aqu-sz) and latency
    /// against the device's own baseline.
    Queue,
    /// As [`SaturationBasis::Queue`], with aqu-sz against the knee its
    /// saved depth probe measured (the last depth that still gained).
    QueueKnee { knee: u32 },
}

impl SaturationBasis {
    /// %util is coloured as saturation.
    pub fn is_util(self) -> bool {
        matches!(self, SaturationBasis::Util | SaturationBasis::UtilProbed)
    }

    /// The basis in a few words (the device detail).
    pub fn text(self) -> String {
        match self {
            SaturationBasis::Util => "%util (a rotating disk)".into(),
            SaturationBasis::UtilProbed => "%util (probe: no gain past QD 1)".into(),
            SaturationBasis::Queue => "queue + latency, not %util".into(),
            SaturationBasis::QueueKnee { knee } => format!("aqu-sz vs probe knee QD {knee}"),
        }
    }
}

/// The basis of a device's saturation: a saved depth probe of it decides
/// where there is one (no gain beyond QD 1: %util; else its knee), a
/// measurement before the rotation flag; else %util only on a disk known
/// to rotate (a partition: its disk's flag, which sysfs copies).
pub fn saturation_basis(info: Option<&DeviceInfo>, saved: Option<&SavedProbe>) -> SaturationBasis {
    if let Some(c) = saved.and_then(|p| p.depth.as_ref()) {
        if c.no_gain_beyond_qd1() {
            return SaturationBasis::UtilProbed;
        }
        if let Some(knee) = c.knee {
            return SaturationBasis::QueueKnee { knee };
        }
    }
    match info.and_then(rotates) {
        Some(true) if info.is_some_and(|i| matches!(i.kind, DevKind::Disk | DevKind::Partition)) => {
            SaturationBasis::Util
        }
        _ => SaturationBasis::Queue,
    }
}
