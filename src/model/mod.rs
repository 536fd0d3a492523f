//! Pure model code: deltas between two raw samples → rates, per-process
//! rates, history. No I/O and no clock: time comes from the samples.

pub mod attribution;

pub use crate::collect::sample::EXITS_NOT_REQUESTED;
pub mod cgroup;
mod cgroup_update;
pub mod counters;
pub mod cpu;
pub mod dirty;
pub mod disk;
pub mod files;
pub mod findings;
pub mod history;
mod job_update;
pub mod jobs;
pub mod pattern;
mod proc_update;
pub mod procdev;
pub mod process;
pub mod prochist;
pub mod progress;
pub mod saved;
pub mod totals;
pub mod trace;
pub mod worker;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde::Serialize;

use crate::collect::RawSample;
use crate::collect::diskstats::DiskStat;
use crate::collect::process::{PidMap, RawProc};
use crate::collect::sample::HostInfo;
pub use crate::collect::sysblock::DeviceInfo;
use crate::collect::system::{MemDirty, Pressure};
pub use cpu::{CpuPct, cpu_pct};
use disk::{DiskRates, Rebaseline};
use history::Ring;
use procdev::ProcDevice;
use process::ProcRates;
use totals::{IoTotals, WriteStep, WriteWindow};
use worker::Worker;

// The collectors' types the model is made of, named here so views read the
// model's vocabulary and never import the collectors.
pub use crate::collect::align::{AlignVerdict, Alignment, exact_size};
pub use crate::collect::blocked::BlockedTask;
pub use crate::collect::devfacts::{DeviceFacts, Transport};
pub use crate::collect::fdinfo::{Access, FdTarget, RawFd};
pub use crate::collect::process::{IoClass, IoPrio, IoUnavailable, ProcIo, ProcKey};
pub use crate::collect::procinfo::ProcInfo;
pub use crate::collect::sysblock::DevKind;

/// How many samples of history each device keeps (10 minutes at 1 s).
pub const HISTORY_LEN: usize = 600;

/// Recent values of one device, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct DevHistory {
    pub read_bps: Ring,
    pub write_bps: Ring,
    pub iops: Ring,
    pub await_ms: Ring,
    pub util_pct: Ring,
}

impl Default for DevHistory {
    fn default() -> Self {
        DevHistory {
            read_bps: Ring::new(HISTORY_LEN),
            write_bps: Ring::new(HISTORY_LEN),
            iops: Ring::new(HISTORY_LEN),
            await_ms: Ring::new(HISTORY_LEN),
            util_pct: Ring::new(HISTORY_LEN),
        }
    }
}

impl DevHistory {
    fn push(&mut self, r: &DiskRates) {
        self.read_bps.push(r.read.bytes_per_s);
        self.write_bps.push(r.write.bytes_per_s);
        self.iops.push(r.total_ios_per_s());
        self.await_ms.push(r.await_ms().unwrap_or(0.0));
        self.util_pct.push(r.util_pct);
    }
}

/// One device: its facts, its rates over the last interval, its history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceRow {
    pub name: String,
    /// Device number, to join per-request data (tracepoints name devices by number).
    pub major: u32,
    pub minor: u32,
    pub info: Option<DeviceInfo>,
    /// `None` on the device's first sample, or after a re-baseline.
    pub rates: Option<DiskRates>,
    /// Why there are no rates this interval, when counters were not comparable.
    pub rebaseline: Option<Rebaseline>,
    #[serde(skip)]
    pub history: DevHistory,
}

impl DeviceRow {
    /// A device `major:minor` with example facts ([`DeviceInfo::example`])
    /// doing the reads `read` over a 1 s interval at aqu-sz 1 and 100%
    /// util, for tests and benches: the caller sets the fields that matter.
    #[cfg(any(test, feature = "test-support"))]
    pub fn example(name: &str, major: u32, minor: u32, read: disk::DirRates) -> Self {
        DeviceRow {
            name: name.into(),
            major,
            minor,
            info: Some(DeviceInfo::example(name)),
            rates: Some(disk::DiskRates {
                name: name.into(),
                interval_s: 1.0,
                read,
                write: disk::DirRates::default(),
                discard: None,
                flush: None,
                aqu_sz: 1.0,
                util_pct: 100.0,
                in_flight: 0,
                pattern: None,
                seq_share: None,
                seq_byte_share: None,
                pattern_basis: Default::default(),
            }),
            rebaseline: None,
            history: Default::default(),
        }
    }

