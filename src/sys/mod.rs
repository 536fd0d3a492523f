//! The system-call module: the only place in iolens where `unsafe` is
//! allowed. Everything that talks to the kernel other than by reading files
//! goes through here — through `rustix` where it covers the call, and
//! through small audited wrappers (one file per topic) where it does not.
//!
//! Rules for this module:
//! - every `unsafe` block carries a `// SAFETY:` comment saying why it holds;
//! - every function returns `io::Result` (or a documented fallback) instead of
//!   a raw return code, and never panics on what the kernel returns;
//! - one file per topic (`ioprio`, ...); a new raw call that rustix lacks gets
//!   a new file here and `pub mod <topic>;` below.
//!
//! What is decided here once for the whole program: the privilege check
//! ([`is_root`], [`euid`], [`has_capability`]) and the I/O priority type and
//! its encoding ([`ioprio::IoPrio`]).

pub mod aligned;
pub mod blkdev;
pub mod dirent;
pub mod fiemap;
pub mod input;
pub mod ioprio;
pub mod malloc;
pub mod mount;
pub mod signal;
pub mod uring;
pub mod wake;

pub use rustix::thread::CapabilitySet;

/// The effective user id of iolens.
pub fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Whether iolens runs as root (effective uid 0). This is the one privilege
/// check: what root may do (read other users' /proc/<pid>/io, drop the page
/// cache, change other users' processes) is decided from it.
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Whether the calling thread holds `cap` in its effective set (e.g.
/// [`CapabilitySet::SYS_PTRACE`]); `false` when the sets cannot be read.
pub fn has_capability(cap: CapabilitySet) -> bool {
    rustix::thread::capabilities(None).is_ok_and(|s| s.effective.contains(cap))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_check_agrees_with_the_effective_uid() {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let field = |name: &str| {
            let l = status.lines().find(|l| l.starts_with(name)).unwrap();
            l[name.len()..]
                .split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        // Uid: real, effective, saved, filesystem.
        assert_eq!(euid().to_string(), field("Uid:")[1]);
        assert_eq!(is_root(), field("Uid:")[1] == "0");
        // CapEff: the effective set as hex; bit 19 CAP_SYS_PTRACE, 21 CAP_SYS_ADMIN.
        let eff = u64::from_str_radix(&field("CapEff:")[0], 16).unwrap();
        assert_eq!(has_capability(CapabilitySet::SYS_PTRACE), eff & (1 << 19) != 0);
        assert_eq!(has_capability(CapabilitySet::SYS_ADMIN), eff & (1 << 21) != 0);
    }
}
