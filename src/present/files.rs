//! What the outputs show of a file the page-cache events name: one column
//! table (headings and JSON names defined once) and the JSON of the
//! `files[]` list, built from the pure model's numbers.

use serde_json::{Value, json};

use crate::collect::trace::block::Dev;
use crate::format;
use crate::model::Model;
use crate::model::files::{FileIo, FileKey, FileRow};

/// The columns of a file row, in display order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileCol {
    Path,
    Device,
    Read,
    Dirtied,
    Blocked,
    Processes,
}

/// One column: its heading, width (0: the rest of the line) and whether it
/// is a number (right-aligned).
#[derive(Debug, Clone, Copy)]
pub struct FileColumn {
    pub id: FileCol,
    pub head: &'static str,
    pub width: usize,
    pub right: bool,
    /// The exporter's per-file counter of the column (public name) and its
    /// help text.
    pub metric: Option<(&'static str, &'static str)>,
}

pub const FILE_COLUMNS: [FileColumn; 6] = [
    FileColumn {
        id: FileCol::Read,
        head: "DISK READ/s",
        width: 11,
        right: true,
        metric: Some((
            "file_read_bytes",
            "Bytes read from storage into this file's page cache (page-cache tracepoints; direct I/O not seen), accumulated by iolens",
        )),
    },
    FileColumn {
        id: FileCol::Dirtied,
        head: "DIRTY FOL/s",
        width: 11,
        right: true,
        metric: Some((
            "file_dirtied_folios",
            "Page-cache folios of this file marked dirty (in folios: the event gives no size), accumulated by iolens",
        )),
    },
    FileColumn {
        id: FileCol::Blocked,
        head: "BLOCKED",
        width: 7,
        right: true,
        metric: Some((
            "file_blocked_seconds",
            "Estimated time threads spent blocked (state D) in calls on this file's descriptor (sampled: a thread seen so at a sample counts the whole interval), accumulated by iolens",
        )),
    },
    FileColumn {
        id: FileCol::Device,
        head: "DEV",
        metric: None,
        width: 8,
        right: false,
    },
    FileColumn {
        id: FileCol::Processes,
        head: "PROCESSES",
        metric: None,
        width: 28,
        right: false,
    },
    FileColumn {
        id: FileCol::Path,
        head: "FILE",
        metric: None,
        width: 0,
        right: false,
    },
];

/// The heading of the files section of the batch text.
pub const FILES_HEADING: &str = "files (read from disk into the page cache, folios dirtied, ~blocked: sampled)";

/// Why there are no file numbers when nothing said otherwise.
pub const NOT_TRACED: &str = "not traced";

/// Processes named in a row's processes cell.
pub const PROCS_SHOWN: usize = 3;

/// The name of a device number: the device row's, else "MAJ:MIN".
pub fn dev_name(model: &Model, d: Dev) -> String {
    model
        .devices
        .iter()
        .find(|r| r.major == d.major && r.minor == d.minor)
        .map_or_else(|| format!("{}:{}", d.major, d.minor), |r| format::escape(&r.name))
}

/// A file's name for display: its path (escaped), else "inode N on DEV".
pub fn file_name(model: &Model, key: FileKey, name: Option<&[u8]>) -> String {
    match name {
        Some(n) => format::escape_bytes(n),
        None => format!("inode {} on {}", key.ino, dev_name(model, key.dev)),
    }
}

/// The comm of a process (escaped), "pid N" when not in the table.
pub fn comm(model: &Model, pid: i32) -> String {
    model
        .procs
        .iter()
        .find(|p| p.raw.key.pid == pid)
        .map_or_else(|| format!("pid {pid}"), |p| format::escape(&p.raw.comm))
}

/// A page-cache count per second; `None` (n/a) before the first interval
/// or when no tracer window fell in it.
fn per_s(v: u64, model: &Model) -> Option<f64> {
    if model.trace.no_window() {
        return None;
    }
    model.interval_s.filter(|s| *s > 0.0).map(|s| v as f64 / s)
}

