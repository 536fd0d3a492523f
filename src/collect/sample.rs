//! One full raw sample of the system, and the collector that takes it.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::activity::{Activity, Step};
use super::blocked::{self, BlockedTask, FileWait};
use super::cgroup::{CgroupReader, CgroupSnapshot};
use super::delayacct::{self, ThreadDelays};
use super::diskstats::{self, DiskStat};
use super::fdinfo::{FdScanner, FdSnapshot, ScanProc};
use super::jobproc::JobInput;
use super::mountinfo::{self, AnonMount};
use super::mounts::{self, MountMap};
use super::process::{ProcReader, ProcSnapshot};
use super::sysblock::{self, DeviceInfo};
use super::system::{self, CpuTimes, MemDirty, Pressure};
use super::taskstats::{self, ExitBatch, ExitListener};
use super::vmstat::{self, VmStat};
use super::{Reader, monotonic_ns};

/// Everything read in one sample, stamped with CLOCK_MONOTONIC.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RawSample {
    /// CLOCK_MONOTONIC nanoseconds when the sample was taken.
    pub mono_ns: u64,
    /// CLOCK_REALTIME at the same moment, ns since the Unix epoch: the
    /// wall-clock time reports print (never used for rates, which take the
    /// monotonic clock).
    pub wall_ns: u64,
    /// CLOCK_BOOTTIME at the same moment, ns (the clock of process start
    /// times), so the model can tell a process born after this sample.
    pub boot_ns: u64,
    /// Threads that exited since the previous sample (taskstats, root).
    pub exits: ExitBatch,
    pub disks: Vec<DiskStat>,
    /// sysfs facts, refreshed when the device set changes and every
    /// `DEVICE_REFRESH_SAMPLES` samples.
    pub devices: Vec<DeviceInfo>,
    /// The backing files of loop devices, (MAJ, MIN, inode) (refreshed
    /// with `devices`; see [`sysblock::backing_inode`]).
    #[serde(skip)]
    pub loop_backing: Vec<(u32, u32, u64)>,
    /// Filesystems on anonymous devices (refreshed with `devices`), to name
    /// the device of an open file on overlay, btrfs, NFS, ...
    pub anon_mounts: Vec<AnonMount>,
    pub cpu: Option<CpuTimes>,
    pub psi: Option<Pressure>,
    pub mem: Option<MemDirty>,
    /// The `/proc/vmstat` counters the findings read.
    pub vmstat: Option<VmStat>,
    pub procs: ProcSnapshot,
    /// Tasks waiting on a FUSE or network filesystem.
    pub blocked: Vec<BlockedTask>,
    /// Threads in state D in a call on a file, and the file. Not recorded:
    /// a recording keeps the blocked time in its per-file figures.
    #[serde(skip)]
    pub waits: Vec<FileWait>,
    /// `kernel.task_delayacct` at this sample (`None`: no such sysctl).
    pub delayacct: Option<bool>,
    /// Open files of the processes where progress can matter (see `fdinfo`).
    pub fds: FdSnapshot,
    /// Per-cgroup I/O, when the collector reads it (see [`Collector::cgroups`]).
    pub cgroups: Option<CgroupSnapshot>,
    /// Copy and backup jobs as the session read them (live system only;
    /// absent from recordings made before jobs were tracked).
    pub jobs: Vec<JobInput>,
    /// What could not be read, each saying what was being read.
    pub errors: Vec<String>,
}

/// Host facts that do not change while iolens runs (from sysinfo).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct HostInfo {
    pub hostname: String,
    pub kernel: String,
    pub is_root: bool,
}

impl HostInfo {
    pub fn read() -> Self {
        HostInfo {
            hostname: sysinfo::System::host_name().unwrap_or_else(|_| "?".to_string()),
            kernel: sysinfo::System::kernel_version().unwrap_or_else(|_| "?".to_string()),
            is_root: crate::sys::is_root(),
        }
    }
}

/// Which processes a sample reads.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum ProcScope {
    /// Every process visible under the root.
    #[default]
    All,
    /// No processes (device-only sampling).
    None,
}

/// Why a collector reading a captured tree has no exit records.
pub const EXITS_CAPTURED: &str = "a captured tree has no exit records";

/// Why a collector has no exit records until it is asked to listen.
pub const EXITS_NOT_REQUESTED: &str = "exit records not requested";

