//! Whole captured trees, mutated at random, each replayed by the real
//! binary in its own process under a time limit: `iolens --root TREE
//! --batch --interval 0.05 --count 2` (every other run with `--json`) must
//! end within 20 s, without a panic and without being killed by a signal,
//! however broken the tree: files with random edits (multi-byte
//! characters, huge and non-finite numbers, cut lines), a FIFO or a
//! directory in place of a file, symlinks to /dev/zero or out of the tree,
//! sparse files of 100 MiB, device names such as `../../etc`, missing
//! files. An error exit (status 2, say) is fine; 0 panics, 0 hangs.
//!
//! 520 trees per run from the captured fixtures, seeded (the seed and the
//! mutations of a failing tree are printed), 8 at a time (each run mostly
//! waits for its interval).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::mutate;
use mutate::Rng;

const BIN: &str = env!("CARGO_BIN_EXE_iolens");
const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
const TREES: usize = 520;
const PARALLEL: usize = 8;
const LIMIT: Duration = Duration::from_secs(20);
const BASES: [&str; 6] = ["root-4.14", "root-5.0", "root-6.8", "vm-6.18", "cgroup-v1", "cgroup-v2"];

fn copy_tree(from: &Path, to: &Path, files: &mut Vec<PathBuf>) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let dst = to.join(e.file_name());
        let ft = e.file_type().unwrap();
        if ft.is_dir() {
            copy_tree(&e.path(), &dst, files);
        } else if ft.is_file() {
            std::fs::copy(e.path(), &dst).unwrap();
            files.push(dst);
        }
    }
}

/// A regular file, not a symlink to one.
fn is_regular(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_file())
}

/// Apply 1 to 4 mutations to the tree at `root`; returns what was done.
fn mutate_tree(rng: &mut Rng, root: &Path, files: &[PathBuf]) -> Vec<String> {
    let mut done = Vec::new();
    for _ in 0..1 + rng.below(4) {
        let f = &files[rng.below(files.len())];
        let rel = f.strip_prefix(root).unwrap().display().to_string();
        // A regular file itself, never through a symlink: an earlier
        // mutation may have made `f` a link to /etc/passwd, and writing
        // through it (an edit, set_len, the diskstats line below) wrote
        // this test's garbage into the machine's /etc/passwd as root.
        if !is_regular(f) {
            continue;
        }
        match rng.below(20) {
            0 => {
                std::fs::remove_file(f).unwrap();
                rustix::fs::mknodat(
                    rustix::fs::CWD,
                    f,
                    rustix::fs::FileType::Fifo,
                    rustix::fs::Mode::from_raw_mode(0o600),
                    0,
                )
                .unwrap();
                done.push(format!("{rel}: FIFO"));
            }
            1 => {
                std::fs::remove_file(f).unwrap();
                std::os::unix::fs::symlink("/dev/zero", f).unwrap();
                done.push(format!("{rel}: symlink to /dev/zero"));
            }
            2 => {
                std::fs::remove_file(f).unwrap();
                std::os::unix::fs::symlink("../../../../../../../../etc/passwd", f).unwrap();
                done.push(format!("{rel}: symlink out of the tree"));
            }
            3 => {
                std::fs::remove_file(f).unwrap();
                std::fs::create_dir(f).unwrap();
                done.push(format!("{rel}: directory"));
            }
            4 => {
                std::fs::remove_file(f).unwrap();
                done.push(format!("{rel}: removed"));
            }
            5 => {
                let file = std::fs::OpenOptions::new().write(true).open(f).unwrap();
                file.set_len(100 << 20).unwrap();
                done.push(format!("{rel}: sparse 100 MiB"));
            }
            6 => {
                let ds = root.join("proc/diskstats");
                if is_regular(&ds) {
                    let mut b = std::fs::read(&ds).unwrap();
                    let long = "x".repeat(5000);
                    let name = ["../../etc", "..", "a/b", &long, "sd\u{1b}[2J"][rng.below(5)];
                    b.extend_from_slice(format!("   8  99 {name} 1 0 8 1 1 0 8 1 0 1 2\n").as_bytes());
                    std::fs::write(&ds, b).unwrap();
                    done.push(format!("proc/diskstats: device {name:.20}"));
                }
            }
            _ => {
                let mut b = std::fs::read(f).unwrap();
                let n = 1 + rng.below(8);
                for _ in 0..n {
                    rng.edit().apply(&mut b);
                }
                std::fs::write(f, b).unwrap();
                done.push(format!("{rel}: {n} edits"));
            }
        }
    }
    done
}

/// Run the batch on `root`; `Err` with what went wrong.
fn replay(root: &Path, json: bool) -> Result<i32, String> {
    let mut c = Command::new(BIN);
    c.arg("--root")
        .arg(root)
        .args(["--batch", "--interval", "0.05", "--count", "2", "--no-trace"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if json {
        c.arg("--json");
    }
    let mut child = c.spawn().map_err(|e| format!("spawn: {e}"))?;
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break s;
        }
        if t0.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("hung: still running after {LIMIT:?}"));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut err = String::new();
    let _ = std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err);
    use std::os::unix::process::ExitStatusExt;
    if let Some(sig) = status.signal() {
        return Err(format!("killed by signal {sig}; stderr: {err}"));
    }
    if status.code() == Some(101) || err.contains("panicked") {
        return Err(format!("panic ({status}); stderr: {err}"));
    }
    Ok(status.code().unwrap_or(-1))
}

#[test]
fn mutated_captured_trees_never_panic_or_hang() {
    let seed: u64 = std::env::var("IOLENS_TREE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x10_1e_25);
    let dir = tempfile::tempdir().unwrap();
    let next = AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    let clean = AtomicUsize::new(0);
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..PARALLEL {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= TREES {
                        return;
                    }
                    let mut rng = Rng(seed ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                    let base = BASES[i % BASES.len()];
                    let root = dir.path().join(format!("t{i}"));
                    let mut files = Vec::new();
                    copy_tree(&Path::new(FIX).join(base), &root, &mut files);
                    let what = mutate_tree(&mut rng, &root, &files);
                    match replay(&root, i % 2 == 1) {
                        Ok(0) => {
                            clean.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(_) => {}
                        Err(e) => failures
                            .lock()
                            .unwrap()
                            .push(format!("tree {i} (seed {seed}, from {base}, {what:?}): {e}")),
                    }
                    let _ = std::fs::remove_dir_all(&root);
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    println!(
        "{TREES} mutated trees replayed in {:.1} s: {} exited 0, the others with an error status; {} failures",
        t0.elapsed().as_secs_f64(),
        clean.load(Ordering::Relaxed),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
