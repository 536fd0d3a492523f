//! The private tracefs instance iolens traces in: created at start, removed
//! on every exit path (Drop), and found again after a `kill -9`.
//!
//! Setup: tracefs is mounted at `/sys/kernel/tracing` when it is not mounted
//! anywhere (and unmounted again when iolens mounted it);
//! `instances/iolens-<pid>-<start time>` is created with a small buffer
//! ([`buffer_kb`]) in 64 KiB sub-buffers where the kernel allows
//! ([`SUBBUF_KB`]), `trace_clock` = `mono` (so CPUs merge and stamps line
//! up with CLOCK_MONOTONIC samples), `options/record-tgid` on, a poll
//! watermark ([`WATERMARK_PERCENT`]), and only the
//! block events of [`super::block::EVENTS`] the model uses enabled (all but
//! `block_rq_insert`), with the page-cache events of
//! [`super::file::EVENTS`] where the kernel has them.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::block::{EVENTS, Kind};
use crate::collect::mountinfo::unescape;
use crate::collect::process::{ProcKey, parse_stat};

/// Where iolens mounts tracefs when it is mounted nowhere.
pub const TRACEFS: &str = "/sys/kernel/tracing";
/// Instance names: this prefix, the owner's pid, '-' and its start time
/// (see [`Owner`]).
pub const PREFIX: &str = "iolens-";

/// Who made an instance, from its name: `iolens-<pid>-<start time>` (the
/// owner's start time in clock ticks after boot, field 22 of its `stat`),
/// or `iolens-<pid>` as iolens named them before it wrote the start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    Process(ProcKey),
    Pid(i32),
}

impl Owner {
    /// The owner of the instance called `name`, if iolens made it.
    pub fn parse(name: &str) -> Option<Owner> {
        let rest = name.strip_prefix(PREFIX)?;
        // The jobs' instance of the same iolens (`trace::reads`).
        let rest = rest.strip_suffix(super::reads::SUFFIX).unwrap_or(rest);
        match rest.split_once('-') {
            Some((pid, start)) => Some(Owner::Process(ProcKey {
                pid: digits(pid)?.parse().ok()?,
                start_time: digits(start)?.parse().ok()?,
            })),
            None => Some(Owner::Pid(digits(rest)?.parse().ok()?)),
        }
    }

    /// The name of this iolens's own instance.
    pub fn own_name() -> String {
        let pid = std::process::id() as i32;
        match ProcKey::of_live(pid) {
            Some(k) => format!("{PREFIX}{pid}-{}", k.start_time),
            None => format!("{PREFIX}{pid}"),
        }
    }

    pub fn pid(&self) -> i32 {
        match self {
            Owner::Process(k) => k.pid,
            Owner::Pid(p) => *p,
        }
    }

    /// Whether the iolens that made the instance still runs: the same
    /// process (pid and start time; a reused pid is another process) and
    /// not a zombie. A name without a start time: its pid runs a program
    /// whose name starts with "iolens", not a zombie (pid 1 is never one).
    pub fn running(&self) -> bool {
        match self {
            Owner::Process(k) => k.running(),
            Owner::Pid(pid) => {
                let mut r = crate::collect::Reader::new("/");
                r.read_pid_file(*pid, "stat")
                    .ok()
                    .and_then(parse_stat)
                    .is_some_and(|st| st.comm.starts_with("iolens") && !matches!(st.state, 'Z' | 'X' | 'x'))
            }
        }
    }
}

/// Ring buffer per CPU in KiB: 2 MiB, at most 32 MiB over all CPUs and at
/// least 256 KiB per CPU. Read every 50 ms, 2 MiB holds about 9,000
/// requests per CPU (three events of ~76 bytes each) between two reads.
pub fn buffer_kb(cpus: usize) -> u64 {
    (32 * 1024 / cpus.max(1) as u64).clamp(256, 2048)
}

/// The per-CPU size `buffer_size_kb` reads as: "2111", or "7 (expanded:
/// 1408)" while the buffer is not allocated yet (the size it will have).
fn given_kb(text: &str) -> Option<u64> {
    let text = text.split_once("expanded:").map_or(text, |(_, n)| n);
    text.split(|c: char| !c.is_ascii_digit())
        .find(|t| !t.is_empty())?
        .parse()
        .ok()
}

/// Sub-buffer ("page") size in KiB where the kernel lets it be set
/// (`buffer_subbuf_size_kb`, Linux 6.8 and later): one read of
/// `trace_pipe_raw` returns one sub-buffer, so 64 KiB instead of the
/// 4 KiB default takes a sixteenth of the system calls at a high request
/// rate. The size the decoder uses is read back from `events/header_page`.
pub const SUBBUF_KB: u64 = 64;

