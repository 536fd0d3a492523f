//! Following each request from start to completion.
//!
//! - start (`block_io_start`, or `block_bio_queue`): remembered per device
//!   by sector;
//! - bio queued (`block_bio_queue`, where it is not the start): remembered
//!   per device by sector with its end; the request issued over it takes
//!   the earliest queued bio it covers (a bio split into several requests
//!   stays until its last part is issued) — wait = issue − queued, which
//!   includes the writeback-throttling and tag waits that come before
//!   `block_io_start`;
//! - issue: the request `[sector, sector + n)` takes the earliest start
//!   inside its range (its first bio; a front merge moves the request's
//!   start sector, a back merge or a merged request leaves further starts
//!   inside the range, which are absorbed) — so merges are followed without
//!   their own bookkeeping; queue time = issue − start;
//! - completion: matched on (device, sector); a partial completion moves the
//!   request to `sector + n` with fewer sectors left; the last one gives
//!   device time = completion − issue and total = completion − start;
//! - flushes: the device flush (`FF`, sector 0, size 0, its completion
//!   reported at sector −1) is matched first in, first out per device; its
//!   total starts at the oldest empty preflush write waiting for it; the
//!   size-0 completions of those writes are not requests of their own.
//!
//! Memory is bounded: starts older than [`START_TTL_NS`] and requests in
//! flight longer than [`FLIGHT_TTL_NS`] are dropped and counted unmatched,
//! and each table is capped at [`MAX_ENTRIES`].

use std::collections::{BTreeMap, VecDeque};

use foldhash::HashMap;

use crate::collect::trace::block::{BlockEvent, Kind};
/// A request's device and op, for the views.
pub use crate::collect::trace::block::{Dev, Op};

pub const START_TTL_NS: u64 = 10_000_000_000;
pub const FLIGHT_TTL_NS: u64 = 120_000_000_000;
pub const MAX_ENTRIES: usize = 1 << 16;

/// Who submitted a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Task {
    pub pid: i32,
    /// Thread group (process); 0 when it could not be resolved.
    pub tgid: i32,
    pub kernel: bool,
    pub comm: [u8; 16],
}

impl Task {
    fn of(e: &BlockEvent) -> Task {
        Task {
            pid: e.pid,
            tgid: e.tgid,
            kernel: e.kernel,
            comm: e.comm,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Start {
    ts: u64,
    task: Task,
}

#[derive(Debug, Clone, Copy)]
struct InFlight {
    /// When its first bio started (unknown when its start was not seen).
    start_ts: Option<u64>,
    /// When its first bio was queued (unknown without `block_bio_queue`).
    queued_ts: Option<u64>,
    issue_ts: u64,
    op: Op,
    first_sector: u64,
    sectors_total: u64,
    left: u64,
    /// The submitter (from the start event), else the task that issued it.
    task: Task,
}

/// A request from issue to completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub dev: Dev,
    pub op: Op,
    pub sector: u64,
    pub bytes: u64,
    pub done_ts: u64,
    pub queue_ns: Option<u64>,
    /// Bio queued → issue: the queue time plus the waits before the
    /// start (writeback throttling, tags); `None` untraced.
    pub wait_ns: Option<u64>,
    pub device_ns: Option<u64>,
    pub total_ns: Option<u64>,
    /// The submitter (from the start event), else the task that issued it.
    pub task: Task,
    pub error: i32,
}

/// A request sent to the device, in issue order (for the sequential share).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Issued {
    pub dev: Dev,
    pub op: Op,
    pub sector: u64,
    pub sectors: u64,
    pub task: Task,
}

/// What one event produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Nothing,
    Issued(Issued),
    Done(Request),
    /// A completion nothing was issued for (issued before tracing began, or
    /// its issue was lost).
    Unmatched(Dev),
    Merge(Dev),
}

#[derive(Debug, Default)]
pub struct Matcher {
    starts: HashMap<Dev, BTreeMap<u64, Start>>,
    n_starts: usize,
    /// Queued bios per device: sector → (time, end sector).
    queued: HashMap<Dev, BTreeMap<u64, (u64, u64)>>,
    n_queued: usize,
    flight: HashMap<(Dev, u64), InFlight>,
    flush_waiters: HashMap<Dev, VecDeque<Start>>,
    flush_issued: HashMap<Dev, VecDeque<(u64, Task)>>,
    /// Starts and requests dropped without an end (expired, capped, lost).
    pub dropped: u64,
    /// Tracing in windows: a request whose start was not seen is not
    /// followed (its issue and completion are ignored, not unmatched).
    pub strict: bool,
    /// Starts and requests dropped when a window opened (their drain
    /// ended first).
    pub cut: u64,
}

