//! Wiring of block-request tracing: the collector's tracer thread feeds a
//! model [`Accumulator`] behind a mutex; each sample takes the interval from it.
//! Where tracing cannot run, the reason is kept for the views.

use std::sync::{Arc, Mutex, PoisonError};

use crate::collect::trace::block::BlockEvent;
use crate::collect::trace::reader::{self, Counters, Handle, Tracer};
use crate::model::trace::Accumulator;
use crate::model::trace::view::TraceView;

/// Requests the dashboard's log keeps.
pub const VIEW_LOG: usize = 500;

/// A running tracer (or the reason there is none).
pub struct Tracing {
    tracker: Arc<Mutex<Accumulator>>,
    handle: Option<Handle>,
    reason: Option<String>,
}

impl Tracing {
    /// Start tracing unless `disabled` says why not; never fails: the
    /// reason it is off is kept.
    pub fn start(disabled: Option<&str>) -> Tracing {
        let tracker = Arc::new(Mutex::new(Accumulator::default()));
        if let Some(why) = disabled {
            return Tracing {
                tracker,
                handle: None,
                reason: Some(why.to_string()),
            };
        }
        let started = Tracer::start().and_then(|t| {
            let sink_tracker = tracker.clone();
            let sink = move |events: &[BlockEvent], c: &Counters| {
                let mut t = sink_tracker.lock().unwrap_or_else(PoisonError::into_inner);
                t.feed(events);
                t.set_counters(c);
            };
            reader::spawn(t, sink).map_err(|e| format!("starting the tracer thread: {e}"))
        });
        match started {
            Ok(h) => Tracing {
                tracker,
                handle: Some(h),
                reason: None,
            },
            Err(e) => Tracing {
                tracker,
                handle: None,
                reason: Some(e),
            },
        }
    }

    pub fn active(&self) -> bool {
        self.handle.is_some()
    }

    /// Close the interval and hand it to the views: the buffers are read
    /// first, so it ends now rather than at the tracer's last poll.
    pub fn take(&self) -> TraceView {
        let Some(h) = &self.handle else {
            return TraceView::off(self.reason.clone().unwrap_or_default());
        };
        h.flush();
        let mut t = self.tracker.lock().unwrap_or_else(PoisonError::into_inner);
        let interval = t.take_interval();
        let log: Vec<_> = t.log().copied().collect();
        let skip = log.len().saturating_sub(VIEW_LOG);
        TraceView {
            active: true,
            reason: None,
            interval,
            log: log[skip..].to_vec(),
        }
    }

    /// Stop tracing and remove the instance (also done on drop).
    pub fn stop(&mut self) {
        if let Some(mut h) = self.handle.take() {
            h.stop();
        }
    }
}

impl Drop for Tracing {
    fn drop(&mut self) {
        self.stop();
    }
}
