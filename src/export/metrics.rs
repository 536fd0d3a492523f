//! What `iolens export` exposes, accumulated from the model sample by
//! sample (pure: no I/O, no clock), and its encoding with the Prometheus
//! project's client library (`prometheus-client`: OpenMetrics text; the
//! classic text format is derived from it, see [`text_format`]).
//!
//! Only what node_exporter's `node_disk_*` lacks: per-command I/O, per
//! cgroup I/O and pressure, traced request counts and latency histograms,
//! the last probe result per device ([`super::probes`]) and iolens's own
//! health ([`super::health`]).

use std::collections::{BTreeMap, HashMap};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use super::family::{Labels, counter_family};
use super::hist::Hist;
use crate::collect::trace::block::Dev;
use crate::model::Model;
use crate::model::process::ProcRates;

/// The per-command counters, in this order; the last [`DIRTY_COUNTERS`]
/// only once the dirty throttle was traced (untraced they are unknown,
/// not 0: no family).
const PROC_COUNTERS: [(&str, &str); N_COUNTERS] = [
    (
        "process_read_bytes",
        "Bytes the processes of this command made the storage read (/proc/<pid>/io read_bytes), own I/O only, accumulated by iolens",
    ),
    (
        "process_dirtied_bytes",
        "Bytes the processes of this command dirtied for writeback (/proc/<pid>/io write_bytes; the disk writes them later)",
    ),
    (
        "process_cancelled_write_bytes",
        "Dirtied bytes dropped before writeback by this command's truncate or delete",
    ),
    (
        "process_syscall_read_bytes",
        "Bytes through read syscalls (rchar, page-cache hits included)",
    ),
    ("process_syscall_written_bytes", "Bytes through write syscalls (wchar)"),
    ("process_read_syscalls", "Read syscalls (syscr)"),
    ("process_write_syscalls", "Write syscalls (syscw)"),
    (
        "process_dirty_paused_seconds",
        "Seconds the processes of this command were paused by the dirty throttle (traced writeback:balance_dirty_pages pauses)",
    ),
    (
        "process_dirty_pauses",
        "Pauses of the processes of this command in the dirty throttle (traced balance_dirty_pages events with pause > 0)",
    ),
];
const N_COUNTERS: usize = 9;
const DIRTY_COUNTERS: usize = 2;

/// The series for commands outside the top N.
pub const OTHER: &str = "other";
/// Samples a command stays exported after it left the top 2N.
pub(super) const HOLD_SAMPLES: u32 = 30;
/// Per-sample decay of a command's recent activity (its ranking).
pub(super) const DECAY: f64 = 0.9;
/// Commands tracked at most (the least active idle ones are forgotten).
const MAX_COMMS: usize = 4096;

/// The interval's counts back from the rates (whole bytes and calls: the
/// rates are integer deltas over `dt`, so rounding undoes the division's
/// float error and the counters stay exact, e.g. 32 MiB, not 32 MiB − 4e-9).
fn amounts(r: &ProcRates, dt: f64) -> [f64; N_COUNTERS] {
    let [a, b, c, d, e, f, g] = [
        r.read_bps,
        r.write_bps,
        r.cancelled_write_bps,
        r.rchar_bps,
        r.wchar_bps,
        r.syscr_per_s,
        r.syscw_per_s,
    ]
    .map(|rate| (rate * dt).round());
    // The throttle's figures are the interval's, exact (0 untraced: not
    // encoded before the throttle was traced).
    let paused_s = r.dirty_paused_ms.unwrap_or(0) as f64 / 1000.0;
    [a, b, c, d, e, f, g, paused_s, r.dirty_pauses.unwrap_or(0) as f64]
}

#[derive(Debug, Clone, Default)]
struct Comm {
    /// Accumulated while the command was exported on its own series.
    own: [f64; N_COUNTERS],
    /// Storage bytes per sample, decayed: what ranks the commands.
    rank: Ranked,
}

