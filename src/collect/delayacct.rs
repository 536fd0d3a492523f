//! Delay accounting: whether the kernel accounts block I/O delay, the
//! per-thread delays of multi-threaded processes, and switching accounting
//! on as an explicit root action (restored when iolens exits).
//!
//! Since 5.14 delay accounting is off unless `kernel.task_delayacct` is 1.
//! While it is off the counters freeze (they keep their old values), so
//! whether IO% can be known is decided from the sysctl, never from the
//! values. Field 42 of `/proc/<pid>/stat` is the main thread's delay only;
//! a multi-threaded process needs each `/proc/<pid>/task/<tid>/stat`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use super::process::{ProcKey, RawProc, parse_stat};
use super::{Reader, parse_u64};

/// The sysctl, relative to the reader's root.
pub const SYSCTL: &str = "/proc/sys/kernel/task_delayacct";

/// `kernel.task_delayacct`: `Some(true)` when on, `None` when the kernel has
/// no such sysctl (before 5.14, where accounting is on unless booted with
/// `nodelayacct`) or it could not be read.
pub fn read_state(r: &mut Reader) -> Option<bool> {
    r.read_u64(SYSCTL).map(|v| v != 0)
}

/// A process's threads stay read this many samples after its counters last
/// moved (so an interval always has both ends).
pub const THREADS_KEEP_SAMPLES: u32 = 10;

/// Per-thread block I/O delay of the multi-threaded processes that matter:
/// those whose I/O counters moved, or that are in state D, within the last
/// [`THREADS_KEEP_SAMPLES`] samples. Only used while accounting is on.
#[derive(Debug, Default)]
pub struct ThreadDelays {
    /// Per process: the counters last seen (rchar + wchar + read_bytes +
    /// write_bytes, as one number that moves when any of them does) and
    /// samples since they last moved.
    seen: HashMap<ProcKey, (u64, u32)>,
}

fn io_sum(p: &RawProc) -> Option<u64> {
    let io = p.io.as_ref().ok()?;
    Some(
        io.rchar
            .wrapping_add(io.wchar)
            .wrapping_add(io.read_bytes)
            .wrapping_add(io.write_bytes),
    )
}

impl ThreadDelays {
    /// Fill `thread_blkio` of the processes that matter.
    pub fn read(&mut self, r: &mut Reader, procs: &mut [RawProc]) {
        let mut next = HashMap::with_capacity(self.seen.len());
        for p in procs.iter_mut() {
            let sum = io_sum(p);
            let idle = match (self.seen.get(&p.key), sum) {
                _ if p.state == 'D' => 0,
                (Some((old, idle)), Some(s)) if *old == s => idle.saturating_add(1),
                (Some(_), Some(_)) => 0,
                // First sight: read once (a start for the next interval),
                // then no more unless it moves.
                (None, _) => THREADS_KEEP_SAMPLES - 1,
                (Some((_, idle)), None) => idle.saturating_add(1),
            };
            next.insert(p.key, (sum.unwrap_or(0), idle.min(THREADS_KEEP_SAMPLES)));
            if p.num_threads > 1 && idle < THREADS_KEEP_SAMPLES {
                p.thread_blkio = read_threads(r, p.key.pid).map(Vec::into_boxed_slice);
            }
        }
        self.seen = next;
    }
}

/// (tid, field 42) of every thread of `pid`; `None` when the task directory
/// could not be listed. Threads that end while being read are left out.
fn read_threads(r: &mut Reader, pid: i32) -> Option<Vec<(i32, u64)>> {
    let mut out = Vec::new();
    for tid in r.list_numbers(format!("/proc/{pid}/task")).ok()? {
        let Ok(b) = r.read(format!("/proc/{pid}/task/{tid}/stat")) else {
            continue;
        };
        if let Some(ticks) = parse_stat(b).and_then(|s| s.blkio_ticks) {
            out.push((tid, ticks));
        }
    }
    out.sort_unstable();
    Some(out)
}

/// The value `kernel.task_delayacct` had before iolens switched it on, to be
/// written back when iolens exits.
static RESTORE: Mutex<Option<u64>> = Mutex::new(None);

