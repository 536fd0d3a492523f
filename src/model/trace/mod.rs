//! Per-request statistics from decoded block events (pure: no I/O, no
//! clock). The tracer thread feeds events to a [`Accumulator`]; each sample
//! takes the interval's [`TraceInterval`]: per device the sequential share
//! in issue order (of requests and of bytes: [`seq`] says what is
//! sequential), latency histograms per op for queue / device / total
//! time, request sizes and seek distances; per process × device requests,
//! bytes, latency and sequential share; lost and unmatched counts; and the
//! last requests for the live log.

pub mod hist;
pub mod requests;
pub mod seq;
pub mod view;
pub mod window;

use std::collections::{BTreeMap, VecDeque};

use foldhash::HashMap;

use serde::{Deserialize, Serialize};

use crate::collect::trace::block::{BlockEvent, Dev, Kind, Op};
use crate::collect::trace::budget::Mark;
use crate::collect::trace::reader::Counters;
use crate::model::pattern::Pattern;
use hist::{LatHist, Log2Hist};
use requests::{Issued, Matcher, Outcome, Request, Task};
use seq::Classifier;
use window::{Gate, Share};

/// Requests kept for the live log.
pub const LOG_LEN: usize = 2000;
/// Process × device rows kept per interval; the rest are summed into one
/// "(other)" row per device.
pub const MAX_PROC_ROWS: usize = 512;
/// Fewer requests than this in an interval: no SEQ/MIXED/RAND label.
pub const MIN_REQUESTS: u64 = 10;

/// Where the labels switch: SEQ at or above `seq`, RAND at or below `rand`
/// (of the sequential share of bytes: [`DeviceTrace::pattern`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PatternThresholds {
    pub seq: f64,
    pub rand: f64,
}

impl Default for PatternThresholds {
    fn default() -> Self {
        PatternThresholds { seq: 0.7, rand: 0.3 }
    }
}

impl PatternThresholds {
    pub fn label(&self, share: f64) -> Pattern {
        if share >= self.seq {
            Pattern::Seq
        } else if share <= self.rand {
            Pattern::Rand
        } else {
            Pattern::Mixed
        }
    }
}

fn op_index(op: Op) -> Option<usize> {
    Op::ALL.iter().position(|o| *o == op)
}

fn dir(op: Op) -> Option<usize> {
    match op {
        Op::Read => Some(0),
        Op::Write => Some(1),
        Op::Discard => Some(2),
        _ => None,
    }
}

/// Latency of one op over an interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct OpLatency {
    pub queue: LatHist,
    /// Bio queued → issue (empty without `block_bio_queue`, and in
    /// recordings made before it was kept).
    pub wait: LatHist,
    pub device: LatHist,
    pub total: LatHist,
}

impl OpLatency {
    fn record(&mut self, r: &Request) {
        if let Some(v) = r.queue_ns {
            self.queue.record(v);
        }
        if let Some(v) = r.wait_ns {
            self.wait.record(v);
        }
        if let Some(v) = r.device_ns {
            self.device.record(v);
        }
        if let Some(v) = r.total_ns {
            self.total.record(v);
        }
    }
}

/// One device over one interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DeviceTrace {
    /// Requests issued with data (reads, writes, discards) and how many of
    /// them were sequential ([`seq`]).
    pub issued: u64,
    pub sequential: u64,
    /// The bytes of those requests, and of the sequential ones (0 in a
    /// recording made before these were kept).
    pub issued_bytes: u64,
    pub sequential_bytes: u64,
    /// Completed requests per op (read, write, discard, flush).
    pub completed: [u64; 4],
    pub bytes: [u64; 4],
    pub latency: [OpLatency; 4],
    pub sizes: Log2Hist,
    /// Distance from the end of the previous request on the device, bytes.
    pub seeks: Log2Hist,
    pub merges: u64,
    pub unmatched: u64,
    pub errors: u64,
}

impl DeviceTrace {
    /// Share of sequential requests, `None` without requests.
    pub fn seq_share(&self) -> Option<f64> {
        (self.issued > 0).then(|| self.sequential as f64 / self.issued as f64)
    }

