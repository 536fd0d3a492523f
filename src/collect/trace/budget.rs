//! The tracer's CPU budget (pure: no I/O, no clock; times are trace-clock
//! ns, CLOCK_MONOTONIC).
//!
//! While the tracer's measured cost stays under the budget every request is
//! traced. Above it the tracer traces in windows: each cycle
//! ([`cycle_for`]: [`CYCLE_NS`] at the default budget) it opens the
//! instance's `tracing_on` for `duty × cycle` (a window),
//! then keeps it on for a drain — only completing the requests whose start
//! it saw, up to [`DRAIN_CAP_NS`] — and turns it off until the next cycle.
//! Turning `tracing_on` on and off only flips the ring buffer's record
//! flag; enabling and disabling the events would patch static keys, send
//! IPIs and wait for RCU.
//!
//! - [`Controller`] picks the duty cycle once a period ([`PERIOD_NS`], or
//!   a cycle when the cycles are longer, so that each period holds one): the cost of
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
/// One window and the pause after it, at the default budget or above.
pub const CYCLE_NS: u64 = 200_000_000;
/// The longest cycle (a budget far under the default).
pub const MAX_CYCLE_NS: u64 = 2 * PERIOD_NS;
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

/// The window cycle for `budget` (CPU ns per ns): [`CYCLE_NS`] at the
/// default budget or above, longer in proportion under it. Each cycle's
/// edges cost about the same whatever the load — three reads of the
/// buffers (the window's start and end, the drain's end), measured here at
/// 0.15-0.2 ms each — 2.5 ms a second at 200 ms cycles: an eighth of the
/// default 2%, but more than a 0.2% budget by itself. Longer cycles keep
/// the edges an eighth of any budget (0.2%: 2 s).
pub fn cycle_for(budget: f64) -> u64 {
    let default = DEFAULT_PCT / 100.0;
    if budget >= default || budget <= 0.0 {
        return CYCLE_NS;
    }
    ((CYCLE_NS as f64 * default / budget) as u64).min(MAX_CYCLE_NS)
}

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
/// of tracer CPU over `wall_ns`, `traced_ns` of it with `tracing_on` set,
/// against `budget` (CPU ns per ns: 0.02 is 2% of one core). With too
/// little traced time to measure (< 1% of a period: a duty under 0.01, or
/// a pause) the cost is taken per `duty × wall_ns` instead, so that a low
/// duty still falls when its cost is over the budget, and rises again when
/// the load is gone.
pub fn next_duty(budget: f64, duty: f64, cost_ns: u64, traced_ns: u64, wall_ns: u64) -> f64 {
    if budget <= 0.0 {
        return duty;
    }
    if cost_ns == 0 {
        return (duty * 2.0).min(1.0);
    }
    let traced = if traced_ns < wall_ns / 100 {
        duty * wall_ns as f64
    } else {
        traced_ns as f64
    };
    if traced <= 0.0 {
        return duty;
    }
    let per_traced = cost_ns as f64 / traced;
    let want = (budget / per_traced).min(duty * 2.0);
    if want >= 1.0 { 1.0 } else { want.max(MIN_DUTY) }
}

/// Chooses the duty cycle every period from cumulative counters.
#[derive(Debug, Clone)]
pub struct Controller {
    /// CPU ns per ns.
    pub budget: f64,
    duty: f64,
    /// A fixed duty (tests, benches): the controller does not change it.
    pub forced: bool,
    /// [`PERIOD_NS`], or the cycle when it is longer.
    period_ns: u64,
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
            period_ns: cycle_for(budget).max(PERIOD_NS),
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
        if wall < self.period_ns {
            return None;
        }
        let cost = cost_ns.saturating_sub(c0);
        let fixed = fixed_ns.saturating_sub(f0).min(cost);
        self.last_cost = Some(cost as f64 / wall as f64);
        self.last_fixed = Some(fixed as f64 / wall as f64);
        if !self.forced {
            self.duty = next_duty(self.budget, self.duty, cost - fixed, traced_ns.saturating_sub(r0), wall);
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
    /// A window and the pause after it ([`cycle_for`]).
    cycle_ns: u64,
}

impl Default for Windows {
    fn default() -> Self {
        Windows::with_cycle(CYCLE_NS)
    }
}

impl Windows {
    pub fn with_cycle(cycle_ns: u64) -> Windows {
        Windows {
            phase: Phase::Full,
            cycle_start: 0,
            cycle_ns,
        }
    }

