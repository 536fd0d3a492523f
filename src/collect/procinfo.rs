//! One process in detail, read on demand (Enter in the processes pane):
//! its working directory, cgroup and open files with their positions.
//! Nothing here can block on a hung FUSE or network mount: the working
//! directory is the link text of `/proc/<pid>/cwd` (readlink of a /proc
//! link never calls into the target's filesystem), and the open files come
//! from the fd scanner, which never stats a file on a FUSE, network or
//! automount filesystem (it knows them from mountinfo by mnt_id).

use serde::Serialize;

use super::Reader;
use super::fdinfo::{FdScanner, RawFd, ScanProc, Watch};
use super::process::{ProcIo, ProcKey};

/// Bytes read of `/proc/<pid>/cgroup` at most.
const CGROUP_MAX: usize = 16 * 1024;

/// What the process detail shows beyond the process row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcInfo {
    pub key: ProcKey,
    /// Working directory (link text, unescaped); `None` when not readable.
    pub cwd: Option<String>,
    /// The cgroup v2 path (the `0::` line), else the v1 lines joined.
    pub cgroup: Option<String>,
    /// Open regular files and block devices, by fd.
    pub fds: Vec<RawFd>,
    /// Why some of it could not be read (another user's process without
    /// root, the process gone).
    pub error: Option<String>,
}

/// The cgroup of a `/proc/<pid>/cgroup` text: the unified (`0::`) path, or
/// the v1 hierarchies as `controllers:path` joined by spaces.
pub fn parse_cgroup(text: &str) -> Option<String> {
    if let Some(p) = text.lines().find_map(|l| l.strip_prefix("0::")) {
        return Some(p.to_string());
    }
    let v1: Vec<String> = text
        .lines()
        .filter_map(|l| {
            let mut f = l.splitn(3, ':');
            let (_, ctl, path) = (f.next()?, f.next()?, f.next()?);
            (!ctl.is_empty()).then(|| format!("{ctl}:{path}"))
        })
        .collect();
    (!v1.is_empty()).then(|| v1.join(" "))
}

/// Read the detail of process `key` (`comm`, `io` as in the last sample).
pub fn read(reader: &mut Reader, key: ProcKey, comm: &str, io: Option<ProcIo>) -> ProcInfo {
    let mut info = ProcInfo {
        key,
        cwd: None,
        cgroup: None,
        fds: Vec::new(),
        error: None,
    };
    match reader.read_link(format!("/proc/{}/cwd", key.pid)) {
        Ok(p) => info.cwd = Some(p.to_string_lossy().into_owned()),
        Err(e) => info.error = Some(format!("reading /proc/{}/cwd: {e}", key.pid)),
    }
    info.cgroup = reader
        .read_limited(format!("/proc/{}/cgroup", key.pid), CGROUP_MAX)
        .ok()
        .and_then(|b| parse_cgroup(&String::from_utf8_lossy(b)));
    // A process holding more open files than the budget: the first ones,
    // and a note saying how many were not read.
    let mut scanner = FdScanner::new(Watch {
        pids: vec![key.pid],
        names: Vec::new(),
    });
    scanner.report_all = true;
    let snap = scanner.scan(
        reader,
        &[ScanProc {
            key,
            comm: comm.into(),
            io,
        }],
    );
    match snap.procs.into_iter().find(|p| p.key == key) {
        Some(p) => {
            if p.unread > 0 {
                info.error = Some(format!(
                    "{} more open fds not read (at most {} per look)",
                    p.unread, scanner.budget.fds
                ));
            }
            info.fds = p.fds;
        }
        None if snap.denied > 0 => {
            info.error = Some(format!("open files of PID {}: permission denied (not root)", key.pid));
        }
        None => {}
    }
    info.fds.sort_by_key(|f| f.fd);
    info
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cgroup_v2_path_or_v1_lines() {
        assert_eq!(
            parse_cgroup("0::/system.slice/ssh.service\n").as_deref(),
            Some("/system.slice/ssh.service")
        );
        let v1 = "12:blkio:/user.slice\n11:memory:/user.slice\n1:name=systemd:/user.slice/session-2.scope\n0::/\n";
        assert_eq!(parse_cgroup(v1).as_deref(), Some("/"));
        let only_v1 = "12:blkio:/a\n3:cpu,cpuacct:/b\n";
        assert_eq!(parse_cgroup(only_v1).as_deref(), Some("blkio:/a cpu,cpuacct:/b"));
        assert_eq!(parse_cgroup(""), None);
    }

    #[test]
    fn reads_this_process_its_cwd_and_an_open_file() {
        use std::io::Read;
        let mut f = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut f, &[7u8; 10_000]).unwrap();
        let mut file = std::fs::File::open(f.path()).unwrap();
        let mut buf = [0u8; 4096];
        file.read_exact(&mut buf).unwrap();
        let mut r = Reader::new("/");
        let pid = std::process::id() as i32;
        let st = crate::collect::process::parse_stat(r.read(format!("/proc/{pid}/stat")).unwrap()).unwrap();
        let key = ProcKey {
            pid,
            start_time: st.start_time,
        };
        let info = read(&mut r, key, "iolens-test", None);
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(info.cwd.as_deref(), cwd.to_str());
        assert!(info.cgroup.is_some());
        use std::os::fd::AsRawFd;
        let fd = file.as_raw_fd();
        let f = info.fds.iter().find(|x| x.fd == fd);
        assert_eq!(f.map(|f| (f.pos, f.size)), Some((4096, Some(10_000))), "{:?}", info.fds);
    }
}