    /// Share of the issued bytes in sequential requests, `None` without
    /// requests (or bytes). The figure shown and labelled: `dd bs=1M`
    /// beside fio's 4 KiB random reads at queue depth 4 on a loop device
    /// read 93-98% of the bytes and 9-27% of the requests sequential.
    pub fn seq_byte_share(&self) -> Option<f64> {
        (self.issued > 0 && self.issued_bytes > 0).then(|| self.sequential_bytes as f64 / self.issued_bytes as f64)
    }

    /// Quantile `q` of the total time of the reads and writes together, ns.
    pub fn rw_total_quantile(&self, q: f64) -> Option<u64> {
        let mut h = self.latency[0].total.clone();
        h.merge(&self.latency[1].total);
        h.quantile(q)
    }

    /// SEQ / MIXED / RAND of the sequential share of bytes; `None` under
    /// [`MIN_REQUESTS`] requests.
    pub fn pattern(&self, t: &PatternThresholds) -> Option<Pattern> {
        if self.issued < MIN_REQUESTS {
            return None;
        }
        self.seq_byte_share().map(|s| t.label(s))
    }
}

/// One process (or kernel thread) on one device over one interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProcDevTrace {
    pub comm: String,
    pub kernel: bool,
    pub issued: u64,
    pub sequential: u64,
    /// Bytes issued, and in sequential requests.
    pub issued_bytes: u64,
    pub sequential_bytes: u64,
    pub completed: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub total: LatHist,
    /// Completed requests that ended with an error.
    pub errors: u64,
    /// Completed flushes (flush requests and empty preflush writes) it
    /// submitted (on ext4 mostly jbd2's, for the fsync callers).
    pub flushes: u64,
}

impl ProcDevTrace {
    /// Share of the process's requests on the device that were sequential
    /// in its own streams (or the device's: [`seq`]).
    pub fn seq_share(&self) -> Option<f64> {
        (self.issued > 0).then(|| self.sequential as f64 / self.issued as f64)
    }

    /// The same share of its bytes.
    pub fn seq_byte_share(&self) -> Option<f64> {
        (self.issued > 0 && self.issued_bytes > 0).then(|| self.sequential_bytes as f64 / self.issued_bytes as f64)
    }
}

/// Process key: the thread group when known, else the thread itself
/// (negative, so it cannot collide with a tgid).
pub fn proc_key(t: &Task) -> i32 {
    if t.tgid > 0 { t.tgid } else { -t.pid.max(0) }
}

/// An io_uring thread of a process (`iou-wrk-<tid>`: an io-wq worker that
/// issues requests punted from the ring; `iou-sqp-<tid>`: the SQPOLL
/// thread): a thread of the process that owns the ring (same tgid), named
/// after the task that set it up, never the process's own name.
pub fn is_io_uring_thread(comm: &str) -> bool {
    comm.starts_with("iou-wrk-") || comm.starts_with("iou-sqp-")
}

fn comm_of(t: &Task) -> String {
    let n = t.comm.iter().position(|&c| c == 0).unwrap_or(16);
    String::from_utf8_lossy(&t.comm[..n]).into_owned()
}

/// Everything over one interval (recordings hold it: the maps as lists of
/// pairs, JSON keys being strings).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TraceInterval {
    #[serde(with = "pairs")]
    pub devices: BTreeMap<Dev, DeviceTrace>,
    /// (process key, device) → row; see [`proc_key`].
    #[serde(with = "pairs")]
    pub procs: HashMap<(i32, Dev), ProcDevTrace>,
    /// Events the kernel lost in the interval (per-CPU stats) and pages
    /// flagged with missed events.
    pub lost_events: u64,
    pub missed_pages: u64,
    /// Completions without an issue, plus starts and requests dropped
    /// unmatched (expired or capped).
    pub unmatched: u64,
    pub decode_errors: u64,
    pub events: u64,
    /// The share of the interval traced (1.0: every request; below, the
    /// tracer's CPU budget bound and the counts are scaled: [`window`]).
    #[serde(rename = "trace_share")]
    pub share: Share,
}

