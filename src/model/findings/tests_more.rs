//! The rules added after the first seven, on model histories built here:
//! each fires at its threshold, not below, clears with hysteresis and
//! names the right culprit.

use std::sync::Arc;

use super::tests::{device, model, proc_with, rates, rules, step, trace};
use super::*;
use crate::collect::trace::block::Dev;
use crate::model::process::ProcRates;
use crate::model::trace::ProcDevTrace;
use crate::model::{IoPrio, ProcRow};

fn waiting(pid: i32, comm: &str, pct: f64) -> ProcRow {
    proc_with(
        pid,
        comm,
        ProcRates {
            io_wait_pct: Some(pct),
            ..Default::default()
        },
    )
}

/// loop6 under `sched`: `job` issues `job_n` traced requests, a
/// postgres reader (PID 301) `100 - job_n` and waits `wait` IO%.
fn backup(job: (&str, &str, Option<IoPrio>), job_n: u64, wait: f64, sched: &str) -> Model {
    let mut m = model();
    let mut d = device("loop6", 6, None, rates("loop6", 100, 5.0, 1.0, 90.0));
    if let Some(i) = &mut d.info {
        i.scheduler = Some(sched.into());
    }
    m.devices.push(d);
    trace(&mut m, 6, job_n, (0.0, 5.0), (300, job.0), (job_n, 0));
    m.trace.interval.procs.insert(
        (301, Dev { major: 7, minor: 6 }),
        ProcDevTrace {
            comm: "postgres".into(),
            issued: 100 - job_n,
            completed: 100 - job_n,
            ..Default::default()
        },
    );
    let mut j = proc_with(
        300,
        job.0,
        ProcRates {
            io_wait_pct: Some(50.0),
            ..Default::default()
        },
    );
    j.raw.cmdline = job.1.into();
    j.raw.ioprio = job.2;
    m.procs.push(j);
    m.procs.push(waiting(301, "postgres", wait));
    m
}

fn run(e: &mut Engine, m: &Model, from: u64, to: u64) -> Vec<Finding> {
    let mut last = Vec::new();
    for t in from..=to {
        last = step(e, &mut m.clone(), t);
    }
    last
}

const TAR: (&str, &str, Option<IoPrio>) = ("tar", "tar cf /backup/srv.tar /srv", None);

#[test]
fn maintenance_job_at_best_effort_while_a_reader_waits() {
    let be = Some(IoPrio::best_effort(4));
    let mut e = Engine::default();
    let f = run(&mut e, &backup((TAR.0, TAR.1, be), 50, 10.0, "none"), 1, 3);
    assert_eq!(rules(&f), [("maintenance_not_idle", "tar (PID 300)".to_string())]);
    assert_eq!(f[0].evidence[0].value, Some(50.0));
    assert_eq!(
        (f[0].culprits[0].pid, f[0].culprits[1].comm.as_str()),
        (300, "postgres")
    );
    assert!(f[0].text.contains("be/4"), "{}", f[0].text);
    assert!(f[0].next.contains("switch it to bfq"), "{}", f[0].next);
    // Given the idle class, it stops holding and clears 5 s later.
    let idle = backup((TAR.0, TAR.1, Some(IoPrio::IDLE)), 50, 10.0, "none");
    for t in 4..8 {
        assert!(!step(&mut e, &mut idle.clone(), t)[0].holding);
    }
    assert!(step(&mut e, &mut idle.clone(), 8).is_empty());
    // Under bfq the next step is the idle class itself.
    let f = run(
        &mut Engine::default(),
        &backup((TAR.0, TAR.1, be), 90, 40.0, "bfq"),
        1,
        3,
    );
    assert!(f[0].next.contains("ionice -c3 -p 300"), "{}", f[0].next);
}

