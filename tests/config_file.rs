//! The config file as batch and JSON output read it: its `interval`
//! applies (command line > file > default), bad values are refused naming
//! the key, a parse error echoes no raw control character, and a FIFO, a
//! device or an oversized file is an error at once.

mod common;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_iolens");

/// Run iolens over the fixture tree (no tracing, counters that do not move)
/// with `config`; (exit code, stdout, stderr), or a panic after 10 s.
fn run(config: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let mut child = Command::new(BIN)
        .args(["--root", common::FIXTURE, "--config"])
        .arg(config)
        .args(args)
        .env_remove("IOLENS_INTERVAL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting iolens");
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("iolens --config {} {args:?} still running after 10 s", config.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (mut out, mut err) = (String::new(), String::new());
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    (status.code().unwrap_or(-1), out, err)
}

fn intervals(json: &str) -> Vec<f64> {
    json.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["interval_s"].as_f64().unwrap()
        })
        .collect()
}

#[test]
fn batch_and_json_take_the_interval_from_the_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(&cfg, "interval = 0.2\n").unwrap();
    let (code, out, err) = run(&cfg, &["--json", "--count", "2"]);
    assert_eq!(code, 0, "{err}");
    let iv = intervals(&out);
    assert_eq!(iv.len(), 2, "{out}");
    for s in &iv {
        assert!((0.15..0.5).contains(s), "interval_s {iv:?}, the file says 0.2");
    }
    // The command line wins over the file (the first interval is at most
    // 0.25 s: the second shows the setting).
    let (code, out, err) = run(&cfg, &["--json", "--count", "2", "--interval", "0.6"]);
    assert_eq!(code, 0, "{err}");
    let iv = intervals(&out);
    assert!(
        iv.len() == 2 && (0.55..0.9).contains(&iv[1]),
        "interval_s {iv:?}, --interval 0.6"
    );
    // Plain text too: two reports at 0.2 s take well under the default's 2 s.
    let t0 = Instant::now();
    let (code, out, err) = run(&cfg, &["--batch", "--count", "2"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("sda"), "{out}");
    assert!(t0.elapsed() < Duration::from_millis(1500), "{:?}", t0.elapsed());
}

#[test]
fn bad_intervals_are_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    for v in ["nan", "inf", "-inf", "0", "-1", "0.01", "1e9"] {
        std::fs::write(&cfg, format!("interval = {v}\n")).unwrap();
        for mode in ["--batch", "--json"] {
            let (code, _, err) = run(&cfg, &[mode, "--count", "1"]);
            assert_eq!(code, 2, "interval = {v} {mode}: {err}");
            assert!(
                err.contains(&format!("in config file {}", cfg.display()))
                    && err.contains(": interval must be between 0.05 and 3600 seconds"),
                "interval = {v}: {err}"
            );
            assert!(!err.contains("--interval"), "{err}");
        }
    }
    // On the command line, the flag is named (and wins over a good file).
    std::fs::write(&cfg, "interval = 1\n").unwrap();
    for v in ["NaN", "inf", "0", "-2", "86400"] {
        let (code, _, err) = run(&cfg, &["--batch", "--count", "1", &format!("--interval={v}")]);
        assert_eq!(code, 2, "--interval {v}: {err}");
        assert!(
            err.contains("--interval must be between 0.05 and 3600 seconds"),
            "{err}"
        );
    }
}

/// toml's message quotes the offending line: an OSC 52 clipboard write and
/// a clear-screen in it reach stderr escaped.
#[test]
fn a_parse_error_echoes_no_raw_control_character() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(&cfg, "color = tru\x1b]52;c;aGk=\x07\x1b[2J\u{9b}2J\x7f\n").unwrap();
    let (code, _, err) = run(&cfg, &["--batch", "--count", "1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("parsing config file"), "{err}");
    let bad: Vec<char> = err
        .chars()
        .filter(|c| (*c < ' ' && *c != '\n') || ('\u{7f}'..='\u{9f}').contains(c))
        .collect();
    assert!(bad.is_empty(), "raw {bad:?} in {err:?}");
    assert!(err.contains(r"tru\x1b]52;c;aGk=\x07\x1b[2J\x9b2J\x7f"), "{err}");
}

/// A FIFO without writer would hang `open` (or the read) for good, and
/// /dev/zero or a huge file would be read into memory whole.
#[test]
fn a_fifo_a_device_or_a_huge_file_fail_at_once_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("config.fifo");
    let mode = rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR;
    rustix::fs::mknodat(rustix::fs::CWD, &fifo, rustix::fs::FileType::Fifo, mode, 0).unwrap();
    let (code, _, err) = run(&fifo, &["--batch", "--count", "1"]);
    assert_eq!(code, 2, "{err}");
    let want = format!("reading config file {}: not a regular file (a FIFO)", fifo.display());
    assert!(err.contains(&want), "{err}");
    // 2 MiB of comments: over the 1 MiB cap, refused before it is read.
    let huge = dir.path().join("huge.toml");
    std::fs::write(
        &huge,
        "# padding padding padding padding padding padding\n".repeat(42_000),
    )
    .unwrap();
    let (code, _, err) = run(&huge, &["--batch", "--count", "1"]);
    assert_eq!(code, 2, "{err}");
    let want = format!("reading config file {}: larger than 1048576 bytes", huge.display());
    assert!(err.contains(&want), "{err}");
    let (code, _, err) = run(std::path::Path::new("/dev/zero"), &["--batch", "--count", "1"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("reading config file /dev/zero: not a regular file (a character device)"),
        "{err}"
    );
    // /dev/null is still the way to say "no config file".
    let (code, out, err) = run(
        std::path::Path::new("/dev/null"),
        &["--batch", "--count", "1", "-i", "0.05"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("sda"), "{out}");
}
