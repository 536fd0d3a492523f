//! The process lister of `iolens progress`: which processes there are and
//! which did I/O, without the full process collector.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;

use super::{ScanProc, Watch};
use crate::collect::Reader;
use crate::collect::procdir::{CName, list_fd_numbers, read_small};
use crate::collect::process::{ProcIo, ProcKey, parse_io, parse_stat};

/// Lists processes for the `progress` command without the full process
/// collector. Every pass reads each process's `/proc/<pid>/io` (to see who
/// did I/O); `/proc/<pid>/stat` (start time and comm) only for a pid not
/// seen before or whose counters changed — a reused pid has new counters
/// (they restart near zero), so the key stays right — and whenever `io` is
/// not readable (another user's process without root).
#[derive(Debug, Default)]
pub struct ProcLister {
    known: HashMap<i32, (ProcKey, String, ProcIo)>,
    buf: Vec<u8>,
    dents: Vec<u8>,
    pids: Vec<i32>,
}

impl ProcLister {
    /// The processes of this pass: all of them, or with a `watch` only the
    /// watched ones unless `all` is set.
    pub fn list(&mut self, r: &Reader, watch: &Watch, all: bool) -> io::Result<Vec<ScanProc<'_>>> {
        let proc_dir = r.open_dir("/proc")?;
        self.pids.clear();
        if watch.names.is_empty() && !watch.pids.is_empty() && !all {
            self.pids.extend_from_slice(&watch.pids);
        } else if r.is_live() {
            list_fd_numbers(&proc_dir, &mut self.dents, &mut self.pids)?;
        } else {
            self.pids = r.list_numbers("/proc")?;
        }
        self.pids.sort_unstable();
        let mut name = CName::default();
        let mut keep: HashMap<i32, (ProcKey, String, ProcIo)> = HashMap::with_capacity(self.pids.len());
        let mut order = Vec::with_capacity(self.pids.len());
        for &pid in &self.pids {
            let io = read_proc(r, &proc_dir, &mut name, pid, "/io", &mut self.buf)
                .ok()
                .and_then(parse_io);
            let cached = self.known.remove(&pid);
            let (key, comm) = match (cached, io) {
                (Some((k, c, old)), Some(cur)) if old == cur && cur != ProcIo::default() => (k, c),
                _ => {
                    let Some(stat) = read_proc(r, &proc_dir, &mut name, pid, "/stat", &mut self.buf)
                        .ok()
                        .and_then(parse_stat)
                    else {
                        continue;
                    };
                    let key = ProcKey {
                        pid,
                        start_time: stat.start_time,
                    };
                    (key, stat.comm)
                }
            };
            if all || watch.is_empty() || watch.matches(pid, &comm) {
                order.push((pid, io));
            }
            // Without counters the entry never matches next time: stat is re-read.
            keep.insert(pid, (key, comm, io.unwrap_or_default()));
        }
        self.known = keep;
        let known = &self.known;
        Ok(order
            .into_iter()
            .filter_map(|(pid, io)| {
                let (key, comm, _) = known.get(&pid)?;
                Some(ScanProc {
                    key: *key,
                    comm: Cow::Borrowed(comm.as_str()),
                    io,
                })
            })
            .collect())
    }
}

/// Read `/proc/<pid><file>` (`file` is "/io", "/stat"): relative to the open `/proc` on the live
/// system; under a captured tree through the reader's checked open (a
/// `<pid>` or file that is a symlink is not followed).
fn read_proc<'b>(
    r: &Reader,
    proc_dir: &OwnedFd,
    name: &mut CName,
    pid: i32,
    file: &str,
    buf: &'b mut Vec<u8>,
) -> io::Result<&'b [u8]> {
    if r.is_live() {
        return read_small(proc_dir, name.set3(b"", pid, file.as_bytes()), buf);
    }
    let fd = r.open(Path::new(&format!("/proc/{pid}{file}")))?;
    crate::collect::read_into(&mut std::fs::File::from(fd), buf)?;
    Ok(buf)
}
