//! The tracer's CPU budget (pure: no I/O, no clock; times are trace-clock
//! ns, CLOCK_MONOTONIC).
//!
//! While the tracer's measured cost stays under the budget every request is
//! traced. Above it the tracer traces in windows: each [`CYCLE_NS`] it
//! opens the instance's `tracing_on` for `duty × CYCLE_NS` (a window),
//! then keeps it on for a drain — only completing the requests whose start
//! it saw, up to [`DRAIN_CAP_NS`] — and turns it off until the next cycle.
//! Turning `tracing_on` on and off only flips the ring buffer's record
//! flag; enabling and disabling the events would patch static keys, send
//! IPIs and wait for RCU.
//!
//! - [`Controller`] picks the duty cycle once a [`PERIOD_NS`]: the cost of
//!   a traced second (CPU ns of the tracer per ns with `tracing_on` set,
//!   drains included) measured over the period sets the share of the next
//!   that fits the budget; it rises at most ×2 a period. The cost that
//!   does not fall with the duty — the lookups of new tasks' processes, a
//!   few ms for each task already gone — is left out of it: it would
//!   drive the duty down at a trivial load and still be paid (counted,
//!   one `dd` of 32 reads every 310 ms cost 2.65% of a core in a second,
//!   all but 0.05% of it lookups, and a 2% budget windowed it).
//! - [`Windows`] turns the duty cycle into edges: when to set and clear
//!   `tracing_on`, and the [`Mark`]s that tell the model where the windows
//!   began and ended (the model accepts the starts inside windows only,
//!   and completions of requests whose start it saw).

/// How often the duty cycle is chosen.
pub const PERIOD_NS: u64 = 1_000_000_000;
/// One window and the pause after it.
pub const CYCLE_NS: u64 = 200_000_000;
/// The least share traced.
pub const MIN_DUTY: f64 = 0.001;
/// The shortest window (the cycle grows instead).
pub const MIN_WINDOW_NS: u64 = 2_000_000;
/// After a window ends, requests started in it are waited for at least
/// this long (the merge's hold-back and a read) before the drain may end
/// with none left in flight.
pub const DRAIN_MIN_NS: u64 = 5_000_000;
/// The longest drain: requests started in a window and not complete by then
/// are dropped (counted as cut, not unmatched).
pub const DRAIN_CAP_NS: u64 = 50_000_000;
/// How often the drain looks whether the requests it waits for are done.
pub const DRAIN_STEP_NS: u64 = 2_000_000;
/// The default budget, % of one core.
pub const DEFAULT_PCT: f64 = 2.0;

/// A window edge, for the model (trace-clock ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// Starts are accepted from `ts`; `full`: tracing is whole again (no
    /// window end follows until the budget binds again).
    Open { ts: u64, full: bool },
    /// Starts from `ts` on are ignored; completions of the requests whose
    /// start was seen are still taken (the drain).
    End { ts: u64 },
}

impl Mark {
    pub fn ts(&self) -> u64 {
        match *self {
            Mark::Open { ts, .. } | Mark::End { ts } => ts,
        }
    }
}

/// The next duty cycle — the share of the time `tracing_on` is set,
/// windows and drains together — from the last period's cost: `cost_ns`
/// of tracer CPU over `traced_ns` with `tracing_on` set, against `budget`
/// (CPU ns per ns: 0.02 is 2% of one core). Without enough traced time to
/// measure (< 1% of a period) the duty stays.
pub fn next_duty(budget: f64, duty: f64, cost_ns: u64, traced_ns: u64) -> f64 {
    if traced_ns < PERIOD_NS / 100 || budget <= 0.0 {
        return duty;
    }
    if cost_ns == 0 {
        return (duty * 2.0).min(1.0);
    }
    let per_traced = cost_ns as f64 / traced_ns as f64;
    let want = (budget / per_traced).min(duty * 2.0);
    if want >= 1.0 { 1.0 } else { want.max(MIN_DUTY) }
}

/// Chooses the duty cycle every [`PERIOD_NS`] from cumulative counters.
#[derive(Debug, Clone)]
pub struct Controller {
    /// CPU ns per ns.
    pub budget: f64,
    duty: f64,
    /// A fixed duty (tests, benches): the controller does not change it.
    pub forced: bool,
    /// (time, cost, fixed cost, traced time) when the period began.
    period_start: Option<(u64, u64, u64, u64)>,
    /// The last period's cost as a share of one core.
    pub last_cost: Option<f64>,
    /// Of it, the cost that does not fall with the duty.
    pub last_fixed: Option<f64>,
}

