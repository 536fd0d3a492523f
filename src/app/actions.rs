//! Actions on a process: send SIGTERM, set its I/O priority. Each checks
//! first that the PID still names the same process (same start time) and
//! says plainly why it was refused.

use std::io;

use crate::collect::Reader;
use crate::collect::process::{ProcKey, parse_stat};

/// What `i` sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoPrioChoice {
    Idle,
    /// Best-effort with level 0 (highest) .. 7 (lowest).
    BestEffort(u8),
}

impl IoPrioChoice {
    /// The value ioprio_set(2) takes.
    pub fn raw(self) -> i32 {
        const SHIFT: i32 = 13;
        match self {
            IoPrioChoice::Idle => 3 << SHIFT,
            IoPrioChoice::BestEffort(l) => (2 << SHIFT) | i32::from(l.min(7)),
        }
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
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata(reader.path(format!("/proc/{}", key.pid)))
        .map_err(|_| gone())?
        .uid();
    Ok((uid, crate::format::escape(&st.comm)))
}

/// Refuse up front what the kernel would refuse: another user's process
/// without root.
fn check_owner(uid: u32, key: ProcKey) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
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
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, key.pid, 0) };
    if fd < 0 {
        return Err(errno_text("signal", key, io::Error::last_os_error()));
    }
    let fd = fd as libc::c_int;
    let result = (|| {
        let (uid, comm) = same_process(reader, key)?;
        check_owner(uid, key)?;
        // SAFETY: fd is the pidfd opened above; a null siginfo is allowed.
        let r = unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                fd,
                libc::SIGTERM,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        };
        if r < 0 {
            return Err(errno_text("signal", key, io::Error::last_os_error()));
        }
        Ok(format!("sent SIGTERM to PID {} ({comm})", key.pid))
    })();
    // SAFETY: closing the fd we own, once.
    unsafe { libc::close(fd) };
    result
}

/// ioprio_set(IOPRIO_WHO_PROCESS, pid, prio).
pub fn set_ioprio(reader: &mut Reader, key: ProcKey, prio: IoPrioChoice) -> Result<String, String> {
    let (uid, comm) = same_process(reader, key)?;
    check_owner(uid, key)?;
    const IOPRIO_WHO_PROCESS: libc::c_long = 1;
    // SAFETY: ioprio_set takes three integers; no memory is passed.
    let r = unsafe {
        libc::syscall(
            libc::SYS_ioprio_set,
            IOPRIO_WHO_PROCESS,
            key.pid as libc::c_long,
            prio.raw() as libc::c_long,
        )
    };
    if r < 0 {
        return Err(errno_text("ionice", key, io::Error::last_os_error()));
    }
    Ok(format!(
        "I/O priority of PID {} ({comm}) set to {}",
        key.pid,
        prio.label()
    ))
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
    fn other_users_processes_are_refused_without_root() {
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
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
