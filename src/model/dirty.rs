//! Writers paused by the dirty throttle, from `writeback:balance_dirty_pages`
//! (pure: no I/O, no clock). The tracer thread feeds [`PauseEvent`]s to a
//! [`ThrottleTracker`]; each sample takes the interval's
//! [`ThrottleInterval`]: per process and backing device (bdi) the passes
//! through the throttle, the pauses (passes with `pause` > 0) and the time
//! paused (the sum of those `pause` values, ms: what the kernel put the
//! task to sleep for; a fatal signal can end a sleep early), and per bdi
//! the same summed with the last dirty counts the events gave.
//!
//! A pause is counted in the interval its event falls in, whole: a 200 ms
//! pause taken 50 ms before the interval ends counts 200 ms there, so a
//! writer paused all the time can show a little more or less than the
//! interval (the rule caps the share at 100%).
//!
//! The bdi is named by the kernel as "MAJ:MIN" of the whole disk (of a
//! partition's disk), or of the superblock for FUSE and NFS.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::collect::trace::dirty::PauseEvent;
use crate::model::ProcRow;
use crate::model::process::SharedRates;

/// (process, bdi) rows kept per interval; past this the rest are summed
/// into one row with pid 0 per bdi.
pub const MAX_ROWS: usize = 512;

/// One process (or kernel thread) on one bdi over an interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Throttled {
    /// Passes through the throttle (events).
    pub passes: u64,
    /// Passes that slept (`pause` > 0) and the milliseconds they slept.
    pub pauses: u64,
    pub paused_ms: u64,
    /// The longest single pause, ms.
    pub max_pause_ms: u64,
    /// Pages it dirtied between passes (`dirtied`).
    pub dirtied_pages: u64,
    /// A kernel thread.
    pub kernel: bool,
}

impl Throttled {
    fn add(&mut self, e: &PauseEvent) {
        self.passes += 1;
        let ms = e.sleep_ms();
        if ms > 0 {
            self.pauses += 1;
            self.paused_ms = self.paused_ms.saturating_add(ms);
            self.max_pause_ms = self.max_pause_ms.max(ms);
        }
        self.dirtied_pages = self.dirtied_pages.saturating_add(e.dirtied);
        self.kernel |= e.kernel;
    }

    /// Another row of the same process (on another bdi) added in.
    fn merge(&mut self, o: &Throttled) {
        self.passes += o.passes;
        self.pauses += o.pauses;
        self.paused_ms = self.paused_ms.saturating_add(o.paused_ms);
        self.max_pause_ms = self.max_pause_ms.max(o.max_pause_ms);
        self.dirtied_pages = self.dirtied_pages.saturating_add(o.dirtied_pages);
        self.kernel |= o.kernel;
    }
}

/// One bdi over an interval: its writers' passes and pauses summed, and
/// the dirty counts of its last event (pages).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BdiThrottle {
    pub sum: Throttled,
    /// Processes (and kernel threads) that passed through the throttle.
    pub writers: u64,
    /// The global dirty limit and dirty pages, last event.
    pub limit_pages: u64,
    pub dirty_pages: u64,
    /// The bdi's dirty pages and its share of the set point, last event
    /// (`None` where the kernel's event lacks them).
    pub wb_dirty_pages: Option<u64>,
    pub wb_setpoint_pages: Option<u64>,
}

/// Everything over one interval.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThrottleInterval {
    /// (process key, bdi) → row: the thread group, else the thread (when
    /// it was gone before it could be looked up); 0 for the rows past
    /// [`MAX_ROWS`].
    pub procs: BTreeMap<(i32, String), Throttled>,
    pub bdis: BTreeMap<String, BdiThrottle>,
    /// Events seen.
    pub events: u64,
}

impl ThrottleInterval {
    /// Each process's rows summed over its bdis (the rows past
    /// [`MAX_ROWS`], key 0, left out).
    pub fn per_process(&self) -> HashMap<i32, Throttled> {
        let mut m: HashMap<i32, Throttled> = HashMap::new();
        for ((k, _), t) in self.procs.iter().filter(|((k, _), _)| *k > 0) {
            m.entry(*k).or_default().merge(t);
        }
        m
    }

    /// The rows of one bdi: (process key, row).
    pub fn procs_on<'a>(&'a self, bdi: &'a str) -> impl Iterator<Item = (i32, &'a Throttled)> {
        self.procs
            .iter()
            .filter(move |((_, b), _)| b == bdi)
            .map(|((k, _), t)| (*k, t))
    }
}

/// Accumulates throttle events between samples (bounded: [`MAX_ROWS`]).
#[derive(Debug, Default)]
pub struct ThrottleTracker {
    cur: ThrottleInterval,
}

impl ThrottleTracker {
    /// Feed events in time order.
    pub fn feed(&mut self, events: &[PauseEvent]) {
        for e in events {
            self.cur.events += 1;
            let bdi = e.bdi_name();
            let who = if e.tgid > 0 { e.tgid } else { e.pid.max(0) };
            let mut key = (who, bdi.clone());
            if self.cur.procs.len() >= MAX_ROWS && !self.cur.procs.contains_key(&key) {
                key.0 = 0;
            }
            let row = self.cur.procs.entry(key).or_default();
            let new = row.passes == 0;
            row.add(e);
            let b = self.cur.bdis.entry(bdi).or_default();
            b.sum.add(e);
            b.writers += u64::from(new);
            b.limit_pages = e.limit;
            b.dirty_pages = e.dirty;
            b.wb_dirty_pages = e.wb_dirty;
            b.wb_setpoint_pages = e.wb_setpoint;
        }
    }

