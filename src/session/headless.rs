//! A report per interval without a terminal (the batch output, `iolens
//! record`): the samples come from the sampler thread, so that a read that
//! hangs (a process stuck in the kernel, a dying disk) never stops the
//! reports: each one comes on time, saying that no sample came.

use std::ops::ControlFlow;
use std::sync::mpsc::{RecvTimeoutError, SyncSender};
use std::time::{Duration, Instant};

use super::{Clock, First, Session};
use crate::collect::RawSample;
use crate::model::Model;
use crate::model::trace::TraceInterval;

/// What a report covers.
pub enum Report<'a> {
    /// The model after the sample of this report's tick.
    Fresh {
        model: &'a Model,
        /// When the run began (monotonic ns).
        start_ns: u64,
    },
    /// No sample came in time.
    Late {
        /// "no sample for 3.2 s (reading ...)".
        stall: String,
        /// The step the sampler is in ("" when none).
        waiting: String,
    },
}

/// How often, and how many reports.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    pub every: Duration,
    /// Reports (intervals) before the run ends; `None`: until interrupted.
    pub count: Option<u64>,
}

/// Sent by the sampler thread: a sample with its tick, or `None` when no
/// sample will come.
type SampleTx = SyncSender<Option<(u32, RawSample)>>;

/// Says, when the sampler thread ends (by a panic, or when the reports
/// ended), that no sample will come.
struct Ended(SampleTx);

impl Drop for Ended {
    fn drop(&mut self) {
        let _ = self.0.send(None);
    }
}

/// The report loop: a baseline, then a report per tick of the session's
/// clock (short first interval). Every sample goes to `tap` first (with
/// the tracer's interval while tracing; `Break` ends the run), then into
/// `model`; `report` gets each interval (`Break` ends the run). A
/// terminating signal ends the run through the normal path (the tracefs
/// instance is removed), then main re-raises it.
pub fn run(
    session: Session,
    mut model: Model,
    schedule: Schedule,
    mut tap: impl FnMut(&RawSample, Option<&TraceInterval>) -> ControlFlow<()>,
    mut report: impl FnMut(Report) -> ControlFlow<()>,
) -> anyhow::Result<()> {
    let every = schedule.every;
    let Session { sampler, tracer } = session;
    let activity = sampler.activity();
    let tracing = tracer.start();
    crate::stop::catch(true);
    crate::stop::watch_sampler(activity.clone());
    let clock = Clock::new(Instant::now(), every, First::Short);
    let start_ns = crate::collect::monotonic_ns();
    // `None` ends the wait for a sample: a terminating signal or the end
    // of the sampler thread (which only a panic ends).
    let (tx, rx) = std::sync::mpsc::sync_channel(2);
    let on_signal = tx.clone();
    crate::stop::on_request(move || {
        let _ = on_signal.try_send(None);
    });
    // Closed when the reports end: the sampler ends too.
    let (_ctl, ctl_rx) = std::sync::mpsc::channel();
    let ended = Ended(tx);
    sampler.spawn(clock.clone(), ctl_rx, move |t, s| {
        match ended.0.send(Some((t.tick, s))) {
            Ok(()) => ControlFlow::Continue(()),
            Err(_) => ControlFlow::Break(()),
        }
    })?;
    let mut last_ns = 0;
    'reports: for k in 1u32.. {
        if schedule.count.is_some_and(|n| u64::from(k) > n) {
            break;
        }
        // A report waits for the sample of tick k a quarter of the
        // interval more, at least 100 ms (a very short interval must not
        // call an ordinary sample late) and at most 250 ms.
        let grace = (every / 4).clamp(Duration::from_millis(100), Duration::from_millis(250));
        let deadline = clock.due_at(k) + grace;
        let mut fresh = false;
        loop {
            if crate::stop::requested() {
                break 'reports;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(None) => break 'reports,
                Ok(Some((tick, s))) => {
                    last_ns = s.mono_ns;
                    let trace = tracing.take();
                    // A lost sample is said and retried with the next
                    // one; samples lost in a row stop the recorder.
                    if tap(&s, trace.active.then_some(&trace.interval)).is_break() {
                        break 'reports;
                    }
                    // The first interval's requests (begun before the
                    // baseline) are taken and dropped with the baseline.
                    super::fold(&mut model, s, trace);
                    tracing.learn_devices(&model);
                    if tick >= k {
                        fresh = true;
                        break;
                    }
                }
                Err(RecvTimeoutError::Timeout) if !left.is_zero() => {}
                Err(_) => break,
            }
        }
        let r = if fresh {
            Report::Fresh {
                model: &model,
                start_ns,
            }
        } else {
            let now = crate::collect::monotonic_ns();
            let waiting = activity.describe();
            let since = if last_ns == 0 { start_ns } else { last_ns };
            let stall = crate::collect::activity::late_text(Duration::from_nanos(now.saturating_sub(since)), &waiting);
            Report::Late { stall, waiting }
        };
        if report(r).is_break() {
            break;
        }
    }
    Ok(())
}
