//! A maintenance job not in the idle class: a backup or maintenance
//! command (tar, rsync, borg, restic, updatedb, fstrim, a recursive cp ...:
//! [`crate::model::jobs::is_maintenance_command`]) is the top I/O user of a
//! device while other processes using the device wait on I/O, and it runs
//! at best-effort or real-time I/O priority (`ioprio_get(2)`, read for
//! every process by the process reader). The next step depends on the
//! device's scheduler: the idle class is served only after the others
//! under bfq and mq-deadline (since Linux 5.14), and does nothing under
//! `none` or `kyber`.

use serde::{Deserialize, Serialize};

use super::cfg::ON_S;
use super::{CULPRITS, Candidate, Evidence, Severity, Subject, culprit_list, device_culprits};
use crate::model::{IoClass, Model, ProcRow};

pub const ID: &str = "maintenance_not_idle";

/// The job's share of the device's I/O at or above which it is the top
/// user, % (traced requests, else disk bytes/s of the device's processes).
pub const MIN_SHARE_PCT: f64 = 50.0;
/// Other processes on the device that must be waiting.
pub const MIN_WAITERS: f64 = 1.0;
/// IO% (delay accounting) at or above which a process is waiting.
pub const WAIT_PCT: f64 = 10.0;

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct MaintenanceCfg {
    pub on_s: f64,
    pub min_share_pct: f64,
    pub min_waiters: f64,
    pub wait_pct: f64,
}

impl Default for MaintenanceCfg {
    fn default() -> Self {
        MaintenanceCfg {
            on_s: ON_S,
            min_share_pct: MIN_SHARE_PCT,
            min_waiters: MIN_WAITERS,
            wait_pct: WAIT_PCT,
        }
    }
}

/// The command line as words (the reader turned NULs into spaces).
fn argv(p: &ProcRow) -> Vec<Vec<u8>> {
    p.raw
        .cmdline
        .split(' ')
        .filter(|w| !w.is_empty())
        .map(|w| w.as_bytes().to_vec())
        .collect()
}

/// What to do, by the device's scheduler.
fn next_step(sched: Option<&str>, dev: &str, pid: i32) -> String {
    match sched {
        Some("bfq" | "mq-deadline") => format!(
            "i on the job gives it the idle class (ionice -c3 -p {pid}): {} serves it after the others",
            sched.unwrap_or_default()
        ),
        _ => format!(
            "ionice has no effect under {} on {dev}: switch it to bfq (echo bfq > /sys/block/{dev}/queue/scheduler; mq-deadline also honours the class) and press i on the job, or limit the job's cgroup (io.max)",
            sched.unwrap_or("an unknown scheduler")
        ),
    }
}

pub fn eval(m: &Model, c: &MaintenanceCfg, out: &mut Vec<Candidate>) {
    let accounted = super::delay_accounted(m);
    for d in &m.devices {
        let Some(info) = &d.info else { continue };
        if !matches!(info.kind, crate::model::DevKind::Disk | crate::model::DevKind::Loop) {
            continue;
        }
        let users = device_culprits(m, d, usize::MAX);
        let total: f64 = users.iter().map(|u| u.value).sum();
        let Some(top) = users.first().filter(|_| total > 0.0) else {
            continue;
        };
        let share = top.value / total * 100.0;
        let Some(p) = m.procs.iter().find(|p| p.raw.key.pid == top.pid) else {
            continue;
        };
        let Some(prio) = p.raw.ioprio else { continue };
        if share < c.min_share_pct
            || prio.class == IoClass::Idle
            || !crate::model::jobs::is_maintenance_command(&p.raw.comm, &argv(p))
        {
            continue;
        }
        let mut waiting = super::device_waiters(m, d, Some(top.pid), accounted, c.wait_pct);
        let n = waiting.len();
        if (n as f64) < c.min_waiters || n == 0 {
            continue;
        }
        waiting.truncate(CULPRITS);
        let class = prio.label(p.raw.nice);
        let sched = info.scheduler.as_deref();
        let mut culprits = vec![top.clone()];
        culprits.extend(waiting.iter().cloned().map(|mut w| {
            w.unit = if accounted {
                "% IO wait (delay accounting), waiting"
            } else {
                "in state D, waiting"
            };
            w
        }));
        out.push(Candidate {
            rule: ID,
            severity: Severity::Warning,
            subject: Subject::Process {
                pid: top.pid,
                comm: top.comm.clone(),
            },
            evidence: vec![
                Evidence::new("share of the device's I/O", Some(share), "%", top.unit),
                Evidence::new("waiting processes", Some(n as f64), "", if accounted { "IO% (delay accounting)" } else { "tasks in state D" }),
                Evidence::new("top waiter", Some(waiting[0].value), waiting[0].unit, "of the processes on the device"),
            ],
            text: format!(
                "{} (PID {}), a maintenance job, does {share:.0}% of the I/O on {} at I/O priority {class} (not idle) while {} wait{} on it ({}); scheduler {}.",
                top.comm,
                top.pid,
                d.name,
                culprit_list(&waiting),
                if n == 1 { "s" } else { "" },
                if accounted { "IO% by delay accounting" } else { "in state D" },
                sched.unwrap_or("n/a"),
            ),
            next: next_step(sched, &d.name, top.pid),
            culprits,
        });
    }
}
