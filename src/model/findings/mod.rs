//! Findings: conclusions drawn from the model, each with its evidence (the
//! numbers the columns show, and where they come from), its subject (a
//! device, process, cgroup or mount), the processes to blame where the
//! rule can name them, one sentence and the next step.
//!
//! Each rule is a small unit (one file) with its thresholds as named
//! constants, overridable in the config file's `[findings]` table
//! ([`cfg::FindingsCfg`]). A rule says, on each sample, which conditions
//! hold; the [`Engine`] turns that into findings with hysteresis: a
//! condition becomes a finding once it held for the rule's window
//! ([`FindingsCfg::on_s`]) and the finding clears once the condition stopped
//! holding for the clear window. Pure: time comes from the samples.
//!
//! The engine's own history (per-device low-load baselines, the previous
//! PSI total) is bounded: at most [`baseline::BASELINE_LEN`] values per
//! device, dropped when the device goes.

mod at_limit;
pub mod baseline;
mod capped;
pub mod cfg;
mod cgroup_limit;
mod dirty_throttled;
mod hung_mount;
mod io_errors;
mod io_stall;
mod maintenance;
mod misaligned;
mod page_thrash;
mod queue_bound;
mod random_rotating;
mod shown;
mod slow_device;
mod swapping;
mod sync_heavy;
mod tiny_syscalls;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_cap;
#[cfg(test)]
mod tests_dirty;
#[cfg(test)]
mod tests_more;

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use super::Model;
pub use baseline::{SaturationBasis, rotates, saturation_basis};
pub use cfg::FindingsCfg;

/// How much a finding matters. `why` exits 1 at [`Severity::Warning`] or above.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

impl Severity {
    pub fn text(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }
}

/// What a finding is about.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Subject {
    Device {
        name: String,
    },
    Process {
        pid: i32,
        comm: String,
    },
    Cgroup {
        path: String,
    },
    Mount {
        path: String,
    },
    /// The whole machine (PSI).
    System,
}

impl Subject {
    pub fn kind(&self) -> &'static str {
        match self {
            Subject::Device { .. } => "device",
            Subject::Process { .. } => "process",
            Subject::Cgroup { .. } => "cgroup",
            Subject::Mount { .. } => "mount",
            Subject::System => "system",
        }
    }

    /// The subject as a person reads it (unescaped: escape before display).
    pub fn name(&self) -> String {
        match self {
            Subject::Device { name } => name.clone(),
            Subject::Process { pid, comm } => format!("{comm} (PID {pid})"),
            Subject::Cgroup { path } | Subject::Mount { path } => path.clone(),
            Subject::System => "system".into(),
        }
    }
}

/// One number behind a finding: what it is, its value (`None`: not
/// known, shown n/a), its unit and where it comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    pub name: &'static str,
    pub value: Option<f64>,
    pub unit: &'static str,
    pub source: &'static str,
    /// The traced share of the interval a traced figure comes from, while
    /// the tracer's budget traced in windows (the figure is an estimate);
    /// `None`: whole, or not traced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_share: Option<f64>,
}

impl Evidence {
    pub fn new(name: &'static str, value: Option<f64>, unit: &'static str, source: &'static str) -> Self {
        Evidence {
            name,
            value,
            unit,
            source,
            trace_share: None,
        }
    }

    /// A figure from the tracer (its source says "traced ...", or a
    /// culprits' unit "... (traced)").
    pub fn is_traced(&self) -> bool {
        self.source.starts_with("traced") || self.source.ends_with("(traced)")
    }
}

/// While the interval was sampled (the tracer's budget bound), each
/// candidate's traced evidence carries the share and its text says so.
fn mark_sampled(m: &Model, out: &mut [Candidate]) {
    let (Some(tag), share) = (m.trace.sampled(), m.trace.interval.share.0) else {
        return;
    };
    for c in out {
        let mut any = false;
        for e in c.evidence.iter_mut().filter(|e| e.is_traced()) {
            e.trace_share = Some(share);
            any = true;
        }
        if any {
            c.text.push_str(&format!(" (traced figures {tag})"));
        }
    }
}

/// A process a finding blames, with the number it is blamed by.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Culprit {
    pub pid: i32,
    pub comm: String,
    pub value: f64,
    pub unit: &'static str,
}

/// A condition a rule saw hold on this sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub rule: &'static str,
    pub severity: Severity,
    pub subject: Subject,
    pub evidence: Vec<Evidence>,
    pub culprits: Vec<Culprit>,
    pub text: String,
    pub next: String,
}

/// A finding: a condition that held for its rule's window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub rule: &'static str,
    pub severity: Severity,
    pub subject: Subject,
    /// Monotonic and wall-clock time (ns) since which the condition holds
    /// (the start of the first interval it held in).
    pub since_mono_ns: u64,
    pub since_unix_ns: u64,
    /// The numbers of the last sample the condition held in.
    pub evidence: Vec<Evidence>,
    pub culprits: Vec<Culprit>,
    pub text: String,
    /// A key in iolens or a command.
    pub next: String,
    /// The condition held on the last sample (else the finding waits out
    /// its clear window).
    pub holding: bool,
}

