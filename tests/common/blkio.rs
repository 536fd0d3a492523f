//! A v1 blkio cgroup for live tests, removed on drop (its processes moved
//! to the root first if any are left). Only loop devices are throttled: a
//! v1 limit once set on a disk changes how every later test sees it until
//! reboot. Included with `#[path]`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

pub const BLKIO: &str = "/sys/fs/cgroup/blkio";

pub struct Cgroup(pub PathBuf);

impl Cgroup {
    /// Why there is no v1 blkio throttle here, if there is none.
    pub fn unavailable() -> Option<String> {
        (!Path::new(BLKIO).join("blkio.throttle.read_bps_device").exists())
            .then(|| format!("no cgroup v1 blkio hierarchy at {BLKIO} (v2 io tests not written)"))
    }

    /// `iolens-test-<pid>-<tag>` under the hierarchy's root.
    pub fn new(tag: &str) -> Result<Cgroup, String> {
        let p = Path::new(BLKIO).join(format!("iolens-test-{}-{tag}", std::process::id()));
        std::fs::create_dir(&p).map_err(|e| format!("cannot create cgroup {}: {e}", p.display()))?;
        Ok(Cgroup(p))
    }

    /// Limit reads of the loop device `major:minor` to `bps` bytes/s
    /// (refused for any other device).
    pub fn throttle_reads(&self, major: u32, minor: u32, bps: u64) -> Result<(), String> {
        let name = std::fs::read_link(format!("/sys/dev/block/{major}:{minor}"))
            .map_err(|e| format!("device {major}:{minor} in sysfs: {e}"))?;
        let name = name.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if !name.starts_with("loop") {
            return Err(format!(
                "refusing to throttle {name} ({major}:{minor}): only loop devices"
            ));
        }
        std::fs::write(
            self.0.join("blkio.throttle.read_bps_device"),
            format!("{major}:{minor} {bps}"),
        )
        .map_err(|e| format!("throttling {name}: {e}"))
    }

    /// Its `cgroup.procs` (a shell joins it with `echo $$ > ...`).
    pub fn procs(&self) -> PathBuf {
        self.0.join("cgroup.procs")
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        for _ in 0..100 {
            if std::fs::remove_dir(&self.0).is_ok() || !self.0.exists() {
                return;
            }
            if let Ok(procs) = std::fs::read_to_string(self.procs()) {
                for pid in procs.split_whitespace() {
                    let _ = std::fs::write(Path::new(BLKIO).join("cgroup.procs"), pid);
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("warning: could not remove {}", self.0.display());
    }
}