/// A series' place in the ranking that gives the top N their own series.
#[derive(Debug, Clone, Default)]
pub(super) struct Ranked {
    /// Activity per sample, decayed by [`DECAY`] each sample.
    pub recent: f64,
    pub exported: bool,
    /// Consecutive samples outside the top 2N while exported.
    pub out_for: u32,
}

/// Ranking with hysteresis, before a step is counted (a busy newcomer
/// gets its own series at once): in at the top `n`, out after
/// [`HOLD_SAMPLES`] samples below the top 2`n`; ties by key.
pub(super) fn rerank<K: Ord>(mut items: Vec<(&K, &mut Ranked)>, n: usize) {
    items.sort_by(|a, b| b.1.recent.total_cmp(&a.1.recent).then_with(|| a.0.cmp(b.0)));
    for (r, (_, c)) in items.into_iter().enumerate() {
        if r < n && c.recent >= 1.0 {
            c.exported = true;
            c.out_for = 0;
        } else if c.exported && r >= 2 * n {
            c.out_for += 1;
            if c.out_for >= HOLD_SAMPLES {
                c.exported = false;
                c.out_for = 0;
            }
        } else {
            c.out_for = 0;
        }
    }
}

/// One device's traced counters.
#[derive(Debug, Clone, Default)]
struct DevTrace {
    name: String,
    issued: u64,
    sequential: u64,
    /// Bytes of the issued requests, and of the sequential ones.
    bytes: u64,
    sequential_bytes: u64,
    /// Total latency (start → completion) per op: read, write, discard, flush.
    latency: [Hist; 4],
}

/// One cgroup's counters.
#[derive(Debug, Clone, Default)]
struct Cgroup {
    name: String,
    read_bytes: f64,
    written_bytes: f64,
    read_ios: Option<f64>,
    write_ios: Option<f64>,
    /// The kernel's `total=` of io.pressure, µs (absolute).
    some_us: Option<u64>,
    full_us: Option<u64>,
}

/// Everything exported, accumulated since iolens started.
#[derive(Debug, Clone, Default)]
pub struct Exported {
    /// The last probe result per device (`--probe-results`).
    pub probes: Vec<super::probes::LastProbe>,
    /// The findings held at the last sample.
    pub findings: super::findings::Held,
    /// The jobs of the last sample.
    pub jobs: Vec<super::jobs::JobSeries>,
    /// The per-file counters.
    pub files: super::files::Files,
    /// How many commands get their own series.
    pub top: usize,
    comms: HashMap<String, Comm>,
    other: [f64; N_COUNTERS],
    /// The dirty throttle was traced in some interval (its counters exist).
    dirty_traced: bool,
    cgroups: BTreeMap<String, Cgroup>,
    devices: BTreeMap<(u32, u32), DevTrace>,
    /// Own health.
    pub samples: u64,
    pub sample_errors: u64,
    pub last_sample_unix_s: f64,
    pub last_sample_duration_s: f64,
    pub trace_active: bool,
    /// The last interval's traced share (`None`: tracing off).
    pub trace_share: Option<f64>,
    pub trace_lost_events: u64,
    pub trace_unmatched: u64,
    /// The tracer's own CPU so far, as its budget counts it, ns (`None`
    /// when nothing holds the tracer); and the budget, share of one core
    /// (`None` without one, as at a fixed duty).
    pub tracer_cpu_ns: Option<u64>,
    pub trace_budget: Option<f64>,
    pub exit_record_overflows: u64,
    /// Scrapes served as OpenMetrics and as the text format, and
    /// requests answered with an error (set by the server's counters).
    pub scrapes: [u64; 2],
    pub http_errors: u64,
}

impl Exported {
    pub fn new(top: usize) -> Self {
        Exported {
            top: top.max(1),
            ..Default::default()
        }
    }

