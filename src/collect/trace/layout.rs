//! The layout files of a tracefs instance: an event's `format`,
//! `events/header_page` and `events/header_event`. Everything the page
//! decoder needs (field offsets and sizes, the page header, the event header
//! types) comes from these files, never from constants compiled in.

use std::fmt;

/// What a layout file could not be parsed as, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutError(pub String);

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LayoutError {}

fn err(what: impl Into<String>) -> LayoutError {
    LayoutError(what.into())
}

/// One `field:` line of a format file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    /// The C type as written (`unsigned int`, `__data_loc char[]`, ...).
    pub ctype: String,
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
    /// `__data_loc`: the field holds (length << 16 | offset) of a
    /// variable-length value stored after the fixed fields.
    pub data_loc: bool,
}

/// An event's `format` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFormat {
    pub name: String,
    pub id: u16,
    pub fields: Vec<Field>,
}

impl EventFormat {
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// Parse `field:TYPE NAME;\toffset:N;\tsize:N;\tsigned:N;` (a trailing `[N]`
/// on the name is an array; the type keeps the brackets out of the name).
fn parse_field(line: &str) -> Result<Field, LayoutError> {
    let mut decl = None;
    let (mut offset, mut size, mut signed) = (None, None, None);
    for part in line.split(';') {
        let part = part.trim();
        if let Some(v) = part.strip_prefix("field:") {
            decl = Some(v.trim());
        } else if let Some(v) = part.strip_prefix("offset:") {
            offset = v.trim().parse::<usize>().ok();
        } else if let Some(v) = part.strip_prefix("size:") {
            size = v.trim().parse::<usize>().ok();
        } else if let Some(v) = part.strip_prefix("signed:") {
            signed = v.trim().parse::<u8>().ok();
        }
    }
    let decl = decl.ok_or_else(|| err(format!("no field declaration in {line:?}")))?;
    let (ctype, name) = decl
        .rsplit_once(|c: char| c.is_whitespace())
        .ok_or_else(|| err(format!("no field name in {line:?}")))?;
    // "char rwbs[10]" -> name "rwbs"
    let name = name.split('[').next().unwrap_or(name).to_string();
    let (Some(offset), Some(size)) = (offset, size) else {
        return Err(err(format!("no offset/size in {line:?}")));
    };
    Ok(Field {
        name,
        data_loc: ctype.contains("__data_loc"),
        ctype: ctype.trim().to_string(),
        offset,
        size,
        signed: signed == Some(1),
    })
}

/// Parse an event's `format` file.
pub fn parse_event_format(text: &str) -> Result<EventFormat, LayoutError> {
    let mut name = None;
    let mut id = None;
    let mut fields = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some(v) = t.strip_prefix("name:") {
            name = Some(v.trim().to_string());
        } else if let Some(v) = t.strip_prefix("ID:") {
            id = Some(v.trim().parse::<u16>().map_err(|_| err(format!("bad ID line {t:?}")))?);
        } else if t.starts_with("field:") {
            fields.push(parse_field(t)?);
        }
    }
    let name = name.ok_or_else(|| err("format file without a name: line"))?;
    let id = id.ok_or_else(|| err(format!("format of {name} without an ID: line")))?;
    if fields.is_empty() {
        return Err(err(format!("format of {name} lists no fields")));
    }
    Ok(EventFormat { name, id, fields })
}

/// The page header from `events/header_page`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageHeader {
    pub timestamp_offset: usize,
    pub timestamp_size: usize,
    pub commit_offset: usize,
    pub commit_size: usize,
    /// Where the events start.
    pub data_offset: usize,
    /// Bytes of event data a page can hold.
    pub data_size: usize,
}

impl PageHeader {
    /// A whole page as read from `trace_pipe_raw`: header plus data.
    pub fn page_size(&self) -> usize {
        self.data_offset + self.data_size
    }
}

/// Parse `events/header_page`: fields `timestamp`, `commit` and `data`
/// (`overwrite` shares `commit`'s bytes and is not used).
pub fn parse_header_page(text: &str) -> Result<PageHeader, LayoutError> {
    let get = |n: &str| -> Result<Field, LayoutError> {
        text.lines()
            .map(str::trim)
            .filter(|l| l.starts_with("field:"))
            .filter_map(|l| parse_field(l).ok())
            .find(|f| f.name == n)
            .ok_or_else(|| err(format!("header_page has no {n} field")))
    };
    let ts = get("timestamp")?;
    let commit = get("commit")?;
    let data = get("data")?;
    if ts.size != 8 || !matches!(commit.size, 4 | 8) || data.size == 0 {
        return Err(err(format!(
            "header_page sizes not understood: timestamp {} commit {} data {}",
            ts.size, commit.size, data.size
        )));
    }
    Ok(PageHeader {
        timestamp_offset: ts.offset,
        timestamp_size: ts.size,
        commit_offset: commit.offset,
        commit_size: commit.size,
        data_offset: data.offset,
        data_size: data.size,
    })
}

