//! Wiring of block-request tracing: the collector's tracer thread feeds a
//! model [`Accumulator`] behind a mutex; each sample takes the interval from it.
//! Where tracing cannot run, the reason is kept for the views.

use std::sync::{Arc, Mutex, PoisonError};

use crate::collect::fdinfo::{AlsoScan, FileId};
use crate::collect::taskstats::ExitTgids;
use crate::collect::trace::block::BlockEvent;
use crate::collect::trace::block::Dev;
use crate::collect::trace::budget::{Controller, Mark};
use crate::collect::trace::dirty::{self, PauseEvent};
use crate::collect::trace::file::{FileEvent, Where};
use crate::collect::trace::reader::{self, Counters, Handle, Sink, Tracer};
use crate::model::dirty::{ThrottleTracker, ThrottleView};
use crate::model::files::{FileKey, FileTracker, FilesView};
use crate::model::trace::Accumulator;
use crate::model::trace::view::TraceView;

/// Requests the dashboard's log keeps.
pub const VIEW_LOG: usize = 500;

/// A running tracer (or the reason there is none).
///
/// Lock order: the tracer's own (taken by [`Handle::flush`] and
/// [`Handle::take_cost`]; its thread holds it while it feeds the [`Feed`]),
/// then `tracker`, then `files` or `throttle`. Nothing here takes the
/// tracer's while holding another.
pub struct Tracing {
    tracker: Arc<Mutex<Accumulator>>,
    files: Arc<Mutex<FileTracker>>,
    /// Why the page-cache events are not traced while tracing runs.
    files_off: Option<String>,
    throttle: Arc<Mutex<ThrottleTracker>>,
    /// Why the dirty throttle is not traced while tracing runs.
    throttle_off: Option<String>,
    handle: Option<Handle>,
    reason: Option<String>,
}

impl Tracing {
    /// Start tracing unless `disabled` says why not; never fails: the
    /// reason it is off is kept.
    /// The process of an event whose thread is gone is looked up in
    /// `exits` first. `file_events`: also the page-cache events (per-file
    /// reads and dirtying). `budget`: the tracer's CPU budget, share of one
    /// core (`None`: no limit).
    pub fn start(
        disabled: Option<&str>,
        file_events: bool,
        budget: Option<f64>,
        also: Arc<AlsoScan>,
        exits: Option<ExitTgids>,
    ) -> Tracing {
        let tracker = Arc::new(Mutex::new(Accumulator::default()));
        let files = Arc::new(Mutex::new(FileTracker::default()));
        let throttle = Arc::new(Mutex::new(ThrottleTracker::default()));
        if let Some(why) = disabled {
            return Tracing {
                tracker,
                files,
                files_off: None,
                throttle,
                throttle_off: None,
                handle: None,
                reason: Some(why.to_string()),
            };
        }
        let started = Tracer::start_with(file_events).and_then(|mut t| {
            t.exits = exits;
            if let Some(c) = fixed_duty().map(Controller::fixed).or(budget.map(Controller::new)) {
                t.hold_to(c)?;
            }
            let sink = Feed {
                tracker: tracker.clone(),
                files: files.clone(),
                throttle: throttle.clone(),
                also: also.clone(),
            };
            let h = reader::spawn(t, sink).map_err(|e| format!("starting the tracer thread: {e}"))?;
            // The fd scan of a sample first takes the events up to then,
            // so that it reads the processes that just read or wrote files.
            also.set_flusher(h.flusher());
            Ok(h)
        });
        match started {
            Ok(h) => {
                let missing: Vec<&str> = crate::collect::trace::file::EVENTS
                    .iter()
                    .map(|(_, n)| *n)
                    .filter(|n| !h.events.iter().any(|e| e == n))
                    .collect();
                let files_off = if !file_events {
                    Some("--no-file-events".to_string())
                } else {
                    (!missing.is_empty()).then(|| format!("this kernel lacks the tracepoint {}", missing.join(", ")))
                };
                let (sys, name) = dirty::EVENT;
                let throttle_off = (!h.events.iter().any(|e| e == name))
                    .then(|| format!("this kernel lacks the tracepoint {sys}:{name}"));
                Tracing {
                    tracker,
                    files,
                    files_off,
                    throttle,
                    throttle_off,
                    handle: Some(h),
                    reason: None,
                }
            }
            Err(e) => Tracing {
                tracker,
                files,
                files_off: None,
                throttle,
                throttle_off: None,
                handle: None,
                reason: Some(e),
            },
        }
    }

