//! End to end in tmux: `iolens record` writes a short recording of this
//! machine, `iolens replay FILE` shows it on the dashboard, the
//! time-travel keys move through it, a live action is refused, and q
//! restores the terminal. Skipped (with the reason) without tmux.

use std::process::Command;

#[path = "common/tmux.rs"]
mod tmux;
use tmux::Tmux;

#[path = "common/tools.rs"]
mod tools;
use tools::have;

const BIN: &str = env!("CARGO_BIN_EXE_iolens");

/// "(pos/total)" from the header's replay line.
fn position(s: &str) -> (usize, usize) {
    let line = s
        .lines()
        .find(|l| l.contains("iolens replay"))
        .unwrap_or_else(|| panic!("{s}"));
    let inner = line
        .split('(')
        .nth(1)
        .and_then(|r| r.split(')').next())
        .unwrap_or_else(|| panic!("{line}"));
    let (a, b) = inner.split_once('/').unwrap_or_else(|| panic!("{line}"));
    (a.parse().unwrap(), b.parse().unwrap())
}

#[test]
fn replay_dashboard_travels_in_time() {
    if !have("tmux") {
        eprintln!("skipped: tmux not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("short.iolens");
    // 13 samples 0.5 s apart (fewer where a sample takes longer: ticks are
    // skipped, not caught up).
    let out = Command::new(BIN)
        .args(["--no-trace", "record", "--interval", "0.5", "--count", "12"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let t = Tmux::shell();
    t.type_text(&format!("{BIN} replay {}; echo EXIT=$?", file.display()));
    t.keys(&["Enter"]);
    let s = t.wait_for("the replay dashboard", |s| {
        s.contains("iolens replay") && s.contains("PAUSED") && s.contains("Processes")
    });
    // Paused on the first sample with rates.
    let (at, n) = position(&s);
    assert!(at == 2 && n >= 4, "{s}");
    assert!(s.contains("[ ] step") && s.contains("b jump"), "{s}");
    t.keys(&["]", "]"]);
    let s = t.wait_for("two steps forward", |s| s.contains(&format!("(4/{n})")));
    assert!(s.contains("PAUSED"), "{s}");
    t.keys(&["["]);
    t.wait_for("a step back", |s| s.contains(&format!("(3/{n})")));
    // Jump: a minute after the shown sample is past the end.
    t.keys(&["b"]);
    t.type_text("+1m");
    t.wait_for("the prompt", |s| s.contains("jump to: +1m"));
    t.keys(&["Enter"]);
    let s = t.wait_for("the last sample", |s| s.contains(&format!("({n}/{n})")));
    assert!(s.contains("is outside the recording"), "{s}");
    t.keys(&["b"]);
    // A minute back is before the start: the first sample. (send-keys
    // would take "-1m" for options.)
    let ok = t
        .cmd(&["send-keys", "-t", "main", "-l", "--", "-1m"])
        .status()
        .unwrap()
        .success();
    assert!(ok, "send-keys -1m");
    t.keys(&["Enter"]);
    t.wait_for("the first sample", |s| position(s).0 == 1);
    // Play at ×512: to the end, then paused there.
    t.keys(&["p", "+", "+", "+", "+", "+", "+", "+", "+", "+", "+"]);
    let s = t.wait_for("the end", |s| s.contains("end of the recording"));
    assert_eq!(position(&s), (n, n), "{s}");
    // A probe is refused, not started.
    t.keys(&["Tab"]);
    t.wait_for("devices focused", |s| s.contains("Enter detail"));
    t.keys(&["t"]);
    let s = t.wait_for("the refusal", |s| s.contains("off in replay"));
    assert!(!s.contains("Probe /dev"), "{s}");
    t.keys(&["q"]);
    t.assert_restored("0");
}
