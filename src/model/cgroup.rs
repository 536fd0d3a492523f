//! Per-cgroup rates, limits and pressure from two cgroup samples.
//!
//! Every row says where its numbers come from ([`Source`]): the kernel's
//! per-cgroup counters where they count on every whole disk (v2 with the io
//! controller, or v1 blkio where every whole disk once had a throttle
//! limit), else the sum of the member processes' own storage I/O
//! (`/proc/<pid>/io` rates, no request counts). Kernel counters are shown
//! per device wherever they exist, whatever the row's source.
//!
//! The row's total adds whole disks only (no partitions, loop, device-mapper,
//! md or zram devices), so I/O through a loop device and the disk under it is
//! never counted twice. A device's effective limit is the smallest of the
//! cgroup's and its ancestors' on v2; on v1 the kernel applies every
//! cgroup's own limits independently (blk-throttle is flat outside the
//! default hierarchy), so the effective limit is the cgroup's own. A cgroup
//! is "at its limit" on a device when its rate over the last
//! [`AT_LIMIT_WINDOW_S`] seconds is at least [`AT_LIMIT_SHARE`] of a limit.

use std::collections::{HashMap, VecDeque};

use serde::Serialize;

use super::counters::delta64;
use super::process::ProcRates;
use crate::collect::cgroup::names;
use crate::collect::cgroup::parse::DevCounters;
use crate::collect::cgroup::{CgroupSnapshot, RawCgroup};
use crate::collect::process::PidMap;
use crate::collect::system::Pressure;

// The collectors' types a cgroup row is made of, named here for the views.
pub use crate::collect::cgroup::Hierarchy;
pub use crate::collect::cgroup::names::CgroupKind;
pub use crate::collect::cgroup::parse::{DevId, Limits, Weight};
pub use crate::collect::system::PsiLine;

/// Length of the window over which "at limit" is judged, s.
pub const AT_LIMIT_WINDOW_S: f64 = 3.0;
/// Share of the limit the window's rate must reach.
pub const AT_LIMIT_SHARE: f64 = 0.9;
/// Samples this much short of the window still count as spanning it (timer jitter).
const WINDOW_SLACK_NS: u64 = 50_000_000;
/// Per-device history kept for the window, ns.
const KEEP_NS: u64 = 30_000_000_000;
/// And at most this many samples of it: the 3 s window at the shortest
/// interval (0.05 s) needs 61, and memory stays bounded per cgroup and
/// device (64 × ~160 bytes) whatever the interval.
const KEEP_SAMPLES: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The kernel's per-cgroup counters (exact, per device, with requests).
    Kernel,
    /// The sum of member processes' own storage I/O (bytes only).
    Processes,
}

impl Source {
    pub fn label(self) -> &'static str {
        match self {
            Source::Kernel => "kernel",
            Source::Processes => "procs",
        }
    }
}

/// Bytes and requests per second; request rates are `None` where the
/// source cannot count requests (member processes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CgRates {
    pub read_bps: f64,
    pub write_bps: f64,
    pub read_iops: Option<f64>,
    pub write_iops: Option<f64>,
}

impl CgRates {
    pub fn total_bps(&self) -> f64 {
        self.read_bps + self.write_bps
    }

    fn add(&mut self, o: &CgRates) {
        self.read_bps += o.read_bps;
        self.write_bps += o.write_bps;
        self.read_iops = self.read_iops.zip(o.read_iops).map(|(a, b)| a + b);
        self.write_iops = self.write_iops.zip(o.write_iops).map(|(a, b)| a + b);
    }
}

/// Rates from two cumulative counter sets; `None` when one went backwards.
fn counter_rates(p: &DevCounters, c: &DevCounters, dt_s: f64) -> Option<CgRates> {
    if dt_s <= 0.0 {
        return None;
    }
    Some(CgRates {
        read_bps: delta64(p.rbytes, c.rbytes)? as f64 / dt_s,
        write_bps: delta64(p.wbytes, c.wbytes)? as f64 / dt_s,
        read_iops: Some(delta64(p.rios, c.rios)? as f64 / dt_s),
        write_iops: Some(delta64(p.wios, c.wios)? as f64 / dt_s),
    })
}

/// iocost time per second of wall time (µs/s) over the interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct IoCostRates {
    pub vrate_pct: Option<f64>,
    pub usage_us_per_s: Option<f64>,
    pub wait_us_per_s: Option<f64>,
    pub indebt_us_per_s: Option<f64>,
    pub indelay_us_per_s: Option<f64>,
}

