//! End-to-end tests of the real binary in tmux: start, devices of this
//! machine with a busy loop device, sort and filter, help, escaping of
//! hostile process names, and restoration of the terminal on q, Ctrl-C,
//! SIGTERM, a panic, and the terminal going away.
//!
//! Each test runs its own tmux server (`-L`), killed on drop. Without tmux
//! (or, for the loop device, without root / losetup) a test prints
//! "skipped: <reason>" and passes.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

#[path = "common/tmux.rs"]
mod tmux;
use tmux::Tmux;

#[path = "common/live.rs"]
mod live;
use live::tools::have;
use live::{Bg, Loop};

const BIN: &str = env!("CARGO_BIN_EXE_iolens");

fn skip(reason: &str) {
    eprintln!("skipped: {reason}");
}

/// The numbers on a device row (r/s first).
fn row_numbers(screen: &str, dev: &str) -> Option<Vec<f64>> {
    let line = screen.lines().find(|l| l.contains(&format!("│{dev} ")))?;
    Some(
        line.split_whitespace()
            .skip(1)
            .filter_map(|t| t.parse::<f64>().ok())
            .collect(),
    )
}

#[test]
fn shows_this_machines_devices_and_a_busy_loop_device() {
    if !have("tmux") {
        return skip("tmux not installed");
    }
    let lo = match Loop::attach() {
        Ok(l) => l,
        Err(e) => return skip(&e),
    };
    if !have("python3") {
        return skip("python3 not installed");
    }
    // A steady O_DIRECT reader (64 KiB every 2 ms) that lives the whole test.
    let reader = Bg::spawn(Command::new("python3").args([
        "-c",
        "import os, mmap, sys, time\n\
         fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)\n\
         buf = mmap.mmap(-1, 65536)\n\
         off = 0\n\
         while True:\n\
         \x20   n = os.preadv(fd, [buf], off)\n\
         \x20   off = 0 if n <= 0 else off + n\n\
         \x20   time.sleep(0.002)\n",
        &lo.dev,
    ]));
    let reader_pid = reader.0.id();
    let t = Tmux::start(BIN);
    let name = lo.name().to_string();
    // This machine's own disk (vda on the VM this was written on), when it has one.
    let disk = std::fs::read_dir("/sys/block")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !["loop", "ram", "zram", "sr", "fd"].iter().any(|p| n.starts_with(p)))
        .filter(|n| std::fs::read_to_string(format!("/sys/block/{n}/size")).is_ok_and(|s| s.trim() != "0"))
        .min();
    let s = t.wait_for("this machine's disk and a reading loop device", |s| {
        disk.as_ref().is_none_or(|d| s.contains(&format!("│{d} ")))
            && row_numbers(s, &name).is_some_and(|n| n.first().is_some_and(|r| *r > 0.0))
    });
    let nums = row_numbers(&s, &name).unwrap();
    // r/s > 0 and rMB/s > 0 (64 KiB reads).
    assert!(nums[0] > 0.0 && nums[1] > 0.0, "{nums:?}\n{s}");
    // The backing file is named in the mount column.
    assert!(s.contains("→.tmp"), "{s}");
    // The reader is among the active processes, with disk reads.
    t.keys(&["o"]);
    let s = t.wait_for("the reader among active processes", |s| {
        s.lines().any(|l| l.starts_with(&format!("│{reader_pid:>7} ")))
    });
    let row = s
        .lines()
        .find(|l| l.starts_with(&format!("│{reader_pid:>7} ")))
        .unwrap();
    let disk_rd = row.split_whitespace().nth(3).unwrap();
    assert_ne!(disk_rd, "0", "no disk reads for the reader: {row}");
    t.keys(&["q"]);
}

