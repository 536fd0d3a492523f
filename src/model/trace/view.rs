//! What the views show of tracing: whether it runs (or why not), the last
//! interval's per-device and per-process numbers, the request log.

use super::requests::Request;
use super::{DeviceTrace, ProcDevTrace, TraceInterval};
use crate::collect::trace::block::Dev;

/// Tracing state for the views.
#[derive(Debug, Clone, Default)]
pub struct TraceView {
    /// Tracing runs; otherwise `reason` says why not.
    pub active: bool,
    pub reason: Option<String>,
    /// The last interval (empty before the first, or when off).
    pub interval: TraceInterval,
    /// Recent requests, oldest first (capped).
    pub log: Vec<Request>,
    /// Per-file reads and dirtying (page-cache events).
    pub files: crate::model::files::FilesView,
    /// Writers paused by the dirty throttle (`balance_dirty_pages`).
    pub dirty: crate::model::dirty::ThrottleView,
    /// The tracer's own CPU over the interval, as its budget counts it
    /// (`None` without a budget).
    pub cost: Option<crate::collect::trace::sampling::Cost>,
}

impl TraceView {
    pub fn off(reason: impl Into<String>) -> TraceView {
        let reason = reason.into();
        TraceView {
            active: false,
            files: crate::model::files::FilesView::off(reason.clone()),
            dirty: crate::model::dirty::ThrottleView::off(reason.clone()),
            reason: Some(reason),
            ..Default::default()
        }
    }

    /// Traced in windows, none of them in the last interval: its traced
    /// figures are unknown (not 0).
    pub fn no_window(&self) -> bool {
        self.active && self.interval.share.no_window()
    }

    /// "sampled 30%" while tracing runs in windows (its figures are
    /// estimates from the traced share); `None` when whole or off.
    pub fn sampled(&self) -> Option<String> {
        self.interval.share.tag().filter(|_| self.active)
    }

    pub fn device(&self, major: u32, minor: u32) -> Option<&DeviceTrace> {
        self.interval.devices.get(&Dev { major, minor })
    }

    /// Rows of the processes on one device: (process key, row).
    pub fn procs_on(&self, dev: Dev) -> impl Iterator<Item = (i32, &ProcDevTrace)> {
        self.interval
            .procs
            .iter()
            .filter(move |((_, d), _)| *d == dev)
            .map(|((k, _), p)| (*k, p))
    }

    /// Rows of one process key across devices.
    pub fn proc_rows(&self, key: i32) -> impl Iterator<Item = (&Dev, &ProcDevTrace)> {
        self.interval
            .procs
            .iter()
            .filter(move |((k, _), _)| *k == key)
            .map(|((_, d), p)| (d, p))
    }
}
