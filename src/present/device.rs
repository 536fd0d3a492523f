//! The device table: the `iostat -x` columns of the batch text and CSV
//! ([`Col`], [`DEFAULT`], [`WIDE`]) and the devices pane's columns
//! ([`DEV_COLUMNS`]: config key, heading, width, keep rank and the batch
//! column each shows; [`DevCol::pane_text`] the text of each), defined
//! once.

use super::{Align, column_table};
use crate::cli::Units;
use crate::format;
use crate::model::disk::{DirRates, DiskRates};
use crate::model::{DevKind, DeviceRow, Model};

/// A request direction of `/proc/diskstats`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Read,
    Write,
    Discard,
}

/// A per-direction column, iostat's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Ios,
    Bytes,
    Merges,
    MergePct,
    Await,
    ReqSz,
}

/// A column of the device table (the name before, pattern and mount after).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Col {
    Dir(Dir, Field),
    Flushes,
    FlushAwait,
    QueueSize,
    Util,
}

use Col::Dir as D;
use Dir::{Discard, Read, Write};
use Field::{Await, Bytes, Ios, MergePct, Merges, ReqSz};

/// The default columns: iostat's most read ones, the same that the
/// dashboard's device pane gives up last on a narrow terminal (rates,
/// latency, request size, queue, %util; merges, discards and flushes are
/// the first it drops). 110 columns before the mount point (116 with
/// `--units raw`).
pub const DEFAULT: [Col; 10] = [
    D(Read, Ios),
    D(Read, Bytes),
    D(Read, Await),
    D(Read, ReqSz),
    D(Write, Ios),
    D(Write, Bytes),
    D(Write, Await),
    D(Write, ReqSz),
    Col::QueueSize,
    Col::Util,
];

/// `--wide`: every `iostat -x` column, in its order.
pub const WIDE: [Col; 22] = [
    D(Read, Ios),
    D(Read, Bytes),
    D(Read, Merges),
    D(Read, MergePct),
    D(Read, Await),
    D(Read, ReqSz),
    D(Write, Ios),
    D(Write, Bytes),
    D(Write, Merges),
    D(Write, MergePct),
    D(Write, Await),
    D(Write, ReqSz),
    D(Discard, Ios),
    D(Discard, Bytes),
    D(Discard, Merges),
    D(Discard, MergePct),
    D(Discard, Await),
    D(Discard, ReqSz),
    Col::Flushes,
    Col::FlushAwait,
    Col::QueueSize,
    Col::Util,
];

/// The columns of a layout.
pub fn columns(wide: bool) -> &'static [Col] {
    if wide { &WIDE } else { &DEFAULT }
}

impl Col {
    /// The batch text heading in `units`.
    pub fn heading(self, units: Units) -> String {
        let c = self;
        let p = prefix;
        match c {
            D(d, Ios) => format!("{}/s", p(d)),
            D(d, Bytes) if units == Units::Raw => format!("{}B/s", p(d)),
            D(d, Bytes) => format!("{}MB/s", p(d)),
            D(d, Merges) => format!("{}rqm/s", p(d)),
            D(d, MergePct) => format!("%{}rqm", p(d)),
            D(d, Await) => format!("{}_await", p(d)),
            D(d, ReqSz) => format!("{}areq-sz", p(d)),
            Col::Flushes => "f/s".into(),
            Col::FlushAwait => "f_await".into(),
            Col::QueueSize => "aqu-sz".into(),
            Col::Util => "%util".into(),
        }
    }

    /// The batch text width in `units`.
    pub fn width(self, units: Units) -> usize {
        match self {
            D(_, Ios) => 9,
            D(_, Bytes) if units == Units::Raw => 11,
            D(_, Bytes) => 8,
            D(_, Merges) | Col::Flushes => 7,
            D(_, MergePct) | Col::QueueSize | Col::Util => 6,
            D(_, Await | ReqSz) | Col::FlushAwait => 8,
        }
    }

    /// The batch text value of `r` in `units`.
    pub fn text(self, r: &DiskRates, units: Units) -> String {
        let c = self;
        let dir = |d: Dir| -> Option<&DirRates> {
            match d {
                Read => Some(&r.read),
                Write => Some(&r.write),
                Discard => r.discard.as_ref(),
            }
        };
        match c {
            D(d, f) => {
                let Some(d) = dir(d) else {
                    // A kernel without discard fields.
                    return format::NA.to_string();
                };
                match f {
                    Ios => format!("{:.2}", d.ios_per_s),
                    Bytes if units == Units::Raw => format!("{:.0}", d.bytes_per_s),
                    Bytes => format!("{:.2}", d.bytes_per_s / 1e6),
                    Merges => format!("{:.2}", d.merges_per_s),
                    MergePct => opt2(d.merge_pct),
                    Await => opt2(d.await_ms),
                    ReqSz => opt2(d.req_bytes.map(|b| b / 1024.0)),
                }
            }
            Col::Flushes => r
                .flush
                .map_or_else(|| format::NA.to_string(), |f| format!("{:.2}", f.ios_per_s)),
            Col::FlushAwait => opt2(r.flush.and_then(|f| f.await_ms)),
            Col::QueueSize => format!("{:.2}", r.aqu_sz),
            Col::Util => format!("{:.1}", r.util_pct),
        }
    }