/// Takes samples. Keeps the read buffer and the per-process cache between
/// samples so a steady-state sample does little allocation.
#[derive(Debug)]
pub struct Collector {
    reader: Reader,
    procs: ProcReader,
    devices: Vec<DeviceInfo>,
    loop_backing: Vec<(u32, u32, u64)>,
    anon_mounts: Vec<AnonMount>,
    blocked: blocked::Scanner,
    mounts: MountMap,
    /// diskstats (name, major, minor) at the last device refresh.
    disk_ids: Vec<(String, u32, u32)>,
    /// The `diskseq` files of the whole disks in `devices` (by index), kept
    /// open from one device refresh to the next.
    diskseq_fds: Vec<(usize, OwnedFd)>,
    samples: u64,
    pub scope: ProcScope,
    /// Chooses and reads the fds tracked for progress.
    pub fds: FdScanner,
    threads: ThreadDelays,
    /// The step being taken, for the watchdog of another thread.
    pub activity: Arc<Activity>,
    /// `IOLENS_DEBUG_STALL=<seconds>`: the third sample sleeps that long,
    /// so that tests can see the watchdog and a quit during a stuck sample.
    debug_stall: Option<std::time::Duration>,
    /// Reads the cgroup tree every sample when set (it costs one small
    /// read per process and one or two per cgroup).
    pub cgroups: Option<CgroupReader>,
    /// Exit records, once [`Collector::listen_for_exits`] was called.
    exits: Result<ExitListener, String>,
    /// CPU time of the cgroup part of the last sample, ns (for benchmarks).
    pub cgroup_cpu_ns: u64,
}

/// sysfs facts and mounts are re-read at least this often (in samples).
pub const DEVICE_REFRESH_SAMPLES: u64 = 30;

