//! Tasks blocked on a FUSE or network filesystem, and which mount: for the
//! sleeping processes ([`Scanner`]), their `wchan` (the kernel function it sleeps in:
//! `request_wait_answer` for a FUSE request, `rpc_wait_bit_killable` for
//! NFS ...). For those waiting on such a filesystem, the mount comes from
//! the call it is in (`/proc/<pid>/syscall`): a call on a file descriptor
//! names the mount through `/proc/<pid>/fdinfo/<fd>` `mnt_id`; a call on a
//! path (stat, open) cannot be resolved without reading the caller's
//! memory, so the mount is named only where one mount of that kind exists.
//! None of these reads touches the filesystem in question: they cannot
//! hang with it.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::Reader;
use super::mountinfo::{may_block, parse_line};
use super::process::RawProc;

/// Tasks looked at per sample, of each kind (see [`Scanner`]).
pub const MAX_TASKS: usize = 64;

/// A task waiting on a FUSE or network filesystem.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockedTask {
    pub pid: i32,
    /// The kernel function it sleeps in (`/proc/<pid>/wchan`).
    pub wchan: String,
    /// "FUSE", "NFS" or "network", from `wchan`.
    pub class: String,
    /// The mount it waits on, when known, and how it is known.
    pub mount: Option<String>,
    pub fs_type: Option<String>,
    pub basis: Option<String>,
}

/// The kind of filesystem a task sleeping in `wchan` waits on, if any.
pub fn wait_class(wchan: &str) -> Option<&'static str> {
    const FUSE: [&str; 2] = ["fuse", "request_wait_answer"];
    const NFS: [&str; 3] = ["nfs", "rpc_", "xprt_"];
    const NET: [&str; 6] = ["cifs", "smb", "wait_for_response", "p9_", "ceph", "afs_"];
    if FUSE.iter().any(|p| wchan.contains(p)) {
        Some("FUSE")
    } else if NFS.iter().any(|p| wchan.contains(p)) {
        Some("NFS")
    } else if NET.iter().any(|p| wchan.contains(p)) {
        Some("network")
    } else {
        None
    }
}

/// Calls whose first argument is a file descriptor on the file waited for.
fn fd_call(nr: i64) -> bool {
    [
        libc::SYS_read,
        libc::SYS_write,
        libc::SYS_pread64,
        libc::SYS_pwrite64,
        libc::SYS_readv,
        libc::SYS_writev,
        libc::SYS_preadv,
        libc::SYS_pwritev,
        libc::SYS_fsync,
        libc::SYS_fdatasync,
        libc::SYS_fstat,
        libc::SYS_getdents64,
        libc::SYS_ftruncate,
        libc::SYS_fallocate,
        libc::SYS_lseek,
        libc::SYS_copy_file_range,
    ]
    .contains(&nr)
}

/// `/proc/<pid>/syscall`: the call number and its first argument ("running"
/// or a bad line: `None`).
pub fn parse_syscall(text: &str) -> Option<(i64, u64)> {
    let mut f = text.split_ascii_whitespace();
    let nr = f.next()?.parse().ok()?;
    let a0 = u64::from_str_radix(f.next()?.trim_start_matches("0x"), 16).ok()?;
    Some((nr, a0))
}