impl Controller {
    /// `budget`: share of one core (0.02 = 2%).
    pub fn new(budget: f64) -> Controller {
        Controller {
            budget,
            duty: 1.0,
            forced: false,
            period_start: None,
            last_cost: None,
            last_fixed: None,
        }
    }

    /// A fixed duty cycle, whatever the cost.
    pub fn fixed(duty: f64) -> Controller {
        Controller {
            duty: duty.clamp(MIN_DUTY, 1.0),
            forced: true,
            ..Controller::new(1.0)
        }
    }

    pub fn duty(&self) -> f64 {
        self.duty
    }

    /// `cost_ns`: the tracer's CPU so far; `fixed_ns`: of it, the part
    /// that does not fall with the duty (task lookups); `traced_ns`: time
    /// with `tracing_on` set so far. Closes a period when one has passed
    /// and returns the new duty cycle then, set by the cost less the
    /// fixed part.
    pub fn update(&mut self, now: u64, cost_ns: u64, fixed_ns: u64, traced_ns: u64) -> Option<f64> {
        let Some((t0, c0, f0, r0)) = self.period_start else {
            self.period_start = Some((now, cost_ns, fixed_ns, traced_ns));
            return None;
        };
        let wall = now.saturating_sub(t0);
        if wall < PERIOD_NS {
            return None;
        }
        let cost = cost_ns.saturating_sub(c0);
        let fixed = fixed_ns.saturating_sub(f0).min(cost);
        self.last_cost = Some(cost as f64 / wall as f64);
        self.last_fixed = Some(fixed as f64 / wall as f64);
        if !self.forced {
            self.duty = next_duty(self.budget, self.duty, cost - fixed, traced_ns.saturating_sub(r0));
        }
        self.period_start = Some((now, cost_ns, fixed_ns, traced_ns));
        Some(self.duty)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Every request traced (`tracing_on` stays set).
    Full,
    /// A window, until `end`.
    Open { end: u64 },
    /// Waiting for the requests started in the window that ended at `end`.
    Drain { end: u64 },
    /// `tracing_on` clear until `open`.
    Closed { open: u64 },
}

/// What to do at an edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Step {
    /// Set (`true`) or clear `tracing_on`.
    pub on: Option<bool>,
    pub mark: Option<Mark>,
    /// When to step again (`None`: no edge ahead).
    pub wake: Option<u64>,
}

/// The window edges.
#[derive(Debug, Clone)]
pub struct Windows {
    pub phase: Phase,
    cycle_start: u64,
}

impl Default for Windows {
    fn default() -> Self {
        Windows {
            phase: Phase::Full,
            cycle_start: 0,
        }
    }
}

impl Windows {
    fn window(duty: f64) -> u64 {
        ((CYCLE_NS as f64 * duty) as u64).max(MIN_WINDOW_NS)
    }

    /// A cycle that `on_ns` with `tracing_on` set (window and drain) is
    /// `duty` of: the drains, which do not shrink with the duty, lengthen
    /// it instead of going over the budget.
    fn cycle(duty: f64, on_ns: u64) -> u64 {
        (on_ns as f64 / duty.max(MIN_DUTY)) as u64
    }

