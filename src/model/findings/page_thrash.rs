//! Page cache thrash: file pages evicted from the page cache are read back
//! soon after (`workingset_refault_file` of `/proc/vmstat`: a refault is a
//! fault on a page whose eviction the kernel remembers as recent, so the
//! working set does not fit in the memory left for the cache). Refaults
//! are not counted per process: the processes named are the top readers
//! from disk, the likely victims, not a measured share. Pages evicted by
//! proactive reclaim (DAMON's pageout, `memory.reclaim`) refault as well
//! while memory is plentiful and nothing waits on it: a thrash also needs
//! tasks stalled on memory (`/proc/pressure/memory` some), where PSI is on.

use serde::{Deserialize, Serialize};

use super::cfg::ON_S;
use super::{CULPRITS, Candidate, Culprit, Evidence, Severity, Subject, culprit_list};
use crate::model::Model;

pub const ID: &str = "page_cache_thrash";

/// File-page refaults per second at or above which the cache thrashes
/// (1,000 pages/s: about 4 MiB/s read again at 4 KiB pages).
pub const MIN_REFAULTS_PER_S: f64 = 1000.0;
/// Refaulted bytes (refaults × the page size) at least this share of the
/// bytes read from block devices (`pgpgin`), %: a quarter of the reads
/// are pages read again a moment after they were evicted.
pub const MIN_REFAULT_SHARE_PCT: f64 = 25.0;
/// Memory stall (PSI memory some) at least this share of the interval, %:
/// reading back a page evicted from the working set, and reclaim under a
/// memory limit, stall the task (a 128 MiB memory cgroup re-reading a
/// 200 MiB file here: 0.7%); refaults after proactive reclaim do not
/// (0 µs over 496,000 refaults on a VM whose DAMON pages out cold memory).
pub const MIN_MEM_STALL_PCT: f64 = 0.05;

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct PageThrashCfg {
    pub on_s: f64,
    pub min_refaults_per_s: f64,
    pub min_refault_share_pct: f64,
    pub min_mem_stall_pct: f64,
}

impl Default for PageThrashCfg {
    fn default() -> Self {
        PageThrashCfg {
            on_s: ON_S,
            min_refaults_per_s: MIN_REFAULTS_PER_S,
            min_refault_share_pct: MIN_REFAULT_SHARE_PCT,
            min_mem_stall_pct: MIN_MEM_STALL_PCT,
        }
    }
}

/// The user processes reading most from disk (read_bytes/s), at most `n`.
pub(crate) fn top_readers(m: &Model, n: usize) -> Vec<Culprit> {
    let mut v: Vec<Culprit> = m
        .procs
        .iter()
        .filter(|p| p.worker.is_none() && !p.exited && !p.raw.cmdline.is_empty())
        .filter_map(|p| {
            let r = p.rates.as_deref()?.read_bps;
            (r > 0.0).then(|| Culprit {
                pid: p.raw.key.pid,
                comm: p.raw.comm.to_string(),
                value: r,
                unit: "B/s read from disk (read_bytes; refaults are not counted per process)",
            })
        })
        .collect();
    v.sort_by(|a, b| b.value.total_cmp(&a.value).then(a.pid.cmp(&b.pid)));
    v.truncate(n);
    v
}

pub fn eval(m: &Model, c: &PageThrashCfg, out: &mut Vec<Candidate>) {
    let Some(vm) = &m.vm else { return };
    let Some(refaults) = vm.refault_file_per_s.filter(|r| *r >= c.min_refaults_per_s) else {
        return;
    };
    // Refaulted bytes against the bytes read from block devices: unknown
    // (no page size, no pgpgin) is not judged. Nothing read from a block
    // device (a network or FUSE filesystem's pages) leaves the refaults
    // the whole of what is read: the share is n/a, the condition holds.
    let (Some(page), Some(kib_in)) = (vm.page_bytes, vm.pgpgin_kib_per_s) else {
        return;
    };
    let refault_bytes = refaults * page as f64;
    let in_bytes = kib_in * 1024.0;
    if refault_bytes < in_bytes * c.min_refault_share_pct / 100.0 {
        return;
    }
    // No task waited on memory: the pages were evicted by proactive
    // reclaim, not for want of memory. Without PSI, not known: judged on
    // the refaults alone.
    if vm.mem_stall_pct.is_some_and(|s| s < c.min_mem_stall_pct) {
        return;
    }
    let share = (in_bytes > 0.0).then(|| refault_bytes / in_bytes * 100.0);
    let culprits = top_readers(m, CULPRITS);
    let readers = if culprits.is_empty() {
        "no process reads from disk".to_string()
    } else {
        format!("the top readers from disk: {}", culprit_list(&culprits))
    };
    out.push(Candidate {
        rule: ID,
        severity: Severity::Warning,
        subject: Subject::System,
        evidence: vec![
            Evidence::new("file refaults", Some(refaults), "pages/s", "/proc/vmstat workingset_refault_file, Δ over the interval"),
            Evidence::new(
                "refaults of the reads",
                share,
                "%",
                "workingset_refault_file × page size over pgpgin (KiB read from block devices), /proc/vmstat",
            ),
            Evidence::new("read from block devices", Some(in_bytes), "B/s", "/proc/vmstat pgpgin, Δ over the interval"),
            Evidence::new("major faults", vm.pgmajfault_per_s, "1/s", "/proc/vmstat pgmajfault, Δ over the interval"),
            Evidence::new("memory stall", vm.mem_stall_pct, "%", "/proc/pressure/memory some total, Δ over the interval"),
            Evidence::new(
                "memory",
                m.mem.map(|x| x.total_bytes as f64),
                "B",
                "/proc/meminfo MemTotal",
            ),
        ],
        text: format!(
            "The page cache thrashes: {refaults:.0} file pages per second are read back soon after being evicted ({}), so the working set does not fit in memory; {readers}.",
            share.map_or("nothing is read from block devices: a network or FUSE filesystem's pages".to_string(), |s| format!("{s:.0}% of what is read from block devices"))
        ),
        culprits,
        next: "find what fills the memory (sort by RSS in top, or cgroup memory.stat workingset_refault_file per cgroup); add memory, shrink the working set, or give the reader a memory.low".into(),
    });
}
