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
use super::fdinfo::{MOUNTINFO_CAP, parse_fdinfo};
use super::mountinfo::{MountTable, may_block, parse_line};
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
        libc::SYS_preadv2,
        libc::SYS_pwritev2,
        libc::SYS_fsync,
        libc::SYS_fdatasync,
        libc::SYS_sync_file_range,
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
/// samples), at most `2 × MAX_TASKS` reads of `wchan` per sample. The
/// turns of S are taken only while this mount namespace has a FUSE or
/// network mount (checked every [`MOUNT_CHECK_SAMPLES`] samples; assumed
/// when mountinfo cannot be read): elsewhere a sleeping task has nothing
/// of that kind to wait on, and the 64 `wchan` reads were most of the
/// cost of a sample of sleeping processes that do no I/O.
#[derive(Debug, Default)]
pub struct Scanner {
    prev: Vec<i32>,
    cursor: usize,
    /// Samples taken, and whether a FUSE or network mount was seen at the
    /// last check.
    samples: u64,
    waitable: bool,
    /// Processes with a thread waiting on a file at the last sample.
    prev_waits: Vec<i32>,
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
        if self.samples.is_multiple_of(MOUNT_CHECK_SAMPLES) {
            self.waitable = waitable_mount(r);
        }
        self.samples += 1;
        let rotate = self.waitable;
        let sleeping: Vec<i32> = procs
            .iter()
            .filter(|p| rotate && p.state == 'S' && !p.cmdline.is_empty())
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

/// How often (in samples) mountinfo is read again for [`waitable_mount`].
pub const MOUNT_CHECK_SAMPLES: u64 = 5;

/// True when this mount namespace has a mount a task can wait on in a
/// way [`wait_class`] names (FUSE, NFS, a network filesystem; not the
/// FUSE control filesystem nor an automount point), or when mountinfo
/// cannot be read.
fn waitable_mount(r: &mut Reader) -> bool {
    match r.read_capped("/proc/self/mountinfo", MOUNTINFO_CAP) {
        Ok(b) => String::from_utf8_lossy(b)
            .lines()
            .filter_map(parse_line)
            .any(|m| may_block(&m.fs_type) && !matches!(m.fs_type.as_str(), "fusectl" | "autofs")),
        Err(_) => true,
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

/// A thread in state D in a call on a file descriptor: the file it waits
/// on. Read from `/proc/<pid>/task/<tid>/{syscall,wchan}`, the fd's
/// `fdinfo` (`mnt_id`, `ino`) and link text; the device is the mount's
/// MAJ:MIN in mountinfo (a superblock's `st_dev`, as the page-cache
/// events name it). Nothing here stats the file: none of these reads
/// reaches the filesystem, so none can hang with a FUSE or remote one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileWait {
    /// Thread group and thread.
    pub pid: i32,
    pub tid: i32,
    /// The call's number and the kernel function it sleeps in.
    pub syscall: i64,
    pub wchan: String,
    pub fd: i32,
    /// The file's filesystem (MAJ, MIN) and inode; `None` when unknown.
    pub dev: Option<(u32, u32)>,
    pub ino: Option<u64>,
    /// The fd's link text (the path, " (deleted)" when unlinked).
    pub path: Option<Vec<u8>>,
}

/// Thread states read per sample at most (`/proc/<pid>/task/<tid>/stat`
/// of the multi-threaded processes looked at).
pub const MAX_THREAD_READS: usize = 512;

/// The state letter of a thread's stat text (after the last ')').
fn stat_state(b: &[u8]) -> Option<char> {
    let close = b.iter().rposition(|&c| c == b')')?;
    b.get(close + 2).map(|&c| char::from(c))
}

/// The tasks in state D, as (pid, tid): a process's main thread by its
/// sampled state; every thread of a multi-threaded process whose threads
/// were read this sample for their I/O or delays (it did I/O lately), or
/// that had a waiting thread last sample (at most [`MAX_THREAD_READS`]
/// thread states, [`MAX_TASKS`] tasks).
fn tasks_in_d(r: &mut Reader, procs: &[RawProc], prev: &[i32]) -> Vec<(i32, i32)> {
    let mut out = Vec::new();
    let mut budget = MAX_THREAD_READS;
    for p in procs {
        let pid = p.key.pid;
        let threads =
            p.num_threads > 1 && (p.thread_blkio.is_some() || p.threads.is_some() || prev.contains(&pid)) && budget > 0;
        if !threads {
            if p.state == 'D' {
                out.push((pid, pid));
            }
            continue;
        }
        let Ok(tids) = r.list_numbers(format!("/proc/{pid}/task")) else {
            continue;
        };
        for tid in tids {
            if budget == 0 {
                break;
            }
            budget -= 1;
            let state = r
                .read_capped(format!("/proc/{pid}/task/{tid}/stat"), 1024)
                .ok()
                .and_then(stat_state);
            if state == Some('D') {
                out.push((pid, tid));
            }
        }
    }
    out.truncate(MAX_TASKS);
    out
}

impl Scanner {
    /// The threads in state D in a call on a file descriptor, and the
    /// files they wait on (see [`FileWait`]).
    pub fn waits(&mut self, r: &mut Reader, procs: &[RawProc]) -> Vec<FileWait> {
        let tasks = tasks_in_d(r, procs, &self.prev_waits);
        let mut mounts: Option<MountTable> = None;
        let mut out = Vec::new();
        for (pid, tid) in tasks {
            let base = format!("/proc/{pid}/task/{tid}");
            let Some((nr, a0)) = text(r, format!("{base}/syscall")).as_deref().and_then(parse_syscall) else {
                continue;
            };
            let Ok(fd) = i32::try_from(a0) else { continue };
            if !fd_call(nr) {
                continue;
            }
            let wchan = text(r, format!("{base}/wchan")).unwrap_or_default();
            let info = r
                .read_capped(format!("/proc/{pid}/fdinfo/{fd}"), 4096)
                .ok()
                .and_then(parse_fdinfo);
            let mounts = mounts.get_or_insert_with(|| MountTable::new(mountinfo_of(r, "self")));
            let dev = info.and_then(|i| i.mnt_id).and_then(|id| {
                if mounts.get(id).is_none() {
                    // Another mount namespace: the process's own table.
                    mounts.extend(mountinfo_of(r, &pid.to_string()));
                }
                mounts.get(id).map(|m| (m.major, m.minor))
            });
            let path = r
                .read_link(format!("/proc/{pid}/fd/{fd}"))
                .ok()
                .map(|p| p.into_os_string().into_encoded_bytes());
            out.push(FileWait {
                pid,
                tid,
                syscall: nr,
                wchan,
                fd,
                dev,
                ino: info.and_then(|i| i.ino),
                path,
            });
        }
        self.prev_waits = out.iter().map(|w| w.pid).collect();
        out
    }
}

/// `/proc/<who>/mountinfo`, bounded.
fn mountinfo_of(r: &mut Reader, who: &str) -> Vec<super::mountinfo::Mount> {
    r.read_capped(format!("/proc/{who}/mountinfo"), MOUNTINFO_CAP)
        .map(super::mountinfo::parse)
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

    /// A sleeping process waiting on a FUSE request is looked at only
    /// while a FUSE or network mount is in mountinfo (or it cannot be
    /// read); the mounts are checked again every MOUNT_CHECK_SAMPLES.
    #[test]
    fn sleeping_tasks_are_looked_at_only_beside_a_fuse_or_network_mount() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("proc");
        std::fs::create_dir_all(p.join("70")).unwrap();
        std::fs::create_dir_all(p.join("self")).unwrap();
        std::fs::write(p.join("70/wchan"), "request_wait_answer").unwrap();
        let mut sleeper = RawProc::example(70, 1, "sshfs-user");
        sleeper.state = 'S';
        sleeper.cmdline = "cat /mnt/f".into();
        let procs = [sleeper];
        let local = "22 1 252:1 / / rw - ext4 /dev/vda1 rw\n\
                     30 22 0:40 / /sys/fs/fuse/connections rw - fusectl fusectl rw\n\
                     31 22 0:41 / /net rw - autofs systemd-1 rw\n";
        let mut r = Reader::new(dir.path());
        let found = |sc: &mut Scanner, r: &mut Reader| sc.read(r, &procs).iter().map(|b| b.pid).collect::<Vec<_>>();
        // No mountinfo: assumed there may be one.
        assert_eq!(found(&mut Scanner::default(), &mut r), vec![70]);
        std::fs::write(p.join("self/mountinfo"), local).unwrap();
        let mut sc = Scanner::default();
        for _ in 0..MOUNT_CHECK_SAMPLES {
            assert!(found(&mut sc, &mut r).is_empty());
        }
        std::fs::write(
            p.join("self/mountinfo"),
            format!("{local}40 22 0:50 / /mnt rw - fuse.sshfs host: rw\n"),
        )
        .unwrap();
        assert_eq!(found(&mut sc, &mut r), vec![70]);
        let mut nfs = Scanner::default();
        std::fs::write(
            p.join("self/mountinfo"),
            format!("{local}43 22 0:51 / /nfs rw - nfs4 srv:/e rw\n"),
        )
        .unwrap();
        assert_eq!(found(&mut nfs, &mut r), vec![70]);
    }

    /// A captured tree: process 40 (one thread) in D in fsync(4) on an
    /// unlinked file of mount 30 (7:0); process 50 in D in a call on no
    /// fd (statx); process 60 asleep.
    #[test]
    fn waits_in_a_captured_tree() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("proc");
        let put = |rel: &str, text: &str| {
            let f = p.join(rel);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, text).unwrap();
        };
        put("self/mountinfo", "30 1 7:0 / /mnt rw - ext4 /dev/loop0 rw\n");
        put("40/task/40/syscall", "74 0x4 0x0 0x0 0x0 0x0 0x0 0x7ffe 0x7f\n");
        put("40/task/40/wchan", "folio_wait_bit");
        put("40/fdinfo/4", "pos:\t0\nflags:\t0100001\nmnt_id:\t30\nino:\t12\n");
        std::fs::create_dir_all(p.join("40/fd")).unwrap();
        std::os::unix::fs::symlink("/mnt/log (deleted)", p.join("40/fd/4")).unwrap();
        put(
            "50/task/50/syscall",
            "332 0xffffff9c 0x7ffe 0x900 0xfff 0x7ffe 0x5 0x7ffe 0x7f\n",
        );
        put("50/task/50/wchan", "io_schedule");
        let mut r = Reader::new(dir.path());
        let proc = |pid, state| {
            let mut p = RawProc::example(pid, 1, "x");
            p.state = state;
            p
        };
        let procs = [proc(40, 'D'), proc(50, 'D'), proc(60, 'S')];
        let mut sc = Scanner::default();
        let w = sc.waits(&mut r, &procs);
        assert_eq!(
            w,
            vec![FileWait {
                pid: 40,
                tid: 40,
                syscall: libc::SYS_fsync,
                wchan: "folio_wait_bit".into(),
                fd: 4,
                dev: Some((7, 0)),
                ino: Some(12),
                path: Some(b"/mnt/log (deleted)".to_vec()),
            }]
        );
        assert_eq!(sc.prev_waits, vec![40]);
        assert_eq!(stat_state(b"7 (a) b) D 1 2"), Some('D'));
        assert_eq!(stat_state(b"7 (a"), None);
    }
}