/// The processes cell: the busiest processes with what they read, and
/// "kernel" where kernel threads did part of it.
fn procs_cell(model: &Model, row: &FileRow) -> String {
    let mut procs: Vec<(&i32, &FileIo)> = row.procs.iter().collect();
    procs.sort_by(|a, b| b.1.busy().cmp(&a.1.busy()).then(a.0.cmp(b.0)));
    let mut parts: Vec<String> = procs
        .iter()
        .take(PROCS_SHOWN)
        .map(|(pid, _)| match **pid {
            0 => "others".to_string(),
            p => match model.procs.iter().find(|r| r.raw.key.pid == p) {
                Some(r) => format!("{}[{p}]", format::escape(&r.raw.comm)),
                None => format!("pid {p}"),
            },
        })
        .collect();
    if procs.len() > PROCS_SHOWN {
        parts.push(format!("+{}", procs.len() - PROCS_SHOWN));
    }
    if !row.kernel.is_empty() {
        parts.push("kernel".to_string());
    }
    parts.join(" ")
}

/// One cell of a file row.
pub fn cell(col: FileCol, model: &Model, i: usize) -> String {
    let f = &model.trace.files;
    let Some((key, row)) = f.interval.files.get(i) else {
        return String::new();
    };
    match col {
        FileCol::Path => file_name(model, *key, f.names.get(i).and_then(|n| n.as_deref())),
        FileCol::Device => dev_name(model, key.dev),
        FileCol::Read => per_s(row.io.read, model).map_or_else(|| format::NA.to_string(), format::rate),
        FileCol::Dirtied => per_s(row.io.dirtied, model).map_or_else(|| format::NA.to_string(), |v| format!("{v:.0}")),
        FileCol::Blocked => blocked_cell(row.io.blocked_ns, model),
        FileCol::Processes => procs_cell(model, row),
    }
}

/// How blocked time is known, for the outputs that say so.
pub const BLOCKED_BASIS: &str =
    "sampled: threads in state D in a call on the file at each sample, each counted for the whole interval";

/// Blocked time as a share of the interval, marked as an estimate ("~40%";
/// two threads blocked throughout: "~200%"); n/a before the first interval.
pub fn blocked_cell(ns: u64, model: &Model) -> String {
    match model.interval_s.filter(|s| *s > 0.0) {
        Some(s) => format!("~{:.0}%", ns as f64 / 1e9 / s * 100.0),
        None => format::NA.to_string(),
    }
}

/// A file's figures; the page-cache ones `null` unless `known` (no tracer
/// window in the interval), blocked time is sampled apart.
fn io_json(io: &FileIo, known: bool) -> Value {
    let k = |v: u64| known.then_some(v);
    json!({
        "read_bytes": k(io.read),
        "dirtied_folios": k(io.dirtied),
        "created_bytes": k(io.created),
        "backing_read_bytes": k(io.backing_read),
        "backing_dirtied_folios": k(io.backing_dirtied),
        "blocked_seconds_est": io.blocked_ns as f64 / 1e9,
    })
}

/// `files[]`: the interval's busiest files (at most `top`), with the
/// numbers of the interval (bytes and folios, not rates).
pub fn files_json(model: &Model, top: usize) -> Value {
    let f = &model.trace.files;
    let known = !model.trace.no_window();
    let rows: Vec<Value> = f
        .interval
        .files
        .iter()
        .enumerate()
        .take(top)
        .map(|(i, (key, row))| {
            let procs: Vec<Value> = row
                .procs
                .iter()
                .map(|(&pid, io)| {
                    let mut v = io_json(io, known);
                    v["pid"] = json!(pid);
                    v["comm"] = json!((pid > 0).then(|| comm(model, pid)));
                    v
                })
                .collect();
            let mut v = io_json(&row.io, known);
            v["path"] = json!(f.names.get(i).and_then(|n| n.as_deref()).map(String::from_utf8_lossy));
            v["name"] = json!(file_name(model, *key, f.names.get(i).and_then(|n| n.as_deref())));
            v["inode"] = json!(key.ino);
            v["dev"] = json!(format!("{}:{}", key.dev.major, key.dev.minor));
            v["device"] = json!(dev_name(model, key.dev));
            v["kernel"] = io_json(&row.kernel, known);
            v["processes"] = Value::Array(procs);
            v
        })
        .collect();
    Value::Array(rows)
}

/// `files_info`: whether the page-cache events are traced, and the counts.
pub fn files_info_json(model: &Model) -> Value {
    let f = &model.trace.files;
    json!({
        "active": f.active,
        "reason": f.reason.as_deref().or((!f.active).then_some(NOT_TRACED)),
        "events": f.interval.events,
        "files": f.interval.files.len(),
        "unplaced_dirtied_folios": (!model.trace.no_window()).then_some(f.interval.unplaced_dirtied),
        "direct_io": "not seen (bypasses the page cache)",
        "blocked": BLOCKED_BASIS,
    })
}

