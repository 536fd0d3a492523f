//! State of the results pane, updated from [`ProbeMsg`]s. Pure data: the
//! pane (`ui::results`) only reads it.

use super::stats::Bucket;
use super::{ProbeMsg, ProbeResult, Progress, Status};
use crate::format;

#[derive(Debug, Clone, Default)]
pub enum RunState {
    /// No probe started in this session.
    #[default]
    Idle,
    /// Started, no progress yet.
    Starting,
    Running(Progress),
    Finished(Box<ProbeResult>),
    /// Cancelled: the partial result, once the probe thread has stopped.
    Cancelled(Option<Box<ProbeResult>>),
    Failed(String),
}

#[derive(Debug, Clone, Default)]
pub struct ProbeView {
    /// Target as shown (escaped).
    pub target: String,
    /// "random read + zone sweep, quick".
    pub plan: String,
    pub state: RunState,
    /// Finished results of this session, newest last (the current one
    /// included once finished).
    pub past: Vec<ProbeResult>,
}

impl ProbeView {
    /// A new probe was started (only one runs at a time).
    pub fn start(&mut self, target: String, plan: String) {
        self.target = target;
        self.plan = plan;
        self.state = RunState::Starting;
    }

    pub fn is_running(&self) -> bool {
        matches!(self.state, RunState::Starting | RunState::Running(_))
    }

    /// Esc was pressed: show "cancelled" at once, without waiting for the
    /// read in flight; the partial result fills in when it arrives.
    pub fn cancel_requested(&mut self) {
        if self.is_running() {
            self.state = RunState::Cancelled(None);
        }
    }

    pub fn apply(&mut self, msg: ProbeMsg) {
        match msg {
            ProbeMsg::Progress(p) => {
                if self.is_running() {
                    self.state = RunState::Running(p);
                }
            }
            ProbeMsg::Finished(r) => {
                self.past.push((*r).clone());
                self.state = match r.status {
                    Status::Completed if !matches!(self.state, RunState::Cancelled(_)) => RunState::Finished(r),
                    _ => RunState::Cancelled(Some(r)),
                };
            }
            ProbeMsg::Failed(e) => self.state = RunState::Failed(e),
        }
    }
}

/// Histogram buckets merged per power of two, for display: (lo_ns, hi_ns, count).
pub fn coarse_histogram(buckets: &[Bucket]) -> Vec<(u64, u64, u64)> {
    let mut out: Vec<(u64, u64, u64)> = Vec::new();
    for b in buckets {
        let octave = 63 - b.lo_ns.max(1).leading_zeros();
        let lo = 1u64 << octave;
        let hi = lo.saturating_mul(2).saturating_sub(1);
        match out.last_mut() {
            Some(last) if last.0 == lo => last.2 += b.count,
            _ => out.push((lo, hi, b.count)),
        }
    }
    out
}

/// One line for the session's list of results:
/// "04:12 /dev/sda random read + zone sweep → HDD (p50 8.10 ms, 150 MB/s)".
pub fn summary_line(r: &ProbeResult) -> String {
    let t = r.started_unix % 86_400;
    let mut facts = Vec::new();
    if let Some(p) = r.random.as_ref().and_then(|x| x.latency.p50_ms) {
        facts.push(format!("p50 {}", lat(Some(p))));
    }
    if let Some(m) = r.sweep.as_ref().and_then(|x| x.median_mb_per_s) {
        facts.push(format::rate(m * 1e6));
    }
    format!(
        "{:02}:{:02} {} {}{} → {}{}",
        t / 3600,
        t / 60 % 60,
        r.method.target,
        r.method.tests.label(),
        if r.status == Status::Cancelled {
            " (cancelled)"
        } else {
            ""
        },
        r.verdict.class.label(),
        if facts.is_empty() {
            String::new()
        } else {
            format!(" ({})", facts.join(", "))
        }
    )
}

/// A text bar of `#`s: `v` against `max` on 30 cells (none when either
/// is unknown or 0).
pub fn text_bar(v: Option<f64>, max: f64) -> String {
    let cells = v.filter(|_| max > 0.0).map_or(0, |v| (v / max * 30.0).round() as usize);
    "#".repeat(cells)
}

/// Latency in the most readable unit: "85 µs", "1.25 ms".
pub fn lat(ms: Option<f64>) -> String {
    match ms {
        None => format::NA.to_string(),
        Some(v) if v < 0.01 => format!("{:.1} µs", v * 1000.0),
        Some(v) if v < 1.0 => format!("{:.0} µs", v * 1000.0),
        Some(v) => format!("{} ms", format::ms(v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coarse_histogram_merges_octaves() {
        let b = |lo, count| Bucket {
            lo_ns: lo,
            hi_ns: lo,
            count,
        };
        let c = coarse_histogram(&[b(70_000, 1), b(100_000, 2), b(140_000, 5)]);
        assert_eq!(c, [(65_536, 131_071, 3), (131_072, 262_143, 5)]);
    }
}
