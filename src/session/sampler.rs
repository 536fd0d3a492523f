//! The sampler loop: the blocking reads of /proc and /sys on a steady
//! [`Clock`], on a thread of their own (the dashboard's UI, the batch
//! reports and the exporter's server never wait for a read), taking
//! changes of interval, pause and cgroups on a channel.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use super::clock::Clock;
use crate::collect::activity::Activity;
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

/// A sample as the sampler took it: its tick and how long it took.
#[derive(Debug, Clone, Copy)]
pub struct Taken {
    pub tick: u32,
    pub took: Duration,
}

/// Takes the samples; built by [`super::Session::new`].
#[derive(Debug)]
pub struct Sampler {
    collector: Collector,
    /// Copy and backup jobs, on a live system.
    jobs: Option<super::jobs::Engine>,
}

impl Sampler {
    pub(super) fn new(collector: Collector, jobs: Option<super::jobs::Engine>) -> Sampler {
        Sampler { collector, jobs }
    }

    /// A sample, with the jobs among its processes.
    fn take(&mut self) -> RawSample {
        let mut s = self.collector.sample();
        if let Some(e) = self.jobs.as_mut() {
            let tools: Vec<i32> = s
                .procs
                .procs
                .iter()
                .filter(|p| super::jobs::tool_comm(&p.comm))
                .map(|p| p.key.pid)
                .collect();
            s.jobs = e.read(&tools);
        }
        s
    }

    /// The step being taken, for a watchdog on another thread.
    pub fn activity(&self) -> Arc<Activity> {
        self.collector.activity.clone()
    }

    /// The collector itself, for a benchmark of single samples.
    pub fn collector(&mut self) -> &mut Collector {
        &mut self.collector
    }

    /// [`Sampler::run`] on a thread of its own, `iolens-sampler`.
    pub fn spawn(
        self,
        clock: Clock,
        ctl: Receiver<SamplerCtl>,
        sink: impl FnMut(Taken, RawSample) -> ControlFlow<()> + Send + 'static,
    ) -> std::io::Result<std::thread::JoinHandle<()>> {
        std::thread::Builder::new()
            .name("iolens-sampler".into())
            .spawn(move || self.run(clock, ctl, sink))
    }

    /// The sampler loop: a sample at every tick of `clock`, handed to
    /// `sink`; changes arrive on `ctl`. Ends when `sink` breaks or `ctl`
    /// closes.
    pub fn run(
        mut self,
        mut clock: Clock,
        ctl: Receiver<SamplerCtl>,
        mut sink: impl FnMut(Taken, RawSample) -> ControlFlow<()>,
    ) {
        let mut paused = false;
        // When the last sample began (a new interval counts from there).
        let mut last = Instant::now();
        loop {
            let now = Instant::now();
            if !paused && now >= clock.due() {
                last = now;
                let s = self.take();
                let taken = Taken {
                    tick: clock.tick(),
                    took: now.elapsed(),
                };
                if sink(taken, s).is_break() {
                    return;
                }
                clock.advance(Instant::now());
            }
            let msg = if paused {
                ctl.recv().map_err(|_| RecvTimeoutError::Disconnected)
            } else {
                ctl.recv_timeout(clock.due().saturating_duration_since(Instant::now()))
            };
            match msg {
                Ok(SamplerCtl::Interval(d)) => clock.restart(last + d, d),
                // On resume, sample at once: the model takes it as the new
                // baseline (`Model::rebaseline`), so the first rates after a
                // pause cover one normal interval.
                Ok(SamplerCtl::Pause(p)) => {
                    paused = p;
                    clock.restart(Instant::now(), clock.every());
                }
                Ok(SamplerCtl::Cgroups(true)) => {
                    self.collector.cgroups.get_or_insert_with(CgroupReader::new);
                }
                Ok(SamplerCtl::Cgroups(false)) => self.collector.cgroups = None,
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::fdinfo::Watch;
    use crate::session::{First, Plan, Session};

    fn fixture() -> Session {
        Session::new(Plan {
            root: concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/root-6.8").into(),
            cgroups: false,
            exits: false,
            watch: Watch::default(),
            trace_off: Some("a test"),
            file_events: true,
            trace_budget: None,
        })
    }

    #[test]
    fn a_sample_per_tick_until_the_sink_stops() {
        let (_ctl, ctl) = std::sync::mpsc::channel();
        let mut ticks = Vec::new();
        let clock = Clock::new(Instant::now(), Duration::from_millis(300), First::Short);
        fixture().sampler.run(clock, ctl, |t, s| {
            assert!(!s.disks.is_empty(), "the fixture's disks");
            ticks.push(t.tick);
            if ticks.len() == 3 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        // The baseline, the short first interval, then (unless a slow
        // sample skipped ticks) the next.
        assert_eq!(ticks[..2], [0, 1]);
        assert!(ticks[2] >= 2, "{ticks:?}");
    }

    #[test]
    fn the_loop_ends_when_its_channel_closes() {
        let (ctl_tx, ctl) = std::sync::mpsc::channel();
        ctl_tx.send(SamplerCtl::Cgroups(true)).unwrap();
        drop(ctl_tx);
        let mut cgroups = Vec::new();
        let clock = Clock::new(Instant::now(), Duration::from_millis(50), First::Short);
        fixture().sampler.run(clock, ctl, |_, s| {
            cgroups.push(s.cgroups.is_some());
            ControlFlow::Continue(())
        });
        // The baseline (without cgroups), then the change, then the end.
        assert_eq!(cgroups, [false]);
    }
}