/// The files view's title.
pub const FILES_TITLE: &str = "Files";

/// What the files view says about its figures: why there are none, or
/// what they leave out (events the kernel lost make them a lower bound).
pub fn files_note(model: &Model) -> String {
    let f = &model.trace.files;
    if !f.active {
        let why = f.reason.as_deref().unwrap_or(NOT_TRACED);
        return format!("{NOT_TRACED}: {}", format::escape(why));
    }
    if model.trace.no_window() {
        return "no tracer window in the last interval (CPU budget): disk reads and dirtying n/a, ~blocked sampled"
            .to_string();
    }
    let lost = model.trace.interval.lost_events;
    if lost > 0 {
        return format!("{lost} trace events lost this interval: figures are a lower bound");
    }
    if model.interval_s.is_none() {
        return "waiting for the first interval".to_string();
    }
    "read from disk into the page cache, folios dirtied, ~blocked (sampled); direct I/O not seen".to_string()
}

/// Whose files a detail lists.
#[derive(Debug, Clone, Copy)]
pub enum FilesOf<'a> {
    /// What the process (thread group id) did to each file.
    Process(i32),
    /// The files on the named device or its partitions.
    Device(&'a str),
}

/// Files shown in a detail.
pub const DETAIL_FILES: usize = 5;

/// The devices `name` stands for: itself and its partitions.
fn device_and_partitions(model: &Model, name: &str) -> Vec<Dev> {
    model
        .devices
        .iter()
        .filter(|d| d.name == name || d.info.as_ref().and_then(|i| i.parent.as_deref()) == Some(name))
        .map(|d| Dev {
            major: d.major,
            minor: d.minor,
        })
        .collect()
}

/// A detail's files part: a line saying what it is, then up to
/// [`DETAIL_FILES`] files, those threads were seen blocked on first, then
/// the busiest ("12.3 MB/s 32 ~40% /path": read from disk per second,
/// folios dirtied per second, blocked share), or why there are none;
/// nothing when block tracing is off altogether (the header says why).
pub fn detail_file_lines(model: &Model, of: FilesOf<'_>) -> Vec<String> {
    let f = &model.trace.files;
    if !model.trace.active {
        return Vec::new();
    }
    if !f.active {
        return vec![match f.reason.as_deref() {
            Some(why) => format!("files: {NOT_TRACED} ({})", format::escape(why)),
            None => format!("files: {NOT_TRACED}"),
        }];
    }
    let devs = match of {
        FilesOf::Device(name) => device_and_partitions(model, name),
        FilesOf::Process(_) => Vec::new(),
    };
    let mut rows: Vec<(usize, FileIo)> = f
        .interval
        .files
        .iter()
        .enumerate()
        .filter_map(|(i, (key, row))| match of {
            FilesOf::Process(pid) => row.procs.get(&pid).map(|io| (i, *io)),
            FilesOf::Device(_) => devs.contains(&key.dev).then_some((i, row.io)),
        })
        .filter(|(_, io)| io.read > 0 || io.dirtied > 0 || io.blocked_ns > 0)
        .collect();
    rows.sort_by(|a, b| {
        (b.1.blocked_ns, b.1.busy())
            .cmp(&(a.1.blocked_ns, a.1.busy()))
            .then(a.0.cmp(&b.0))
    });
    let mut head = format!("files ({}): disk read/s, dirty folios/s, ~blocked", rows.len());
    if let Some(tag) = model.trace.sampled() {
        head.push_str(&format!(" (~trace {tag})"));
    }
    let mut out = vec![head];
    for (i, io) in rows.iter().take(DETAIL_FILES) {
        let key = f.interval.files[*i].0;
        let read = per_s(io.read, model).map_or_else(|| format::NA.to_string(), format::rate);
        let dirtied = per_s(io.dirtied, model).map_or_else(|| format::NA.to_string(), |v| format!("{v:.0}"));
        let name = file_name(model, key, f.names.get(*i).and_then(|n| n.as_deref()));
        let blocked = blocked_cell(io.blocked_ns, model);
        out.push(format!("  {read:>10} {dirtied:>5} {blocked:>5} {name}"));
    }
    if rows.len() > DETAIL_FILES {
        out.push(format!("  +{} more (I: all files)", rows.len() - DETAIL_FILES));
    }
    out
}
