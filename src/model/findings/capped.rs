//! Capped device: throughput flat at a level well below what the device
//! has shown it can do, held there by something iolens does not see as a
//! queue:
//!
//! - a throttle (a cgroup limit in another hierarchy, or one set while the
//!   cgroup collector is off): the device is mostly idle (%util low), its
//!   latency stays at its own baseline, yet the processes issuing to it
//!   wait on I/O (IO% by delay accounting, else state D) — their bios are
//!   held before they reach the device;
//! - a cap below the device (a hypervisor, a cloud volume's IOPS or MB/s
//!   limit): the level is flat while the device's await grows well above
//!   its baseline.
//!
//! "Shown it can do" ([`basis`]) is, for bytes/s and for IOPS each, the
//! device's saved probe result (the sequential sweep's median zone rate;
//! the most IOPS of its random reads at QD 1 and of its depth sweep) or
//! the highest interval this session, whichever is higher: the level must
//! be below both, so a random workload below a sequential peak in bytes
//! but at its peak in IOPS is not capped. A device running flat out at
//! that level is not capped (at most the informational at_device_limit,
//! [`super::at_limit`]).

use std::collections::{HashMap, VecDeque};

use serde::{Deserialize, Serialize};

use super::baseline::Baselines;
use super::cfg::ON_S;
use super::{CULPRITS, Candidate, Culprit, Evidence, Severity, Subject, culprit_list, device_culprits, ms};
use crate::model::saved::SavedProbes;
use crate::model::{DeviceRow, Model};

pub const ID: &str = "capped_device";

/// Intervals the level must be flat over.
pub const FLAT_N: usize = 5;
/// Flat: (highest − lowest) / mean of the window at most this, %.
pub const FLAT_SPREAD_PCT: f64 = 15.0;
/// Or flat as delivered: at every interval's end the bytes so far within
/// this share of the window's total of what its mean rate would have
/// delivered by then, % (a throttle releases in bursts that the next
/// short interval evens out: 24, 20, 20, 16, 24 MB/s at 0.5 s is 20 MB/s
/// within 3.2%; a ramp or a swing of ±50% is not).
pub const FLAT_TRACK_PCT: f64 = 5.0;
/// The level at least this far below the highest bytes/s and IOPS shown, %.
pub const BELOW_PCT: f64 = 20.0;
/// Levels below this, bytes/s, are not judged.
pub const MIN_BPS: f64 = 256_000.0;
/// Throttle: %util at most this (the device mostly idle) ...
pub const MAX_UTIL_PCT: f64 = 60.0;
/// ... with await at most this many times its low-load baseline ...
pub const LATENCY_FACTOR: f64 = 1.5;
/// ... and an issuer waiting at least this IO% (delay accounting) ...
pub const WAIT_PCT: f64 = 10.0;
/// ... or, between state D's point samples, PSI io "some" at least this
/// share of the interval, % (with a user process on the device): a reader
/// held by a throttle is in D nearly all the time, but the throttle
/// releases its bios on the timer tick the sampler also wakes on, so its
/// state can read R at every sample of a run (seen: 16 of 18).
pub const PSI_SOME_PCT: f64 = 50.0;
/// Cap below the device: await at least this many times its baseline.
pub const AWAIT_GROWTH: f64 = 2.0;
/// Latency differences under this are "at the baseline", ms (a loop
/// device's await at 300 requests/s wanders 0.02–0.5 ms).
pub const MIN_EXCESS_MS: f64 = 2.0;

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct CappedCfg {
    pub on_s: f64,
    pub flat_spread_pct: f64,
    pub flat_track_pct: f64,
    pub below_pct: f64,
    pub min_bps: f64,
    pub max_util_pct: f64,
    pub latency_factor: f64,
    pub wait_pct: f64,
    pub psi_some_pct: f64,
    pub await_growth: f64,
    pub min_excess_ms: f64,
}

impl Default for CappedCfg {
    fn default() -> Self {
        CappedCfg {
            on_s: ON_S,
            flat_spread_pct: FLAT_SPREAD_PCT,
            flat_track_pct: FLAT_TRACK_PCT,
            below_pct: BELOW_PCT,
            min_bps: MIN_BPS,
            max_util_pct: MAX_UTIL_PCT,
            latency_factor: LATENCY_FACTOR,
            wait_pct: WAIT_PCT,
            psi_some_pct: PSI_SOME_PCT,
            await_growth: AWAIT_GROWTH,
            min_excess_ms: MIN_EXCESS_MS,
        }
    }
}

/// One device's recent throughput and the most it showed.
#[derive(Debug, Clone, Default)]
struct Tput {
    /// The last [`FLAT_N`] intervals.
    recent: VecDeque<Level>,
    peak_bps: f64,
    peak_iops: f64,
}