    /// The CSV header name.
    pub fn csv_head(self) -> String {
        match self {
            D(d, ReqSz) => format!("{}areq_B", prefix(d)),
            c => c.heading(Units::Raw),
        }
    }

    /// The CSV value of `r` (`None`: no rates): plain units, `n/a` when
    /// unknown.
    pub fn csv(self, r: Option<&DiskRates>) -> String {
        let dir = |d: Dir| match d {
            Read => r.map(|r| &r.read),
            Write => r.map(|r| &r.write),
            Discard => r.and_then(|r| r.discard.as_ref()),
        };
        let flush = r.and_then(|r| r.flush);
        match self {
            D(d, f) => {
                let d = dir(d);
                match f {
                    Ios => num(d.map(|d| d.ios_per_s), 2),
                    Bytes => num(d.map(|d| d.bytes_per_s), 0),
                    Merges => num(d.map(|d| d.merges_per_s), 2),
                    MergePct => num(d.and_then(|d| d.merge_pct), 2),
                    Await => num(d.and_then(|d| d.await_ms), 3),
                    ReqSz => num(d.and_then(|d| d.req_bytes), 0),
                }
            }
            Col::Flushes => num(flush.map(|f| f.ios_per_s), 2),
            Col::FlushAwait => num(flush.and_then(|f| f.await_ms), 3),
            Col::QueueSize => num(r.map(|r| r.aqu_sz), 2),
            Col::Util => num(r.map(|r| r.util_pct), 1),
        }
    }
}

/// Two decimals, `n/a` when unknown.
pub fn opt2(v: Option<f64>) -> String {
    v.map_or_else(|| format::NA.to_string(), |v| format!("{v:.2}"))
}

/// A number with `prec` decimals, `n/a` when unknown.
pub fn num(v: Option<f64>, prec: usize) -> String {
    v.filter(|v| v.is_finite())
        .map_or_else(|| format::NA.to_string(), |v| format!("{v:.prec$}"))
}

fn prefix(d: Dir) -> char {
    match d {
        Read => 'r',
        Write => 'w',
        Discard => 'd',
    }
}

/// One column of the devices pane.
#[derive(Debug)]
pub struct DevColumn {
    pub id: DevCol,
    /// Name in the config file (`columns.devices`).
    pub key: &'static str,
    /// Dashboard heading (the pattern's is the model's, see
    /// [`crate::model::pattern::heading`]), width (0: the names' width)
    /// and alignment of the heading.
    pub head: &'static str,
    pub width: u16,
    pub align: Align,
    /// Rank in which a narrow dashboard keeps the columns (0 longest).
    pub keep: u8,
    /// The batch text and CSV column it shows, if any.
    pub col: Option<Col>,
}

const R: Align = Align::Right;
const L: Align = Align::Left;

column_table! {
    /// A column of the devices pane.
    enum DevCol, static DEV_COLUMNS: DevColumn = [
        Name { key: "name", head: "Device", width: 0, align: L, keep: 0, col: None },
        Mount { key: "mount", head: "mount", width: 9, align: L, keep: 9, col: None },
        ReadIops { key: "r/s", head: "r/s", width: 7, align: R, keep: 2, col: Some(D(Read, Ios)) },
        ReadMb { key: "rMB/s", head: "rMB/s", width: 7, align: R, keep: 4, col: Some(D(Read, Bytes)) },
        ReadAwait { key: "r_await", head: "r_await", width: 7, align: R, keep: 7, col: Some(D(Read, Await)) },
        ReadReqSz { key: "rareq-sz", head: "rareq-sz", width: 8, align: R, keep: 13, col: Some(D(Read, ReqSz)) },
        ReadMerge { key: "%rrqm", head: "%rrqm", width: 6, align: R, keep: 15, col: Some(D(Read, MergePct)) },
        WriteIops { key: "w/s", head: "w/s", width: 7, align: R, keep: 3, col: Some(D(Write, Ios)) },
        WriteMb { key: "wMB/s", head: "wMB/s", width: 7, align: R, keep: 5, col: Some(D(Write, Bytes)) },
        WriteAwait { key: "w_await", head: "w_await", width: 7, align: R, keep: 8, col: Some(D(Write, Await)) },
        WriteReqSz { key: "wareq-sz", head: "wareq-sz", width: 8, align: R, keep: 14, col: Some(D(Write, ReqSz)) },
        WriteMerge { key: "%wrqm", head: "%wrqm", width: 6, align: R, keep: 16, col: Some(D(Write, MergePct)) },
        FlushIops { key: "f/s", head: "f/s", width: 6, align: R, keep: 17, col: Some(Col::Flushes) },
        QueueSize { key: "aqu-sz", head: "aqu-sz", width: 6, align: R, keep: 6, col: Some(Col::QueueSize) },
        Util { key: "%util", head: "%util", width: 6, align: R, keep: 1, col: Some(Col::Util) },
        Pattern { key: "pattern", head: "pattern", width: 9, align: R, keep: 10, col: None },
        /// p99 of the traced requests' total time (reads and writes).
        P99 { key: "p99", head: "p99 ms", width: 7, align: R, keep: 11, col: None },
        Spark { key: "history", head: "%util hist", width: 10, align: L, keep: 12, col: None },
    ];
}

