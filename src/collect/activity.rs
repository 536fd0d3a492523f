//! What the sampler is doing right now, for the watchdog: when a sample is
//! late, the dashboard header and the batch output say for how long and, as
//! far as known, what the sampler waits on, instead of going quiet.
//!
//! The sampler thread stores its current step in atomics (no lock, no
//! allocation); any other thread reads them.

use std::sync::atomic::{AtomicI32, AtomicU8, AtomicU64, Ordering};
use std::time::Duration;

/// One step of a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Step {
    Idle = 0,
    Diskstats,
    Devices,
    System,
    Processes,
    OpenFiles,
    /// The stall asked for by `IOLENS_DEBUG_STALL` (tests of the watchdog).
    DebugStall,
    Cgroups,
}

impl Step {
    fn from_u8(v: u8) -> Step {
        match v {
            1 => Step::Diskstats,
            2 => Step::Devices,
            3 => Step::System,
            4 => Step::Processes,
            5 => Step::OpenFiles,
            6 => Step::DebugStall,
            7 => Step::Cgroups,
            _ => Step::Idle,
        }
    }

    fn text(self) -> &'static str {
        match self {
            Step::Idle => "",
            Step::Diskstats => "reading /proc/diskstats",
            Step::Devices => "reading /sys/block and the mounts",
            Step::System => "reading /proc/stat, meminfo, pressure",
            Step::Processes => "reading /proc/<pid> of every process",
            Step::OpenFiles => "reading the open files of pid",
            Step::DebugStall => "IOLENS_DEBUG_STALL",
            Step::Cgroups => "reading the cgroup tree",
        }
    }
}

/// The sampler's current step, shared between threads.
#[derive(Debug, Default)]
pub struct Activity {
    step: AtomicU8,
    pid: AtomicI32,
    /// CLOCK_MONOTONIC ns of the start of the current step.
    since_ns: AtomicU64,
    /// CLOCK_MONOTONIC ns of the end of the last complete sample (0: none yet).
    last_done_ns: AtomicU64,
}

impl Activity {
    pub fn set(&self, step: Step) {
        self.since_ns.store(crate::collect::monotonic_ns(), Ordering::Relaxed);
        self.step.store(step as u8, Ordering::Relaxed);
    }

    /// The process whose files are being read (with [`Step::OpenFiles`]).
    pub fn set_pid(&self, pid: i32) {
        self.since_ns.store(crate::collect::monotonic_ns(), Ordering::Relaxed);
        self.pid.store(pid, Ordering::Relaxed);
    }

    /// A sample was completed at `mono_ns`.
    pub fn done(&self, mono_ns: u64) {
        self.set(Step::Idle);
        self.last_done_ns.store(mono_ns, Ordering::Relaxed);
    }

    /// What the sampler is doing, in words ("" when idle).
    pub fn describe(&self) -> String {
        match Step::from_u8(self.step.load(Ordering::Relaxed)) {
            Step::OpenFiles => format!("{} {}", Step::OpenFiles.text(), self.pid.load(Ordering::Relaxed)),
            s => s.text().to_string(),
        }
    }

    /// "reading the open files of pid 812 for 12.0 s" when the sampler has
    /// been in one step for longer than `min` at `now_ns` (a read stuck in
    /// the kernel, most likely), else `None`.
    pub fn stuck(&self, now_ns: u64, min: Duration) -> Option<String> {
        let what = self.describe();
        let for_ns = now_ns.saturating_sub(self.since_ns.load(Ordering::Relaxed));
        (!what.is_empty() && for_ns > min.as_nanos() as u64).then(|| format!("{what} for {:.1} s", for_ns as f64 / 1e9))
    }

    pub fn last_done_ns(&self) -> u64 {
        self.last_done_ns.load(Ordering::Relaxed)
    }
}

/// How late a sample may be before it is called a stall: twice the
/// interval, and never less than 1.5 s.
pub fn stall_after(interval: Duration) -> Duration {
    (interval * 2).max(Duration::from_millis(1500))
}

/// "no sample for 4.0 s (reading the open files of pid 812)" when the last
/// sample ended more than [`stall_after`] ago, else `None`. `now_ns` and
/// `last_ns` are CLOCK_MONOTONIC; `last_ns` 0 means since `start_ns`.
pub fn stall_text(now_ns: u64, last_ns: u64, start_ns: u64, interval: Duration, waiting_on: &str) -> Option<String> {
    let since = if last_ns == 0 { start_ns } else { last_ns };
    let late = Duration::from_nanos(now_ns.saturating_sub(since));
    (late > stall_after(interval)).then(|| late_text(late, waiting_on))
}

/// "no sample for 4.0 s (what it waits on)".
pub fn late_text(late: Duration, waiting_on: &str) -> String {
    let mut s = format!("no sample for {:.1} s", late.as_secs_f64());
    if !waiting_on.is_empty() {
        s.push_str(&format!(" ({waiting_on})"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn stall_threshold_is_twice_the_interval_but_at_least_1_5_s() {
        assert_eq!(stall_after(Duration::from_millis(500)), Duration::from_millis(1500));
        assert_eq!(stall_after(Duration::from_secs(2)), Duration::from_secs(4));
        let i = Duration::from_millis(500);
        assert_eq!(stall_text(11 * S + S / 2, 10 * S, 0, i, ""), None);
        assert_eq!(
            stall_text(12 * S, 10 * S, 0, i, "").as_deref(),
            Some("no sample for 2.0 s")
        );
        // No sample yet: counted from the start.
        assert_eq!(
            stall_text(5 * S, 0, S, i, "reading /proc/diskstats").as_deref(),
            Some("no sample for 4.0 s (reading /proc/diskstats)")
        );
    }

    #[test]
    fn describes_the_current_step() {
        let a = Activity::default();
        assert_eq!(a.describe(), "");
        a.set(Step::OpenFiles);
        a.set_pid(812);
        assert_eq!(a.describe(), "reading the open files of pid 812");
        let t = a.since_ns.load(Ordering::Relaxed);
        assert_eq!(a.stuck(t + S, Duration::from_secs(2)), None);
        assert_eq!(
            a.stuck(t + 12 * S, Duration::from_secs(1)).as_deref(),
            Some("reading the open files of pid 812 for 12.0 s")
        );
        a.done(42);
        assert_eq!((a.describe().as_str(), a.last_done_ns()), ("", 42));
        assert_eq!(a.stuck(t + 12 * S, Duration::from_secs(1)), None);
    }
}