/// `mnt_id:` of an fdinfo text.
pub fn fdinfo_mnt_id(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("mnt_id:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Whether a mount of type `fs` is of `class`.
fn of_class(fs: &str, class: &str) -> bool {
    match class {
        "FUSE" => fs == "fuse" || fs == "fuseblk" || fs.starts_with("fuse."),
        "NFS" => fs.starts_with("nfs"),
        _ => may_block(fs),
    }
}

fn text(r: &mut Reader, path: String) -> Option<String> {
    r.read_capped(path, 512)
        .ok()
        .map(|b| String::from_utf8_lossy(b).trim().to_string())
}

/// The mount of a blocked task, and how it is known.
fn mount_of(
    r: &mut Reader,
    pid: i32,
    class: &str,
    mounts: &HashMap<u64, (String, String)>,
) -> Option<(String, String, String)> {
    if let Some((nr, a0)) = text(r, format!("/proc/{pid}/syscall"))
        .as_deref()
        .and_then(parse_syscall)
        && fd_call(nr)
        && let Some(id) = text(r, format!("/proc/{pid}/fdinfo/{}", a0 as i32))
            .as_deref()
            .and_then(fdinfo_mnt_id)
        && let Some((point, fs)) = mounts.get(&id)
    {
        return Some((
            point.clone(),
            fs.clone(),
            "the file descriptor of its call (fdinfo mnt_id)".into(),
        ));
    }
    let mut same = mounts.values().filter(|(_, fs)| of_class(fs, class));
    match (same.next(), same.next()) {
        (Some((point, fs)), None) => Some((point.clone(), fs.clone(), format!("the only {class} mount"))),
        _ => None,
    }
}

/// Which sleeping tasks to look at: a FUSE request waits interruptibly
/// (state S) until a signal arrives, then uninterruptibly (D), so both
/// count. Every task in D, the tasks found waiting last sample, and user
/// processes in S in turns of [`MAX_TASKS`] per sample (a rotating cursor:
/// on a box with more sleeping processes a new wait is found within a few
/// samples), at most `2 × MAX_TASKS` reads of `wchan` per sample.
#[derive(Debug, Default)]
pub struct Scanner {
    prev: Vec<i32>,
    cursor: usize,
}

impl Scanner {
    /// The tasks that wait on a FUSE or network filesystem.
    pub fn read(&mut self, r: &mut Reader, procs: &[RawProc]) -> Vec<BlockedTask> {
        let mut pids: Vec<i32> = procs
            .iter()
            .filter(|p| p.state == 'D' || self.prev.contains(&p.key.pid))
            .map(|p| p.key.pid)
            .take(MAX_TASKS)
            .collect();
        let sleeping: Vec<i32> = procs
            .iter()
            .filter(|p| p.state == 'S' && !p.cmdline.is_empty())
            .map(|p| p.key.pid)
            .collect();
        if !sleeping.is_empty() {
            let start = self.cursor % sleeping.len();
            let n = sleeping.len().min(MAX_TASKS);
            pids.extend((0..n).map(|i| sleeping[(start + i) % sleeping.len()]));
            self.cursor = start + n;
        }
        pids.sort_unstable();
        pids.dedup();
        let out = read_pids(r, &pids);
        self.prev = out.iter().map(|b| b.pid).collect();
        out
    }
}

fn read_pids(r: &mut Reader, pids: &[i32]) -> Vec<BlockedTask> {
    let mut out = Vec::new();
    let mut mounts: Option<HashMap<u64, (String, String)>> = None;
    for &pid in pids {
        let Some(wchan) = text(r, format!("/proc/{pid}/wchan")) else {
            continue;
        };
        let Some(class) = wait_class(&wchan) else { continue };
        let mounts = mounts.get_or_insert_with(|| {
            text_all(r, "/proc/self/mountinfo")
                .lines()
                .filter_map(parse_line)
                .filter(|m| may_block(&m.fs_type))
                .map(|m| (m.id, (m.mount_point, m.fs_type)))
                .collect()
        });
        let m = mount_of(r, pid, class, mounts);
        out.push(BlockedTask {
            pid,
            wchan,
            class: class.into(),
            mount: m.as_ref().map(|m| m.0.clone()),
            fs_type: m.as_ref().map(|m| m.1.clone()),
            basis: m.map(|m| m.2),
        });
    }
    out
}

fn text_all(r: &mut Reader, path: &str) -> String {
    r.read(path)
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_classes_calls_and_mount_ids() {
        assert_eq!(wait_class("request_wait_answer"), Some("FUSE"));
        assert_eq!(wait_class("rpc_wait_bit_killable"), Some("NFS"));
        assert_eq!(wait_class("wait_for_response"), Some("network"));
        assert_eq!(wait_class("io_schedule"), None);
        assert_eq!(wait_class("0"), None);
        // statx(AT_FDCWD, ...) as a hung stat shows it, and a read(3, ...).
        let statx =
            "332 0xffffff9c 0x7ffe1fb4dae1 0x900 0xfff 0x7ffe1fb4cfe0 0x564b6db2a4c0 0x7ffe1fb4cf08 0x7f262dccab3a";
        assert_eq!(parse_syscall(statx), Some((332, 0xffff_ff9c)));
        assert_eq!(parse_syscall("running"), None);
        assert_eq!(parse_syscall("0 0x3 0x7f 0x1000 0 0 0 0x7ffe 0x7f"), Some((0, 3)));
        assert!(fd_call(libc::SYS_read) && !fd_call(libc::SYS_statx));
        assert_eq!(
            fdinfo_mnt_id("pos:\t0\nflags:\t0100000\nmnt_id:\t512\nino:\t2\n"),
            Some(512)
        );
        assert_eq!(fdinfo_mnt_id("pos:\t0\n"), None);
        assert!(of_class("fuse.hangfs", "FUSE") && of_class("nfs4", "NFS") && !of_class("nfs4", "FUSE"));
    }

    #[test]
    fn this_process_is_not_blocked() {
        let mut r = Reader::new("/");
        let me = crate::collect::process::RawProc::example(std::process::id() as i32, 0, "t");
        let mut d = me.clone();
        d.state = 'D';
        // Running, its wchan is "0": no wait class, nothing listed.
        assert!(Scanner::default().read(&mut r, &[me, d]).is_empty());
    }
}
