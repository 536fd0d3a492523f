//! `iolens record` and `iolens replay` through the binary on the live
//! system: a replay gives the numbers the recorder printed, a torn or
//! corrupted file replays what is whole, a newer format is refused, and
//! `--max-size` holds while recording goes on.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use iolens::record::file::Recording;
use serde_json::Value;

#[path = "common/tools.rs"]
mod tools;

const BIN: &str = env!("CARGO_BIN_EXE_iolens");

fn iolens(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("IOLENS_CONFIG", "/dev/null")
        .output()
        .expect("running iolens")
}

fn json_lines(out: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// Reports without the wall-clock fields (the only ones allowed to differ).
/// The tracer's own cost: the recorder's, not recorded (a replay has it
/// `null`: unknown, not 0).
const TRACER_COST: [&str; 3] = ["tracer_cpu_pct", "tracer_lookups_pct", "trace_budget_pct"];

fn numbers(mut v: Value) -> Value {
    if let Some(m) = v.as_object_mut() {
        m.remove("time");
        m.remove("unix_ns");
        if let Some(t) = m.get_mut("trace").and_then(Value::as_object_mut) {
            for k in TRACER_COST {
                t.remove(k);
            }
        }
    }
    v
}

/// Record 5 s at 0.5 s while printing JSON; the recording and what the
/// recorder printed.
fn record_5s(dir: &Path) -> (std::path::PathBuf, Vec<Value>) {
    let file = dir.join("five.rec");
    let out = iolens(&[
        "record",
        file.to_str().unwrap(),
        "--interval",
        "0.5",
        "--count",
        "10",
        "--json",
    ]);
    assert!(out.status.success(), "{out:?}");
    (file, json_lines(&out.stdout))
}

fn replay(file: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["replay", file.to_str().unwrap()];
    args.extend_from_slice(extra);
    iolens(&args)
}

#[test]
fn replay_gives_the_recorded_numbers_and_survives_damage() {
    let dir = tempfile::tempdir().unwrap();
    let (file, live) = record_5s(dir.path());
    assert_eq!(live.len(), 10, "one line per interval");
    let out = replay(&file, &["--json"]);
    assert!(out.status.success(), "{out:?}");
    let replayed = json_lines(&out.stdout);
    let rec = Recording::open(&file).unwrap();
    assert_eq!(rec.segments.len(), 1);
    let samples = rec.segments[0].samples.len();
    // Every sample the model took was recorded: the baseline and one per
    // report (a report that came late, as a stall line, still has its sample).
    assert!(samples >= 10, "{samples} samples recorded");
    assert_eq!(replayed.len(), samples - 1, "a report per recorded interval");
    let mut compared = 0;
    for l in &live {
        if l.get("stall").is_some() {
            eprintln!("live report was a stall line: {l}");
            continue;
        }
        let mono = &l["mono_ns"];
        let r = replayed
            .iter()
            .find(|r| &r["mono_ns"] == mono)
            .unwrap_or_else(|| panic!("no replayed report at mono_ns {mono}"));
        assert_eq!(numbers(r.clone()), numbers(l.clone()), "report at mono_ns {mono}");
        // Recorded without tracing: no per-file numbers, live or replayed,
        // and both say why.
        assert_eq!(r["files"], serde_json::json!([]), "report at mono_ns {mono}");
        assert_eq!(
            r["files_info"]["reason"], "recorded without tracing (iolens record --trace)",
            "report at mono_ns {mono}"
        );
        // The wall clock is the recorded one, not replay time.
        assert_eq!(r["time"], l["time"]);
        compared += 1;
    }
    eprintln!(
        "{compared} of {} live reports compared equal with their replay",
        live.len()
    );
    assert!(
        compared >= 5,
        "only {compared} reports to compare (machine too loaded?)"
    );
    assert!(
        live.iter()
            .any(|l| l["processes"].as_array().is_some_and(|p| !p.is_empty())),
        "no process rows at all: the comparison would be vacuous"
    );

    // Torn: the file cut in the middle of its last frame.
    let data = std::fs::read(&file).unwrap();
    let last = *rec.segments[0].samples.last().unwrap();
    let torn = dir.path().join("torn.rec");
    std::fs::write(&torn, &data[..last.offset + last.total_len() / 2]).unwrap();
    let out = replay(&torn, &["--json"]);
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("torn last frame"), "{err}");
    let got = json_lines(&out.stdout);
    assert_eq!(got.len(), samples - 2, "every whole frame before the cut");
    assert_eq!(got, replayed[..samples - 2].to_vec());

    // Corrupted: one byte of a middle frame's payload flipped.
    let mid = rec.segments[0].samples[samples / 2];
    let mut bad = data.clone();
    bad[mid.payload.0 + 10] ^= 0x55;
    let corrupt = dir.path().join("corrupt.rec");
    std::fs::write(&corrupt, &bad).unwrap();
    let out = replay(&corrupt, &["--json"]);
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("corrupted frame at byte {}", mid.offset)) && err.contains("CRC mismatch"),
        "{err}"
    );
    let got = json_lines(&out.stdout);
    assert_eq!(got.len(), samples - 2, "one sample skipped");
    let skipped_mono = &replayed[samples / 2 - 1]["mono_ns"];
    assert!(got.iter().all(|r| &r["mono_ns"] != skipped_mono));
    // The report after the gap spans two intervals.
    let after = got
        .iter()
        .position(|r| r["mono_ns"] == replayed[samples / 2]["mono_ns"])
        .unwrap();
    let (a, b) = (
        replayed[samples / 2 - 1]["interval_s"].as_f64().unwrap(),
        replayed[samples / 2]["interval_s"].as_f64().unwrap(),
    );
    assert!((got[after]["interval_s"].as_f64().unwrap() - (a + b)).abs() < 1e-6);

    // The time range: --from at the 4th report's time, --to at the 6th.
    let t = |i: usize| replayed[i]["time"].as_str().unwrap().to_string();
    let out = replay(&file, &["--json", "--from", &t(3), "--to", &t(5)]);
    assert!(out.status.success(), "{out:?}");
    let got = json_lines(&out.stdout);
    // RFC 3339 in the output is to the millisecond: --from rounds down, so
    // the range holds reports 3..=5 (the 6th's ms-rounded stamp may fall
    // just before its own sample).
    assert!(
        got.len() == 3 || got.len() == 2,
        "{} reports in range: {:?}",
        got.len(),
        got.iter().map(|r| &r["time"]).collect::<Vec<_>>()
    );
    assert_eq!(got[0]["mono_ns"], replayed[3]["mono_ns"]);
    assert_eq!(
        numbers(got[0].clone()),
        numbers(replayed[3].clone()),
        "first report has its rates"
    );
    let out = replay(&file, &["--batch", "--from", "-1h"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("\nDevice ").count(), samples - 1, "{text}");
    assert!(text.contains("trace off (recorded without tracing"), "{text}");
}

