//! Stale tracefs instances are those whose owner no longer runs, judged by
//! pid and start time: a zombie owner, a pid reused by another program
//! (pid 1), or the same pid with another start time leaves an instance
//! to remove; this process's own instance is kept. Run on a directory
//! laid out as tracefs's `instances/` (no root needed).

use std::path::Path;
use std::time::{Duration, Instant};

use iolens::collect::trace::instance::remove_stale;

/// Field 22 (start time) and field 3 (state) of `/proc/<pid>/stat`.
fn stat(pid: u32) -> Option<(u64, char)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    Some((f[19].parse().ok()?, f[0].chars().next()?))
}

#[test]
fn instances_of_zombies_reused_pids_and_other_start_times_are_stale() {
    let me = std::process::id();
    let (start, _) = stat(me).unwrap();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let z = child.id();
    let end = Instant::now() + Duration::from_secs(10);
    while stat(z).is_some_and(|(_, st)| st != 'Z') && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(10));
    }
    let (zstart, state) = stat(z).unwrap();
    assert_eq!(state, 'Z', "the child is a zombie");
    let d = tempfile::tempdir().unwrap();
    let cases = [
        (format!("iolens-{z}"), false, "a zombie (old-style name)"),
        (format!("iolens-{z}-{zstart}"), false, "a zombie"),
        ("iolens-1".to_string(), false, "pid 1, no iolens"),
        (format!("iolens-{me}-{}", start + 1), false, "the pid of another start"),
        (format!("iolens-{me}-{start}"), true, "this process"),
    ];
    for (n, _, _) in &cases {
        std::fs::create_dir_all(d.path().join("instances").join(n)).unwrap();
    }
    let removed = remove_stale(d.path());
    for (n, kept, what) in &cases {
        let there = Path::new(&d.path().join("instances").join(n)).exists();
        assert_eq!(there, *kept, "{what}: {n} (removed: {removed:?})");
    }
    child.wait().unwrap();
}
