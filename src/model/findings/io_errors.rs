//! I/O errors: requests that completed with an error (traced
//! `block_rq_complete` / `block_rq_error` with a non-zero error), naming
//! the device and the processes whose requests failed. Untraced, the
//! model has no error source yet (no `/dev/kmsg`, no `ioerr_cnt`): the
//! rule needs tracing.

use serde::{Deserialize, Serialize};

use super::{CULPRITS, Candidate, Culprit, Evidence, Severity, Subject, culprit_list};
use crate::model::Model;

pub const ID: &str = "io_errors";

/// Failed requests in an interval at or above which the rule holds.
pub const MIN_ERRORS: f64 = 1.0;
/// A failed request is a finding at once.
pub const ON_S: f64 = 0.0;

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct IoErrorsCfg {
    pub on_s: f64,
    pub min_errors: f64,
}

impl Default for IoErrorsCfg {
    fn default() -> Self {
        IoErrorsCfg {
            on_s: ON_S,
            min_errors: MIN_ERRORS,
        }
    }
}

pub fn eval(m: &Model, c: &IoErrorsCfg, out: &mut Vec<Candidate>) {
    for (d, key, t) in m.traced_devices() {
        if (t.errors as f64) < c.min_errors.max(1.0) {
            continue;
        }
        let done: u64 = t.completed.iter().sum();
        let mut culprits: Vec<Culprit> = m
            .trace
            .procs_on(key)
            .filter(|(_, p)| p.errors > 0)
            .map(|(pid, p)| Culprit {
                pid,
                comm: p.comm.clone(),
                value: p.errors as f64,
                unit: "failed requests (traced)",
            })
            .collect();
        culprits.sort_by(|a, b| b.value.total_cmp(&a.value).then(a.pid.cmp(&b.pid)));
        culprits.truncate(CULPRITS);
        let who = if culprits.is_empty() {
            String::new()
        } else {
            format!(" Failed requests of: {}.", culprit_list(&culprits))
        };
        out.push(Candidate {
            rule: ID,
            severity: Severity::Critical,
            subject: Subject::Device { name: d.name.clone() },
            evidence: vec![
                Evidence::new("failed requests", Some(t.errors as f64), "", "traced block_rq_complete with an error"),
                Evidence::new("completed requests", Some(done as f64), "", "traced block_rq_complete"),
            ],
            culprits,
            text: format!(
                "{} failed {} of {} requests in the last interval.{who}",
                d.name, t.errors, done
            ),
            next: format!(
                "L for the request log; check the kernel log (dmesg | grep {0}) and the device's health (smartctl -a /dev/{0})",
                d.name
            ),
        });
    }
}
