//! At device limit (informational): a device simply running flat out —
//! its throughput flat at ≥ 90% of what its saved probe result says it
//! can do, busy, its latency at its own low-load baseline, and no cgroup
//! held at an I/O limit on it. Nothing is wrong with the device; it is
//! the ceiling the workload meets (the capped_device rule is the level
//! well below it).
//!
//! Only a saved probe result is a basis here ([`super::capped::basis`]
//! where it came from the probe): against the highest rate of this
//! session any steady workload would be "at its limit" (fio at QD 1 is at
//! its own highest, far from what the device does at depth).

use serde::{Deserialize, Serialize};

use super::baseline::Baselines;
use super::capped::{CapState, CappedCfg, basis, flat_of};
use super::cfg::ON_S;
use super::{CULPRITS, Candidate, Evidence, Severity, Subject, device_culprits, ms};
use crate::model::saved::SavedProbes;
use crate::model::{DeviceRow, Model};

pub const ID: &str = "at_device_limit";

/// The flat level at least this share of the saved basis (bytes/s or
/// IOPS), %.
pub const NEAR_PCT: f64 = 90.0;
/// Busy: %util at least this.
pub const BUSY_UTIL_PCT: f64 = 80.0;
/// Latency at its baseline: await at most this many times the low-load
/// baseline, or less than [`MIN_EXCESS_MS`] over it.
pub const LATENCY_FACTOR: f64 = 1.5;
pub const MIN_EXCESS_MS: f64 = 2.0;

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct AtLimitCfg {
    pub on_s: f64,
    pub near_pct: f64,
    pub busy_util_pct: f64,
    pub latency_factor: f64,
    pub min_excess_ms: f64,
}

impl Default for AtLimitCfg {
    fn default() -> Self {
        AtLimitCfg {
            on_s: ON_S,
            near_pct: NEAR_PCT,
            busy_util_pct: BUSY_UTIL_PCT,
            latency_factor: LATENCY_FACTOR,
            min_excess_ms: MIN_EXCESS_MS,
        }
    }
}

/// A cgroup is held at an I/O limit on `d` (its own rule's finding).
fn throttled_on(m: &Model, d: &DeviceRow) -> bool {
    m.cgroups.as_ref().is_some_and(|v| {
        v.rows
            .iter()
            .flat_map(|r| &r.devices)
            .any(|c| c.device == d.name && c.at_limit == Some(true))
    })
}

/// The level's share of the saved basis, % (the larger of bytes/s and
/// IOPS, each only where the saved result is the basis).
fn share(st: &CapState, saved: &SavedProbes, d: &str, level: (f64, f64)) -> Option<(f64, &'static str, f64)> {
    let b = basis(st, saved, d)?;
    let bps = b.bps_saved.then(|| (level.0 / b.bps * 100.0, "B/s", b.bps));
    let iops = b.iops_saved.then(|| (level.1 / b.iops * 100.0, "1/s", b.iops));
    [bps, iops].into_iter().flatten().max_by(|a, b| a.0.total_cmp(&b.0))
}

pub fn eval(
    m: &Model,
    st: &CapState,
    saved: &SavedProbes,
    base: &Baselines,
    (cap, c): (&CappedCfg, &AtLimitCfg),
    out: &mut Vec<Candidate>,
) {
    for d in &m.devices {
        let Some(r) = &d.rates else { continue };
        let Some(level) = flat_of(st, &d.name, cap) else {
            continue;
        };
        let Some((pct, unit, of)) = share(st, saved, &d.name, level).filter(|s| s.0 >= c.near_pct) else {
            continue;
        };
        let (Some(a), Some(b)) = (r.await_ms(), base.await_ms(&d.name)) else {
            continue;
        };
        if r.util_pct < c.busy_util_pct || (a > b * c.latency_factor && a - b >= c.min_excess_ms) || throttled_on(m, d)
        {
            continue;
        }
        let what = if unit == "B/s" {
            format!("{} of the {}", crate::format::rate(level.0), crate::format::rate(of))
        } else {
            format!("{:.0} IOPS of the {of:.0}", level.1)
        };
        out.push(Candidate {
            rule: ID,
            severity: Severity::Info,
            subject: Subject::Device { name: d.name.clone() },
            evidence: vec![
                Evidence::new("share of the saved basis", Some(pct), "%", "mean of the last 5 intervals over the saved probe result"),
                Evidence::new(
                    "saved basis",
                    Some(of),
                    unit,
                    if unit == "B/s" {
                        "saved probe result: the sequential sweep's median zone rate (iolens probe)"
                    } else {
                        "saved probe result: the most IOPS of its random reads at QD 1 and its depth sweep (iolens probe)"
                    },
                ),
                Evidence::new("%util", Some(r.util_pct), "%", "/proc/diskstats"),
                Evidence::new("await", Some(a), "ms", "/proc/diskstats"),
                Evidence::new("baseline await", Some(b), "ms", "p10 of this device's low-load intervals"),
            ],
            culprits: device_culprits(m, d, CULPRITS),
            text: format!(
                "{} is running at its limit: flat at {what} its saved probe result shows ({pct:.0}%), {:.0}% busy with its latency at its baseline ({} against {}); not a fault, the ceiling this workload meets.",
                d.name,
                r.util_pct,
                ms(a),
                ms(b)
            ),
            next: format!(
                "nothing to fix on {0}; for more, spread the load over devices or a faster one (Enter on {0} for its detail and headroom)",
                d.name
            ),
        });
    }
}
