//! Jobs against real processes: `tar cf - DIR | pv -q -L 50m > out` on a
//! generated tree of incompressible files, `iolens progress --json`'s job
//! percent compared with the bytes that reached the destination,
//! interpolated to the report's time, and its ETA with the job's exit
//! (tar into a pipe, tar with a pv before gzip, a literal `tar czf` and
//! `cp -r` under a read throttle, rsync fresh and onto a destination
//! holding half the tree), on one tree shared by the tests: an ext4 on a
//! loop device (the only device a test throttles); and the walk of 100,000
//! small files on a tmpfs. Run
//! under `flock /tmp/iolens-live.lock`. Skips with a reason when not root
//! or a tool is missing.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "common/live.rs"]
mod live;
use live::tools::{is_root, need};
use live::{Attach, Loop};

#[path = "common/blkio.rs"]
mod blkio;
use blkio::Cgroup;

const BIN: &str = env!("CARGO_BIN_EXE_iolens");

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// A tree of `n` incompressible files: mostly 1 KiB .. 512 KiB, every
/// 50th 8 .. 24 MiB (520 files: 290 MB). Returns the files' sizes, by
/// index.
fn make_tree(dir: &Path, n: u64) -> Vec<(std::path::PathBuf, u64)> {
    let mut rng = std::fs::File::open("/dev/urandom").unwrap();
    let mut files = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    for i in 0..n {
        let sub = dir.join(format!("d{}", i % 7));
        std::fs::create_dir_all(&sub).unwrap();
        let size = if i % 50 == 0 {
            (8 + (i * 13) % 17) << 20
        } else {
            1024 + (i * 7919 * 131) % (1 << 19)
        };
        let rel = Path::new(&format!("d{}", i % 7)).join(format!("f{i}"));
        let mut f = std::fs::File::create(dir.join(&rel)).unwrap();
        let mut left = size;
        while left > 0 {
            let k = left.min(buf.len() as u64) as usize;
            std::io::Read::read_exact(&mut rng, &mut buf[..k]).unwrap();
            f.write_all(&buf[..k]).unwrap();
            left -= k as u64;
        }
        files.push((rel, size));
    }
    files
}

/// Bytes at the destination: a file's size, or the sum of the regular
/// files under a directory (temporaries included).
fn dest_bytes(p: &Path) -> u64 {
    let Ok(md) = std::fs::symlink_metadata(p) else {
        return 0;
    };
    if !md.is_dir() {
        return md.len();
    }
    std::fs::read_dir(p)
        .map(|rd| rd.flatten().map(|e| dest_bytes(&e.path())).sum())
        .unwrap_or(0)
}

/// (unix ns, bytes) samples of the destination, taken every 20 ms until
/// `stop` is set.
fn sizes(out: &Path, stop: &std::sync::atomic::AtomicBool) -> Vec<(u64, u64)> {
    let mut v = Vec::new();
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        v.push((now_ns(), dest_bytes(out)));
        std::thread::sleep(Duration::from_millis(20));
    }
    v
}

fn interpolate(s: &[(u64, u64)], t: u64) -> Option<f64> {
    let i = s.iter().position(|&(ts, _)| ts >= t)?;
    let (t1, b1) = s[i];
    let (t0, b0) = s[i.checked_sub(1)?];
    Some(b0 as f64 + (b1 as f64 - b0 as f64) * (t - t0) as f64 / (t1 - t0).max(1) as f64)
}

/// The tests of this file run one at a time (each measures a rate-limited
/// job; `cargo test` runs them in parallel).
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The jobs' speed: 50 MB/s (pipe, `--bwlimit`, read throttle), so that
/// 75 % of the tree is reached in about 4.5 s.
const RATE_MB: u64 = 50;

/// The tree every test reads: `<mnt>/src` on an ext4 over a loop device
/// (a sparse image in /var/tmp), 520 files, written once per run; unmounted,
/// detached and removed when the test process exits.
struct Fixture {
    mnt: std::path::PathBuf,
    lo: Loop,
    files: Vec<(std::path::PathBuf, u64)>,
    total: u64,
}

static FIXTURE: std::sync::Mutex<Option<Fixture>> = std::sync::Mutex::new(None);

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mnt).status();
        let _ = std::fs::remove_dir(&self.mnt);
    }
}

