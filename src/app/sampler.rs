//! The sampler thread: the blocking reads of /proc and /sys, on a steady
//! clock, off the async loop.

use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant};

use crate::collect::cgroup::CgroupReader;
use crate::collect::{Collector, RawSample};

/// Messages to the sampler thread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SamplerCtl {
    Interval(Duration),
    Pause(bool),
    /// Read the cgroup tree each sample (from the next one on), or stop.
    Cgroups(bool),
}

/// The sampler thread: samples at once, again after
/// [`crate::batch::FIRST_INTERVAL`] (so the first rates show at once), then
/// every `interval` on a steady clock; changes of interval and pause arrive on `ctl`. Ends when either
/// channel closes.
pub(super) fn sampler(
    mut collector: Collector,
    mut interval: Duration,
    ctl: std_mpsc::Receiver<SamplerCtl>,
    tx: tokio::sync::mpsc::Sender<Box<RawSample>>,
) {
    let mut paused = false;
    let mut last = Instant::now();
    let mut next = last;
    let mut first = true;
    loop {
        let now = Instant::now();
        if !paused && now >= next {
            last = now;
            if tx.blocking_send(Box::new(collector.sample())).is_err() {
                return;
            }
            // The first rates come at once: a short first interval, then
            // the configured one.
            next += if std::mem::take(&mut first) {
                interval.min(crate::batch::FIRST_INTERVAL)
            } else {
                interval
            };
            if next <= Instant::now() {
                // Fell behind (suspend, slow sample): skip, don't burst.
                next = Instant::now() + interval;
            }
        }
        let msg = if paused {
            ctl.recv().map_err(|_| std_mpsc::RecvTimeoutError::Disconnected)
        } else {
            ctl.recv_timeout(next.saturating_duration_since(Instant::now()))
        };
        match msg {
            Ok(SamplerCtl::Interval(d)) => {
                interval = d;
                next = last + d;
            }
            Ok(SamplerCtl::Pause(p)) => {
                paused = p;
                // On resume, sample at once: the model takes it as the new
                // baseline (`Model::rebaseline`), so the first rates after a
                // pause cover one normal interval.
                next = Instant::now();
            }
            Ok(SamplerCtl::Cgroups(true)) => {
                collector.cgroups.get_or_insert_with(CgroupReader::new);
            }
            Ok(SamplerCtl::Cgroups(false)) => collector.cgroups = None,
            Err(std_mpsc::RecvTimeoutError::Timeout) => {}
            Err(std_mpsc::RecvTimeoutError::Disconnected) => return,
        }
    }
}
