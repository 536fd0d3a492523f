//! When samples are taken: a baseline at once, a short first interval
//! ([`FIRST_INTERVAL`]) so that the first rates come at once (or a full
//! one, for the exporter), then one every interval on a steady clock. A
//! tick missed while a sample took too long is skipped, not caught up.

use std::time::{Duration, Instant};

/// The first interval, so that the first rates come at once (then the
/// configured interval follows): at most this long, never longer than the
/// configured interval.
pub const FIRST_INTERVAL: Duration = Duration::from_millis(250);

/// When tick `k` is due after the start: the baseline at 0, the first
/// report's sample [`FIRST_INTERVAL`] later (or `every` if shorter), then
/// one every `every`.
pub fn tick_offset(every: Duration, k: u32) -> Duration {
    match k {
        0 => Duration::ZERO,
        k => every.min(FIRST_INTERVAL) + every * (k - 1),
    }
}

/// How long the first interval is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum First {
    /// [`FIRST_INTERVAL`] (or `every` if shorter): the first rates at once.
    Short,
    /// A whole interval.
    Full,
}

/// The ticks of a sampler: tick `base` at `anchor`, tick `base + 1` at
/// `anchor + first`, then one every `every`.
#[derive(Debug, Clone)]
pub struct Clock {
    every: Duration,
    first: Duration,
    anchor: Instant,
    base: u32,
    /// The tick due next.
    next: u32,
}

impl Clock {
    /// Tick 0 (the baseline) at `start`.
    pub fn new(start: Instant, every: Duration, first: First) -> Clock {
        Clock {
            every,
            first: match first {
                First::Short => tick_offset(every, 1),
                First::Full => every,
            },
            anchor: start,
            base: 0,
            next: 0,
        }
    }

    pub fn every(&self) -> Duration {
        self.every
    }

    /// The number of the tick due next.
    pub fn tick(&self) -> u32 {
        self.next
    }

    /// When tick `k` (not before the last restart) is due.
    pub fn due_at(&self, k: u32) -> Instant {
        self.anchor
            + match k.saturating_sub(self.base) {
                0 => Duration::ZERO,
                i => self.first + self.every * (i - 1),
            }
    }

    /// When the next tick is due.
    pub fn due(&self) -> Instant {
        self.due_at(self.next)
    }

    /// The due tick was taken (at `now`, or earlier): the next one is the
    /// first not already past, but the one after the anchor's (the
    /// baseline) always follows it: the first rates come however long the
    /// baseline took.
    pub fn advance(&mut self, now: Instant) {
        if self.next == self.base {
            self.next = self.base.saturating_add(1);
            return;
        }
        let since = now.saturating_duration_since(self.anchor).saturating_sub(self.first);
        let past = since.as_secs_f64() / self.every.as_secs_f64();
        let first_not_past = self.base.saturating_add(past.ceil() as u32).saturating_add(1);
        self.next = self.next.saturating_add(1).max(first_not_past);
    }

    /// The next tick at `at`, then one every `every` (a changed interval,
    /// a resumed sampler).
    pub fn restart(&mut self, at: Instant, every: Duration) {
        self.every = every;
        self.first = every;
        self.anchor = at;
        self.base = self.next;
    }

    /// Sleep until the next tick is due, waking within 100 ms for a
    /// terminating signal ([`crate::stop::sleep`]); true when one came.
    pub fn sleep(&self) -> bool {
        crate::stop::sleep(self.due().saturating_duration_since(Instant::now()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn a_short_first_interval_then_the_configured_one() {
        let t0 = Instant::now();
        let c = Clock::new(t0, 5 * S, First::Short);
        assert_eq!(c.due_at(0), t0);
        assert_eq!(c.due_at(1), t0 + FIRST_INTERVAL);
        assert_eq!(c.due_at(3), t0 + FIRST_INTERVAL + 10 * S);
        let c = Clock::new(t0, Duration::from_millis(100), First::Short);
        assert_eq!(c.due_at(2), t0 + Duration::from_millis(200));
        let c = Clock::new(t0, 5 * S, First::Full);
        assert_eq!(c.due_at(2), t0 + 10 * S);
        assert_eq!(tick_offset(5 * S, 3), FIRST_INTERVAL + 10 * S);
    }

    #[test]
    fn ticks_missed_by_a_slow_sample_are_skipped() {
        let t0 = Instant::now();
        let mut c = Clock::new(t0, S, First::Full);
        // A slow baseline: tick 1 follows it all the same.
        c.advance(t0 + 2 * S);
        assert_eq!(c.tick(), 1);
        // Tick 1 taken, but the sample ended 3.5 s in: ticks 2 and 3 are past.
        c.advance(t0 + Duration::from_millis(3500));
        assert_eq!(c.tick(), 4);
        assert_eq!(c.due(), t0 + 4 * S);
    }

    #[test]
    fn a_restart_anchors_the_next_tick() {
        let t0 = Instant::now();
        let mut c = Clock::new(t0, S, First::Short);
        c.advance(t0);
        c.advance(t0 + FIRST_INTERVAL);
        assert_eq!(c.tick(), 2);
        c.restart(t0 + FIRST_INTERVAL + 2 * S, 2 * S);
        assert_eq!(c.due(), t0 + FIRST_INTERVAL + 2 * S);
        c.advance(c.due());
        assert_eq!(c.tick(), 3);
        assert_eq!(c.due(), t0 + FIRST_INTERVAL + 4 * S);
    }
}