/// The shared tree: its mount point, files (path under `src`, size), size
/// and the loop device's numbers.
type Tree = (std::path::PathBuf, Vec<(std::path::PathBuf, u64)>, u64, (u32, u32));

/// The shared tree; `Err` says why there is none.
fn shared_tree() -> Result<Tree, String> {
    let mut g = FIXTURE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if g.is_none() {
        if !need("mkfs.ext4") {
            return Err("mkfs.ext4 missing".into());
        }
        let lo = Loop::over_new_file(|f| f.as_file().set_len(1 << 30), Attach::DIRECT)?;
        let mkfs = Command::new("mkfs.ext4").args(["-q", "-F"]).arg(lo.path()).status();
        if !mkfs.is_ok_and(|s| s.success()) {
            return Err(format!("mkfs.ext4 on {} failed", lo.dev));
        }
        let mnt = tempfile::Builder::new()
            .prefix("iolens-jobs-live")
            .tempdir()
            .unwrap()
            .keep();
        let mounted = Command::new("mount").arg(lo.path()).arg(&mnt).status();
        if !mounted.is_ok_and(|s| s.success()) {
            let _ = std::fs::remove_dir(&mnt);
            return Err(format!("mounting {} failed", lo.dev));
        }
        extern "C" fn remove() {
            drop(FIXTURE.lock().ok().and_then(|mut g| g.take()));
        }
        // SAFETY: `remove` is a plain function that only drops the fixture.
        unsafe { libc::atexit(remove) };
        let files = make_tree(&mnt.join("src"), 520);
        let total = files.iter().map(|f| f.1).sum();
        *g = Some(Fixture { mnt, lo, files, total });
    }
    let f = g.as_ref().ok_or("no fixture")?;
    let numbers = f.lo.numbers().ok_or("the loop device is not in sysfs")?;
    Ok((f.mnt.clone(), f.files.clone(), f.total, numbers))
}

/// One case: `shell` runs in the tree's directory (`src` is the tree,
/// `{out}` its own output directory, `{same}` one on the tree's
/// filesystem); `truth` (under `{out}` or `{same}`) is the bytes that
/// reached the destination.
struct Case<'a> {
    tool: &'a str,
    shell: &'a str,
    truth: &'a str,
    /// A blkio cgroup throttling reads of the tree's loop device to this
    /// many MB/s (cp has no rate limit of its own); the tree's page cache
    /// is dropped first.
    throttle: Option<u64>,
    /// The job reads only these directories of the tree (`d0`: 75 files,
    /// 40 MB; empty: all of it).
    part: &'a [&'a str],
    /// Check the ETA: the job's speed is held by its limit (not where
    /// gzip's speed sets it: that follows the machine's load; nor where
    /// files are skipped: their bytes count as still to be read).
    eta: bool,
    /// Put every other file of the tree (half its bytes) in place at
    /// `{out}/dst` first, with its time and size (rsync skips them).
    half_present: bool,
}

/// Copy every file of the tree whose bytes keep the copied half no larger
/// than the rest to `dst`, with its modification time; returns the bytes
/// copied.
fn put_half(tree: &Path, files: &[(std::path::PathBuf, u64)], dst: &Path) -> u64 {
    let (mut copied, mut left) = (0, 0);
    for (rel, size) in files {
        if copied + size > left + size / 2 {
            left += size;
            continue;
        }
        let to = dst.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(tree.join(rel), &to).unwrap();
        let mtime = std::fs::metadata(tree.join(rel)).unwrap().modified().unwrap();
        std::fs::File::options()
            .write(true)
            .open(&to)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        copied += size;
    }
    copied
}

/// What one report said: (unix ns, percent, ETA s, its JSON line).
type Report = (u64, f64, Option<f64>, String);