    /// Fold in the model's last interval (after `Model::update` and
    /// `apply_trace`); `sample_s` is how long the sample took to read.
    pub fn update(&mut self, m: &Model, sample_s: f64) {
        self.samples += 1;
        self.sample_errors += m.errors.len() as u64;
        self.last_sample_unix_s = m.wall_ns as f64 / 1e9;
        self.last_sample_duration_s = sample_s;
        self.trace_active = m.trace.active;
        self.trace_share = m.trace.active.then_some(m.trace.interval.share.0);
        self.dirty_traced |= m.trace.dirty.active;
        if let Some(c) = m.trace.cost {
            *self.tracer_cpu_ns.get_or_insert(0) += c.cpu_ns;
            self.trace_budget = c.budget;
        }
        self.exit_record_overflows = m.exits.overflows;
        let Some(dt) = m.interval_s else { return };
        self.update_comms(m, dt);
        self.update_cgroups(m, dt);
        self.files.update(m, self.top);
        let iv = &m.trace.interval;
        self.trace_lost_events += iv.lost_events;
        self.trace_unmatched += iv.unmatched;
        for (dev, t) in &iv.devices {
            let Dev { major, minor } = *dev;
            let name = m
                .devices
                .iter()
                .find(|d| d.major == major && d.minor == minor)
                .map_or_else(|| format!("{major}:{minor}"), |d| d.name.clone());
            let d = self.devices.entry((major, minor)).or_default();
            d.name = name;
            d.issued += t.issued;
            d.sequential += t.sequential;
            d.bytes += t.issued_bytes;
            d.sequential_bytes += t.sequential_bytes;
            for (h, l) in d.latency.iter_mut().zip(&t.latency) {
                h.add(&l.total);
            }
        }
    }

    fn update_comms(&mut self, m: &Model, dt: f64) {
        let mut step: HashMap<String, [f64; N_COUNTERS]> = HashMap::new();
        for p in &m.procs {
            let Some(r) = &p.rates else { continue };
            // Kernel workers by role, not by their changing comm.
            let comm = match &p.worker {
                Some(w) => format!("[{}]", w.label()),
                None => p.raw.comm.to_string(),
            };
            let a = amounts(r, dt);
            let e = step.entry(comm).or_default();
            for (x, y) in e.iter_mut().zip(a) {
                *x += y;
            }
        }
        for c in self.comms.values_mut() {
            c.rank.recent *= DECAY;
        }
        for (comm, a) in &step {
            if let Some(c) = self.comms.get_mut(comm) {
                c.rank.recent += a[0] + a[1];
            } else if self.comms.len() < MAX_COMMS {
                let c = Comm {
                    rank: Ranked {
                        recent: a[0] + a[1],
                        ..Default::default()
                    },
                    ..Default::default()
                };
                self.comms.insert(comm.clone(), c);
            }
        }
        rerank(self.comms.iter_mut().map(|(k, c)| (k, &mut c.rank)).collect(), self.top);
        for (comm, a) in step {
            let target = match self.comms.get_mut(&comm) {
                Some(c) if c.rank.exported => &mut c.own,
                _ => &mut self.other,
            };
            for (x, y) in target.iter_mut().zip(a) {
                *x += y;
            }
        }
        // Forget idle commands that have no series of their own (their
        // series, if they had one, ended when they left the top).
        if self.comms.len() > MAX_COMMS / 2 {
            self.comms.retain(|_, c| c.rank.exported || c.rank.recent >= 1.0);
        }
    }

    fn update_cgroups(&mut self, m: &Model, dt: f64) {
        let Some(v) = &m.cgroups else { return };
        for row in &v.rows {
            let c = self.cgroups.entry(row.path.clone()).or_default();
            c.name = row.name.clone();
            if let Some(r) = &row.rates {
                c.read_bytes += r.read_bps * dt;
                c.written_bytes += r.write_bps * dt;
                if let Some(v) = r.read_iops {
                    *c.read_ios.get_or_insert(0.0) += v * dt;
                }
                if let Some(v) = r.write_iops {
                    *c.write_ios.get_or_insert(0.0) += v * dt;
                }
            }
            let p = row.pressure.as_ref();
            c.some_us = p.and_then(|p| p.some).map(|l| l.total_us);
            c.full_us = p.and_then(|p| p.full).map(|l| l.total_us);
        }
        // Cgroups that are gone end their series.
        self.cgroups.retain(|path, _| v.rows.iter().any(|r| &r.path == path));
    }

