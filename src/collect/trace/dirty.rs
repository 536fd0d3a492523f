//! `writeback:balance_dirty_pages` decoded into [`PauseEvent`]s: a task
//! that dirtied pages passing through the dirty throttle. The event fires
//! in the writer's own context once per pass through the throttle's loop:
//! with `pause` > 0 the task then sleeps that many milliseconds
//! (`io_schedule_timeout`, killable); with `pause` ≤ 0 it goes on without
//! sleeping. Fields are located through the event's `format` file; the
//! page counts (`limit`, `dirty`, `wb_dirty`, ...) are in pages, the times
//! (`paused`, `pause`, `period`, `think`) in milliseconds. What the events
//! mean (time paused per process and backing device) is model code:
//! `model::dirty`.

use super::layout::EventFormat;
use super::page::{RawEvent, read_uint};

/// The tracepoint, as `(system, event)` under `events/`.
pub const EVENT: (&str, &str) = ("writeback", "balance_dirty_pages");

/// One pass of a writer through the dirty throttle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PauseEvent {
    /// Trace-clock (CLOCK_MONOTONIC) nanoseconds.
    pub ts: u64,
    /// The backing device's name (`bdi`), NUL-padded ("7:0").
    pub bdi: [u8; 32],
    /// The global dirty limit and the dirty pages it is compared with
    /// (pages).
    pub limit: u64,
    pub dirty: u64,
    /// The backing device's share of the set point and its dirty pages
    /// (pages; `None` on kernels whose format lacks them).
    pub wb_setpoint: Option<u64>,
    pub wb_dirty: Option<u64>,
    /// Pages the task dirtied since its last pass.
    pub dirtied: u64,
    /// Milliseconds already paused in this call (`paused`), the pause
    /// about to be taken (`pause`, ≤ 0: none), the period it was
    /// computed for and the time the task ran since its last pause.
    pub paused_ms: u64,
    pub pause_ms: i64,
    pub period_ms: u64,
    pub think_ms: i64,
    /// The task (thread id) the event ran in.
    pub pid: i32,
    /// Its process, resolved by the reader; 0 when unknown.
    pub tgid: i32,
    /// `pid` is a kernel thread.
    pub kernel: bool,
}

impl PauseEvent {
    /// The bdi name as text (lossy).
    pub fn bdi_name(&self) -> String {
        let n = self.bdi.iter().position(|&c| c == 0).unwrap_or(self.bdi.len());
        String::from_utf8_lossy(&self.bdi[..n]).into_owned()
    }

    /// Milliseconds the task sleeps after this event (0 for `pause` ≤ 0).
    pub fn sleep_ms(&self) -> u64 {
        self.pause_ms.max(0) as u64
    }
}

#[derive(Debug, Clone, Copy)]
struct Loc {
    off: usize,
    size: usize,
}

#[derive(Debug, Clone, Copy)]
struct Fields {
    id: u16,
    pid: Loc,
    bdi: Loc,
    limit: Loc,
    dirty: Loc,
    wb_setpoint: Option<Loc>,
    wb_dirty: Option<Loc>,
    dirtied: Loc,
    paused: Loc,
    pause: Loc,
    period: Loc,
    think: Loc,
}

/// Decodes `balance_dirty_pages` where the kernel has it.
#[derive(Debug, Clone, Default)]
pub struct DirtyDecoder {
    fields: Option<Fields>,
}

fn need(f: &EventFormat, n: &str) -> Result<Loc, String> {
    let x = f.field(n).ok_or_else(|| format!("{} has no {n} field", f.name))?;
    if !matches!(x.size, 1 | 2 | 4 | 8) && n != "bdi" {
        return Err(format!("{}: {n} of {} bytes not understood", f.name, x.size));
    }
    Ok(Loc {
        off: x.offset,
        size: x.size,
    })
}

/// A signed field of `size` bytes, sign-extended.
fn read_int(p: &[u8], l: Loc) -> Option<i64> {
    let v = read_uint(p, l.off, l.size)?;
    let bits = (l.size * 8) as u32;
    Some(if bits >= 64 {
        v as i64
    } else {
        ((v << (64 - bits)) as i64) >> (64 - bits)
    })
}

impl DirtyDecoder {
    /// Take the event's layout from its format file. Refuses a format
    /// without the fields iolens needs.
    pub fn add(&mut self, f: &EventFormat) -> Result<(), String> {
        if f.name != EVENT.1 {
            return Err(format!("{} is not {}", f.name, EVENT.1));
        }
        let bdi = need(f, "bdi")?;
        if bdi.size == 0 || bdi.size > 32 {
            return Err(format!("{}: bdi of {} bytes not understood", f.name, bdi.size));
        }
        self.fields = Some(Fields {
            id: f.id,
            pid: need(f, "common_pid")?,
            bdi,
            limit: need(f, "limit")?,
            dirty: need(f, "dirty")?,
            // Named bdi_setpoint / bdi_dirty before Linux 4.3.
            wb_setpoint: need(f, "wb_setpoint").or_else(|_| need(f, "bdi_setpoint")).ok(),
            wb_dirty: need(f, "wb_dirty").or_else(|_| need(f, "bdi_dirty")).ok(),
            dirtied: need(f, "dirtied")?,
            paused: need(f, "paused")?,
            pause: need(f, "pause")?,
            period: need(f, "period")?,
            think: need(f, "think")?,
        });
        Ok(())
    }