impl Matcher {
    pub fn feed(&mut self, e: &BlockEvent) -> Outcome {
        let op = e.rwbs.op(e.sectors);
        let sectors = u64::from(e.sectors);
        match e.kind {
            Kind::Start if op == Op::Flush && sectors == 0 => {
                let q = self.flush_waiters.entry(e.dev).or_default();
                if q.len() >= 1024 {
                    q.pop_front();
                    self.dropped += 1;
                }
                q.push_back(Start {
                    ts: e.ts,
                    task: Task::of(e),
                });
                Outcome::Nothing
            }
            Kind::Start => {
                if self.n_starts >= MAX_ENTRIES {
                    self.dropped += self.n_starts as u64;
                    self.starts.clear();
                    self.n_starts = 0;
                }
                let s = Start {
                    ts: e.ts,
                    task: Task::of(e),
                };
                if self.starts.entry(e.dev).or_default().insert(e.sector, s).is_none() {
                    self.n_starts += 1;
                } else {
                    self.dropped += 1;
                }
                Outcome::Nothing
            }
            Kind::Queue if sectors == 0 => Outcome::Nothing,
            Kind::Queue => {
                self.queue(e.dev, e.sector, e.ts, e.sector.saturating_add(sectors));
                Outcome::Nothing
            }
            Kind::Issue if op == Op::Flush && sectors == 0 => {
                let q = self.flush_issued.entry(e.dev).or_default();
                if q.len() >= 1024 {
                    q.pop_front();
                    self.dropped += 1;
                }
                q.push_back((e.ts, Task::of(e)));
                Outcome::Nothing
            }
            Kind::Issue => self.issue(e, op, sectors),
            Kind::Complete if op == Op::Flush && sectors == 0 => self.flush_done(e),
            Kind::Complete if sectors == 0 => {
                // The end of an empty preflush write (its flush, if any, was
                // counted on its own): not a request.
                if let Some(q) = self.flush_waiters.get_mut(&e.dev)
                    && q.front().is_some_and(|s| s.ts <= e.ts)
                {
                    q.pop_front();
                }
                Outcome::Nothing
            }
            Kind::Complete => self.complete(e, op, sectors),
            Kind::Requeue => {
                if let Some(f) = self.flight.remove(&(e.dev, e.sector)) {
                    if let Some(ts) = f.start_ts {
                        let s = Start { ts, task: f.task };
                        self.starts.entry(e.dev).or_default().insert(f.first_sector, s);
                        self.n_starts += 1;
                    }
                    if let Some(ts) = f.queued_ts {
                        let end = f.first_sector.saturating_add(f.sectors_total);
                        self.queue(e.dev, f.first_sector, ts, end);
                    }
                }
                Outcome::Nothing
            }
            Kind::BackMerge | Kind::FrontMerge | Kind::RqMerge => Outcome::Merge(e.dev),
            Kind::Insert => Outcome::Nothing,
        }
    }

    fn queue(&mut self, dev: Dev, sector: u64, ts: u64, end: u64) {
        if self.n_queued >= MAX_ENTRIES {
            self.dropped += self.n_queued as u64;
            self.queued.clear();
            self.n_queued = 0;
        }
        if self.queued.entry(dev).or_default().insert(sector, (ts, end)).is_none() {
            self.n_queued += 1;
        } else {
            self.dropped += 1;
        }
    }

    /// The earliest queued bio the request `[sector, end)` covers: the one
    /// it starts inside (a split bio's later part) and those starting in
    /// it; the bios it covers to their end are done.
    fn take_queued(&mut self, dev: Dev, sector: u64, end: u64) -> Option<u64> {
        let map = self.queued.get_mut(&dev)?;
        let mut first: Option<u64> = None;
        let before = map.range(..sector).next_back().filter(|(_, (_, e))| *e > sector);
        let keys: Vec<u64> = before
            .map(|(k, _)| *k)
            .into_iter()
            .chain(map.range(sector..end).map(|(k, _)| *k))
            .collect();
        for k in keys {
            let Some(&(ts, e)) = map.get(&k) else { continue };
            first = Some(first.map_or(ts, |f: u64| f.min(ts)));
            if e <= end {
                map.remove(&k);
                self.n_queued -= 1;
            }
        }
        first
    }

    fn issue(&mut self, e: &BlockEvent, op: Op, sectors: u64) -> Outcome {
        let mut start: Option<Start> = None;
        if let Some(map) = self.starts.get_mut(&e.dev) {
            let end = e.sector.saturating_add(sectors.max(1));
            while let Some(k) = map.range(e.sector..end).next().map(|(k, _)| *k) {
                if let Some(s) = map.remove(&k) {
                    self.n_starts -= 1;
                    if start.is_none_or(|b| s.ts < b.ts) {
                        start = Some(s);
                    }
                }
            }
        }
        let queued_ts = self.take_queued(e.dev, e.sector, e.sector.saturating_add(sectors.max(1)));
        if self.strict && start.is_none() {
            return Outcome::Nothing;
        }
        let task = start.map_or_else(|| Task::of(e), |s| s.task);
        if self.flight.len() >= MAX_ENTRIES {
            self.dropped += self.flight.len() as u64;
            self.flight.clear();
        }
        let f = InFlight {
            start_ts: start.map(|s| s.ts),
            queued_ts,
            issue_ts: e.ts,
            op,
            first_sector: e.sector,
            sectors_total: sectors,
            left: sectors,
            task,
        };
        if self.flight.insert((e.dev, e.sector), f).is_some() {
            self.dropped += 1;
        }
        Outcome::Issued(Issued {
            dev: e.dev,
            op,
            sector: e.sector,
            sectors,
            task,
        })
    }

