//! CPU time shares over an interval, from two `/proc/stat` samples.

use serde::Serialize;

use crate::collect::system::CpuTimes;

/// CPU time shares over the interval, in percent (iostat's avg-cpu line).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CpuPct {
    pub user: f64,
    pub nice: f64,
    pub system: f64,
    pub iowait: f64,
    pub steal: f64,
    pub idle: f64,
    pub procs_blocked: Option<u32>,
}

/// Shares of each field's own change over the interval. A field that went
/// down (iowait may, see proc(5); a bad capture) counts as 0, and the
/// shares are of the sum of the changes, so they add up to 100 % (when no
/// field goes down this is iostat's Δtotal). `None` when nothing moved.
pub fn cpu_pct(p: &CpuTimes, c: &CpuTimes) -> Option<CpuPct> {
    let d = |a: u64, b: u64| b.saturating_sub(a);
    let user = d(p.user, c.user);
    let nice = d(p.nice, c.nice);
    let system = d(p.system, c.system)
        .saturating_add(d(p.irq, c.irq))
        .saturating_add(d(p.softirq, c.softirq));
    let iowait = d(p.iowait, c.iowait);
    let steal = d(p.steal, c.steal);
    let idle = d(p.idle, c.idle);
    // Summed as floats: counters near u64::MAX (a bad capture) must not
    // saturate the total and leave shares above 100 %.
    let total: f64 = [user, nice, system, iowait, steal, idle]
        .iter()
        .map(|v| *v as f64)
        .sum();
    if total == 0.0 {
        return None;
    }
    let pct = |v: u64| v as f64 / total * 100.0;
    Some(CpuPct {
        user: pct(user),
        nice: pct(nice),
        system: pct(system),
        iowait: pct(iowait),
        steal: pct(steal),
        idle: pct(idle),
        procs_blocked: c.procs_blocked,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(user: u64, system: u64, idle: u64, iowait: u64) -> CpuTimes {
        CpuTimes {
            user,
            system,
            idle,
            iowait,
            ..Default::default()
        }
    }

    #[test]
    fn shares_are_iostats_when_nothing_goes_down() {
        let p = cpu_pct(&t(100, 50, 1000, 10), &t(130, 60, 1050, 20)).unwrap();
        // Δ 30 + 10 + 50 + 10 = 100 ticks.
        assert_eq!((p.user, p.system, p.idle, p.iowait), (30.0, 10.0, 50.0, 10.0));
    }

    #[test]
    fn a_field_that_goes_down_is_clamped_and_shares_add_up_to_100() {
        // iowait fell by 500 (proc(5)): with iostat's Δtotal (100 - 500 +
        // ...) the others' shares would exceed 100 %.
        let p = cpu_pct(&t(100, 50, 1000, 600), &t(160, 80, 1100, 100)).unwrap();
        // Δ 60 + 30 + 100 + 0 = 190 ticks.
        assert_eq!(p.iowait, 0.0);
        assert!((p.user - 60.0 / 190.0 * 100.0).abs() < 1e-9);
        let sum = p.user + p.nice + p.system + p.iowait + p.steal + p.idle;
        assert!((sum - 100.0).abs() < 1e-9, "{sum}");
        // Everything went down (another machine's capture): nothing to say.
        assert_eq!(cpu_pct(&t(100, 50, 1000, 600), &t(1, 1, 1, 1)), None);
        // Counters near u64::MAX do not overflow.
        let big = cpu_pct(&t(0, 0, 0, 0), &t(u64::MAX, u64::MAX, 0, 0)).unwrap();
        assert!((big.user + big.system + big.idle - 100.0).abs() < 1e-6);
    }
}
