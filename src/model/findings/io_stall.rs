//! The box stalls on I/O: PSI io "full" (the share of time every non-idle
//! task waited on I/O at once, from Δtotal of `/proc/pressure/io` over the
//! interval) is high while several user processes wait (IO% from delay
//! accounting, else tasks in state D), naming the top waiters. A lone
//! process doing synchronous I/O on an idle box makes "full" high by
//! itself (it is every non-idle task): that alone is not a stall.

use serde::{Deserialize, Serialize};

use super::cfg::ON_S;
use super::{CULPRITS, Candidate, Culprit, Evidence, Severity, Subject, culprit_list};
use crate::model::Model;

pub const ID: &str = "io_stall";

/// PSI io full share of the interval at or above which the box stalls, %.
pub const FULL_PCT: f64 = 10.0;
/// ... at or above which the finding is critical, %.
pub const CRITICAL_PCT: f64 = 50.0;
/// User processes that must be waiting on I/O.
pub const MIN_WAITERS: f64 = 2.0;
/// IO% (delay accounting) at or above which a process is waiting.
pub const WAIT_PCT: f64 = 10.0;

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct IoStallCfg {
    pub on_s: f64,
    pub full_pct: f64,
    pub critical_pct: f64,
    pub min_waiters: f64,
    pub wait_pct: f64,
}

impl Default for IoStallCfg {
    fn default() -> Self {
        IoStallCfg {
            on_s: ON_S,
            full_pct: FULL_PCT,
            critical_pct: CRITICAL_PCT,
            min_waiters: MIN_WAITERS,
            wait_pct: WAIT_PCT,
        }
    }
}

/// The previous sample's PSI totals (µs) and its time, and the last
/// interval's "some" share.
#[derive(Debug, Clone, Copy, Default)]
pub struct PsiState {
    prev: Option<(u64, Option<u64>, Option<u64>)>,
    some_pct: Option<f64>,
}

impl PsiState {
    /// PSI io "some" over the last interval, % (after [`eval`]).
    pub fn some_pct(&self) -> Option<f64> {
        self.some_pct
    }
}

fn share(prev: Option<u64>, cur: Option<u64>, dt_us: f64) -> Option<f64> {
    let d = cur?.checked_sub(prev?)?;
    (dt_us > 0.0).then(|| (d as f64 / dt_us * 100.0).min(100.0))
}

/// User processes waiting on I/O, most waiting first: IO% where delay
/// accounting gives it, else state D (value 100).
fn waiters(m: &Model, c: &IoStallCfg) -> (Vec<Culprit>, &'static str) {
    let user = m.procs.iter().filter(|p| !p.exited && !p.raw.cmdline.is_empty());
    let accounted = super::delay_accounted(m);
    let mut v: Vec<Culprit> = if accounted {
        user.filter_map(|p| {
            let w = p.rates.as_ref()?.io_wait_pct?;
            (w >= c.wait_pct).then(|| Culprit {
                pid: p.raw.key.pid,
                comm: p.raw.comm.to_string(),
                value: w,
                unit: "% IO wait (delay accounting)",
            })
        })
        .collect()
    } else {
        user.filter(|p| p.raw.state == 'D')
            .map(|p| Culprit {
                pid: p.raw.key.pid,
                comm: p.raw.comm.to_string(),
                value: 1.0,
                unit: "in state D",
            })
            .collect()
    };
    v.sort_by(|a, b| b.value.total_cmp(&a.value).then(a.pid.cmp(&b.pid)));
    (
        v,
        if accounted {
            "IO% (delay accounting)"
        } else {
            "tasks in state D"
        },
    )
}

pub fn eval(m: &Model, st: &mut PsiState, c: &IoStallCfg, out: &mut Vec<Candidate>) {
    let cur = m
        .psi
        .map(|p| (m.mono_ns, p.some.map(|l| l.total_us), p.full.map(|l| l.total_us)));
    let prev = std::mem::replace(&mut st.prev, cur);
    st.some_pct = None;
    let (Some((t0, some0, full0)), Some((t1, some1, full1))) = (prev, cur) else {
        return;
    };
    let dt_us = t1.saturating_sub(t0) as f64 / 1e3;
    st.some_pct = share(some0, some1, dt_us);
    let Some(full) = share(full0, full1, dt_us) else { return };
    if full < c.full_pct {
        return;
    }
    let (mut culprits, basis) = waiters(m, c);
    let n = culprits.len();
    if (n as f64) < c.min_waiters {
        return;
    }
    culprits.truncate(CULPRITS);
    out.push(Candidate {
        rule: ID,
        severity: if full >= c.critical_pct { Severity::Critical } else { Severity::Warning },
        subject: Subject::System,
        evidence: vec![
            Evidence::new("io full", Some(full), "%", "/proc/pressure/io full total, Δ over the interval"),
            Evidence::new("io some", share(some0, some1, dt_us), "%", "/proc/pressure/io some total, Δ over the interval"),
            Evidence::new("waiting processes", Some(n as f64), "", basis),
        ],
        text: format!(
            "The box stalls on I/O: for {full:.0}% of the last interval every running task waited on I/O; {n} processes wait ({basis}), most: {}.",
            culprit_list(&culprits)
        ),
        culprits,
        next: "D for delay accounting (IO%), then sort the processes by IO% and Enter on the top waiter".into(),
    });
}
