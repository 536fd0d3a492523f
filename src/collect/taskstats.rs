//! Exit records from the taskstats netlink family (root only).
//!
//! When a thread exits the kernel sends every listener registered for the
//! CPU it ran on one message: an `AGGR_PID` nest holding the thread id and
//! its `struct taskstats` (with the thread's own I/O counters), plus, when a
//! multi-threaded group dies, an `AGGR_TGID` nest that carries only delays.
//! So each thread's I/O is summed per process by the model.
//!
//! Checked on the development VM (6.18, struct version 16, 560 bytes): the
//! offsets below, that `read_bytes`/`write_bytes`/`cancelled_write_bytes`
//! and `read_char`/`write_char` are rounded down to KiB by the kernel and
//! `read_syscalls`/`write_syscalls` to multiples of 1024 (`KB_MASK` in
//! `kernel/tsacct.c`), and that `ac_btime` is whole seconds of wall clock:
//! the start time is taken from `ac_etime` (µs since the thread started)
//! against CLOCK_BOOTTIME at reception instead.
//!
//! The socket and the family lookup use `netlink-sys` and
//! `netlink-packet-generic`; the taskstats payload is decoded here.

use std::collections::{HashMap, HashSet, VecDeque};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use netlink_packet_core::{
    DecodeError, Emitable, NLM_F_ACK, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage, NetlinkPayload, NlasIterator,
    ParseableParametrized,
};
use netlink_packet_generic::ctrl::nlas::GenlCtrlAttrs;
use netlink_packet_generic::ctrl::{GenlCtrl, GenlCtrlCmd};
use netlink_packet_generic::{GenlFamily, GenlHeader, GenlMessage};
use netlink_sys::{Socket, protocols::NETLINK_GENERIC};
use serde::{Deserialize, Serialize};

use super::process::ProcIo;
pub use comms::Comms;

mod comms;
use crate::sys::wake::Waker;

const TASKSTATS_CMD_GET: u8 = 1;
const TASKSTATS_CMD_NEW: u8 = 2;
const TASKSTATS_CMD_ATTR_REGISTER_CPUMASK: u16 = 3;
const TASKSTATS_TYPE_PID: u16 = 1;
const TASKSTATS_TYPE_STATS: u16 = 3;
const TASKSTATS_TYPE_AGGR_PID: u16 = 4;

/// Offsets in `struct taskstats` (include/uapi/linux/taskstats.h).
mod off {
    pub const VERSION: usize = 0;
    pub const COMM: usize = 80;
    pub const COMM_LEN: usize = 32;
    /// `ac_exitcode`, after `version` and its padding.
    pub const EXITCODE: usize = 4;
    pub const UID: usize = 120;
    pub const PID: usize = 128;
    pub const PPID: usize = 132;
    pub const ETIME: usize = 144;
    pub const READ_CHAR: usize = 216;
    pub const TGID: usize = 368;
    /// The struct must reach past `ac_tgid` (added in version 12).
    pub const MIN_LEN: usize = TGID + 4;
}

/// One exited thread, as the kernel reported it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitRecord {
    /// Thread id.
    pub pid: i32,
    /// Process (thread group) id.
    pub tgid: i32,
    /// Parent process at exit.
    pub ppid: i32,
    pub uid: u32,
    /// Shared between the records of one comm (see [`Comms`]).
    pub comm: Arc<str>,
    /// Microseconds from the thread's start to its exit.
    pub etime_us: u64,
    /// `ac_exitcode`: the thread's wait status (exit code << 8, or the
    /// signal that killed it); `None` in recordings made before it was read.
    #[serde(default)]
    pub exit_status: Option<u32>,
    /// CLOCK_BOOTTIME when iolens received the record, ns.
    pub recv_boot_ns: u64,
    /// The thread's own counters. rchar/wchar and the byte counts are
    /// rounded down to KiB, the syscall counts to multiples of 1024.
    pub io: ProcIo,
}

