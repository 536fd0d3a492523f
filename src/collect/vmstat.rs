//! `/proc/vmstat`: the few counters the findings read — refaults of file
//! pages (the page cache's working set does not fit) against the KiB read
//! from block devices (`pgpgin`), and pages swapped in and out, cumulative
//! since boot (the model takes rates) — and two gauges: the dirty pages
//! and the threshold the dirty throttle holds them to. Beside it, the
//! time tasks stalled on memory (`/proc/pressure/memory` some), which
//! tells eviction under pressure from proactive reclaim.

use serde::{Deserialize, Serialize};

use super::Reader;

/// The counters read; `None` where the kernel has no such line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct VmStat {
    /// Refaults of evicted file pages: `workingset_refault_file` (Linux
    /// 5.9+), else `workingset_refault` (before 5.9 only file pages were
    /// counted).
    pub refault_file: Option<u64>,
    /// Pages swapped in (`pswpin`) and out (`pswpout`).
    pub pswpin: Option<u64>,
    pub pswpout: Option<u64>,
    /// Major page faults (`pgmajfault`).
    pub pgmajfault: Option<u64>,
    /// Dirty pages now (`nr_dirty`) and the system's dirty threshold
    /// (`nr_dirty_threshold`, pages: the limit writers are throttled
    /// towards, from vm.dirty_ratio or vm.dirty_bytes).
    pub nr_dirty: Option<u64>,
    pub nr_dirty_threshold: Option<u64>,
    /// KiB read from block devices (`pgpgin`: the kernel counts read
    /// sectors / 2).
    pub pgpgin: Option<u64>,
    /// The page size in bytes (refaults count pages), set by [`read`];
    /// `None` in recordings made before it was kept.
    pub page_bytes: Option<u64>,
    /// Time some task stalled on memory, µs (`/proc/pressure/memory` some
    /// total), set by [`read`]; `None` without PSI and in recordings made
    /// before it was kept.
    pub mem_stall_us: Option<u64>,
}

/// Parse vmstat text ("name value" per line). Unknown and malformed lines
/// are skipped; the caller bounds the read.
pub fn parse(buf: &[u8]) -> VmStat {
    let mut v = VmStat::default();
    let mut old_refault = None;
    for line in buf.split(|&c| c == b'\n') {
        let mut f = line.split(|&c| c == b' ').filter(|f| !f.is_empty());
        let (Some(name), Some(val), None) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let Some(val) = std::str::from_utf8(val).ok().and_then(|s| s.parse::<u64>().ok()) else {
            continue;
        };
        match name {
            b"workingset_refault_file" => v.refault_file = Some(val),
            b"workingset_refault" => old_refault = Some(val),
            b"pswpin" => v.pswpin = Some(val),
            b"pswpout" => v.pswpout = Some(val),
            b"pgmajfault" => v.pgmajfault = Some(val),
            b"nr_dirty" => v.nr_dirty = Some(val),
            b"nr_dirty_threshold" => v.nr_dirty_threshold = Some(val),
            b"pgpgin" => v.pgpgin = Some(val),
            _ => {}
        }
    }
    v.refault_file = v.refault_file.or(old_refault);
    v
}

/// Read `/proc/vmstat`; a failure goes to `errors` (a missing file says
/// nothing: no procfs vmstat).
pub fn read(r: &mut Reader, errors: &mut Vec<String>) -> Option<VmStat> {
    // No PSI (a kernel without CONFIG_PSI, or psi=0) leaves the stall
    // unknown; the file cannot be read only where PSI is off.
    let mem_stall_us = r
        .read("/proc/pressure/memory")
        .ok()
        .and_then(|b| super::system::parse_pressure(b).some)
        .map(|l| l.total_us);
    match r.read("/proc/vmstat") {
        Ok(b) => Some(VmStat {
            page_bytes: u64::try_from(rustix::param::page_size()).ok(),
            mem_stall_us,
            ..parse(b)
        }),
        Err(e) if e.error.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            errors.push(e.to_string());
            None
        }
    }
}

