//! A sync-heavy writer: many cache flushes per second on a device (each
//! fsync/fdatasync, O_SYNC or O_DSYNC write that reaches a device with a
//! volatile cache ends in one), naming who asks for them. Traced only:
//! a flush is a completed flush request or empty preflush write, charged
//! to the task that submitted it. On ext4 (and other journalling
//! filesystems) that task is usually the journal thread (`jbd2/<dev>`),
//! committing for the caller of fsync: then the user processes writing
//! to the device are named as the likely callers — the fsync caller is
//! not traced (no `ext4_sync_file_enter` / `sys_enter_fsync` event yet).

use serde::{Deserialize, Serialize};

use super::cfg::ON_S;
use super::{CULPRITS, Candidate, Culprit, Evidence, Severity, Subject, culprit_list};
use crate::model::Model;

pub const ID: &str = "sync_heavy";

/// Flushes per second on a device at or above which it is sync-heavy.
pub const MIN_FLUSHES_PER_S: f64 = 50.0;

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct SyncHeavyCfg {
    pub on_s: f64,
    pub min_flushes_per_s: f64,
}

impl Default for SyncHeavyCfg {
    fn default() -> Self {
        SyncHeavyCfg {
            on_s: ON_S,
            min_flushes_per_s: MIN_FLUSHES_PER_S,
        }
    }
}

/// A journal thread: its flushes are commits on behalf of others.
fn journal(comm: &str) -> bool {
    comm.starts_with("jbd2/") || comm.starts_with("xfsaild") || comm.starts_with("kworker")
}

pub fn eval(m: &Model, c: &SyncHeavyCfg, out: &mut Vec<Candidate>) {
    let Some(dt) = m.interval_s.filter(|d| *d > 0.0) else {
        return;
    };
    for (d, key, t) in m.traced_devices() {
        let flushes = t.completed[3] as f64 / dt;
        if flushes < c.min_flushes_per_s {
            continue;
        }
        let mut by_flush: Vec<Culprit> = m
            .trace
            .procs_on(key)
            .filter(|(_, p)| p.flushes > 0)
            .map(|(pid, p)| Culprit {
                pid,
                comm: p.comm.clone(),
                value: p.flushes as f64 / dt,
                unit: "flushes/s submitted (traced)",
            })
            .collect();
        by_flush.sort_by(|a, b| b.value.total_cmp(&a.value).then(a.pid.cmp(&b.pid)));
        let journal_led = by_flush.first().is_some_and(|f| journal(&f.comm));
        let mut writers: Vec<Culprit> = m
            .trace
            .procs_on(key)
            .filter(|(_, p)| p.write_bytes > 0 && !p.kernel && !journal(&p.comm))
            .map(|(pid, p)| Culprit {
                pid,
                comm: p.comm.clone(),
                value: p.write_bytes as f64 / dt,
                unit: "B/s written (traced); likely fsync caller",
            })
            .collect();
        writers.sort_by(|a, b| b.value.total_cmp(&a.value).then(a.pid.cmp(&b.pid)));
        // Kernel workers flush for others: named only when no user
        // process submits flushes.
        let user: Vec<Culprit> = by_flush
            .iter()
            .filter(|c| m.trace.interval.procs.get(&(c.pid, key)).is_some_and(|p| !p.kernel))
            .cloned()
            .collect();
        let mut culprits = if journal_led && !writers.is_empty() {
            writers
        } else if user.is_empty() {
            by_flush.clone()
        } else {
            user
        };
        culprits.truncate(CULPRITS);
        let who = if journal_led && !culprits.is_empty() {
            format!(
                "submitted by {} (the journal, committing for fsync callers); writing on it: {}",
                by_flush[0].comm,
                culprit_list(&culprits)
            )
        } else if culprits.is_empty() {
            "submitter not traced".to_string()
        } else {
            format!("asked for by {}", culprit_list(&culprits))
        };
        out.push(Candidate {
            rule: ID,
            severity: Severity::Warning,
            subject: Subject::Device { name: d.name.clone() },
            evidence: vec![
                Evidence::new("flushes", Some(flushes), "1/s", "traced flush requests and empty preflush writes (block_rq_complete)"),
                Evidence::new("flush p50", t.latency[3].device.quantile(0.5).map(|n| n as f64 / 1e6), "ms", "traced issue → completion of the flushes"),
                Evidence::new("writes", Some(t.completed[1] as f64 / dt), "1/s", "traced write requests"),
            ],
            text: format!(
                "{} flushes its cache {flushes:.0} times per second: every fsync waits for one; {who}.",
                d.name
            ),
            culprits,
            next: "batch the syncs (group commit, fsync per batch instead of per write), or relax them where safe (fio fsync=N, innodb_flush_log_at_trx_commit=2); Enter on the process".into(),
        });
    }
}