/// Traced, a device no process issued requests to has no top user: the
/// job and the reader also have files open on an idle loop7 (the job's
/// bytes all go to loop6), and the finding is on loop6 alone.
#[test]
fn maintenance_job_is_not_put_on_an_idle_device_it_has_files_on() {
    use crate::model::procdev::{DevSource, ProcDevice};
    let mut m = backup((TAR.0, TAR.1, Some(IoPrio::best_effort(4))), 50, 10.0, "none");
    m.devices
        .push(device("loop7", 7, None, rates("loop7", 0, 0.0, 0.0, 0.0)));
    for p in &mut m.procs {
        p.devices.push(ProcDevice {
            name: "loop7".into(),
            source: DevSource::OpenFiles,
        });
        if p.raw.key.pid == 300 {
            p.rates = Some(Arc::new(ProcRates {
                read_bps: 4e6,
                io_wait_pct: Some(50.0),
                ..Default::default()
            }));
        }
    }
    let f = run(&mut Engine::default(), &m, 1, 3);
    assert_eq!(rules(&f), [("maintenance_not_idle", "tar (PID 300)".to_string())]);
    assert!(f[0].text.contains("I/O on loop6"), "{}", f[0].text);
}

#[test]
fn maintenance_job_below_its_thresholds_is_not_found() {
    let be = Some(IoPrio::best_effort(4));
    let none = |m: Model| run(&mut Engine::default(), &m, 1, 4).is_empty();
    // 49% of the requests: the reader is the top user.
    assert!(none(backup((TAR.0, TAR.1, be), 49, 90.0, "none")));
    // The reader waits 9.9%: not waiting.
    assert!(none(backup((TAR.0, TAR.1, be), 90, 9.9, "none")));
    // Already idle; unknown priority; not a maintenance job.
    assert!(none(backup((TAR.0, TAR.1, Some(IoPrio::IDLE)), 90, 90.0, "none")));
    assert!(none(backup((TAR.0, TAR.1, None), 90, 90.0, "none")));
    assert!(none(backup(("fio", "fio --name=x", be), 90, 90.0, "none")));
    assert!(none(backup(("cp", "cp a b", be), 90, 90.0, "none")));
    // Unset class (be from nice) counts as best-effort.
    let unset = Some(IoPrio::from_raw(0));
    assert!(!none(backup(("rsync", "rsync -a /srv /mnt", unset), 90, 90.0, "none")));
}

fn vm(refault: f64, sin: f64, sout: f64) -> Model {
    // 4 KiB pages; the refaults are all of the block reads.
    vm_in(refault, refault * 4.0, sin, sout)
}

/// `kib_in` KiB/s read from block devices (pgpgin).
fn vm_in(refault: f64, kib_in: f64, sin: f64, sout: f64) -> Model {
    let mut m = model();
    m.vm = Some(crate::collect::vmstat::VmRates {
        refault_file_per_s: Some(refault),
        pswpin_per_s: Some(sin),
        pswpout_per_s: Some(sout),
        pgmajfault_per_s: Some(5.0),
        pgpgin_kib_per_s: Some(kib_in),
        page_bytes: Some(4096),
        ..Default::default()
    });
    m
}

/// Memory pressure alone: 2,000 refaults/s (8,000 KiB/s) while 32,000
/// KiB/s is read from disk is 25%, a finding; 32,004 KiB/s is below 25%,
/// none (new data read while the cache gives up pages is not a thrash).
#[test]
fn page_cache_thrash_needs_refaults_to_be_a_quarter_of_the_reads() {
    let f = run(&mut Engine::default(), &vm_in(2000.0, 32_000.0, 0.0, 0.0), 1, 3);
    assert_eq!(rules(&f), [("page_cache_thrash", "system".to_string())]);
    assert_eq!(f[0].evidence[1].value, Some(25.0));
    assert_eq!(f[0].evidence[2].value, Some(32_000.0 * 1024.0));
    assert!(
        f[0].text.contains("(25% of what is read from block devices)"),
        "{}",
        f[0].text
    );
    assert!(run(&mut Engine::default(), &vm_in(2000.0, 32_004.0, 0.0, 0.0), 1, 5).is_empty());
    // 1,000 refaults/s with 400 MB/s of new data: memory pressure, no finding.
    assert!(run(&mut Engine::default(), &vm_in(1000.0, 400_000.0, 0.0, 0.0), 1, 5).is_empty());
    // Nothing read from block devices (an NFS or FUSE file's pages): the
    // refaults are all that is read; the share is n/a.
    let f = run(&mut Engine::default(), &vm_in(1500.0, 0.0, 0.0, 0.0), 1, 3);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].evidence[1].value, None);
    // No page size or no pgpgin (an older recording): not judged.
    let mut old = vm(5000.0, 0.0, 0.0);
    if let Some(v) = old.vm.as_mut() {
        v.page_bytes = None;
    }
    assert!(run(&mut Engine::default(), &old, 1, 5).is_empty());
}

