//! Live-test helpers: a background process group killed on drop and a
//! loop device detached on drop. Included with `#[path]`.
#![allow(dead_code)]

use std::process::{Child, Command, Stdio};

#[path = "tools.rs"]
pub mod tools;
use tools::{have, is_root};

/// A child process killed (with its process group) on drop.
pub struct Bg(pub Child);

impl Bg {
    pub fn spawn(c: &mut Command) -> Bg {
        use std::os::unix::process::CommandExt;
        c.process_group(0).stdout(Stdio::null()).stderr(Stdio::null());
        Bg(c.spawn().unwrap())
    }

    pub fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Bg {
    fn drop(&mut self) {
        // SAFETY: signalling the process group we created.
        unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
        let _ = self.0.wait();
    }
}

/// How a loop device is attached.
#[derive(Debug, Clone, Copy)]
pub struct Attach {
    pub read_only: bool,
    /// `--direct-io=on`: reads reach the backing file's disk, not the
    /// page cache.
    pub direct: bool,
    /// `-P`: the kernel reads its partition table.
    pub partscan: bool,
    /// `-b`: its logical sector size (512 when `None`).
    pub sector_size: Option<u32>,
}

impl Attach {
    /// Read-only with direct I/O (what a probe or a read test needs).
    pub const READ_ONLY_DIRECT: Attach = Attach {
        read_only: true,
        direct: true,
        partscan: false,
        sector_size: None,
    };
    /// Writable with direct I/O (a filesystem on it, writes through it).
    pub const DIRECT: Attach = Attach {
        read_only: false,
        direct: true,
        partscan: false,
        sector_size: None,
    };
}

/// A loop device over a file; detached on drop, before its backing temp
/// file (when it has one) is removed.
pub struct Loop {
    pub dev: String,
    _file: Option<tempfile::NamedTempFile>,
}

impl Loop {
    /// Read-only, direct I/O, over a sparse file of 32 MiB.
    pub fn attach() -> Result<Loop, String> {
        Loop::attach_with(|f| f.as_file().set_len(32 << 20))
    }

    /// Read-only, direct I/O, over 64 MiB of random data (a probe of it
    /// reaches the device).
    pub fn attach_random() -> Result<Loop, String> {
        Loop::attach_with(|f| {
            use std::io::{Read, Write};
            let mut data = vec![0u8; 64 << 20];
            std::fs::File::open("/dev/urandom")?.read_exact(&mut data)?;
            f.as_file().write_all(&data)?;
            f.as_file().sync_all()
        })
    }

    /// Read-only, direct I/O, over a temp file that `fill` writes.
    pub fn attach_with(fill: impl FnOnce(&tempfile::NamedTempFile) -> std::io::Result<()>) -> Result<Loop, String> {
        Loop::over_new_file(fill, Attach::READ_ONLY_DIRECT)
    }

    /// Over a new temp file in /var/tmp (on the disk, not tmpfs) that
    /// `fill` writes or sizes; the file goes with the device.
    pub fn over_new_file(
        fill: impl FnOnce(&tempfile::NamedTempFile) -> std::io::Result<()>,
        how: Attach,
    ) -> Result<Loop, String> {
        if !is_root() {
            return Err("not root (losetup needs it)".into());
        }
        if !have("losetup") {
            return Err("losetup not installed".into());
        }
        let file = tempfile::NamedTempFile::new_in("/var/tmp").map_err(|e| e.to_string())?;
        fill(&file).map_err(|e| format!("filling {}: {e}", file.path().display()))?;
        let mut l = Loop::over_file(file.path(), how)?;
        l._file = Some(file);
        Ok(l)
    }

    /// Over an existing file, which the caller keeps and removes.
    pub fn over_file(file: &std::path::Path, how: Attach) -> Result<Loop, String> {
        if !is_root() {
            return Err("not root (losetup needs it)".into());
        }
        let mut cmd = Command::new("losetup");
        cmd.args(["-f", "--show"]);
        if how.read_only {
            cmd.arg("-r");
        }
        if how.direct {
            cmd.arg("--direct-io=on");
        }
        if how.partscan {
            cmd.arg("-P");
        }
        if let Some(b) = how.sector_size {
            cmd.arg("-b").arg(b.to_string());
        }
        let out = cmd.arg(file).output().map_err(|e| format!("losetup: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "losetup failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
        Ok(Loop { dev, _file: None })
    }

    pub fn name(&self) -> &str {
        self.dev.trim_start_matches("/dev/")
    }

    pub fn path(&self) -> &std::path::Path {
        std::path::Path::new(&self.dev)
    }

    /// (major, minor) from sysfs.
    pub fn numbers(&self) -> Option<(u32, u32)> {
        let t = std::fs::read_to_string(format!("/sys/block/{}/dev", self.name())).ok()?;
        let (a, b) = t.trim().split_once(':')?;
        Some((a.parse().ok()?, b.parse().ok()?))
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

/// The v1 blkio hierarchy.
pub const BLKIO: &str = "/sys/fs/cgroup/blkio";

/// A v1 blkio cgroup, removed on drop (its processes moved to the root first
/// if any are left).
pub struct Cgroup(pub std::path::PathBuf);

impl Drop for Cgroup {
    fn drop(&mut self) {
        for _ in 0..100 {
            if std::fs::remove_dir(&self.0).is_ok() || !self.0.exists() {
                return;
            }
            if let Ok(procs) = std::fs::read_to_string(self.0.join("cgroup.procs")) {
                for pid in procs.split_whitespace() {
                    let _ = std::fs::write(std::path::Path::new(BLKIO).join("cgroup.procs"), pid);
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        eprintln!("warning: could not remove {}", self.0.display());
    }
}