    /// The commands with a series of their own.
    #[cfg(any(test, feature = "test-support"))]
    pub fn exported_comms(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self
            .comms
            .iter()
            .filter(|(_, c)| c.rank.exported)
            .map(|(k, _)| k.as_str())
            .collect();
        v.sort_unstable();
        v
    }

    /// The OpenMetrics text (what `prometheus-client` encodes).
    pub fn openmetrics(&self) -> String {
        let mut reg = Registry::with_prefix("iolens");
        reg.register_collector(Box::new(self.clone()));
        let mut out = String::new();
        // Encoding into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &reg);
        out
    }
}

pub(super) fn counter(enc: &mut DescriptorEncoder, name: &str, help: &str, v: f64) -> Result<(), std::fmt::Error> {
    let c = ConstCounter::new(v);
    c.encode(enc.encode_descriptor(name, help, None, c.metric_type())?)
}

pub(super) fn gauge(enc: &mut DescriptorEncoder, name: &str, help: &str, v: f64) -> Result<(), std::fmt::Error> {
    let g = ConstGauge::new(v);
    g.encode(enc.encode_descriptor(name, help, None, g.metric_type())?)
}

/// A label value from the system (a comm, a cgroup, a device name, a probe
/// result's fields) as the text output shows it: control characters as
/// `\xNN` ([`crate::format::escape`]), so that a scrape shown on a
/// terminal cannot drive it. The encoder then escapes `\`, `"` and newline
/// for the exposition format, so the value reads back as this text.
pub fn label(s: &str) -> String {
    crate::format::escape(s)
}

const OPS: [&str; 4] = ["read", "write", "discard", "flush"];

impl Collector for Exported {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        self.encode_comms(&mut enc)?;
        self.encode_cgroups(&mut enc)?;
        self.encode_devices(&mut enc)?;
        self.files.encode(&mut enc)?;
        super::health::encode(self, &mut enc)?;
        super::findings::encode(&self.findings, &mut enc)?;
        super::probes::encode(&self.probes, &mut enc)?;
        super::jobs::encode(&self.jobs, &mut enc)
    }
}

impl Exported {
    /// The per-command process counters, the rest summed under `OTHER`.
    fn encode_comms(&self, enc: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut comms: Vec<(&String, &Comm)> = self.comms.iter().filter(|(_, c)| c.rank.exported).collect();
        comms.sort_by(|a, b| a.0.cmp(b.0));
        let shown = if self.dirty_traced {
            N_COUNTERS
        } else {
            N_COUNTERS - DIRTY_COUNTERS
        };
        for (i, (name, help)) in PROC_COUNTERS.iter().enumerate().take(shown) {
            let mut series: Vec<(Labels, f64)> = comms
                .iter()
                .map(|(k, c)| (vec![("comm", label(k))], c.own[i]))
                .collect();
            series.push((vec![("comm", OTHER.to_string())], self.other[i]));
            counter_family(enc, name, help, &series)?;
        }
        Ok(())
    }

    /// The per-cgroup counters.
    fn encode_cgroups(&self, enc: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let cg = |f: &dyn Fn(&Cgroup) -> Option<f64>| -> Vec<(Labels, f64)> {
            self.cgroups
                .iter()
                .filter_map(|(path, c)| f(c).map(|v| (vec![("cgroup", label(path)), ("name", label(&c.name))], v)))
                .collect()
        };
        counter_family(
            enc,
            "cgroup_read_bytes",
            "Bytes read by the cgroup on whole disks (kernel counters, or its processes' own I/O where the kernel has none)",
            &cg(&|c| Some(c.read_bytes)),
        )?;
        counter_family(
            enc,
            "cgroup_written_bytes",
            "Bytes written by the cgroup on whole disks (same sources as cgroup_read_bytes)",
            &cg(&|c| Some(c.written_bytes)),
        )?;
        counter_family(
            enc,
            "cgroup_read_requests",
            "Read requests of the cgroup (kernel counters only)",
            &cg(&|c| c.read_ios),
        )?;
        counter_family(
            enc,
            "cgroup_write_requests",
            "Write requests of the cgroup (kernel counters only)",
            &cg(&|c| c.write_ios),
        )?;
        counter_family(
            enc,
            "cgroup_io_pressure_some_seconds",
            "Time some tasks of the cgroup were stalled on I/O (io.pressure some total=)",
            &cg(&|c| c.some_us.map(|u| u as f64 / 1e6)),
        )?;
        counter_family(
            enc,
            "cgroup_io_pressure_full_seconds",
            "Time all tasks of the cgroup were stalled on I/O (io.pressure full total=)",
            &cg(&|c| c.full_us.map(|u| u as f64 / 1e6)),
        )?;
        Ok(())
    }

