use super::*;
use crate::collect::trace::block::{Kind, Rwbs};

const D: Dev = Dev { major: 7, minor: 0 };

fn ev(ts: u64, kind: Kind, rwbs: &str, sector: u64, sectors: u32, pid: i32) -> BlockEvent {
    let mut comm = [0u8; 16];
    comm[..4].copy_from_slice(b"test");
    BlockEvent {
        ts,
        kind,
        dev: D,
        sector,
        sectors,
        rwbs: Rwbs::parse(rwbs.as_bytes()),
        pid,
        comm,
        error: 0,
        tgid: if kind == Kind::Start { pid } else { 0 },
        kernel: false,
    }
}

fn run(events: &[BlockEvent]) -> (TraceInterval, Vec<Request>) {
    let mut t = Accumulator::default();
    t.feed(events);
    let log = t.log().copied().collect();
    (t.take_interval(), log)
}

#[test]
fn one_read_queue_device_total() {
    let (iv, log) = run(&[
        ev(1_000, Kind::Start, "R", 80, 8, 42),
        ev(1_500, Kind::Issue, "R", 80, 8, 42),
        ev(4_500, Kind::Complete, "R", 80, 8, 0),
    ]);
    assert_eq!(log.len(), 1);
    let r = log[0];
    assert_eq!(
        (r.queue_ns, r.device_ns, r.total_ns),
        (Some(500), Some(3_000), Some(3_500))
    );
    assert_eq!((r.bytes, r.op, r.task.pid), (4096, Op::Read, 42));
    let d = &iv.devices[&D];
    assert_eq!((d.completed[0], d.bytes[0], d.issued), (1, 4096, 1));
    assert_eq!(d.latency[0].total.max, 3_500);
    assert_eq!(iv.unmatched, 0);
    let p = &iv.procs[&(42, D)];
    assert_eq!((p.completed, p.read_bytes, p.comm.as_str()), (1, 4096, "test"));
}

#[test]
fn merges_are_followed() {
    // block_io_start once, then back merges: the request keeps its start
    let (_, log) = run(&[
        ev(100, Kind::Start, "WS", 800, 8, 7),
        ev(110, Kind::BackMerge, "WS", 808, 8, 7),
        ev(200, Kind::Issue, "WS", 800, 16, 7),
        ev(900, Kind::Complete, "WS", 800, 16, 0),
    ]);
    assert_eq!(log[0].queue_ns, Some(100));
    assert_eq!(log[0].bytes, 8192);
    // bio-level starts (block_bio_queue kernels): the earliest in range
    // wins, the merged ones are absorbed and not left over
    let mut t = Accumulator::default();
    t.feed(&[
        ev(100, Kind::Start, "R", 800, 8, 7),
        ev(110, Kind::Start, "R", 808, 8, 7),
        ev(120, Kind::Start, "R", 816, 8, 7),
        ev(200, Kind::Issue, "R", 800, 24, 7),
        ev(300, Kind::Complete, "R", 800, 24, 0),
    ]);
    assert_eq!(t.log().next().unwrap().queue_ns, Some(100));
    t.feed(&[ev(20_000_000_000, Kind::Insert, "R", 0, 8, 1)]);
    assert_eq!(t.take_interval().unmatched, 0);
    // a front merge moves the request's start sector below its start event
    let (_, log) = run(&[
        ev(100, Kind::Start, "R", 808, 8, 7),
        ev(150, Kind::FrontMerge, "R", 800, 8, 7),
        ev(200, Kind::Issue, "R", 800, 16, 7),
        ev(300, Kind::Complete, "R", 800, 16, 0),
    ]);
    assert_eq!(log[0].total_ns, Some(200));
}

#[test]
fn partial_completions_make_one_request() {
    let (iv, log) = run(&[
        ev(0, Kind::Start, "R", 0, 16, 1),
        ev(10, Kind::Issue, "R", 0, 16, 1),
        ev(50, Kind::Complete, "R", 0, 8, 0),
        ev(90, Kind::Complete, "R", 8, 8, 0),
    ]);
    assert_eq!(log.len(), 1);
    assert_eq!(
        (log[0].bytes, log[0].device_ns, log[0].total_ns),
        (8192, Some(80), Some(90))
    );
    assert_eq!((iv.unmatched, iv.devices[&D].completed[0]), (0, 1));
}

