//! A hung mount: tasks asleep (S or D) on a FUSE or network filesystem
//! (their `wchan`: [`crate::collect::blocked`]) that completed no read or
//! write call during the whole interval, for the rule's window — a mount
//! that does not answer, not a slow one (a slow filesystem's callers
//! complete calls between waits). Names the mount (from the call's file
//! descriptor, or the only mount of that kind) and the processes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Candidate, Culprit, Evidence, Severity, Subject, culprit_list};
use crate::model::Model;

pub const ID: &str = "hung_mount";

/// Seconds the tasks must stay blocked without progress before the
/// mount is called hung.
pub const HANG_S: f64 = 5.0;
/// Blocked tasks a mount must have.
pub const MIN_TASKS: f64 = 1.0;

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct HungMountCfg {
    pub on_s: f64,
    pub min_tasks: f64,
}

impl Default for HungMountCfg {
    fn default() -> Self {
        HungMountCfg {
            on_s: HANG_S,
            min_tasks: MIN_TASKS,
        }
    }
}

/// A mount's type, how it was named, and its stuck tasks.
type Stuck<'a> = (Option<&'a str>, Option<&'a str>, Vec<Culprit>);

pub fn eval(m: &Model, c: &HungMountCfg, out: &mut Vec<Candidate>) {
    // Mount (or "a FUSE mount" when unknown) → its stuck tasks.
    let mut by_mount: BTreeMap<String, Stuck<'_>> = BTreeMap::new();
    for b in &m.blocked {
        let Some(p) = m.procs.iter().find(|p| p.raw.key.pid == b.pid && !p.exited) else {
            continue;
        };
        // No read or write call completed in the interval.
        let Some(r) = p.rates.as_deref() else { continue };
        if r.syscr_per_s + r.syscw_per_s > 0.0 || r.rchar_bps + r.wchar_bps > 0.0 {
            continue;
        }
        let key = b.mount.clone().unwrap_or_else(|| format!("a {} mount", b.class));
        let e = by_mount
            .entry(key)
            .or_insert_with(|| (b.fs_type.as_deref(), b.basis.as_deref(), Vec::new()));
        e.2.push(Culprit {
            pid: b.pid,
            comm: p.raw.comm.to_string(),
            value: 1.0,
            unit: "task waiting (wchan), no call completed",
        });
    }
    for (mount, (fs, basis, mut tasks)) in by_mount {
        let n = tasks.len();
        if (n as f64) < c.min_tasks || n == 0 {
            continue;
        }
        tasks.sort_by_key(|t| t.pid);
        let wchan = m
            .blocked
            .iter()
            .find(|b| b.pid == tasks[0].pid)
            .map_or("?", |b| b.wchan.as_str());
        out.push(Candidate {
            rule: ID,
            severity: Severity::Critical,
            subject: Subject::Mount { path: mount.clone() },
            evidence: vec![
                Evidence::new("blocked tasks", Some(n as f64), "", "/proc/<pid>/wchan"),
                Evidence::new("calls completed", Some(0.0), "1/s", "/proc/<pid>/io syscr + syscw of those tasks"),
            ],
            text: format!(
                "{mount} ({}) does not answer: {} blocked in {wchan} with no call completed ({}; mount named by {}).",
                fs.unwrap_or("type n/a"),
                culprit_list(&tasks),
                if n == 1 { "1 task".to_string() } else { format!("{n} tasks") },
                basis.unwrap_or("nothing: the call is on a path and several such mounts exist"),
            ),
            next: format!(
                "check the daemon or server behind {mount}; umount -l {mount} detaches it (a FUSE mount: kill its daemon, or echo 1 > /sys/fs/fuse/connections/N/abort)"
            ),
            culprits: tasks,
        });
    }
}