/// One device of one cgroup.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CgDevice {
    /// Kernel name ("vda", "loop0"), or "MAJ:MIN" when not in /proc/diskstats.
    pub device: String,
    pub dev: DevId,
    /// Whole disk: counts in the row's total.
    pub in_total: bool,
    /// From the kernel counters over the last interval; `None` on the first
    /// sample or when a counter went backwards.
    pub rates: Option<CgRates>,
    pub discard_bps: Option<f64>,
    /// Over at least the last [`AT_LIMIT_WINDOW_S`] s; `None` until that much history exists.
    pub window_rates: Option<CgRates>,
    pub iocost: Option<IoCostRates>,
    /// v1 BFQ counters over the interval, where BFQ schedules the device.
    pub bfq: Option<CgRates>,
    /// This cgroup's own limits on the device.
    pub limits: Limits,
    /// The limits that bind (see the module docs).
    pub effective_limits: Limits,
    /// `Some(true)` when at a limit, `Some(false)` when not, `None` without
    /// a limit or before the window has filled.
    pub at_limit: Option<bool>,
    /// Which limits are reached: "rbps", "wbps", "riops", "wiops".
    pub at_limits: Vec<&'static str>,
}

impl CgDevice {
    /// The largest share of an effective limit the window's rates reach
    /// (1.0 = at the limit); `None` without a limit or before the window
    /// has filled. The at-limit mark is this at [`AT_LIMIT_SHARE`] or more.
    pub fn limit_share(&self) -> Option<f64> {
        let w = self.window_rates.as_ref()?;
        let e = &self.effective_limits;
        [
            (e.rbps, Some(w.read_bps)),
            (e.wbps, Some(w.write_bps)),
            (e.riops, w.read_iops),
            (e.wiops, w.write_iops),
        ]
        .into_iter()
        .filter_map(|(lim, v)| Some(v? / lim.filter(|l| *l > 0)? as f64))
        .reduce(f64::max)
    }
}

/// The member processes' own I/O summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ProcSum {
    pub count: usize,
    /// Members without rates this interval (new, or counters unreadable).
    pub without_rates: usize,
    pub read_bps: f64,
    pub write_bps: f64,
}

/// io pressure of a cgroup: the kernel's averages and the share of the
/// interval stalled (Δtotal / Δt).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CgPressure {
    pub some: Option<PsiLine>,
    pub full: Option<PsiLine>,
    pub some_pct: Option<f64>,
    pub full_pct: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CgroupRow {
    pub path: String,
    pub name: String,
    pub kind: CgroupKind,
    pub container_id: Option<String>,
    pub container_name: Option<String>,
    pub pod_uid: Option<String>,
    /// The `name=systemd` path of the members where it differs from `path`.
    pub systemd_path: Option<String>,
    pub source: Source,
    /// The row's total over whole disks (see [`Source`]); `None` when it cannot be known.
    pub rates: Option<CgRates>,
    pub processes: ProcSum,
    pub pressure: Option<CgPressure>,
    pub weight: Option<Weight>,
    pub bfq_weight: Option<Weight>,
    pub latency_target_us: Vec<(DevId, u64)>,
    pub devices: Vec<CgDevice>,
    /// At a limit on some device.
    pub at_limit: bool,
    pub pids: Vec<i32>,
}

impl CgroupRow {
    pub fn total_bps(&self) -> f64 {
        let dev: f64 = self.devices.iter().filter_map(|d| d.rates).map(|r| r.total_bps()).sum();
        self.rates.map_or(dev, |r| r.total_bps().max(0.0))
    }

    /// A row named from `path`, with kernel rates of `read_bps` (and 100
    /// reads/s) over whole disks and member `pids`, for tests and examples.
    #[cfg(any(test, feature = "test-support"))]
    pub fn example(path: &str, read_bps: f64, pids: Vec<i32>) -> Self {
        let n = names::name_of(path);
        CgroupRow {
            path: path.to_string(),
            name: n.name,
            kind: n.kind,
            container_id: n.container_id,
            container_name: None,
            pod_uid: n.pod_uid,
            systemd_path: None,
            source: Source::Kernel,
            rates: Some(CgRates {
                read_bps,
                write_bps: 0.0,
                read_iops: Some(100.0),
                write_iops: Some(0.0),
            }),
            processes: ProcSum {
                count: pids.len(),
                ..Default::default()
            },
            pressure: None,
            weight: None,
            bfq_weight: None,
            latency_target_us: Vec::new(),
            devices: Vec::new(),
            at_limit: false,
            pids,
        }
    }

