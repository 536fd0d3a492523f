//! The column tables: unique names, and no heading written anywhere else.

use std::collections::HashSet;
use std::path::Path;

use super::cgroup::{CG_COLUMNS, CgCol};
use super::device::{DEV_COLUMNS, DevCol, WIDE};
use super::process::{PROC_COLUMNS, ProcCol};
use super::transfer::{TRANSFER_COLUMNS, TransferCol};

/// Every heading of every table, by kind (a kind's headings must differ).
fn headings() -> Vec<(&'static str, Vec<&'static str>)> {
    let p = |f: fn(&super::process::ProcColumn) -> &'static str| PROC_COLUMNS.iter().map(f).collect();
    vec![
        ("process head", p(|c| c.head)),
        ("process head_total", p(|c| c.head_total)),
        ("process text_head", p(|c| c.text_head)),
        ("process raw_head", p(|c| c.raw_head)),
        ("process csv_head", p(|c| c.csv_head)),
        ("cgroup head", CG_COLUMNS.iter().map(|c| c.head).collect()),
        ("cgroup text_head", CG_COLUMNS.iter().map(|c| c.text_head).collect()),
        ("device head", DEV_COLUMNS.iter().map(|c| c.head).collect()),
        ("transfer head", TRANSFER_COLUMNS.iter().map(|c| c.head).collect()),
        ("file head", super::files::FILE_COLUMNS.iter().map(|c| c.head).collect()),
    ]
}

/// Names with a meaning of their own outside the tables: config keys and
/// the JSON and exporter names (a heading equal to one may be written
/// elsewhere as that name).
fn interface_names() -> HashSet<&'static str> {
    PROC_COLUMNS
        .iter()
        .flat_map(|c| {
            [c.key]
                .into_iter()
                .chain(c.json.iter().copied())
                .chain(c.metric.iter().copied())
        })
        .chain(DEV_COLUMNS.iter().map(|c| c.key))
        .chain(
            CG_COLUMNS
                .iter()
                .flat_map(|c| c.json.iter().chain(c.metric.iter()).copied()),
        )
        .collect()
}

#[test]
fn headings_and_keys_are_unique() {
    let mut kinds = headings();
    kinds.push(("process key", PROC_COLUMNS.iter().map(|c| c.key).collect()));
    kinds.push((
        "process json",
        PROC_COLUMNS.iter().flat_map(|c| c.json.iter().copied()).collect(),
    ));
    kinds.push((
        "process metric",
        PROC_COLUMNS.iter().flat_map(|c| c.metric.iter().copied()).collect(),
    ));
    kinds.push(("cgroup key", CG_COLUMNS.iter().map(|c| c.key).collect()));
    kinds.push((
        "cgroup json",
        CG_COLUMNS.iter().flat_map(|c| c.json.iter().copied()).collect(),
    ));
    kinds.push((
        "cgroup metric",
        CG_COLUMNS.iter().flat_map(|c| c.metric.iter().copied()).collect(),
    ));
    kinds.push(("device key", DEV_COLUMNS.iter().map(|c| c.key).collect()));
    kinds.push(("transfer key", TRANSFER_COLUMNS.iter().map(|c| c.key).collect()));
    let heads = |units| WIDE.iter().map(|c| c.heading(units).leak() as &str).collect();
    kinds.push(("device text head", heads(crate::cli::Units::Human)));
    kinds.push(("device raw head", heads(crate::cli::Units::Raw)));
    kinds.push((
        "device csv head",
        WIDE.iter().map(|c| c.csv_head().leak() as &str).collect(),
    ));
    for (kind, names) in kinds {
        let mut seen = HashSet::new();
        for n in names {
            assert!(!n.is_empty(), "{kind}: an empty name");
            assert!(seen.insert(n), "{kind}: {n:?} twice");
        }
    }
    let mut keep: Vec<u8> = PROC_COLUMNS.iter().map(|c| c.keep).collect();
    keep.sort_unstable();
    keep.dedup();
    assert_eq!(keep.len(), PROC_COLUMNS.len(), "process keep ranks differ");
    let mut keep: Vec<u8> = CG_COLUMNS.iter().map(|c| c.keep).collect();
    keep.sort_unstable();
    keep.dedup();
    assert_eq!(keep.len(), CG_COLUMNS.len(), "cgroup keep ranks differ");
    let mut keep: Vec<u8> = DEV_COLUMNS.iter().map(|c| c.keep).collect();
    keep.sort_unstable();
    keep.dedup();
    assert_eq!(keep.len(), DEV_COLUMNS.len(), "device keep ranks differ");
    let mut pos: Vec<u8> = CG_COLUMNS.iter().filter_map(|c| c.text_pos).collect();
    pos.sort_unstable();
    assert!(pos.iter().copied().eq(0..pos.len() as u8), "cgroup text places {pos:?}");
}

