//! End-to-end tests of the dashboard as an admin meets it, in tmux against
//! real processes and a real loop device: the first screen with rates shows
//! the busy reader as the first process row and its device in the devices
//! pane (120x40 and 80x24); the probe results pane scrolls and closes; a
//! `pv` that finished reads `done`, one killed half-way `ended at` ~50%.
//!
//! Each test runs its own tmux server, killed on drop, and detaches what
//! it attached. Without tmux, root, losetup, python3 or pv a test prints
//! "skipped: <reason>" and passes.

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

/// One test at a time: each fills the screen with its own readers (a busy
/// reader's transfer would crowd the pv rows out of the transfers pane).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn skip(reason: &str) {
    eprintln!("skipped: {reason}");
}

/// The rows of the processes pane, top to bottom (the lines after its
/// column header).
fn process_rows(screen: &str) -> Vec<&str> {
    screen
        .lines()
        .skip_while(|l| !(l.contains(" PID ") && l.contains("COMMAND")))
        .skip(1)
        .take_while(|l| l.starts_with('│') && !l.contains("──"))
        .collect()
}

/// The PID of a processes-pane row.
fn row_pid(row: &str) -> Option<u32> {
    row.trim_start_matches('│').split_whitespace().next()?.parse().ok()
}

/// A reader of `dev` flat out with O_DIRECT (4 MiB reads, from the start
/// again at the end), as one long-lived process.
fn busy_reader(dev: &str) -> Bg {
    Bg::spawn(Command::new("python3").args([
        "-c",
        "import os, mmap, sys\n\
         fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)\n\
         buf = mmap.mmap(-1, 4 << 20)\n\
         off = 0\n\
         while True:\n\
         \x20   n = os.preadv(fd, [buf], off)\n\
         \x20   off = 0 if n <= 0 else off + n\n",
        dev,
    ]))
}

fn first_screen_shows_the_reader(w: u16, h: u16) {
    if !have("tmux") {
        return skip("tmux not installed");
    }
    if !have("python3") {
        return skip("python3 not installed");
    }
    let lo = match Loop::attach() {
        Ok(l) => l,
        Err(e) => return skip(&e),
    };
    let reader = busy_reader(&lo.dev);
    std::thread::sleep(Duration::from_millis(300));
    let t = Tmux::start_sized(BIN, w, h);
    // The first screen that has rates: the busiest process row has a
    // number in DISK RD/s (not n/a).
    let s = t.wait_for("process rates", |s| {
        process_rows(s)
            .first()
            .is_some_and(|r| r.contains("B/s") && !r.contains("n/a"))
    });
    let rows = process_rows(&s);
    assert_eq!(
        rows.first().and_then(|r| row_pid(r)),
        Some(reader.pid()),
        "{w}x{h}: the reader is not the first process row:\n{s}"
    );
    // The busy device is in the devices pane, with reads.
    let dev_row = s
        .lines()
        .find(|l| l.starts_with(&format!("│{} ", lo.name())))
        .unwrap_or_else(|| panic!("{w}x{h}: {} not in the devices pane:\n{s}", lo.name()));
    let util: Vec<f64> = dev_row
        .split_whitespace()
        .filter_map(|x| x.parse::<f64>().ok())
        .collect();
    assert!(util.iter().any(|v| *v > 0.0), "{w}x{h}: no activity on {dev_row}\n{s}");
    println!("{w}x{h}: first process row {}\n{w}x{h}: device row {dev_row}", rows[0]);
    t.keys(&["q"]);
}

#[test]
fn the_busy_reader_is_the_first_process_row_at_120x40() {
    let _one = one_at_a_time();
    first_screen_shows_the_reader(120, 40);
}

#[test]
fn the_busy_reader_is_the_first_process_row_at_80x24() {
    let _one = one_at_a_time();
    first_screen_shows_the_reader(80, 24);
}

