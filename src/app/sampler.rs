//! The dashboard's sampler thread: the session's sampler loop
//! ([`crate::session::Sampler::run`]), off the async loop, sending each
//! sample to it. The first sample comes at once, the next after
//! [`crate::session::FIRST_INTERVAL`] (so the first rates show at once),
//! then one every interval; changes of interval, pause and cgroups arrive
//! on `ctl`. Ends when either channel closes.

use std::ops::ControlFlow;
use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant};

use crate::collect::RawSample;
pub use crate::session::SamplerCtl;
use crate::session::{Clock, First, Sampler};

/// Start the sampler thread.
pub(super) fn spawn(
    sampler: Sampler,
    interval: Duration,
    ctl: std_mpsc::Receiver<SamplerCtl>,
    tx: tokio::sync::mpsc::Sender<Box<RawSample>>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let clock = Clock::new(Instant::now(), interval, First::Short);
    sampler.spawn(clock, ctl, move |_, s| match tx.blocking_send(Box::new(s)) {
        Ok(()) => ControlFlow::Continue(()),
        Err(_) => ControlFlow::Break(()),
    })
}

/// After the dashboard's loop: the sampler thread told to end (its
/// channels closed) and waited for, at most `limit`, so that what it owns
/// is dropped before the process exits (the jobs' tracefs instance is
/// removed then). A thread still in a sample after that is left to the
/// exit.
pub(super) fn stop(
    thread: std::thread::JoinHandle<()>,
    ctl: std_mpsc::Sender<SamplerCtl>,
    samples: tokio::sync::mpsc::Receiver<Box<RawSample>>,
    limit: Duration,
) {
    drop((ctl, samples));
    let end = Instant::now() + limit;
    while !thread.is_finished() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(5));
    }
    if thread.is_finished() {
        let _ = thread.join();
    }
}