/// How full (in percent) a CPU's buffer gets before a poll(2) of its
/// `trace_pipe_raw` wakes the reader (`buffer_percent`, Linux 5.0 and
/// later): the reader then sleeps between samples however idle the disks
/// are, and wakes early only for a burst. On this VM 25 % of 2 MiB is
/// 8 sub-buffers, filled in about 35 ms at the highest request rate
/// measured (~195,000 events a second on one CPU), which leaves three
/// quarters of the buffer for the time the reader takes to wake.
pub const WATERMARK_PERCENT: u32 = 25;

/// Why tracing is not available, said plainly.
pub type Unavailable = String;

pub(super) fn write_file(path: &Path, value: &str) -> Result<(), String> {
    fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|mut f| f.write_all(value.as_bytes()))
        .map_err(|e| format!("writing {value:?} to {}: {e}", path.display()))
}

/// Create an instance directory; our own leftover of the same name (pid
/// reuse after a kill -9) is removed and created again.
pub(super) fn make_dir(dir: &Path) -> Result<(), String> {
    match fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            fs::remove_dir(dir).map_err(|e| format!("removing old {}: {e}", dir.display()))?;
            fs::create_dir(dir).map_err(|e| format!("creating {}: {e}", dir.display()))
        }
        Err(e) => Err(format!("creating {}: {e}", dir.display())),
    }
}

/// `IOLENS_DEBUG_MOUNT_DELAY_MS`: wait that long between finding tracefs
/// mounted nowhere and mounting it, so that a test can make iolens
/// processes started together all reach the mount (`tests/trace_live.rs`).
fn debug_mount_delay() {
    if let Some(ms) = std::env::var("IOLENS_DEBUG_MOUNT_DELAY_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms.min(5_000)));
    }
}

/// How many times [`Mount::get`] looks for tracefs and mounts it when
/// another process mounted it in between (EBUSY).
pub const MOUNT_TRIES: u32 = 5;

/// The source name of the tracefs mounts iolens makes: `/proc/mounts`
/// tells them from an admin's (whose source is `tracefs` or `nodev`).
pub const MOUNT_SOURCE: &str = "iolens";

/// The mount point of tracefs from `/proc/self/mounts` (or debugfs's
/// `tracing` directory), if mounted.
pub fn find_tracefs() -> Option<PathBuf> {
    tracefs_mount().map(|(dir, _)| dir)
}

/// The tracefs mount point, and whether an iolens mounted it (by its
/// source name).
fn tracefs_mount() -> Option<(PathBuf, bool)> {
    let mut reader = crate::collect::Reader::new("/");
    let mounts = reader
        .read_limited("/proc/self/mounts", crate::collect::fdinfo::MOUNTINFO_CAP)
        .ok()?;
    let mounts = String::from_utf8_lossy(mounts);
    let mut debugfs = None;
    for line in mounts.lines() {
        let mut it = line.split_whitespace();
        let (Some(source), Some(dir), Some(fstype)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        if fstype == "tracefs" {
            return Some((PathBuf::from(unescape(dir)), source == MOUNT_SOURCE));
        }
        if fstype == "debugfs" {
            debugfs = Some(PathBuf::from(unescape(dir)).join("tracing"));
        }
    }
    debugfs.filter(|d| d.join("instances").is_dir()).map(|d| (d, false))
}

fn tracefs_supported() -> bool {
    fs::read_to_string("/proc/filesystems").is_ok_and(|s| s.lines().any(|l| l.trim_end().ends_with("tracefs")))
}

/// A tracefs mount. One that an iolens made (this one or another, running
/// at the same time or killed) is unmounted on drop by the last iolens
/// using it: when no running iolens has an instance in it any more.
#[derive(Debug)]
pub struct Mount {
    pub dir: PathBuf,
    by_iolens: bool,
}

impl Mount {
    /// Find tracefs, mounting it at [`TRACEFS`] when needed. Another
    /// process (an iolens started at the same moment) may mount it between
    /// the look and the mount: the kernel refuses the same tracefs twice
    /// on one mount point with EBUSY, so then it is looked for again (up
    /// to [`MOUNT_TRIES`] times) and that mount used.
    pub fn get() -> Result<Mount, Unavailable> {
        let mut tries = 1;
        loop {
            if let Some((dir, by_iolens)) = tracefs_mount() {
                return Ok(Mount { dir, by_iolens });
            }
            if !tracefs_supported() {
                return Err("this kernel has no tracefs (CONFIG_TRACING off)".into());
            }
            if tries == 1 {
                debug_mount_delay();
            }
            match crate::sys::mount::mount_pseudo(MOUNT_SOURCE, "tracefs", Path::new(TRACEFS)) {
                Ok(()) => {
                    return Ok(Mount {
                        dir: PathBuf::from(TRACEFS),
                        by_iolens: true,
                    });
                }
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) && tries < MOUNT_TRIES => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Err(e) => {
                    let lockdown = crate::sys::input::read_regular(Path::new("/sys/kernel/security/lockdown"), 4096)
                        .unwrap_or_default();
                    let why = if lockdown.windows(17).any(|w| w == b"[confidentiality]") {
                        " (kernel lockdown: confidentiality)"
                    } else {
                        ""
                    };
                    return Err(format!("mounting tracefs at {TRACEFS}: {e}{why}"));
                }
            }
        }
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if !self.by_iolens {
            return;
        }
        // This iolens's own instance is gone by now (see `Tracer`).
        let own = std::process::id() as i32;
        if !list(&self.dir).iter().any(|(_, o)| o.pid() != own && o.running()) {
            // Busy when someone else started using it meanwhile: leave it.
            let _ = crate::sys::mount::unmount(&self.dir);
        }
    }
}