/// Where iolens notes that it switched the sysctl on, for as long as the
/// change is in effect: if iolens is killed (SIGKILL, a crash) the next
/// iolens finds the note and sets the sysctl back ([`recover`]). `/run`
/// is a tmpfs emptied at boot, as the sysctl is reset at boot. The note is
/// written as `task_delayacct.tmp` beside it and renamed into place; the
/// directory is removed with the note when nothing else is in it.
pub const NOTE: &str = "/run/iolens/task_delayacct";

/// What the note holds: the value before, the value written, and the
/// iolens that wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Note {
    old: u64,
    set: u64,
    owner: ProcKey,
}

impl Note {
    fn text(&self) -> String {
        format!(
            "old {}\nset {}\npid {}\nstart {}\n",
            self.old, self.set, self.owner.pid, self.owner.start_time
        )
    }

    fn parse(b: &[u8]) -> Option<Note> {
        let text = std::str::from_utf8(b).ok()?;
        let field = |k: &str| -> Option<u64> {
            text.lines()
                .find_map(|l| l.strip_prefix(k)?.strip_prefix(' ')?.trim().parse().ok())
        };
        Some(Note {
            old: field("old")?,
            set: field("set")?,
            owner: ProcKey {
                pid: i32::try_from(field("pid")?).ok()?,
                start_time: field("start")?,
            },
        })
    }
}

/// Write the note atomically (a temporary file renamed over it).
fn write_note(path: &Path, note: &Note) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, note.text())?;
    std::fs::rename(&tmp, path)
}

/// Remove the note, then its directory if that is now empty (an iolens
/// that never switched delay accounting on leaves nothing in `/run`).
fn remove_note(note: &Path) {
    let _ = std::fs::remove_file(note);
    if let Some(dir) = note.parent() {
        let _ = std::fs::remove_dir(dir);
    }
}

/// Switch delay accounting on (root; an explicit user action). Remembers the
/// previous value for [`restore`]; a second call keeps the first previous
/// value. Returns what was done, or why not.
pub fn switch_on(r: &mut Reader) -> Result<String, String> {
    if !r.is_live() {
        return Err("not on a captured /proc and /sys tree (--root)".into());
    }
    let (msg, old) = switch_on_at(Path::new(SYSCTL), Path::new(NOTE))?;
    if let (Some(old), Ok(mut g)) = (old, RESTORE.lock()) {
        g.get_or_insert(old);
    }
    Ok(msg)
}

/// [`switch_on`] with the sysctl and the note at these paths; also returns
/// the value to restore when it was changed. The note is written before
/// the sysctl, so no kill between the two leaves a change without a note.
fn switch_on_at(sysctl: &Path, note: &Path) -> Result<(String, Option<u64>), String> {
    let shown = sysctl.display();
    let old = crate::sys::input::read_regular(sysctl, 64)
        .ok()
        .and_then(|b| parse_u64(b.trim_ascii()))
        .ok_or_else(|| format!("reading {shown}: not available on this kernel"))?;
    if old != 0 {
        return Ok(("delay accounting was already on".into(), None));
    }
    let owner = ProcKey::of_live(std::process::id() as i32).unwrap_or(ProcKey {
        pid: std::process::id() as i32,
        start_time: 0,
    });
    let noted = write_note(note, &Note { old, set: 1, owner });
    if let Err(e) = std::fs::write(sysctl, b"1") {
        remove_note(note);
        return Err(format!("writing 1 to {shown}: {e}"));
    }
    let unnoted = match noted {
        Ok(()) => String::new(),
        Err(e) => format!(
            " (not noted in {}: {e}; if iolens is killed, set it back with sysctl kernel.task_delayacct={old})",
            note.display()
        ),
    };
    let msg = format!("kernel.task_delayacct set to 1 (was {old}); restored when iolens exits{unnoted}");
    Ok((msg, Some(old)))
}

/// Write back the value `kernel.task_delayacct` had before [`switch_on`], if
/// it was changed, and remove the note. Safe to call more than once and
/// from any exit path.
pub fn restore() {
    let old = match RESTORE.lock() {
        Ok(mut g) => g.take(),
        Err(p) => p.into_inner().take(),
    };
    if let Some(old) = old {
        restore_at(Path::new(SYSCTL), Path::new(NOTE), old);
    }
}

/// Write `old` to the sysctl; once it is back, the note goes.
fn restore_at(sysctl: &Path, note: &Path, old: u64) {
    if std::fs::write(sysctl, old.to_string()).is_ok() {
        remove_note(note);
    }
}

