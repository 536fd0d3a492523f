//! Slow device: the device itself is slow. Its requests take long in the
//! device (issue → completion, traced; `await` untraced) while its queue
//! is short, so the time is not spent waiting behind other requests: a
//! dying disk, a throttled cloud volume, a slow backing file.

use serde::{Deserialize, Serialize};

use super::baseline::{self, Baselines};
use super::cfg::{MIN_IOS, ON_S};
use super::{CULPRITS, Candidate, Evidence, Severity, Subject, culprit_list, device_culprits, ms};
use crate::model::{DevKind, Model};

pub const ID: &str = "slow_device";

/// aqu-sz at or below which the queue is short.
pub const SHORT_QUEUE: f64 = 2.0;
/// Device latency (p50) at or above which a disk known not to rotate is slow, ms.
pub const CEILING_SSD_MS: f64 = 10.0;
/// ... a disk known to rotate.
pub const CEILING_ROTATING_MS: f64 = 50.0;
/// ... a device whose rotation is not known (loop, virtio, unknown flag).
pub const CEILING_UNKNOWN_MS: f64 = 15.0;
/// Times its own low-load baseline at or above which a device is slow ...
pub const FACTOR: f64 = 5.0;
/// ... when also at least this much above it, ms.
pub const MIN_EXCESS_MS: f64 = 5.0;

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct SlowDeviceCfg {
    pub on_s: f64,
    pub short_queue: f64,
    pub ceiling_ssd_ms: f64,
    pub ceiling_rotating_ms: f64,
    pub ceiling_unknown_ms: f64,
    pub factor: f64,
    pub min_excess_ms: f64,
}

impl Default for SlowDeviceCfg {
    fn default() -> Self {
        SlowDeviceCfg {
            on_s: ON_S,
            short_queue: SHORT_QUEUE,
            ceiling_ssd_ms: CEILING_SSD_MS,
            ceiling_rotating_ms: CEILING_ROTATING_MS,
            ceiling_unknown_ms: CEILING_UNKNOWN_MS,
            factor: FACTOR,
            min_excess_ms: MIN_EXCESS_MS,
        }
    }
}

/// Devices the latency rules judge: those that issue requests of their own
/// (a partition's are its disk's; dm and md pass bios to the devices below).
pub(crate) fn judged(kind: Option<DevKind>) -> bool {
    matches!(kind, Some(DevKind::Disk | DevKind::Loop))
}

pub fn eval(m: &Model, base: &Baselines, c: &SlowDeviceCfg, out: &mut Vec<Candidate>) {
    for d in &m.devices {
        let (Some(r), Some(info)) = (&d.rates, &d.info) else {
            continue;
        };
        if !judged(Some(info.kind)) || r.aqu_sz > c.short_queue {
            continue;
        }
        let ios = r.read.d_ios + r.write.d_ios;
        let traced = baseline::traced(m, d).filter(|t| t.n as f64 >= MIN_IOS);
        let (lat, source, base_ms) = match traced.and_then(|t| t.device_p50_ms) {
            Some(v) => (
                v,
                "traced block_rq_issue → block_rq_complete, p50",
                base.device_ms(&d.name),
            ),
            None if traced.is_none() && ios as f64 >= MIN_IOS => match r.await_ms() {
                Some(v) => (v, "/proc/diskstats await (untraced)", base.await_ms(&d.name)),
                None => continue,
            },
            None => continue,
        };
        let (ceiling, kind) = match baseline::rotates(info) {
            Some(true) => (c.ceiling_rotating_ms, "a rotating disk"),
            Some(false) => (c.ceiling_ssd_ms, "a non-rotating disk"),
            None => (c.ceiling_unknown_ms, "a device of unknown kind"),
        };
        let over_base = base_ms.is_some_and(|b| lat >= b * c.factor && lat - b >= c.min_excess_ms);
        if lat < ceiling && !over_base {
            continue;
        }
        let why = if lat >= ceiling {
            format!("at or above the {} ceiling for {kind}", ms(ceiling))
        } else {
            format!(
                "{:.0}× its own low-load {}",
                lat / base_ms.unwrap_or(lat),
                ms(base_ms.unwrap_or(0.0))
            )
        };
        let culprits = device_culprits(m, d, CULPRITS);
        let who = if culprits.is_empty() {
            String::new()
        } else {
            format!(" Waiting on it: {}.", culprit_list(&culprits))
        };
        out.push(Candidate {
            rule: ID,
            severity: Severity::Warning,
            subject: Subject::Device { name: d.name.clone() },
            evidence: vec![
                Evidence::new("device latency", Some(lat), "ms", source),
                Evidence::new("baseline", base_ms, "ms", "p10 of this device's low-load intervals"),
                Evidence::new("ceiling", Some(ceiling), "ms", "per-kind ceiling (config)"),
                Evidence::new("aqu-sz", Some(r.aqu_sz), "", "/proc/diskstats"),
                Evidence::new("r/s + w/s", Some(r.total_ios_per_s()), "1/s", "/proc/diskstats"),
            ],
            culprits,
            text: format!(
                "{} is slow: its requests take {} in the device, {why}, with a short queue (aqu-sz {:.1}).{who}",
                d.name,
                ms(lat),
                r.aqu_sz
            ),
            next: format!(
                "Enter on {0} for its latency, L for the request log; check the device itself (smartctl -a /dev/{0}, dmesg, the volume's limits)",
                d.name
            ),
        });
    }
}
