//! The tracer against the live kernel (root, tracefs, a loop device with
//! direct I/O): the requests `dd` makes are all seen with the right sectors,
//! the private instance exists only while tracing, stale instances are
//! removed at start and by `iolens --cleanup`; tracefs is unmounted again
//! when the tracer mounted it. Skipped with a reason where
//! any of that is unavailable.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use iolens::collect::trace::block::{BlockEvent, Kind};
use iolens::collect::trace::instance::{PREFIX, find_tracefs};
use iolens::collect::trace::reader::Tracer;

#[path = "common/live.rs"]
mod live;
use live::{Attach, Loop};

/// The tests that start a tracer run one at a time (one checks that
/// tracefs is unmounted again when it mounted it).
fn one_tracer_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `dd` reads `count` 4 KiB blocks of `dev` with direct I/O.
fn dd_direct(dev: &str, count: u32) -> std::process::Child {
    Command::new("dd")
        .args([
            &format!("if={dev}"),
            "of=/dev/null",
            "bs=4k",
            &format!("count={count}"),
            "iflag=direct",
            "status=none",
        ])
        .spawn()
        .unwrap()
}

/// The turn to start a tracer and a loop device of `mb` MiB, or `None`
/// (the reason printed) where that cannot be done.
fn tracer_and_loop(mb: u64) -> Option<(std::sync::MutexGuard<'static, ()>, Loop)> {
    if let Some(r) = skip_reason() {
        eprintln!("skipped: {r}");
        return None;
    }
    let one = one_tracer_at_a_time();
    match Loop::over_new_file(|f| f.as_file().set_len(mb << 20), Attach::DIRECT) {
        Ok(l) => Some((one, l)),
        Err(e) => {
            eprintln!("skipped: {e}");
            None
        }
    }
}

fn skip_reason() -> Option<String> {
    if !iolens::sys::is_root() {
        return Some("not root".into());
    }
    if !std::fs::read_to_string("/proc/filesystems").is_ok_and(|s| s.contains("tracefs")) {
        return Some("no tracefs in this kernel".into());
    }
    None
}