/// Refaults with no task stalled on memory are proactive reclaim's (a
/// VM's DAMON paging out cold memory): no thrash. A stall of 0.05% of the
/// interval or more is; without PSI the refaults alone decide.
#[test]
fn page_cache_thrash_needs_a_memory_stall_where_psi_tells() {
    let with_stall = |pct: Option<f64>| {
        let mut m = vm(6500.0, 0.0, 0.0);
        if let Some(v) = m.vm.as_mut() {
            v.mem_stall_pct = pct;
        }
        m
    };
    assert!(run(&mut Engine::default(), &with_stall(Some(0.0)), 1, 5).is_empty());
    assert!(run(&mut Engine::default(), &with_stall(Some(0.049)), 1, 5).is_empty());
    let f = run(&mut Engine::default(), &with_stall(Some(0.7)), 1, 3);
    assert_eq!(rules(&f), [("page_cache_thrash", "system".to_string())]);
    let stall = f[0].evidence.iter().find(|e| e.name == "memory stall").map(|e| e.value);
    assert_eq!(stall, Some(Some(0.7)));
    assert_eq!(run(&mut Engine::default(), &with_stall(Some(0.05)), 1, 3).len(), 1);
    assert_eq!(run(&mut Engine::default(), &with_stall(None), 1, 3).len(), 1);
}

#[test]
fn page_cache_thrash_at_1000_refaults_names_the_top_reader() {
    let mut at = vm(1000.0, 0.0, 0.0);
    let reader = |pid, comm, bps| {
        proc_with(
            pid,
            comm,
            ProcRates {
                read_bps: bps,
                ..Default::default()
            },
        )
    };
    at.procs.push(reader(40, "postgres", 8e6));
    at.procs.push(reader(41, "grep", 2e7));
    let mut e = Engine::default();
    let f = run(&mut e, &at, 1, 3);
    assert_eq!(rules(&f), [("page_cache_thrash", "system".to_string())]);
    assert_eq!(f[0].evidence[0].value, Some(1000.0));
    assert_eq!((f[0].culprits[0].comm.as_str(), f[0].culprits[1].pid), ("grep", 40));
    let quiet = vm(999.0, 0.0, 0.0);
    for t in 4..8 {
        assert!(!step(&mut e, &mut quiet.clone(), t)[0].holding);
    }
    assert!(step(&mut e, &mut quiet.clone(), 8).is_empty());
    assert!(run(&mut Engine::default(), &quiet, 1, 5).is_empty());
    // No vmstat: nothing judged.
    assert!(run(&mut Engine::default(), &model(), 1, 5).is_empty());
}

#[test]
fn swapping_at_256_pages_critical_at_2560_in() {
    let f = run(&mut Engine::default(), &vm(0.0, 56.0, 200.0), 1, 3);
    assert_eq!(rules(&f), [("swapping", "system".to_string())]);
    assert_eq!(f[0].severity, Severity::Warning);
    assert_eq!(
        (f[0].evidence[0].value, f[0].evidence[1].value),
        (Some(56.0), Some(200.0))
    );
    assert!(run(&mut Engine::default(), &vm(0.0, 55.0, 200.0), 1, 5).is_empty());
    let f = run(&mut Engine::default(), &vm(0.0, 2560.0, 0.0), 1, 3);
    assert_eq!(f[0].severity, Severity::Critical);
    // Clears 5 s after the swapping stopped.
    let mut e = Engine::default();
    run(&mut e, &vm(0.0, 300.0, 0.0), 1, 3);
    let idle = vm(0.0, 0.0, 0.0);
    assert!(!run(&mut e, &idle, 4, 7)[0].holding);
    assert!(step(&mut e, &mut idle.clone(), 8).is_empty());
    // A counter the kernel lacks: not judged.
    let mut m = vm(0.0, 5000.0, 0.0);
    if let Some(v) = &mut m.vm {
        v.pswpout_per_s = None;
    }
    assert!(run(&mut Engine::default(), &m, 1, 5).is_empty());
}