/// At start: an iolens that switched delay accounting on and did not set it
/// back (killed with SIGKILL, or a crash) left a note;
/// when its owner is no longer running and the sysctl still holds what it
/// wrote, set the sysctl back (root) or say how. Returns what to tell the
/// user: `Ok` when it was set back, `Err` when it is still on. A note whose
/// owner runs is left alone; one whose value was changed since by someone
/// else is removed without a word. What it said is kept for
/// [`recovered`].
pub fn recover() -> Option<Result<String, String>> {
    let r = recover_at(Path::new(SYSCTL), Path::new(NOTE), crate::sys::is_root());
    if let Ok(mut g) = RECOVERED.lock() {
        g.clone_from(&r);
    }
    r
}

/// What [`recover`] said at start, for the dashboard's status line.
pub fn recovered() -> Option<Result<String, String>> {
    RECOVERED.lock().ok()?.clone()
}

static RECOVERED: Mutex<Option<Result<String, String>>> = Mutex::new(None);

fn recover_at(sysctl: &Path, note_path: &Path, root: bool) -> Option<Result<String, String>> {
    let bytes = crate::sys::input::read_regular(note_path, 4096).ok()?;
    let Some(note) = Note::parse(&bytes) else {
        if root {
            remove_note(note_path);
        }
        return None;
    };
    if note.owner.running() {
        return None;
    }
    let now = crate::sys::input::read_regular(sysctl, 64)
        .ok()
        .and_then(|b| parse_u64(b.trim_ascii()));
    if now != Some(note.set) {
        if root {
            remove_note(note_path);
        }
        return None;
    }
    let (old, pid) = (note.old, note.owner.pid);
    let what = format!(
        "kernel.task_delayacct was left at {} by iolens pid {pid}, which did not exit normally",
        note.set
    );
    if !root {
        return Some(Err(format!(
            "{what} (noted in {}): run iolens as root once, or sysctl kernel.task_delayacct={old}, to set it back",
            note_path.display()
        )));
    }
    match std::fs::write(sysctl, old.to_string()) {
        Ok(()) => {
            remove_note(note_path);
            Some(Ok(format!("{what}: set back to {old}")))
        }
        Err(e) => Some(Err(format!("{what}: setting it back to {old}: {e}"))),
    }
}