    /// A device without media (an unattached loop device, an empty drive):
    /// it cannot do I/O, so the views leave it out.
    pub fn has_no_media(&self) -> bool {
        self.info.as_ref().is_some_and(|i| i.size_bytes == Some(0))
            && self.rates.as_ref().is_none_or(DiskRates::is_idle)
    }
}

/// One process: what was read, its rates, and totals since iolens started.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcRow {
    #[serde(flatten)]
    pub raw: RawProc,
    /// `None` on the first sample of this process or when unreadable.
    /// Shared: most processes' rates are the same zeros (see
    /// [`process::SharedRates`]), and a row is kept per process.
    pub rates: Option<Arc<ProcRates>>,
    /// Counters accumulated since iolens first saw this process. Shared
    /// where zero (most processes never do I/O; see
    /// [`process::SharedRates`]).
    pub since_start: Option<Arc<ProcIo>>,
    /// Devices of its open files (for processes whose files were read this
    /// sample: those doing I/O, tracked or watched).
    pub devices: Vec<ProcDevice>,
    /// Its open files were read and include a regular file with data or a
    /// block device open for reading: only then is a page-cache share
    /// claimed (a pipe or /dev/zero reader's rchar never touches the page
    /// cache, nor does an inherited empty lock file make it a file reader).
    pub reads_files: bool,
    /// A kernel worker doing I/O for others (left out of totals).
    pub worker: Option<Worker>,
    /// The process exited (known from its threads' exit records, root
    /// only): `rates` is its I/O over the part of the interval it lived,
    /// zero in the few seconds the row is kept after.
    pub exited: bool,
    /// What arrived in the process-wide counters from exited threads and
    /// reaped children in the interval, shown apart from the process's own
    /// I/O. `None` with exit records (those bytes are on the rows of the
    /// threads and processes that did them) or without thread counters.
    /// Boxed: rarely present, and a row is kept per process.
    pub children_rates: Option<Box<ProcRates>>,
}

impl ProcRow {
    /// A row with nothing but the raw process (also the row of a process
    /// known only from its exit record).
    pub fn example(raw: RawProc) -> Self {
        ProcRow {
            raw,
            rates: None,
            since_start: None,
            devices: Vec::new(),
            reads_files: false,
            worker: None,
            exited: false,
            children_rates: None,
        }
    }
}

/// Seconds an exited process's row is kept.
pub const EXITED_KEEP_S: f64 = 5.0;

/// State of the exit records (taskstats) behind the attribution.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ExitStatus {
    /// Exit records are being received (root).
    pub active: bool,
    /// Why not, when they are not.
    pub why_not: Option<String>,
    /// Times the kernel dropped exit records since iolens started because
    /// the socket buffer was full; each time at least one record, whose
    /// thread's I/O is missing from the rows.
    pub overflows: u64,
}

/// The largest read request of a device in 512-byte sectors: its
/// `max_sectors_kb` for a request-based device, else (bio-based md, dm
/// and zram, whose bios need not be split to it; a partition, whose queue
/// limits are its disk's; unknown) the kernel's 4 GiB bound.
fn max_read_sectors(info: Option<&DeviceInfo>) -> u64 {
    info.filter(|i| matches!(i.kind, DevKind::Disk | DevKind::Loop))
        .and_then(|i| i.max_sectors_kb)
        .map_or(disk::MAX_REQUEST_SECTORS, |kb| kb.saturating_mul(2))
}