#[test]
fn sort_filter_help_escape_and_quit() {
    if !have("tmux") {
        return skip("tmux not installed");
    }
    if !have("python3") {
        return skip("python3 not installed");
    }
    // One process renames its comm to contain ESC; another has ESC in
    // argv[0]. Both carry a marker unique to this run.
    let m = format!("z{:05}", std::process::id() % 100_000);
    let _evil_comm = Bg::spawn(Command::new("python3").args([
        "-c",
        &format!("import ctypes, time\nctypes.CDLL(None).prctl(15, b'{m}\\x1b[31mX', 0, 0, 0)\ntime.sleep(120)"),
    ]));
    let _evil_argv =
        Bg::spawn(Command::new("bash").args(["-c", &format!("exec -a \"$(printf '{m}\\033[32mY')\" sleep 120")]));
    let t = Tmux::shell();
    t.type_text(&format!("{BIN}; echo EXIT=$?"));
    t.keys(&["Enter"]);
    t.wait_for("the dashboard", |s| s.contains("Processes") && s.contains("Devices"));
    // Filter on the marker both processes share.
    t.keys(&["/"]);
    t.type_text(&m);
    t.keys(&["Enter"]);
    let s = t.wait_for("the two marked processes", |s| {
        s.contains(&format!("({m}\\x1b[31mX) ")) && s.contains(&format!("(sleep) {m}\\x1b[32mY 120"))
    });
    assert!(s.contains(&format!("[/{m}]")), "{s}");
    // No row other than the two marked ones (in the processes pane: a
    // transfers pane may show above it, e.g. another iolens reading tracefs).
    // The processes pane's rows only: a transfers pane above it (another
    // test's pv or dd) has a COMMAND header and PIDs of its own.
    let process_rows = |s: &str| -> Vec<String> {
        s.lines()
            .skip_while(|l| !l.contains(" Processes "))
            .skip_while(|l| !l.contains("COMMAND"))
            .skip(1)
            .take_while(|l| !l.starts_with('└'))
            .filter(|l| l.trim_matches(|c| c == '│' || c == ' ').len() > 1)
            // The test's own `tmux send-keys` that typed the marker matches
            // it too while it runs, and its row stays a few seconds after
            // it ends (a clean-clone CI run listed `(tmux: client) tmux -L
            // iolens-tes…`).
            .filter(|l| !l.contains("(tmux"))
            .map(str::to_string)
            .collect()
    };
    let rows = process_rows(&s);
    assert_eq!(rows.len(), 2, "{rows:?}\n{s}");
    // Sort by PID (three steps back from disk reads: prio, user, pid),
    // ascending, then reversed.
    let pids = |s: &str| -> Vec<i32> {
        process_rows(s)
            .iter()
            .filter_map(|l| l.trim_start_matches('│').split_whitespace().next()?.parse().ok())
            .collect()
    };
    t.keys(&["<", "<", "<"]);
    let s = t.wait_for("sort by PID", |s| s.contains("PID▲"));
    let p = pids(&s);
    assert!(p.len() == 2 && p[0] < p[1], "{p:?}\n{s}");
    t.keys(&["r"]);
    let s = t.wait_for("reversed", |s| s.contains("PID▼"));
    let p = pids(&s);
    assert!(p.len() == 2 && p[0] > p[1], "{p:?}\n{s}");
    // Help lists every key; Esc closes it.
    t.keys(&["?"]);
    t.wait_for("help", |s| s.contains("Keys") && s.contains("send SIGTERM"));
    t.keys(&["Escape"]);
    t.wait_for("help closed", |s| !s.contains("send SIGTERM"));
    t.keys(&["q"]);
    t.assert_restored("0");
}

#[test]
fn ctrl_c_sigterm_and_panic_restore_the_terminal() {
    if !have("tmux") {
        return skip("tmux not installed");
    }
    let t = Tmux::shell();
    let dashboard = |t: &Tmux, prefix: &str| {
        t.type_text(&format!("{prefix}{BIN}; echo EXIT=$?"));
        t.keys(&["Enter"]);
        t.wait_for("the dashboard", |s| s.contains("Processes"));
    };
    dashboard(&t, "");
    t.keys(&["C-c"]);
    t.assert_restored("0");
    t.keys(&["C-l"]);

    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    dashboard(&t, &format!("sh -c 'echo $$ > {}; exec \"$0\"' ", pidfile.display()));
    let pid = read_pid(&pidfile);
    // SAFETY: signalling the iolens we started.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    t.assert_restored("143");
    t.keys(&["C-l"]);

    // The panic comes right after the first full frame.
    t.type_text(&format!("IOLENS_DEBUG_PANIC=1 RUST_BACKTRACE=0 {BIN}; echo EXIT=$?"));
    t.keys(&["Enter"]);
    let s = t.assert_restored("101");
    assert!(s.contains("debug panic requested"), "{s}");
}