/// Where one (rule, subject) is in its life.
#[derive(Debug, Clone)]
struct State {
    since_mono_ns: u64,
    since_unix_ns: u64,
    last_held_ns: u64,
    active: bool,
    last: Candidate,
}

/// The rules' state over samples and the findings that hold.
#[derive(Debug, Clone, Default)]
pub struct Engine {
    pub cfg: FindingsCfg,
    states: HashMap<(&'static str, Subject), State>,
    pub(crate) baselines: baseline::Baselines,
    pub(crate) psi: io_stall::PsiState,
    pub(crate) capped: capped::CapState,
    /// What each device showed it can do in saved probe results (the
    /// capped basis, the saturation basis and headroom of the detail).
    pub saved: crate::model::saved::SavedProbes,
    findings: Vec<Finding>,
    /// A process the rules leave out (iolens itself: its reads of /proc
    /// are many small syscalls).
    pub ignore_pid: Option<i32>,
}

impl Engine {
    pub fn new(cfg: FindingsCfg) -> Self {
        Engine {
            cfg,
            ..Default::default()
        }
    }

    /// The findings that hold after the last update, most severe first,
    /// then the oldest.
    pub fn findings(&self) -> &[Finding] {
        &self.findings
    }

    /// Evaluate every rule on the model's last interval and advance the
    /// findings. A model without an interval (the first sample, a
    /// re-baseline) changes nothing.
    pub fn update(&mut self, m: &Model) -> &[Finding] {
        let Some(dt) = m.interval_s.filter(|d| *d > 0.0) else {
            return &self.findings;
        };
        let mut out = Vec::new();
        self.evaluate(m, &mut out);
        self.baselines.update(m, &self.cfg);
        self.advance(m, dt, out);
        &self.findings
    }

    fn evaluate(&mut self, m: &Model, out: &mut Vec<Candidate>) {
        let c = &self.cfg;
        slow_device::eval(m, &self.baselines, &c.slow_device, out);
        queue_bound::eval(m, &self.baselines, &self.saved, &c.queue_bound, out);
        io_errors::eval(m, &c.io_errors, out);
        tiny_syscalls::eval(m, self.ignore_pid, &c.tiny_syscalls, out);
        io_stall::eval(m, &mut self.psi, &c.io_stall, out);
        random_rotating::eval(m, &c.random_rotating, out);
        misaligned::eval(m, &c.misaligned, out);
        maintenance::eval(m, &c.maintenance, out);
        page_thrash::eval(m, &c.page_cache_thrash, out);
        swapping::eval(m, &c.swapping, out);
        hung_mount::eval(m, &c.hung_mount, out);
        cgroup_limit::eval(m, &c.cgroup_at_limit, out);
        self.capped.update(m, &c.capped_device, self.psi.some_pct());
        capped::eval(m, &self.capped, &self.saved, &self.baselines, &c.capped_device, out);
        let both = (&c.capped_device, &c.at_device_limit);
        at_limit::eval(m, &self.capped, &self.saved, &self.baselines, both, out);
        sync_heavy::eval(m, &c.sync_heavy, out);
        dirty_throttled::eval(m, &self.baselines, self.psi.some_pct(), &c.dirty_throttled, out);
        mark_sampled(m, out);
    }

