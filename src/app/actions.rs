//! Actions on a process: send SIGTERM, set its I/O priority. Each checks
//! first that the PID still names the same process (same start time) and
//! says plainly why it was refused.

use std::io;

use rustix::process::{Pid, PidfdFlags, Signal, pidfd_open, pidfd_send_signal};

use crate::collect::Reader;
use crate::collect::process::{ProcKey, parse_stat};
use crate::sys::ioprio::{self, IoPrio};
use crate::ui::Sig;

/// What `i` sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoPrioChoice {
    Idle,
    /// Best-effort with level 0 (highest) .. 7 (lowest).
    BestEffort(u8),
}

impl IoPrioChoice {
    pub fn prio(self) -> IoPrio {
        match self {
            IoPrioChoice::Idle => IoPrio::IDLE,
            IoPrioChoice::BestEffort(l) => IoPrio::best_effort(l),
        }
    }

    /// The value ioprio_set(2) takes.
    pub fn raw(self) -> i32 {
        self.prio().raw()
    }

    pub fn label(self) -> String {
        match self {
            IoPrioChoice::Idle => "idle".into(),
            IoPrioChoice::BestEffort(l) => format!("best-effort {l}"),
        }
    }
}

/// Is `key` still the process we saw? `Err` says why not.
fn same_process(reader: &mut Reader, key: ProcKey) -> Result<(u32, String), String> {
    let gone = || format!("refused: PID {} is gone", key.pid);
    let stat = reader.read(format!("/proc/{}/stat", key.pid)).map_err(|_| gone())?;
    let st = parse_stat(stat).ok_or_else(gone)?;
    if st.start_time != key.start_time {
        return Err(format!("refused: PID {} is now another process", key.pid));
    }
    let uid = reader.stat(format!("/proc/{}", key.pid)).map_err(|_| gone())?.st_uid;
    Ok((uid, st.comm))
}

/// Refuse up front what the kernel would refuse: another user's process
/// without root.
fn check_owner(uid: u32, key: ProcKey) -> Result<(), String> {
    let me = crate::sys::euid();
    if me != 0 && me != uid {
        return Err(format!(
            "refused: PID {} belongs to uid {uid}; only root may change other users' processes",
            key.pid
        ));
    }
    Ok(())
}

fn errno_text(what: &str, key: ProcKey, e: io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ESRCH) => format!("refused: PID {} is gone", key.pid),
        Some(libc::EPERM) | Some(libc::EACCES) => {
            format!("refused: {what} PID {} not permitted ({e}); run as root", key.pid)
        }
        _ => format!("{what} PID {} failed: {e}", key.pid),
    }
}

/// Send SIGTERM through a pidfd, so that a PID reused between the check and
/// the signal cannot be hit.
pub fn terminate(reader: &mut Reader, key: ProcKey) -> Result<String, String> {
    signal(reader, key, Sig::Term)
}

/// Send `sig` through a pidfd (see [`terminate`]).
pub fn signal(reader: &mut Reader, key: ProcKey, sig: Sig) -> Result<String, String> {
    let pidfd = Pid::from_raw(key.pid)
        .ok_or_else(|| format!("refused: PID {} is not a process id", key.pid))
        .and_then(|pid| pidfd_open(pid, PidfdFlags::empty()).map_err(|e| errno_text("signal", key, e.into())))?;
    let (uid, comm) = same_process(reader, key)?;
    check_owner(uid, key)?;
    let s = match sig {
        Sig::Term => Signal::TERM,
        Sig::Kill => Signal::KILL,
        Sig::Stop => Signal::STOP,
        Sig::Cont => Signal::CONT,
    };
    pidfd_send_signal(&pidfd, s).map_err(|e| errno_text("signal", key, e.into()))?;
    Ok(format!("sent {} to PID {} ({comm})", sig.name(), key.pid))
}

impl super::App {
    /// Read what the process detail shows besides the process row: its
    /// cwd, cgroup and open files (the run loop calls this; it reads /proc,
    /// never a file's own filesystem).
    pub fn read_proc_info(&mut self, reader: &mut Reader, key: ProcKey) {
        let (comm, io) = self
            .model
            .procs
            .iter()
            .find(|p| p.raw.key == key)
            .map(|p| (p.raw.comm.clone(), p.raw.io.as_ref().ok().copied()))
            .unwrap_or_default();
        self.view.proc_info = Some(crate::collect::procinfo::read(reader, key, &comm, io));
    }
}

