//! Per-process I/O history for the process detail's chart: the storage
//! and syscall read/write rates of the last [`PROC_HISTORY_LEN`] samples,
//! kept only for processes that did I/O since iolens saw them (most
//! processes never do: they cost nothing) and dropped with the process.

use std::borrow::Cow;

use super::history::Ring;
use super::{ProcKey, ProcRow};
use crate::collect::process::PidMap;

/// Samples of history per process (2 minutes at 1 s): four rings of at
/// most 120 values are under 4 KiB, inside the per-process memory bound.
pub const PROC_HISTORY_LEN: usize = 120;

/// The rates of one process over time, oldest first; an interval without
/// rates (unreadable counters, the first sample) is NaN: a gap in the chart,
/// never a zero.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcSeries {
    /// Bytes/s the process made the storage read (read_bytes).
    pub disk_read: Ring,
    /// Bytes/s it dirtied for writeback (write_bytes).
    pub disk_write: Ring,
    /// Bytes/s through read syscalls, cache hits included (rchar).
    pub read: Ring,
    /// Bytes/s through write syscalls (wchar).
    pub write: Ring,
}

impl Default for ProcSeries {
    fn default() -> Self {
        ProcSeries {
            disk_read: Ring::new(PROC_HISTORY_LEN),
            disk_write: Ring::new(PROC_HISTORY_LEN),
            read: Ring::new(PROC_HISTORY_LEN),
            write: Ring::new(PROC_HISTORY_LEN),
        }
    }
}

impl ProcSeries {
    fn push(&mut self, row: &ProcRow) {
        let r = row.rates.as_deref();
        let v = |f: fn(&super::ProcRates) -> f64| r.map_or(f64::NAN, f);
        self.disk_read.push(v(|r| r.read_bps));
        self.disk_write.push(v(|r| r.write_bps));
        self.read.push(v(|r| r.rchar_bps));
        self.write.push(v(|r| r.wchar_bps));
    }
}

/// The series of the processes that did I/O.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcHistory {
    /// Each with the last update that had its process's row.
    series: PidMap<ProcKey, Kept>,
    updates: u64,
}

/// A process's series as kept.
#[derive(Debug, Clone, PartialEq)]
struct Kept {
    /// The last update that had its process's row.
    seen: u64,
    /// Zeros owed to the end of every ring: an exited process's row
    /// stays [`super::EXITED_KEEP_S`] with all rates 0, and a fork storm
    /// has thousands of them; they are added when a value follows, or
    /// when the series is asked for.
    zeros: u32,
    series: ProcSeries,
}

impl Kept {
    fn new(seen: u64, series: ProcSeries) -> Self {
        Kept { seen, zeros: 0, series }
    }
}

impl ProcSeries {
    /// Push `n` zeros to every ring.
    fn zeros(&mut self, n: u32) {
        for _ in 0..(n as usize).min(PROC_HISTORY_LEN) {
            for ring in [
                &mut self.disk_read,
                &mut self.disk_write,
                &mut self.read,
                &mut self.write,
            ] {
                ring.push(0.0);
            }
        }
    }
}

/// An exited process's row after its last interval: every rate 0.
fn all_zero(row: &ProcRow) -> bool {
    row.exited
        && row
            .rates
            .as_ref()
            .is_some_and(|r| r.read_bps == 0.0 && r.write_bps == 0.0 && r.rchar_bps == 0.0 && r.wchar_bps == 0.0)
}

fn did_io(row: &ProcRow) -> bool {
    row.rates
        .as_ref()
        .is_some_and(|r| r.read_bps > 0.0 || r.write_bps > 0.0 || r.rchar_bps > 0.0 || r.wchar_bps > 0.0)
}

impl ProcHistory {
    /// One sample's rows (after rates were computed): a process gets a
    /// series at its first I/O and keeps it, one value per sample, until
    /// its row is gone.
    pub fn update(&mut self, rows: &[ProcRow]) {
        self.updates += 1;
        let now = self.updates;
        for row in rows {
            if let Some(k) = self.series.get_mut(&row.raw.key) {
                k.seen = now;
                if all_zero(row) {
                    k.zeros = k.zeros.saturating_add(1);
                } else {
                    k.series.zeros(std::mem::take(&mut k.zeros));
                    k.series.push(row);
                }
            } else if did_io(row) {
                let mut s = ProcSeries::default();
                s.push(row);
                self.series.insert(row.raw.key, Kept::new(now, s));
            }
        }
        self.series.retain(|_, k| k.seen == now);
    }

