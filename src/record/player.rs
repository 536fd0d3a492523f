//! Where a replay on the dashboard is: every sample of a recording in file
//! order, the one shown, playing or not and how fast. Pure: it says how to
//! get the model to a sample ([`Go`]), the dashboard's replay loop does it
//! with the recording.

use std::time::Duration;

use super::file::Recording;

/// Playback speeds: recorded time per real time.
pub const SPEEDS: [f64; 12] = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0];

/// Index of ×1 in [`SPEEDS`].
const NORMAL: usize = 2;

/// How far before a sample reached by a jump the model starts taking
/// samples: the history charts' 10 minutes (the write window and the cgroup
/// limit window look back one), at most [`WARM_UP_SAMPLES`] samples.
pub const WARM_UP_NS: u64 = 600_000_000_000;
pub const WARM_UP_SAMPLES: usize = 120;

/// A gap between samples longer than this (the recorder was stopped, the
/// machine suspended) is played as one second of recorded time.
const LONGEST_GAP_NS: u64 = 3_600_000_000_000;

/// Frames are not played faster than this.
const FASTEST: Duration = Duration::from_millis(50);

/// One sample of the recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    /// Its recorder run (segment) and its index there.
    pub seg: usize,
    pub idx: usize,
    /// Its wall-clock time, ns since the Unix epoch.
    pub wall_ns: u64,
}

/// How to bring the model to the sample now current.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Go {
    /// Feed it the next sample (one step forward in the same run).
    Next,
    /// One step back in the same run: the model as it was one sample ago
    /// if it was kept, else as [`Go::Rebuild`] says.
    Back { from: usize },
    /// A new model of the sample's run, fed the samples `from..=current`.
    Rebuild { from: usize },
}

#[derive(Debug, Clone)]
pub struct Player {
    marks: Vec<Mark>,
    pos: usize,
    /// The model holds `pos` (false before the first [`Player::go`]).
    loaded: bool,
    speed: usize,
}

impl Player {
    pub fn new(rec: &Recording) -> Player {
        let marks = rec
            .segments
            .iter()
            .enumerate()
            .flat_map(|(seg, s)| {
                s.samples.iter().enumerate().map(move |(idx, f)| Mark {
                    seg,
                    idx,
                    wall_ns: f.wall_ns,
                })
            })
            .collect();
        Player::from_marks(marks)
    }

    pub fn from_marks(marks: Vec<Mark>) -> Player {
        Player {
            marks,
            pos: 0,
            loaded: false,
            speed: NORMAL,
        }
    }

    pub fn len(&self) -> usize {
        self.marks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.marks.is_empty()
    }

    /// The sample shown (0-based).
    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn mark(&self, i: usize) -> Option<Mark> {
        self.marks.get(i).copied()
    }

    pub fn current(&self) -> Option<Mark> {
        self.mark(self.pos)
    }

    pub fn at_end(&self) -> bool {
        self.pos + 1 >= self.marks.len()
    }

    pub fn speed(&self) -> f64 {
        SPEEDS[self.speed]
    }

    /// Play faster (`true`) or slower; false at the end of the scale.
    pub fn change_speed(&mut self, faster: bool) -> bool {
        let next = if faster {
            (self.speed + 1).min(SPEEDS.len() - 1)
        } else {
            self.speed.saturating_sub(1)
        };
        let changed = next != self.speed;
        self.speed = next;
        changed
    }

    /// Make sample `to` current (clamped to the recording); `None` when it
    /// already is.
    pub fn go(&mut self, to: usize) -> Option<Go> {
        let to = to.min(self.marks.len().checked_sub(1)?);
        if self.loaded && to == self.pos {
            return None;
        }
        let same_run = |a: usize, b: usize| self.marks[a].seg == self.marks[b].seg;
        let plan = if self.loaded && to == self.pos + 1 && same_run(to, self.pos) {
            Go::Next
        } else if self.loaded && to + 1 == self.pos && same_run(to, self.pos) {
            Go::Back {
                from: self.warm_start(to),
            }
        } else {
            Go::Rebuild {
                from: self.warm_start(to),
            }
        };
        self.pos = to;
        self.loaded = true;
        Some(plan)
    }

    /// Step `delta` samples.
    pub fn step(&mut self, delta: isize) -> Option<Go> {
        let to = self.pos.saturating_add_signed(delta);
        self.go(to)
    }

    /// The first sample at or after `wall_ns`, else the last one.
    pub fn index_at(&self, wall_ns: u64) -> usize {
        self.marks
            .iter()
            .position(|m| m.wall_ns >= wall_ns)
            .unwrap_or(self.marks.len().saturating_sub(1))
    }