    fn window(&self, duty: f64) -> u64 {
        ((self.cycle_ns as f64 * duty) as u64).max(MIN_WINDOW_NS)
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
                let end = now + self.window(duty);
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
                    // One wake when the requests are usually done.
                    wake: Some(now + DRAIN_MIN_NS),
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
                let end = now + self.window(duty);
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
        assert_eq!(next_duty(0.02, 1.0, 80 * MS, 1000 * MS, PERIOD_NS), 0.25);
        // under budget: whole
        assert_eq!(next_duty(0.02, 1.0, 15 * MS, 1000 * MS, PERIOD_NS), 1.0);
        // at 25% the traced 250 ms cost 10 ms: 0.04 per traced ns → 0.5,
        // but it rises at most ×2 a period
        assert_eq!(next_duty(0.02, 0.25, 10 * MS, 250 * MS, PERIOD_NS), 0.5);
        assert_eq!(next_duty(0.02, 0.1, 10 * MS, 250 * MS, PERIOD_NS), 0.2);
        // far over budget: the floor
        assert_eq!(next_duty(0.02, 1.0, 30_000 * MS, 1000 * MS, PERIOD_NS), MIN_DUTY);
        // under 1% of the period traced: the cost is taken per duty × wall,
        // so a duty under 0.01 still falls when over budget (40 ms a
        // second at 0.5%: 8 per traced ns → 0.25%) and rises when under
        assert_eq!(next_duty(0.02, 0.005, 40 * MS, 4 * MS, PERIOD_NS), 0.0025);
        assert_eq!(next_duty(0.02, 0.005, 2 * MS, 4 * MS, PERIOD_NS), 0.01);
        // a period with nothing traced (paused): per the nominal 300 ms
        assert_eq!(next_duty(0.02, 0.3, 5 * MS, 0, PERIOD_NS), 0.6);
        // nothing spent: doubles back to whole
        assert_eq!(next_duty(0.02, 0.3, 0, 300 * MS, PERIOD_NS), 0.6);
        assert_eq!(next_duty(0.02, 0.6, 0, 300 * MS, PERIOD_NS), 1.0);
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

    /// The controller and the windows together, with what the windows
    /// themselves cost: `wake_ns` of CPU at each edge (a read of the
    /// buffers), `flush_ns` at each 1 s sample, `per` CPU ns per traced ns.
    /// Returns the cost of each period, as a share of one core.
    fn simulate(budget: f64, per: f64, wake_ns: u64, flush_ns: u64, periods: u64) -> Vec<f64> {
        let mut c = Controller::new(budget);
        let mut w = Windows::with_cycle(cycle_for(budget));
        let (mut cost, mut traced, mut charged) = (0u64, 0u64, 0u64);
        let mut on_since = Some(0u64);
        c.update(0, 0, 0, 0);
        let (mut wake, mut flush) = (None::<u64>, PERIOD_NS);
        let mut costs = Vec::new();
        while flush <= periods * PERIOD_NS {
            let now = wake.map_or(flush, |x| x.min(flush));
            if now == flush {
                flush += PERIOD_NS;
                cost += flush_ns;
            } else {
                cost += wake_ns;
            }
            let traced_now = traced + on_since.map_or(0, |s| now - s);
            cost += ((traced_now - charged) as f64 * per) as u64;
            charged = traced_now;
            if c.update(now, cost, 0, traced_now).is_some() {
                costs.push(c.last_cost.unwrap_or(f64::NAN));
            }
            if wake.is_some_and(|x| now < x) {
                continue;
            }
            for _ in 0..2 {
                let s = w.step(now, c.duty(), Some(0));
                match (s.on, on_since) {
                    (Some(true), None) => on_since = Some(now),
                    (Some(false), Some(t)) => {
                        traced += now - t;
                        on_since = None;
                    }
                    _ => {}
                }
                wake = s.wake;
                if s.wake.is_none_or(|x| x > now) {
                    break;
                }
            }
        }
        costs
    }

    /// Cheap events (large folios: whole tracing costs 0.25-0.3% of a
    /// core) but 200 us a wake and 0.3 ms a sample, against a 0.2% budget:
    /// the edges' own cost is what the duty must hold down. From the fifth
    /// second on the mean is within 110% of the budget, and from the
    /// tenth no second is over 120% of it.
    #[test]
    fn the_edges_own_cost_is_held_to_the_budget() {
        for (budget, per, wake) in [(0.002, 0.0025, 200_000), (0.002, 0.003, 200_000), (0.02, 0.03, 300_000)] {
            let costs = simulate(budget, per, wake, 300_000, 30);
            // periods of 1 s, or 2 s (the cycle at 0.2%)
            let (from4, from10) = (costs.len() * 4 / 30, costs.len() / 3);
            let mean = costs[from4..].iter().sum::<f64>() / (costs.len() - from4) as f64;
            let worst = costs[from10..].iter().copied().fold(0.0, f64::max);
            println!("{budget}/{per}/{wake}: mean {mean:.5}, worst after 10 s {worst:.5}: {costs:.4?}");
            assert!(mean <= budget * 1.1, "{budget}/{per}: mean {mean} {costs:?}");
            assert!(worst <= budget * 1.2, "{budget}/{per}: worst {worst} {costs:?}");
        }
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
        assert_eq!(next_duty(0.02, 1.0, 24_800_000, PERIOD_NS, PERIOD_NS), 0.02 / 0.0248);
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
    fn cycles_lengthen_under_the_default_budget() {
        assert_eq!(cycle_for(0.02), CYCLE_NS);
        assert_eq!(cycle_for(0.05), CYCLE_NS);
        assert_eq!(cycle_for(0.0), CYCLE_NS);
        assert_eq!(cycle_for(0.01), 2 * CYCLE_NS);
        assert_eq!(cycle_for(0.002), MAX_CYCLE_NS);
        assert_eq!(cycle_for(0.0005), MAX_CYCLE_NS);
        // the window is the duty's share of the cycle
        let mut w = Windows::with_cycle(cycle_for(0.004));
        assert_eq!(w.step(0, 0.1, None).wake, Some(100 * MS));
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
        // one wake for the drain, 5 ms on
        assert_eq!((s.on, s.wake), (None, Some(1036 * MS)));
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