/// Whether iolens changed the sysctl (and will restore it).
pub fn changed_by_us() -> bool {
    RESTORE.lock().map(|g| g.is_some()).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

    #[test]
    fn state_from_the_sysctl_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = Reader::new(dir.path());
        assert_eq!(read_state(&mut r), None);
        std::fs::create_dir_all(dir.path().join("proc/sys/kernel")).unwrap();
        std::fs::write(dir.path().join("proc/sys/kernel/task_delayacct"), "0\n").unwrap();
        assert_eq!(read_state(&mut r), Some(false));
        std::fs::write(dir.path().join("proc/sys/kernel/task_delayacct"), "1\n").unwrap();
        assert_eq!(read_state(&mut r), Some(true));
    }

    #[test]
    fn switch_on_refuses_a_captured_tree() {
        let mut r = Reader::new(format!("{FIX}/root-6.8"));
        assert!(switch_on(&mut r).is_err());
        assert!(!changed_by_us());
    }

    /// A sysctl stand-in holding `v` and the note's path, in a temp dir.
    fn files(v: &str) -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let (sysctl, note) = (
            d.path().join("task_delayacct"),
            d.path().join("run/iolens/task_delayacct"),
        );
        std::fs::write(&sysctl, v).unwrap();
        (d, sysctl, note)
    }

    fn value(p: &Path) -> String {
        std::fs::read_to_string(p).unwrap().trim().to_string()
    }

    #[test]
    fn switching_on_leaves_a_note_that_an_exit_removes() {
        let (_d, sysctl, note) = files("0\n");
        let (msg, old) = switch_on_at(&sysctl, &note).unwrap();
        assert_eq!(old, Some(0), "{msg}");
        assert_eq!(value(&sysctl), "1");
        let n = Note::parse(&std::fs::read(&note).unwrap()).unwrap();
        assert_eq!((n.old, n.set, n.owner.pid), (0, 1, std::process::id() as i32));
        assert!(n.owner.running());
        // Our own note: a start now leaves it alone.
        assert_eq!(recover_at(&sysctl, &note, true), None);
        assert_eq!(value(&sysctl), "1");
        restore_at(&sysctl, &note, 0);
        assert_eq!(value(&sysctl), "0");
        assert!(!note.exists());
        assert!(
            !note.parent().unwrap().exists(),
            "the emptied note directory is removed"
        );
        // Already on: nothing to note or restore.
        std::fs::write(&sysctl, "1").unwrap();
        assert_eq!(switch_on_at(&sysctl, &note).unwrap().1, None);
        assert!(!note.exists());
    }

    #[test]
    fn a_note_of_an_iolens_that_is_gone_is_acted_on() {
        let me = ProcKey::of_live(std::process::id() as i32).unwrap();
        // The same pid with another start time: a reused pid, not its owner.
        let gone = ProcKey {
            start_time: me.start_time + 1,
            ..me
        };
        let note_of = |owner| Note { old: 0, set: 1, owner };
        // Not root: said, left as it is.
        let (_d, sysctl, note) = files("1\n");
        write_note(&note, &note_of(gone)).unwrap();
        let r = recover_at(&sysctl, &note, false).unwrap().unwrap_err();
        assert!(
            r.contains("left at 1 by iolens pid") && r.contains("sysctl kernel.task_delayacct=0"),
            "{r}"
        );
        assert_eq!(value(&sysctl), "1");
        assert!(note.exists());
        // Root: set back, note removed.
        let r = recover_at(&sysctl, &note, true).unwrap().unwrap();
        assert!(r.ends_with("set back to 0"), "{r}");
        assert_eq!(value(&sysctl), "0");
        assert!(!note.exists());
        // Changed since by someone else: the note goes without a word.
        write_note(&note, &note_of(gone)).unwrap();
        assert_eq!(recover_at(&sysctl, &note, true), None);
        assert_eq!(value(&sysctl), "0");
        assert!(!note.exists());
        // A note that does not parse is dropped.
        std::fs::create_dir_all(note.parent().unwrap()).unwrap();
        std::fs::write(&note, "old x\n").unwrap();
        assert_eq!(recover_at(&sysctl, &note, true), None);
        assert!(!note.exists());
    }

    #[test]
    fn a_zombie_is_not_running() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        let key = ProcKey::of_live(pid);
        let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut r = Reader::new("/");
        while r
            .read_pid_file(pid, "stat")
            .ok()
            .and_then(parse_stat)
            .is_some_and(|s| s.state != 'Z')
            && std::time::Instant::now() < end
        {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // Exited, not reaped: /proc/<pid> is still there.
        let state = r.read_pid_file(pid, "stat").ok().and_then(parse_stat).map(|s| s.state);
        assert_eq!(state, Some('Z'));
        assert!(!key.unwrap().running());
        child.wait().unwrap();
    }

    #[test]
    fn threads_are_read_while_the_process_moves_and_a_while_after() {
        let mut r = Reader::new("/");
        let me = std::process::id() as i32;
        let t = std::thread::spawn(|| std::thread::sleep(std::time::Duration::from_millis(500)));
        let mut p = RawProc {
            num_threads: 2,
            ..RawProc::example(me, 1, "me")
        };
        let mut td = ThreadDelays::default();
        let mut read = Vec::new();
        for i in 0..(THREADS_KEEP_SAMPLES + 3) {
            // Moves in the first two samples only.
            if let Ok(io) = &mut p.io {
                io.rchar = u64::from(i.min(1));
            }
            p.thread_blkio = None;
            td.read(&mut r, std::slice::from_mut(&mut p));
            read.push(p.thread_blkio.is_some());
        }
        t.join().unwrap();
        let n = read.iter().filter(|x| **x).count();
        // First sight, the move, then THREADS_KEEP_SAMPLES - 1 idle samples.
        assert_eq!(n, 1 + THREADS_KEEP_SAMPLES as usize, "{read:?}");
        assert!(!read[read.len() - 1]);
    }

    #[test]
    fn threads_of_a_live_multithreaded_process() {
        // This test binary runs several threads; the stat of each is read.
        let mut r = Reader::new("/");
        let me = std::process::id() as i32;
        let t = std::thread::spawn(|| std::thread::sleep(std::time::Duration::from_millis(300)));
        let v = read_threads(&mut r, me).unwrap();
        t.join().unwrap();
        assert!(v.len() >= 2, "{v:?}");
        assert!(v.iter().any(|(tid, _)| *tid == me));
    }
}