fn read_pid(p: &Path) -> i32 {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(pid) = std::fs::read_to_string(p).ok().and_then(|s| s.trim().parse().ok()) {
            return pid;
        }
        assert!(Instant::now() < end, "no pid in {}", p.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn cpu_ticks(pid: i32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

#[test]
fn exits_when_the_terminal_goes_away() {
    if !have("tmux") {
        return skip("tmux not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let pidfile: PathBuf = dir.path().join("pid");
    let t = Tmux::start(&format!("sh -c 'echo $$ > {}; exec {BIN}'", pidfile.display()));
    t.wait_for("the dashboard", |s| s.contains("Processes"));
    let pid = read_pid(&pidfile);
    // Kill the server: the pty is closed under iolens (SIGHUP, then EIO).
    drop(t);
    let end = Instant::now() + Duration::from_secs(10);
    let mut last = cpu_ticks(pid);
    while let Some(ticks) = cpu_ticks(pid) {
        // Zombie (exited, not yet reaped by the dead server) counts as gone.
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if state
            .rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z'))
        {
            break;
        }
        assert!(
            Instant::now() < end,
            "iolens (pid {pid}) still running 10 s after its terminal went away; cpu ticks {last:?} -> {ticks}"
        );
        last = Some(ticks);
        std::thread::sleep(Duration::from_millis(100));
    }
    // Its tracefs instances (the block tracer's and the jobs') went with
    // it: a panic on the dead terminal used to skip the jobs' one.
    let prefix = format!("iolens-{pid}-");
    let left: Vec<String> = std::fs::read_dir("/sys/kernel/tracing/instances")
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "tracefs instances left by iolens {pid}: {left:?}");
}

#[test]
fn ionice_kill_pause_and_interval_from_the_keyboard() {
    if !have("tmux") {
        return skip("tmux not installed");
    }
    let marker = format!("iolens-victim-{}", std::process::id());
    let victim = Bg::spawn(Command::new("bash").args(["-c", &format!("exec -a {marker} sleep 120")]));
    let vpid = victim.0.id() as i32;
    let t = Tmux::start(BIN);
    t.wait_for("the dashboard", |s| s.contains("Processes"));
    // Interval and pause show in the header.
    t.keys(&["+"]);
    t.wait_for("a 2 s interval", |s| s.contains("every 2.00s"));
    t.keys(&["-", "p"]);
    t.wait_for("paused at 1 s", |s| s.contains("every 1.00s") && s.contains("PAUSED"));
    t.keys(&["p"]);
    t.wait_for("running again", |s| !s.contains("PAUSED"));
    // Only the victim is left after filtering, and so it is selected.
    t.keys(&["/"]);
    t.type_text(&marker);
    t.keys(&["Enter"]);
    t.wait_for("the victim alone", |s| {
        s.contains(&format!("(sleep) {marker}")) && s.contains("Processes 1/")
    });
    t.keys(&["i"]);
    t.wait_for("the ionice question", |s| s.contains(&format!("PID {vpid} (sleep)")));
    t.keys(&["i"]);
    t.wait_for("ionice done", |s| {
        s.contains(&format!("I/O priority of PID {vpid} (sleep) set to idle"))
    });
    let out = Command::new("ionice").args(["-p", &vpid.to_string()]).output();
    if let Ok(out) = out {
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "idle");
    }
    t.wait_for("idle in the PRIO column", |s| {
        s.lines().any(|l| l.contains(&marker) && l.contains(" idle "))
    });
    // k asks; n cancels; k then y sends SIGTERM.
    t.keys(&["k"]);
    t.wait_for("the kill question", |s| {
        s.contains(&format!("Send SIGTERM to PID {vpid} (sleep)?"))
    });
    t.keys(&["n"]);
    t.wait_for("cancelled", |s| s.contains("cancelled"));
    assert!(std::path::Path::new(&format!("/proc/{vpid}")).exists());
    t.keys(&["k", "y"]);
    t.wait_for("SIGTERM sent", |s| {
        s.contains(&format!("sent SIGTERM to PID {vpid} (sleep)"))
    });
    let mut victim = victim;
    let status = victim.0.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGTERM));
    t.keys(&["q"]);
}

/// A cgroup-v1 blkio group whose read bandwidth can be throttled (to make a
/// probe slow enough to cancel); its tasks go back to the root group and
/// the group is removed on drop.
struct Blkio {
    dir: PathBuf,
}

impl Blkio {
    fn new() -> Result<Blkio, String> {
        let root = Path::new("/sys/fs/cgroup/blkio");
        if !root.join("blkio.throttle.read_bps_device").exists() {
            return Err("no cgroup-v1 blkio throttling at /sys/fs/cgroup/blkio".into());
        }
        let dir = root.join(format!("iolens-test-{}", std::process::id()));
        std::fs::create_dir(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        Ok(Blkio { dir })
    }

    fn throttle(&self, dev: &str, bytes_per_s: u64) {
        let rdev = std::fs::metadata(dev)
            .map(|m| std::os::unix::fs::MetadataExt::rdev(&m))
            .unwrap();
        let (maj, min) = (libc::major(rdev), libc::minor(rdev));
        std::fs::write(
            self.dir.join("blkio.throttle.read_bps_device"),
            format!("{maj}:{min} {bytes_per_s}"),
        )
        .unwrap();
    }
}

impl Drop for Blkio {
    fn drop(&mut self) {
        for _ in 0..50 {
            let tasks = std::fs::read_to_string(self.dir.join("cgroup.procs")).unwrap_or_default();
            for pid in tasks.split_whitespace() {
                let _ = std::fs::write("/sys/fs/cgroup/blkio/cgroup.procs", pid);
            }
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Move the devices-pane selection onto `dev` (the probe menu names the
/// device it is for). Leaves the menu open.
/// Tab until the pane titled `title` has the focus (its border turns thick),
/// whatever other panes the machine's activity has brought up.
fn focus_pane(t: &Tmux, title: &str) {
    let marker = format!("┏ {title}");
    for _ in 0..8 {
        if t.raw_screen().contains(&marker) {
            return;
        }
        t.keys(&["Tab"]);
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("could not focus the {title} pane; screen:\n{}", t.raw_screen());
}

fn open_probe_menu_for(t: &Tmux, dev: &str) {
    focus_pane(t, "Devices");
    t.keys(&["Home"]);
    for _ in 0..30 {
        t.keys(&["t"]);
        let s = t.wait_for("the probe menu", |s| s.contains("Read-only probe of"));
        if s.contains(&format!("Read-only probe of {dev} ")) {
            return;
        }
        t.keys(&["Escape", "Down"]);
    }
    panic!("{dev} not found in the devices pane");
}

#[test]
fn probe_from_the_dashboard_then_cancel_a_sweep() {
    if !have("tmux") {
        return skip("tmux not installed");
    }
    let lo = match Loop::attach_random() {
        Ok(l) => l,
        Err(e) => return skip(&e),
    };
    let blkio = Blkio::new();
    let state = tempfile::tempdir().unwrap();
    let enter_cgroup = match &blkio {
        Ok(b) => format!("echo $$ > {}/cgroup.procs; ", b.dir.display()),
        Err(_) => String::new(),
    };
    let t = Tmux::start(&format!(
        "sh -c '{enter_cgroup}exec env XDG_STATE_HOME={} {BIN}'",
        state.path().display()
    ));
    t.wait_for("the dashboard", |s| s.contains("Processes"));
    open_probe_menu_for(&t, &lo.dev);
    // Random read (the default), quick (the default).
    t.keys(&["r", "Enter"]);
    t.wait_for("the probe started", |s| {
        s.contains(&format!("Probe: {} — random read, quick", lo.dev))
    });
    let s = t.wait_for("the finished probe with a verdict", |s| {
        s.contains("verdict:") && s.contains(&format!("probe finished on {}", lo.dev))
    });
    assert!(s.contains("IOPS") && s.contains("p50"), "{s}");
    assert!(s.contains(&format!("diskstats {}", lo.name())), "{s}");
    // The result was appended to the results file.
    let saved = std::fs::read_to_string(state.path().join("iolens/probes.jsonl")).unwrap();
    assert_eq!(saved.lines().count(), 1);
    assert!(saved.contains(&format!("\"target\":\"{}\"", lo.dev)), "{saved}");
    // A second probe: a zone sweep, slowed to 4 MB/s (16 s for 64 MiB) so
    // that it is still running when Esc arrives.
    match &blkio {
        Ok(b) => b.throttle(&lo.dev, 4_000_000),
        Err(e) => {
            t.keys(&["q"]);
            return skip(&format!(
                "cancelling a sweep: {e} (unthrottled, it ends before Esc arrives)"
            ));
        }
    }
    open_probe_menu_for(&t, &lo.dev);
    t.keys(&["z", "Enter"]);
    t.wait_for("the sweep running", |s| {
        s.contains("zone sweep") && s.contains("(Esc cancels)")
    });
    t.keys(&["Escape"]);
    let s = t.wait_for("cancelled", |s| s.contains("cancelled"));
    assert!(s.contains(&format!("probe on {} cancelled", lo.dev)), "{s}");
    // The thread stops after the read in flight and sends the partial
    // result; the first result stays listed in the session.
    let s = t.wait_for("the partial result", |s| s.contains("cancelled — partial results"));
    assert!(
        s.contains("earlier this session") && s.contains(&format!("{} random read →", lo.dev)),
        "{s}"
    );
    assert!(
        s.contains(&format!("probe on {} cancelled (partial results); saved to", lo.dev)),
        "{s}"
    );
    let saved = std::fs::read_to_string(state.path().join("iolens/probes.jsonl")).unwrap();
    assert_eq!(saved.lines().count(), 2);
    assert!(
        saved.lines().nth(1).unwrap().contains("\"status\":\"cancelled\""),
        "{saved}"
    );
    t.keys(&["q"]);
}

#[test]
fn progress_pane_shows_pv_and_enter_jumps_to_it() {
    if !have("tmux") {
        return skip("tmux not installed");
    }
    if !have("pv") {
        return skip("pv not installed");
    }
    let file = tempfile::NamedTempFile::new_in("/var/tmp").unwrap();
    file.as_file().set_len(32 << 20).unwrap();
    let pv = Bg::spawn(Command::new("pv").args(["-q", "-L", "1m"]).arg(file.path()));
    let pid = pv.0.id();
    let t = Tmux::start(BIN);
    let name = file.path().file_name().unwrap().to_string_lossy().into_owned();
    let s = t.wait_for("pv's transfer with a percent", |s| {
        s.lines()
            .any(|l| l.contains(" pv ") && l.contains(&name) && l.contains('%'))
    });
    let line = s.lines().find(|l| l.contains(&name)).unwrap();
    // 1 MB/s over 33.5 MB: a few percent after a few seconds.
    let pct: f64 = line
        .split_whitespace()
        .find_map(|w| w.strip_suffix('%').and_then(|p| p.parse().ok()))
        .unwrap();
    assert!(pct > 0.0 && pct < 50.0, "{line}");
    // Tab to the transfers pane; Enter on pv's row selects pv in the
    // processes pane (other processes may have transfers too: walk down).
    focus_pane(&t, "Transfers");
    let want = format!("PID {pid} (pv): i ionice");
    let mut found = false;
    for _ in 0..15 {
        t.keys(&["Enter"]);
        std::thread::sleep(Duration::from_millis(150));
        if t.screen().contains(&want) {
            found = true;
            break;
        }
        // The focus went to the processes pane: back to the same transfer, one down.
        focus_pane(&t, "Transfers");
        t.keys(&["Down"]);
    }
    assert!(found, "never jumped to pv:\n{}", t.screen());
    // pv is the selected process: i asks about it.
    t.keys(&["i"]);
    t.wait_for("the ionice question for pv", |s| s.contains(&format!("PID {pid} (pv)")));
    t.keys(&["Escape", "q"]);
}
