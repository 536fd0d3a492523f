//! Sampled tracing in the model (pure): when the tracer's CPU budget
//! binds it traces in windows (`collect::trace::budget`) and says where
//! each began and ended with a [`Mark`]. The marks are applied in time
//! order with the events: a start (or queued bio) is taken only inside a
//! window; once tracing is windowed an issue or completion whose start was
//! not seen is ignored (not counted unmatched) — a request straddling a
//! window's beginning is left out, one straddling its end is kept when it
//! completes within the drain; what a drain did not see complete is
//! dropped when the next window opens.
//!
//! The traced share of an interval is the time starts were accepted over
//! its length; request and byte counts are scaled by its inverse
//! ([`scale`]); latency histograms, size and seek histograms and the
//! sequential share are distributions and ratios, kept as traced.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::TraceInterval;
use crate::collect::trace::budget::Mark;
use crate::model::dirty::{ThrottleInterval, Throttled};
use crate::model::files::{FileIo, FilesInterval};

/// The share of an interval traced: 1.0 when every request was.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Share(pub f64);

impl Default for Share {
    fn default() -> Self {
        Share(1.0)
    }
}

impl Share {
    /// Traced in windows (the counts are scaled estimates).
    pub fn sampled(&self) -> bool {
        self.0 < 1.0
    }

    /// Traced in windows, none of them in the interval: its traced
    /// figures are unknown (not 0).
    pub fn no_window(&self) -> bool {
        self.0 <= 0.0
    }

    /// The traced percentage, rounded, at most 99 while sampled (a share
    /// under 1 never reads 100 %), at least 0.
    pub fn pct(&self) -> u32 {
        let p = (self.0 * 100.0).round().clamp(0.0, 100.0) as u32;
        if self.sampled() { p.min(99) } else { p }
    }

    /// "sampled 30%" while traced in windows; `None` when whole.
    pub fn tag(&self) -> Option<String> {
        self.sampled().then(|| format!("sampled {}%", self.pct()))
    }
}

/// Where the windows are, for the accumulator.
#[derive(Debug)]
pub struct Gate {
    /// Marks not yet reached by the events.
    ahead: VecDeque<Mark>,
    /// Starts are taken (inside a window, or tracing whole).
    pub accepting: bool,
    /// Windowed: issues and completions without a seen start are ignored.
    pub strict: bool,
    /// The window open now and since when (tracing whole: since 0).
    open_since: Option<u64>,
    /// Windows ended since the last interval was taken.
    closed: Vec<(u64, u64)>,
    windowed: bool,
    /// The last windows (open, end), for [`Gate::accepts`].
    recent: VecDeque<(u64, Option<u64>)>,
    /// Windowed when the interval began.
    windowed_before: bool,
    prev_take: Option<u64>,
}

impl Default for Gate {
    fn default() -> Self {
        Gate {
            ahead: VecDeque::new(),
            accepting: true,
            strict: false,
            open_since: Some(0),
            closed: Vec::new(),
            windowed: false,
            recent: VecDeque::from([(0, None)]),
            windowed_before: false,
            prev_take: None,
        }
    }
}

fn overlap(a: (u64, u64), b: (u64, u64)) -> u64 {
    a.1.min(b.1).saturating_sub(a.0.max(b.0))
}

impl Gate {
    /// A window edge, as the tracer made it.
    pub fn mark(&mut self, m: Mark) {
        if self.ahead.len() >= 4096 {
            self.ahead.pop_front();
        }
        self.ahead.push_back(m);
        match m {
            Mark::Open { ts, full } => {
                self.open_since = Some(ts);
                self.windowed = !full;
                if self.recent.len() >= 64 {
                    self.recent.pop_front();
                }
                self.recent.push_back((ts, None));
            }
            Mark::End { ts } => {
                if let Some(o) = self.open_since.take() {
                    self.closed.push((o, ts));
                }
                self.windowed = true;
                if let Some(w) = self.recent.back_mut() {
                    w.1 = w.1.or(Some(ts));
                }
            }
        }
    }

    /// Traced in windows now, or in the interval so far.
    pub fn sampled(&self) -> bool {
        self.windowed || self.windowed_before || !self.closed.is_empty()
    }

    /// Whether `ts` fell in a window (of the last 64): the events that
    /// are not paired with a start (page-cache events) are counted in
    /// windows only, drains left out, so that one share scales them all
    /// (a drain's page-cache events only settle the window's last adds).
    pub fn accepts(&self, ts: u64) -> bool {
        for &(open, end) in self.recent.iter().rev() {
            if ts >= open {
                return end.is_none_or(|e| ts < e);
            }
        }
        false
    }