/// Everything the views show, updated from one raw sample at a time.
#[derive(Debug, Clone, Default)]
pub struct Model {
    pub host: HostInfo,
    /// Clock ticks per second (sysconf(_SC_CLK_TCK)), for process times.
    pub clk_tck: f64,
    /// Length of the last interval in seconds; `None` before two samples.
    pub interval_s: Option<f64>,
    /// Monotonic time of the last sample, ns.
    pub mono_ns: u64,
    /// Wall-clock time of the last sample, ns since the Unix epoch (as
    /// the sample recorded it: a replay shows the recorded time).
    pub wall_ns: u64,
    pub samples: u64,
    pub devices: Vec<DeviceRow>,
    /// Sum over devices that count in totals (no partitions, stacked or loop devices).
    pub total: Option<DiskRates>,
    pub procs: Vec<ProcRow>,
    /// Device and process totals for the header.
    pub totals: IoTotals,
    /// `kernel.task_delayacct` at the last sample (`None`: no such sysctl,
    /// a kernel before 5.14 where accounting is on by default).
    pub delayacct: Option<bool>,
    /// Processes we could not see at all, or whose I/O we may not read.
    pub hidden: u32,
    pub denied: usize,
    pub cpu: Option<CpuPct>,
    pub psi: Option<Pressure>,
    pub mem: Option<MemDirty>,
    /// Refault and swap rates from `/proc/vmstat` over the last interval.
    pub vm: Option<crate::collect::vmstat::VmRates>,
    /// Tasks waiting on a FUSE or network filesystem, at the last sample.
    pub blocked: Vec<BlockedTask>,
    /// What could not be read in the last sample.
    pub errors: Vec<String>,
    /// Tracked transfers (progress, rate, ETA), from the fd part of samples.
    pub progress: progress::TransferTracker,
    /// Copy and backup jobs (one row each, their transfers under them).
    pub jobs: jobs::track::JobTracker,
    /// Per-cgroup rows, when the samples carry cgroups.
    pub cgroups: Option<cgroup::CgroupView>,
    cgroup_tracker: cgroup::CgroupTracker,
    /// Per-request tracing: the last interval, or why it is off.
    pub trace: trace::view::TraceView,
    /// Where the traced sequential share of bytes switches labels.
    pub thresholds: trace::PatternThresholds,
    /// The findings engine and the findings that hold after the last
    /// [`Model::judge`].
    pub findings: findings::Engine,
    /// Exit records behind the exited rows (root).
    pub exits: ExitStatus,
    attribution: attribution::Attribution,
    /// Own counters accumulated since iolens first could attribute them,
    /// of the processes that did I/O since (zero for the others).
    own_total: PidMap<ProcKey, ProcIo>,
    /// Exited rows still shown, with the monotonic time they exited at,
    /// while an update works on them; between updates they are the rows
    /// of `procs` marked exited (moved, not copied: under fork churn they
    /// are thousands of rows) and this is empty.
    exited_rows: Vec<(ProcRow, u64)>,
    /// The times of the exited rows of `procs`, in their order.
    exited_at: Vec<u64>,
    /// The previous sample, without its processes: they are in the rows
    /// (`procs`) and their counters in `baselines`.
    prev: Option<RawSample>,
    /// The previous sample's processes' counters, sorted by key.
    baselines: Vec<process::Baseline>,
    /// The room of the baselines before those, empty: the next ones are
    /// made in it (a new vector each update left the heap full of holes
    /// of that size).
    spare_baselines: Vec<process::Baseline>,
    /// The rows' rates and totals, shared where equal.
    shared_rates: process::SharedRates,
    /// The next sample only becomes the new baseline (see [`Model::rebaseline`]).
    rebase: bool,
    /// Loop device a kworker served when its comm last named one: its comm
    /// names only the workqueue it ran last.
    loop_workers: PidMap<ProcKey, String>,
    writes: WriteWindow,
    histories: HashMap<String, DevHistory>,
    /// Read/write rates over time of the processes that did I/O.
    pub proc_history: prochist::ProcHistory,
    /// Names of files, from the open files of the scanned processes.
    file_names: files::names::Names,
}

impl Model {
    pub fn new(host: HostInfo, clk_tck: f64) -> Self {
        Model {
            host,
            clk_tck: if clk_tck > 0.0 { clk_tck } else { 100.0 },
            ..Default::default()
        }
    }

    /// The raw sample the current numbers end at (without its processes:
    /// they are in [`Model::procs`]).
    pub fn last_sample(&self) -> Option<&RawSample> {
        self.prev.as_ref()
    }

    /// The traced devices of the last interval: each device row with its
    /// number and its traced requests (none while tracing is off, nor for
    /// a device without a traced request).
    pub fn traced_devices(&self) -> impl Iterator<Item = (&DeviceRow, trace::requests::Dev, &trace::DeviceTrace)> {
        let on = self.trace.active;
        self.devices.iter().filter(move |_| on).filter_map(|d| {
            let key = trace::requests::Dev {
                major: d.major,
                minor: d.minor,
            };
            self.trace.interval.devices.get(&key).map(|t| (d, key, t))
        })
    }

    /// Start over from the next sample: it becomes the baseline without
    /// producing rates (the shown numbers stay as they are until the sample
    /// after it), so an interval spanning a pause is never averaged into
    /// the rates, the history or the transfer rates.
    pub fn rebaseline(&mut self) {
        self.rebase = true;
        self.progress.rebaseline();
        self.writes.clear();
    }