fn wait_for(tracer: &mut Tracer, all: &mut Vec<BlockEvent>, mut done: impl FnMut(&[BlockEvent]) -> bool) {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(5) {
        tracer.poll(all);
        if done(all) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn tracer_sees_every_request_and_cleans_up() {
    let Some((_one, lo)) = tracer_and_loop(16) else { return };
    let (major, minor) = lo.numbers().expect("the loop device in sysfs");
    // A stale instance of a pid that cannot exist is removed at start.
    let pre = find_tracefs();
    let stale = pre
        .as_ref()
        .map(|d| d.join("instances").join(format!("{PREFIX}999999999")));
    if let Some(s) = &stale {
        std::fs::create_dir(s).unwrap();
    }
    let mut tracer = Tracer::start().expect("tracer starts as root");
    let dir = tracer.instance_dir();
    assert!(dir.is_dir());
    assert!(dir.ends_with(iolens::collect::trace::instance::Owner::own_name()));
    assert!(
        dir.to_string_lossy()
            .contains(&format!("{PREFIX}{}-", std::process::id()))
    );
    if let Some(s) = &stale {
        assert!(!s.exists(), "stale instance {} was not removed", s.display());
    }
    assert!(
        std::fs::read_to_string(dir.join("trace_clock"))
            .unwrap()
            .contains("[mono]")
    );
    // The size planned for is the one the kernel gave (it rounds up to
    // whole sub-buffers), at least the one asked for.
    let asked = iolens::collect::trace::instance::buffer_kb(std::fs::read_dir(dir.join("per_cpu")).unwrap().count());
    let given = std::fs::read_to_string(dir.join("buffer_size_kb")).unwrap();
    println!("buffer_size_kb: asked {asked}, given {}", given.trim());
    assert_eq!(tracer.instance.buffer_kb.to_string(), given.trim());
    assert!(tracer.instance.buffer_kb >= asked);
    // The watermark a poll of the pipes sleeps until, where the kernel has it.
    match std::fs::read_to_string(dir.join("buffer_percent")) {
        Ok(p) => {
            assert!(tracer.instance.watermark);
            assert_eq!(
                p.trim(),
                iolens::collect::trace::instance::WATERMARK_PERCENT.to_string()
            );
        }
        Err(e) => {
            println!("no buffer_percent ({e}): the thread reads on a timer");
            assert!(!tracer.instance.watermark);
        }
    }
    let mut dd = dd_direct(&lo.dev, 64);
    let dd_pid = dd.id() as i32;
    assert!(dd.wait().unwrap().success());
    let mut all = Vec::new();
    let mine = |e: &&BlockEvent| e.dev.major == major && e.dev.minor == minor;
    wait_for(&mut tracer, &mut all, |all| {
        all.iter().filter(mine).filter(|e| e.kind == Kind::Complete).count() >= 64
    });
    let count = |k: Kind| all.iter().filter(mine).filter(|e| e.kind == k).count();
    assert_eq!(
        (count(Kind::Start), count(Kind::Issue), count(Kind::Complete)),
        (64, 64, 64)
    );
    let issued: Vec<u64> = all
        .iter()
        .filter(mine)
        .filter(|e| e.kind == Kind::Issue)
        .map(|e| e.sector)
        .collect();
    assert_eq!(issued, (0..64).map(|i| i * 8).collect::<Vec<u64>>());
    let start = all.iter().filter(mine).find(|e| e.kind == Kind::Start).unwrap();
    assert_eq!(start.comm_str(), "dd");
    // dd is gone by now: its tgid comes from tracefs's record-tgid map
    assert_eq!((start.pid, start.tgid, start.kernel), (dd_pid, dd_pid, false));
    assert!(all.windows(2).all(|w| w[0].ts <= w[1].ts));
    assert_eq!(tracer.counters.lost, 0);

    // `iolens --cleanup` removes a leftover and keeps a running iolens's.
    let t = find_tracefs().unwrap();
    let stale = t.join("instances").join(format!("{PREFIX}999999998"));
    std::fs::create_dir(&stale).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_iolens"))
        .arg("--cleanup")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains(&format!("removed {}", stale.display())), "{text}");
    assert!(text.contains(&format!("{} kept", dir.display())), "{text}");
    assert!(!stale.exists() && dir.exists());
    drop(tracer);
    assert!(!dir.exists(), "instance {} left behind", dir.display());
    if pre.is_none() {
        assert!(find_tracefs().is_none(), "tracefs left mounted");
    }
}

/// Without root (run as nobody) or with --no-trace, batch and JSON output
/// still work, the pattern is marked as an estimate and the reason given.
#[test]
fn without_tracing_the_estimate_is_marked() {
    let bin = env!("CARGO_BIN_EXE_iolens");
    let out = Command::new(bin)
        .args(["--batch", "--no-trace", "-n", "1", "-i", "1"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("trace off (--no-trace): pattern ~estimated"), "{text}");
    if !iolens::sys::is_root() {
        eprintln!("skipped: the not-root case needs root to switch to nobody");
        return;
    }
    let json = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            bin,
            "--json",
            "-n",
            "1",
            "-i",
            "1",
        ])
        .output();
    let json = match json {
        Ok(o) if o.status.success() => o,
        Ok(o) => {
            eprintln!(
                "skipped: iolens as nobody failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            return;
        }
        Err(e) => {
            eprintln!("skipped: setpriv: {e}");
            return;
        }
    };
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["trace"]["active"], false);
    assert_eq!(v["trace"]["reason"], "block tracing needs root");
    let dev = v["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| !d["rates"].is_null())
        .unwrap();
    assert_eq!(dev["rates"]["pattern_basis"], "estimate");
    assert!(dev["rates"]["seq_share"].is_null());
    assert!(dev["latency"].is_null());
}

/// A sample's interval ends when it is taken, not at the tracer's last
/// poll (up to 100 ms earlier while idle): requests done just before the
/// take are in it, and none are left for the next one. With a 2% budget,
/// which this trivial load never reaches: each round's `dd` has exited
/// when its events are read, and looking its process up (`saved_tgids`,
/// read up to its pid) costs several ms of CPU; that cost does not set
/// the duty (with pids near 29,000 it made the first second cost 2.65% of
/// a core, windowed the tracing and lost a round: 0 and 0).
#[test]
fn an_interval_taken_right_after_requests_has_them_all() {
    let Some((_one, lo)) = tracer_and_loop(8) else { return };
    let (major, minor) = lo.numbers().expect("the loop device in sysfs");
    let tracing = iolens::session::tracing::Tracing::start(None, true, Some(0.02), Default::default(), None);
    assert!(tracing.active(), "tracing did not start as root");
    // Idle first, so the tracer polls at its slowest.
    std::thread::sleep(Duration::from_millis(400));
    drop(tracing.take());
    let mut seen = Vec::new();
    for round in 0..5 {
        assert!(dd_direct(&lo.dev, 32).wait().unwrap().success());
        // Past the merge's hold-back of 2 ms, well inside one poll.
        std::thread::sleep(Duration::from_millis(5));
        let issued = |t: &iolens::model::trace::view::TraceView| {
            (t.device(major, minor).map_or(0, |d| d.issued), t.interval.share.0)
        };
        let (now, share) = issued(&tracing.take());
        std::thread::sleep(Duration::from_millis(300));
        let (late, late_share) = issued(&tracing.take());
        println!(
            "round {round}: 32 reads, {now} in the interval taken 5 ms after, {late} in the next (traced shares {share}, {late_share})"
        );
        seen.push((now, late, share, late_share));
    }
    assert!(seen.iter().all(|s| *s == (32, 0, 1.0, 1.0)), "{seen:?}");
}

/// tracefs that iolens mounted is unmounted by the last iolens using it:
/// not while another one still traces, and then by that one.
#[test]
fn the_last_iolens_out_unmounts_tracefs() {
    if let Some(r) = skip_reason() {
        eprintln!("skipped: {r}");
        return;
    }
    let _one = one_tracer_at_a_time();
    if find_tracefs().is_some() {
        eprintln!("skipped: tracefs is mounted already (a mount iolens did not make is never unmounted)");
        return;
    }
    let run = |count: &str| {
        Command::new(env!("CARGO_BIN_EXE_iolens"))
            .args(["--json", "--count", count, "--interval", "0.5"])
            .env("IOLENS_CONFIG", "/dev/null")
            .stdout(Stdio::null())
            .spawn()
            .unwrap()
    };
    let until = |what: &str, done: &dyn Fn() -> bool| {
        let t0 = Instant::now();
        while !done() {
            assert!(t0.elapsed() < Duration::from_secs(5), "{what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let mut first = run("8");
    until("the first iolens did not mount tracefs", &|| find_tracefs().is_some());
    let mut second = run("12");
    let tracefs = find_tracefs().unwrap();
    let pid = second.id() as i32;
    let instance = || {
        iolens::collect::trace::instance::list(&tracefs)
            .into_iter()
            .find(|(_, o)| o.pid() == pid)
    };
    until("the second iolens made no instance", &|| instance().is_some());
    assert!(
        first.try_wait().unwrap().is_none(),
        "the first iolens ended too soon for the test"
    );
    assert!(first.wait().unwrap().success());
    assert!(find_tracefs().is_some(), "tracefs unmounted under a running iolens");
    assert!(second.wait().unwrap().success());
    assert!(find_tracefs().is_none(), "tracefs left mounted by the last iolens");
}

/// Eight iolens started at once with tracefs mounted nowhere: they race to
/// mount it (the kernel refuses the same tracefs twice on one mount point
/// with EBUSY) and to unmount it; every one traces, and the last one out
/// unmounts it.
#[test]
fn eight_iolens_started_at_once_all_trace() {
    if let Some(r) = skip_reason() {
        eprintln!("skipped: {r}");
        return;
    }
    let _one = one_tracer_at_a_time();
    if find_tracefs().is_some() {
        eprintln!("skipped: tracefs is mounted already (the race is over mounting it)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("gate");
    assert!(Command::new("mkfifo").arg(&gate).status().unwrap().success());
    // Held open for reading and writing: the shells' opens never block,
    // their reads wait for a line.
    let mut gate_w = std::fs::OpenOptions::new().read(true).write(true).open(&gate).unwrap();
    for round in 0..2 {
        // All eight wait on the FIFO and exec iolens when their line comes:
        // as close to the same moment as processes can start.
        let kids: Vec<_> = (0..8)
            .map(|_| {
                Command::new("sh")
                    .arg("-c")
                    .arg(r#"read x < "$1"; exec "$2" --json --count 8 --interval 0.5 --top 0 > /dev/null"#)
                    .args(["gate", gate.to_str().unwrap(), env!("CARGO_BIN_EXE_iolens")])
                    .env("IOLENS_CONFIG", "/dev/null")
                    // Each waits this long between finding no tracefs and
                    // mounting it: all eight reach the mount together.
                    .env("IOLENS_DEBUG_MOUNT_DELAY_MS", "300")
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        std::io::Write::write_all(&mut gate_w, "go\n".repeat(8).as_bytes()).unwrap();
        // Each iolens that traces has its instance (the shells exec'd it,
        // so the pids are the kids'): all eight, while they run.
        let pids: Vec<i32> = kids.iter().map(|k| k.id() as i32).collect();
        let tracing = || -> Vec<i32> {
            let Some(t) = find_tracefs() else { return Vec::new() };
            let owners = iolens::collect::trace::instance::list(&t);
            pids.iter()
                .copied()
                .filter(|p| owners.iter().any(|(_, o)| o.pid() == *p))
                .collect()
        };
        let t0 = Instant::now();
        let mut most = Vec::new();
        while t0.elapsed() < Duration::from_secs(3) {
            let now = tracing();
            if now.len() > most.len() {
                most = now;
            }
            if most.len() == 8 {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut failed = Vec::new();
        for k in kids {
            let out = k.wait_with_output().unwrap();
            assert!(out.status.success(), "{out:?}");
            if let Some(l) = String::from_utf8_lossy(&out.stderr)
                .lines()
                .find(|l| l.contains("tracefs"))
            {
                failed.push(l.to_string());
            }
        }
        println!("round {round}: {} of 8 traced at once {failed:?}", most.len());
        assert_eq!(most.len(), 8, "round {round}: {failed:?}");
        let t0 = Instant::now();
        while find_tracefs().is_some() {
            assert!(t0.elapsed() < Duration::from_secs(5), "tracefs left mounted");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