#[test]
fn probe_results_scroll_and_close_at_80x24() {
    let _one = one_at_a_time();
    if !have("tmux") {
        return skip("tmux not installed");
    }
    let lo = match Loop::attach_random() {
        Ok(l) => l,
        Err(e) => return skip(&e),
    };
    let state = tempfile::tempdir().unwrap();
    let t = Tmux::start_sized(&format!("env XDG_STATE_HOME={} {BIN}", state.path().display()), 80, 24);
    t.wait_for("the dashboard", |s| s.contains("Processes"));
    // Tab to the devices pane; find the loop device with ↓ and t.
    t.keys(&["Tab", "Home"]);
    let mut found = false;
    for _ in 0..20 {
        t.keys(&["t"]);
        let s = t.wait_for("the probe menu", |s| s.contains("Read-only probe of"));
        if s.contains(&format!("Read-only probe of {} ", lo.dev)) {
            found = true;
            break;
        }
        t.keys(&["Escape", "Down"]);
    }
    assert!(found, "{} not in the devices pane:\n{}", lo.dev, t.screen());
    t.keys(&["r", "Enter"]);
    // At 80x24 the result does not fit: it is lines, with a "more" line.
    let s = t.wait_for("the finished probe, scrollable", |s| {
        s.contains("verdict:") && s.contains("more lines (↑↓ scroll")
    });
    let more = |s: &str| -> u32 {
        s.lines()
            .find_map(|l| {
                let i = l.find("↓ ")?;
                l[i..].trim_start_matches("↓ ").split(' ').next()?.parse().ok()
            })
            .unwrap_or(0)
    };
    let before = more(&s);
    assert!(before > 0, "{s}");
    t.keys(&["Down", "Down", "Down"]);
    let s = t.wait_for("scrolled by three lines", |s| {
        more(s) + 3 == before || !s.contains("verdict:")
    });
    assert!(!s.contains("verdict:"), "the first line scrolled away:\n{s}");
    // The end of the histogram and the evidence are reachable.
    t.keys(&["End"]);
    let s = t.wait_for("the end of the result", |s| !s.contains("more lines (↑↓ scroll"));
    assert!(s.contains("- "), "evidence at the end:\n{s}");
    // R closes the pane; R reopens it.
    t.keys(&["R"]);
    let s = t.wait_for("the results pane closed", |s| !s.contains("Probe: "));
    assert!(s.contains("R reopens"), "{s}");
    t.keys(&["R"]);
    t.wait_for("the results pane again", |s| s.contains("Probe: "));
    t.keys(&["q"]);
}

/// A row of the transfers pane for file `name` (it has a bar; the process
/// row with the same file in its command line has none).
fn is_transfer(l: &str, name: &str) -> bool {
    l.contains(name) && (l.contains('█') || l.contains('░'))
}

/// Waits until the transfers pane shows the row for `name` and `ok` holds.
fn transfer_row(t: &Tmux, name: &str, what: &str, ok: impl Fn(&str) -> bool) -> String {
    let s = t.wait_for(what, |s| s.lines().any(|l| is_transfer(l, name) && ok(l)));
    s.lines()
        .find(|l| is_transfer(l, name) && ok(l))
        .unwrap_or_default()
        .to_string()
}

#[test]
fn pv_transfers_read_done_and_ended_at() {
    let _one = one_at_a_time();
    if !have("tmux") {
        return skip("tmux not installed");
    }
    if !have("pv") {
        return skip("pv not installed");
    }
    // 10 MB at 2 MB/s: done after 5 s (seen moving for a few samples
    // first, even on a loaded machine).
    let done = tempfile::NamedTempFile::new_in("/var/tmp").unwrap();
    done.as_file().set_len(10_000_000).unwrap();
    // 30 MB at 2 MB/s: killed at about 50%.
    let half = tempfile::NamedTempFile::new_in("/var/tmp").unwrap();
    half.as_file().set_len(30_000_000).unwrap();
    let name = |f: &tempfile::NamedTempFile| f.path().file_name().unwrap().to_string_lossy().into_owned();
    let (done_name, half_name) = (name(&done), name(&half));
    let t = Tmux::start(BIN);
    t.wait_for("the dashboard", |s| s.contains("Processes"));
    let pv_done = Bg::spawn(Command::new("pv").args(["-q", "-L", "2000000"]).arg(done.path()));
    let pv_half = Bg::spawn(Command::new("pv").args(["-q", "-L", "2000000"]).arg(half.path()));
    // The short one finishes on its own: done, never "ended".
    let row = transfer_row(&t, &done_name, "the finished pv reads done", |l| {
        l.contains("done") || l.contains("ended")
    });
    assert!(row.contains("done") && !row.contains("ended"), "{row}\n{}", t.screen());
    // Its end seen, or reached by its rate after it was last seen (then
    // marked as an estimate): never a short percent next to "done".
    assert!(row.contains("100.0%") || row.contains("~100%"), "{row}");
    println!("finished pv: {row}");
    drop(pv_done);
    // Kill the other one at about half way (by iolens's own percent).
    let pct = |l: &str| -> Option<f64> {
        l.split_whitespace()
            .find_map(|w| w.strip_suffix('%').and_then(|p| p.parse::<f64>().ok()))
    };
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        let s = t.screen();
        if s.lines()
            .any(|l| is_transfer(l, &half_name) && pct(l).is_some_and(|p| p >= 45.0))
        {
            break;
        }
        assert!(Instant::now() < end, "never at 45%:\n{s}");
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(pv_half);
    let row = transfer_row(&t, &half_name, "the killed pv reads ended at", |l| {
        l.contains("ended at")
    });
    let at = row
        .split("ended at ")
        .nth(1)
        .and_then(|r| r.split('%').next())
        .and_then(|p| p.trim().parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no percent after 'ended at': {row}"));
    assert!((40.0..=65.0).contains(&at), "ended at {at}%: {row}");
    println!("pv killed at about 45-50%: {row}");
    t.keys(&["q"]);
}