/// One interval of a device.
#[derive(Debug, Clone, Copy)]
struct Level {
    bps: f64,
    iops: f64,
    /// A process on the device waited on I/O.
    waited: bool,
    /// The interval's length, s.
    dt: f64,
}

/// Per-device throughput history (bounded: [`FLAT_N`] values a device,
/// dropped when the device goes).
#[derive(Debug, Clone, Default)]
pub struct CapState {
    devs: HashMap<String, Tput>,
}

impl CapState {
    /// Fold in the last interval's throughput of every device, and
    /// whether a process on it waited on I/O (state D is a point sample:
    /// a throttled reader is caught running now and then) or PSI io
    /// "some" (`psi_some`, % of the interval) says someone did while a
    /// user process was on it.
    pub fn update(&mut self, m: &Model, c: &CappedCfg, psi_some: Option<f64>) {
        let pressed = psi_some.is_some_and(|p| p >= c.psi_some_pct);
        let accounted = super::delay_accounted(m);
        for d in &m.devices {
            let Some(r) = &d.rates else { continue };
            let (bps, iops) = (
                r.read.bytes_per_s + r.write.bytes_per_s,
                r.read.ios_per_s + r.write.ios_per_s,
            );
            let waited = bps >= c.min_bps
                && (!super::device_waiters(m, d, None, accounted, c.wait_pct).is_empty()
                    || pressed && super::device_users(m, d).next().is_some());
            let t = self.devs.entry(d.name.clone()).or_default();
            if t.recent.len() >= FLAT_N {
                t.recent.pop_front();
            }
            t.recent.push_back(Level {
                bps,
                iops,
                waited,
                dt: r.interval_s,
            });
            t.peak_bps = t.peak_bps.max(bps);
            t.peak_iops = t.peak_iops.max(iops);
        }
        if self.devs.len() > m.devices.len() {
            self.devs.retain(|n, _| m.devices.iter().any(|d| &d.name == n));
        }
    }
}

/// What a device has shown it can do, bytes/s and IOPS, each with where
/// it comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Basis {
    pub bps: f64,
    pub bps_saved: bool,
    pub iops: f64,
    pub iops_saved: bool,
}

impl Basis {
    pub fn bps_source(&self) -> &'static str {
        if self.bps_saved {
            "saved probe result: the sequential sweep's median zone rate (iolens probe)"
        } else {
            "the highest interval this session"
        }
    }

    pub fn iops_source(&self) -> &'static str {
        if self.iops_saved {
            "saved probe result: the most IOPS of its random reads at QD 1 and its depth sweep (iolens probe)"
        } else {
            "the highest interval this session"
        }
    }
}

/// The basis of device `dev`: each of bytes/s and IOPS the saved probe
/// result's where it has one and the session has not shown more, else the
/// session's highest interval. `None` before the device had an interval.
pub(super) fn basis(st: &CapState, saved: &SavedProbes, dev: &str) -> Option<Basis> {
    let t = st.devs.get(dev)?;
    let p = saved.of(dev);
    let seq = p.and_then(|p| p.seq_bps).filter(|v| v.is_finite() && *v > 0.0);
    let iops = p
        .and_then(|p| {
            let d = p.depth.as_ref().and_then(|d| d.best_iops());
            [p.random_iops, d].into_iter().flatten().reduce(f64::max)
        })
        .filter(|v| v.is_finite() && *v > 0.0);
    Some(Basis {
        bps: seq.map_or(t.peak_bps, |s| s.max(t.peak_bps)),
        bps_saved: seq.is_some_and(|s| s >= t.peak_bps),
        iops: iops.map_or(t.peak_iops, |s| s.max(t.peak_iops)),
        iops_saved: iops.is_some_and(|s| s >= t.peak_iops),
    })
}

/// The flat level (mean bytes/s, mean IOPS) of device `dev`'s full
/// window, if flat.
pub(super) fn flat_of(st: &CapState, dev: &str, c: &CappedCfg) -> Option<(f64, f64)> {
    flat_level(st.devs.get(dev)?, c)
}

/// The flat level (mean bytes/s, mean IOPS over the window's time) of a
/// full window, if flat: its intervals within `flat_spread_pct` of each
/// other, or the bytes it delivered tracking its mean rate within
/// `flat_track_pct` ([`FLAT_TRACK_PCT`]).
fn flat_level(t: &Tput, c: &CappedCfg) -> Option<(f64, f64)> {
    let time: f64 = t.recent.iter().map(|v| v.dt).sum();
    if t.recent.len() < FLAT_N || time <= 0.0 {
        return None;
    }
    let total: f64 = t.recent.iter().map(|v| v.bps * v.dt).sum();
    let (bps, iops) = (total / time, t.recent.iter().map(|v| v.iops * v.dt).sum::<f64>() / time);
    let (lo, hi) = t
        .recent
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), v| (lo.min(v.bps), hi.max(v.bps)));
    let spread = hi - lo <= bps * c.flat_spread_pct / 100.0;
    let tracks = || {
        let (mut done, mut at) = (0.0, 0.0);
        t.recent.iter().all(|v| {
            (done, at) = (done + v.bps * v.dt, at + v.dt);
            (done - bps * at).abs() <= total * c.flat_track_pct / 100.0
        })
    };
    (bps >= c.min_bps && (spread || tracks())).then_some((bps, iops))
}

