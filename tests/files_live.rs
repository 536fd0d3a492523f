//! Per-file reads and dirtying from the page-cache tracepoints, live (root;
//! run serialized with the other live tests: `flock /tmp/iolens-live.lock
//! cargo test --test files_live`): ext4 on a loop device (direct I/O to
//! its backing file, so the backing file's cache stays out of it); a cold
//! read of a 64 MiB file A (its cache dropped with POSIX_FADV_DONTNEED) by
//! one process and a 32 MiB buffered write of file B by another, then a
//! warm re-read of A by a third. `iolens --json` must report A read from
//! disk by the reader within ±5 %, B dirtied and created by the writer
//! with ≈0 read, and ≈0 read by the warm re-read (what the kernel's
//! `/proc/<pid>/io` says it read from storage); A named by its path.
//! (The issue asks for 256 / 128 MiB: smaller here to stay within the
//! live-test time on a 2-core VM; the exactness does not depend on size.)
//!
//! Sampled: the same read and write paced over 4 s, with the tracer held
//! to windows at a fixed 50 % duty (`IOLENS_TRACE_DUTY`, as when its CPU
//! budget binds), stay within ±15 % and the reports carry `trace_share`.
//!
//! Blocked time: a process in fsync for 2.5-3 s (10 MiB written to ext4 on
//! a loop device, direct I/O, over a FUSE file written at 4 MB/s:
//! tests/helpers/slowrwfs.py) must show that long blocked on its file,
//! within ±20 %, with `-i 0.2`.
//!
//! Loop backing file: a loop device through the page cache; a cold read
//! of 8 MiB on its ext4 is read on that file once, the loop worker's reads
//! of the backing file kept apart (`backing_read_bytes`), never `read_bytes`.
//!
//! Without root (uid 65534 through setpriv): the files say "block tracing
//! needs root" in the JSON and the text; the rest of the report has the
//! sections and devices of a root run with --no-trace.
//!
//! Without root, mkfs.ext4, python3 (with fusepy), fusermount3 or tracefs
//! the tests print "skipped: <reason>" and pass.

use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use iolens::collect::process::parse_io;
use serde_json::Value;

#[path = "common/live.rs"]
mod live;
use live::tools::{have, is_root};
use live::{Attach, Bg, Loop};

const BIN: &str = env!("CARGO_BIN_EXE_iolens");
const PY: &str = "/usr/bin/python3";
const A_MIB: u64 = 64;
const B_MIB: u64 = 32;

/// Read a file in 1 MiB reads, then keep it open a while.
const READ: &str =
    "import sys,time\nf=open(sys.argv[1],'rb')\nwhile f.read(1<<20):\n    pass\ntime.sleep(float(sys.argv[2]))\n";
/// Read a file as [`READ`] does, after writing to `argv[2]` what the
/// kernel's `/proc/self/io` `read_bytes` grew by over that read alone (not
/// the interpreter's own start), then keep it open 2 s.
const READ_COUNTED: &str = "import sys,time\ndef rb():\n    return int([l for l in open('/proc/self/io') if l.startswith('read_bytes')][0].split()[1])\nf=open(sys.argv[1],'rb')\nb=rb()\nwhile f.read(1<<20):\n    pass\nopen(sys.argv[2],'w').write(str(rb()-b))\ntime.sleep(2)\n";
/// Write `argv[2]` MiB in 1 MiB writes, then keep the file open a while.
const WRITE: &str = "import sys,time\nf=open(sys.argv[1],'wb',buffering=0)\nb=b'x'*(1<<20)\nfor i in range(int(sys.argv[2])):\n    f.write(b)\ntime.sleep(3)\n";

struct Mount(tempfile::TempDir);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

fn unavailable() -> Option<String> {
    if !is_root() {
        return Some("not root (losetup, tracefs)".into());
    }
    for t in ["mkfs.ext4", "losetup", "mount"] {
        if !have(t) {
            return Some(format!("{t} not installed"));
        }
    }
    if !Path::new(PY).exists() {
        return Some(format!("{PY} missing"));
    }
    let tracefs = ["/sys/kernel/tracing/events", "/sys/kernel/debug/tracing/events"];
    let fs = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
    if !fs.contains("tracefs") && !tracefs.iter().any(|p| Path::new(p).exists()) {
        return Some("no tracefs in this kernel".into());
    }
    None
}