    /// The traced requests per device: counters and the latency histogram.
    fn encode_devices(&self, enc: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let dev = |f: &dyn Fn(&DevTrace) -> f64| -> Vec<(Labels, f64)> {
            self.devices
                .values()
                .map(|d| (vec![("device", label(&d.name))], f(d)))
                .collect()
        };
        counter_family(
            enc,
            "traced_requests",
            "Block requests issued with data (reads, writes, discards), from the block tracepoints",
            &dev(&|d| d.issued as f64),
        )?;
        counter_family(
            enc,
            "traced_sequential_requests",
            "Of traced_requests, those that started where a recent request in the same direction ended (of the same process, or of the device)",
            &dev(&|d| d.sequential as f64),
        )?;
        counter_family(
            enc,
            "traced_bytes",
            "Bytes of traced_requests",
            &dev(&|d| d.bytes as f64),
        )?;
        counter_family(
            enc,
            "traced_sequential_bytes",
            "Bytes of traced_sequential_requests: rate over rate(traced_bytes) is the share the pattern column shows",
            &dev(&|d| d.sequential_bytes as f64),
        )?;
        if !self.devices.is_empty() {
            let mut f = enc.encode_descriptor(
                "request_latency_seconds",
                "Block request latency from start (block_io_start) to completion, traced; buckets are powers of two ns",
                None,
                MetricType::Histogram,
            )?;
            for d in self.devices.values() {
                for (op, h) in OPS.iter().zip(&d.latency) {
                    if h.count == 0 {
                        continue;
                    }
                    let labels: Labels = vec![("device", label(&d.name)), ("op", (*op).to_string())];
                    f.encode_family(&labels)?.encode_histogram::<NoLabelSet>(
                        h.sum_ns as f64 / 1e9,
                        h.count,
                        &h.prometheus_buckets(),
                        None,
                    )?;
                }
            }
        }
        Ok(())
    }
}

/// The classic Prometheus text format (0.0.4) from OpenMetrics text: a
/// counter family's `# HELP`/`# TYPE` name gets the `_total` its samples
/// carry, and the OpenMetrics-only lines (`# UNIT`, `# EOF`) go. Samples
/// are left as they are (both formats write them alike).
pub fn text_format(openmetrics: &str) -> String {
    let mut counters: Vec<&str> = Vec::new();
    for l in openmetrics.lines() {
        if let Some(rest) = l.strip_prefix("# TYPE ")
            && let Some(name) = rest.strip_suffix(" counter")
        {
            counters.push(name);
        }
    }
    let mut out = String::with_capacity(openmetrics.len());
    for l in openmetrics.lines() {
        if l == "# EOF" || l.starts_with("# UNIT ") {
            continue;
        }
        let meta = ["# HELP ", "# TYPE "]
            .into_iter()
            .find_map(|p| l.strip_prefix(p).map(|r| (p, r)));
        match meta {
            Some((p, rest)) => {
                let name = rest.split(' ').next().unwrap_or("");
                if counters.contains(&name) {
                    out.push_str(p);
                    out.push_str(name);
                    out.push_str("_total");
                    out.push_str(&rest[name.len()..]);
                } else {
                    out.push_str(l);
                }
            }
            None => out.push_str(l),
        }
        out.push('\n');
    }
    out
}