/// ioprio_set(IOPRIO_WHO_PROCESS, tid, prio) on every thread of the
/// process: the I/O priority belongs to each thread (ioprio_set(2)), so a
/// multithreaded compressor or backup tool is only made gentler when all
/// its threads are.
pub fn set_ioprio(reader: &mut Reader, key: ProcKey, prio: IoPrioChoice) -> Result<String, String> {
    let (uid, comm) = same_process(reader, key)?;
    check_owner(uid, key)?;
    let mut tids = reader
        .list_numbers(format!("/proc/{}/task", key.pid))
        .unwrap_or_default();
    if tids.is_empty() {
        tids.push(key.pid);
    }
    let (mut done, mut last_err) = (0usize, None);
    for &tid in &tids {
        match ioprio::set(tid, prio.prio()) {
            Ok(()) => done += 1,
            Err(e) => last_err = Some(e),
        }
    }
    match (done, last_err) {
        (0, Some(e)) => Err(errno_text("ionice", key, e)),
        (1, None) => Ok(format!(
            "I/O priority of PID {} ({comm}) set to {}",
            key.pid,
            prio.label()
        )),
        (n, None) => Ok(format!(
            "I/O priority of PID {} ({comm}) set to {} on all {n} threads",
            key.pid,
            prio.label()
        )),
        (n, Some(e)) => Ok(format!(
            "I/O priority of PID {} ({comm}) set to {} on {n} of {} threads (others: {e})",
            key.pid,
            prio.label(),
            tids.len()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::process::{IoClass, ioprio_get};
    use std::process::{Command, Stdio};

    fn key_of(reader: &mut Reader, pid: i32) -> ProcKey {
        let st = parse_stat(reader.read(format!("/proc/{pid}/stat")).unwrap()).unwrap();
        ProcKey {
            pid,
            start_time: st.start_time,
        }
    }

    #[test]
    fn raw_values() {
        assert_eq!(IoPrioChoice::Idle.raw(), 3 << 13);
        assert_eq!(IoPrioChoice::BestEffort(7).raw(), (2 << 13) | 7);
        assert_eq!(IoPrioChoice::BestEffort(9).raw(), (2 << 13) | 7);
    }

    #[test]
    fn ionice_and_terminate_a_real_child() {
        let mut child = Command::new("sleep").arg("30").stdout(Stdio::null()).spawn().unwrap();
        let pid = child.id() as i32;
        let mut r = Reader::new("/");
        let key = key_of(&mut r, pid);
        let msg = set_ioprio(&mut r, key, IoPrioChoice::Idle).unwrap();
        assert!(msg.contains("set to idle"), "{msg}");
        assert_eq!(ioprio_get(pid).unwrap().class, IoClass::Idle);
        set_ioprio(&mut r, key, IoPrioChoice::BestEffort(6)).unwrap();
        let p = ioprio_get(pid).unwrap();
        assert_eq!((p.class, p.level), (IoClass::BestEffort, 6));
        // A wrong start time is another process: refused.
        let other = ProcKey {
            pid,
            start_time: key.start_time + 1,
        };
        let e = terminate(&mut r, other).unwrap_err();
        assert!(e.contains("another process"), "{e}");
        // STOP and CONT: the kernel's state of the process follows.
        let state = || {
            let st = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
            st.rsplit(')')
                .next()
                .unwrap()
                .split_whitespace()
                .next()
                .unwrap()
                .to_string()
        };
        assert!(signal(&mut r, key, Sig::Stop).unwrap().contains("sent SIGSTOP"));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while state() != "T" && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(state(), "T");
        assert!(signal(&mut r, key, Sig::Cont).unwrap().contains("sent SIGCONT"));
        while state() == "T" && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_ne!(state(), "T");
        let msg = terminate(&mut r, key).unwrap();
        assert!(msg.contains("sent SIGTERM"), "{msg}");
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGTERM));
        // Now it is gone.
        let e = set_ioprio(&mut r, key, IoPrioChoice::Idle).unwrap_err();
        assert!(e.contains("gone"), "{e}");
        let e = terminate(&mut r, key).unwrap_err();
        assert!(e.contains("gone"), "{e}");
    }

    #[test]
    fn ionice_reaches_every_thread() {
        let script = "import threading,time\n\
                      for _ in range(3): threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n\
                      time.sleep(30)\n";
        let Ok(mut child) = Command::new("python3")
            .args(["-c", script])
            .stdout(Stdio::null())
            .spawn()
        else {
            eprintln!("skipped: python3 not available");
            return;
        };
        let pid = child.id() as i32;
        let tids = || -> Vec<i32> {
            std::fs::read_dir(format!("/proc/{pid}/task"))
                .map(|it| it.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect())
                .unwrap_or_default()
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while tids().len() < 4 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert_eq!(tids().len(), 4, "python did not start its threads");
        let mut r = Reader::new("/");
        let key = key_of(&mut r, pid);
        let msg = set_ioprio(&mut r, key, IoPrioChoice::Idle).unwrap();
        assert!(msg.contains("on all 4 threads"), "{msg}");
        for tid in tids() {
            assert_eq!(ioprio_get(tid).unwrap().class, IoClass::Idle, "thread {tid}");
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    #[test]
    fn other_users_processes_are_refused_without_root() {
        let me = crate::sys::euid();
        let k = ProcKey { pid: 1, start_time: 0 };
        if me == 0 {
            assert!(check_owner(12345, k).is_ok());
        } else {
            let e = check_owner(me + 1, k).unwrap_err();
            assert!(e.contains("only root"), "{e}");
        }
        assert!(check_owner(me, k).is_ok());
    }
}