impl ExitRecord {
    /// The thread's start on CLOCK_BOOTTIME, ns: late by the delay between
    /// the exit and its reception (normally well under a clock tick).
    pub fn start_boot_ns(&self) -> u64 {
        self.recv_boot_ns.saturating_sub(self.etime_us.saturating_mul(1000))
    }
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Decode one `struct taskstats`. `None` when it is too short to hold the
/// fields used (a kernel older than version 12 has no `ac_tgid`).
pub fn parse_stats(b: &[u8], recv_boot_ns: u64) -> Option<ExitRecord> {
    parse_stats_with(b, recv_boot_ns, &mut Comms::default())
}

/// [`parse_stats`], the comm from `comms`.
fn parse_stats_with(b: &[u8], recv_boot_ns: u64, comms: &mut Comms) -> Option<ExitRecord> {
    if b.len() < off::MIN_LEN || u16::from_ne_bytes(b.get(off::VERSION..2)?.try_into().ok()?) < 12 {
        return None;
    }
    let comm = &b[off::COMM..off::COMM + off::COMM_LEN];
    let comm = &comm[..comm.iter().position(|&c| c == 0).unwrap_or(comm.len())];
    let q = |i: usize| u64_at(b, off::READ_CHAR + 8 * i);
    let i32_at = |at| u32_at(b, at).and_then(|v| i32::try_from(v).ok());
    Some(ExitRecord {
        pid: i32_at(off::PID)?,
        tgid: i32_at(off::TGID)?,
        ppid: i32_at(off::PPID)?,
        uid: u32_at(b, off::UID)?,
        comm: comms.get(comm),
        etime_us: u64_at(b, off::ETIME)?,
        exit_status: u32_at(b, off::EXITCODE),
        recv_boot_ns,
        io: ProcIo {
            rchar: q(0)?,
            wchar: q(1)?,
            syscr: q(2)?,
            syscw: q(3)?,
            read_bytes: q(4)?,
            write_bytes: q(5)?,
            cancelled_write_bytes: q(6)?,
        },
    })
}

/// The thread records of one `TASKSTATS_CMD_NEW` message (its attributes,
/// after the generic netlink header). The per-tgid nest is skipped: it
/// carries delays only.
pub fn parse_attrs(b: &[u8], recv_boot_ns: u64) -> Vec<ExitRecord> {
    let mut out = Vec::new();
    parse_attrs_into(b, recv_boot_ns, &mut out, &mut Comms::default());
    out
}

/// [`parse_attrs`], appending to `out`.
pub fn parse_attrs_into(b: &[u8], recv_boot_ns: u64, out: &mut Vec<ExitRecord>, comms: &mut Comms) {
    for nest in NlasIterator::new(b).flatten() {
        if nest.kind() & 0x3fff != TASKSTATS_TYPE_AGGR_PID {
            continue;
        }
        let mut tid = None;
        let mut rec = None;
        for a in NlasIterator::new(nest.value()).flatten() {
            match a.kind() & 0x3fff {
                TASKSTATS_TYPE_PID => tid = u32_at(a.value(), 0),
                TASKSTATS_TYPE_STATS => rec = parse_stats_with(a.value(), recv_boot_ns, comms),
                _ => {}
            }
        }
        // The nest's own id wins over the struct's (same value, but the
        // attribute is what the kernel documents).
        if let Some(mut r) = rec {
            if let Some(t) = tid.and_then(|t| i32::try_from(t).ok()) {
                r.pid = t;
            }
            out.push(r);
        }
    }
}

/// The exit records of the netlink messages of one datagram, appended to
/// `out`: each message of the taskstats family (`family`) with command
/// `TASKSTATS_CMD_NEW`, its attributes after the netlink (16) and generic
/// netlink (4) headers. Read in place: a fork storm brings thousands a
/// second, and the generic decoder allocated for each.
pub fn parse_datagram(mut rest: &[u8], family: u16, recv_boot_ns: u64, out: &mut Vec<ExitRecord>, comms: &mut Comms) {
    while rest.len() >= 16 {
        let len = u32_at(rest, 0).map_or(0, |l| l as usize);
        if len < 16 || len > rest.len() {
            break;
        }
        let kind = rest.get(4..6).map(|t| u16::from_ne_bytes([t[0], t[1]]));
        if kind == Some(family) && len >= 20 && rest[16] == TASKSTATS_CMD_NEW {
            parse_attrs_into(&rest[20..len], recv_boot_ns, out, comms);
        }
        rest = &rest[len.next_multiple_of(4).min(rest.len())..];
    }
}

/// A taskstats message: what is sent (the CPU-mask registration) and what
/// is received (exit records, decoded on parsing).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Taskstats {
    Register(String),
    Exits(Vec<ExitRecord>),
}

