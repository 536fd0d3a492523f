//! Jobs against real processes: `tar cf - DIR | pv -q -L 20m > out` on a
//! generated tree of incompressible files, `iolens progress --json`'s job
//! percent compared with the bytes that reached the destination,
//! interpolated to the report's time; and the walk of 100,000 small files
//! (ignored: `cargo test --test jobs_live -- --ignored`). Run under
//! `flock /tmp/iolens-live.lock`. Skips with a reason when not root or a
//! tool is missing.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "common/tools.rs"]
mod tools;
use tools::{is_root, need};

const BIN: &str = env!("CARGO_BIN_EXE_iolens");

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// A tree of `n` incompressible files: mostly 1 KiB .. 1 MiB, every 50th
/// 16 .. 64 MiB. Returns its size in bytes.
fn make_tree(dir: &Path, n: u64) -> u64 {
    let mut rng = std::fs::File::open("/dev/urandom").unwrap();
    let mut total = 0;
    let mut buf = vec![0u8; 1 << 20];
    for i in 0..n {
        let sub = dir.join(format!("d{}", i % 7));
        std::fs::create_dir_all(&sub).unwrap();
        let size = if i % 50 == 0 {
            (16 + (i * 13) % 49) << 20
        } else {
            1024 + (i * 7919 * 131) % (1 << 20)
        };
        let mut f = std::fs::File::create(sub.join(format!("f{i}"))).unwrap();
        let mut left = size;
        while left > 0 {
            let k = left.min(buf.len() as u64) as usize;
            std::io::Read::read_exact(&mut rng, &mut buf[..k]).unwrap();
            f.write_all(&buf[..k]).unwrap();
            left -= k as u64;
        }
        total += size;
    }
    total
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

/// The tests of this file run one at a time (each writes a 700 MB tree
/// and measures a rate-limited job; `cargo test` runs them in parallel).
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Run `shell` in a fresh directory holding the tree `src` (520 files),
/// compare iolens's job percent for `tool` at about 25, 50 and 75% with
/// the bytes at `dest` (relative to that directory).
fn compare(tool: &str, shell: &str, dest: &str) {
    let _serial = serial();
    if !is_root() {
        eprintln!("skipped: reading another process's counters and fds needs root");
        return;
    }
    if !need("pv") || !need(tool) {
        return;
    }
    let dir = tempfile::Builder::new().prefix("iolens-jobs-live").tempdir().unwrap();
    let src = dir.path().join("src");
    let tree = make_tree(&src, 520);
    let out = dir.path().join(dest);
    let mut job = Command::new("sh")
        .arg("-c")
        .arg(shell)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (o, s) = (out.clone(), stop.clone());
    let sampler = std::thread::spawn(move || sizes(&o, &s));
    let mut reports = Vec::new();
    let start = Instant::now();
    for target in [25.0, 50.0, 75.0] {
        while (dest_bytes(&out) as f64) < tree as f64 * (target - 2.0) / 100.0 {
            assert!(
                start.elapsed() < Duration::from_secs(300),
                "the job did not reach {target}%"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let o = Command::new(BIN)
            .args(["progress", "--name", tool, "--json"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        let line = text
            .lines()
            .find(|l| l.contains("\"jobs\""))
            .unwrap_or_else(|| panic!("no jobs record: {text}"));
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let j = &v["jobs"][0];
        assert_eq!(j["tool"], tool, "{line}");
        assert_eq!(j["total"]["state"], "known", "{line}");
        assert_eq!(j["total"]["files"], 520, "{line}");
        assert_eq!(j["total"]["bytes"].as_u64(), Some(tree), "{line}");
        reports.push((
            v["unix_ns"].as_u64().unwrap(),
            j["percent"].as_f64().unwrap(),
            j["eta_s"].as_f64(),
        ));
    }
    let _ = job.wait();
    let end_ns = now_ns();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let samples = sampler.join().unwrap();
    // The job's real end: the first sample with everything in place.
    let final_len = dest_bytes(&out);
    let done_ns = samples.iter().find(|s| s.1 >= final_len).map_or(end_ns, |s| s.0);
    for (t, pct, eta) in reports {
        let truth = interpolate(&samples, t).unwrap() / tree as f64 * 100.0;
        let left = (done_ns.saturating_sub(t)) as f64 / 1e9;
        eprintln!(
            "{tool}: iolens {pct:.2}% truth {truth:.2}% (diff {:+.2}); eta {eta:?} s, actual {left:.1} s",
            pct - truth
        );
        assert!((pct - truth).abs() <= 2.0, "iolens {pct:.2}% vs truth {truth:.2}%");
    }
}

#[test]
fn tar_through_a_rate_limited_pipe() {
    compare("tar", "exec tar cf - src | pv -q -L 20m > out.tar", "out.tar");
}

#[test]
fn rsync_fresh_with_a_bandwidth_limit() {
    compare("rsync", "exec rsync -a --bwlimit=20m src/ dst", "dst");
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
    let _ = w.kill();
    let _ = w.wait();
    assert!(
        still,
        "iolens progress --watch --name exited before the process appeared"
    );
}

/// The walk of 100,000 small files, timed (warm cache).
#[test]
#[ignore]
fn walk_of_100k_files() {
    let dir = tempfile::Builder::new().prefix("iolens-walk100k").tempdir().unwrap();
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
    for round in 0..2 {
        let t = Instant::now();
        let o = Command::new("/usr/bin/time")
            .args(["-f", "maxrss_kb %M", BIN, "__walk", &req.to_string()])
            .output()
            .unwrap();
        let el = t.elapsed();
        let text = String::from_utf8_lossy(&o.stdout);
        let last = text.lines().last().unwrap_or("");
        eprintln!(
            "round {round}: {last} in {:.2} s, {}",
            el.as_secs_f64(),
            String::from_utf8_lossy(&o.stderr).trim()
        );
        assert_eq!(last, "d 100000 100000 0 0");
        if round == 1 {
            assert!(el < Duration::from_secs(5), "walk took {el:?}");
        }
    }
}