    /// Whether the event is known.
    pub fn complete(&self) -> bool {
        self.fields.is_some()
    }

    /// Decode one raw event; `None` for an event of another type or one
    /// too short for its format.
    pub fn decode(&self, ev: &RawEvent<'_>) -> Option<PauseEvent> {
        let f = self.fields?;
        let p = ev.payload;
        if read_uint(p, 0, 2)? as u16 != f.id {
            return None;
        }
        let get = |l: Loc| read_uint(p, l.off, l.size);
        let mut bdi = [0u8; 32];
        let s = p.get(f.bdi.off..f.bdi.off + f.bdi.size)?;
        bdi[..s.len()].copy_from_slice(s);
        Some(PauseEvent {
            ts: ev.ts,
            bdi,
            limit: get(f.limit)?,
            dirty: get(f.dirty)?,
            wb_setpoint: match f.wb_setpoint {
                Some(l) => Some(get(l)?),
                None => None,
            },
            wb_dirty: match f.wb_dirty {
                Some(l) => Some(get(l)?),
                None => None,
            },
            dirtied: get(f.dirtied)?,
            paused_ms: get(f.paused)?,
            pause_ms: read_int(p, f.pause)?,
            period_ms: get(f.period)?,
            think_ms: read_int(p, f.think)?,
            pid: read_int(p, f.pid)? as i32,
            tgid: 0,
            kernel: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::trace::layout::parse_event_format;

    const FORMAT: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/dirty-6.18/events/writeback/balance_dirty_pages/format"
    );

    fn format() -> EventFormat {
        parse_event_format(&std::fs::read_to_string(FORMAT).unwrap()).unwrap()
    }

    #[test]
    fn layout_of_this_kernel() {
        let f = format();
        let at = |n: &str| f.field(n).map(|x| (x.offset, x.size)).unwrap();
        assert_eq!(at("bdi"), (8, 32));
        assert_eq!((at("limit"), at("setpoint"), at("dirty")), ((40, 8), (48, 8), (56, 8)));
        assert_eq!(
            (at("dirtied"), at("paused"), at("pause")),
            ((96, 4), (104, 8), (112, 8))
        );
        assert_eq!(
            (at("period"), at("think"), at("cgroup_ino")),
            ((120, 8), (128, 8), (136, 8))
        );
    }

    #[test]
    fn hand_made_payload() {
        let f = format();
        let mut d = DirtyDecoder::default();
        d.add(&f).unwrap();
        let mut p = vec![0u8; 144];
        p[0..2].copy_from_slice(&f.id.to_ne_bytes());
        p[4..8].copy_from_slice(&4242i32.to_ne_bytes());
        p[8..11].copy_from_slice(b"7:3");
        p[40..48].copy_from_slice(&1000u64.to_ne_bytes());
        p[56..64].copy_from_slice(&900u64.to_ne_bytes());
        p[72..80].copy_from_slice(&64u64.to_ne_bytes());
        p[96..100].copy_from_slice(&32u32.to_ne_bytes());
        p[104..112].copy_from_slice(&12u64.to_ne_bytes());
        p[112..120].copy_from_slice(&(-3i64).to_ne_bytes());
        p[120..128].copy_from_slice(&40u64.to_ne_bytes());
        p[128..136].copy_from_slice(&(-7i64).to_ne_bytes());
        let e = d.decode(&RawEvent { ts: 5, payload: &p }).unwrap();
        assert_eq!(e.bdi_name(), "7:3");
        assert_eq!(
            (e.pid, e.limit, e.dirty, e.wb_dirty, e.dirtied),
            (4242, 1000, 900, Some(64), 32)
        );
        assert_eq!((e.paused_ms, e.pause_ms, e.period_ms, e.think_ms), (12, -3, 40, -7));
        assert_eq!(e.sleep_ms(), 0);
        p[112..120].copy_from_slice(&20i64.to_ne_bytes());
        assert_eq!(d.decode(&RawEvent { ts: 5, payload: &p }).unwrap().sleep_ms(), 20);
        // cut short, another event: refused, not a panic
        assert_eq!(
            d.decode(&RawEvent {
                ts: 5,
                payload: &p[..100]
            }),
            None
        );
        p[0..2].copy_from_slice(&1u16.to_ne_bytes());
        assert_eq!(d.decode(&RawEvent { ts: 5, payload: &p }), None);
    }

    #[test]
    fn formats_without_the_fields_are_refused() {
        let mut f = format();
        f.fields.retain(|x| x.name != "pause");
        assert!(DirtyDecoder::default().add(&f).unwrap_err().contains("pause"));
        let mut f = format();
        f.name = "writeback_dirty_folio".into();
        assert!(DirtyDecoder::default().add(&f).is_err());
    }
}
