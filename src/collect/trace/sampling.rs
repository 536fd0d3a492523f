//! The tracer's CPU budget at work: measures the tracer's CPU time, lets
//! the [`Controller`] pick the duty cycle and the [`Windows`] the edges,
//! and sets and clears the instance's `tracing_on` at those edges.
//!
//! What is measured (the cost the budget holds): the CPU time of the
//! thread that reads the buffers (CLOCK_THREAD_CPUTIME_ID) — the reads of
//! `trace_pipe_raw`, the decode, the merge, the task lookups and the
//! model's feed (the sink), and the `tracing_on` writes: all of the
//! tracer's own thread, its wake-ups and waits in poll(2) included, and
//! the time around each read a sample's flush does in its thread. Not
//! included: the kernel's cost of the tracepoints themselves, which the
//! traced tasks pay. Of the cost, the lookups of new tasks' processes
//! (`reader::Tasks`) are counted apart: they are paid per task, not per
//! event, and windows would not make them smaller, so they do not set the
//! duty (the [`Controller`]).

use std::fs::File;
use std::os::unix::fs::FileExt;

use super::budget::{Controller, Mark, Phase, Windows, cycle_for};

/// A budget: the controller, the windows, the instance's `tracing_on`.
#[derive(Debug)]
pub struct Sampling {
    pub controller: Controller,
    pub windows: Windows,
    tracing_on: File,
    /// Tracer CPU so far, ns.
    pub cost_ns: u64,
    /// Of it, the task lookups, ns.
    pub fixed_ns: u64,
    /// Time with `tracing_on` set so far (to `on_since`), ns.
    traced_ns: u64,
    on_since: Option<u64>,
    /// The edges made since the last [`Sampling::take_marks`].
    marks: Vec<Mark>,
    /// When to step again.
    pub wake: Option<u64>,
    /// `tracing_on` writes that failed.
    pub errors: u64,
    /// (cost, lookups, time) at the last [`Sampling::take_cost`].
    taken: (u64, u64, u64),
}

/// The tracer's CPU over an interval, as its budget counts it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Cost {
    /// Tracer CPU, ns (its thread and the samples' reads of the buffers).
    pub cpu_ns: u64,
    /// Of it, the lookups of new tasks' processes (not held by the budget).
    pub lookup_ns: u64,
    /// The interval's length, ns.
    pub wall_ns: u64,
    /// The budget, CPU ns per ns; `None` for a fixed duty cycle.
    pub budget: Option<f64>,
}

impl Cost {
    /// `ns` over the interval as a share of one core, in %.
    pub fn pct(&self, ns: u64) -> Option<f64> {
        (self.wall_ns > 0).then(|| ns as f64 * 100.0 / self.wall_ns as f64)
    }

    /// "cpu 0.3%, budget 2%"; `None` without a budget or a length.
    pub fn summary(&self) -> Option<String> {
        let (pct, budget) = (self.pct(self.cpu_ns)?, self.budget?);
        Some(format!("cpu {}%, budget {}%", pct_text(pct), pct_text(budget * 100.0)))
    }
}

