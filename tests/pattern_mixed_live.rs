//! The sequential share under mixed load, live (root, tracefs, losetup,
//! fio; skipped with the reason otherwise): `dd iflag=direct bs=1M`
//! reading a loop device from start to end over and over, while fio reads
//! it at random (4 KiB, libaio, queue depth 4), and `iolens --json` reports
//! every second. Each process is judged in its own streams: dd's share
//! must be at least 0.9 and fio's at most 0.1 (of requests and of bytes)
//! in at least 95% of the intervals. The device's figures must be the
//! documented ones: `seq_byte_share` (what `pat` shows, and what the label
//! is of) is dd's part of the bytes, `seq_share` its part of the requests.
//!
//! Judged against the device's recent requests alone, dd read 6-56%
//! sequential here (fio's requests pushed its stream's end out).

use std::process::Command;

use serde_json::Value;

#[path = "common/live.rs"]
mod live;
use live::{Attach, Bg, Loop, tools};

/// Reports taken (1 s apart); the first holds no requests (the baseline).
const REPORTS: u32 = 10;
/// Intervals with both readers in them needed for a verdict.
const MIN_KEPT: usize = 6;

fn skip_reason() -> Option<String> {
    if !tools::is_root() {
        return Some("not root".into());
    }
    for tool in ["fio", "losetup", "dd"] {
        if !tools::have(tool) {
            return Some(format!("{tool} is not installed"));
        }
    }
    if !std::fs::read_to_string("/proc/filesystems").is_ok_and(|s| s.contains("tracefs")) {
        return Some("no tracefs in this kernel".into());
    }
    None
}

/// One command's traced rows on the device in one report, summed.
#[derive(Debug, Default, Clone, Copy)]
struct Sum {
    requests: f64,
    sequential: f64,
    /// Completed bytes (the rows have no issued bytes), and the sequential
    /// share of the issued bytes weighted by them.
    read_bytes: f64,
    seq_bytes: f64,
}

impl Sum {
    fn share(&self) -> f64 {
        self.sequential / self.requests
    }

    fn byte_share(&self) -> f64 {
        self.seq_bytes / self.read_bytes
    }
}

fn rows(report: &Value, dev: &str, comm: &str) -> Sum {
    let mut s = Sum::default();
    for r in report["traced_processes"].as_array().into_iter().flatten() {
        if r["name"] != dev || r["comm"] != comm {
            continue;
        }
        let n = r["requests"].as_f64().unwrap_or(0.0);
        let b = r["read_bytes"].as_f64().unwrap_or(0.0);
        s.requests += n;
        s.sequential += r["seq_share"].as_f64().unwrap_or(0.0) * n;
        s.read_bytes += b;
        s.seq_bytes += r["seq_byte_share"].as_f64().unwrap_or(0.0) * b;
    }
    s
}

/// The label of a share at the default thresholds (70 / 30 %).
fn label(share: f64) -> &'static str {
    if share >= 0.7 {
        "SEQ"
    } else if share <= 0.3 {
        "RAND"
    } else {
        "MIXED"
    }
}

/// What is wrong with one interval's numbers, if anything.
fn check(report: &Value, dev: &str, dd: Sum, fio: Sum) -> Vec<String> {
    let mut bad = Vec::new();
    if dd.share() < 0.9 || dd.byte_share() < 0.9 {
        bad.push(format!("dd {:.3} / bytes {:.3}", dd.share(), dd.byte_share()));
    }
    if fio.share() > 0.1 || fio.byte_share() > 0.1 {
        bad.push(format!("fio {:.3} / bytes {:.3}", fio.share(), fio.byte_share()));
    }
    let Some(d) = report["devices"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|d| d["name"] == dev)
    else {
        return vec![format!("no device {dev}")];
    };
    let (t, r) = (&d["trace"], &d["rates"]);
    let f = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    let (req, seq, rb, sb) = (
        f(&t["requests"]),
        f(&t["sequential"]),
        f(&t["request_bytes"]),
        f(&t["sequential_bytes"]),
    );
    // The figures are the trace's counts, the label is of the bytes' share.
    let (share, bytes) = (f(&r["seq_share"]), f(&r["seq_byte_share"]));
    if (share - seq / req).abs() > 1e-9 || (bytes - sb / rb).abs() > 1e-9 {
        bad.push(format!("rates {share}/{bytes} against trace {seq}/{req}, {sb}/{rb}"));
    }
    if r["pattern"] != label(bytes) || r["pattern_basis"] != "requests" {
        bad.push(format!(
            "pattern {} ({}) for {bytes:.3}",
            r["pattern"], r["pattern_basis"]
        ));
    }
    // dd is all sequential and fio all random: the device's shares are dd's
    // part of the bytes and of the requests.
    let all = rows(report, dev, "dd").read_bytes + rows(report, dev, "fio").read_bytes;
    let want_bytes = dd.read_bytes / all;
    let want_share = dd.requests / req;
    if (bytes - want_bytes).abs() > 0.05 || (share - want_share).abs() > 0.05 {
        bad.push(format!(
            "device {share:.3} / bytes {bytes:.3}, dd's part {want_share:.3} / {want_bytes:.3}"
        ));
    }
    bad
}