    /// The series of process `key`; `None` while it has done no I/O.
    pub fn get(&self, key: ProcKey) -> Option<Cow<'_, ProcSeries>> {
        let k = self.series.get(&key)?;
        if k.zeros == 0 {
            return Some(Cow::Borrowed(&k.series));
        }
        let mut s = k.series.clone();
        s.zeros(k.zeros);
        Some(Cow::Owned(s))
    }

    /// Number of processes with a series.
    pub fn len(&self) -> usize {
        self.series.len()
    }

    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::process::RawProc;
    use crate::model::process::ProcRates;

    fn row(pid: i32, read_bps: Option<f64>) -> ProcRow {
        ProcRow {
            rates: read_bps.map(|r| {
                std::sync::Arc::new(ProcRates {
                    read_bps: r,
                    rchar_bps: r * 2.0,
                    ..Default::default()
                })
            }),
            ..ProcRow::example(RawProc::example(pid, 100, "p"))
        }
    }

    #[test]
    fn only_processes_that_did_io_and_only_while_listed() {
        let mut h = ProcHistory::default();
        h.update(&[row(1, Some(0.0)), row(2, None), row(3, Some(4096.0))]);
        assert_eq!(h.len(), 1, "pid 3 alone did I/O");
        let k3 = row(3, None).raw.key;
        // Idle and unreadable samples after the first I/O are kept: 0, then
        // a gap (NaN), never a made-up 0.
        h.update(&[row(3, Some(0.0))]);
        h.update(&[row(3, None)]);
        let s = h.get(k3).unwrap();
        let v: Vec<f64> = s.disk_read.iter().collect();
        assert_eq!(v[..2], [4096.0, 0.0]);
        assert!(v[2].is_nan());
        assert_eq!(s.read.iter().next(), Some(8192.0));
        // Gone: its series goes too.
        h.update(&[row(1, Some(0.0))]);
        assert!(h.is_empty());
    }

    /// An exited process's zeros are owed, not pushed, and the series
    /// asked for is the same as with them pushed: its last interval, the
    /// zeros, and a value that follows them.
    #[test]
    fn an_exited_process_series_reads_as_if_every_zero_was_pushed() {
        let exited = |rate: f64| ProcRow {
            exited: true,
            ..row(5, Some(rate))
        };
        let key = row(5, None).raw.key;
        let mut h = ProcHistory::default();
        h.update(&[row(5, Some(100.0))]);
        h.update(&[exited(50.0)]);
        for _ in 0..3 {
            h.update(&[exited(0.0)]);
        }
        assert_eq!(h.series.get(&key).map(|k| k.zeros), Some(3), "owed, not pushed");
        let v: Vec<f64> = h.get(key).unwrap().disk_read.iter().collect();
        assert_eq!(v, [100.0, 50.0, 0.0, 0.0, 0.0]);
        assert_eq!(h.get(key).unwrap().read.iter().last(), Some(0.0));
        // Records of another thread in a later sample: the zeros, then it.
        h.update(&[exited(8.0)]);
        let v: Vec<f64> = h.get(key).unwrap().disk_read.iter().collect();
        assert_eq!(v, [100.0, 50.0, 0.0, 0.0, 0.0, 8.0]);
        assert!(matches!(h.get(key), Some(Cow::Borrowed(_))));
        // More zeros than the history holds: all zeros, at most its length.
        for _ in 0..(PROC_HISTORY_LEN + 5) {
            h.update(&[exited(0.0)]);
        }
        let s = h.get(key).unwrap();
        assert_eq!(s.write.len(), PROC_HISTORY_LEN);
        assert!(s.disk_read.iter().all(|v| v == 0.0));
        // Its row gone: its series too.
        h.update(&[]);
        assert!(h.is_empty());
    }

    #[test]
    fn at_most_the_history_length() {
        let mut h = ProcHistory::default();
        for i in 0..(PROC_HISTORY_LEN + 30) {
            h.update(&[row(7, Some(i as f64 + 1.0))]);
        }
        let s = h.get(row(7, None).raw.key).unwrap();
        assert_eq!(s.disk_read.len(), PROC_HISTORY_LEN);
        assert_eq!(s.disk_read.iter().next(), Some(31.0));
    }
}