impl DevCol {
    /// The columns in the order a narrow pane gives them up (the first
    /// kept longest). First what an admin reads in `iostat -x`: the rates
    /// (r/s, w/s, MB/s), the queue (aqu-sz), %util and the latencies; then
    /// the mount point (or a loop device's backing file: for dm and loop
    /// devices often the only way to tell rows apart), the access pattern,
    /// the traced p99, the history. The batch text's default columns are
    /// this order's data columns before the merges (a test keeps the two
    /// together).
    pub fn keep_order() -> [DevCol; DEV_COLUMNS.len()] {
        let mut cols = DevCol::ALL;
        cols.sort_by_key(|c| c.def().keep);
        cols
    }
}

impl DevCol {
    /// A read column (the others of a direction are the writes').
    pub fn is_read(self) -> bool {
        matches!(
            self,
            DevCol::ReadIops | DevCol::ReadMb | DevCol::ReadAwait | DevCol::ReadReqSz | DevCol::ReadMerge
        )
    }

    /// The devices pane's text of this column of `r` (the name's is
    /// [`name_text`], the history is drawn): `n/a` (`reset` for the
    /// pattern after a counter reset) without rates.
    pub fn pane_text(self, r: &DeviceRow, model: &Model) -> String {
        match self {
            DevCol::Name | DevCol::Spark => return String::new(),
            DevCol::Mount => return mount_text(r),
            DevCol::P99 => return p99_text(model, r),
            _ => {}
        }
        let Some(rates) = &r.rates else {
            let why = match (self, r.rebaseline) {
                (DevCol::Pattern, Some(_)) => "reset",
                _ => format::NA,
            };
            return why.to_string();
        };
        match self {
            DevCol::FlushIops => rates
                .flush
                .map_or_else(|| format::NA.to_string(), |f| format::num(f.ios_per_s)),
            DevCol::QueueSize => format!("{:.2}", rates.aqu_sz),
            DevCol::Util => format!("{:.1}", rates.util_pct),
            DevCol::Pattern => crate::model::pattern::text(rates.pattern, rates.seq_byte_share, rates.pattern_basis),
            c => dir_text(c, if c.is_read() { &rates.read } else { &rates.write }),
        }
    }
}

/// A device's name in the pane's tree: a partition under its disk
/// (`depth` 1, `└` for the `last`), a disk with `folded` partitions
/// folded away `+n`.
pub fn name_text(name: &str, depth: u8, folded: usize, last: bool) -> String {
    let name = format::escape(name);
    match (depth, folded) {
        (0, 0) => name,
        (0, n) => format!("{name} +{n}"),
        _ => format!("{}{name}", if last { "└" } else { "├" }),
    }
}

/// "-" when no request completed in the interval (an average of nothing).
fn dash(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "-".to_string(), f)
}

/// The pane's text of a per-direction column of `d`.
fn dir_text(c: DevCol, d: &DirRates) -> String {
    match c {
        DevCol::ReadIops | DevCol::WriteIops => format::num(d.ios_per_s),
        DevCol::ReadMb | DevCol::WriteMb => format!("{:.2}", d.bytes_per_s / 1e6),
        DevCol::ReadAwait | DevCol::WriteAwait => dash(d.await_ms, format::ms),
        DevCol::ReadReqSz | DevCol::WriteReqSz => dash(d.req_bytes, format::binary),
        DevCol::ReadMerge | DevCol::WriteMerge => dash(d.merge_pct, |p| format!("{p:.1}")),
        _ => String::new(),
    }
}

/// The mount point, else a loop device's backing file, else a
/// device-mapper name.
fn mount_text(r: &DeviceRow) -> String {
    let Some(info) = &r.info else { return String::new() };
    if let Some(m) = info.mounts.first() {
        format::escape(&m.mount_point)
    } else if let Some(b) = &info.backing_file {
        format!("→{}", format::escape(b.rsplit('/').next().unwrap_or(b)))
    } else if let Some(dm) = &info.dm_name {
        format!("({})", format::escape(dm))
    } else {
        String::new()
    }
}

/// p99 of the traced total time of reads and writes: `n/a` without
/// tracing or for a device that issues no requests of its own (a
/// partition's are its disk's; device-mapper, md and zram pass bios on
/// or serve them without requests), `-` when none completed.
fn p99_text(model: &Model, r: &DeviceRow) -> String {
    let own_requests = !matches!(
        r.info.as_ref().map(|i| i.kind),
        Some(DevKind::Partition | DevKind::Dm | DevKind::Md | DevKind::Zram)
    );
    if !model.trace.active || !own_requests {
        return format::NA.to_string();
    }
    model
        .trace
        .device(r.major, r.minor)
        .and_then(|d| d.rw_total_quantile(0.99))
        .map_or_else(|| "-".to_string(), |ns| format::ms(ns as f64 / 1e6))
}
