//! Swapping: pages moved between memory and swap (`pswpin`, `pswpout` of
//! `/proc/vmstat`) at a rate that costs I/O. Swap-in is what stalls
//! processes (a fault waits for the read), so it alone makes the finding
//! critical. Swap traffic is not counted per process: no culprit.

use serde::{Deserialize, Serialize};

use super::cfg::ON_S;
use super::{Candidate, Evidence, Severity, Subject};
use crate::model::Model;

pub const ID: &str = "swapping";

/// Pages swapped in + out per second at or above which the box swaps
/// (256 pages/s: 1 MiB/s at 4 KiB pages).
pub const MIN_PAGES_PER_S: f64 = 256.0;
/// Pages swapped in per second at or above which it is critical (10 MiB/s).
pub const CRITICAL_IN_PER_S: f64 = 2560.0;

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct SwappingCfg {
    pub on_s: f64,
    pub min_pages_per_s: f64,
    pub critical_in_per_s: f64,
}

impl Default for SwappingCfg {
    fn default() -> Self {
        SwappingCfg {
            on_s: ON_S,
            min_pages_per_s: MIN_PAGES_PER_S,
            critical_in_per_s: CRITICAL_IN_PER_S,
        }
    }
}

pub fn eval(m: &Model, c: &SwappingCfg, out: &mut Vec<Candidate>) {
    let Some(vm) = &m.vm else { return };
    let (Some(sin), Some(sout)) = (vm.pswpin_per_s, vm.pswpout_per_s) else {
        return;
    };
    if sin + sout < c.min_pages_per_s {
        return;
    }
    out.push(Candidate {
        rule: ID,
        severity: if sin >= c.critical_in_per_s { Severity::Critical } else { Severity::Warning },
        subject: Subject::System,
        evidence: vec![
            Evidence::new("swap-in", Some(sin), "pages/s", "/proc/vmstat pswpin, Δ over the interval"),
            Evidence::new("swap-out", Some(sout), "pages/s", "/proc/vmstat pswpout, Δ over the interval"),
            Evidence::new("memory", m.mem.map(|x| x.total_bytes as f64), "B", "/proc/meminfo MemTotal"),
        ],
        text: format!(
            "The box swaps: {sin:.0} pages per second in and {sout:.0} out; every swap-in is a process waiting for a read."
        ),
        culprits: Vec::new(),
        next: "vmstat 1 (si/so); VmSwap in /proc/<pid>/status (or smem) shows who is swapped out; add memory or limit the largest process's cgroup (memory.max)".into(),
    });
}
