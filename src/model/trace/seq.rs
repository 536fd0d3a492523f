//! Sequential or not, in issue order: a request is sequential when it
//! starts exactly where a recent request in the same direction ended. The
//! last [`WINDOW`] stream ends per direction are kept, so interleaved
//! sequential streams (two readers, or one reader plus a writer) still
//! count as sequential.

/// Stream ends remembered per direction.
pub const WINDOW: usize = 8;

/// Directions with their own streams: read, write, discard.
pub const DIRS: usize = 3;

#[derive(Debug, Clone)]
pub struct Streams {
    /// (end sector, last use) per direction; an end of `u64::MAX` is unused.
    ends: [[(u64, u64); WINDOW]; DIRS],
    clock: u64,
}

impl Default for Streams {
    fn default() -> Self {
        Streams {
            ends: [[(u64::MAX, 0); WINDOW]; DIRS],
            clock: 0,
        }
    }
}

impl Streams {
    /// Classify a request `[sector, sector + sectors)` in direction `dir`
    /// and remember where it ends. True when sequential.
    pub fn check(&mut self, dir: usize, sector: u64, sectors: u64) -> bool {
        self.clock += 1;
        let end = sector.saturating_add(sectors);
        let Some(ends) = self.ends.get_mut(dir) else {
            return false;
        };
        if let Some(slot) = ends.iter_mut().find(|(e, _)| *e == sector) {
            *slot = (end, self.clock);
            return true;
        }
        // A new stream replaces the least recently used end.
        if let Some(slot) = ends.iter_mut().min_by_key(|(_, used)| *used) {
            *slot = (end, self.clock);
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_stream() {
        let mut s = Streams::default();
        // 4 KiB reads from 0: the first starts a stream, the rest continue it
        let seq: Vec<bool> = (0..5).map(|i| s.check(0, i * 8, 8)).collect();
        assert_eq!(seq, [false, true, true, true, true]);
        // a write at the read stream's end is another direction
        assert!(!s.check(1, 40, 8));
    }

    #[test]
    fn interleaved_streams_and_random() {
        let mut s = Streams::default();
        let half = 1 << 20;
        let mut seq = 0;
        for i in 0..50u64 {
            seq += s.check(0, i * 8, 8) as u32;
            seq += s.check(0, half + i * 8, 8) as u32;
        }
        // two stream starts, 98 continuations
        assert_eq!(seq, 98);
        // random offsets far apart: never sequential
        let mut s = Streams::default();
        let n = (0..100u64).filter(|i| s.check(0, (i * 7919 % 1000) * 1000, 8)).count();
        assert_eq!(n, 0);
    }

    #[test]
    fn window_forgets_the_oldest_stream() {
        let mut s = Streams::default();
        s.check(0, 0, 8); // stream A ends at 8
        for k in 1..=WINDOW as u64 {
            s.check(0, k * 10_000, 8); // 8 more streams push A out
        }
        assert!(!s.check(0, 8, 8));
        // the most recent stream is still known
        assert!(s.check(0, WINDOW as u64 * 10_000 + 8, 8));
    }
}