impl Collector {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let activity = Arc::new(Activity::default());
        Collector {
            reader: Reader::new(root),
            procs: ProcReader::new(),
            devices: Vec::new(),
            loop_backing: Vec::new(),
            anon_mounts: Vec::new(),
            blocked: blocked::Scanner::default(),
            mounts: MountMap::new(),
            disk_ids: Vec::new(),
            diskseq_fds: Vec::new(),
            samples: 0,
            scope: ProcScope::All,
            threads: ThreadDelays::default(),
            fds: FdScanner::with_activity(activity.clone()),
            activity,
            debug_stall: std::env::var("IOLENS_DEBUG_STALL")
                .ok()
                .and_then(|v| v.parse::<f64>().ok())
                .filter(|s| s.is_finite() && *s > 0.0 && *s < 86_400.0)
                .map(std::time::Duration::from_secs_f64),
            cgroups: None,
            exits: Err(EXITS_NOT_REQUESTED.to_string()),
            cgroup_cpu_ns: 0,
        }
    }

    /// Receive taskstats exit records from now on, so that exited threads
    /// and processes are attributed (root only; the reason is kept and
    /// shown otherwise).
    pub fn listen_for_exits(&mut self) {
        self.exits = if !self.reader.is_live() {
            Err(EXITS_CAPTURED.to_string())
        } else if !crate::sys::is_root() {
            Err("exit records (taskstats) need root".to_string())
        } else {
            ExitListener::start()
        };
    }

    /// Where the tracer finds the process of a thread already gone, while
    /// exit records are received.
    pub fn exit_tgids(&self) -> Option<taskstats::ExitTgids> {
        self.exits.as_ref().ok().map(ExitListener::tgids)
    }

    pub fn reader(&mut self) -> &mut Reader {
        &mut self.reader
    }

    fn refresh_devices(&mut self) {
        self.mounts = mounts::read_mounts(&mut self.reader, &self.disk_ids);
        let mut devices = sysblock::read_devices(&mut self.reader);
        for d in &mut devices {
            let by_name = self.mounts.get(&d.name);
            let by_dm = d.dm_name.as_ref().and_then(|n| self.mounts.get(n));
            d.mounts = by_name.or(by_dm).cloned().unwrap_or_default();
        }
        self.loop_backing = Vec::new();
        if devices.iter().any(|d| d.backing_file.is_some()) {
            let table = self
                .reader
                .read_capped("/proc/self/mountinfo", super::fdinfo::MOUNTINFO_CAP)
                .map(mountinfo::parse)
                .unwrap_or_default();
            let table = mountinfo::MountTable::new(table);
            self.loop_backing = devices
                .iter()
                .filter_map(|d| d.backing_file.as_deref())
                .filter_map(|p| sysblock::backing_inode(&self.reader, p, &table))
                .collect();
        }
        self.diskseq_fds = devices
            .iter()
            .enumerate()
            .filter(|(_, d)| d.diskseq.is_some() && d.parent.is_none())
            .filter_map(|(i, d)| {
                let rel = format!("/sys/block/{}/diskseq", d.name);
                Some((i, self.reader.open(Path::new(&rel)).ok()?))
            })
            .collect();
        self.devices = devices;
        self.anon_mounts = mountinfo::read_anon(&mut self.reader);
    }

    /// True when a whole disk's `diskseq` differs from the one cached: the
    /// device was removed and re-added under the same name (and number)
    /// since the last refresh. One small sysfs read per disk per sample
    /// (of the file kept open: sysfs generates it again at each read from
    /// its start), so the model can re-baseline at once instead of trusting
    /// counters that merely happen to be ahead of the old device's. A file
    /// that cannot be read (its device removed) counts as a change.
    fn diskseq_changed(&mut self) -> bool {
        let (reader, devices) = (&mut self.reader, &self.devices);
        self.diskseq_fds.iter().any(|(i, fd)| {
            let now = reader
                .reread(fd)
                .ok()
                .and_then(|b| super::parse_u64(super::trim_ascii(b)));
            now.is_none() || now != devices.get(*i).and_then(|d| d.diskseq)
        })
    }

    /// Take one sample. Never fails: what could not be read is listed in
    /// `errors` and left empty/`None`.
    pub fn sample(&mut self) -> RawSample {
        let mut errors = Vec::new();
        // Exit records first: every thread that exited before the /proc
        // reads below is in this batch or an earlier one.
        let exits = match &self.exits {
            Ok(l) => l.drain(),
            Err(why) => ExitBatch {
                why_not: Some(why.clone()),
                ..Default::default()
            },
        };
        let mono_ns = monotonic_ns();
        let wall_ns = super::realtime_ns();
        let boot_ns = taskstats::boot_ns();
        self.activity.set(Step::Diskstats);
        let disks = match self.reader.read("/proc/diskstats") {
            Ok(b) => {
                let p = diskstats::parse(b);
                errors.extend(p.skipped);
                p.disks
            }
            Err(e) => {
                errors.push(e.to_string());
                Vec::new()
            }
        };
        let set_changed = disks.len() != self.disk_ids.len()
            || disks
                .iter()
                .zip(&self.disk_ids)
                .any(|(d, (name, major, minor))| d.name != *name || d.major != *major || d.minor != *minor);
        if self.samples.is_multiple_of(DEVICE_REFRESH_SAMPLES) || set_changed || self.diskseq_changed() {
            self.activity.set(Step::Devices);
            self.disk_ids = disks.iter().map(|d| (d.name.clone(), d.major, d.minor)).collect();
            self.refresh_devices();
        }
        self.samples += 1;
        if let Some(d) = self.debug_stall.filter(|_| self.samples == 3) {
            self.activity.set(Step::DebugStall);
            std::thread::sleep(d);
        }
        self.activity.set(Step::System);
        let (cpu, psi, mem) = system::read_system(&mut self.reader, &mut errors);
        let vmstat = vmstat::read(&mut self.reader, &mut errors);
        self.activity.set(Step::Processes);
        let delayacct = delayacct::read_state(&mut self.reader);
        self.procs.stat_every_sample = delayacct != Some(false);
        self.procs.always.clone_from(&self.fds.watch.pids);
        self.procs.forks = cpu.and_then(|c| c.forks);
        let mut procs = match self.scope {
            ProcScope::All => self.procs.read_all(&mut self.reader).unwrap_or_else(|e| {
                errors.push(e.to_string());
                ProcSnapshot::default()
            }),
            ProcScope::None => ProcSnapshot::default(),
        };
        // Per-thread delays only while they are accounted (a frozen
        // counter is not worth reading).
        if delayacct != Some(false) {
            self.threads.read(&mut self.reader, &mut procs.procs);
        }
        let blocked = self.blocked.read(&mut self.reader, &procs.procs);
        let waits = self.blocked.waits(&mut self.reader, &procs.procs);
        let listed: Vec<ScanProc<'_>> = procs.procs.iter().map(ScanProc::from).collect();
        self.activity.set(Step::OpenFiles);
        let fds = self.fds.scan(&self.reader, &listed);
        let t0 = super::process_cpu_ns();
        let cgroups = self.cgroups.as_mut().map(|c| {
            self.activity.set(Step::Cgroups);
            c.read(&mut self.reader, &procs)
        });
        self.cgroup_cpu_ns = super::process_cpu_ns().saturating_sub(t0);
        self.activity.done(monotonic_ns());
        RawSample {
            mono_ns,
            wall_ns,
            boot_ns,
            exits,
            disks,
            devices: self.devices.clone(),
            loop_backing: self.loop_backing.clone(),
            anon_mounts: self.anon_mounts.clone(),
            cpu,
            psi,
            mem,
            vmstat,
            procs,
            blocked,
            waits,
            delayacct,
            fds,
            cgroups,
            jobs: Vec::new(),
            errors,
        }
    }
}