/// Run the case and compare iolens's job percent at about 25, 50 and 75%
/// of the bytes to send with the truth, interpolated to the report's time,
/// and its ETA with the job's exit.
fn compare(c: Case) {
    let _serial = serial();
    if !is_root() {
        eprintln!("skipped: reading another process's counters and fds needs root");
        return;
    }
    if !need("pv") || !need(c.tool) {
        return;
    }
    let (mnt, files, _, (major, minor)) = match shared_tree() {
        Ok(t) => t,
        Err(why) => return eprintln!("skipped: {why}"),
    };
    let outdir = tempfile::Builder::new().prefix("iolens-jobs-out").tempdir().unwrap();
    let samedir = tempfile::Builder::new().prefix("out").tempdir_in(&mnt).unwrap();
    let shell = c
        .shell
        .replace("{out}", outdir.path().to_str().unwrap())
        .replace("{same}", samedir.path().to_str().unwrap());
    let out = Path::new(
        &c.truth
            .replace("{out}", outdir.path().to_str().unwrap())
            .replace("{same}", samedir.path().to_str().unwrap()),
    )
    .to_path_buf();
    let files: Vec<_> = files
        .into_iter()
        .filter(|f| c.part.is_empty() || c.part.iter().any(|p| f.0.starts_with(p)))
        .collect();
    let tree: u64 = files.iter().map(|f| f.1).sum();
    let base = if c.half_present {
        put_half(&mnt.join("src"), &files, &out)
    } else {
        0
    };
    let cg = if let Some(mb) = c.throttle {
        if let Some(why) = Cgroup::unavailable() {
            return eprintln!("skipped: {why}");
        }
        let cg = Cgroup::new("jobs").unwrap();
        cg.throttle_reads(major, minor, mb * 1_000_000).unwrap();
        rustix::fs::sync();
        drop_cache(&mnt.join("src"));
        Some(cg)
    } else {
        None
    };
    let shell = match &cg {
        Some(t) => format!("echo $$ > {} && {shell}", t.procs().display()),
        None => shell,
    };
    // iolens first, its jobs' read trace on before the job starts: the
    // job is then traced from its first read (files done exact).
    let (mut watch, reader) = watch(c.tool);
    if let Err(why) = jobs_trace_on(watch.id()) {
        end(&mut watch);
        panic!("{why}");
    }
    let before = if c.half_present { copied_files(c.tool, &out) } else { 0 };
    let mut job = Command::new("sh")
        .arg("-c")
        .arg(&shell)
        .current_dir(&mnt)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (o, s) = (out.clone(), stop.clone());
    let sampler = std::thread::spawn(move || sizes(&o, &s));
    let to_send = (tree - base) as f64;
    let start = Instant::now();
    let mut crossed = Vec::new();
    // Onto a half-present destination: at about 25 and 50 % of the bytes
    // to send (in its last second rsync's sender reads the files in place
    // too: measured 326 MB read of a 315 MB tree at the end, 160 MB/s).
    let targets: &[f64] = if c.half_present {
        &[25.0, 50.0]
    } else {
        &[25.0, 50.0, 75.0]
    };
    for &target in targets {
        while (dest_bytes(&out).saturating_sub(base) as f64) < to_send * (target - 2.0) / 100.0 {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the job did not reach {target}%"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        crossed.push(now_ns());
    }
    let status = job.wait().unwrap();
    let end_ns = now_ns();
    let records = finish(watch, reader, c.tool, &out, before, job.id());
    let reports: Vec<Report> = crossed
        .iter()
        .map(|&t| report(&records, t, c.tool, job.id(), files.len(), tree))
        .collect();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let samples = sampler.join().unwrap();
    drop(cg);
    assert!(status.success(), "{shell}: {status}");
    for (t, pct, eta, line) in reports {
        let truth = (interpolate(&samples, t).unwrap() - base as f64) / tree as f64 * 100.0;
        let left = end_ns.saturating_sub(t) as f64 / 1e9;
        eprintln!(
            "{}: iolens {pct:.2}% truth {truth:.2}% (diff {:+.2}); eta {eta:?} s, exit after {left:.2} s",
            c.tool,
            pct - truth
        );
        assert!(
            (pct - truth).abs() <= 2.0,
            "iolens {pct:.2}% vs truth {truth:.2}%: {line}"
        );
        // The ETA predicts the exit within 10 % of the time left, plus
        // 50 ms (the report's time against the moment its counters were
        // read, and the exit's against its wait's return).
        if c.eta {
            let eta = eta.unwrap_or_else(|| panic!("no ETA at {pct:.1}%"));
            assert!(
                (eta - left).abs() <= 0.10 * left + 0.05,
                "ETA {eta:.2} s, the job exited after {left:.2} s"
            );
        }
    }
}

/// End an iolens with SIGTERM (it removes its tracefs instances on the
/// way out; a SIGKILL would leave them to the next iolens's cleanup), and
/// with SIGKILL if it is still there after 3 s.
fn end(p: &mut std::process::Child) {
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(p.id() as i32, libc::SIGTERM) };
    let t0 = Instant::now();
    while p.try_wait().ok().flatten().is_none() && t0.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = p.kill();
    let _ = p.wait();
}

