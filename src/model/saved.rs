//! Saved probe results, as the model uses them: the lines that `iolens
//! probe` and the dashboard append to the results file (one JSON object
//! per line, [`crate::probe::store`]), read back per device. A result
//! belongs to the device its `device.name` names (the diskstats name, as
//! the exporter's `probe_*` gauges label it). Pure: the text comes from
//! the caller.

use std::collections::BTreeMap;

use serde_json::Value;

/// Latency quantiles kept, with their JSON field.
const QUANTILES: [(&str, &str); 5] = [
    ("50", "p50_ms"),
    ("90", "p90_ms"),
    ("99", "p99_ms"),
    ("99.9", "p99_9_ms"),
    ("100", "max_ms"),
];

/// A saved queue-depth sweep (`iolens probe depth`): random reads of `bs`
/// bytes at each depth.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DepthCurve {
    /// When the sweep started, s since the Unix epoch.
    pub started_unix: f64,
    pub bs: Option<f64>,
    /// (queue depth, IOPS) of every depth measured, shallowest first.
    pub points: Vec<(u32, f64)>,
    /// The last depth that still gained ≥ 10% over the one before.
    pub knee: Option<u32>,
    /// The sweep said its IOPS may be off by more than 15% (other I/O on
    /// the device, an unsteady rate).
    pub noisy: bool,
}

impl DepthCurve {
    /// The IOPS measured at the knee.
    pub fn knee_iops(&self) -> Option<f64> {
        let k = self.knee?;
        self.points.iter().find(|p| p.0 == k).map(|p| p.1)
    }

    /// The most IOPS of any depth.
    pub fn best_iops(&self) -> Option<f64> {
        self.points.iter().map(|p| p.1).reduce(f64::max)
    }

    /// One request at a time is the device's limit: the sweep measured
    /// QD 2 and found no gain (its knee is QD 1).
    pub fn no_gain_beyond_qd1(&self) -> bool {
        self.knee == Some(1) && self.points.iter().any(|p| p.0 > 1)
    }
}

/// One device's newest completed probe result.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SavedProbe {
    pub device: String,
    /// When it started, s since the Unix epoch.
    pub started_unix: f64,
    /// The verdict's class ("nvme", "hdd", "virtual_or_cached", ...).
    pub verdict: String,
    /// Random reads at QD 1: block size, IOPS, latency quantiles in seconds.
    pub random_bs: Option<f64>,
    pub random_iops: Option<f64>,
    pub latency_s: Vec<(&'static str, f64)>,
    /// Sequential sweep: median zone rate, bytes/s.
    pub seq_bps: Option<f64>,
    /// The queue-depth sweep of this result.
    pub depth: Option<DepthCurve>,
}

/// One line of the results file: a completed probe of a device, else `None`.
fn line(text: &str) -> Option<SavedProbe> {
    let v = serde_json::from_str::<Value>(text).ok()?;
    if v["status"] != "completed" {
        return None;
    }
    let device = v["device"]["name"].as_str().filter(|d| !d.is_empty())?;
    let started = v["started_unix"].as_f64().unwrap_or(0.0);
    let r = &v["random"];
    let q = &v["queue_depth_sweep"];
    let points: Vec<(u32, f64)> = q["points"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let d = u32::try_from(p["queue_depth"].as_u64()?).ok()?;
            Some((d, p["iops"].as_f64().filter(|i| i.is_finite() && *i > 0.0)?))
        })
        .collect();
    Some(SavedProbe {
        device: device.to_string(),
        started_unix: started,
        verdict: v["verdict"]["class"].as_str().unwrap_or("unknown").to_string(),
        random_bs: r["bs"].as_f64(),
        random_iops: r["iops"].as_f64(),
        latency_s: QUANTILES
            .iter()
            .filter_map(|(q, field)| r["latency"][*field].as_f64().map(|ms| (*q, ms / 1e3)))
            .collect(),
        seq_bps: v["sweep"]["median_mb_per_s"].as_f64().map(|m| m * 1e6),
        depth: (!points.is_empty()).then(|| DepthCurve {
            started_unix: started,
            bs: q["bs"].as_f64(),
            knee: q["knee"].as_u64().and_then(|k| u32::try_from(k).ok()),
            noisy: q["noise"].as_array().is_some_and(|n| !n.is_empty()),
            points,
        }),
    })
}

/// The newest completed result per device from the lines of a results
/// file (by device name); lines that do not parse, cancelled probes and
/// probes of no device are skipped.
pub fn parse(text: &str) -> Vec<SavedProbe> {
    let mut by_dev: BTreeMap<String, SavedProbe> = BTreeMap::new();
    for p in text.lines().filter_map(line) {
        if by_dev.get(&p.device).is_some_and(|o| o.started_unix > p.started_unix) {
            continue;
        }
        by_dev.insert(p.device.clone(), p);
    }
    by_dev.into_values().collect()
}