    /// Some device has an effective limit.
    pub fn limited(&self) -> bool {
        self.devices.iter().any(|d| !d.effective_limits.is_empty())
    }

    /// The largest [`CgDevice::limit_share`] over the devices.
    pub fn limit_share(&self) -> Option<f64> {
        self.devices.iter().filter_map(CgDevice::limit_share).reduce(f64::max)
    }

    /// The device whose limit binds most (highest share, else the first
    /// with a limit).
    pub fn binding_device(&self) -> Option<&CgDevice> {
        let limited = || self.devices.iter().filter(|d| !d.effective_limits.is_empty());
        limited()
            .filter(|d| d.limit_share().is_some())
            .max_by(|a, b| {
                a.limit_share()
                    .unwrap_or(0.0)
                    .total_cmp(&b.limit_share().unwrap_or(0.0))
            })
            .or_else(|| limited().next())
    }

    pub fn is_active(&self) -> bool {
        self.total_bps() > 0.0
            || self
                .devices
                .iter()
                .any(|d| d.rates.is_some_and(|r| r.total_bps() > 0.0))
    }
}

/// All cgroup rows of one interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CgroupView {
    pub hierarchy: Option<Hierarchy>,
    /// Devices the kernel counts on; `None` = every device.
    pub counted_devices: Option<Vec<String>>,
    pub rows: Vec<CgroupRow>,
    pub notes: Vec<String>,
}

/// A block device as the model knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DevName {
    pub dev: DevId,
    pub name: String,
    /// A whole disk that counts in totals.
    pub in_total: bool,
}

/// Keeps recent per-device counters for the at-limit window.
#[derive(Debug, Clone, Default)]
pub struct CgroupTracker {
    history: HashMap<(String, DevId), VecDeque<(u64, DevCounters)>>,
}

/// Inputs of one update besides the two snapshots.
pub struct Context<'a> {
    pub now_ns: u64,
    pub dt_s: Option<f64>,
    /// The sample's block devices by number (hashed: a tree of 10,000
    /// cgroups on 10,000 devices must not search per counter).
    pub devices: &'a HashMap<DevId, DevName>,
    /// Rates of each process by pid (`None`: present but no rates this interval).
    pub procs: &'a PidMap<i32, Option<&'a ProcRates>>,
}

impl CgroupTracker {
    /// Rows for `cur`, against `prev` (the previous sample's snapshot).
    pub fn update(&mut self, prev: Option<&CgroupSnapshot>, cur: &CgroupSnapshot, cx: &Context<'_>) -> CgroupView {
        let prev_rows: HashMap<&str, &RawCgroup> = prev
            .map(|p| p.cgroups.iter().map(|c| (c.path.as_str(), c)).collect())
            .unwrap_or_default();
        let all_counted = match &cur.counted_devices {
            None => cur.hierarchy == Some(Hierarchy::V2),
            Some(list) => cx
                .devices
                .values()
                .filter(|d| d.in_total)
                .all(|d| list.contains(&d.dev)),
        };
        let mut limits: LimitsByPath<'_> = cur.cgroups.iter().map(|c| (c.path.as_str(), &c.limits[..])).collect();
        limits.extend(cur.ancestor_limits.iter().map(|(p, l)| (p.as_str(), &l[..])));
        let mut rows = Vec::with_capacity(cur.cgroups.len());
        for cg in &cur.cgroups {
            let old = prev_rows.get(cg.path.as_str()).copied();
            let effective = effective_limits(cur.hierarchy, &limits, cg);
            rows.push(self.row(cg, old, &effective, all_counted, cx));
        }
        let live: std::collections::HashSet<(&str, DevId)> = cur
            .cgroups
            .iter()
            .flat_map(|c| c.counters.iter().map(move |d| (c.path.as_str(), d.dev)))
            .collect();
        self.history.retain(|(p, d), _| live.contains(&(p.as_str(), *d)));
        CgroupView {
            hierarchy: cur.hierarchy,
            counted_devices: cur
                .counted_devices
                .as_ref()
                .map(|l| l.iter().map(|d| dev_name(cx.devices, *d).0).collect()),
            rows,
            notes: cur.notes.clone(),
        }
    }

