//! Queue-bound device: requests wait before the device takes them.
//! Traced, the wait is `block_bio_queue` → `block_rq_issue`: the
//! scheduler's queue and the waits before a request exists (a tag, the
//! writeback throttle), which `block_io_start` → issue leaves out (the
//! start fires once a tag is allocated, so under `none` start → issue is
//! about 0 however long the tag wait); start → issue where no bio was
//! traced. Untraced, the queue (aqu-sz) is
//! long — and, where a saved depth probe of the device measured its knee,
//! at least that deep: below the knee the device still serves more in
//! parallel — and `await` well above the device's own low-load baseline.
//! Names the processes that fill the queue.

use serde::{Deserialize, Serialize};

use super::baseline::{self, Baselines};
use super::cfg::{MIN_IOS, ON_S};
use super::slow_device::judged;
use super::{CULPRITS, Candidate, Evidence, Severity, Subject, culprit_list, device_culprits, ms};
use crate::model::Model;
use crate::model::saved::SavedProbes;

pub const ID: &str = "queue_bound";

/// Traced queue wait (p50) at or above which requests wait, ms ...
pub const MIN_QUEUE_MS: f64 = 5.0;
/// ... when also at least this many times the device time (p50).
pub const QUEUE_VS_DEVICE: f64 = 1.0;
/// Untraced: aqu-sz at or above which the queue is long ...
pub const MIN_AQU: f64 = 4.0;
/// ... with await at least this many times its low-load baseline ...
pub const FACTOR: f64 = 4.0;
/// ... and at least this much above it, ms.
pub const MIN_EXCESS_MS: f64 = 5.0;

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct QueueBoundCfg {
    pub on_s: f64,
    pub min_queue_ms: f64,
    pub queue_vs_device: f64,
    pub min_aqu: f64,
    pub factor: f64,
    pub min_excess_ms: f64,
}

impl Default for QueueBoundCfg {
    fn default() -> Self {
        QueueBoundCfg {
            on_s: ON_S,
            min_queue_ms: MIN_QUEUE_MS,
            queue_vs_device: QUEUE_VS_DEVICE,
            min_aqu: MIN_AQU,
            factor: FACTOR,
            min_excess_ms: MIN_EXCESS_MS,
        }
    }
}

pub fn eval(m: &Model, base: &Baselines, saved: &SavedProbes, c: &QueueBoundCfg, out: &mut Vec<Candidate>) {
    for d in &m.devices {
        let (Some(r), Some(info)) = (&d.rates, &d.info) else {
            continue;
        };
        if !judged(Some(info.kind)) {
            continue;
        }
        let traced = baseline::traced(m, d).filter(|t| t.n as f64 >= MIN_IOS);
        let (evidence, what) = if let Some(t) = traced {
            let bio = t.wait_p50_ms.is_some();
            let (p50, mean) = if bio {
                (t.wait_p50_ms, t.wait_mean_ms)
            } else {
                (t.queue_p50_ms, t.queue_mean_ms)
            };
            let holds = |q: Option<f64>, dev: Option<f64>| {
                let (q, dev) = (q?, dev?);
                (q >= c.min_queue_ms && q >= c.queue_vs_device * dev).then_some((q, dev))
            };
            // The p50s first; the means where the p50s do not hold.
            let (q, dev, on_means) = match (holds(p50, t.device_p50_ms), holds(mean, t.device_mean_ms)) {
                (Some((q, d)), _) => (q, d, false),
                (None, Some((q, d))) => (q, d, true),
                (None, None) => continue,
            };
            let source = match (bio, on_means) {
                (true, false) => {
                    "traced block_bio_queue → block_rq_issue, p50 (tag and writeback-throttling waits included)"
                }
                (true, true) => {
                    "traced block_bio_queue → block_rq_issue, mean (tag and writeback-throttling waits included; the p50 was below the device's)"
                }
                (false, false) => "traced start → block_rq_issue, p50",
                (false, true) => "traced start → block_rq_issue, mean (the p50 was below the device's)",
            };
            let (stat, dev_source) = if on_means {
                ("mean", "traced block_rq_issue → block_rq_complete, mean")
            } else {
                ("p50", "traced block_rq_issue → block_rq_complete, p50")
            };
            (
                vec![
                    Evidence::new("queue wait", Some(q), "ms", source),
                    Evidence::new("device latency", Some(dev), "ms", dev_source),
                    Evidence::new("aqu-sz", Some(r.aqu_sz), "", "/proc/diskstats"),
                ],
                format!(
                    "requests to {} wait {} before the device takes them ({stat}, traced), the device then takes {}",
                    d.name,
                    ms(q),
                    ms(dev)
                ),
            )
        } else {
            let (Some(a), Some(b)) = (r.await_ms(), base.await_ms(&d.name)) else {
                continue;
            };
            let ios = (r.read.d_ios + r.write.d_ios) as f64;
            let knee = saved.of_row(d).and_then(|p| p.depth.as_ref()?.knee);
            let long = knee.map_or(c.min_aqu, |k| c.min_aqu.max(f64::from(k)));
            if ios < MIN_IOS || r.aqu_sz < long || a < b * c.factor || a - b < c.min_excess_ms {
                continue;
            }
            (
                vec![
                    Evidence::new("aqu-sz", Some(r.aqu_sz), "", "/proc/diskstats"),
                    Evidence::new(
                        "depth probe knee",
                        knee.map(f64::from),
                        "requests",
                        "saved probe result: the last depth that still gained ≥ 10% (iolens probe depth)",
                    ),
                    Evidence::new("await", Some(a), "ms", "/proc/diskstats"),
                    Evidence::new(
                        "baseline await",
                        Some(b),
                        "ms",
                        "p10 of this device's low-load intervals",
                    ),
                ],
                format!(
                    "{} has {:.1} requests queued on average and they take {} against {} at low load",
                    d.name,
                    r.aqu_sz,
                    ms(a),
                    ms(b)
                ),
            )
        };
        let culprits = device_culprits(m, d, CULPRITS);
        let who = if culprits.is_empty() {
            String::new()
        } else {
            format!(" Filling the queue: {}.", culprit_list(&culprits))
        };
        out.push(Candidate {
            rule: ID,
            severity: Severity::Warning,
            subject: Subject::Device { name: d.name.clone() },
            evidence,
            culprits,
            text: format!("Queue-bound: {what}.{who}"),
            next: format!(
                "Enter on {0} for its latency split; lower the top issuer's priority (i: ionice) or depth, or check /sys/block/{0}/queue/scheduler and nr_requests",
                d.name
            ),
        });
    }
}