/// What each device showed it can do in its saved results: per device,
/// the newest completed result that has each part (a later `probe depth`
/// does not hide an earlier sweep's MB/s).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SavedProbes {
    pub devices: BTreeMap<String, SavedProbe>,
    /// Why the results file could not be read (missing is no error).
    pub error: Option<String>,
}

impl SavedProbes {
    pub fn from_text(text: &str) -> SavedProbes {
        let mut lines: Vec<SavedProbe> = text.lines().filter_map(line).collect();
        // Oldest first (stable: the file's order among equal times), so
        // each part is the newest line's that has it.
        lines.sort_by(|a, b| a.started_unix.total_cmp(&b.started_unix));
        let mut devices: BTreeMap<String, SavedProbe> = BTreeMap::new();
        for p in lines {
            let e = devices.entry(p.device.clone()).or_default();
            e.device = p.device;
            e.started_unix = p.started_unix;
            e.verdict = p.verdict;
            if p.random_iops.is_some() {
                (e.random_bs, e.random_iops, e.latency_s) = (p.random_bs, p.random_iops, p.latency_s);
            }
            if p.seq_bps.is_some() {
                e.seq_bps = p.seq_bps;
            }
            if p.depth.is_some() {
                e.depth = p.depth;
            }
        }
        SavedProbes { devices, error: None }
    }

    /// The saved results of device `name`.
    pub fn of(&self, name: &str) -> Option<&SavedProbe> {
        self.devices.get(name)
    }

    /// The saved results of a device row: its own, else (a partition)
    /// its disk's.
    pub fn of_row(&self, d: &crate::model::DeviceRow) -> Option<&SavedProbe> {
        self.of(&d.name)
            .or_else(|| self.of(d.info.as_ref()?.parent.as_deref()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::{Status, example};

    fn line(mut r: crate::probe::ProbeResult, device: &str, started: u64) -> String {
        r.started_unix = started;
        if let Some(d) = r.device.as_mut() {
            d.name = device.to_string();
        }
        crate::format::json(&r).unwrap()
    }

    #[test]
    fn each_part_from_the_newest_result_that_has_it() {
        let full = example::result(Status::Completed);
        let depth = example::qd_result(Status::Completed);
        let curve = depth.queue_depth_sweep.clone().unwrap();
        let text = [
            line(depth.clone(), "sda", 300),
            line(full.clone(), "sda", 200),
            "{not json".to_string(),
            line(example::qd_result(Status::Cancelled), "sda", 400),
            line(full.clone(), "sdb", 100),
        ]
        .join("\n");
        let s = SavedProbes::from_text(&text);
        let sda = s.of("sda").unwrap();
        // The newer depth sweep (a cancelled one is skipped) does not hide
        // the older full probe's sequential rate and QD 1 IOPS.
        assert_eq!(sda.started_unix, 300.0);
        assert_eq!(
            sda.seq_bps,
            full.sweep.as_ref().and_then(|s| s.median_mb_per_s).map(|m| m * 1e6)
        );
        assert_eq!(sda.random_iops, full.random.as_ref().and_then(|r| r.iops));
        let d = sda.depth.as_ref().unwrap();
        assert_eq!(d.knee, curve.knee);
        assert_eq!(d.points.len(), curve.points.len());
        assert_eq!(d.points[0], (1, curve.points[0].iops.unwrap()));
        assert_eq!(
            d.best_iops(),
            curve.points.iter().filter_map(|p| p.iops).reduce(f64::max)
        );
        let k = curve.knee.unwrap();
        assert_eq!(
            d.knee_iops(),
            curve.points.iter().find(|p| p.queue_depth == k).and_then(|p| p.iops)
        );
        assert!(!d.no_gain_beyond_qd1());
        assert_eq!(d.noisy, !curve.noise.is_empty());
        assert!(s.of("sdb").unwrap().depth.is_none());
        assert!(s.of("sdc").is_none());
        // The exporter's view: the newest completed result alone.
        let p = parse(&text);
        assert_eq!(
            (p[0].device.as_str(), p[0].started_unix, p[0].seq_bps),
            ("sda", 300.0, None)
        );
    }

    #[test]
    fn a_knee_at_qd1_is_no_gain_only_when_qd2_was_measured() {
        let mut c = DepthCurve {
            points: vec![(1, 100.0), (2, 105.0), (4, 104.0)],
            knee: Some(1),
            ..Default::default()
        };
        assert!(c.no_gain_beyond_qd1());
        c.points.truncate(1);
        assert!(!c.no_gain_beyond_qd1());
    }
}