#[test]
fn a_sequential_reader_beside_a_random_one() {
    if let Some(r) = skip_reason() {
        eprintln!("skipped: {r}");
        return;
    }
    // Sparse: the loop device's requests are what is traced, and holes are
    // read without touching the disk under /var/tmp.
    let lo = match Loop::over_new_file(|f| f.as_file().set_len(1 << 30), Attach::READ_ONLY_DIRECT) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("skipped: {e}");
            return;
        }
    };
    let name = lo.dev.trim_start_matches("/dev/").to_string();
    let _dd = Bg::spawn(Command::new("sh").args([
        "-c",
        &format!(
            "while :; do dd if={} of=/dev/null bs=1M iflag=direct status=none || exit; done",
            lo.dev
        ),
    ]));
    let _fio = Bg::spawn(
        Command::new("fio")
            .args([
                "--name=r",
                "--rw=randread",
                "--bs=4k",
                "--ioengine=libaio",
                "--iodepth=4",
            ])
            // --thread: its job is a thread of the process killed at the
            // end (a forked job runs in a session of its own)
            .args(["--thread", "--direct=1", "--readonly", "--time_based", "--runtime=30"])
            .arg(format!("--filename={}", lo.dev)),
    );
    // Both running before the first interval.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let conf = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_iolens"))
        .args(["--json", "--interval", "1", "--count", &REPORTS.to_string()])
        .env("XDG_CONFIG_HOME", conf.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (mut kept, mut right, mut lost) = (0, 0, 0);
    let mut failures = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let report: Value = serde_json::from_str(line).unwrap();
        assert_eq!(report["trace"]["active"], true, "{}", report["trace"]);
        lost += report["trace"]["lost_events"].as_u64().unwrap_or(0);
        let (dd, fio) = (rows(&report, &name, "dd"), rows(&report, &name, "fio"));
        if dd.requests < 10.0 || fio.requests < 10.0 {
            eprintln!("left out: dd {} and fio {} requests", dd.requests, fio.requests);
            continue;
        }
        kept += 1;
        let bad = check(&report, &name, dd, fio);
        let d = report["devices"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|d| d["name"] == name.as_str());
        let r = d.map(|d| &d["rates"]);
        eprintln!(
            "dd {:.0} requests, share {:.3} / bytes {:.3}; fio {:.0}, {:.3} / {:.3}; device {} {} / bytes {}{}",
            dd.requests,
            dd.share(),
            dd.byte_share(),
            fio.requests,
            fio.share(),
            fio.byte_share(),
            r.map_or(Value::Null, |r| r["pattern"].clone()),
            r.map_or(Value::Null, |r| r["seq_share"].clone()),
            r.map_or(Value::Null, |r| r["seq_byte_share"].clone()),
            if bad.is_empty() {
                String::new()
            } else {
                format!("  WRONG: {}", bad.join("; "))
            },
        );
        if bad.is_empty() {
            right += 1;
        } else {
            failures.extend(bad);
        }
    }
    eprintln!("{right} of {kept} intervals right; lost events {lost}");
    assert!(kept >= MIN_KEPT, "only {kept} intervals had both readers");
    assert!(right * 100 >= kept * 95, "{right} of {kept} right: {failures:#?}");
}