impl GenlFamily for Taskstats {
    fn family_name() -> &'static str {
        "TASKSTATS"
    }
    fn command(&self) -> u8 {
        match self {
            Taskstats::Register(_) => TASKSTATS_CMD_GET,
            Taskstats::Exits(_) => TASKSTATS_CMD_NEW,
        }
    }
    fn version(&self) -> u8 {
        1
    }
}

impl Emitable for Taskstats {
    fn buffer_len(&self) -> usize {
        match self {
            // One attribute: header, the mask and its NUL, padded to 4.
            Taskstats::Register(mask) => (4 + mask.len() + 1).next_multiple_of(4),
            Taskstats::Exits(_) => 0,
        }
    }
    fn emit(&self, buffer: &mut [u8]) {
        if let Taskstats::Register(mask) = self {
            let len = 4 + mask.len() + 1;
            buffer[..self.buffer_len()].fill(0);
            buffer[0..2].copy_from_slice(&(len as u16).to_ne_bytes());
            buffer[2..4].copy_from_slice(&TASKSTATS_CMD_ATTR_REGISTER_CPUMASK.to_ne_bytes());
            buffer[4..4 + mask.len()].copy_from_slice(mask.as_bytes());
        }
    }
}

impl ParseableParametrized<[u8], GenlHeader> for Taskstats {
    fn parse_with_param(buf: &[u8], header: GenlHeader) -> Result<Self, DecodeError> {
        if header.cmd != TASKSTATS_CMD_NEW {
            return Err(DecodeError::from(format!("taskstats command {}", header.cmd)));
        }
        Ok(Taskstats::Exits(parse_attrs(buf, boot_ns())))
    }
}

/// CLOCK_BOOTTIME in ns: the clock of `/proc/<pid>/stat` start times.
pub fn boot_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Boottime);
    u64::try_from(t.tv_sec)
        .unwrap_or(0)
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::try_from(t.tv_nsec).unwrap_or(0))
}

/// What the listener delivers at a sample.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ExitBatch {
    /// True while exit records are being received.
    pub active: bool,
    /// Why there are no exit records (not root, replayed tree, an error).
    pub why_not: Option<String>,
    /// Records received since the previous sample.
    pub records: Vec<ExitRecord>,
    /// Times since the listener started that the kernel dropped records
    /// because the socket buffer was full (ENOBUFS); each time at least one.
    pub overflows: u64,
}

#[derive(Debug)]
struct Shared {
    sock: Socket,
    /// The taskstats family id (the type of its messages).
    family: u16,
    /// The receive buffer and the comms of the last records; held while
    /// receiving, so that the thread and a sample's drain take the
    /// socket's records in turn.
    rx: Mutex<(Vec<u8>, Comms)>,
    queue: Mutex<Vec<ExitRecord>>,
    /// (thread id, tgid) of the last [`RECENT_MAX`] exits, newest last,
    /// for [`ExitTgids`].
    recent: Mutex<VecDeque<(i32, i32)>>,
    overflows: AtomicU64,
    /// Records received so far (by the thread and by samples' drains).
    received: AtomicU64,
    /// How many records the socket buffer holds (see [`RECORD_TRUESIZE`]).
    room: usize,
    stop: AtomicBool,
    /// Ends the thread's wait for records when it is to stop.
    waker: Waker,
    error: Mutex<Option<String>>,
}

/// At most this many records wait for the next sample; beyond, records are
/// counted as an overflow (a stalled sampler cannot eat the memory).
const QUEUE_MAX: usize = 1 << 20;
/// Socket receive buffer (set with SO_RCVBUFFORCE as root).
const RCVBUF: usize = 16 << 20;