    /// Fold in a new sample: compute rates against the previous one, push
    /// history, and keep the new sample as the next baseline.
    pub fn update(&mut self, mut cur: RawSample) {
        if std::mem::take(&mut self.rebase) {
            // The attribution takes its baselines from this sample.
            self.attribution
                .update(None, &cur.procs, &cur.exits.records, cur.exits.active, self.clk_tck);
            self.mono_ns = cur.mono_ns;
            self.wall_ns = cur.wall_ns;
            self.progress.update(&cur.fds, cur.mono_ns);
            self.file_names.learn(&cur.fds);
            cur.fds = Default::default();
            // No interval ends here for them.
            cur.waits = Vec::new();
            let mut old = std::mem::take(&mut self.baselines);
            self.baselines = process::baselines(&cur.procs.procs, &old, std::mem::take(&mut self.spare_baselines));
            old.clear();
            self.spare_baselines = old;
            cur.procs.procs = Vec::new();
            self.prev = Some(cur);
            return;
        }
        let prev = self.prev.take();
        let dt_s = prev
            .as_ref()
            .map(|p| cur.mono_ns.saturating_sub(p.mono_ns) as f64 / 1e9)
            .filter(|d| *d > 0.0);
        self.interval_s = dt_s;
        self.mono_ns = cur.mono_ns;
        self.wall_ns = cur.wall_ns;
        self.samples += 1;
        self.update_devices(prev.as_ref(), &cur, dt_s);
        self.hidden = cur.procs.hidden;
        self.denied = cur.procs.denied();
        let jumps = self.update_procs(prev.as_ref(), &mut cur, dt_s);
        self.update_totals(dt_s);
        self.delayacct = cur.delayacct;
        self.progress.update(&cur.fds, cur.mono_ns);
        self.file_names.learn(&cur.fds);
        self.file_names.learn_waits(&cur.waits);
        self.update_jobs(&mut cur);
        // The open files are in the transfers now: the baseline needs none
        // (a full scan's are most of a sample's memory).
        cur.fds = Default::default();
        self.update_cgroups(prev.as_ref(), &cur, dt_s);
        self.cpu = match (prev.as_ref().and_then(|p| p.cpu.as_ref()), cur.cpu.as_ref()) {
            (Some(p), Some(c)) => cpu_pct(p, c),
            _ => None,
        };
        self.psi = cur.psi;
        self.mem = cur.mem;
        self.blocked.clone_from(&cur.blocked);
        self.vm = match (prev.as_ref().and_then(|p| p.vmstat.as_ref()), cur.vmstat.as_ref(), dt_s) {
            (Some(p), Some(c), Some(dt)) => crate::collect::vmstat::rates(p, c, dt),
            _ => None,
        };
        self.exits = ExitStatus {
            active: cur.exits.active,
            why_not: cur.exits.why_not.clone(),
            overflows: cur.exits.overflows,
        };
        self.errors = cur.errors.clone();
        self.errors.extend(jumps);
        self.prev = Some(cur);
    }

    /// Run the findings engine on the last interval (after
    /// [`Model::apply_trace`]).
    pub fn judge(&mut self) {
        let mut engine = std::mem::take(&mut self.findings);
        engine.update(self);
        self.findings = engine;
    }

    /// Fold in the tracer's interval (taken right after [`Model::update`]):
    /// devices with traced requests get the exact sequential shares (of
    /// requests and of bytes) and the label of the byte share
    /// (`pattern_basis` "requests"); others keep the counter estimate
    /// (device-mapper and md devices issue no requests of their own,
    /// partitions' requests are their disk's), as do devices of a
    /// recording made before the bytes were kept.
    pub fn apply_trace(&mut self, mut view: trace::view::TraceView) {
        let procs = &self.procs;
        view.interval.name_io_uring_rows(|pid| {
            let p = procs.iter().find(|p| p.raw.key.pid == pid)?;
            Some(p.raw.comm.to_string())
        });
        let waits = self.prev.as_ref().map_or(&[][..], |p| &p.waits[..]);
        view.files.add_waits(waits, self.interval_s);
        view.files.name_with(&mut self.file_names);
        for row in &mut self.devices {
            let Some(r) = row.rates.as_mut() else { continue };
            let Some(d) = view.device(row.major, row.minor) else {
                continue;
            };
            let no_bytes = d.issued > 0 && d.issued_bytes == 0;
            if no_bytes || (d.issued == 0 && d.completed.iter().all(|c| *c == 0)) {
                continue;
            }
            r.seq_share = d.seq_share();
            r.seq_byte_share = d.seq_byte_share();
            r.pattern = d.pattern(&self.thresholds);
            r.pattern_basis = pattern::Basis::Requests;
        }
        // A process's traced devices come first and replace the guess from
        // its open files.
        for p in &mut self.procs {
            let mut traced: Vec<procdev::ProcDevice> = view
                .proc_rows(p.raw.key.pid)
                .filter_map(|(d, _)| {
                    let row = self.devices.iter().find(|r| r.major == d.major && r.minor == d.minor)?;
                    Some(procdev::ProcDevice {
                        name: row.name.clone(),
                        source: procdev::DevSource::Trace,
                    })
                })
                .collect();
            if traced.is_empty() && p.devices.iter().all(|d| d.source != procdev::DevSource::Trace) {
                continue;
            }
            traced.sort();
            p.devices
                .retain(|d| d.source == procdev::DevSource::OpenFiles && !traced.iter().any(|t| t.name == d.name));
            traced.append(&mut p.devices);
            p.devices = traced;
        }
        dirty::fold_into(&mut self.procs, &view.dirty, self.interval_s, &mut self.shared_rates);
        self.trace = view;
    }

