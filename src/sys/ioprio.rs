//! I/O priorities (ioprio_get(2), ioprio_set(2)): the one type and the one
//! encoding. rustix has no wrapper for these two calls, so they are raw
//! syscalls here; neither passes memory to the kernel.

use std::io;

use serde::{Deserialize, Serialize};

/// `which` argument: a single thread (tid) or, with 0, the calling thread.
const IOPRIO_WHO_PROCESS: libc::c_long = 1;
/// The class sits in the bits above this shift, the level in the low 3 bits
/// (`IOPRIO_PRIO_VALUE` in include/uapi/linux/ioprio.h).
const IOPRIO_CLASS_SHIFT: u32 = 13;

/// I/O scheduling class (see ioprio_set(2)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IoClass {
    /// No class set: best-effort with a level derived from nice.
    None,
    RealTime,
    BestEffort,
    Idle,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IoPrio {
    pub class: IoClass,
    pub level: u8,
}

impl IoPrio {
    pub const IOPRIO_CLASS_SHIFT: u32 = IOPRIO_CLASS_SHIFT;

    /// The idle class (gets disk time only when no one else wants it).
    pub const IDLE: IoPrio = IoPrio {
        class: IoClass::Idle,
        level: 0,
    };

    /// Best-effort with level 0 (highest) .. 7 (lowest; larger is clamped).
    pub fn best_effort(level: u8) -> Self {
        IoPrio {
            class: IoClass::BestEffort,
            level: level.min(7),
        }
    }

    /// Decode the value returned by ioprio_get(2).
    pub fn from_raw(v: i32) -> Self {
        let class = match (v >> IOPRIO_CLASS_SHIFT) & 0x7 {
            1 => IoClass::RealTime,
            2 => IoClass::BestEffort,
            3 => IoClass::Idle,
            _ => IoClass::None,
        };
        IoPrio {
            class,
            level: (v & 0x7) as u8,
        }
    }

    /// Encode for ioprio_set(2).
    pub fn raw(self) -> i32 {
        let class = match self.class {
            IoClass::None => 0,
            IoClass::RealTime => 1,
            IoClass::BestEffort => 2,
            IoClass::Idle => 3,
        };
        (class << IOPRIO_CLASS_SHIFT) | i32::from(self.level.min(7))
    }

    /// As iotop shows it: "rt/0", "be/4", "idle"; an unset class is shown as
    /// the best-effort level the kernel derives from nice.
    pub fn label(&self, nice: i32) -> String {
        match self.class {
            IoClass::RealTime => format!("rt/{}", self.level),
            IoClass::BestEffort => format!("be/{}", self.level),
            IoClass::Idle => "idle".to_string(),
            IoClass::None => format!("be/{}", ((nice.clamp(-20, 19) + 20) / 5)),
        }
    }
}

/// The I/O priority of thread `tid` (0: the calling thread); `None` when it
/// cannot be read (gone, not permitted).
pub fn get(tid: i32) -> Option<IoPrio> {
    get_raw(tid).ok().map(IoPrio::from_raw)
}

fn get_raw(tid: i32) -> io::Result<i32> {
    // SAFETY: ioprio_get takes two integers and returns an integer; no memory
    // is passed.
    let v = unsafe { libc::syscall(libc::SYS_ioprio_get, IOPRIO_WHO_PROCESS, libc::c_long::from(tid)) };
    if v < 0 {
        Err(io::Error::last_os_error())
    } else {
        i32::try_from(v).map_err(|_| io::Error::other(format!("ioprio_get returned {v}")))
    }
}

fn set_raw(tid: i32, raw: i32) -> io::Result<()> {
    // SAFETY: ioprio_set takes three integers; no memory is passed.
    let r = unsafe {
        libc::syscall(
            libc::SYS_ioprio_set,
            IOPRIO_WHO_PROCESS,
            libc::c_long::from(tid),
            libc::c_long::from(raw),
        )
    };
    if r < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// Set the I/O priority of thread `tid` (0: the calling thread).
pub fn set(tid: i32, prio: IoPrio) -> io::Result<()> {
    set_raw(tid, prio.raw())
}

/// Puts the calling thread in the idle I/O class and restores its previous
/// priority on drop, so a reused thread (a `spawn_blocking` pool thread) does
/// not stay idle after the work.
pub struct IdleGuard {
    previous: i32,
}

impl IdleGuard {
    pub fn enter() -> io::Result<Self> {
        let previous = get_raw(0)?;
        set(0, IoPrio::IDLE)?;
        Ok(IdleGuard { previous })
    }
}

impl Drop for IdleGuard {
    fn drop(&mut self) {
        // Restores exactly what ioprio_get returned (an unset class included).
        let _ = set_raw(0, self.previous);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_round_trips() {
        assert_eq!(IoPrio::IDLE.raw(), 3 << 13);
        assert_eq!(IoPrio::best_effort(7).raw(), (2 << 13) | 7);
        assert_eq!(IoPrio::best_effort(9).raw(), (2 << 13) | 7);
        for raw in [0, (1 << 13) | 2, (2 << 13) | 4, 3 << 13] {
            assert_eq!(IoPrio::from_raw(raw).raw(), raw);
        }
        assert_eq!(IoPrio::from_raw((2 << 13) | 4).label(0), "be/4");
        assert_eq!(IoPrio::from_raw(0).label(19), "be/7");
    }

    #[test]
    fn idle_guard_restores_the_thread() {
        // A fresh thread, so the test runner's threads are not touched.
        std::thread::spawn(|| {
            let before = get(0).expect("ioprio_get of the calling thread");
            {
                let _g = IdleGuard::enter().expect("ioprio_set idle on the calling thread");
                assert_eq!(get(0).unwrap().class, IoClass::Idle);
            }
            assert_eq!(get(0).unwrap(), before);
        })
        .join()
        .unwrap();
    }
}