/// A thread receiving exit records into a queue that each sample drains.
#[derive(Debug)]
pub struct ExitListener {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

fn cpumask() -> String {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    // Every possible CPU, not only the online ones: a CPU brought online
    // later is covered too (the kernel refuses CPUs it cannot have).
    let possible = std::fs::read_to_string("/sys/devices/system/cpu/possible").ok();
    possible
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty() && s.len() < 256)
        .unwrap_or_else(|| format!("0-{}", n.saturating_sub(1)))
}

fn send<M>(sock: &Socket, msg: M, family: u16) -> Result<(), String>
where
    M: GenlFamily + Emitable + std::fmt::Debug,
{
    let mut genl = GenlMessage::from_payload(msg);
    genl.set_resolved_family_id(family);
    let mut nl = NetlinkMessage::new(NetlinkHeader::default(), NetlinkPayload::InnerMessage(genl));
    nl.header.flags = NLM_F_REQUEST | NLM_F_ACK;
    nl.finalize();
    let mut buf = vec![0u8; nl.buffer_len()];
    nl.serialize(&mut buf);
    sock.send(&buf, 0)
        .map(drop)
        .map_err(|e| format!("sending to taskstats: {e}"))
}

/// Receive one reply of type `F`; kernel errors (`NLMSG_ERROR` with a
/// non-zero code) are returned as such, an ack as `Ok(None)`.
fn reply<F>(sock: &Socket) -> Result<Option<F>, String>
where
    F: ParseableParametrized<[u8], GenlHeader> + std::fmt::Debug,
{
    let mut buf = Vec::with_capacity(16 * 1024);
    sock.recv(&mut buf, 0).map_err(|e| format!("taskstats reply: {e}"))?;
    let msg = NetlinkMessage::<GenlMessage<F>>::deserialize(&buf).map_err(|e| format!("taskstats reply: {e}"))?;
    match msg.payload {
        NetlinkPayload::InnerMessage(m) => Ok(Some(m.payload)),
        NetlinkPayload::Error(e) => match e.code {
            Some(c) => Err(format!("taskstats: {}", std::io::Error::from_raw_os_error(-c.get()))),
            None => Ok(None),
        },
        _ => Ok(None),
    }
}

impl ExitListener {
    /// Open the socket, find the family, register for every CPU and start
    /// receiving. Needs CAP_NET_ADMIN (root).
    pub fn start() -> Result<Self, String> {
        let mut sock = Socket::new(NETLINK_GENERIC).map_err(|e| format!("netlink socket: {e}"))?;
        sock.bind_auto().map_err(|e| format!("netlink bind: {e}"))?;
        // The default buffer (~200 KiB) holds a few hundred records.
        if rustix::net::sockopt::set_socket_recv_buffer_size_force(&sock, RCVBUF).is_err() {
            let _ = sock.set_rx_buf_sz(RCVBUF);
        }
        let ctrl = GenlCtrl {
            cmd: GenlCtrlCmd::GetFamily,
            nlas: vec![GenlCtrlAttrs::FamilyName(Taskstats::family_name().to_string())],
        };
        send(&sock, ctrl, netlink_packet_generic::constants::GENL_ID_CTRL)?;
        let family = reply::<GenlCtrl>(&sock)?
            .and_then(|c| {
                c.nlas.iter().find_map(|a| match a {
                    GenlCtrlAttrs::FamilyId(id) => Some(*id),
                    _ => None,
                })
            })
            .ok_or("taskstats family not found (kernel without CONFIG_TASKSTATS)")?;
        // The family lookup may be followed by its ack.
        send(&sock, Taskstats::Register(cpumask()), family)?;
        loop {
            match reply::<Taskstats>(&sock) {
                Ok(None) => break,
                Ok(Some(_)) => continue,
                Err(e) => return Err(format!("registering for exit records: {e}")),
            }
        }
        let room = rustix::net::sockopt::socket_recv_buffer_size(&sock).unwrap_or(0) / RECORD_TRUESIZE;
        let shared = Arc::new(Shared {
            sock,
            family,
            received: AtomicU64::default(),
            room,
            rx: Mutex::new((Vec::with_capacity(RX_BUF), Comms::default())),
            queue: Mutex::default(),
            recent: Mutex::default(),
            overflows: AtomicU64::default(),
            stop: AtomicBool::default(),
            waker: Waker::new().map_err(|e| format!("taskstats thread wake-up (eventfd): {e}"))?,
            error: Mutex::default(),
        });
        let s = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("iolens-taskstats".into())
            .spawn(move || receive(&s))
            .map_err(|e| format!("taskstats thread: {e}"))?;
        Ok(ExitListener {
            shared,
            thread: Some(thread),
        })
    }

