//! Misaligned partition with I/O on it: a partition whose start is off the
//! physical sector (every write of a physical sector is a
//! read-modify-write of two: warning) or off the optimal I/O size the
//! device asks for (a RAID stripe: info), from the alignment verdict of
//! sysfs `start` against `physical_block_size` and `optimal_io_size`,
//! while it does I/O.

use serde::{Deserialize, Serialize};

use super::cfg::ON_S;
use super::{Candidate, Evidence, Severity, Subject};
use crate::model::{AlignVerdict, Model};

pub const ID: &str = "misaligned";

/// Requests per second (reads and writes) at or above which the partition
/// does I/O that the misalignment costs.
pub const MIN_IOPS: f64 = 1.0;

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct MisalignedCfg {
    pub on_s: f64,
    pub min_iops: f64,
}

impl Default for MisalignedCfg {
    fn default() -> Self {
        MisalignedCfg {
            on_s: ON_S,
            min_iops: MIN_IOPS,
        }
    }
}

pub fn eval(m: &Model, c: &MisalignedCfg, out: &mut Vec<Candidate>) {
    for d in &m.devices {
        let (Some(r), Some(a)) = (&d.rates, d.info.as_ref().and_then(|i| i.alignment.as_ref())) else {
            continue;
        };
        let severity = match a.verdict {
            AlignVerdict::Misaligned => Severity::Warning,
            AlignVerdict::NotOptimal => Severity::Info,
            _ => continue,
        };
        let iops = r.total_ios_per_s();
        if iops < c.min_iops {
            continue;
        }
        out.push(Candidate {
            rule: ID,
            severity,
            subject: Subject::Device { name: d.name.clone() },
            evidence: vec![
                Evidence::new("start", Some(a.start_bytes as f64), "B", "sysfs start × 512"),
                Evidence::new(
                    "physical sector",
                    Some(a.physical_block_size as f64),
                    "B",
                    "sysfs queue/physical_block_size",
                ),
                Evidence::new(
                    "offset",
                    Some(a.physical_offset as f64),
                    "B",
                    "start mod physical sector",
                ),
                Evidence::new(
                    "optimal I/O size",
                    a.optimal_io_size.map(|v| v as f64),
                    "B",
                    "sysfs queue/optimal_io_size",
                ),
                Evidence::new("r/s + w/s", Some(iops), "1/s", "/proc/diskstats"),
            ],
            culprits: Vec::new(),
            text: format!(
                "{} is {} and does {iops:.0} requests/s: it {}.",
                d.name,
                a.verdict.text(),
                a.explain()
            ),
            next: format!(
                "Enter on {} for the alignment; the fix is repartitioning (back up first) at a 1 MiB boundary",
                d.name
            ),
        });
    }
}