impl TraceInterval {
    /// Rows named after an io_uring thread (all their requests came from
    /// the ring's workers) take the name of their process, `comm_of` its
    /// key: the culprit is the process that owns the ring, not its worker
    /// (a process gone keeps the worker's name).
    pub fn name_io_uring_rows(&mut self, comm_of: impl Fn(i32) -> Option<String>) {
        for ((key, _), row) in &mut self.procs {
            if *key > 0
                && is_io_uring_thread(&row.comm)
                && let Some(c) = comm_of(*key)
            {
                row.comm = c;
            }
        }
    }
}

/// A map as a list of (key, value) pairs.
mod pairs {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<'a, M, K, V, S>(m: &'a M, s: S) -> Result<S::Ok, S::Error>
    where
        &'a M: IntoIterator<Item = (&'a K, &'a V)>,
        K: Serialize + 'a,
        V: Serialize + 'a,
        S: Serializer,
    {
        s.collect_seq(m)
    }

    pub fn deserialize<'de, M, K, V, D>(d: D) -> Result<M, D::Error>
    where
        M: FromIterator<(K, V)>,
        K: Deserialize<'de>,
        V: Deserialize<'de>,
        D: Deserializer<'de>,
    {
        Ok(Vec::<(K, V)>::deserialize(d)?.into_iter().collect())
    }
}

/// Accumulates decoded events. Bounded: the matcher's tables are capped,
/// histograms have fixed buckets, process rows are capped per interval and
/// the log is a ring.
#[derive(Debug, Default)]
pub struct Accumulator {
    matcher: Matcher,
    /// The stream ends per process and per device (sequential share).
    streams: Classifier,
    /// Per device: where the last request ended (seek distance).
    last_end: HashMap<Dev, u64>,
    cur: TraceInterval,
    log: VecDeque<Request>,
    last_counters: Counters,
    dropped_seen: u64,
    last_ts: u64,
    first_ts: Option<u64>,
    /// The tracer's windows when its budget binds.
    gate: Gate,
}

impl Accumulator {
    pub fn feed(&mut self, events: &[BlockEvent]) {
        if let Some(e) = events.first() {
            self.first_ts.get_or_insert(e.ts);
        }
        for e in events {
            self.last_ts = self.last_ts.max(e.ts);
            if self.gate.advance(e.ts) {
                self.matcher.clear();
            }
            self.matcher.strict = self.gate.strict;
            if !self.gate.accepting && matches!(e.kind, Kind::Start | Kind::Queue) {
                continue;
            }
            match self.matcher.feed(e) {
                Outcome::Nothing => {}
                Outcome::Issued(i) => self.issued(&i),
                Outcome::Done(r) => self.done(r),
                Outcome::Unmatched(d) => self.cur.devices.entry(d).or_default().unmatched += 1,
                Outcome::Merge(d) => self.cur.devices.entry(d).or_default().merges += 1,
            }
        }
    }

    fn proc_row(&mut self, t: &Task, dev: Dev) -> &mut ProcDevTrace {
        let mut key = (proc_key(t), dev);
        if self.cur.procs.len() >= MAX_PROC_ROWS && !self.cur.procs.contains_key(&key) {
            key = (0, dev);
        }
        let row = self.cur.procs.entry(key).or_insert_with(|| ProcDevTrace {
            comm: if key.0 == 0 { "(other)".into() } else { comm_of(t) },
            kernel: t.kernel,
            ..Default::default()
        });
        // A row first seen from an io_uring thread takes the name of
        // another thread of the process when one issues too.
        if is_io_uring_thread(&row.comm) {
            let c = comm_of(t);
            if !is_io_uring_thread(&c) {
                row.comm = c;
            }
        }
        row
    }