/// The event-header encoding from `events/header_event`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventHeader {
    pub type_len_bits: u32,
    pub time_delta_bits: u32,
    pub padding: u32,
    pub time_extend: u32,
    pub time_stamp: u32,
    /// Largest type_len that still encodes a data length (in 4-byte words).
    pub data_max: u32,
}

/// Parse `events/header_event`.
pub fn parse_header_event(text: &str) -> Result<EventHeader, LayoutError> {
    let mut type_len_bits = None;
    let mut time_delta_bits = None;
    let (mut padding, mut time_extend, mut time_stamp, mut data_max) = (None, None, None, None);
    for line in text.lines() {
        let t = line.trim();
        let num_after = |key: &str| -> Option<u32> {
            let rest = t.split_once(key)?.1;
            let digits: String = rest.trim_start().chars().take_while(|c| c.is_ascii_digit()).collect();
            digits.parse().ok()
        };
        if t.starts_with("type_len") {
            type_len_bits = num_after(":");
        } else if t.starts_with("time_delta") {
            time_delta_bits = num_after(":");
        } else if t.starts_with("padding") {
            padding = num_after("==");
        } else if t.starts_with("time_extend") {
            time_extend = num_after("==");
        } else if t.starts_with("time_stamp") {
            time_stamp = num_after("==");
        } else if t.starts_with("data max type_len") {
            data_max = num_after("==");
        }
    }
    let h = EventHeader {
        type_len_bits: type_len_bits.ok_or_else(|| err("header_event: no type_len"))?,
        time_delta_bits: time_delta_bits.ok_or_else(|| err("header_event: no time_delta"))?,
        padding: padding.ok_or_else(|| err("header_event: no padding type"))?,
        time_extend: time_extend.ok_or_else(|| err("header_event: no time_extend type"))?,
        // Kernels before 4.14 had no absolute time stamps; the type is then
        // never produced, so an impossible value is safe.
        time_stamp: time_stamp.unwrap_or(u32::MAX),
        data_max: data_max.ok_or_else(|| err("header_event: no data max type_len"))?,
    };
    if h.type_len_bits + h.time_delta_bits != 32 {
        return Err(err(format!(
            "header_event: type_len {} + time_delta {} bits is not 32",
            h.type_len_bits, h.time_delta_bits
        )));
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/trace-6.18");

    fn read(rel: &str) -> String {
        std::fs::read_to_string(format!("{DIR}/events/{rel}")).unwrap()
    }

    #[test]
    fn header_page_of_this_kernel() {
        let h = parse_header_page(&read("header_page")).unwrap();
        assert_eq!(
            h,
            PageHeader {
                timestamp_offset: 0,
                timestamp_size: 8,
                commit_offset: 8,
                commit_size: 8,
                data_offset: 16,
                data_size: 4080
            }
        );
        assert_eq!(h.page_size(), 4096);
    }

    #[test]
    fn header_event_of_this_kernel() {
        let h = parse_header_event(&read("header_event")).unwrap();
        assert_eq!(
            h,
            EventHeader {
                type_len_bits: 5,
                time_delta_bits: 27,
                padding: 29,
                time_extend: 30,
                time_stamp: 31,
                data_max: 28
            }
        );
    }

    #[test]
    fn rq_issue_format() {
        let f = parse_event_format(&read("block/block_rq_issue/format")).unwrap();
        assert_eq!(f.name, "block_rq_issue");
        assert_eq!(f.id, 2104);
        let names: Vec<&str> = f.fields.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "common_type",
                "common_flags",
                "common_preempt_count",
                "common_pid",
                "dev",
                "sector",
                "nr_sector",
                "bytes",
                "ioprio",
                "rwbs",
                "comm",
                "cmd"
            ]
        );
        let sector = f.field("sector").unwrap();
        assert_eq!((sector.offset, sector.size, sector.signed), (16, 8, false));
        let rwbs = f.field("rwbs").unwrap();
        assert_eq!((rwbs.offset, rwbs.size, rwbs.ctype.as_str()), (34, 10, "char"));
        let cmd = f.field("cmd").unwrap();
        assert!(cmd.data_loc);
        assert_eq!((cmd.offset, cmd.size), (60, 4));
        let pid = f.field("common_pid").unwrap();
        assert!(pid.signed);
    }

    #[test]
    fn bio_queue_format_differs() {
        // The fallback event has no bytes field and comm at another offset:
        // nothing may assume the layout of another event.
        let f = parse_event_format(&read("block/block_bio_queue/format")).unwrap();
        assert!(f.field("bytes").is_none());
        assert_eq!(f.field("comm").unwrap().offset, 38);
    }

    #[test]
    fn broken_files_are_errors() {
        assert!(parse_event_format("name: x\nformat:\n").is_err());
        assert!(parse_event_format("name: x\nID: 1\n\tfield:int a;\tsize:4;\n").is_err());
        assert!(parse_header_page("\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n").is_err());
        assert!(parse_header_event("type_len : 5 bits\n").is_err());
    }
}