/// `t` when it is a non-empty run of ASCII digits (no sign).
fn digits(t: &str) -> Option<&str> {
    (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())).then_some(t)
}

/// The instances iolens made under `tracefs`, with their owners.
pub fn list(tracefs: &Path) -> Vec<(PathBuf, Owner)> {
    let Ok(rd) = fs::read_dir(tracefs.join("instances")) else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| Some((e.path(), Owner::parse(e.file_name().to_str()?)?)))
        .collect()
}

/// Remove the instances whose owner is no longer running. Returns what was
/// removed and what could not be.
pub fn remove_stale(tracefs: &Path) -> Vec<Result<PathBuf, String>> {
    list(tracefs)
        .into_iter()
        .filter(|(_, owner)| !owner.running())
        .map(|(dir, _)| {
            fs::remove_dir(&dir)
                .map(|_| dir.clone())
                .map_err(|e| format!("removing {}: {e}", dir.display()))
        })
        .collect()
}

/// `iolens --cleanup`: remove the instances of iolens processes that are
/// gone, say what was done; exit status 1 when one could not be removed.
pub fn cleanup_command() -> std::process::ExitCode {
    let Some(dir) = find_tracefs() else {
        println!("tracefs is not mounted: nothing to clean up");
        return std::process::ExitCode::SUCCESS;
    };
    let mut failed = false;
    for (path, owner) in list(&dir) {
        if owner.running() {
            println!("{} kept: iolens pid {} is running", path.display(), owner.pid());
        }
    }
    let results = remove_stale(&dir);
    for r in &results {
        match r {
            Ok(p) => println!("removed {}", p.display()),
            Err(e) => {
                failed = true;
                eprintln!("iolens: {e}");
            }
        }
    }
    if results.is_empty() {
        println!("no stale iolens tracefs instance");
    }
    if failed {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}

/// iolens's own instance; removed on drop (after the mount's drop order:
/// declare it before the [`Mount`]).
#[derive(Debug)]
pub struct Instance {
    pub dir: PathBuf,
    /// Tracepoint names enabled.
    pub enabled: Vec<String>,
    pub buffer_kb: u64,
    /// Whether `buffer_percent` was set to [`WATERMARK_PERCENT`]: a poll(2)
    /// of a CPU's `trace_pipe_raw` then sleeps until that much of its
    /// buffer is filled.
    pub watermark: bool,
}

impl Instance {
    /// Create and configure `instances/iolens-<pid>-<start time>` and
    /// enable the block events this kernel has. Tracing runs from the
    /// moment this returns.
    /// `file_events`: also the page-cache events.
    pub fn create(tracefs: &Path, cpus: usize, file_events: bool) -> Result<Instance, Unavailable> {
        let dir = tracefs.join("instances").join(Owner::own_name());
        make_dir(&dir)?;
        let mut inst = Instance {
            dir,
            enabled: Vec::new(),
            buffer_kb: buffer_kb(cpus),
            watermark: false,
        };
        // On error, `inst` is dropped here and the directory removed.
        inst.configure(file_events)?;
        Ok(inst)
    }

    fn configure(&mut self, file_events: bool) -> Result<(), String> {
        let d = &self.dir;
        write_file(&d.join("tracing_on"), "0")?;
        let subbuf = d.join("buffer_subbuf_size_kb");
        if subbuf.exists() {
            write_file(&subbuf, &SUBBUF_KB.to_string())?;
        }
        write_file(&d.join("buffer_size_kb"), &self.buffer_kb.to_string())?;
        // The kernel rounds the size up to whole sub-buffers, each of which
        // keeps a header (2048 asked is 2111 given with 64 KiB ones): what
        // it gave is what is planned for and said.
        if let Some(kb) = given_kb(&super::read_small(&d.join("buffer_size_kb"))?) {
            self.buffer_kb = kb;
        }
        write_file(&d.join("trace_clock"), "mono")?;
        write_file(&d.join("options/record-tgid"), "1")?;
        let percent = d.join("buffer_percent");
        self.watermark = percent.exists() && write_file(&percent, &WATERMARK_PERCENT.to_string()).is_ok();
        for &(name, fallback, kind) in EVENTS {
            // `block_rq_insert` is decoded (captured traces have it) but not
            // enabled: queue time runs from the start event to the issue,
            // so it would add an event per scheduled request for nothing.
            if kind == Kind::Insert {
                continue;
            }
            for n in std::iter::once(name).chain(fallback) {
                let enable = d.join("events/block").join(n).join("enable");
                if self.enabled.iter().any(|e| e == n) {
                    break;
                }
                if enable.exists() {
                    write_file(&enable, "1")?;
                    self.enabled.push(n.to_string());
                    break;
                }
            }
        }
        // The page-cache events (per-file reads and dirtying; unless
        // `file_events` is off) and the dirty throttle's where this kernel
        // has them; tracing runs without them otherwise.
        let files = if file_events { &super::file::EVENTS[..] } else { &[] };
        for &(sys, name) in files.iter().chain([&super::dirty::EVENT]) {
            let enable = d.join("events").join(sys).join(name).join("enable");
            if enable.exists() && write_file(&enable, "1").is_ok() {
                self.enabled.push(name.to_string());
            }
        }
        write_file(&d.join("tracing_on"), "1")
    }

    pub fn events_dir(&self) -> PathBuf {
        self.dir.join("events")
    }

    /// `per_cpu/cpuN/<file>` of this instance.
    pub fn cpu_file(&self, cpu: usize, file: &str) -> PathBuf {
        self.dir.join("per_cpu").join(format!("cpu{cpu}")).join(file)
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = write_file(&self.dir.join("tracing_on"), "0");
        let _ = fs::remove_dir(&self.dir);
    }
}

/// A CPU's `stats` file: the counts that say events were lost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuStats {
    /// Events overwritten before they were read.
    pub overrun: u64,
    /// Events dropped because the buffer was full.
    pub dropped: u64,
}

