//! A cgroup at its I/O limit while its processes wait: over the cgroup
//! view's window ([`crate::model::cgroup::AT_LIMIT_WINDOW_S`], 3 s) the
//! cgroup's kernel-counted rate on a device reaches a share of a throttle
//! limit that binds it (v2 `io.max`, its own or an ancestor's; v1
//! `blkio.throttle.*_device`), and its member processes wait on I/O (IO%
//! from delay accounting, else state D) or its io pressure is high. The
//! window smooths already, so the rule's own window is shorter.

use serde::{Deserialize, Serialize};

use super::{CULPRITS, Candidate, Culprit, Evidence, Severity, Subject, culprit_list};
use crate::model::Model;
use crate::model::cgroup::{CgDevice, CgroupRow};

pub const ID: &str = "cgroup_at_limit";

/// Seconds the condition must hold (on top of the 3 s rate window).
pub const ON_S: f64 = 2.0;
/// Share of a limit the window's rate must reach, %.
pub const LIMIT_SHARE_PCT: f64 = 90.0;
/// Member processes that must be waiting (unless the pressure is high).
pub const MIN_WAITERS: f64 = 1.0;
/// IO% (delay accounting) at or above which a member is waiting.
pub const WAIT_PCT: f64 = 10.0;
/// The cgroup's io pressure "some" share at or above which its processes
/// wait, whatever their IO%, %.
pub const PSI_SOME_PCT: f64 = 10.0;

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct CgroupLimitCfg {
    pub on_s: f64,
    pub limit_share_pct: f64,
    pub min_waiters: f64,
    pub wait_pct: f64,
    pub psi_some_pct: f64,
}

impl Default for CgroupLimitCfg {
    fn default() -> Self {
        CgroupLimitCfg {
            on_s: ON_S,
            limit_share_pct: LIMIT_SHARE_PCT,
            min_waiters: MIN_WAITERS,
            wait_pct: WAIT_PCT,
            psi_some_pct: PSI_SOME_PCT,
        }
    }
}

/// The limit that binds most on `d`: (name, limit, window rate).
fn binding(d: &CgDevice) -> Option<(&'static str, f64, f64)> {
    let w = d.window_rates.as_ref()?;
    let e = &d.effective_limits;
    [
        ("rbps", e.rbps, Some(w.read_bps)),
        ("wbps", e.wbps, Some(w.write_bps)),
        ("riops", e.riops, w.read_iops),
        ("wiops", e.wiops, w.write_iops),
    ]
    .into_iter()
    .filter_map(|(k, lim, v)| Some((k, lim.filter(|l| *l > 0)? as f64, v?)))
    .max_by(|a, b| (a.2 / a.1).total_cmp(&(b.2 / b.1)))
}

/// The v1 blkio.throttle file (less `_device`) of an io.max key.
fn v1_file(kind: &str) -> &'static str {
    match kind {
        "rbps" => "read_bps",
        "wbps" => "write_bps",
        "riops" => "read_iops",
        _ => "write_iops",
    }
}

/// Members waiting on I/O, and members doing I/O (by disk B/s).
fn members(m: &Model, row: &CgroupRow, accounted: bool, c: &CgroupLimitCfg) -> (Vec<Culprit>, Vec<Culprit>) {
    let (mut waiting, mut doing) = (Vec::new(), Vec::new());
    for p in m
        .procs
        .iter()
        .filter(|p| row.pids.contains(&p.raw.key.pid) && !p.exited)
    {
        let r = p.rates.as_deref();
        let culprit = |value, unit| Culprit {
            pid: p.raw.key.pid,
            comm: p.raw.comm.to_string(),
            value,
            unit,
        };
        let w = if accounted {
            r.and_then(|r| r.io_wait_pct).filter(|w| *w >= c.wait_pct)
        } else {
            (p.raw.state == 'D').then_some(100.0)
        };
        if let Some(w) = w {
            waiting.push(culprit(
                w,
                if accounted {
                    "% IO wait (delay accounting)"
                } else {
                    "% (in state D)"
                },
            ));
        }
        if let Some(b) = r.map(|r| r.disk_bps()).filter(|b| *b > 0.0) {
            doing.push(culprit(b, "B/s (read_bytes + write_bytes)"));
        }
    }
    for v in [&mut waiting, &mut doing] {
        v.sort_by(|a, b| b.value.total_cmp(&a.value).then(a.pid.cmp(&b.pid)));
    }
    (waiting, doing)
}

pub fn eval(m: &Model, c: &CgroupLimitCfg, out: &mut Vec<Candidate>) {
    let Some(view) = &m.cgroups else { return };
    let accounted = super::delay_accounted(m);
    for row in &view.rows {
        let Some((d, (kind, limit, rate))) = row
            .devices
            .iter()
            .filter_map(|d| Some((d, binding(d)?)))
            .max_by(|a, b| (a.1.2 / a.1.1).total_cmp(&(b.1.2 / b.1.1)))
        else {
            continue;
        };
        let share = rate / limit * 100.0;
        if share < c.limit_share_pct {
            continue;
        }
        let (waiting, mut doing) = members(m, row, accounted, c);
        let psi = row.pressure.and_then(|p| p.some_pct);
        let n = waiting.len();
        if (n as f64) < c.min_waiters.max(1.0) && psi.is_none_or(|s| s < c.psi_some_pct) {
            continue;
        }
        doing.truncate(CULPRITS);
        let unit = if kind.ends_with("bps") { "B/s" } else { "IO/s" };
        let rate_text = if unit == "B/s" {
            crate::format::rate(rate)
        } else {
            format!("{rate:.0} IO/s")
        };
        out.push(Candidate {
            rule: ID,
            severity: Severity::Warning,
            subject: Subject::Cgroup { path: row.path.clone() },
            evidence: vec![
                Evidence::new("share of the limit", Some(share), "%", "cgroup io.stat / blkio.throttle counters over 3 s against io.max / blkio.throttle limit"),
                Evidence::new("limit", Some(limit), unit, "io.max / blkio.throttle.*_device (the binding one)"),
                Evidence::new("rate", Some(rate), unit, "cgroup counters over 3 s"),
                Evidence::new("waiting members", Some(n as f64), "", if accounted { "IO% (delay accounting)" } else { "tasks in state D" }),
                Evidence::new("io pressure some", psi, "%", "cgroup io.pressure some, Δ over the interval"),
            ],
            text: format!(
                "Cgroup {} runs at {share:.0}% of its {kind} limit on {} ({rate_text}) while {n} of its processes wait on I/O{}.",
                row.path,
                d.device,
                if doing.is_empty() { String::new() } else { format!("; doing the I/O: {}", culprit_list(&doing)) }
            ),
            culprits: if doing.is_empty() { waiting.into_iter().take(CULPRITS).collect() } else { doing },
            next: format!(
                "C for the cgroups pane; raise or remove the {kind} limit on {} if the work should go faster (v2: io.max of {path}; v1: blkio.throttle.{}_device of {path} in the blkio hierarchy)",
                d.device,
                v1_file(kind),
                path = row.path,
            ),
        });
    }
}