#[test]
fn flush_sequence_of_this_kernel() {
    // as captured: an empty preflush write starts, the flush machinery
    // issues FF, FF completes at sector -1, then the write completes empty
    let (iv, log) = run(&[
        ev(100, Kind::Start, "FWS", 0, 0, 9),
        ev(110, Kind::Issue, "FF", 0, 0, 58),
        ev(150, Kind::Complete, "FF", u64::MAX, 0, 22),
        ev(151, Kind::Complete, "WS", 0, 0, 22),
    ]);
    assert_eq!(log.len(), 1);
    let r = log[0];
    assert_eq!(r.op, Op::Flush);
    assert_eq!((r.queue_ns, r.device_ns, r.total_ns), (Some(10), Some(40), Some(50)));
    assert_eq!(r.task.pid, 9);
    let d = &iv.devices[&D];
    assert_eq!((d.completed[3], d.issued, d.unmatched), (1, 0, 0));
}

#[test]
fn unmatched_and_expired() {
    let mut t = Accumulator::default();
    // a completion of a request issued before tracing began
    t.feed(&[ev(5, Kind::Complete, "R", 64, 8, 0)]);
    // an issue whose completion is lost: expires after FLIGHT_TTL_NS
    t.feed(&[ev(10, Kind::Issue, "R", 128, 8, 1)]);
    assert_eq!(t.take_interval().unmatched, 1);
    t.feed(&[ev(requests::FLIGHT_TTL_NS + 20, Kind::Insert, "R", 0, 8, 1)]);
    assert_eq!(t.take_interval().unmatched, 1);
    assert_eq!(t.in_flight(), 0);
}

#[test]
fn sequential_share_and_labels() {
    let mut evs = Vec::new();
    let mut ts = 0;
    // 7 sequential 4 KiB reads after a first one, then 2 random ones
    let sectors = [0u64, 8, 16, 24, 32, 40, 48, 56, 90_000, 10_000];
    for s in sectors {
        evs.push(ev(ts, Kind::Start, "R", s, 8, 3));
        evs.push(ev(ts + 1, Kind::Issue, "R", s, 8, 3));
        evs.push(ev(ts + 2, Kind::Complete, "R", s, 8, 0));
        ts += 10;
    }
    let (iv, _) = run(&evs);
    let d = &iv.devices[&D];
    assert_eq!((d.issued, d.sequential), (10, 7));
    assert_eq!(d.seq_share(), Some(0.7));
    let th = PatternThresholds::default();
    assert_eq!(d.pattern(&th), Some(Pattern::Seq));
    assert_eq!(th.label(0.69), Pattern::Mixed);
    assert_eq!(th.label(0.3), Pattern::Rand);
    // seeks: 0 for the sequential ones, |90000-64| and |10000-90008| sectors
    assert_eq!(d.seeks.counts[0], 7);
    assert_eq!(d.seeks.buckets().iter().map(|b| b.1).sum::<u64>(), 9);
    assert_eq!(d.sizes.buckets(), vec![(8192, 10)]);
    assert_eq!(iv.procs[&(3, D)].seq_share(), Some(0.7));
    // all of one size: the bytes' share is the requests'
    assert_eq!((d.issued_bytes, d.sequential_bytes), (40_960, 28_672));
    assert_eq!(d.seq_byte_share(), Some(0.7));
    // under MIN_REQUESTS: a share but no label
    let (iv, _) = run(&evs[..9]);
    assert_eq!(iv.devices[&D].pattern(&th), None);
}

/// One request of `pid`: start, issue, completion.
fn request(evs: &mut Vec<BlockEvent>, ts: &mut u64, pid: i32, sector: u64, sectors: u32) {
    evs.push(ev(*ts, Kind::Start, "R", sector, sectors, pid));
    evs.push(ev(*ts + 1, Kind::Issue, "R", sector, sectors, pid));
    evs.push(ev(*ts + 2, Kind::Complete, "R", sector, sectors, 0));
    *ts += 10;
}

