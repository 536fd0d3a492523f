//! Dirty throttling hurting others: writers paused by the kernel's dirty
//! throttle (`balance_dirty_pages`) for a large share of the interval
//! while other processes on the same device wait.
//!
//! Traced, the pauses are exact: the sum of the `pause` of each
//! `writeback:balance_dirty_pages` event of a process on a backing device
//! (bdi) over the interval ([`crate::model::dirty`]). Untraced (no tracing,
//! or a kernel without the event), the dirty pages of `/proc/vmstat`
//! (`nr_dirty`) at the system's threshold (`nr_dirty_threshold`) stand for
//! it, and the processes dirtying most (`write_bytes`) are named as the
//! likely writers.
//!
//! A bdi that is no device row (FUSE, NFS: "0:NN", the superblock's
//! MAJ:MIN) is judged on its mount (mountinfo), the others there being
//! the waiting processes with files on that filesystem open.
//!
//! The others: user processes, not the paused writers, that wait on I/O on
//! the device (IO% by delay accounting, else state D), or read from it with
//! a traced latency (p50) well above the device's own low-load baseline.
//! PSI io is shown but never enough: a paused writer sleeps in
//! `io_schedule_timeout`, so its own pauses count as io pressure (a lone
//! buffered copy paused by design makes "some" about its paused share, and
//! "full" when it is the only task that runs) — that copy alone is not a
//! finding.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::baseline::Baselines;
use super::cfg::ON_S;
use super::{CULPRITS, Candidate, Culprit, Evidence, Severity, Subject, culprit_list, ms};
use crate::collect::mountinfo::AnonMount;
use crate::model::dirty::Throttled;
use crate::model::{DeviceRow, Model};

pub const ID: &str = "dirty_throttled";

/// Share of the interval a writer spent paused at or above which it is
/// throttled hard, %.
pub const PAUSED_PCT: f64 = 20.0;
/// Untraced: dirty pages at or above this share of `nr_dirty_threshold`, %.
pub const AT_LIMIT_PCT: f64 = 95.0;
/// Other processes that must wait.
pub const MIN_VICTIMS: f64 = 1.0;
/// IO% (delay accounting) at or above which another process waits.
pub const WAIT_PCT: f64 = 10.0;
/// Another reader's traced latency (p50) at least this many times the
/// device's low-load baseline ...
pub const LATENCY_FACTOR: f64 = 4.0;
/// ... and at least this much above it, ms.
pub const MIN_EXCESS_MS: f64 = 5.0;

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct DirtyThrottledCfg {
    pub on_s: f64,
    pub paused_pct: f64,
    pub at_limit_pct: f64,
    pub min_victims: f64,
    pub wait_pct: f64,
    pub latency_factor: f64,
    pub min_excess_ms: f64,
}

impl Default for DirtyThrottledCfg {
    fn default() -> Self {
        DirtyThrottledCfg {
            on_s: ON_S,
            paused_pct: PAUSED_PCT,
            at_limit_pct: AT_LIMIT_PCT,
            min_victims: MIN_VICTIMS,
            wait_pct: WAIT_PCT,
            latency_factor: LATENCY_FACTOR,
            min_excess_ms: MIN_EXCESS_MS,
        }
    }
}

fn comm(m: &Model, pid: i32) -> String {
    m.procs
        .iter()
        .find(|p| p.raw.key.pid == pid)
        .map_or_else(|| "?".into(), |p| p.raw.comm.to_string())
}

