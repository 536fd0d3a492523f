//! Sequential or not, in issue order: a request is sequential when it
//! starts exactly where a recent request in the same direction ended,
//! either one of its own process's on that device (its streams: several
//! at once for fio at a queue depth above 1, or for a reader whose
//! readahead interleaves with its own reads) or one of the device's (a
//! stream handed from one thread or kernel worker to another). The last
//! [`WINDOW`] stream ends per direction are kept for each, so interleaved
//! sequential streams still count as sequential, and a sequential reader
//! stays sequential however many random requests other processes put
//! between two of its own (judged against the device's recent ends alone,
//! `dd iflag=direct bs=1M` read 6-56% sequential next to fio's 4 KiB
//! random reads at queue depth 4: their requests pushed dd's end out).

use foldhash::HashMap;

use crate::collect::trace::block::Dev;

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

/// Per-process stream tables kept at most; past it the older half goes.
pub const MAX_PROCS: usize = 1024;
/// A process's streams are forgotten after this long without a request
/// (trace clock, ns).
pub const PROC_TTL_NS: u64 = 10_000_000_000;

/// The streams of each process (key: [`super::proc_key`]) on each device,
/// and of each device. Bounded: [`MAX_PROCS`] tables of fixed size.
#[derive(Debug, Default)]
pub struct Classifier {
    devs: HashMap<Dev, Streams>,
    /// (streams, trace time of the last request).
    procs: HashMap<(i32, Dev), (Streams, u64)>,
}

impl Classifier {
    /// Classify a request of process `key` issued at `ts` and remember
    /// where it ends, in the process's streams and the device's. True when
    /// sequential.
    pub fn check(&mut self, key: i32, dev: Dev, ts: u64, dir: usize, sector: u64, sectors: u64) -> bool {
        if self.procs.len() >= MAX_PROCS && !self.procs.contains_key(&(key, dev)) {
            self.forget_older_half();
        }
        let (own, used) = self.procs.entry((key, dev)).or_default();
        *used = ts;
        // Both remember the end: no short circuit.
        let by_proc = own.check(dir, sector, sectors);
        let by_dev = self.devs.entry(dev).or_default().check(dir, sector, sectors);
        by_proc || by_dev
    }

    /// Forget the streams of processes idle for [`PROC_TTL_NS`] before
    /// `now`.
    pub fn expire(&mut self, now: u64) {
        self.procs
            .retain(|_, (_, used)| now.saturating_sub(*used) < PROC_TTL_NS);
    }

    fn forget_older_half(&mut self) {
        let mut times: Vec<u64> = self.procs.values().map(|(_, t)| *t).collect();
        let mid = times.len() / 2;
        let (_, cut, _) = times.select_nth_unstable(mid);
        let cut = *cut;
        self.procs.retain(|_, (_, t)| *t > cut);
    }

    /// Process tables held now.
    pub fn procs(&self) -> usize {
        self.procs.len()
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

    const D: Dev = Dev { major: 7, minor: 0 };
    const MIB: u64 = 2048;

    /// 4 KiB random sectors over 256 MiB (a fixed LCG).
    fn random(state: &mut u64) -> u64 {
        *state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (*state >> 33) % (256 * MIB / 8) * 8
    }

    #[test]
    fn a_process_stream_survives_anothers_random_requests() {
        let mut c = Classifier::default();
        let mut rng = 1;
        let (mut dd, mut fio, mut ts) = (0, 0, 0);
        for i in 0..50u64 {
            ts += 1;
            dd += u32::from(c.check(10, D, ts, 0, i * MIB, MIB));
            // 30 random 4 KiB reads of another process between two of dd's:
            // far more than the device's window holds
            for _ in 0..30 {
                fio += u32::from(c.check(20, D, ts, 0, random(&mut rng), 8));
            }
        }
        // dd: one stream start, 49 continuations; fio: none
        assert_eq!((dd, fio), (49, 0));
    }

    #[test]
    fn several_streams_of_one_process_interleaved() {
        // fio-like: 4 sequential streams of one process issued in turn
        // (queue depth 4), with random requests of another in between
        let mut c = Classifier::default();
        let mut rng = 7;
        let mut seq = 0;
        for i in 0..25u64 {
            for s in 0..4u64 {
                seq += u32::from(c.check(10, D, i, 0, s * 64 * MIB + i * 8, 8));
                for _ in 0..5 {
                    c.check(20, D, i, 0, random(&mut rng), 8);
                }
            }
        }
        assert_eq!(seq, 100 - 4);
        // the same requests judged by the device's ends alone: its window
        // is flushed by the random ones between
        let mut dev = Streams::default();
        let mut rng = 7;
        let mut seq = 0;
        for i in 0..25u64 {
            for s in 0..4u64 {
                seq += u32::from(dev.check(0, s * 64 * MIB + i * 8, 8));
                for _ in 0..5 {
                    dev.check(0, random(&mut rng), 8);
                }
            }
        }
        assert_eq!(seq, 0);
    }

    #[test]
    fn a_stream_handed_to_another_thread_continues() {
        // kernel workers (no thread group) taking turns on one stream: the
        // device's ends keep it sequential
        let mut c = Classifier::default();
        let seq: Vec<bool> = (0..6u64)
            .map(|i| c.check(-(i as i32 % 2 + 100), D, i, 1, i * 8, 8))
            .collect();
        assert_eq!(seq, [false, true, true, true, true, true]);
        // another device, another direction: not a continuation
        let other = Dev { major: 8, minor: 0 };
        assert!(!c.check(-100, other, 7, 1, 48, 8));
        assert!(!c.check(-100, D, 8, 0, 48, 8));
    }

    #[test]
    fn process_tables_are_bounded_and_expire() {
        let mut c = Classifier::default();
        for k in 0..(MAX_PROCS as i32 + 10) {
            c.check(k + 1, D, k as u64, 0, k as u64 * 1000, 8);
        }
        assert!(c.procs() <= MAX_PROCS, "{}", c.procs());
        assert!(c.procs() >= MAX_PROCS / 2, "{}", c.procs());
        // the newest stream is still known
        let last = MAX_PROCS as u64 + 9;
        assert!(c.check(last as i32 + 1, D, last + 1, 0, last * 1000 + 8, 8));
        c.expire(last + 1 + PROC_TTL_NS);
        assert_eq!(c.procs(), 0);
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