#[test]
fn a_sequential_reader_next_to_a_random_one() {
    // dd's 1 MiB reads from 0, each after 30 random 4 KiB reads of fio
    // over 256 MiB (more than the device's window of stream ends)
    let mut evs = Vec::new();
    let (mut ts, mut x) = (0, 12345u64);
    for i in 0..50u64 {
        for _ in 0..30 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            request(&mut evs, &mut ts, 20, (x >> 33) % 65_536 * 8, 8);
        }
        request(&mut evs, &mut ts, 10, i * 2048, 2048);
    }
    let (iv, _) = run(&evs);
    let (dd, fio) = (&iv.procs[&(10, D)], &iv.procs[&(20, D)]);
    // each judged in its own streams: dd starts one and continues it 49
    // times, fio never continues anything
    assert_eq!((dd.issued, dd.sequential), (50, 49));
    assert_eq!((fio.issued, fio.sequential), (1500, 0));
    assert_eq!(dd.seq_share(), Some(0.98));
    assert_eq!((dd.seq_byte_share(), fio.seq_byte_share()), (Some(0.98), Some(0.0)));
    // the device: 49 of 1550 requests, 49 MiB of 50 MiB + 1500 x 4 KiB
    let d = &iv.devices[&D];
    assert_eq!((d.issued, d.sequential), (1550, 49));
    assert_eq!((d.issued_bytes, d.sequential_bytes), (50 * MIB + 1500 * 4096, 49 * MIB));
    let bytes = 49.0 * MIB as f64 / (50.0 * MIB as f64 + 1500.0 * 4096.0);
    assert_eq!(d.seq_byte_share(), Some(bytes));
    assert!((0.87..0.88).contains(&bytes), "{bytes}");
    // the label is of the bytes' share
    assert_eq!(d.pattern(&PatternThresholds::default()), Some(Pattern::Seq));
}

const MIB: u64 = 1 << 20;

#[test]
fn captured_workload() {
    use crate::collect::trace::merge::Merger;
    use crate::collect::trace::{DecodeStats, Decoder};
    let dir = crate::collect::trace::page::tests::DIR;
    let dec = Decoder::load(&std::path::Path::new(dir).join("events")).unwrap();
    let mut all = Vec::new();
    let mut st = DecodeStats::default();
    for cpu in ["cpu0", "cpu1"] {
        dec.decode_pages(&std::fs::read(format!("{dir}/{cpu}.raw")).unwrap(), &mut all, &mut st);
    }
    let mut evs = Vec::new();
    Merger::default().push(&mut all, u64::MAX, &mut evs);
    let (iv, log) = run(&evs);
    let lo = &iv.devices[&D];
    // 16 sequential 4 KiB reads (15 continue the stream), one random read,
    // two 64 KiB reads (the second continues the first), one merged write
    assert_eq!((lo.issued, lo.sequential), (20, 16));
    assert_eq!(lo.completed, [19, 1, 0, 1]);
    assert_eq!(lo.bytes[1], 131_072);
    assert_eq!(lo.merges, 31);
    assert_eq!(iv.unmatched, 0);
    // the write waited for its 31 merges: queue 619.751308 -> .751374
    let w = log.iter().find(|r| r.op == Op::Write && r.dev == D).unwrap();
    assert_eq!(w.queue_ns.map(|q| (q + 500) / 1000), Some(66));
    // vda's writeback is a kernel worker
    let vda = Dev { major: 254, minor: 0 };
    assert_eq!(iv.devices[&vda].completed, [0, 2, 0, 1]);
    let kw: Vec<&ProcDevTrace> = iv.procs.iter().filter(|(k, _)| k.1 == vda).map(|(_, v)| v).collect();
    assert!(kw.iter().all(|p| p.comm.starts_with("kworker")));
}

#[test]
fn wait_from_the_bio_queued_to_the_issue_of_each_part() {
    // A 16-sector bio queued at 100, throttled until 5_000 (no start
    // before then), split into two requests of 8: both parts wait from
    // the bio's queueing; the queue time starts at each start.
    let (iv, log) = run(&[
        ev(100, Kind::Queue, "R", 800, 16, 7),
        ev(5_000, Kind::Start, "R", 800, 8, 7),
        ev(5_010, Kind::Issue, "R", 800, 8, 7),
        ev(6_000, Kind::Start, "R", 808, 8, 7),
        ev(6_020, Kind::Issue, "R", 808, 8, 7),
        ev(7_000, Kind::Complete, "R", 800, 8, 0),
        ev(7_500, Kind::Complete, "R", 808, 8, 0),
        // A bio queued alone: its request has the queued time only.
        ev(8_000, Kind::Queue, "W", 64, 8, 7),
        ev(8_300, Kind::Issue, "W", 64, 8, 7),
        ev(9_000, Kind::Complete, "W", 64, 8, 0),
    ]);
    let w: Vec<_> = log.iter().map(|r| (r.sector, r.wait_ns, r.queue_ns)).collect();
    assert_eq!(
        w,
        [
            (800, Some(4_910), Some(10)),
            (808, Some(5_920), Some(20)),
            (64, Some(300), None)
        ]
    );
    assert_eq!(iv.devices[&D].latency[0].wait.n, 2);
    assert_eq!(iv.devices[&D].latency[1].wait.n, 1);
    // The split bio was taken by its last part: nothing left to match.
    let (_, log) = run(&[
        ev(100, Kind::Queue, "R", 800, 16, 7),
        ev(200, Kind::Issue, "R", 800, 16, 7),
        ev(300, Kind::Issue, "R", 808, 8, 7),
    ]);
    assert!(log.is_empty());
    let mut t = Accumulator::default();
    t.feed(&[
        ev(100, Kind::Queue, "R", 800, 16, 7),
        ev(200, Kind::Issue, "R", 800, 16, 7),
        ev(300, Kind::Issue, "R", 808, 8, 7),
        ev(400, Kind::Complete, "R", 808, 8, 0),
    ]);
    assert_eq!(t.log().next().map(|r| r.wait_ns), Some(None));
}