/// With `--trace` (root, tracefs): each interval's traced numbers are
/// recorded next to its sample, and replay gives the recorder's traced
/// numbers too (sequential share, latency, per-process rows).
#[test]
fn a_traced_recording_replays_the_traced_numbers() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let file = dir.path().join("traced.rec");
    // Direct writes during the recording: requests for the tracer.
    let target = dir.path().join("written");
    let mut dd = Command::new("dd")
        .args([
            "if=/dev/zero",
            &format!("of={}", target.display()),
            "bs=64k",
            "count=1500",
            "oflag=direct",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Buffered writes by one process of a new 1 MiB every 0.1 s for 3 s:
    // folios added and dirtied, per-file numbers for the recorder.
    let buffered = dir.path().join("buffered");
    let mut writer = Command::new("python3")
        .args([
            "-c",
            "import sys,time\nf=open(sys.argv[1],'wb')\nfor i in range(30):\n f.write(bytes(1<<20)); f.flush(); time.sleep(0.1)",
            buffered.to_str().unwrap(),
        ])
        .spawn()
        .unwrap();
    let out = iolens(&[
        "record",
        file.to_str().unwrap(),
        "--trace",
        "--interval",
        "0.5",
        "--count",
        "6",
        "--json",
    ]);
    let _ = dd.wait();
    assert!(out.status.success(), "{out:?}");
    let live = json_lines(&out.stdout);
    let traced: Vec<&Value> = live.iter().filter(|l| l["trace"]["active"] == true).collect();
    if traced.is_empty() {
        let why = live.iter().find_map(|l| l["trace"]["reason"].as_str()).unwrap_or("?");
        eprintln!("skipped: the recorder could not trace: {why}");
        let _ = writer.wait();
        return;
    }
    let rec = Recording::open(&file).unwrap();
    assert!(!rec.segments[0].traces.is_empty(), "no trace frame recorded");
    let out = replay(&file, &["--json"]);
    assert!(out.status.success(), "{out:?}");
    let replayed = json_lines(&out.stdout);
    let mut compared = 0;
    let mut requests = 0u64;
    let (mut files_traced, mut dirtied) = (0, 0u64);
    for l in traced {
        let mono = &l["mono_ns"];
        let r = replayed
            .iter()
            .find(|r| &r["mono_ns"] == mono)
            .unwrap_or_else(|| panic!("no replayed report at mono_ns {mono}"));
        // The per-file numbers (files[], files_info) are compared too.
        assert_eq!(numbers(r.clone()), numbers(l.clone()), "report at mono_ns {mono}");
        assert!(TRACER_COST.iter().all(|k| r["trace"][k].is_null()), "{}", r["trace"]);
        if l["files_info"]["active"] == true {
            files_traced += 1;
            dirtied += r["files"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|f| f["dirtied_folios"].as_u64())
                .sum::<u64>();
        }
        requests += l["devices"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|d| d["trace"]["requests"].as_u64())
            .sum::<u64>();
        compared += 1;
    }
    eprintln!(
        "{compared} traced reports equal with their replay ({requests} traced requests, {dirtied} folios dirtied in {files_traced} reports with per-file numbers)"
    );
    let _ = writer.wait();
    if files_traced > 0 {
        assert!(
            dirtied > 0,
            "no folio dirtied: the per-file comparison would be vacuous"
        );
        assert!(!rec.segments[0].files.is_empty(), "no files frame recorded");
    } else {
        eprintln!("per-file numbers not traced here: compared as absent");
    }
    assert!(compared >= 3, "only {compared} traced reports");
    assert!(
        requests > 0,
        "no traced request at all: the comparison would be vacuous"
    );
}

#[test]
fn newer_format_and_foreign_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let future = dir.path().join("future.rec");
    let mut bytes = b"IOLENSRC".to_vec();
    bytes.extend(99u32.to_le_bytes());
    std::fs::write(&future, &bytes).unwrap();
    let out = replay(&future, &["--json"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("newer iolens") && err.contains("format 99") && err.contains("reads format 1"),
        "{err}"
    );
    // Neither replayed nor appended to, nor overwritten.
    let out = iolens(&["record", future.to_str().unwrap(), "--count", "1", "--interval", "0.1"]);
    assert!(!out.status.success());
    assert_eq!(std::fs::read(&future).unwrap(), bytes);
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "my notes\n").unwrap();
    let out = iolens(&["record", notes.to_str().unwrap(), "--count", "1", "--interval", "0.1"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not an iolens recording"),
        "{out:?}"
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "my notes\n");
}

#[test]
fn a_fifo_and_a_device_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.rec");
    let made = Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    for (path, what) in [
        (Path::new("/dev/zero"), "not a regular file (a character device)"),
        (fifo.as_path(), "not a regular file (a FIFO)"),
    ] {
        // Before: /dev/zero was read until memory ran out, and a FIFO
        // with no writer waited in open() forever, silently.
        let start = Instant::now();
        let mut child = Command::new(BIN)
            .args(["replay", path.to_str().unwrap(), "--batch"])
            .env("IOLENS_CONFIG", "/dev/null")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        while child.try_wait().unwrap().is_none() && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{path:?} took {:?}",
            start.elapsed()
        );
        assert_eq!(out.status.code(), Some(2), "{path:?}: {err}");
        assert!(err.contains(what) && err.contains(path.to_str().unwrap()), "{err}");
        let e = Recording::open(path).err().map(|e| format!("{e:#}"));
        assert_eq!(e, Some(format!("reading {}: {what}", path.display())));
    }
}

