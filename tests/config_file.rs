//! The config file as batch and JSON output read it: a parse error echoes
//! no raw control character, and a FIFO, a device or an oversized file is
//! an error at once.

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
