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
) -> std::io::Result<()> {
    let clock = Clock::new(Instant::now(), interval, First::Short);
    sampler.spawn(clock, ctl, move |_, s| match tx.blocking_send(Box::new(s)) {
        Ok(()) => ControlFlow::Continue(()),
        Err(_) => ControlFlow::Break(()),
    })
}
