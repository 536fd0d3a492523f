//! Random I/O on a rotating disk: a busy disk that rotates, where
//! processes' traced requests are mostly not sequential (their traced
//! sequential share of bytes is low), so the disk spends its time
//! seeking. Whether a disk rotates: sysfs `rotational`, except where the
//! flag is copied or made up (loop, virtio/xen, dm, md, zram: see
//! [`super::rotates`]); there only this rule's `rotating` list in the
//! config file declares it.

use serde::{Deserialize, Serialize};

use super::cfg::ON_S;
use super::{CULPRITS, Candidate, Culprit, Evidence, Severity, Subject, culprit_list};
use crate::model::Model;

pub const ID: &str = "random_rotating";

/// %util at or above which the rotating disk is busy.
pub const MIN_UTIL_PCT: f64 = 50.0;
/// A process's traced sequential share of bytes at or below which its I/O is random, %.
pub const MAX_SEQ_PCT: f64 = 20.0;
/// Traced requests per second a process must issue on the disk.
pub const MIN_REQ_PER_S: f64 = 20.0;

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct RandomRotatingCfg {
    pub on_s: f64,
    pub min_util_pct: f64,
    pub max_seq_pct: f64,
    pub min_req_per_s: f64,
    /// Devices declared rotating whatever sysfs says (loop, virtio, dm ...).
    pub rotating: Vec<String>,
}

impl Default for RandomRotatingCfg {
    fn default() -> Self {
        RandomRotatingCfg {
            on_s: ON_S,
            min_util_pct: MIN_UTIL_PCT,
            max_seq_pct: MAX_SEQ_PCT,
            min_req_per_s: MIN_REQ_PER_S,
            rotating: Vec::new(),
        }
    }
}

pub fn eval(m: &Model, c: &RandomRotatingCfg, out: &mut Vec<Candidate>) {
    let Some(dt) = m.interval_s else { return };
    for (d, key, _) in m.traced_devices() {
        let (Some(r), Some(info)) = (&d.rates, &d.info) else {
            continue;
        };
        let declared = c.rotating.contains(&d.name);
        if !(declared || super::rotates(info) == Some(true)) || r.util_pct < c.min_util_pct {
            continue;
        }
        let mut culprits: Vec<Culprit> = m
            .trace
            .procs_on(key)
            .filter(|(_, p)| p.issued as f64 / dt >= c.min_req_per_s)
            .filter_map(|(pid, p)| {
                let s = p.seq_byte_share()? * 100.0;
                (s <= c.max_seq_pct).then(|| Culprit {
                    pid,
                    comm: p.comm.clone(),
                    value: s,
                    unit: "% sequential bytes (traced)",
                })
            })
            .collect();
        if culprits.is_empty() {
            continue;
        }
        culprits.sort_by(|a, b| a.value.total_cmp(&b.value).then(a.pid.cmp(&b.pid)));
        culprits.truncate(CULPRITS);
        let basis = if declared {
            "declared rotating in the config file"
        } else {
            "sysfs rotational"
        };
        out.push(Candidate {
            rule: ID,
            severity: Severity::Warning,
            subject: Subject::Device { name: d.name.clone() },
            evidence: vec![
                Evidence::new("%util", Some(r.util_pct), "%", "/proc/diskstats (a rotating disk: one request at a time)"),
                Evidence::new("lowest sequential share", Some(culprits[0].value), "%", "traced requests of the process"),
                Evidence::new("device sequential share", r.seq_byte_share.map(|s| s * 100.0), "%", "traced requests"),
            ],
            text: format!(
                "{} rotates ({basis}) and is {:.0}% busy seeking: random I/O from {}.",
                d.name,
                r.util_pct,
                culprit_list(&culprits)
            ),
            culprits,
            next: "Enter on the process for its devices and pattern; move random workloads to an SSD, or give them the idle class (i) where the scheduler is bfq".into(),
        });
    }
}