    /// Apply the marks at or before `ts`; true when a window opened (what
    /// the last drain did not see complete is to be dropped).
    pub fn advance(&mut self, ts: u64) -> bool {
        let mut opened = false;
        while let Some(m) = self.ahead.front().copied().filter(|m| m.ts() <= ts) {
            self.ahead.pop_front();
            match m {
                Mark::Open { full, .. } => {
                    self.accepting = true;
                    self.strict = !full;
                    opened = true;
                }
                Mark::End { .. } => {
                    self.accepting = false;
                    self.strict = true;
                }
            }
        }
        opened
    }

    /// The traced share of the interval from the last take (the first:
    /// from `first`) to `now`, and start the next.
    pub fn take_share(&mut self, now: u64, first: u64) -> Share {
        let from = self.prev_take.unwrap_or(first.min(now));
        self.prev_take = Some(now);
        let closed = std::mem::take(&mut self.closed);
        let before = std::mem::replace(&mut self.windowed_before, self.windowed);
        if !before && !self.windowed && closed.is_empty() {
            return Share::default();
        }
        if now <= from {
            return Share(if self.open_since.is_some() { 1.0 } else { 0.0 });
        }
        let span = (from, now);
        let mut traced: u64 = closed.iter().map(|&w| overlap(w, span)).sum();
        if let Some(o) = self.open_since {
            traced += overlap((o, now), span);
        }
        Share((traced as f64 / (now - from) as f64).min(1.0))
    }
}

fn sc(x: &mut u64, f: f64) {
    *x = (*x as f64 * f).round() as u64;
}

/// Scale the counts of `iv` (requests, bytes, merges, errors) to the whole
/// interval from its traced `share`; histograms and the unmatched, lost
/// and event counts stay as traced. A share of 0 (no window in the
/// interval: a cycle longer than it) leaves no traced figure: they are
/// unknown, not 0 (what a drain completed in it is dropped).
pub fn scale(iv: &mut TraceInterval, share: Share) {
    iv.share = share;
    if share.no_window() {
        iv.devices.clear();
        iv.procs.clear();
        return;
    }
    if !share.sampled() {
        return;
    }
    let f = 1.0 / share.0;
    for d in iv.devices.values_mut() {
        for x in [
            &mut d.issued,
            &mut d.sequential,
            &mut d.issued_bytes,
            &mut d.sequential_bytes,
        ] {
            sc(x, f);
        }
        for x in d.completed.iter_mut().chain(d.bytes.iter_mut()) {
            sc(x, f);
        }
        sc(&mut d.merges, f);
        sc(&mut d.errors, f);
    }
    for p in iv.procs.values_mut() {
        for x in [
            &mut p.issued,
            &mut p.sequential,
            &mut p.issued_bytes,
            &mut p.sequential_bytes,
            &mut p.completed,
            &mut p.read_bytes,
            &mut p.write_bytes,
            &mut p.errors,
            &mut p.flushes,
        ] {
            sc(x, f);
        }
    }
}

/// Scale the page-cache counts of a files interval taken in the same
/// windows (reads, dirties, created bytes; not the blocked time, which is
/// sampled from the process list). A share of 0: no file is known.
pub fn scale_files(iv: &mut FilesInterval, share: Share) {
    if share.no_window() {
        iv.files.clear();
        iv.unplaced_dirtied = 0;
        return;
    }
    if !share.sampled() {
        return;
    }
    let f = 1.0 / share.0;
    let io = |x: &mut FileIo| {
        for v in [
            &mut x.read,
            &mut x.dirtied,
            &mut x.created,
            &mut x.backing_read,
            &mut x.backing_dirtied,
        ] {
            sc(v, f);
        }
    };
    for (_, row) in &mut iv.files {
        io(&mut row.io);
        io(&mut row.kernel);
        row.procs.values_mut().for_each(io);
    }
    sc(&mut iv.unplaced_dirtied, f);
}

/// Scale the dirty throttle's counts of an interval taken in the same
/// windows (passes, pauses, time paused, pages dirtied, per process and per
/// bdi); the longest pause, the writers and the last event's dirty counts
/// stay as traced. A share of 0 (no window): nothing is known.
pub fn scale_throttle(iv: &mut ThrottleInterval, share: Share) {
    if share.no_window() {
        iv.procs.clear();
        iv.bdis.clear();
        return;
    }
    if !share.sampled() {
        return;
    }
    let f = 1.0 / share.0;
    let t = |x: &mut Throttled| {
        for v in [&mut x.passes, &mut x.pauses, &mut x.paused_ms, &mut x.dirtied_pages] {
            sc(v, f);
        }
    };
    iv.procs.values_mut().for_each(t);
    iv.bdis.values_mut().for_each(|b| t(&mut b.sum));
}
