//! The first report covers a short first interval: `iolens --json --count 1
//! --interval 5` prints one report whose `interval_s` is at most 0.3 s (not
//! the 5 s asked for), with nonzero rates for a process that is reading.
//! No wall-clock assertion: `interval_s` is the time between the two samples
//! as iolens measured it.

use std::process::{Command, Stdio};

/// Kills the reader on every path.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn first_json_report_has_a_short_interval_and_real_rates() {
    // A reader that never stops: read(2) of /dev/zero moves its rchar and syscr.
    let reader = Child(
        Command::new("dd")
            .args(["if=/dev/zero", "of=/dev/null", "bs=64k"])
            .stderr(Stdio::null())
            .spawn()
            .expect("spawning dd"),
    );
    let pid = reader.0.id() as i64;
    let out = Command::new(env!("CARGO_BIN_EXE_iolens"))
        .args([
            "--json",
            "--count",
            "1",
            "--interval",
            "5",
            "--top",
            "1000",
            "--no-trace",
        ])
        .output()
        .expect("running iolens");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "--count 1 prints one report, the first: {text}");
    let v: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    let iv = v["interval_s"].as_f64().unwrap_or_else(|| panic!("no interval_s: {v}"));
    assert!(iv > 0.0 && iv <= 0.3, "first interval {iv} s, asked 5 s: {v}");
    let row = v["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"].as_i64() == Some(pid))
        .unwrap_or_else(|| panic!("dd (pid {pid}) not among the processes: {v}"));
    let rchar = row["rates"]["rchar_bps"].as_f64().unwrap();
    let syscr = row["rates"]["syscr_per_s"].as_f64().unwrap();
    assert!(rchar > 0.0 && syscr > 0.0, "dd's first rates: {row}");
    // The rate is over that interval: bytes read = rate × interval, a whole
    // number of 64 KiB reads.
    let reads = syscr * iv;
    assert!((reads - reads.round()).abs() < 1e-6 * reads.max(1.0), "{reads} reads");
    eprintln!(
        "first interval {iv:.3} s: dd read {:.0} MB/s in {reads:.0} reads",
        rchar / 1e6
    );
}