    fn issued(&mut self, i: &Issued) {
        let Some(d) = dir(i.op) else { return };
        let seq = self
            .streams
            .check(proc_key(&i.task), i.dev, self.last_ts, d, i.sector, i.sectors);
        let end = i.sector.saturating_add(i.sectors);
        let seek = self
            .last_end
            .insert(i.dev, end)
            .map(|prev| prev.abs_diff(i.sector).saturating_mul(512));
        let bytes = i.sectors.saturating_mul(512);
        let seq_bytes = if seq { bytes } else { 0 };
        let dt = self.cur.devices.entry(i.dev).or_default();
        dt.issued += 1;
        dt.sequential += u64::from(seq);
        dt.issued_bytes += bytes;
        dt.sequential_bytes += seq_bytes;
        dt.sizes.record(bytes);
        if let Some(s) = seek {
            dt.seeks.record(s);
        }
        let row = self.proc_row(&i.task, i.dev);
        row.issued += 1;
        row.sequential += u64::from(seq);
        row.issued_bytes += bytes;
        row.sequential_bytes += seq_bytes;
    }

    fn done(&mut self, r: Request) {
        let dt = self.cur.devices.entry(r.dev).or_default();
        if let Some(k) = op_index(r.op) {
            dt.completed[k] += 1;
            dt.bytes[k] += r.bytes;
            dt.latency[k].record(&r);
        }
        if r.error != 0 {
            dt.errors += 1;
        }
        let row = self.proc_row(&r.task, r.dev);
        row.completed += 1;
        row.errors += u64::from(r.error != 0);
        row.flushes += u64::from(r.op == Op::Flush);
        match r.op {
            Op::Read => row.read_bytes += r.bytes,
            Op::Write => row.write_bytes += r.bytes,
            _ => {}
        }
        if let Some(t) = r.total_ns {
            row.total.record(t);
        }
        if self.log.len() >= LOG_LEN {
            self.log.pop_front();
        }
        self.log.push_back(r);
    }

    /// The tracer's counters (cumulative since start).
    pub fn set_counters(&mut self, c: &Counters) {
        let last = self.last_counters;
        self.cur.lost_events += c.lost.saturating_sub(last.lost);
        self.cur.missed_pages += c.decode.missed_pages.saturating_sub(last.decode.missed_pages);
        self.cur.decode_errors += c.decode.errors.saturating_sub(last.decode.errors);
        self.cur.events += c.decode.events.saturating_sub(last.decode.events);
        self.last_counters = *c;
    }

    /// A window edge of the tracer (its budget binds), in time order with
    /// the others.
    pub fn mark(&mut self, m: Mark) {
        self.gate.mark(m);
    }

    /// Traced in windows now or in the interval so far.
    pub fn sampled(&self) -> bool {
        self.gate.sampled()
    }

    /// Whether an event at `ts` fell inside a window ([`Gate::accepts`]).
    pub fn accepts(&self, ts: u64) -> bool {
        self.gate.accepts(ts)
    }

    /// Requests whose start was seen and that are not complete yet (the
    /// drain after a window waits for them).
    pub fn pending(&self) -> usize {
        self.matcher.pending()
    }

    /// Close the interval at the last event.
    pub fn take_interval(&mut self) -> TraceInterval {
        self.take_interval_at(self.last_ts)
    }

    /// Close the interval at `now` (trace clock): expire stale entries,
    /// return what was gathered, its counts scaled to the whole interval
    /// when it was traced in windows.
    pub fn take_interval_at(&mut self, now: u64) -> TraceInterval {
        self.matcher.expire(self.last_ts);
        self.streams.expire(self.last_ts);
        let dropped = self.matcher.dropped - self.dropped_seen;
        self.dropped_seen = self.matcher.dropped;
        let mut out = std::mem::take(&mut self.cur);
        out.unmatched = dropped + out.devices.values().map(|d| d.unmatched).sum::<u64>();
        let share = self.gate.take_share(now, self.first_ts.unwrap_or(now));
        window::scale(&mut out, share);
        out
    }

    /// The most recent completed requests, oldest first.
    pub fn log(&self) -> impl Iterator<Item = &Request> {
        self.log.iter()
    }

    pub fn in_flight(&self) -> usize {
        self.matcher.in_flight()
    }
}

#[cfg(test)]
mod tests;
