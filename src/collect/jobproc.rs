//! What the jobs engine reads of a job's processes (live system only):
//! parent, command line (bounded), working directory, what fds 0 and 1 are
//! (a pipe's inode, or a file's path: `readlink`, which never reaches a
//! filesystem), I/O counters, and children (`/proc/<pid>/task/<pid>/children`).

use std::io::Read;

use serde::{Deserialize, Serialize};

use super::process::{ProcIo, parse_io, parse_stat};

/// A tool whose job iolens understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tool {
    /// GNU tar or bsdtar creating an archive.
    Tar,
    Rsync,
    Cp,
    Mv,
    Zip,
    SevenZip,
    Borg,
    Restic,
    Cpio,
    Dd,
}

impl Tool {
    pub fn name(self) -> &'static str {
        match self {
            Tool::Tar => "tar",
            Tool::Rsync => "rsync",
            Tool::Cp => "cp",
            Tool::Mv => "mv",
            Tool::Zip => "zip",
            Tool::SevenZip => "7z",
            Tool::Borg => "borg",
            Tool::Restic => "restic",
            Tool::Cpio => "cpio",
            Tool::Dd => "dd",
        }
    }
}

/// The job's total as far as it is known.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Total {
    /// The walk runs: what it found so far.
    Counting {
        files: u64,
        bytes: u64,
    },
    Known {
        files: u64,
        bytes: u64,
    },
    /// Why it cannot be known.
    Unknown {
        why: String,
    },
}

/// One sample of a job (what the session read of it; carried by the
/// sample, so recordings replay it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobInput {
    /// The root process (pid, start time).
    pub key: (i32, u64),
    pub tool: Tool,
    /// The command line, joined with spaces (unescaped).
    pub command: String,
    pub pids: Vec<i32>,
    /// Bytes of its sources read so far; `None` when unreadable.
    pub position: Option<u64>,
    pub total: Total,
    /// Why the total or the position is only an estimate.
    pub notes: Vec<String>,
    /// The file being read (unescaped link text), its position and size.
    pub current: Option<(String, u64, Option<u64>)>,
    /// Source files read, counted one by one from the jobs' read trace
    /// (`model::jobs::files`): exact.
    #[serde(default)]
    pub files_done: Option<u64>,
    /// Why the files done are only estimated from the bytes.
    #[serde(default)]
    pub files_why: Option<String>,
    /// How long its root had run at this pass (ns; from its start time,
    /// to the clock tick): its position was 0 then.
    #[serde(default)]
    pub age_ns: Option<u64>,
    /// The job's root was found gone in this pass: the input carries only
    /// its last files done (the reads it made before it ended).
    #[serde(default)]
    pub gone: bool,
}

/// The longest command line read.
const CMDLINE_CAP: u64 = 256 * 1024;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobProc {
    pub pid: i32,
    pub start_time: u64,
    pub ppid: i32,
    pub comm: String,
    pub argv: Vec<Vec<u8>>,
    pub cwd: Option<Vec<u8>>,
    /// `PWD` from its environment (the directory its shell started it in,
    /// when it changed directory since), read with the command line.
    pub pwd: Option<Vec<u8>>,
    /// Link texts of fds 0 and 1 ("pipe:[123]", "/path").
    pub stdin: Option<Vec<u8>>,
    pub stdout: Option<Vec<u8>>,
    pub io: Option<ProcIo>,
}

fn read_capped(path: &str, cap: u64) -> Option<Vec<u8>> {
    let mut v = Vec::new();
    std::fs::File::open(path).ok()?.take(cap).read_to_end(&mut v).ok()?;
    Some(v)
}

fn link(path: &str) -> Option<Vec<u8>> {
    use std::os::unix::ffi::OsStringExt;
    Some(std::fs::read_link(path).ok()?.into_os_string().into_vec())
}

/// The inode of a pipe link text ("pipe:[123]").
pub fn pipe_inode(link: &[u8]) -> Option<u64> {
    std::str::from_utf8(link.strip_prefix(b"pipe:[")?.strip_suffix(b"]")?)
        .ok()?
        .parse()
        .ok()
}

/// Read one process; `argv` only when `with_argv` (it is cached by the
/// caller per process).
pub fn read(pid: i32, with_argv: bool) -> Option<JobProc> {
    let stat = parse_stat(&read_capped(&format!("/proc/{pid}/stat"), 4096)?)?;
    let argv = if with_argv {
        read_capped(&format!("/proc/{pid}/cmdline"), CMDLINE_CAP)
            .unwrap_or_default()
            .split(|&c| c == 0)
            .filter(|a| !a.is_empty())
            .map(<[u8]>::to_vec)
            .collect()
    } else {
        Vec::new()
    };
    let pwd = with_argv
        .then(|| read_capped(&format!("/proc/{pid}/environ"), CMDLINE_CAP))
        .flatten()
        .and_then(|e| {
            e.split(|&c| c == 0)
                .find_map(|v| v.strip_prefix(b"PWD=").map(<[u8]>::to_vec))
        });
    Some(JobProc {
        pid,
        start_time: stat.start_time,
        ppid: stat.ppid,
        comm: stat.comm,
        argv,
        pwd,
        cwd: link(&format!("/proc/{pid}/cwd")),
        stdin: link(&format!("/proc/{pid}/fd/0")),
        stdout: link(&format!("/proc/{pid}/fd/1")),
        io: read_capped(&format!("/proc/{pid}/io"), 4096).and_then(|b| parse_io(&b)),
    })
}

/// The children of `pid`'s main thread.
pub fn children(pid: i32) -> Vec<i32> {
    read_capped(&format!("/proc/{pid}/task/{pid}/children"), 64 * 1024)
        .map(|b| {
            String::from_utf8_lossy(&b)
                .split_ascii_whitespace()
                .filter_map(|p| p.parse().ok())
                .take(4096)
                .collect()
        })
        .unwrap_or_default()
}