/// The user processes paused on `bdi`, most paused first: share of the
/// interval, %, capped at 100.
fn writers(m: &Model, bdi: &str, dt: f64) -> Vec<(Culprit, Throttled)> {
    let mut v: Vec<(Culprit, Throttled)> = m
        .trace
        .dirty
        .interval
        .procs_on(bdi)
        .filter(|(pid, t)| *pid > 0 && !t.kernel && t.paused_ms > 0)
        .map(|(pid, t)| {
            let c = Culprit {
                pid,
                comm: comm(m, pid),
                value: (t.paused_ms as f64 / (dt * 1000.0) * 100.0).min(100.0),
                unit: "% of the interval paused in balance_dirty_pages (traced)",
            };
            (c, *t)
        })
        .collect();
    v.sort_by(|a, b| b.0.value.total_cmp(&a.0.value).then(a.0.pid.cmp(&b.0.pid)));
    v
}

/// The other processes that wait on `d` (not `writers`): waiting on I/O,
/// or reading with a traced p50 well above the device's baseline.
fn victims(m: &Model, d: &DeviceRow, writers: &HashSet<i32>, base: &Baselines, c: &DirtyThrottledCfg) -> Vec<Culprit> {
    let accounted = super::delay_accounted(m);
    let mut v: Vec<Culprit> = super::device_waiters(m, d, None, accounted, c.wait_pct)
        .into_iter()
        .filter(|p| !writers.contains(&p.pid))
        .collect();
    let key = crate::collect::trace::block::Dev {
        major: d.major,
        minor: d.minor,
    };
    if let (true, Some(b)) = (m.trace.active, base.device_ms(&d.name)) {
        for (pid, p) in m.trace.procs_on(key) {
            if pid <= 0 || p.kernel || p.read_bytes == 0 || writers.contains(&pid) || v.iter().any(|x| x.pid == pid) {
                continue;
            }
            let Some(p50) = p.total.quantile(0.5).map(|ns| ns as f64 / 1e6) else {
                continue;
            };
            if p50 >= b * c.latency_factor && p50 - b >= c.min_excess_ms {
                v.push(Culprit {
                    pid,
                    comm: p.comm.clone(),
                    value: p50,
                    unit: "ms read latency p50 (traced), above the device's baseline",
                });
            }
        }
    }
    v
}

fn basis(m: &Model) -> &'static str {
    if super::delay_accounted(m) {
        "IO% by delay accounting, or traced read latency"
    } else {
        "in state D, or traced read latency"
    }
}

fn next(bdi: &str) -> String {
    format!(
        "lower the writer's dirty rate: a write limit on its cgroup (io.max wbps; C), or ionice -c3 under bfq (i); or throttle sooner: lower vm.dirty_bytes / vm.dirty_background_bytes (a few hundred MiB instead of a share of RAM, so writeback starts early and writers pause before the device's queue fills), or cap this device alone: /sys/class/bdi/{bdi}/max_bytes with strict_limit 1 (iolens changes no sysctl)"
    )
}

/// What a bdi is: a device row ("MAJ:MIN" of a disk; "MAJ:MIN-fuseblk"
/// of a fuseblk filesystem's disk), or a mount of an anonymous device
/// ("0:NN": FUSE, NFS; its first mount in mountinfo, by the MAJ:MIN the
/// kernel names the bdi by), else not known (not judged).
enum Target<'a> {
    Device(&'a DeviceRow),
    Mount(&'a AnonMount),
}

fn target<'a>(m: &'a Model, bdi: &str) -> Option<Target<'a>> {
    let dev = bdi.strip_suffix("-fuseblk").unwrap_or(bdi);
    if let Some(d) = m.devices.iter().find(|d| format!("{}:{}", d.major, d.minor) == dev) {
        return Some(Target::Device(d));
    }
    let minor: u32 = dev.strip_prefix("0:")?.parse().ok()?;
    let a = m.last_sample()?.anon_mounts.iter().find(|a| a.minor == minor)?;
    Some(Target::Mount(a))
}