/// The watch's records once it ended (by itself, a pass after the job:
/// its last record carries the job's end; killed if it does not), after
/// checking the job's files done there against the files copied.
fn finish(
    mut watch: std::process::Child,
    reader: std::thread::JoinHandle<Vec<String>>,
    tool: &str,
    out: &Path,
    before: u64,
    pid: u32,
) -> Vec<String> {
    let t0 = Instant::now();
    while watch.try_wait().unwrap().is_none() && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    end(&mut watch);
    let records = reader.join().unwrap();
    let copied = copied_files(tool, out) - before;
    let (files_done, last) = last_files_done(&records, pid, tool);
    eprintln!("{tool}: files done {files_done:?}, files copied {copied}");
    assert_eq!(files_done, Some(copied), "files done vs files copied: {last}");
    records
}

/// Wait until the jobs' read trace of the iolens `pid` is on: its tracefs
/// instance `iolens-<pid>-<start>-jobs` has its read event enabled and
/// reads `tracing_on` 1 (a new instance reads 1 until iolens turns it off
/// to configure it), then 30 ms more: a job counts exactly only when its
/// start time, in whole clock ticks (10 ms), is surely after that.
fn jobs_trace_on(pid: u32) -> Result<(), String> {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(10) {
        let on = std::fs::read_dir("/sys/kernel/tracing/instances")
            .map(|rd| {
                rd.flatten().any(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    n.starts_with(&format!("iolens-{pid}-"))
                        && n.ends_with("-jobs")
                        && ["events/filemap/mm_filemap_get_pages/enable", "tracing_on"]
                            .iter()
                            .all(|f| std::fs::read_to_string(e.path().join(f)).is_ok_and(|t| t.trim() == "1"))
                })
            })
            .unwrap_or(false);
        if on {
            std::thread::sleep(Duration::from_millis(30));
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(format!("iolens {pid} never turned its jobs' read trace on"))
}

/// Files copied: the regular files in the archive (`tar tf`: entries not
/// ending in '/'), or under the destination directory.
fn copied_files(tool: &str, out: &Path) -> u64 {
    if tool == "tar" {
        let o = Command::new("tar").arg("tf").arg(out).output().unwrap();
        assert!(o.status.success(), "tar tf {}: {o:?}", out.display());
        return String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| !l.ends_with('/'))
            .count() as u64;
    }
    fn count(p: &Path) -> u64 {
        let Ok(md) = std::fs::symlink_metadata(p) else { return 0 };
        if md.is_dir() {
            std::fs::read_dir(p)
                .map(|rd| rd.flatten().map(|e| count(&e.path())).sum())
                .unwrap_or(0)
        } else {
            u64::from(md.is_file())
        }
    }
    count(out)
}

/// The job's files done in the last record that has it (the job ended),
/// and that record: the job whose root is `pid`, or else (a pipeline's
/// shell: its tar is the root) the one of `tool`.
fn last_files_done(records: &[String], pid: u32, tool: &str) -> (Option<u64>, String) {
    for l in records.iter().rev() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(l) else {
            continue;
        };
        let jobs = v["jobs"].as_array();
        let mine = jobs.and_then(|a| a.iter().find(|j| j["pid"] == pid));
        if let Some(j) = mine.or_else(|| jobs.and_then(|a| a.iter().find(|j| j["tool"] == tool))) {
            return (j["files_done"].as_u64(), l.clone());
        }
    }
    (None, format!("no record of job {pid}"))
}