/// ext4 on a fresh loop device, mounted; the loop device goes last.
fn ext4() -> Result<(Mount, Loop), String> {
    let lo = Loop::over_new_file(|f| f.as_file().set_len(256 << 20), Attach::DIRECT)?;
    Ok((mount_ext4(&lo.dev, &[], &[])?, lo))
}

/// A new ext4 on `dev` (`mkfs` options), mounted (`mount` options).
fn mount_ext4(dev: &str, mkfs: &[&str], opts: &[&str]) -> Result<Mount, String> {
    let out = Command::new("mkfs.ext4")
        .args(["-q", "-F"])
        .args(mkfs)
        .arg(dev)
        .output()
        .map_err(|e| format!("mkfs.ext4: {e}"))?;
    if !out.status.success() {
        return Err(format!("mkfs.ext4 failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let dir = tempfile::tempdir_in("/tmp").map_err(|e| e.to_string())?;
    let ok = Command::new("mount").args(opts).arg(dev).arg(dir.path()).status();
    if !ok.is_ok_and(|s| s.success()) {
        return Err(format!("cannot mount ext4 on {dev}"));
    }
    Ok(Mount(dir))
}

/// Live tests of this file run one at a time.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write_and_drop(path: &Path, mib: u64) {
    use std::io::{Read, Write};
    let mut data = vec![0u8; (mib << 20) as usize];
    std::fs::File::open("/dev/urandom")
        .unwrap()
        .read_exact(&mut data)
        .unwrap();
    let mut f = std::fs::File::create(path).unwrap();
    f.write_all(&data).unwrap();
    f.sync_all().unwrap();
    // SAFETY: an fd we own, a plain advice call.
    let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(rc, 0);
}

/// The two tests' files: ext4 on a fresh loop device with A (`A_MIB` of
/// random data, its cache dropped) and the path of B, not yet written.
struct Rig {
    a: std::path::PathBuf,
    b: std::path::PathBuf,
    ino_a: u64,
    /// The loop device as "major:minor".
    dev: String,
    // Unmounted before the loop device is detached.
    _mnt: Mount,
    _lo: Loop,
}

impl Rig {
    /// `Err`: why the test is skipped.
    fn new() -> Result<Rig, String> {
        if let Some(why) = unavailable() {
            return Err(why);
        }
        let (mnt, lo) = ext4()?;
        let a = mnt.0.path().join("A");
        let b = mnt.0.path().join("B");
        write_and_drop(&a, A_MIB);
        let ino_a = std::fs::metadata(&a).unwrap().ino();
        let (major, minor) = lo.numbers().unwrap();
        Ok(Rig {
            a,
            b,
            ino_a,
            dev: format!("{major}:{minor}"),
            _mnt: mnt,
            _lo: lo,
        })
    }
}

/// `iolens --json` with `args`, its reports read as they come on a thread
/// of their own (a full pipe would stop it).
struct Reports(std::thread::JoinHandle<std::io::Result<std::process::Output>>);

impl Reports {
    fn start(args: &[&str]) -> Reports {
        Self::start_env(args, &[])
    }

    fn start_env(args: &[&str], env: &[(&str, &str)]) -> Reports {
        let child = Command::new(BIN)
            .envs(env.iter().copied())
            .arg("--json")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Reports(std::thread::spawn(move || child.wait_with_output()))
    }

    /// The JSON reports, once iolens has ended (successfully).
    fn wait(self) -> Vec<Value> {
        let out = self.0.join().unwrap().unwrap();
        assert!(out.status.success(), "iolens: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

fn py(script: &str, args: &[&str]) -> Bg {
    Bg::spawn(Command::new(PY).arg("-c").arg(script).args(args))
}

/// What the reports say of one file (by inode on `dev`) and process, summed
/// over the intervals: (read bytes, dirtied folios, created bytes), and
/// the names given.
fn sum(reports: &[Value], dev: &str, ino: u64, pid: u32) -> ((u64, u64, u64), Vec<String>) {
    let mut t = (0, 0, 0);
    let mut names = Vec::new();
    for f in reports
        .iter()
        .flat_map(|r| r["files"].as_array().cloned().unwrap_or_default())
    {
        if f["dev"] != dev || f["inode"].as_u64() != Some(ino) {
            continue;
        }
        names.extend(f["path"].as_str().map(String::from));
        for p in f["processes"].as_array().into_iter().flatten() {
            if p["pid"].as_u64() == Some(u64::from(pid)) {
                t.0 += p["read_bytes"].as_u64().unwrap_or(0);
                t.1 += p["dirtied_folios"].as_u64().unwrap_or(0);
                t.2 += p["created_bytes"].as_u64().unwrap_or(0);
            }
        }
    }
    (t, names)
}

#[test]
fn cold_read_buffered_write_and_warm_read_per_file() {
    let _serial = serial();
    let rig = match Rig::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("skipped: {e}");
            return;
        }
    };
    let Rig { a, b, ino_a, dev, .. } = &rig;
    let (ino_a, dev) = (*ino_a, dev.as_str());
    let iolens = Reports::start(&["-i", "1", "-n", "9", "--top", "500"]);
    std::thread::sleep(Duration::from_millis(1500));
    let a_s = a.to_str().unwrap();
    let reader = py(READ, &[a_s, "3"]);
    let writer = py(WRITE, &[b.to_str().unwrap(), &B_MIB.to_string()]);
    std::thread::sleep(Duration::from_millis(3500));
    // The warm re-read starts once the cold one is through A (a slow run
    // would otherwise have both read A's last part from disk).
    let done = (0..50).any(|_| {
        let io = std::fs::read(format!("/proc/{}/io", reader.pid())).ok();
        let read = io.and_then(|b| parse_io(&b)).map_or(0, |io| io.rchar);
        read >= A_MIB << 20 || {
            std::thread::sleep(Duration::from_millis(100));
            false
        }
    });
    assert!(done, "the cold reader did not read A within 5 s more");
    let out = tempfile::tempdir().unwrap();
    let counted = out.path().join("warm-read-bytes");
    let warm = py(READ_COUNTED, &[a_s, counted.to_str().unwrap()]);
    // What the kernel says it read from storage, once its read is over.
    std::thread::sleep(Duration::from_millis(1000));
    let warm_kernel = std::fs::read_to_string(&counted)
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
        .unwrap_or(u64::MAX);
    let reports = iolens.wait();
    let info = &reports.last().unwrap()["files_info"];
    assert_eq!(info["active"], true, "{info}");
    let ino_b = std::fs::metadata(b).unwrap().ino();
    let ((r_read, r_dirty, _), names) = sum(&reports, dev, ino_a, reader.pid());
    let ((w_read, w_dirty, w_created), _) = sum(&reports, dev, ino_b, writer.pid());
    let ((warm_read, _, _), _) = sum(&reports, dev, ino_a, warm.pid());
    let shares: Vec<f64> = reports.iter().filter_map(|r| r["trace_share"].as_f64()).collect();
    println!(
        "A (inode {ino_a} on {dev}): reader read {r_read} B, dirtied {r_dirty}; names {names:?}\n\
         B (inode {ino_b}): writer read {w_read} B, dirtied {w_dirty} folios, created {w_created} B\n\
         warm re-read of A: {warm_read} B ({warm_kernel} B read from storage over it by its /proc/<pid>/io); \
         trace_share by report {shares:?}"
    );
    let (a_bytes, b_bytes) = ((A_MIB << 20) as f64, (B_MIB << 20) as f64);
    assert!((r_read as f64 - a_bytes).abs() <= a_bytes * 0.05, "A read {r_read}");
    assert_eq!(r_dirty, 0);
    assert!(
        (w_created as f64 - b_bytes).abs() <= b_bytes * 0.05,
        "B created {w_created}"
    );
    assert!(w_dirty > 0);
    assert!((w_read as f64) <= b_bytes * 0.05, "B read {w_read}");
    // A cached re-read reads from disk only what the kernel dropped of A
    // meanwhile (seen: 0 to 5 %, with 23 GiB free: this VM runs a DAMON
    // `pageout` scheme, kdamond, on cold pages): what the kernel counted.
    assert!(
        (warm_kernel as f64) < a_bytes / 2.0,
        "the kernel dropped most of A's cache ({warm_kernel} B re-read): not a warm read"
    );
    assert!(
        warm_read.abs_diff(warm_kernel) <= (64 << 10) + warm_kernel / 20,
        "warm read {warm_read}, its /proc/<pid>/io read_bytes {warm_kernel}"
    );
    // The reader was read by the fd scan after its events: A has its path.
    assert!(names.iter().any(|n| n == a_s), "A not named: {names:?}");
    drop((reader, writer, warm));
}

/// Read a file in 1 MiB reads at `argv[2]` MiB/s, then keep it open a while.
const READ_PACED: &str = "import sys,time\nf=open(sys.argv[1],'rb')\nr=float(sys.argv[2])\nt=time.monotonic()\nn=0\nwhile f.read(1<<20):\n    n+=1\n    time.sleep(max(0.0,t+n/r-time.monotonic()))\ntime.sleep(1.5)\n";
/// Write `argv[2]` MiB in 1 MiB writes at `argv[3]` MiB/s, then keep it open.
const WRITE_PACED: &str = "import sys,time\nf=open(sys.argv[1],'wb',buffering=0)\nb=b'x'*(1<<20)\nr=float(sys.argv[3])\nt=time.monotonic()\nfor i in range(int(sys.argv[2])):\n    f.write(b)\n    time.sleep(max(0.0,t+(i+1)/r-time.monotonic()))\ntime.sleep(1.5)\n";
/// The fixed duty cycle of the sampled run (`IOLENS_TRACE_DUTY`).
const DUTY: &str = "0.5";

/// The cold read of A and the buffered write of B again, with the tracer
/// held to windows at a fixed 50 % duty cycle (as when its CPU budget
/// binds): the scaled per-file figures stay within ±15 % and the reports
/// say they are sampled (`trace_share` under 1). Paced over 4 s (20 of
/// the 200 ms window cycles): a burst shorter than a few cycles is caught
/// or missed by the windows as a whole, which no scaling mends.
#[test]
fn cold_read_and_buffered_write_sampled_in_windows() {
    let _serial = serial();
    let rig = match Rig::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("skipped: {e}");
            return;
        }
    };
    let Rig { a, b, ino_a, dev, .. } = &rig;
    let (ino_a, dev) = (*ino_a, dev.as_str());
    let iolens = Reports::start_env(&["-i", "1", "-n", "9", "--top", "500"], &[("IOLENS_TRACE_DUTY", DUTY)]);
    std::thread::sleep(Duration::from_millis(1500));
    let reader = py(READ_PACED, &[a.to_str().unwrap(), &(A_MIB / 4).to_string()]);
    let writer = py(
        WRITE_PACED,
        &[b.to_str().unwrap(), &B_MIB.to_string(), &(B_MIB / 4).to_string()],
    );
    let reports = iolens.wait();
    let ino_b = std::fs::metadata(b).unwrap().ino();
    let ((r_read, _, _), _) = sum(&reports, dev, ino_a, reader.pid());
    let ((w_read, w_dirty, w_created), _) = sum(&reports, dev, ino_b, writer.pid());
    let shares: Vec<f64> = reports.iter().filter_map(|r| r["trace_share"].as_f64()).collect();
    println!(
        "duty {DUTY}: A reader read {r_read} B of {}; B writer created {w_created} B of {}, \
         dirtied {w_dirty} folios, read {w_read} B; trace_share by report {shares:?}",
        A_MIB << 20,
        B_MIB << 20
    );
    // Marked: every report after the first is sampled, at about the duty.
    assert!(shares.len() >= 8, "{shares:?}");
    for s in &shares[1..] {
        assert!((0.35..0.75).contains(s), "trace_share {s} for duty {DUTY}: {shares:?}");
    }
    // The tracer's own CPU is reported (a fixed duty has no budget): more
    // than nothing, at a 50% duty far under a core.
    let cpu: Vec<Option<f64>> = reports.iter().map(|r| r["trace"]["tracer_cpu_pct"].as_f64()).collect();
    println!("tracer_cpu_pct by report {cpu:?}");
    assert!(cpu.iter().all(|c| c.is_some_and(|c| c > 0.0 && c < 50.0)), "{cpu:?}");
    assert!(reports.iter().all(|r| r["trace"]["trace_budget_pct"].is_null()));
    let (a_bytes, b_bytes) = ((A_MIB << 20) as f64, (B_MIB << 20) as f64);
    assert!((r_read as f64 - a_bytes).abs() <= a_bytes * 0.15, "A read {r_read}");
    assert!(
        (w_created as f64 - b_bytes).abs() <= b_bytes * 0.15,
        "B created {w_created}"
    );
    assert!(w_dirty > 0);
    assert!((w_read as f64) <= b_bytes * 0.05, "B read {w_read}");
    drop((reader, writer));
}

const SLOWRWFS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/helpers/slowrwfs.py");
/// MiB written, then fsynced, at [`SLOW_RATE`] bytes per second.
const FSYNC_MIB: usize = 10;
const SLOW_RATE: &str = "4000000";
/// Write `argv[2]` MiB, then print how long one fsync of it took (s).
const FSYNC: &str = "import os,sys,time\nfd=os.open(sys.argv[1],os.O_WRONLY|os.O_CREAT,0o644)\nb=b'y'*(1<<20)\nfor i in range(int(sys.argv[2])):\n    os.write(fd,b)\nt=time.monotonic()\nos.fsync(fd)\nprint(time.monotonic()-t)\n";

fn mounted(mnt: &Path) -> bool {
    std::fs::read_to_string("/proc/self/mountinfo")
        .is_ok_and(|m| m.lines().any(|l| l.split(' ').nth(4) == mnt.to_str()))
}

/// The writable slow FUSE filesystem over a 128 MiB sparse file; writes
/// are slow while the switch file holds a rate. Unmounted on drop.
struct SlowRw {
    dir: tempfile::TempDir,
    daemon: std::process::Child,
    _backing: tempfile::NamedTempFile,
}

impl SlowRw {
    fn start() -> Result<SlowRw, String> {
        let backing = tempfile::NamedTempFile::new_in("/var/tmp").map_err(|e| e.to_string())?;
        backing.as_file().set_len(128 << 20).map_err(|e| e.to_string())?;
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).map_err(|e| e.to_string())?;
        let daemon = Command::new(PY)
            .arg(SLOWRWFS)
            .arg(&mnt)
            .arg(backing.path())
            .arg(dir.path().join("rate"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| e.to_string())?;
        let fs = SlowRw {
            dir,
            daemon,
            _backing: backing,
        };
        let end = std::time::Instant::now() + Duration::from_secs(10);
        while !mounted(&fs.mnt()) {
            if std::time::Instant::now() > end {
                return Err("slowrwfs did not mount (python3-fusepy?)".into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(fs)
    }

    fn mnt(&self) -> std::path::PathBuf {
        self.dir.path().join("mnt")
    }

    /// Writes at `rate` bytes/s from now on ("0": full speed).
    fn set_rate(&self, rate: &str) {
        std::fs::write(self.dir.path().join("rate"), rate).unwrap();
    }
}

impl Drop for SlowRw {
    fn drop(&mut self) {
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
        let _ = Command::new("fusermount3").arg("-uz").arg(self.mnt()).status();
    }
}

/// Blocked seconds (sampled) the reports give one file (by inode on
/// `dev`) for one process, and the names given.
fn blocked(reports: &[Value], dev: &str, ino: u64, pid: u32) -> (f64, Vec<String>) {
    let mut s = 0.0;
    let mut names = Vec::new();
    for f in reports
        .iter()
        .flat_map(|r| r["files"].as_array().cloned().unwrap_or_default())
        .filter(|f| f["dev"] == dev && f["inode"].as_u64() == Some(ino))
    {
        names.extend(f["path"].as_str().map(String::from));
        for p in f["processes"].as_array().into_iter().flatten() {
            if p["pid"].as_u64() == Some(u64::from(pid)) {
                s += p["blocked_seconds_est"].as_f64().unwrap_or(0.0);
            }
        }
    }
    (s, names)
}

/// A process blocked in fsync for 10+ intervals of 0.2 s (ext4 on a loop
/// device, direct I/O, over a FUSE file written at 4 MB/s): the blocked
/// time iolens samples on that file within ±20 % of the fsync's own time.
#[test]
fn fsync_on_a_slow_device_is_blocked_time_on_its_file() {
    let _serial = serial();
    if let Some(why) = unavailable().or_else(|| (!have("fusermount3")).then(|| "fusermount3 not installed".into())) {
        eprintln!("skipped: {why}");
        return;
    }
    let fs = match SlowRw::start() {
        Ok(fs) => fs,
        Err(e) => {
            eprintln!("skipped: {e}");
            return;
        }
    };
    let lo = Loop::over_file(&fs.mnt().join("data"), Attach::DIRECT).unwrap();
    // Inode tables written now, at full speed (no lazy init later).
    let mnt = mount_ext4(
        &lo.dev,
        &["-E", "lazy_itable_init=0,lazy_journal_init=0"],
        &["-o", "noinit_itable"],
    )
    .unwrap();
    let (major, minor) = lo.numbers().unwrap();
    let dev = format!("{major}:{minor}");
    let file = mnt.0.path().join("synced");
    let iolens = Reports::start(&["-i", "0.2", "-n", "24", "--top", "50"]);
    std::thread::sleep(Duration::from_millis(600));
    fs.set_rate(SLOW_RATE);
    let child = Command::new(PY)
        .arg("-c")
        .arg(FSYNC)
        .arg(&file)
        .arg(FSYNC_MIB.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    fs.set_rate("0");
    let took: f64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let reports = iolens.wait();
    for r in reports.iter().filter(|r| r.get("stall").is_some()) {
        println!("STALL {} {}", r["stall"], r["waiting_on"]);
    }
    let ino = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&file).unwrap());
    let (est, mut names) = blocked(&reports, &dev, ino, pid);
    names.dedup();
    println!("fsync took {took:.3} s; iolens: ~{est:.3} s blocked on inode {ino} on {dev}, names {names:?}");
    drop(mnt);
    drop(lo);
    drop(fs);
    assert!(took >= 2.0, "the fsync took only {took:.3} s (10 intervals are 2 s)");
    assert!(
        (est - took).abs() <= took * 0.2,
        "blocked ~{est:.3} s, fsync {took:.3} s"
    );
    assert!(names.iter().any(|n| Path::new(n) == file), "not named: {names:?}");
    let info = &reports.last().unwrap()["files_info"];
    assert!(info["blocked"].as_str().unwrap().starts_with("sampled"), "{info}");
}

/// What the reports say of one file in all: (read bytes, backing read
/// bytes, dirtied folios, backing dirtied folios).
fn file_totals(reports: &[Value], dev: &str, ino: u64) -> [u64; 4] {
    let mut t = [0; 4];
    for f in reports
        .iter()
        .flat_map(|r| r["files"].as_array().cloned().unwrap_or_default())
        .filter(|f| f["dev"] == dev && f["inode"].as_u64() == Some(ino))
    {
        for (x, k) in t.iter_mut().zip([
            "read_bytes",
            "backing_read_bytes",
            "dirtied_folios",
            "backing_dirtied_folios",
        ]) {
            *x += f[k].as_u64().unwrap_or(0);
        }
    }
    t
}

/// A loop device over a file through the page cache (no direct I/O): a
/// cold read of an 8 MiB file C on its ext4 (C's cache and the backing
/// file's dropped) reads C from disk once, on C; the backing file's folios
/// (added by the loop worker) are kept apart, not a second hot file.
#[test]
fn loop_backing_file_is_not_counted_twice() {
    let _serial = serial();
    if let Some(why) = unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let buffered = Attach {
        direct: false,
        ..Attach::DIRECT
    };
    let lo = match Loop::over_new_file(|f| f.as_file().set_len(64 << 20), buffered) {
        Ok(lo) => lo,
        Err(e) => {
            eprintln!("skipped: {e}");
            return;
        }
    };
    let mnt = mount_ext4(
        &lo.dev,
        &["-E", "lazy_itable_init=0,lazy_journal_init=0"],
        &["-o", "noinit_itable"],
    )
    .unwrap();
    let backing = std::fs::read_to_string(format!("/sys/block/{}/loop/backing_file", lo.name())).unwrap();
    let backing = Path::new(backing.trim());
    let c = mnt.0.path().join("C");
    write_and_drop(&c, 8);
    // The loop device's writes sit in the backing file's cache: dropped
    // too, so that reading C reads the backing file from disk.
    let img = std::fs::File::open(backing).unwrap();
    img.sync_all().unwrap();
    // SAFETY: an fd we own, a plain advice call.
    assert_eq!(
        unsafe { libc::posix_fadvise(img.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) },
        0
    );
    let meta = std::fs::metadata(backing).unwrap();
    let (bmaj, bmin) = (libc::major(meta.dev()), libc::minor(meta.dev()));
    let (major, minor) = lo.numbers().unwrap();
    let iolens = Reports::start(&["-i", "0.5", "-n", "6", "--top", "500"]);
    std::thread::sleep(Duration::from_millis(1000));
    let reader = py(READ, &[c.to_str().unwrap(), "0"]);
    let reports = iolens.wait();
    let on_c = file_totals(&reports, &format!("{major}:{minor}"), c.metadata().unwrap().ino());
    let on_img = file_totals(&reports, &format!("{bmaj}:{bmin}"), meta.ino());
    println!("C: {on_c:?}; backing file {}: {on_img:?}", backing.display());
    drop(reader);
    let mib8 = (8u64 << 20) as f64;
    assert!((on_c[0] as f64 - mib8).abs() <= mib8 * 0.05, "C read {on_c:?}");
    assert_eq!(on_img[0], 0, "backing file counted as read: {on_img:?}");
    assert!(
        on_img[1] as f64 >= mib8 * 0.95,
        "the loop worker's reads not seen: {on_img:?}"
    );
}

/// `iolens args` as uid/gid 65534 without groups (`nobody`), else as root.
fn iolens_as(nobody: bool, args: &[&str]) -> std::process::Output {
    let mut c = if nobody {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN]);
        c
    } else {
        Command::new(BIN)
    };
    c.args(["--config", "/dev/null"]).args(args).output().unwrap()
}

/// Without root (uid 65534) the per-file figures are off and say why, in
/// the JSON and the text report; the rest of the report is what a root
/// run without tracing gives (the same sections and devices).
#[test]
fn without_root_the_files_say_why_and_the_rest_is_unchanged() {
    let _serial = serial();
    if !is_root() || !have("setpriv") {
        eprintln!("skipped: needs root and setpriv to run as uid 65534");
        return;
    }
    if !iolens_as(true, &["--version"]).status.success() {
        eprintln!("skipped: uid 65534 cannot execute {BIN}");
        return;
    }
    let json = |nobody: bool, extra: &[&str]| -> Value {
        let mut args = vec!["--json", "-i", "0.2", "-n", "1"];
        args.extend_from_slice(extra);
        let out = iolens_as(nobody, &args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        serde_json::from_str(text.lines().last().unwrap()).unwrap()
    };
    let user = json(true, &[]);
    let info = &user["files_info"];
    println!("uid 65534: files_info {info}");
    assert_eq!(info["active"], false);
    assert_eq!(info["reason"], "block tracing needs root");
    assert_eq!(user["files"], serde_json::json!([]));
    let root = json(false, &["--no-trace"]);
    assert_eq!(root["files_info"]["reason"], "--no-trace");
    let keys = |v: &Value| -> Vec<String> {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(keys(&user), keys(&root));
    let devs = |v: &Value| -> Vec<String> {
        let mut d: Vec<String> = v["devices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["name"].as_str().unwrap_or("").to_string())
            .collect();
        d.sort();
        d
    };
    assert!(!devs(&user).is_empty());
    assert_eq!(devs(&user), devs(&root));
    let text = iolens_as(true, &["-b", "-i", "0.2", "-n", "1"]);
    assert!(text.status.success());
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("files: off (block tracing needs root)"), "{text}");
}