/// A percentage with the digits that matter: "2", "0.3", "0.04", "0.005".
fn pct_text(p: f64) -> String {
    let digits = if p >= 1.0 || p == 0.0 {
        1
    } else {
        // two significant digits
        (1.0 - p.log10().floor()) as usize
    };
    let s = format!("{p:.digits$}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

impl Sampling {
    /// Hold the tracer to `controller` from `now`, through `tracing_on`
    /// (open for writing).
    pub fn new(controller: Controller, tracing_on: File, now: u64) -> Sampling {
        let cycle = cycle_for(controller.budget);
        let mut s = Sampling {
            controller,
            windows: Windows::with_cycle(cycle),
            tracing_on,
            cost_ns: 0,
            fixed_ns: 0,
            traced_ns: 0,
            on_since: Some(now),
            marks: Vec::new(),
            wake: None,
            errors: 0,
            taken: (0, 0, now),
        };
        s.controller.update(now, 0, 0, 0);
        // A fixed duty starts its windows at once.
        s.step(now, None);
        s
    }

    /// Time with `tracing_on` set up to `now`.
    pub fn traced_ns(&self, now: u64) -> u64 {
        self.traced_ns + self.on_since.map_or(0, |s| now.saturating_sub(s))
    }

    /// The share of the time traced now (1.0: whole).
    pub fn duty(&self) -> f64 {
        if self.windows.phase == Phase::Full {
            1.0
        } else {
            self.controller.duty()
        }
    }

    /// Count `ns` of tracer CPU, `fixed` ns of it task lookups.
    pub fn charge(&mut self, ns: u64, fixed: u64) {
        self.cost_ns += ns;
        self.fixed_ns += fixed.min(ns);
    }

    /// Advance at `now`: close a period, make the edges due. `pending`:
    /// the requests the model still waits for (for the drain).
    pub fn step(&mut self, now: u64, pending: Option<usize>) {
        let traced = self.traced_ns(now);
        self.controller.update(now, self.cost_ns, self.fixed_ns, traced);
        if self.wake.is_some_and(|w| now < w) {
            return;
        }
        // Two steps at most: a drain that ends late may open the next
        // window at once.
        for _ in 0..2 {
            let s = self.windows.step(now, self.controller.duty(), pending);
            if let Some(on) = s.on {
                self.set_on(on, now);
            }
            if let Some(m) = s.mark {
                self.marks.push(m);
            }
            self.wake = s.wake;
            if s.wake.is_none_or(|w| w > now) {
                break;
            }
        }
    }

    fn set_on(&mut self, on: bool, now: u64) {
        match (on, self.on_since) {
            (true, None) => self.on_since = Some(now),
            (false, Some(s)) => {
                self.traced_ns += now.saturating_sub(s);
                self.on_since = None;
            }
            _ => {}
        }
        if self.tracing_on.write_at(if on { b"1" } else { b"0" }, 0).is_err() {
            self.errors += 1;
        }
    }

    /// The cost counted since the last call (the first: since the start)
    /// to `now`.
    pub fn take_cost(&mut self, now: u64) -> Cost {
        let (cost, fixed, at) = std::mem::replace(&mut self.taken, (self.cost_ns, self.fixed_ns, now));
        Cost {
            cpu_ns: self.cost_ns.saturating_sub(cost),
            lookup_ns: self.fixed_ns.saturating_sub(fixed),
            wall_ns: now.saturating_sub(at),
            budget: (!self.controller.forced).then_some(self.controller.budget),
        }
    }

    /// The window edges made since the last call, oldest first.
    pub fn take_marks(&mut self, out: &mut Vec<Mark>) {
        out.append(&mut self.marks);
    }
}

impl super::reader::Tracer {
    /// Hold the tracer to a CPU budget (or a fixed duty cycle:
    /// [`Controller::fixed`]): from now on it traces in windows when the
    /// budget binds, through the instance's `tracing_on`.
    pub fn hold_to(&mut self, controller: Controller) -> Result<(), String> {
        let path = self.instance.dir.join("tracing_on");
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(|e| format!("opening {}: {e}", path.display()))?;
        self.sampling = Some(Sampling::new(controller, f, crate::collect::monotonic_ns()));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// What the budget charged, interval by interval: 5 ms (1 ms of it
    /// lookups) over the first second, 2 ms over the next two; a fixed
    /// duty cycle has no budget.
    #[test]
    fn the_cost_taken_is_what_was_charged_since_the_last_take() {
        let dir = std::env::temp_dir().join(format!("iolens-sampling-{}", std::process::id()));
        let open = || std::fs::File::create(&dir);
        let Ok(f) = open() else {
            eprintln!("skipped: no temp file at {}", dir.display());
            return;
        };
        let mut s = Sampling::new(Controller::new(0.02), f, 0);
        s.charge(5 * MS, MS);
        let a = s.take_cost(1000 * MS);
        assert_eq!(
            (a.cpu_ns, a.lookup_ns, a.wall_ns, a.budget),
            (5 * MS, MS, 1000 * MS, Some(0.02))
        );
        assert_eq!(a.pct(a.cpu_ns), Some(0.5));
        s.charge(2 * MS, 0);
        let b = s.take_cost(3000 * MS);
        assert_eq!((b.cpu_ns, b.lookup_ns, b.wall_ns), (2 * MS, 0, 2000 * MS));
        assert_eq!(b.pct(b.cpu_ns), Some(0.1));
        assert_eq!(s.take_cost(3000 * MS).pct(0), None, "no time passed");
        if let Ok(f) = open() {
            assert_eq!(Sampling::new(Controller::fixed(0.5), f, 0).take_cost(MS).budget, None);
        }
        let _ = std::fs::remove_file(&dir);
    }

    #[test]
    fn percentages_keep_the_digits_that_matter() {
        let t: Vec<String> = [2.0, 0.2, 0.04, 0.3, 0.295, 0.0051, 12.34, 0.0].map(pct_text).into();
        assert_eq!(t, ["2", "0.2", "0.04", "0.3", "0.29", "0.0051", "12.3", "0"]);
        let c = Cost {
            cpu_ns: 400_000,
            lookup_ns: 0,
            wall_ns: 1_000_000_000,
            budget: Some(0.0004),
        };
        assert_eq!(c.summary().as_deref(), Some("cpu 0.04%, budget 0.04%"));
    }
}