fn blocked(pid: i32, mount: Option<&str>) -> crate::model::BlockedTask {
    crate::model::BlockedTask {
        pid,
        wchan: "request_wait_answer".into(),
        class: "FUSE".into(),
        mount: mount.map(Into::into),
        fs_type: mount.map(|_| "fuse.hangfs".into()),
        basis: mount.map(|_| "the only FUSE mount".into()),
    }
}

/// `ls` (PID 60) blocked on /mnt/h; `calls` read calls per second completed.
fn hung(calls: f64, mount: Option<&str>) -> Model {
    let mut m = model();
    let mut p = proc_with(
        60,
        "ls",
        ProcRates {
            syscr_per_s: calls,
            ..Default::default()
        },
    );
    p.raw.state = 'D';
    m.procs.push(p);
    m.procs.push(proc_with(61, "bash", ProcRates::default()));
    m.blocked.push(blocked(60, mount));
    m
}

#[test]
fn hung_mount_after_5_s_without_a_completed_call() {
    let mut e = Engine::default();
    let m = hung(0.0, Some("/mnt/h"));
    assert!(run(&mut e, &m, 1, 4).is_empty());
    let f = step(&mut e, &mut m.clone(), 5);
    assert_eq!(rules(&f), [("hung_mount", "/mnt/h".to_string())]);
    assert_eq!(f[0].severity, Severity::Critical);
    assert_eq!((f[0].culprits.len(), f[0].culprits[0].comm.as_str()), (1, "ls"));
    assert!(f[0].text.contains("request_wait_answer"), "{}", f[0].text);
    // It answers again (the task completes calls): cleared after 5 s.
    let ok = hung(1.0, Some("/mnt/h"));
    assert!(!run(&mut e, &ok, 6, 9)[0].holding);
    assert!(step(&mut e, &mut ok.clone(), 10).is_empty());
    // A slow mount whose caller completes a call per second: never hung.
    assert!(run(&mut Engine::default(), &ok, 1, 10).is_empty());
    // Mount unknown: named by its kind.
    let f = run(&mut Engine::default(), &hung(0.0, None), 1, 5);
    assert_eq!(rules(&f), [("hung_mount", "a FUSE mount".to_string())]);
    // Blocked, but no rates yet (first sample of the process): not judged.
    let mut first = hung(0.0, Some("/mnt/h"));
    first.procs[0].rates = None;
    assert!(run(&mut Engine::default(), &first, 1, 6).is_empty());
}

/// /backup.slice limited to 10 MB/s read on loop7, reading `bps` over the
/// window; its member tar (PID 70) waits `wait` IO%.
fn limited(bps: f64, wait: f64) -> Model {
    use crate::model::cgroup::{CgDevice, CgRates, CgroupRow, CgroupView, DevId, Limits};
    let mut m = model();
    let lim = Limits {
        rbps: Some(10_000_000),
        ..Default::default()
    };
    let mut row = CgroupRow::example("/backup.slice", bps, vec![70]);
    let r = CgRates {
        read_bps: bps,
        write_bps: 0.0,
        read_iops: Some(100.0),
        write_iops: Some(0.0),
    };
    row.devices.push(CgDevice {
        device: "loop7".into(),
        dev: DevId { major: 7, minor: 7 },
        in_total: false,
        rates: Some(r),
        discard_bps: None,
        window_rates: Some(r),
        iocost: None,
        bfq: None,
        limits: lim,
        effective_limits: lim,
        at_limit: None,
        at_limits: Vec::new(),
    });
    m.cgroups = Some(CgroupView {
        rows: vec![row],
        ..Default::default()
    });
    let mut p = waiting(70, "tar", wait);
    if let Some(r) = p.rates.as_mut().map(Arc::make_mut) {
        r.read_bps = bps;
    }
    m.procs.push(p);
    m.procs.push(waiting(71, "sshd", 50.0));
    m
}