#[test]
fn max_size_holds_while_recording_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("capped.rec");
    let cap: u64 = 64 * 1024;
    let mut child = Command::new(BIN)
        .args([
            "record",
            file.to_str().unwrap(),
            "--interval",
            "0.1",
            "--max-size",
            "64K",
        ])
        .env("IOLENS_CONFIG", "/dev/null")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let mut largest = 0;
    let mut shrank = 0;
    let mut last = 0;
    while start.elapsed() < Duration::from_secs(8) {
        std::thread::sleep(Duration::from_millis(20));
        let Ok(m) = std::fs::metadata(&file) else { continue };
        largest = largest.max(m.len());
        if m.len() < last {
            shrank += 1;
        }
        last = m.len();
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    eprintln!("largest size seen {largest} bytes under a cap of {cap}; rotated {shrank} times");
    assert!(largest <= cap, "file grew to {largest} > {cap}");
    assert!(shrank >= 2, "never rotated: {largest} bytes at most");
    // Still a valid recording holding the newest samples.
    let rec = Recording::open(&file).unwrap();
    let samples: Vec<_> = rec.segments.iter().flat_map(|s| &s.samples).collect();
    assert!(
        samples.len() >= 2,
        "{} samples kept; stderr {:?}",
        samples.len(),
        out.stderr
    );
    let newest = samples.last().unwrap().wall_ns;
    let now = iolens::collect::realtime_ns();
    assert!(
        now - newest < 2_000_000_000,
        "newest kept sample {} s old",
        (now - newest) / 1_000_000_000
    );
    let out = replay(&file, &["--json"]);
    assert!(out.status.success(), "{out:?}");
}

