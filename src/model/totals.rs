//! The header total, like iotop's: what the disks read and wrote, and how
//! much of it the process rows account for.
//!
//! Device bytes are the machine total (whole disks only: a loop or
//! device-mapper device's I/O reaches the disks under it and is counted
//! there, so each byte is counted once). Process bytes are the sum over the
//! rows, kernel workers left out (their bytes are other processes' bytes:
//! a loop device's backing I/O). Reads are compared per interval: a
//! process is charged a read when it is issued, the device counts it when
//! it completes, both within milliseconds. Writes are not: a process is
//! charged when it dirties a page, the device writes it back up to ~30 s
//! later (or never, when the file is deleted first: cancelled), so writes
//! are compared over the last minute.

use std::collections::VecDeque;

use serde::Serialize;

/// How far back writes are compared, seconds.
pub const WRITE_WINDOW_S: f64 = 60.0;

/// Below this device read rate the read share is not shown (a few stray
/// kilobytes of metadata would make it swing between 0 and 1000%).
pub const SHARE_MIN_READ_BPS: f64 = 64.0 * 1024.0;

/// One interval's contribution to the write comparison.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WriteStep {
    pub dt_s: f64,
    /// Bytes dirtied by processes (write_bytes).
    pub dirtied: f64,
    /// Dirtied bytes cancelled by truncate or delete before writeback.
    pub cancelled: f64,
    /// Bytes the devices wrote; `None` when the total was not known.
    pub written: Option<f64>,
}

/// The header total of one interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct IoTotals {
    /// Whole-disk read / write bytes/s; `None` before two samples.
    pub device_read_bps: Option<f64>,
    pub device_write_bps: Option<f64>,
    /// Storage reads of the process rows, kernel workers left out, bytes/s.
    pub process_read_bps: f64,
    /// process_read_bps / device_read_bps; `None` when the devices read
    /// less than [`SHARE_MIN_READ_BPS`]. Can exceed 1 when processes read
    /// from a device outside the total (a loop device over tmpfs, zram).
    pub read_share: Option<f64>,
    /// Seconds the write comparison covers (up to [`WRITE_WINDOW_S`]).
    pub write_window_s: f64,
    /// Bytes dirtied by process rows in the window (kernel workers left out).
    pub dirtied_bytes: f64,
    /// Bytes whose writes processes cancelled in the window.
    pub cancelled_bytes: f64,
    /// Bytes written by the devices in the window; `None` when an interval
    /// in it had no device total.
    pub written_bytes: Option<f64>,
}

/// Intervals of the last minute, newest last.
#[derive(Debug, Clone, Default)]
pub struct WriteWindow {
    steps: VecDeque<WriteStep>,
}

impl WriteWindow {
    /// Add an interval, forget those older than the window.
    pub fn push(&mut self, s: WriteStep) {
        self.steps.push_back(s);
        let mut span: f64 = self.steps.iter().map(|s| s.dt_s).sum();
        while span > WRITE_WINDOW_S + 1e-9 && self.steps.len() > 1 {
            if let Some(old) = self.steps.pop_front() {
                span -= old.dt_s;
            }
        }
    }

    pub fn clear(&mut self) {
        self.steps.clear();
    }

    /// (seconds, dirtied, cancelled, written) over the window.
    pub fn sums(&self) -> (f64, f64, f64, Option<f64>) {
        let mut out = (0.0, 0.0, 0.0, Some(0.0));
        for s in &self.steps {
            out.0 += s.dt_s;
            out.1 += s.dirtied;
            out.2 += s.cancelled;
            out.3 = match (out.3, s.written) {
                (Some(a), Some(b)) => Some(a + b),
                _ => None,
            };
        }
        out
    }
}

/// The totals of an interval, from the device total's rates and the sums
/// over process rows (rates in bytes/s, already without kernel workers).
pub fn totals(device: Option<(f64, f64)>, proc_read_bps: f64, window: &WriteWindow) -> IoTotals {
    let (secs, dirtied, cancelled, written) = window.sums();
    IoTotals {
        device_read_bps: device.map(|d| d.0),
        device_write_bps: device.map(|d| d.1),
        process_read_bps: proc_read_bps,
        read_share: device
            .filter(|d| d.0 >= SHARE_MIN_READ_BPS)
            .map(|d| proc_read_bps / d.0),
        write_window_s: secs,
        dirtied_bytes: dirtied,
        cancelled_bytes: cancelled,
        written_bytes: written,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_share_and_write_minute() {
        let mut w = WriteWindow::default();
        for i in 0..70 {
            w.push(WriteStep {
                dt_s: 1.0,
                dirtied: if i < 10 { 1e6 } else { 0.0 },
                cancelled: if i == 69 { 5e5 } else { 0.0 },
                written: Some(2e5),
            });
        }
        // Only the last 60 intervals: the first 10 (dirtying) are gone.
        let t = totals(Some((4e6, 1e6)), 3e6, &w);
        assert_eq!(t.write_window_s, 60.0);
        assert_eq!(t.dirtied_bytes, 0.0);
        assert_eq!(t.cancelled_bytes, 5e5);
        assert_eq!(t.written_bytes, Some(60.0 * 2e5));
        assert_eq!(t.read_share, Some(0.75));
        assert_eq!(t.device_write_bps, Some(1e6));
        // Too little read to compare; no device total yet.
        assert_eq!(totals(Some((1000.0, 0.0)), 1000.0, &w).read_share, None);
        let none = totals(None, 0.0, &WriteWindow::default());
        assert_eq!(
            (none.device_read_bps, none.read_share, none.write_window_s),
            (None, None, 0.0)
        );
        // An interval without a device total makes the written sum unknown.
        w.push(WriteStep {
            dt_s: 1.0,
            written: None,
            ..Default::default()
        });
        assert_eq!(w.sums().3, None);
    }
}