#[test]
fn cgroup_at_90_percent_of_its_limit_with_a_waiting_member() {
    let mut e = Engine::default();
    let at = limited(9_000_000.0, 10.0);
    assert!(step(&mut e, &mut at.clone(), 1).is_empty());
    let f = step(&mut e, &mut at.clone(), 2);
    assert_eq!(rules(&f), [("cgroup_at_limit", "/backup.slice".to_string())]);
    assert!((f[0].evidence[0].value.unwrap() - 90.0).abs() < 1e-9);
    assert_eq!(f[0].evidence[1].value, Some(10_000_000.0));
    // The member doing the I/O, not sshd (outside the cgroup).
    assert_eq!(f[0].culprits.iter().map(|c| c.pid).collect::<Vec<_>>(), [70]);
    assert!(f[0].text.contains("rbps limit on loop7"), "{}", f[0].text);
    let below = limited(8_990_000.0, 90.0);
    assert!(!run(&mut e, &below, 3, 6)[0].holding);
    assert!(step(&mut e, &mut below.clone(), 7).is_empty());
    assert!(run(&mut Engine::default(), &below, 1, 5).is_empty());
    // At the limit but nobody waits (IO% 9.9, no pressure): not a finding.
    assert!(run(&mut Engine::default(), &limited(10_000_000.0, 9.9), 1, 5).is_empty());
    // ... unless the cgroup's io pressure is at 10%.
    let mut psi = limited(10_000_000.0, 0.0);
    if let Some(v) = &mut psi.cgroups {
        v.rows[0].pressure = Some(crate::model::cgroup::CgPressure {
            some: None,
            full: None,
            some_pct: Some(10.0),
            full_pct: None,
        });
    }
    assert_eq!(run(&mut Engine::default(), &psi, 1, 2).len(), 1);
}

/// loop2 with `n` flushes in the interval, submitted by `by` (PID 90);
/// fio (PID 91) writes 4 MB through it.
fn flushing(n: u64, by: &str) -> Model {
    let mut m = model();
    m.devices
        .push(device("loop2", 2, None, rates("loop2", 100, 1.0, 0.5, 50.0)));
    trace(&mut m, 2, 10, (0.0, 1.0), (92, "cat"), (0, 0));
    let dev = Dev { major: 7, minor: 2 };
    if let Some(d) = m.trace.interval.devices.get_mut(&dev) {
        d.completed[3] = n;
        d.completed[1] = n;
    }
    let row = |comm: &str, flushes, write_bytes| ProcDevTrace {
        comm: comm.into(),
        flushes,
        write_bytes,
        ..Default::default()
    };
    m.trace.interval.procs.insert((90, dev), row(by, n, 0));
    m.trace.interval.procs.insert((91, dev), row("fio", 0, 4_000_000));
    m
}

#[test]
fn sync_heavy_at_50_flushes_names_the_writer_behind_jbd2() {
    let mut e = Engine::default();
    let f = run(&mut e, &flushing(50, "jbd2/loop2-8"), 1, 3);
    assert_eq!(rules(&f), [("sync_heavy", "loop2".to_string())]);
    assert_eq!(f[0].evidence[0].value, Some(50.0));
    // jbd2 submits; fio, writing on the device, is named.
    assert_eq!(f[0].culprits.iter().map(|c| c.pid).collect::<Vec<_>>(), [91]);
    assert!(f[0].text.contains("jbd2/loop2-8"), "{}", f[0].text);
    let below = flushing(49, "jbd2/loop2-8");
    assert!(!run(&mut e, &below, 4, 7)[0].holding);
    assert!(step(&mut e, &mut below.clone(), 8).is_empty());
    assert!(run(&mut Engine::default(), &below, 1, 5).is_empty());
    // A process flushing itself (fdatasync on a raw device) is named.
    let f = run(&mut Engine::default(), &flushing(80, "postgres"), 1, 3);
    assert_eq!((f[0].culprits[0].pid, f[0].culprits[0].comm.as_str()), (90, "postgres"));
    // Untraced: nothing judged.
    let mut off = flushing(500, "postgres");
    off.trace.active = false;
    assert!(run(&mut Engine::default(), &off, 1, 5).is_empty());
}