    fn row(
        &mut self,
        cg: &RawCgroup,
        old: Option<&RawCgroup>,
        effective: &[(DevId, Limits)],
        all_counted: bool,
        cx: &Context<'_>,
    ) -> CgroupRow {
        let n = names::name_of(&cg.path);
        let mut devices = Vec::with_capacity(cg.counters.len());
        for c in &cg.counters {
            let (device, in_total) = dev_name(cx.devices, c.dev);
            let prev = old.and_then(|o| o.counters.iter().find(|p| p.dev == c.dev));
            let rates = prev.zip(cx.dt_s).and_then(|(p, dt)| counter_rates(p, c, dt));
            let hist = self.history.entry((cg.path.clone(), c.dev)).or_default();
            // Room made before the push, so the ring never grows past
            // KEEP_SAMPLES (a full VecDeque doubles its capacity).
            while hist.len() >= KEEP_SAMPLES {
                hist.pop_front();
            }
            hist.push_back((cx.now_ns, *c));
            while hist
                .front()
                .is_some_and(|(t, _)| cx.now_ns.saturating_sub(*t) > KEEP_NS)
            {
                hist.pop_front();
            }
            let window_rates = window(hist, cx.now_ns);
            let limits = cg.limits.iter().find(|l| l.0 == c.dev).map(|l| l.1).unwrap_or_default();
            let eff = effective.iter().find(|l| l.0 == c.dev).map(|l| l.1).unwrap_or_default();
            let (at_limit, at_limits) = at_limit(&eff, window_rates.as_ref());
            devices.push(CgDevice {
                device,
                dev: c.dev,
                in_total,
                rates,
                discard_bps: prev
                    .zip(cx.dt_s)
                    .and_then(|(p, dt)| Some(delta64(p.dbytes?, c.dbytes?)? as f64 / dt)),
                window_rates,
                iocost: prev.zip(cx.dt_s).and_then(|(p, dt)| iocost_rates(p, c, dt)),
                bfq: bfq_rates(cg, old, c.dev, cx.dt_s),
                limits,
                effective_limits: eff,
                at_limit,
                at_limits,
            });
        }
        let processes = proc_sum(&cg.pids, cx.procs);
        let (source, rates) = if all_counted {
            let mut sum = CgRates {
                read_iops: Some(0.0),
                write_iops: Some(0.0),
                ..Default::default()
            };
            let mut known = cx.dt_s.is_some();
            for d in devices.iter().filter(|d| d.in_total) {
                match &d.rates {
                    Some(r) => sum.add(r),
                    // A device with counters but no rates this interval: unknown.
                    None => known = false,
                }
            }
            (Source::Kernel, known.then_some(sum))
        } else {
            let known = cx.dt_s.is_some() && processes.count > 0;
            let r = CgRates {
                read_bps: processes.read_bps,
                write_bps: processes.write_bps,
                read_iops: None,
                write_iops: None,
            };
            (Source::Processes, known.then_some(r))
        };
        CgroupRow {
            name: match &cg.container_name {
                Some(c) => format!("{} ({c})", n.name),
                None => n.name,
            },
            kind: n.kind,
            container_id: n.container_id,
            container_name: cg.container_name.clone(),
            pod_uid: n.pod_uid,
            systemd_path: cg.systemd_path.clone().filter(|s| *s != cg.path),
            source,
            rates,
            processes,
            pressure: cg.pressure.map(|p| pressure(&p, old.and_then(|o| o.pressure), cx.dt_s)),
            weight: cg.weight.clone(),
            bfq_weight: cg.bfq_weight.clone(),
            latency_target_us: cg.latency_target_us.clone(),
            at_limit: devices.iter().any(|d| d.at_limit == Some(true)),
            devices,
            pids: cg.pids.clone(),
            path: cg.path.clone(),
        }
    }
}

fn dev_name(devices: &HashMap<DevId, DevName>, dev: DevId) -> (String, bool) {
    devices
        .get(&dev)
        .map_or_else(|| (dev.to_string(), false), |d| (d.name.clone(), d.in_total))
}