    fn complete(&mut self, e: &BlockEvent, _op: Op, sectors: u64) -> Outcome {
        let Some(mut f) = self.flight.remove(&(e.dev, e.sector)) else {
            return if self.strict {
                Outcome::Nothing
            } else {
                Outcome::Unmatched(e.dev)
            };
        };
        if sectors < f.left {
            // Partial completion: the rest continues at the next sector.
            f.left -= sectors;
            self.flight.insert((e.dev, e.sector + sectors), f);
            return Outcome::Nothing;
        }
        Outcome::Done(Request {
            dev: e.dev,
            op: f.op,
            sector: f.first_sector,
            bytes: f.sectors_total * 512,
            done_ts: e.ts,
            queue_ns: f.start_ts.map(|s| f.issue_ts.saturating_sub(s)),
            wait_ns: f.queued_ts.map(|s| f.issue_ts.saturating_sub(s)),
            device_ns: Some(e.ts.saturating_sub(f.issue_ts)),
            total_ns: f.start_ts.map(|s| e.ts.saturating_sub(s)),
            task: f.task,
            error: e.error,
        })
    }

    fn flush_done(&mut self, e: &BlockEvent) -> Outcome {
        let Some((issue_ts, issuer)) = self.flush_issued.get_mut(&e.dev).and_then(|q| q.pop_front()) else {
            return if self.strict {
                Outcome::Nothing
            } else {
                Outcome::Unmatched(e.dev)
            };
        };
        // The waiters this flush served: all that started before its issue.
        let mut first: Option<Start> = None;
        if let Some(q) = self.flush_waiters.get_mut(&e.dev) {
            while q.front().is_some_and(|s| s.ts <= issue_ts) {
                let s = q.pop_front();
                first = first.or(s);
            }
        }
        if self.strict && first.is_none() {
            return Outcome::Nothing;
        }
        Outcome::Done(Request {
            dev: e.dev,
            op: Op::Flush,
            sector: 0,
            bytes: 0,
            done_ts: e.ts,
            queue_ns: first.map(|s| issue_ts.saturating_sub(s.ts)),
            wait_ns: None,
            device_ns: Some(e.ts.saturating_sub(issue_ts)),
            total_ns: first.map(|s| e.ts.saturating_sub(s.ts)),
            task: first.map_or(issuer, |s| s.task),
            error: e.error,
        })
    }

    /// Drop what is too old to be matched any more (after lost events);
    /// `now` is trace-clock ns.
    pub fn expire(&mut self, now: u64) {
        let mut dropped = 0u64;
        for map in self.starts.values_mut() {
            let before = map.len();
            map.retain(|_, s| now.saturating_sub(s.ts) < START_TTL_NS);
            dropped += (before - map.len()) as u64;
        }
        self.n_starts = self.starts.values().map(BTreeMap::len).sum();
        for map in self.queued.values_mut() {
            let before = map.len();
            map.retain(|_, (ts, _)| now.saturating_sub(*ts) < START_TTL_NS);
            dropped += (before - map.len()) as u64;
        }
        self.queued.retain(|_, m| !m.is_empty());
        self.n_queued = self.queued.values().map(BTreeMap::len).sum();
        let before = self.flight.len();
        self.flight
            .retain(|_, f| now.saturating_sub(f.issue_ts) < FLIGHT_TTL_NS);
        dropped += (before - self.flight.len()) as u64;
        for q in self.flush_waiters.values_mut() {
            let b = q.len();
            q.retain(|s| now.saturating_sub(s.ts) < START_TTL_NS);
            dropped += (b - q.len()) as u64;
        }
        for q in self.flush_issued.values_mut() {
            let b = q.len();
            q.retain(|(ts, _)| now.saturating_sub(*ts) < FLIGHT_TTL_NS);
            dropped += (b - q.len()) as u64;
        }
        self.starts.retain(|_, m| !m.is_empty());
        self.dropped += dropped;
    }

    /// Requests in flight now.
    pub fn in_flight(&self) -> usize {
        self.flight.len()
    }

    /// Starts, flush waiters and requests not complete yet.
    pub fn pending(&self) -> usize {
        self.n_starts + self.flight.len() + self.flush_waiters.values().map(VecDeque::len).sum::<usize>()
    }

    /// Forget every start and request in flight (a window opens: what the
    /// last drain did not see complete will not be), counting them in
    /// [`Matcher::cut`].
    pub fn clear(&mut self) {
        self.cut += self.pending() as u64 + self.n_queued as u64;
        self.starts.clear();
        self.n_starts = 0;
        self.queued.clear();
        self.n_queued = 0;
        self.flight.clear();
        self.flush_waiters.clear();
        self.flush_issued.clear();
    }
}