    /// The first sample the model takes to show sample `to` as a replay
    /// from the start of its run would: [`WARM_UP_NS`] before it, in its
    /// run, at most [`WARM_UP_SAMPLES`] back.
    fn warm_start(&self, to: usize) -> usize {
        let m = self.marks[to];
        let since = m.wall_ns.saturating_sub(WARM_UP_NS);
        let mut from = to;
        while from > 0
            && to - from < WARM_UP_SAMPLES
            && self.marks[from - 1].seg == m.seg
            && self.marks[from - 1].wall_ns >= since
        {
            from -= 1;
        }
        from
    }

    /// Real time until the next sample is due while playing: the recorded
    /// gap at the current speed (`None` at the end).
    pub fn wait(&self) -> Option<Duration> {
        let (cur, next) = (self.current()?, self.mark(self.pos + 1)?);
        let gap = next.wall_ns.saturating_sub(cur.wall_ns);
        let gap = if gap == 0 || gap > LONGEST_GAP_NS || next.seg != cur.seg {
            1_000_000_000
        } else {
            gap
        };
        Some(Duration::from_secs_f64(gap as f64 / 1e9 / self.speed()).max(FASTEST))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two runs: 5 samples 10 s apart, then 3 samples an hour later.
    fn player() -> Player {
        let s = 1_000_000_000u64;
        let mut marks: Vec<Mark> = (0..5)
            .map(|i| Mark {
                seg: 0,
                idx: i,
                wall_ns: 1000 * s + i as u64 * 10 * s,
            })
            .collect();
        marks.extend((0..3).map(|i| Mark {
            seg: 1,
            idx: i,
            wall_ns: 4600 * s + i as u64 * 10 * s,
        }));
        Player::from_marks(marks)
    }

    #[test]
    fn steps_feed_one_sample_forward_and_go_back_within_a_run() {
        let mut p = player();
        assert_eq!(p.go(1), Some(Go::Rebuild { from: 0 }));
        assert_eq!(p.step(1), Some(Go::Next));
        assert_eq!(p.pos(), 2);
        assert_eq!(p.step(-1), Some(Go::Back { from: 0 }));
        assert_eq!(p.pos(), 1);
        // Already there, and clamped at both ends.
        assert_eq!(p.go(1), None);
        assert_eq!(p.step(-5), Some(Go::Back { from: 0 }));
        assert_eq!(p.pos(), 0);
        assert_eq!(p.step(-1), None);
        assert_eq!(p.go(100), Some(Go::Rebuild { from: 5 }));
        assert_eq!(p.pos(), 7);
        assert!(p.at_end());
        assert_eq!(p.wait(), None);
    }

    #[test]
    fn crossing_into_the_next_run_starts_a_new_model() {
        let mut p = player();
        p.go(4);
        // Sample 5 is the first of the second run: a baseline of its own.
        assert_eq!(p.step(1), Some(Go::Rebuild { from: 5 }));
        assert_eq!(p.step(-1), Some(Go::Rebuild { from: 0 }));
    }

    #[test]
    fn jumps_land_on_the_first_sample_at_or_after_the_time() {
        let p = player();
        let s = 1_000_000_000u64;
        assert_eq!(p.index_at(0), 0);
        assert_eq!(p.index_at(1015 * s), 2);
        assert_eq!(p.index_at(1020 * s), 2);
        // Between the runs: the second run's first sample.
        assert_eq!(p.index_at(2000 * s), 5);
        assert_eq!(p.index_at(9000 * s), 7);
    }

    #[test]
    fn the_warm_up_stays_in_the_run_and_is_bounded() {
        let s = 1_000_000_000u64;
        let marks = (0..1000)
            .map(|i| Mark {
                seg: 0,
                idx: i,
                wall_ns: i as u64 * s,
            })
            .collect();
        let mut p = Player::from_marks(marks);
        // 1 s apart: 120 samples back, not 600.
        assert_eq!(p.go(900), Some(Go::Rebuild { from: 780 }));
        let mut p = player();
        assert_eq!(p.go(6), Some(Go::Rebuild { from: 5 }));
    }

    #[test]
    fn playing_waits_the_recorded_gap_at_the_speed() {
        let mut p = player();
        p.go(0);
        assert_eq!(p.speed(), 1.0);
        assert_eq!(p.wait(), Some(Duration::from_secs(10)));
        assert!(p.change_speed(true) && p.change_speed(true));
        assert_eq!(p.speed(), 4.0);
        assert_eq!(p.wait(), Some(Duration::from_millis(2500)));
        // The hour between the runs is played as one second.
        p.go(4);
        assert_eq!(p.wait(), Some(Duration::from_millis(250)));
        for _ in 0..20 {
            p.change_speed(true);
        }
        assert_eq!(p.speed(), 512.0);
        p.go(0);
        assert_eq!(p.wait(), Some(FASTEST));
        for _ in 0..20 {
            p.change_speed(false);
        }
        assert!(!p.change_speed(false));
        assert_eq!(p.speed(), 0.25);
    }
}
