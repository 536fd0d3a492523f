//! Merging the per-CPU event streams into one time order.
//!
//! Each CPU's buffer is in time order, but CPUs are read one after the other:
//! an event stamped just before a read can still be in flight on another
//! CPU. So events newer than a watermark (the time the read started, less a
//! margin) are held back until the next read.

use super::block::BlockEvent;

/// Events younger than this at the start of a read are held for the next.
pub const HOLD_NS: u64 = 2_000_000;

/// Holds back the newest events; hands out the rest sorted by time.
#[derive(Debug, Default)]
pub struct Merger {
    held: Vec<BlockEvent>,
}

impl Merger {
    /// Add a read's events (any CPU order), then move those stamped at or
    /// before `read_start - HOLD_NS` into `out`, oldest first. Events are
    /// sorted stably, so events with equal stamps keep their CPU-read order.
    pub fn push(&mut self, events: &mut Vec<BlockEvent>, read_start: u64, out: &mut Vec<BlockEvent>) {
        self.held.append(events);
        self.held.sort_by_key(|e| e.ts);
        let mark = read_start.saturating_sub(HOLD_NS);
        let n = self.held.partition_point(|e| e.ts <= mark);
        out.extend(self.held.drain(..n));
    }

    /// Everything still held (at the end of tracing).
    pub fn flush(&mut self, out: &mut Vec<BlockEvent>) {
        out.append(&mut self.held);
    }

    pub fn held(&self) -> usize {
        self.held.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::trace::block::{Dev, Kind, Rwbs};

    fn ev(ts: u64) -> BlockEvent {
        BlockEvent {
            ts,
            kind: Kind::Issue,
            dev: Dev { major: 7, minor: 0 },
            sector: ts,
            sectors: 8,
            rwbs: Rwbs::default(),
            pid: 1,
            comm: [0; 16],
            error: 0,
            tgid: 0,
            kernel: false,
        }
    }

    #[test]
    fn cpus_interleave_and_late_events_wait() {
        let mut m = Merger::default();
        let mut out = Vec::new();
        // cpu0 then cpu1, read at t = 10 ms
        let mut batch = vec![ev(1_000), ev(5_000_000), ev(9_000_000), ev(2_000), ev(7_000_000)];
        m.push(&mut batch, 10_000_000, &mut out);
        let ts: Vec<u64> = out.iter().map(|e| e.ts).collect();
        assert_eq!(ts, [1_000, 2_000, 5_000_000, 7_000_000]);
        assert_eq!(m.held(), 1);
        // an event older than the held one arrives with the next read
        out.clear();
        let mut batch = vec![ev(8_500_000), ev(15_000_000)];
        m.push(&mut batch, 20_000_000, &mut out);
        let ts: Vec<u64> = out.iter().map(|e| e.ts).collect();
        assert_eq!(ts, [8_500_000, 9_000_000, 15_000_000]);
        assert_eq!(m.held(), 0);
    }
}