/// The other user processes (not `writers`) that wait with the mount's
/// filesystem among their devices: IO% at or above `wait_pct`, or in
/// state D (a FUSE or NFS call waits there, outside the block layer's
/// accounting).
fn mount_victims(m: &Model, a: &AnonMount, writers: &HashSet<i32>, c: &DirtyThrottledCfg) -> Vec<Culprit> {
    let Some(fs) = crate::model::procdev::anon_name(a) else {
        return Vec::new();
    };
    let accounted = super::delay_accounted(m);
    let mut v: Vec<Culprit> = m
        .procs
        .iter()
        .filter(|p| !p.exited && p.worker.is_none() && !p.raw.cmdline.is_empty())
        .filter(|p| !writers.contains(&p.raw.key.pid) && p.devices.iter().any(|d| d.name == fs))
        .filter_map(|p| {
            let w = super::io_wait(p, accounted, c.wait_pct).or((p.raw.state == 'D').then_some(100.0))?;
            Some(Culprit {
                pid: p.raw.key.pid,
                comm: p.raw.comm.to_string(),
                value: w,
                unit: "% IO wait, or in state D (files on the mount's filesystem open)",
            })
        })
        .collect();
    v.sort_by(|a, b| b.value.total_cmp(&a.value).then(a.pid.cmp(&b.pid)));
    v
}

/// Traced: per bdi with paused writers.
fn traced(
    m: &Model,
    base: &Baselines,
    psi_some: Option<f64>,
    c: &DirtyThrottledCfg,
    dt: f64,
    out: &mut Vec<Candidate>,
) {
    for (bdi, b) in &m.trace.dirty.interval.bdis {
        let w = writers(m, bdi, dt);
        let Some((top, _)) = w.first().filter(|(t, _)| t.value >= c.paused_pct) else {
            continue;
        };
        let pids: HashSet<i32> = w.iter().map(|(c, _)| c.pid).collect();
        let (name, subject, mut others, basis) = match target(m, bdi) {
            Some(Target::Device(d)) => (
                d.name.clone(),
                Subject::Device { name: d.name.clone() },
                victims(m, d, &pids, base, c),
                basis(m),
            ),
            Some(Target::Mount(a)) => {
                let path = if a.mount_point.is_empty() {
                    format!("the {} mount of bdi {bdi}", a.fs_type)
                } else {
                    a.mount_point.clone()
                };
                let others = mount_victims(m, a, &pids, c);
                let basis = "IO% or state D, files on the mount's filesystem open";
                (path.clone(), Subject::Mount { path }, others, basis)
            }
            None => continue,
        };
        if (others.len() as f64) < c.min_victims.max(1.0) {
            continue;
        }
        let n_others = others.len();
        others.truncate(CULPRITS);
        let mut culprits: Vec<Culprit> = w.iter().map(|(c, _)| c.clone()).collect();
        culprits.truncate(CULPRITS);
        let sum = b.sum;
        out.push(Candidate {
            rule: ID,
            severity: Severity::Warning,
            subject,
            evidence: vec![
                Evidence::new("paused", Some(top.value), "%", "traced balance_dirty_pages: the top writer's pauses (sum of pause > 0) over the interval"),
                Evidence::new("pauses", Some(sum.pauses as f64), "", "traced balance_dirty_pages events with pause > 0, all writers on the bdi"),
                Evidence::new("longest pause", Some(sum.max_pause_ms as f64), "ms", "traced balance_dirty_pages pause"),
                Evidence::new("bdi dirty", b.wb_dirty_pages.map(|v| v as f64), "pages", "traced balance_dirty_pages wb_dirty, last event"),
                Evidence::new("bdi set point", b.wb_setpoint_pages.map(|v| v as f64), "pages", "traced balance_dirty_pages wb_setpoint, last event"),
                Evidence::new("others waiting", Some(n_others as f64), "", basis),
                Evidence::new("io some", psi_some, "%", "/proc/pressure/io some, Δ over the interval (the paused writers count in it too)"),
            ],
            text: format!(
                "Dirty throttling on {name} hurts others: {} paused {:.0}% of the last interval in balance_dirty_pages ({} pauses, longest {}; bdi {bdi}), while {} wait{} on {name} ({basis}).",
                culprit_list(&culprits),
                top.value,
                sum.pauses,
                ms(sum.max_pause_ms as f64),
                culprit_list(&others),
                if others.len() == 1 { "s" } else { "" },
            ),
            culprits,
            next: next(bdi),
        });
    }
}