/// Rates over the span from the newest kept sample at least the window old
/// (within [`WINDOW_SLACK_NS`]) to now.
fn window(hist: &VecDeque<(u64, DevCounters)>, now_ns: u64) -> Option<CgRates> {
    let want = (AT_LIMIT_WINDOW_S * 1e9) as u64 - WINDOW_SLACK_NS;
    let (t0, c0) = hist.iter().rev().find(|(t, _)| now_ns.saturating_sub(*t) >= want)?;
    let (_, c1) = hist.back()?;
    counter_rates(c0, c1, now_ns.saturating_sub(*t0) as f64 / 1e9)
}

/// Whether any effective limit is reached by the window's rates.
fn at_limit(eff: &Limits, w: Option<&CgRates>) -> (Option<bool>, Vec<&'static str>) {
    if eff.is_empty() {
        return (None, Vec::new());
    }
    let Some(w) = w else { return (None, Vec::new()) };
    let checks = [
        ("rbps", eff.rbps, Some(w.read_bps)),
        ("wbps", eff.wbps, Some(w.write_bps)),
        ("riops", eff.riops, w.read_iops),
        ("wiops", eff.wiops, w.write_iops),
    ];
    let hit: Vec<&'static str> = checks
        .iter()
        .filter_map(|&(k, lim, v)| (v? >= AT_LIMIT_SHARE * lim? as f64).then_some(k))
        .collect();
    (Some(!hit.is_empty()), hit)
}

/// Each cgroup's own limits by path (listed cgroups and unlisted ancestors).
pub type LimitsByPath<'a> = HashMap<&'a str, &'a [(DevId, Limits)]>;

/// The limits that bind on each device: on v2 the smallest of the cgroup's
/// and its ancestors'; on v1 the cgroup's own (flat hierarchy).
pub fn effective_limits(hier: Option<Hierarchy>, by_path: &LimitsByPath<'_>, cg: &RawCgroup) -> Vec<(DevId, Limits)> {
    let mut out = cg.limits.clone();
    if hier != Some(Hierarchy::V2) {
        return out;
    }
    let mut p = cg.path.as_str();
    while let Some(i) = p.rfind('/') {
        if i == 0 && p.len() == 1 {
            break;
        }
        p = if i == 0 { "/" } else { &p[..i] };
        for (dev, l) in by_path.get(p).copied().unwrap_or_default() {
            match out.iter_mut().find(|e| e.0 == *dev) {
                Some(e) => e.1 = e.1.min(l),
                None => out.push((*dev, *l)),
            }
        }
    }
    out
}

fn proc_sum(pids: &[i32], procs: &PidMap<i32, Option<&ProcRates>>) -> ProcSum {
    let mut s = ProcSum::default();
    for pid in pids {
        let Some(r) = procs.get(pid) else { continue };
        s.count += 1;
        match r {
            Some(r) => {
                s.read_bps += r.read_bps;
                s.write_bps += r.write_bps;
            }
            None => s.without_rates += 1,
        }
    }
    s
}

fn iocost_rates(p: &DevCounters, c: &DevCounters, dt: f64) -> Option<IoCostRates> {
    if c.iocost.is_empty() {
        return None;
    }
    let r = |a: Option<u64>, b: Option<u64>| Some(delta64(a?, b?)? as f64 / dt);
    Some(IoCostRates {
        vrate_pct: c.iocost.vrate,
        usage_us_per_s: r(p.iocost.usage_us, c.iocost.usage_us),
        wait_us_per_s: r(p.iocost.wait_us, c.iocost.wait_us),
        indebt_us_per_s: r(p.iocost.indebt_us, c.iocost.indebt_us),
        indelay_us_per_s: r(p.iocost.indelay_us, c.iocost.indelay_us),
    })
}

fn bfq_rates(cg: &RawCgroup, old: Option<&RawCgroup>, dev: DevId, dt: Option<f64>) -> Option<CgRates> {
    let c = cg.bfq.iter().find(|b| b.dev == dev)?;
    let p = old?.bfq.iter().find(|b| b.dev == dev)?;
    counter_rates(p, c, dt?)
}

fn pressure(cur: &Pressure, prev: Option<Pressure>, dt: Option<f64>) -> CgPressure {
    let pct = |a: Option<PsiLine>, b: Option<PsiLine>| {
        let d = delta64(a?.total_us, b?.total_us)? as f64;
        Some((d / (dt? * 1e6) * 100.0).min(100.0))
    };
    CgPressure {
        some: cur.some,
        full: cur.full,
        some_pct: pct(prev.and_then(|p| p.some), cur.some),
        full_pct: pct(prev.and_then(|p| p.full), cur.full),
    }
}