/// Why the level is held: the sentence's cause, the evidence of it and
/// the processes to name; `None` when neither a throttle nor a cap shows.
fn cause(
    m: &Model,
    d: &DeviceRow,
    t: &Tput,
    base: &Baselines,
    c: &CappedCfg,
) -> Option<(String, Vec<Evidence>, Vec<Culprit>)> {
    let r = d.rates.as_ref()?;
    let (a, b) = (r.await_ms()?, base.await_ms(&d.name)?);
    let lat = vec![
        Evidence::new("await", Some(a), "ms", "/proc/diskstats"),
        Evidence::new(
            "baseline await",
            Some(b),
            "ms",
            "p10 of this device's low-load intervals",
        ),
        Evidence::new("%util", Some(r.util_pct), "%", "/proc/diskstats"),
    ];
    if a >= b * c.await_growth && a - b >= c.min_excess_ms {
        let who = device_culprits(m, d, CULPRITS);
        let text = format!(
            "while its await grew to {} from {} at low load: a cap below the device (a hypervisor or a cloud volume's limit)",
            ms(a),
            ms(b)
        );
        return Some((text, lat, who));
    }
    if r.util_pct > c.max_util_pct || (a > b * c.latency_factor && a - b >= c.min_excess_ms) {
        return None;
    }
    // Someone waited in most of the window's intervals.
    if t.recent.iter().filter(|v| v.waited).count() * 2 <= t.recent.len() {
        return None;
    }
    let accounted = super::delay_accounted(m);
    let mut who = super::device_waiters(m, d, None, accounted, c.wait_pct);
    if who.is_empty() {
        who = device_culprits(m, d, CULPRITS);
    }
    who.truncate(CULPRITS);
    let text = format!(
        "while {} wait{} on it ({} in most intervals) and the device is {:.0}% busy with its latency at its baseline ({} against {}): a throttle iolens cannot see (a cgroup limit in another hierarchy, a volume or hypervisor limit)",
        culprit_list(&who),
        if who.len() == 1 { "s" } else { "" },
        if accounted {
            "IO% by delay accounting"
        } else {
            "in state D, or PSI io some between those point samples"
        },
        r.util_pct,
        ms(a),
        ms(b)
    );
    Some((text, lat, who))
}

pub fn eval(m: &Model, st: &CapState, saved: &SavedProbes, base: &Baselines, c: &CappedCfg, out: &mut Vec<Candidate>) {
    for d in &m.devices {
        let Some(t) = st.devs.get(&d.name) else { continue };
        let Some((bps, iops)) = flat_level(t, c) else { continue };
        let Some(b) = basis(st, saved, &d.name) else { continue };
        let keep = 1.0 - c.below_pct / 100.0;
        if bps > b.bps * keep || iops > b.iops * keep {
            continue;
        }
        let Some((why, mut evidence, culprits)) = cause(m, d, t, base, c) else {
            continue;
        };
        let below = (1.0 - bps / b.bps) * 100.0;
        let level = crate::format::rate(bps);
        let mut ev = vec![
            Evidence::new(
                "level",
                Some(bps),
                "B/s",
                "mean of the last 5 intervals, /proc/diskstats",
            ),
            Evidence::new("highest shown", Some(b.bps), "B/s", b.bps_source()),
            Evidence::new("level IOPS", Some(iops), "1/s", "/proc/diskstats"),
            Evidence::new("highest IOPS shown", Some(b.iops), "1/s", b.iops_source()),
        ];
        ev.append(&mut evidence);
        out.push(Candidate {
            rule: ID,
            severity: Severity::Warning,
            subject: Subject::Device { name: d.name.clone() },
            evidence: ev,
            text: format!(
                "{} is capped: flat at {level} ({iops:.0} IOPS), {below:.0}% below the {} it showed {}, {why}.",
                d.name,
                crate::format::rate(b.bps),
                if b.bps_saved {
                    "in its saved probe result"
                } else {
                    "this session"
                },
            ),
            culprits,
            next: format!(
                "look for a limit on {0}: cgroup v1 blkio.throttle.* and v2 io.max of the waiting processes' cgroups (C), the volume's provisioned IOPS/MB/s; Enter on {0} for its detail",
                d.name
            ),
        });
    }
}