    fn advance(&mut self, m: &Model, dt: f64, held: Vec<Candidate>) {
        let now = m.mono_ns;
        let start_mono = now.saturating_sub((dt * 1e9) as u64);
        let start_unix = m.wall_ns.saturating_sub((dt * 1e9) as u64);
        let mut seen = HashSet::with_capacity(held.len());
        for c in held {
            let key = (c.rule, c.subject.clone());
            seen.insert(key.clone());
            let st = self.states.entry(key).or_insert_with(|| State {
                since_mono_ns: start_mono,
                since_unix_ns: start_unix,
                last_held_ns: now,
                active: false,
                last: c.clone(),
            });
            st.last_held_ns = now;
            let on = self.cfg.on_s(c.rule);
            if !st.active && now.saturating_sub(st.since_mono_ns) as f64 / 1e9 + 1e-6 >= on {
                st.active = true;
            }
            st.last = c;
        }
        let clear_s = self.cfg.clear_s;
        self.states.retain(|k, st| {
            if seen.contains(k) {
                return true;
            }
            // A condition not yet a finding starts over; a finding waits
            // out its clear window.
            st.active && (now.saturating_sub(st.last_held_ns) as f64 / 1e9) < clear_s
        });
        let mut f: Vec<Finding> = self
            .states
            .values()
            .filter(|s| s.active)
            .map(|s| Finding {
                rule: s.last.rule,
                severity: s.last.severity,
                subject: s.last.subject.clone(),
                since_mono_ns: s.since_mono_ns,
                since_unix_ns: s.since_unix_ns,
                evidence: s.last.evidence.clone(),
                culprits: s.last.culprits.clone(),
                text: s.last.text.clone(),
                next: s.last.next.clone(),
                holding: s.last_held_ns == now,
            })
            .collect();
        f.sort_by(|a, b| {
            b.severity
                .cmp(&a.severity)
                .then(a.since_mono_ns.cmp(&b.since_mono_ns))
                .then(a.rule.cmp(b.rule))
                .then(a.subject.cmp(&b.subject))
        });
        self.findings = f;
    }
}

/// Culprits named in a sentence: "fio (PID 12) 80%, dd (PID 14) 20%".
pub(crate) fn culprit_list(c: &[Culprit]) -> String {
    c.iter()
        .map(|c| format!("{} (PID {})", c.comm, c.pid))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The processes issuing requests on a device, most requests first (at
/// most `n`): traced requests while tracing runs, else the processes
/// whose open files are on it, by disk bytes/s.
pub(crate) fn device_culprits(m: &Model, dev: &super::DeviceRow, n: usize) -> Vec<Culprit> {
    let key = crate::collect::trace::block::Dev {
        major: dev.major,
        minor: dev.minor,
    };
    let mut v: Vec<Culprit> = m
        .trace
        .procs_on(key)
        .filter(|(_, p)| p.issued > 0)
        .map(|(pid, p)| Culprit {
            pid,
            comm: p.comm.clone(),
            value: p.issued as f64,
            unit: "requests (traced)",
        })
        .collect();
    // Untraced, the processes with files on the device stand in, by their
    // disk bytes (which may have gone to other devices). Traced, a device
    // no process issued requests to has no issuers: a process with a file
    // open there whose bytes went to another device is not one.
    if v.is_empty() && !m.trace.active {
        v = m
            .procs
            .iter()
            .filter(|p| p.worker.is_none() && p.devices.iter().any(|d| d.name == dev.name))
            .filter_map(|p| {
                let r = p.rates.as_deref()?;
                (r.disk_bps() > 0.0).then(|| Culprit {
                    pid: p.raw.key.pid,
                    comm: p.raw.comm.to_string(),
                    value: r.disk_bps(),
                    unit: "B/s (read_bytes + write_bytes)",
                })
            })
            .collect();
    }
    v.sort_by(|a, b| b.value.total_cmp(&a.value).then(a.pid.cmp(&b.pid)));
    v.truncate(n);
    v
}

/// Whether delay accounting gives the processes' I/O wait (IO%): not
/// switched off, and some row has it.
pub(crate) fn delay_accounted(m: &Model) -> bool {
    m.delayacct != Some(false)
        && m.procs
            .iter()
            .any(|p| p.rates.as_ref().is_some_and(|r| r.io_wait_pct.is_some()))
}

/// Whether (and how much) `p` waits on I/O: IO% at or above `wait_pct`
/// where delay accounting gives it, else state D (100).
fn io_wait(p: &super::ProcRow, accounted: bool, wait_pct: f64) -> Option<f64> {
    if accounted {
        let w = p.rates.as_ref()?.io_wait_pct?;
        (w >= wait_pct).then_some(w)
    } else {
        (p.raw.state == 'D').then_some(100.0)
    }
}

/// The user processes on `d` (with traced requests on it, or open files
/// on it) that wait on I/O, most waiting first, but `except`.
pub(crate) fn device_waiters(
    m: &Model,
    d: &super::DeviceRow,
    except: Option<i32>,
    accounted: bool,
    wait_pct: f64,
) -> Vec<Culprit> {
    let mut v: Vec<Culprit> = device_users(m, d)
        .filter(|p| Some(p.raw.key.pid) != except)
        .filter_map(|p| {
            Some(Culprit {
                pid: p.raw.key.pid,
                comm: p.raw.comm.to_string(),
                value: io_wait(p, accounted, wait_pct)?,
                unit: if accounted {
                    "% IO wait (delay accounting)"
                } else {
                    "% (in state D)"
                },
            })
        })
        .collect();
    v.sort_by(|a, b| b.value.total_cmp(&a.value).then(a.pid.cmp(&b.pid)));
    v
}

/// The user processes on `d`: with traced requests on it, or open files
/// on it.
pub(crate) fn device_users<'a>(m: &'a Model, d: &'a super::DeviceRow) -> impl Iterator<Item = &'a super::ProcRow> {
    let key = crate::collect::trace::block::Dev {
        major: d.major,
        minor: d.minor,
    };
    let traced = move |pid: i32| m.trace.interval.procs.get(&(pid, key)).is_some_and(|t| t.issued > 0);
    m.procs
        .iter()
        .filter(|p| !p.exited && p.worker.is_none() && !p.raw.cmdline.is_empty())
        .filter(move |p| traced(p.raw.key.pid) || p.devices.iter().any(|x| x.name == d.name))
}

/// How many culprits a finding names.
pub const CULPRITS: usize = 3;

/// "20.1 ms".
pub(crate) fn ms(v: f64) -> String {
    format!("{} ms", crate::format::ms(v))
}