    /// Which filesystems each backing device (bdi) holds, for placing the
    /// dirtied folios (the event names the bdi, a partition's is its
    /// disk's): from the sample's device rows and their mounts; and the
    /// loop devices' backing files, kept apart.
    pub fn learn_devices(&self, model: &crate::model::Model) {
        if self.handle.is_none() {
            return;
        }
        let map = crate::model::files::BdiMap::from_devices(&model.devices);
        let backing: Vec<FileKey> = model
            .last_sample()
            .map(|s| &s.loop_backing[..])
            .unwrap_or_default()
            .iter()
            .map(|&(major, minor, ino)| FileKey {
                dev: Dev { major, minor },
                ino,
            })
            .collect();
        let mut f = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        if f.bdis() != &map {
            f.set_bdis(map);
        }
        f.set_backing(backing);
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
        // Before the model's lock: the tracer thread holds its own while
        // it feeds the model.
        let cost = h.take_cost();
        let mut t = self.tracker.lock().unwrap_or_else(PoisonError::into_inner);
        let now = crate::collect::monotonic_ns();
        let interval = t.take_interval_at(now);
        let log: Vec<_> = t.log().copied().collect();
        let skip = log.len().saturating_sub(VIEW_LOG);
        let files = match &self.files_off {
            Some(why) => FilesView::off(why.clone()),
            None => {
                let iv = self
                    .files
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take_interval_at(now, interval.share);
                FilesView {
                    active: true,
                    reason: None,
                    interval: iv,
                    names: Vec::new(),
                }
            }
        };
        let dirty = match &self.throttle_off {
            Some(why) => ThrottleView::off(why.clone()),
            None => {
                let mut iv = self
                    .throttle
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take_interval();
                crate::model::trace::window::scale_throttle(&mut iv, interval.share);
                ThrottleView {
                    active: true,
                    reason: None,
                    interval: iv,
                }
            }
        };
        TraceView {
            active: true,
            reason: None,
            interval,
            log: log[skip..].to_vec(),
            files,
            dirty,
            cost,
        }
    }

    /// Stop tracing and remove the instance (also done on drop).
    pub fn stop(&mut self) {
        if let Some(mut h) = self.handle.take() {
            h.stop();
        }
    }
}

/// The tracer thread's sink: block events to the request tracker,
/// page-cache events to the file tracker, throttle events to the
/// throttle tracker.
struct Feed {
    tracker: Arc<Mutex<Accumulator>>,
    files: Arc<Mutex<FileTracker>>,
    throttle: Arc<Mutex<ThrottleTracker>>,
    /// The fd scan reads the processes the page-cache events came from.
    also: Arc<AlsoScan>,
}

impl Sink for Feed {
    fn events(&mut self, events: &[BlockEvent], c: &Counters) {
        let mut t = self.tracker.lock().unwrap_or_else(PoisonError::into_inner);
        t.feed(events);
        t.set_counters(c);
    }

    fn marks(&mut self, marks: &[Mark]) {
        let mut t = self.tracker.lock().unwrap_or_else(PoisonError::into_inner);
        for &m in marks {
            t.mark(m);
        }
    }

    fn pending(&mut self) -> Option<usize> {
        Some(self.tracker.lock().unwrap_or_else(PoisonError::into_inner).pending())
    }

    fn files(&mut self, events: &[FileEvent]) {
        // Traced in windows: the events of the drains settle the adds
        // pending at a window's end and are not counted.
        let inside = window_flags(&self.tracker, events, |e| e.ts);
        let inside = |i: usize| inside.as_ref().is_none_or(|v| v[i]);
        let mut f = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        f.feed_gated(events, inside);
        // Each process once per file run, with the file its event names
        // (a dirty names its bdi: the filesystems on it).
        let mut last = (0, 0);
        let mut wanted: Vec<(i32, Option<FileId>)> = Vec::new();
        let named = events
            .iter()
            .enumerate()
            .filter(|&(i, e)| inside(i) && !e.kernel && e.tgid > 0)
            .map(|(_, e)| e);
        for e in named {
            if last == (e.tgid, e.ino) {
                continue;
            }
            last = (e.tgid, e.ino);
            let devs = match e.place {
                Where::Sb(d) => vec![d],
                Where::Bdi(_) => f.bdis().devs(&e.place.bdi_name()),
            };
            wanted.push((e.tgid, None));
            wanted.extend(devs.into_iter().map(|d| (e.tgid, Some((d.major, d.minor, e.ino)))));
        }
        drop(f);
        self.also.add_files(wanted);
    }

    fn pauses(&mut self, events: &[PauseEvent]) {
        // Traced in windows: the drains' events are left out, as the
        // files' are, so that the interval's share scales them.
        let mut kept = Vec::new();
        let events = in_windows(&self.tracker, events, |e| e.ts, &mut kept);
        self.throttle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .feed(events);
    }
}

impl Drop for Tracing {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Which events fell inside the tracer's windows; `None` while it traces
/// whole.
fn window_flags<T>(tracker: &Mutex<Accumulator>, events: &[T], ts: impl Fn(&T) -> u64) -> Option<Vec<bool>> {
    let t = tracker.lock().unwrap_or_else(PoisonError::into_inner);
    t.sampled().then(|| events.iter().map(|e| t.accepts(ts(e))).collect())
}

/// The events inside the tracer's windows (all of them while it traces
/// whole), those kept in `kept`.
fn in_windows<'a, T: Copy>(
    tracker: &Mutex<Accumulator>,
    events: &'a [T],
    ts: impl Fn(&T) -> u64,
    kept: &'a mut Vec<T>,
) -> &'a [T] {
    let Some(inside) = window_flags(tracker, events, ts) else {
        return events;
    };
    kept.extend(events.iter().zip(inside).filter(|(_, i)| *i).map(|(e, _)| *e));
    kept
}

/// `IOLENS_TRACE_DUTY=<share>` (in (0, 1]): trace in windows at that fixed
/// duty cycle whatever the cost, as when the budget binds; tests/files_live.rs
/// checks the sampled figures with it.
fn fixed_duty() -> Option<f64> {
    std::env::var("IOLENS_TRACE_DUTY")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|d| *d > 0.0 && *d <= 1.0)
}