/// A start event of task `pid` (thread group `tgid`) named `comm`.
fn ev_of(ts: u64, kind: Kind, sector: u64, (pid, tgid, comm): (i32, i32, &str)) -> BlockEvent {
    let mut e = ev(ts, kind, "R", sector, 8, pid);
    e.comm = [0u8; 16];
    e.comm[..comm.len()].copy_from_slice(comm.as_bytes());
    e.tgid = if kind == Kind::Start { tgid } else { 0 };
    e
}

#[test]
fn io_uring_worker_requests_are_their_processes() {
    // fio (tgid 812) through io_uring: its io-wq worker (tid 830) issues
    // first, then fio's own thread.
    let wrk = (830, 812, "iou-wrk-812");
    let fio = (812, 812, "fio");
    let (iv, _) = run(&[
        ev_of(100, Kind::Start, 80, wrk),
        ev_of(150, Kind::Issue, 80, wrk),
        ev_of(900, Kind::Complete, 80, (0, 0, "")),
        ev_of(1_000, Kind::Start, 88, fio),
        ev_of(1_050, Kind::Issue, 88, fio),
        ev_of(1_900, Kind::Complete, 88, (0, 0, "")),
    ]);
    assert_eq!(iv.procs.len(), 1, "{:?}", iv.procs.keys());
    let p = &iv.procs[&(812, D)];
    assert_eq!((p.issued, p.comm.as_str()), (2, "fio"));
    // Only the worker issued: the row is renamed after its process.
    let (mut iv, _) = run(&[
        ev_of(100, Kind::Start, 80, wrk),
        ev_of(150, Kind::Issue, 80, wrk),
        ev_of(900, Kind::Complete, 80, (0, 0, "")),
    ]);
    assert_eq!(iv.procs[&(812, D)].comm, "iou-wrk-812");
    iv.name_io_uring_rows(|pid| (pid == 812).then(|| "fio".to_string()));
    assert_eq!(iv.procs[&(812, D)].comm, "fio");
}

const MS: u64 = 1_000_000;

fn req(t: &mut Accumulator, start: Option<f64>, issue: f64, done: Option<f64>, sector: u64) {
    let ns = |ms: f64| (ms * MS as f64) as u64;
    let mut evs = Vec::new();
    if let Some(s) = start {
        evs.push(ev(ns(s), Kind::Start, "R", sector, 8, 42));
    }
    evs.push(ev(ns(issue), Kind::Issue, "R", sector, 8, 42));
    if let Some(d) = done {
        evs.push(ev(ns(d), Kind::Complete, "R", sector, 8, 0));
    }
    evs.sort_by_key(|e| e.ts);
    t.feed(&evs);
}