#[test]
fn ids_index_their_table() {
    for (i, c) in ProcCol::ALL.into_iter().enumerate() {
        assert_eq!(PROC_COLUMNS[i].id, c);
        assert_eq!(ProcCol::from_key(c.key()), Some(c));
        // Free text only last.
        assert_eq!(c.def().text_width == 0, i + 1 == ProcCol::ALL.len(), "{c:?}");
    }
    for (i, c) in DevCol::ALL.into_iter().enumerate() {
        assert_eq!(DEV_COLUMNS[i].id, c);
        assert_eq!(DevCol::from_key(c.key()), Some(c));
    }
    for (i, c) in TransferCol::ALL.into_iter().enumerate() {
        assert_eq!(TRANSFER_COLUMNS[i].id, c);
        assert_eq!(TransferCol::from_key(c.key()), Some(c));
    }
    for (i, c) in CgCol::ALL.into_iter().enumerate() {
        assert_eq!(CG_COLUMNS[i].id, c);
        assert_eq!(CgCol::from_key(c.key()), Some(c));
    }
}

/// `src` without its `#[cfg(test)]` items (a line, or a braced block).
fn without_tests(src: &str) -> String {
    let mut out = String::new();
    let mut lines = src.lines();
    while let Some(l) = lines.next() {
        if l.trim() != "#[cfg(test)]" {
            out.push_str(l);
            out.push('\n');
            continue;
        }
        let mut depth = 0i32;
        for l in lines.by_ref() {
            depth += l.matches('{').count() as i32 - l.matches('}').count() as i32;
            if depth <= 0 && (l.trim_end().ends_with(';') || l.trim_end().ends_with('}')) {
                break;
            }
        }
    }
    out
}

/// The string literals of Rust source `src` (comments and char literals
/// skipped; escapes kept as written).
fn literals(src: &str) -> Vec<String> {
    let b = src.as_bytes();
    let (mut out, mut i) = (Vec::new(), 0);
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                i = src[i..].find('\n').map_or(b.len(), |n| i + n);
            }
            b'\'' if b.get(i + 2) == Some(&b'\'') => i += 3,
            b'\'' if b.get(i + 1) == Some(&b'\\') => {
                i = src[i + 2..].find('\'').map_or(b.len(), |n| i + 3 + n);
            }
            b'"' => {
                let start = i + 1;
                i = start;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                out.push(src[start..i.min(b.len())].to_string());
                i += 1;
            }
            _ => i += 1,
        }
    }
    out
}

/// `src` without clap's `value_name = "..."` (a command-line placeholder
/// such as FILE, not a column).
fn without_value_names(src: &str) -> String {
    const KEY: &str = "value_name = \"";
    let (mut out, mut rest) = (String::new(), src);
    while let Some(i) = rest.find(KEY) {
        out.push_str(&rest[..i]);
        let after = &rest[i + KEY.len()..];
        rest = after.find('"').map_or("", |j| &after[j + 1..]);
    }
    out.push_str(rest);
    out
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// No column heading is written as a string literal outside this module
/// (tests excluded): the outputs take them from the tables. Headings that
/// are one plain lowercase word ("kind", "user") are left out: the same
/// word is a JSON field or a label elsewhere, and a scan cannot tell them
/// apart; so are headings without a letter ("%": a unit, written as one
/// in the findings' evidence); every other heading ("DISK RD/s", "KIND",
/// "read/s") is checked.
#[test]
fn headings_are_written_only_in_the_tables() {
    let own = interface_names();
    let heads: HashSet<&str> = headings()
        .into_iter()
        .flat_map(|(_, h)| h)
        .filter(|h| !own.contains(h) && !h.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
        .filter(|h| h.bytes().any(|b| b.is_ascii_alphabetic()))
        .collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    assert!(files.len() > 50, "{files:?}");
    let mut found = Vec::new();
    for f in files.iter().filter(|f| !f.starts_with(root.join("present"))) {
        let src = without_value_names(&without_tests(&std::fs::read_to_string(f).unwrap()));
        for l in literals(&src) {
            if heads.contains(l.as_str()) {
                found.push(format!("{}: {l:?}", f.display()));
            }
        }
    }
    assert!(found.is_empty(), "headings outside the tables:\n{}", found.join("\n"));
}

#[test]
fn the_scan_finds_literals_and_skips_tests() {
    let src =
        "let a = \"PID\"; // \"not\"\nlet c = '\"'; let d = \"x\\\"y\";\n#[cfg(test)]\nmod t {\n    \"hidden\"\n}\n";
    assert_eq!(literals(&without_tests(src)), ["PID", "x\\\"y"]);
}