/// Per-second rates of two samples' counters `dt_s` apart; a counter
/// missing from either, or gone backwards, is `None`. The gauges are the
/// later sample's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct VmRates {
    pub refault_file_per_s: Option<f64>,
    pub pswpin_per_s: Option<f64>,
    pub pswpout_per_s: Option<f64>,
    pub pgmajfault_per_s: Option<f64>,
    /// `nr_dirty` and `nr_dirty_threshold` (pages).
    pub dirty_pages: Option<u64>,
    pub dirty_threshold_pages: Option<u64>,
    /// KiB read from block devices per second (`pgpgin`).
    pub pgpgin_kib_per_s: Option<f64>,
    /// The page size in bytes, where known.
    pub page_bytes: Option<u64>,
    /// Share of the interval some task stalled on memory, %.
    pub mem_stall_pct: Option<f64>,
}

pub fn rates(prev: &VmStat, cur: &VmStat, dt_s: f64) -> Option<VmRates> {
    if dt_s <= 0.0 {
        return None;
    }
    let r = |a: Option<u64>, b: Option<u64>| Some(b?.checked_sub(a?)? as f64 / dt_s);
    Some(VmRates {
        refault_file_per_s: r(prev.refault_file, cur.refault_file),
        pswpin_per_s: r(prev.pswpin, cur.pswpin),
        pswpout_per_s: r(prev.pswpout, cur.pswpout),
        pgmajfault_per_s: r(prev.pgmajfault, cur.pgmajfault),
        dirty_pages: cur.nr_dirty,
        dirty_threshold_pages: cur.nr_dirty_threshold,
        pgpgin_kib_per_s: r(prev.pgpgin, cur.pgpgin),
        page_bytes: cur.page_bytes,
        mem_stall_pct: r(prev.mem_stall_us, cur.mem_stall_us).map(|us| (us / 1e4).min(100.0)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

    #[test]
    fn counters_of_this_kernel_and_of_one_before_5_9() {
        let b = std::fs::read(format!("{FIX}/vmstat-6.18")).unwrap();
        let v = parse(&b);
        assert_eq!(v.refault_file, Some(15_007_728));
        assert_eq!((v.pswpin, v.pswpout, v.pgmajfault), (Some(0), Some(0), Some(139_941)));
        assert_eq!((v.nr_dirty, v.nr_dirty_threshold), (Some(68_727), Some(1_062_293)));
        assert_eq!(v.pgpgin, Some(1_185_638_057));
        let b = std::fs::read(format!("{FIX}/vmstat-5.4")).unwrap();
        let v = parse(&b);
        assert_eq!((v.refault_file, v.pswpin, v.pswpout), (Some(777), Some(12), Some(34)));
    }

    #[test]
    fn odd_lines_are_skipped_and_rates_need_both_counters() {
        let v = parse(b"pswpin x\npswpout 1 2\nworkingset_refault_file\n\xff 3\npgmajfault 18446744073709551615\n");
        assert_eq!(
            v,
            VmStat {
                pgmajfault: Some(u64::MAX),
                ..Default::default()
            }
        );
        let a = VmStat {
            refault_file: Some(100),
            pswpin: Some(5),
            ..Default::default()
        };
        let b = VmStat {
            refault_file: Some(300),
            pswpin: Some(4),
            pswpout: Some(9),
            ..Default::default()
        };
        let r = rates(&a, &b, 2.0).unwrap();
        assert_eq!(r.refault_file_per_s, Some(100.0));
        assert_eq!((r.dirty_pages, r.dirty_threshold_pages), (None, None));
        assert_eq!((r.pswpin_per_s, r.pswpout_per_s), (None, None));
        assert_eq!(rates(&a, &b, 0.0), None);
        assert_eq!(r.mem_stall_pct, None);
        // 20 ms of memory stall over 2 s: 1% of the interval.
        let (a, b) = (
            VmStat {
                mem_stall_us: Some(1_000),
                ..a
            },
            VmStat {
                mem_stall_us: Some(21_000),
                ..b
            },
        );
        assert_eq!(rates(&a, &b, 2.0).unwrap().mem_stall_pct, Some(1.0));
    }
}