/// Tracing whole, then in windows: a request straddling a window's end is
/// kept when it completes in the drain; one started after the end, or
/// before a window began, is left out (not unmatched); one the drain did
/// not see complete is dropped when the next window opens; the counts
/// are scaled by the traced share.
#[test]
fn windows_keep_the_drained_and_ignore_the_unseen() {
    use crate::collect::trace::budget::Mark;
    let mut t = Accumulator::default();
    req(&mut t, Some(10.0), 10.1, Some(11.0), 0); // A: whole tracing
    t.mark(Mark::End { ts: 100 * MS });
    req(&mut t, Some(95.0), 96.0, None, 500); // F: never completes in its drain
    req(&mut t, Some(99.0), 99.5, Some(120.0), 100); // B: straddles the end
    req(&mut t, Some(101.0), 101.5, Some(102.0), 200); // C: starts in the drain
    assert_eq!(t.pending(), 1, "F is still waited for");
    t.mark(Mark::Open {
        ts: 200 * MS,
        full: false,
    });
    req(&mut t, None, 200.5, Some(201.0), 300); // D: started before the window
    req(&mut t, Some(201.0), 201.2, Some(202.0), 400); // E
    // F's completion after the next window opened: dropped with the drain
    t.feed(&[ev(205 * MS, Kind::Complete, "R", 500, 8, 0)]);
    t.mark(Mark::End { ts: 250 * MS });
    // page-cache events are taken inside windows only
    let inside: Vec<bool> = [50, 150, 210, 260].iter().map(|&ms| t.accepts(ms * MS)).collect();
    assert_eq!(inside, [true, false, true, false]);
    assert!(t.sampled());
    let log: Vec<u64> = t.log().map(|r| r.sector).collect();
    assert_eq!(log, [0, 100, 400]);
    let iv = t.take_interval_at(300 * MS);
    // traced: [10, 100) and [200, 250) of [10, 300): 140 of 290 ms
    assert!((iv.share.0 - 140.0 / 290.0).abs() < 1e-12, "{:?}", iv.share);
    let d = &iv.devices[&D];
    // A, B, E completed, A, B, E, F issued; 4 KiB each; × 290 / 140
    assert_eq!(d.completed[0], 6); // 3 × 2.071 = 6.21
    assert_eq!(d.issued, 8); // 4 × 2.071 = 8.29
    assert_eq!(d.bytes[0], 25454); // 12288 × 2.071 = 25453.7
    assert_eq!((d.unmatched, iv.unmatched), (0, 0));
    // the latencies are those traced, unscaled
    assert_eq!(d.latency[0].total.n, 3);
    let p = &iv.procs[&(42, D)];
    assert_eq!((p.completed, p.read_bytes, p.issued), (6, 25454, 8));
    assert_eq!(t.matcher.cut, 1, "F");
    // an interval with no window open: nothing traced, nothing scaled
    assert_eq!(t.take_interval_at(400 * MS).share.0, 0.0);
    // whole again
    t.mark(Mark::Open {
        ts: 450 * MS,
        full: true,
    });
    req(&mut t, None, 451.0, Some(452.0), 600);
    let iv = t.take_interval_at(500 * MS);
    assert!((iv.share.0 - 0.5).abs() < 1e-12, "{:?}", iv.share);
    req(&mut t, None, 501.0, Some(502.0), 700);
    let iv = t.take_interval_at(600 * MS);
    assert_eq!((iv.share.0, iv.devices[&D].completed[0]), (1.0, 1));
    assert_eq!(iv.devices[&D].unmatched, 0);
}

/// An interval without a window (a cycle longer than the interval): its
/// traced figures are unknown, not 0 — what a drain completed in it is
/// dropped, the event counts stay.
#[test]
fn an_interval_without_a_window_has_no_traced_figures() {
    let mut t = Accumulator::default();
    req(&mut t, None, 1.0, Some(2.0), 8);
    let mut iv = t.take_interval_at(1000 * MS);
    assert_eq!(iv.devices[&D].completed[0], 1);
    iv.events = 3;
    window::scale(&mut iv, window::Share(0.0));
    assert!(iv.devices.is_empty() && iv.procs.is_empty(), "{iv:?}");
    assert_eq!((iv.events, iv.share.0), (3, 0.0));
}

#[test]
fn whole_tracing_is_not_scaled() {
    let mut t = Accumulator::default();
    req(&mut t, Some(1.0), 1.5, Some(3.0), 0);
    req(&mut t, None, 4.0, Some(5.0), 8);
    t.feed(&[ev(6 * MS, Kind::Complete, "R", 64, 8, 0)]);
    let iv = t.take_interval_at(1000 * MS);
    assert_eq!(iv.share, window::Share(1.0));
    let d = &iv.devices[&D];
    assert_eq!((d.issued, d.completed[0], d.unmatched), (2, 2, 1));
    let json = serde_json::to_value(&iv).map(|v| v["trace_share"].clone());
    assert_eq!(json.ok(), Some(serde_json::json!(1.0)));
}