/// A filesystem that fills up under the recorder: every lost sample is
/// said, a run of them stops the recorder, and the status says so (before:
/// status 0 with ENOSPC on every sample, recording forever).
#[test]
fn a_full_filesystem_stops_the_recorder_with_status_1() {
    if !tools::is_root() {
        eprintln!("skipped: mounting a small tmpfs needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=2m", "iolens-test", mnt.to_str().unwrap()])
        .status();
    if !mounted.is_ok_and(|s| s.success()) {
        eprintln!("skipped: cannot mount a tmpfs at {}", mnt.display());
        return;
    }
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let _unmount = Unmount(mnt);
    let file = mnt.join("full.rec");
    let mut child = Command::new(BIN)
        .args(["record", file.to_str().unwrap(), "--interval", "0.1"])
        .env("IOLENS_CONFIG", "/dev/null")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while std::fs::metadata(&file).map_or(0, |m| m.len()) < 4096 && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    // Fill what is left.
    let _ = Command::new("dd")
        .args([
            "if=/dev/zero",
            &format!("of={}", mnt.join("filler").display()),
            "bs=64k",
        ])
        .stderr(Stdio::null())
        .status();
    let filled = Instant::now();
    while child.try_wait().unwrap().is_none() && filled.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!("{err}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert!(err.contains("samples in a row could not be written"), "{err}");
    assert!(err.contains("samples could not be written to"), "{err}");
    // What was written before stays a valid recording.
    let rec = Recording::open(&file).unwrap();
    assert!(rec.damage.is_empty(), "{:?}", rec.damage);
    assert!(!rec.segments[0].samples.is_empty());
}
