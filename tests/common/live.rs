//! Live-test helpers: a background process group killed on drop and a
//! read-only loop device detached on drop. Included with `#[path]`.
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

/// A read-only loop device (direct I/O) over a temp file; detached on drop.
pub struct Loop {
    pub dev: String,
    _file: tempfile::NamedTempFile,
}

impl Loop {
    /// Over a sparse file of 32 MiB.
    pub fn attach() -> Result<Loop, String> {
        Loop::attach_with(|f| f.as_file().set_len(32 << 20))
    }

    /// Over 64 MiB of random data (a probe of it reaches the device).
    pub fn attach_random() -> Result<Loop, String> {
        Loop::attach_with(|f| {
            use std::io::{Read, Write};
            let mut data = vec![0u8; 64 << 20];
            std::fs::File::open("/dev/urandom")?.read_exact(&mut data)?;
            f.as_file().write_all(&data)?;
            f.as_file().sync_all()
        })
    }

    pub fn attach_with(fill: impl FnOnce(&tempfile::NamedTempFile) -> std::io::Result<()>) -> Result<Loop, String> {
        if !is_root() {
            return Err("not root (losetup needs it)".into());
        }
        if !have("losetup") {
            return Err("losetup not installed".into());
        }
        let file = tempfile::NamedTempFile::new_in("/var/tmp").map_err(|e| e.to_string())?;
        fill(&file).map_err(|e| format!("filling {}: {e}", file.path().display()))?;
        let out = Command::new("losetup")
            .args(["-f", "--show", "-r", "--direct-io=on"])
            .arg(file.path())
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!(
                "losetup failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
        Ok(Loop { dev, _file: file })
    }

    pub fn name(&self) -> &str {
        self.dev.trim_start_matches("/dev/")
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}