    /// A handle that finds the tgid of recently exited threads.
    pub fn tgids(&self) -> ExitTgids {
        ExitTgids(Arc::clone(&self.shared))
    }

    /// The records received since the last call: those still in the
    /// socket are received first, so that every exit before the call is
    /// in (the thread wakes only every [`WAKE_GAP`] to [`WAKE_GAP_MAX`]).
    pub fn drain(&self) -> ExitBatch {
        if let Err(e) = pump(&self.shared)
            && let Ok(mut err) = self.shared.error.lock()
        {
            *err = Some(e);
        }
        let records = match self.shared.queue.lock() {
            Ok(mut q) => std::mem::take(&mut *q),
            Err(_) => Vec::new(),
        };
        let error = self.shared.error.lock().ok().and_then(|e| e.clone());
        ExitBatch {
            active: error.is_none(),
            why_not: error,
            records,
            overflows: self.shared.overflows.load(Ordering::Relaxed),
        }
    }
}

impl Drop for ExitListener {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.shared.waker.wake();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The listener thread wakes at most this often: records that come
/// faster wait in the socket buffer ([`RCVBUF`], tens of thousands of
/// records) and are read together; a sample receives what is there before
/// it drains the queue, so no record is late for it. A wake-up per exiting
/// process was half of iolens's CPU under fork churn (~3,400 exits a
/// second), and one per 10 ms still a third of it at 2,000 (the context
/// switches of the sleep and the wait).
const WAKE_GAP: Duration = Duration::from_millis(100);

/// The longest gap (see [`next_gap`]): wake-ups every 100 ms, two polls
/// and two context switches each, were ~6% of iolens's CPU in the active
/// scenario of benches/overhead.sh (~500 exits a second).
const WAKE_GAP_MAX: Duration = Duration::from_secs(1);

/// Bytes of socket buffer a record is charged, rounded up (its skb's
/// truesize: a ~600-byte message in a 1 KiB allocation, plus the skb).
const RECORD_TRUESIZE: usize = 2048;

/// The gap before the next wake-up: a quarter of the time the socket
/// buffer (`room` records) takes to fill at the rate of the last wake-up
/// (`got` records in `since`), within [`WAKE_GAP`]..=[`WAKE_GAP_MAX`].
/// After an idle wait the rate is not known: the shortest gap.
fn next_gap(room: usize, got: u64, since: Duration, idle: bool) -> Duration {
    if idle || got == 0 {
        return WAKE_GAP;
    }
    let fill = since.as_secs_f64() * room as f64 / got as f64;
    Duration::from_secs_f64((fill / 4.0).clamp(WAKE_GAP.as_secs_f64(), WAKE_GAP_MAX.as_secs_f64()))
}

/// Size of the receive buffer: a datagram holds one message (about 600
/// bytes) for each exit.
const RX_BUF: usize = 64 * 1024;

/// How many exits [`ExitTgids`] remembers: more than a second of a fork
/// storm (2,000-3,400 exits a second here), 128 KiB.
const RECENT_MAX: usize = 16 * 1024;

/// The thread-group ids of threads that exited lately, from their exit
/// records: the tracer names the process of an event whose thread is
/// already gone from them instead of from tracefs's `saved_tgids`. That
/// file has a line for every pid that ran since tracing began, printed
/// in pid order up to the one wanted (12 ms of CPU for 32,000 pids here,
/// and up to `pid_max`, 4,194,304 on many systems), and a build's or a
/// fork storm's short-lived writers sent the tracer there about once a
/// second.
#[derive(Debug, Clone)]
pub struct ExitTgids(Arc<Shared>);

impl ExitTgids {
    /// The tgids of those `wanted` thread ids found among the last
    /// [`RECENT_MAX`] exits (the newest exit of a reused id wins); the
    /// records still in the socket are received first.
    pub fn find(&self, wanted: &HashSet<i32>) -> HashMap<i32, i32> {
        // A receive error ends the listener; the next sample's drain
        // reports it.
        let _ = pump(&self.0);
        let mut out = HashMap::new();
        if let Ok(recent) = self.0.recent.lock() {
            for &(pid, tgid) in recent.iter().rev() {
                if wanted.contains(&pid) {
                    out.entry(pid).or_insert(tgid);
                    if out.len() == wanted.len() {
                        break;
                    }
                }
            }
        }
        out
    }
}

/// Receive every record waiting in the socket into the queue; counts the
/// kernel's drops. `Err` on an error that ends the listener.
fn pump(shared: &Shared) -> Result<(), String> {
    let Ok(mut rx) = shared.rx.lock() else {
        return Err("exit records: receiver poisoned".to_string());
    };
    let (buf, comms) = &mut *rx;
    let mut got = Vec::new();
    let result = loop {
        buf.clear();
        match shared.sock.recv(buf, libc::MSG_DONTWAIT) {
            Ok(_) => parse_datagram(buf, shared.family, boot_ns(), &mut got, comms),
            Err(e) => match e.raw_os_error() {
                Some(libc::ENOBUFS) => {
                    shared.overflows.fetch_add(1, Ordering::Relaxed);
                }
                Some(libc::EAGAIN) => break Ok(()),
                Some(libc::EINTR) => {}
                _ => break Err(format!("receiving exit records: {e}")),
            },
        }
    };
    shared.received.fetch_add(got.len() as u64, Ordering::Relaxed);
    if !got.is_empty()
        && let Ok(mut recent) = shared.recent.lock()
    {
        recent.extend(got.iter().filter(|r| r.tgid > 0).map(|r| (r.pid, r.tgid)));
        let over = recent.len().saturating_sub(RECENT_MAX);
        recent.drain(..over);
    }
    if !got.is_empty()
        && let Ok(mut q) = shared.queue.lock()
    {
        if q.len() + got.len() > QUEUE_MAX {
            shared.overflows.fetch_add(1, Ordering::Relaxed);
        } else if q.is_empty() {
            *q = got;
        } else {
            q.append(&mut got);
        }
    }
    result
}

/// The listener thread: wait for records, receive them all, sleep
/// [`next_gap`]; until told to stop.
fn receive(shared: &Shared) {
    let mut last = (Instant::now(), 0u64);
    while !shared.stop.load(Ordering::Relaxed) {
        let waited = Instant::now();
        if let Err(e) = shared.waker.wait(&[shared.sock.as_fd()], None) {
            if let Ok(mut err) = shared.error.lock() {
                *err = Some(format!("waiting for exit records: {e}"));
            }
            return;
        }
        if shared.stop.load(Ordering::Relaxed) {
            return;
        }
        if let Err(e) = pump(shared) {
            if let Ok(mut err) = shared.error.lock() {
                *err = Some(e);
            }
            return;
        }
        // Records waited for: a burst after a quiet spell, at a rate not
        // known yet.
        let idle = waited.elapsed() > Duration::from_millis(10);
        let (now, received) = (Instant::now(), shared.received.load(Ordering::Relaxed));
        let gap = next_gap(shared.room, received.saturating_sub(last.1), now - last.0, idle);
        last = (now, received);
        // The gap, ended early by a stop.
        let _ = shared.waker.wait(&[], Some(gap));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/taskstats");

    /// Captured on the development VM (6.18): the attributes of a message
    /// start after the netlink (16) and generic netlink (4) headers.
    fn records(name: &str) -> Vec<ExitRecord> {
        let b = std::fs::read(format!("{FIX}/{name}")).unwrap();
        parse_attrs(&b[20..], 5_000_000_000)
    }

    impl ExitRecord {
        fn with_recv(mut self, ns: u64) -> Self {
            self.recv_boot_ns = ns;
            self
        }
    }

    #[test]
    fn exit_of_a_single_threaded_process() {
        let r = records("exit-dd.bin");
        assert_eq!(r.len(), 1);
        let r = &r[0];
        assert_eq!((r.pid, r.tgid), (21563, 21563));
        assert_eq!(&*r.comm, "dd");
        // dd bs=1k count=3 from /dev/zero to /dev/null: 3 KiB each way,
        // nothing from storage; rchar also holds the loader's reads.
        assert_eq!(r.io.wchar, 3072);
        assert_eq!(r.io.rchar % 1024, 0);
        assert!(r.io.rchar >= 3072, "{:?}", r.io);
        assert_eq!(r.io.read_bytes, 0);
        assert_eq!(r.start_boot_ns(), 5_000_000_000 - r.etime_us * 1000);
        // It exited 0 (ac_exitcode).
        assert_eq!(r.exit_status, Some(0));
    }

    #[test]
    fn exit_of_a_worker_thread() {
        let r = records("exit-thread.bin");
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].pid, r[0].tgid), (21569, 21564));
        assert_eq!(&*r[0].comm, "python3");
    }

    /// A datagram holding several messages: each of the family's exit
    /// messages is read, anything else (another type, another command, a
    /// cut message) is skipped without a panic.
    #[test]
    fn every_exit_message_of_a_datagram_is_read() {
        let dd = std::fs::read(format!("{FIX}/exit-dd.bin")).unwrap();
        let thread = std::fs::read(format!("{FIX}/exit-thread.bin")).unwrap();
        let family = u16::from_ne_bytes([dd[4], dd[5]]);
        // An ack (NLMSG_ERROR with code 0), then both exits.
        let mut ack = vec![0u8; 36];
        ack[0..4].copy_from_slice(&36u32.to_ne_bytes());
        ack[4..6].copy_from_slice(&2u16.to_ne_bytes());
        let mut d = [ack.as_slice(), &dd, &thread].concat();
        let mut out = Vec::new();
        parse_datagram(&d, family, 7, &mut out, &mut Comms::default());
        let ids: Vec<(i32, i32)> = out.iter().map(|r| (r.pid, r.tgid)).collect();
        assert_eq!(ids, [(21563, 21563), (21569, 21564)]);
        assert_eq!(out[0], records("exit-dd.bin").remove(0).with_recv(7));
        // Another family's messages, or another command: nothing.
        out.clear();
        parse_datagram(&d, family + 1, 7, &mut out, &mut Comms::default());
        assert!(out.is_empty());
        d[36 + 16] = TASKSTATS_CMD_GET;
        parse_datagram(&d, family, 7, &mut out, &mut Comms::default());
        assert_eq!(out.len(), 1, "the second exit only");
        // Cut anywhere: what is whole is read, never a panic.
        for cut in 0..d.len() {
            out.clear();
            parse_datagram(&d[..cut], family, 7, &mut out, &mut Comms::default());
            assert!(out.len() <= 1);
        }
    }

    /// The records of one comm share its string; another comm has its
    /// own; the oldest of more than `KEEP` comms is made again, equal.
    #[test]
    fn records_of_one_comm_share_it() {
        let b = std::fs::read(format!("{FIX}/exit-dd.bin")).unwrap();
        let family = u16::from_ne_bytes([b[4], b[5]]);
        let (mut out, mut comms) = (Vec::new(), Comms::default());
        parse_datagram(&[b.as_slice(), &b].concat(), family, 7, &mut out, &mut comms);
        assert_eq!(out.len(), 2);
        assert!(Arc::ptr_eq(&out[0].comm, &out[1].comm));
        let dd = comms.get(b"dd");
        assert!(Arc::ptr_eq(&dd, &out[0].comm));
        for i in 0..Comms::KEEP {
            assert_eq!(&*comms.get(format!("c{i}").as_bytes()), format!("c{i}"));
        }
        let again = comms.get(b"dd");
        assert_eq!((&*again, Arc::ptr_eq(&again, &dd)), ("dd", false));
        // Not UTF-8: replaced, as before.
        assert_eq!(&*comms.get(b"a\xffb"), "a\u{fffd}b");
    }

    #[test]
    fn short_or_old_structs_are_refused() {
        let b = std::fs::read(format!("{FIX}/exit-dd.bin")).unwrap();
        // AGGR_PID nest (4) + PID attribute (8) + STATS header (4).
        let stats = &b[20 + 16..];
        assert!(parse_stats(stats, 0).is_some());
        assert_eq!(parse_stats(&stats[..off::MIN_LEN - 1], 0), None);
        let mut old = stats.to_vec();
        old[0..2].copy_from_slice(&11u16.to_ne_bytes());
        assert_eq!(parse_stats(&old, 0), None);
        // Garbage never panics.
        assert!(parse_attrs(&[0xff; 64], 0).is_empty());
        assert!(parse_attrs(&b[20..40], 0).is_empty());
    }

    #[test]
    fn listener_receives_a_child_exit() {
        if !crate::sys::is_root() {
            eprintln!("skipped: the taskstats exit listener needs root");
            return;
        }
        let l = ExitListener::start().unwrap();
        let child = std::process::Command::new("dd")
            .args(["if=/dev/zero", "of=/dev/null", "bs=1k", "count=5", "status=none"])
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        child.wait_with_output().unwrap();
        let mut found = None;
        for _ in 0..50 {
            std::thread::sleep(Duration::from_millis(20));
            let b = l.drain();
            assert!(b.active, "{:?}", b.why_not);
            if let Some(r) = b.records.into_iter().find(|r| r.pid == pid) {
                found = Some(r);
                break;
            }
        }
        let r = found.expect("no exit record for the child");
        assert_eq!((r.tgid, r.ppid), (pid, std::process::id() as i32));
        assert_eq!(r.io.wchar, 5 * 1024);
        assert!(r.start_boot_ns() <= boot_ns());
        assert_eq!(r.exit_status, Some(0));
        // A failing child: its exit code in the wait status's second byte.
        let child = std::process::Command::new("sh").args(["-c", "exit 3"]).spawn().unwrap();
        let pid = child.id() as i32;
        child.wait_with_output().unwrap();
        let mut status = None;
        for _ in 0..50 {
            std::thread::sleep(Duration::from_millis(20));
            if let Some(r) = l.drain().records.into_iter().find(|r| r.pid == pid) {
                status = r.exit_status;
                break;
            }
        }
        assert_eq!(status, Some(3 << 8));
    }

    /// A thread of this process and a child process that both exited are
    /// found with their tgids, even after a sample drained their records;
    /// a thread id that never exited is not.
    #[test]
    fn exit_tgids_name_the_process_of_a_gone_thread() {
        if !crate::sys::is_root() {
            eprintln!("skipped: the taskstats exit listener needs root");
            return;
        }
        let l = ExitListener::start().unwrap();
        let tid = std::thread::spawn(|| rustix::thread::gettid().as_raw_nonzero().get())
            .join()
            .unwrap();
        let child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        child.wait_with_output().unwrap();
        let me = std::process::id() as i32;
        let wanted = HashSet::from([tid, pid, me]);
        let mut found = HashMap::new();
        for _ in 0..50 {
            let _ = l.drain();
            found = l.tgids().find(&wanted);
            if found.len() == 2 {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(found, HashMap::from([(tid, me), (pid, pid)]));
    }

    /// The socket buffer holds 16,384 records: at 2,000 a second it fills
    /// in 8.2 s, so the gap is the longest; at 400,000 a second the
    /// shortest; in between a quarter of the time to fill; after an idle
    /// wait, or with no records, the shortest.
    #[test]
    fn the_gap_is_a_quarter_of_the_time_the_buffer_takes_to_fill() {
        let s = Duration::from_secs(1);
        assert_eq!(next_gap(16_384, 2_000, s, false), WAKE_GAP_MAX);
        assert_eq!(next_gap(16_384, 400_000, s, false), WAKE_GAP);
        assert_eq!(next_gap(16_384, 16_384, s, false), Duration::from_millis(250));
        assert_eq!(next_gap(16_384, 2_000, s, true), WAKE_GAP);
        assert_eq!(next_gap(16_384, 0, s, false), WAKE_GAP);
        assert_eq!(next_gap(0, 10, s, false), WAKE_GAP);
    }

    #[test]
    fn register_attribute_layout() {
        let m = Taskstats::Register("0-1".into());
        let mut b = vec![0xaa; m.buffer_len()];
        m.emit(&mut b);
        assert_eq!(b, [8, 0, 3, 0, b'0', b'-', b'1', 0]);
    }
}