    fn update_devices(&mut self, prev: Option<&RawSample>, cur: &RawSample, dt_s: Option<f64>) {
        let mut rows = Vec::with_capacity(cur.disks.len());
        // Looked up by name through hash maps: linear searches per device
        // made a sample quadratic in the number of devices.
        let infos: HashMap<&str, &DeviceInfo> = cur.devices.iter().map(|i| (i.name.as_str(), i)).collect();
        let old_disks: HashMap<&str, &DiskStat> = prev
            .map(|p| p.disks.iter().map(|o| (o.name.as_str(), o)).collect())
            .unwrap_or_default();
        let old_infos: HashMap<&str, &DeviceInfo> = prev
            .map(|p| p.devices.iter().map(|i| (i.name.as_str(), i)).collect())
            .unwrap_or_default();
        for d in &cur.disks {
            let info = infos.get(d.name.as_str()).map(|i| (*i).clone());
            let old = old_disks.get(d.name.as_str()).copied();
            let old_seq = old_infos.get(d.name.as_str()).and_then(|i| i.diskseq);
            let new_seq = info.as_ref().and_then(|i| i.diskseq);
            let (rates, rebaseline) = match (old, dt_s) {
                (Some(_), _) if old_seq.is_some() && new_seq.is_some() && old_seq != new_seq => {
                    (None, Some(Rebaseline::NewDevice))
                }
                (Some(o), Some(dt)) => match disk::disk_rates(o, d, dt).and_then(|r| {
                    disk::sectors_fit(o, d, max_read_sectors(info.as_ref()))?;
                    Ok(r)
                }) {
                    Ok(r) => (Some(r), None),
                    Err(e) => (None, Some(e)),
                },
                _ => (None, None),
            };
            let history = self.histories.entry(d.name.clone()).or_default();
            if rebaseline.is_some() {
                *history = DevHistory::default();
            }
            if let Some(r) = &rates {
                history.push(r);
            }
            rows.push(DeviceRow {
                name: d.name.clone(),
                major: d.major,
                minor: d.minor,
                info,
                rates,
                rebaseline,
                history: history.clone(),
            });
        }
        // Devices that vanished lose their history.
        let names: HashSet<&str> = cur.disks.iter().map(|d| d.name.as_str()).collect();
        self.histories.retain(|name, _| names.contains(name.as_str()));
        let counted: Vec<&DiskRates> = rows
            .iter()
            .filter(|r| r.info.as_ref().is_some_and(DeviceInfo::counts_in_total))
            .filter_map(|r| r.rates.as_ref())
            .collect();
        self.total = disk::sum("total", &counted);
        self.devices = rows;
    }

    /// Header totals: device bytes against the process rows' (kernel
    /// workers left out), writes over the last minute.
    fn update_totals(&mut self, dt_s: Option<f64>) {
        let rows = || {
            self.procs
                .iter()
                .filter(|p| p.worker.is_none())
                .filter_map(|p| p.rates.as_ref())
        };
        let read: f64 = rows().map(|r| r.read_bps).sum();
        let dev = self.total.as_ref().map(|t| (t.read.bytes_per_s, t.write.bytes_per_s));
        if let Some(dt) = dt_s {
            let step = WriteStep {
                dt_s: dt,
                dirtied: rows().map(|r| r.write_bps * dt).sum(),
                cancelled: rows().map(|r| r.cancelled_write_bps * dt).sum(),
                written: dev.map(|d| d.1 * dt),
            };
            self.writes.push(step);
        }
        self.totals = totals::totals(dev, read, &self.writes);
    }
}