    /// Advance at `now` with the duty cycle `duty`; `pending`: requests
    /// started in the last window the model still waits for (`None`:
    /// unknown, the drain then lasts [`DRAIN_CAP_NS`]).
    pub fn step(&mut self, now: u64, duty: f64, pending: Option<usize>) -> Step {
        match self.phase {
            Phase::Full if duty >= 1.0 => Step::default(),
            Phase::Full => {
                // The tracing so far is the first window.
                self.cycle_start = now;
                let end = now + Self::window(duty);
                self.phase = Phase::Open { end };
                Step {
                    wake: Some(end),
                    ..Step::default()
                }
            }
            Phase::Open { end } if now < end => Step {
                wake: Some(end),
                ..Step::default()
            },
            Phase::Open { .. } => {
                self.phase = Phase::Drain { end: now };
                Step {
                    mark: Some(Mark::End { ts: now }),
                    wake: Some(now + DRAIN_STEP_NS),
                    ..Step::default()
                }
            }
            Phase::Drain { end } => {
                let done = now >= end + DRAIN_CAP_NS || (now >= end + DRAIN_MIN_NS && pending == Some(0));
                if !done {
                    let wake = (now + DRAIN_STEP_NS).min(end + DRAIN_CAP_NS);
                    return Step {
                        wake: Some(wake),
                        ..Step::default()
                    };
                }
                let on = now.saturating_sub(self.cycle_start);
                let open = (self.cycle_start + Self::cycle(duty, on)).max(now + 1);
                self.phase = Phase::Closed { open };
                Step {
                    on: Some(false),
                    wake: Some(open),
                    ..Step::default()
                }
            }
            Phase::Closed { open } if now < open => Step {
                wake: Some(open),
                ..Step::default()
            },
            Phase::Closed { .. } if duty >= 1.0 => {
                self.phase = Phase::Full;
                Step {
                    on: Some(true),
                    mark: Some(Mark::Open { ts: now, full: true }),
                    wake: None,
                }
            }
            Phase::Closed { .. } => {
                self.cycle_start = now;
                let end = now + Self::window(duty);
                self.phase = Phase::Open { end };
                Step {
                    on: Some(true),
                    mark: Some(Mark::Open { ts: now, full: false }),
                    wake: Some(end),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn duty_from_the_cost_of_a_traced_second() {
        // 80 ms of CPU over a fully traced second against 2%: 0.02 / 0.08
        assert_eq!(next_duty(0.02, 1.0, 80 * MS, 1000 * MS), 0.25);
        // under budget: whole
        assert_eq!(next_duty(0.02, 1.0, 15 * MS, 1000 * MS), 1.0);
        // at 25% the traced 250 ms cost 10 ms: 0.04 per traced ns → 0.5,
        // but it rises at most ×2 a period
        assert_eq!(next_duty(0.02, 0.25, 10 * MS, 250 * MS), 0.5);
        assert_eq!(next_duty(0.02, 0.1, 10 * MS, 250 * MS), 0.2);
        // far over budget: the floor
        assert_eq!(next_duty(0.02, 1.0, 30_000 * MS, 1000 * MS), MIN_DUTY);
        // too little traced to tell: unchanged
        assert_eq!(next_duty(0.02, 0.3, 5 * MS, 5 * MS), 0.3);
        // nothing spent: doubles back to whole
        assert_eq!(next_duty(0.02, 0.3, 0, 300 * MS), 0.6);
        assert_eq!(next_duty(0.02, 0.6, 0, 300 * MS), 1.0);
    }

    /// A tracer whose cost is `fixed` CPU ns a period plus `per` CPU ns per
    /// traced ns, driven by the controller: its cost converges to the
    /// budget or below within three periods and stays there.
    #[test]
    fn the_controller_converges_under_the_budget() {
        for (per, fixed) in [(0.10, 0u64), (0.30, 2 * MS), (0.05, MS), (1.5, 0)] {
            let mut c = Controller::new(0.02);
            let (mut cost, mut traced, mut now) = (0u64, 0u64, 0u64);
            assert_eq!(c.update(now, cost, 0, traced), None);
            let mut costs = Vec::new();
            for _ in 0..12 {
                let t = (PERIOD_NS as f64 * c.duty()) as u64;
                traced += t;
                cost += fixed + (t as f64 * per) as u64;
                now += PERIOD_NS;
                assert!(c.update(now, cost, 0, traced).is_some());
                costs.push(c.last_cost.unwrap_or(f64::NAN));
            }
            assert!(costs[0] > 0.02, "{per}: the first, whole period is over budget");
            for (i, x) in costs.iter().enumerate().skip(3) {
                assert!(*x <= 0.02 * 1.001, "{per}/{fixed}: period {i} cost {x}");
            }
            let ideal = (0.02 / per).max(MIN_DUTY);
            assert!(
                c.duty() <= ideal * 1.0001 && c.duty() >= ideal * 0.8,
                "{per}: duty {}",
                c.duty()
            );
        }
        // a fixed duty is kept whatever the cost
        let mut c = Controller::fixed(0.3);
        c.update(0, 0, 0, 0);
        c.update(PERIOD_NS, PERIOD_NS, 0, 300 * MS);
        assert_eq!(c.duty(), 0.3);
        assert_eq!(c.last_cost, Some(1.0));
    }

    /// The cost that does not fall with the duty (task lookups) does not
    /// window the tracing: the case of the live interval test, one `dd`
    /// of 32 reads (128 events) about every 310 ms, each costing ~6 ms of
    /// lookup against ~0.2 ms for its events.
    #[test]
    fn lookups_do_not_set_the_duty() {
        let mut c = Controller::new(0.02);
        assert_eq!(c.update(0, 0, 0, 0), None);
        // 4 rounds in the second: 24 ms of lookups + 0.8 ms of events, 2.48%
        // of a core in all, over the 2% budget; the events' 0.08% is not
        assert_eq!(c.update(PERIOD_NS, 24_800_000, 24 * MS, PERIOD_NS), Some(1.0));
        assert_eq!(c.last_cost, Some(0.0248));
        assert_eq!(c.last_fixed, Some(0.024));
        // counted whole, the same period would have windowed: 0.02 / 0.0248
        assert_eq!(next_duty(0.02, 1.0, 24_800_000, PERIOD_NS), 0.02 / 0.0248);
        // events that are over the budget still window: 40 ms of events
        // and 30 ms of lookups in the next second → 0.02 / 0.04 = 0.5
        let d = c.update(2 * PERIOD_NS, 94_800_000, 54 * MS, 2 * PERIOD_NS);
        assert_eq!(d, Some(0.5));
        assert_eq!(c.last_cost, Some(0.07));
        assert_eq!(c.last_fixed, Some(0.03));
        // at 50% the traced 500 ms cost 5 ms of events (0.01 per traced
        // ns: whole again, ×2) and 20 ms of lookups (counted, 0.05 per
        // traced ns would have kept it at 0.4)
        let d = c.update(3 * PERIOD_NS, 119_800_000, 74 * MS, 2 * PERIOD_NS + 500 * MS);
        assert_eq!(d, Some(1.0));
        assert_eq!(c.last_cost, Some(0.025));
        // a fixed part counted over the whole cost is capped at it
        let d = c.update(4 * PERIOD_NS, 120_800_000, 90 * MS, 3 * PERIOD_NS + 500 * MS);
        assert_eq!((d, c.last_fixed), (Some(1.0), Some(0.001)));
    }

    #[test]
    fn window_edges() {
        let mut w = Windows::default();
        assert_eq!(w.step(5, 1.0, None), Step::default());
        // the budget binds at 1000 ms: the tracing so far is a window of 30 ms
        let s = w.step(1000 * MS, 0.15, None);
        assert_eq!((s.on, s.mark, s.wake), (None, None, Some(1030 * MS)));
        assert_eq!(w.step(1010 * MS, 0.15, None).wake, Some(1030 * MS));
        // it ends late, at 1031 ms: the mark says when
        let s = w.step(1031 * MS, 0.15, None);
        assert_eq!(s.mark, Some(Mark::End { ts: 1031 * MS }));
        assert_eq!((s.on, s.wake), (None, Some(1033 * MS)));
        // the drain goes on at least 5 ms, then until nothing is pending
        assert_eq!(w.step(1033 * MS, 0.15, Some(0)).on, None);
        assert_eq!(w.step(1036 * MS, 0.15, Some(2)).on, None);
        let s = w.step(1037 * MS, 0.15, Some(0));
        // 37 ms on (window and drain) are 15% of a cycle of 246.7 ms
        let open = 1000 * MS + (37.0 * MS as f64 / 0.15) as u64;
        assert_eq!((s.on, s.wake), (Some(false), Some(open)));
        assert_eq!(w.step(1100 * MS, 0.15, None).on, None);
        let s = w.step(open, 0.15, None);
        assert_eq!(s.on, Some(true));
        assert_eq!(s.mark, Some(Mark::Open { ts: open, full: false }));
        assert_eq!(s.wake, Some(open + 30 * MS));
        w.step(open + 30 * MS, 0.15, None);
        // a drain that never empties ends at the cap: 80 ms on
        let cap = open + 80 * MS;
        assert_eq!(w.step(cap - 1, 0.15, Some(1)).wake, Some(cap));
        let s = w.step(cap, 0.15, Some(1));
        let next = open + (80.0 * MS as f64 / 0.15) as u64;
        assert_eq!((s.on, s.wake), (Some(false), Some(next)));
        let s = w.step(next, 1.0, None);
        assert_eq!(s.mark, Some(Mark::Open { ts: next, full: true }));
        assert_eq!((s.on, s.wake, w.phase), (Some(true), None, Phase::Full));
    }
}