/// fio through io_uring whose requests all came from its io-wq worker
/// (`iou-wrk-812`, a thread of fio, PID 812): the slow device's culprit
/// is fio (PID 812), named from its process row, not the worker thread.
#[test]
fn an_io_uring_worker_is_named_by_its_process() {
    let mut e = Engine::default();
    let mut f = Vec::new();
    for t in 1..=3 {
        let mut m = model();
        m.devices
            .push(device("loop3", 3, Some(true), rates("loop3", 50, 20.0, 1.0, 100.0)));
        m.procs.push(proc_with(812, "fio", ProcRates::default()));
        let mut traced = Model::default();
        trace(&mut traced, 3, 50, (0.01, 20.0), (812, "iou-wrk-812"), (0, 0));
        m.apply_trace(std::mem::take(&mut traced.trace));
        f = step(&mut e, &mut m, t);
    }
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!((f[0].culprits[0].pid, f[0].culprits[0].comm.as_str()), (812, "fio"));
    assert!(
        f[0].text.contains("fio (PID 812)") && !f[0].text.contains("iou-wrk"),
        "{}",
        f[0].text
    );
}

/// fio's 4 KiB reads at QD 1 (O_DIRECT): 20,000 calls/s of 4096 B, each
/// a traced device request — the device sets the pace, not tiny calls;
/// with 9,999 requests/s (below half the calls) it is judged, and a
/// process waiting on I/O 50% of the time (IO%) is not.
#[test]
fn tiny_syscalls_not_when_each_call_is_a_device_request() {
    let run = |requests: u64, io_wait: Option<f64>| {
        let mut e = Engine::default();
        let mut m = model();
        let mut p = super::tests::calls(812, 20_000.0, 4096.0);
        Arc::make_mut(p.rates.as_mut().unwrap()).io_wait_pct = io_wait;
        m.procs.push(p);
        m.devices
            .push(device("loop3", 3, None, rates("loop3", requests, 0.05, 0.01, 100.0)));
        trace(&mut m, 3, requests, (0.01, 0.05), (812, "fio"), (0, 0));
        (1..=3).map(|t| step(&mut e, &mut m, t)).last().unwrap_or_default()
    };
    let tiny = |f: &[Finding]| f.iter().filter(|f| f.rule == "tiny_syscalls").count();
    assert_eq!(tiny(&run(10_000, None)), 0, "each call a device request");
    assert_eq!(tiny(&run(9_999, None)), 1, "fewer requests than half the calls");
    assert_eq!(tiny(&run(0, Some(50.0))), 0, "IO% 50");
    assert_eq!(tiny(&run(0, Some(49.9))), 1, "IO% 49.9");
}

/// A sampled interval (share 0.3): the traced evidence carries the share
/// and reads "~… (sampled 30%)", the text says so, the /proc evidence is
/// left as it is; whole (share 1), nothing is marked.
#[test]
fn traced_evidence_of_a_sampled_interval_is_marked() {
    use crate::model::trace::window::Share;
    let run = |share: f64| {
        let mut m = model();
        m.devices
            .push(device("loop5", 5, None, rates("loop5", 10, 1.0, 0.1, 5.0)));
        trace(&mut m, 5, 10, (0.0, 1.0), (77, "cat"), (0, 1));
        m.trace.interval.share = Share(share);
        step(&mut Engine::default(), &mut m, 1)
    };
    let f = run(0.3);
    assert_eq!(rules(&f), [("io_errors", "loop5".to_string())]);
    let e: Vec<(&str, Option<f64>)> = f[0].evidence.iter().map(|e| (e.name, e.trace_share)).collect();
    assert_eq!(e, [("failed requests", Some(0.3)), ("completed requests", Some(0.3))]);
    assert!(f[0].text.ends_with(" (traced figures sampled 30%)"), "{}", f[0].text);
    assert_eq!(
        crate::present::findings::evidence_text(&f[0].evidence[0]),
        "failed requests: ~1.0 (sampled 30%)  (traced block_rq_complete with an error)"
    );
    let j = crate::present::findings::json(&f[0]);
    assert_eq!(j["evidence"][0]["trace_share"], 0.3);
    let whole = run(1.0);
    assert!(whole[0].evidence.iter().all(|e| e.trace_share.is_none()));
    assert!(!whole[0].text.contains("sampled"), "{}", whole[0].text);
    assert_eq!(
        crate::present::findings::evidence_text(&whole[0].evidence[0]),
        "failed requests: 1.0  (traced block_rq_complete with an error)"
    );
    // an untraced source that names the trace is not taken for one
    assert!(!Evidence::new("await", Some(1.0), "ms", "/proc/diskstats await (untraced)").is_traced());
    assert!(Evidence::new("share", Some(1.0), "%", "requests (traced)").is_traced());
}