/// The reports the user would see: `iolens progress --watch` over the
/// whole job (its rate over the last 5 samples of 0.5 s); the thread
/// collects its jobs records until it is killed.
fn watch(tool: &str) -> (std::process::Child, std::thread::JoinHandle<Vec<String>>) {
    let mut watch = Command::new(BIN)
        .args(["progress", "--watch", "--name", tool, "--json", "-i", "0.5"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = std::io::BufReader::new(watch.stdout.take().unwrap());
    let reader = std::thread::spawn(move || {
        std::io::BufRead::lines(lines)
            .map_while(Result::ok)
            .filter(|l| l.contains("\"jobs\""))
            .collect::<Vec<_>>()
    });
    (watch, reader)
}

/// The first jobs record of `iolens progress --watch --json` at or after
/// `after` (unix ns), for the job of `tool` (the one whose root is `pid`
/// where there is one: the test's own job, not another process of the
/// same name), checked for its sources' total.
fn report(records: &[String], after: u64, tool: &str, pid: u32, files: usize, tree: u64) -> Report {
    let parsed = records
        .iter()
        .filter_map(|l| Some((l, serde_json::from_str::<serde_json::Value>(l).ok()?)));
    let (line, v) = parsed
        .clone()
        .find(|(_, v)| v["unix_ns"].as_u64().is_some_and(|t| t >= after))
        .unwrap_or_else(|| panic!("no jobs record after {after}: {records:?}"));
    let jobs = v["jobs"].as_array().unwrap();
    let j = jobs.iter().find(|j| j["pid"] == pid).unwrap_or(&jobs[0]);
    assert_eq!(j["tool"], tool, "{line}");
    assert_eq!(j["total"]["state"], "known", "{line}");
    assert_eq!(j["total"]["files"], files, "{line}");
    assert_eq!(j["total"]["bytes"].as_u64(), Some(tree), "{line}");
    (
        v["unix_ns"].as_u64().unwrap(),
        j["percent"].as_f64().unwrap(),
        j["eta_s"].as_f64(),
        line.to_string(),
    )
}

/// Drop the page cache of the files under `p` (`POSIX_FADV_DONTNEED`,
/// after a sync): their reads then reach the device and its throttle.
fn drop_cache(p: &Path) {
    use std::os::fd::AsRawFd;
    let Ok(md) = std::fs::symlink_metadata(p) else { return };
    if md.is_dir() {
        for e in std::fs::read_dir(p).unwrap().flatten() {
            drop_cache(&e.path());
        }
    } else if md.is_file()
        && let Ok(f) = std::fs::File::open(p)
    {
        // SAFETY: a valid open fd; advice only.
        unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    }
}

#[test]
fn tar_through_a_rate_limited_pipe() {
    compare(Case {
        tool: "tar",
        shell: "exec tar cf - src | pv -q -L 50m > {out}/out.tar",
        truth: "{out}/out.tar",
        throttle: None,
        part: &[],
        eta: true,
        half_present: false,
    });
}

/// `tar czf` with a pv before gzip (at 8 MB/s, of a part of the tree:
/// gzip here does 13-16 MB/s), the truth what passed it (tee'd to a
/// file); the percent is of the sources tar read.
#[test]
fn tar_with_pv_before_gzip() {
    compare(Case {
        tool: "tar",
        shell: "exec tar cf {out}/out.tgz --use-compress-program='sh -c \"pv -q -L 8m | tee {out}/raw.tar | gzip -1\"' src/d0",
        truth: "{out}/raw.tar",
        throttle: None,
        part: &["d0"],
        eta: false,
        half_present: false,
    });
}

/// A literal `tar czf` (gzip its child) of a part of the tree (80 MB)
/// under a read throttle of 8 MB/s, below gzip's speed here (13-16 MB/s
/// on this incompressible data, loaded): the truth is the archive written
/// (gzip adds about 0.03 %, tar's headers 0.2 %).
#[test]
fn tar_czf_with_its_reads_throttled() {
    compare(Case {
        tool: "tar",
        shell: "exec tar czf {out}/out.tgz src/d0 src/d1",
        truth: "{out}/out.tgz",
        throttle: Some(8),
        part: &["d0", "d1"],
        eta: false,
        half_present: false,
    });
}

#[test]
fn rsync_fresh_with_a_bandwidth_limit() {
    compare(Case {
        tool: "rsync",
        shell: "exec rsync -a --bwlimit=50m src/ {out}/dst",
        truth: "{out}/dst",
        throttle: None,
        part: &[],
        eta: true,
        half_present: false,
    });
}

/// rsync onto a destination holding half the tree's bytes (same sizes and
/// times: skipped). The percent is of the bytes read — those sent — against
/// the whole tree (the job's note says so): the truth is what reached the
/// destination beyond what was in place. Its ETA counts the bytes in place
/// as still to read (measured: 4.5 s predicted, 2.3 s left).
#[test]
fn rsync_onto_a_half_present_destination() {
    compare(Case {
        tool: "rsync",
        shell: "exec rsync -a --bwlimit=50m src/ {out}/dst",
        truth: "{out}/dst",
        throttle: None,
        part: &[],
        eta: false,
        half_present: true,
    });
}

/// `cp -r` within one filesystem copies each file with one
/// copy_file_range call (counters and fd positions move when it returns);
/// the position adds what its destination holds beyond its fd's position.
#[test]
fn cp_r_with_its_reads_throttled() {
    compare(Case {
        tool: "cp",
        shell: "exec cp -r src {same}/dst",
        truth: "{same}/dst",
        throttle: Some(RATE_MB),
        part: &[],
        eta: true,
        half_present: false,
    });
}

/// `--watch --name` started before its process waits for it (it used to
/// exit after one interval with "no transfers found").
#[test]
fn watch_waits_for_the_named_process() {
    let mut w = Command::new(BIN)
        .args(["progress", "--watch", "--name", "iolens-nosuch", "-i", "0.2"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let still = w.try_wait().unwrap().is_none();
    let pid = w.id();
    let traced = is_root() && jobs_trace_on(pid).is_ok();
    end(&mut w);
    assert!(
        still,
        "iolens progress --watch --name exited before the process appeared"
    );
    // As root, its jobs' read trace ran, and its instance went with it.
    if traced {
        let left: Vec<_> = std::fs::read_dir("/sys/kernel/tracing/instances")
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(&format!("iolens-{pid}-")))
            .collect();
        assert!(left.is_empty(), "left behind: {left:?}");
    } else {
        eprintln!("no jobs' read trace (not root or no tracefs): its removal not checked");
    }
}

/// The walk of 100,000 small files on a warm cache (a tmpfs, where
/// creating them takes seconds, not the 20 s of the disk): `iolens __walk`
/// counts them within 5 s in a child of at most 16 MB peak RSS (measured
/// 1.0 s and 11.6 MB in the debug build).
#[test]
fn walk_of_100k_files() {
    if !need("/usr/bin/time") {
        return;
    }
    let Ok(dir) = tempfile::Builder::new()
        .prefix("iolens-walk100k")
        .tempdir_in("/dev/shm")
    else {
        return eprintln!("skipped: no tmpfs at /dev/shm");
    };
    for d in 0..100 {
        let sub = dir.path().join(format!("d{d}"));
        std::fs::create_dir(&sub).unwrap();
        for f in 0..1000 {
            std::fs::write(sub.join(format!("f{f}")), b"x").unwrap();
        }
    }
    let req = serde_json::json!({
        "roots": [[dir.path()]], "lists": [], "excludes": [], "recurse": true,
        "one_fs": false, "links_once": true, "holes_skipped": false, "network": false
    });
    let t = Instant::now();
    let o = Command::new("/usr/bin/time")
        .args(["-f", "maxrss_kb %M", BIN, "__walk", &req.to_string()])
        .output()
        .unwrap();
    let el = t.elapsed();
    let text = String::from_utf8_lossy(&o.stdout);
    let last = text.lines().last().unwrap_or("");
    let rss = String::from_utf8_lossy(&o.stderr);
    eprintln!("{last} in {:.2} s, {}", el.as_secs_f64(), rss.trim());
    assert_eq!(last, "d 100000 100000 0 0 0 0 0");
    assert!(el < Duration::from_secs(5), "walk took {el:?}");
    let kb: u64 = rss
        .lines()
        .find_map(|l| l.strip_prefix("maxrss_kb ")?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS: {rss}"));
    assert!(kb <= 16 * 1024, "the walk's peak RSS {kb} kB");
}