    /// Close the interval.
    pub fn take_interval(&mut self) -> ThrottleInterval {
        std::mem::take(&mut self.cur)
    }
}

/// What the views and rules see of the throttle: the last interval, or
/// why it is not traced (then every figure is n/a, never 0).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThrottleView {
    pub active: bool,
    pub reason: Option<String>,
    pub interval: ThrottleInterval,
}

impl ThrottleView {
    pub fn off(reason: impl Into<String>) -> ThrottleView {
        ThrottleView {
            active: false,
            reason: Some(reason.into()),
            interval: ThrottleInterval::default(),
        }
    }
}

/// The throttle's per-process figures into the rows' rates (as the
/// columns, the batch reports and the exporter show them), while the
/// throttle is traced; otherwise the rates keep `None` (n/a). Rows without
/// rates (a first sample) stay without.
pub fn fold_into(procs: &mut [ProcRow], v: &ThrottleView, dt: Option<f64>, shared: &mut SharedRates) {
    let (true, Some(dt)) = (v.active, dt.filter(|d| *d > 0.0)) else {
        return;
    };
    let per = v.interval.per_process();
    for p in procs {
        let Some(r) = p.rates.as_deref() else { continue };
        let t = per.get(&p.raw.key.pid).copied().unwrap_or_default();
        let mut r = *r;
        r.dirty_paused_pct = Some((t.paused_ms as f64 / (dt * 1000.0) * 100.0).min(100.0));
        r.dirty_paused_ms = Some(t.paused_ms);
        r.dirty_pauses = Some(t.pauses);
        r.dirty_max_pause_ms = Some(t.max_pause_ms);
        p.rates = Some(shared.share(r));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(pid: i32, tgid: i32, bdi: &str, pause: i64, dirtied: u64) -> PauseEvent {
        let mut name = [0u8; 32];
        name[..bdi.len()].copy_from_slice(bdi.as_bytes());
        PauseEvent {
            ts: 0,
            bdi: name,
            limit: 1000,
            dirty: 900,
            wb_setpoint: Some(200),
            wb_dirty: Some(250),
            dirtied,
            paused_ms: 0,
            pause_ms: pause,
            period_ms: 0,
            think_ms: 0,
            pid,
            tgid,
            kernel: false,
        }
    }

    #[test]
    fn pauses_summed_per_process_and_bdi() {
        let mut t = ThrottleTracker::default();
        t.feed(&[
            ev(11, 10, "7:0", 200, 32),
            ev(12, 10, "7:0", 0, 8),
            ev(12, 10, "7:0", -4, 8),
            ev(11, 10, "7:0", 56, 16),
            ev(20, 0, "7:0", 8, 8),
            ev(30, 30, "254:0", 24, 4),
        ]);
        let i = t.take_interval();
        assert_eq!(i.events, 6);
        let dd = i.procs[&(10, "7:0".to_string())];
        assert_eq!(
            (dd.passes, dd.pauses, dd.paused_ms, dd.max_pause_ms, dd.dirtied_pages),
            (4, 2, 256, 200, 64)
        );
        // a task gone before it was looked up stands for its process
        assert_eq!(i.procs[&(20, "7:0".to_string())].paused_ms, 8);
        let b = i.bdis["7:0"];
        assert_eq!((b.writers, b.sum.pauses, b.sum.paused_ms), (2, 3, 264));
        assert_eq!((b.limit_pages, b.dirty_pages, b.wb_dirty_pages), (1000, 900, Some(250)));
        assert_eq!(i.procs_on("254:0").map(|(k, _)| k).collect::<Vec<_>>(), [30]);
        assert_eq!(t.take_interval(), ThrottleInterval::default());
    }

    /// Traced at share 0.25: passes, pauses, time paused and pages
    /// dirtied ×4, per process and per bdi; the longest pause, the writers
    /// and the last dirty counts as traced; whole, nothing changes.
    #[test]
    fn sampled_pauses_are_scaled() {
        use crate::model::trace::window::{Share, scale_throttle};
        let mut t = ThrottleTracker::default();
        t.feed(&[
            ev(11, 10, "7:0", 30, 4),
            ev(11, 10, "7:0", 20, 4),
            ev(11, 10, "7:0", 0, 2),
        ]);
        let whole = t.take_interval();
        let mut same = whole.clone();
        scale_throttle(&mut same, Share(1.0));
        assert_eq!(same, whole);
        let mut i = whole;
        scale_throttle(&mut i, Share(0.25));
        let r = i.procs[&(10, "7:0".to_string())];
        assert_eq!(
            (r.passes, r.pauses, r.paused_ms, r.max_pause_ms, r.dirtied_pages),
            (12, 8, 200, 30, 40)
        );
        let b = i.bdis["7:0"];
        assert_eq!((b.sum.pauses, b.sum.paused_ms, b.sum.max_pause_ms), (8, 200, 30));
        assert_eq!((b.writers, b.dirty_pages, i.events), (1, 900, 3));
        // no window in the interval: nothing is known
        scale_throttle(&mut i, Share(0.0));
        assert!(i.procs.is_empty() && i.bdis.is_empty(), "{i:?}");
    }

    #[test]
    fn rows_are_bounded() {
        let mut t = ThrottleTracker::default();
        let v: Vec<PauseEvent> = (1..=MAX_ROWS as i32 + 10).map(|p| ev(p, p, "7:0", 10, 1)).collect();
        t.feed(&v);
        let i = t.take_interval();
        assert_eq!(i.procs.len(), MAX_ROWS + 1);
        assert_eq!(i.procs[&(0, "7:0".to_string())].paused_ms, 100);
        assert_eq!(i.bdis["7:0"].sum.paused_ms, (MAX_ROWS as u64 + 10) * 10);
    }
}