/// Untraced: dirty memory at the system's threshold while others wait.
fn untraced(m: &Model, psi_some: Option<f64>, c: &DirtyThrottledCfg, out: &mut Vec<Candidate>) {
    let Some(vm) = &m.vm else { return };
    let (Some(dirty), Some(limit)) = (vm.dirty_pages, vm.dirty_threshold_pages) else {
        return;
    };
    if limit == 0 || (dirty as f64) < limit as f64 * c.at_limit_pct / 100.0 {
        return;
    }
    let mut writers: Vec<Culprit> = m
        .procs
        .iter()
        .filter(|p| p.worker.is_none() && !p.exited && !p.raw.cmdline.is_empty())
        .filter_map(|p| {
            let w = p.rates.as_deref()?.write_bps;
            (w > 0.0).then(|| Culprit {
                pid: p.raw.key.pid,
                comm: p.raw.comm.to_string(),
                value: w,
                unit: "B/s dirtied (write_bytes; the throttle is not traced)",
            })
        })
        .collect();
    writers.sort_by(|a, b| b.value.total_cmp(&a.value).then(a.pid.cmp(&b.pid)));
    writers.truncate(CULPRITS);
    let pids: HashSet<i32> = writers.iter().map(|w| w.pid).collect();
    let accounted = super::delay_accounted(m);
    let mut others: Vec<Culprit> = m
        .procs
        .iter()
        .filter(|p| !p.exited && p.worker.is_none() && !p.raw.cmdline.is_empty() && !pids.contains(&p.raw.key.pid))
        .filter_map(|p| {
            Some(Culprit {
                pid: p.raw.key.pid,
                comm: p.raw.comm.to_string(),
                value: super::io_wait(p, accounted, c.wait_pct)?,
                unit: if accounted {
                    "% IO wait (delay accounting)"
                } else {
                    "% (in state D)"
                },
            })
        })
        .collect();
    if writers.is_empty() || (others.len() as f64) < c.min_victims.max(1.0) {
        return;
    }
    let n_others = others.len();
    others.truncate(CULPRITS);
    let pct = dirty as f64 / limit as f64 * 100.0;
    out.push(Candidate {
        rule: ID,
        severity: Severity::Warning,
        subject: Subject::System,
        evidence: vec![
            Evidence::new("dirty", Some(dirty as f64), "pages", "/proc/vmstat nr_dirty"),
            Evidence::new("dirty threshold", Some(limit as f64), "pages", "/proc/vmstat nr_dirty_threshold"),
            Evidence::new("others waiting", Some(n_others as f64), "", basis(m)),
            Evidence::new("io some", psi_some, "%", "/proc/pressure/io some, Δ over the interval (the paused writers count in it too)"),
        ],
        text: format!(
            "Dirty memory is at its limit ({pct:.0}% of nr_dirty_threshold): writers are throttled — most dirtying: {} (the throttle is not traced) — while {} wait{} on I/O.",
            culprit_list(&writers),
            culprit_list(&others),
            if others.len() == 1 { "s" } else { "" },
        ),
        culprits: writers,
        next: next("<MAJ:MIN>"),
    });
}

pub fn eval(m: &Model, base: &Baselines, psi_some: Option<f64>, c: &DirtyThrottledCfg, out: &mut Vec<Candidate>) {
    let Some(dt) = m.interval_s.filter(|d| *d > 0.0) else {
        return;
    };
    if m.trace.dirty.active {
        traced(m, base, psi_some, c, dt, out);
    } else {
        untraced(m, psi_some, c, out);
    }
}