impl CpuStats {
    pub fn parse(text: &str) -> CpuStats {
        let mut s = CpuStats::default();
        for line in text.lines() {
            let Some((k, v)) = line.split_once(':') else { continue };
            let v = v.trim().parse::<u64>().unwrap_or(0);
            match k.trim() {
                "overrun" => s.overrun = v,
                "dropped events" => s.dropped = v,
                _ => {}
            }
        }
        s
    }

    pub fn lost(&self) -> u64 {
        self.overrun + self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_file() {
        let t = "entries: 0\noverrun: 12\ncommit overrun: 0\nbytes: 0\noldest event ts:     0.000000\nnow ts:   603.491622\ndropped events: 3\nread events: 0\n";
        assert_eq!(
            CpuStats::parse(t),
            CpuStats {
                overrun: 12,
                dropped: 3
            }
        );
        assert_eq!(CpuStats::parse(t).lost(), 15);
    }

    #[test]
    fn buffer_size_as_the_kernel_gives_it() {
        assert_eq!(given_kb("2111\n"), Some(2111));
        assert_eq!(given_kb("7 (expanded: 1408)\n"), Some(1408));
        assert_eq!(given_kb(""), None);
        assert_eq!(given_kb("x\n"), None);
    }

    #[test]
    fn buffer_sizes() {
        assert_eq!(buffer_kb(2), 2048);
        assert_eq!(buffer_kb(64), 512);
        assert_eq!(buffer_kb(1024), 256);
    }

    #[test]
    fn instance_names() {
        let k = |pid, start_time| Owner::Process(ProcKey { pid, start_time });
        assert_eq!(Owner::parse("iolens-42-1234"), Some(k(42, 1234)));
        assert_eq!(Owner::parse("iolens-42"), Some(Owner::Pid(42)));
        assert_eq!(Owner::parse("iolens-42-1234-jobs"), Some(k(42, 1234)));
        for other in [
            "iolens-",
            "iolens-x",
            "iolens-42-",
            "iolens-42-x",
            "iolens-capture-7",
            "other",
            "iolens-+4",
        ] {
            assert_eq!(Owner::parse(other), None, "{other}");
        }
        let me = ProcKey::of_live(std::process::id() as i32).unwrap();
        assert_eq!(Owner::parse(&Owner::own_name()), Some(Owner::Process(me)));
    }
}
