//! rsync: every operand but the last is a source; `src/` (trailing slash)
//! copies the directory's contents and `src` the directory itself — the
//! bytes read are the same, but the destination path of each file differs
//! (what is already in place is looked up under it). A `host:path` or
//! `rsync://` source is another machine's: unknowable. `-H` counts hard
//! links once; rsync reads holes as zeros (even with `-S`, which only
//! writes holes); `-x` stays on one filesystem. Unchanged files (same size
//! and time) are skipped: the position counts what was read, and what is
//! already in place is not read.

use super::{Item, Sources, Spec, getopt, has, operands, remote_operand};

const SHORT_VALUES: &[u8] = b"eBfTM@";
const LONG_VALUES: &[&str] = &[
    "rsh",
    "rsync-path",
    "exclude",
    "include",
    "exclude-from",
    "include-from",
    "files-from",
    "filter",
    "bwlimit",
    "temp-dir",
    "partial-dir",
    "log-file",
    "log-file-format",
    "password-file",
    "backup-dir",
    "suffix",
    "compare-dest",
    "copy-dest",
    "link-dest",
    "chmod",
    "timeout",
    "contimeout",
    "port",
    "max-size",
    "min-size",
    "max-delete",
    "max-alloc",
    "info",
    "debug",
    "modify-window",
    "outbuf",
    "iconv",
    "usermap",
    "groupmap",
    "chown",
    "checksum-choice",
    "cc",
    "compress-choice",
    "zc",
    "compress-level",
    "zl",
    "skip-compress",
    "sockopts",
    "out-format",
    "block-size",
    "protocol",
    "address",
    "write-batch",
    "only-write-batch",
    "read-batch",
    "stop-after",
    "stop-at",
    "remote-option",
    "checksum-seed",
    "early-input",
    "copy-as",
];

/// The sources of an rsync. Only the client's command line is parsed: a
/// forked receiver or generator shares it, a server started over ssh
/// (`rsync --server`) is not a job of its own here.
pub fn sources(args: &[Vec<u8>]) -> Sources {
    let items = getopt(
        args,
        &Spec {
            short_values: SHORT_VALUES,
            long_values: LONG_VALUES,
            short_optional: b"",
        },
    );
    let mut s = Sources::default();
    if has(&items, b"", &["server"]) {
        s.unknown = Some("an rsync server process (its client has the command line)");
        return s;
    }
    let files_from: Vec<&[u8]> = super::values(&items, None, "files-from").collect();
    // -a implies -r, except that --files-from turns the recursion of -a off.
    s.recurse = if files_from.is_empty() {
        has(&items, b"ar", &["archive", "recursive"])
    } else {
        has(&items, b"r", &["recursive"])
    };
    s.links_once = has(&items, b"H", &["hard-links"]);
    s.one_fs = has(&items, b"x", &["one-file-system"]);
    for it in &items {
        match it {
            Item::Long(n, Some(p)) if n == b"exclude" => s.exclude(p),
            Item::Long(n, Some(_)) if n == b"include" || n == b"include-from" || n == b"filter" => {
                s.estimate("include or filter rules iolens does not apply")
            }
            Item::Short(b'f', Some(_)) => s.estimate("include or filter rules iolens does not apply"),
            Item::Long(n, Some(_)) if n == b"exclude-from" => s.estimate("an exclude file iolens does not read"),
            Item::Short(b'C', _) => s.estimate("CVS excludes iolens does not apply"),
            Item::Long(n, _) if n == b"cvs-exclude" => s.estimate("CVS excludes iolens does not apply"),
            Item::Short(b'L', _) => s.estimate("symbolic links followed (not walked)"),
            Item::Long(n, _) if n == b"copy-links" => s.estimate("symbolic links followed (not walked)"),
            _ => {}
        }
    }
    let ops = operands(&items);
    // One operand: rsync lists it (no copy). The last one is the destination.
    let srcs = match ops.split_last() {
        Some((_, srcs)) if !srcs.is_empty() => srcs,
        _ => {
            s.unknown = Some("no destination: rsync only lists");
            return s;
        }
    };
    if srcs.iter().any(|o| remote_operand(o)) {
        s.unknown = Some("a source on another host");
        return s;
    }
    match files_from.first() {
        // With --files-from the source operand is the base directory.
        Some(&l) if l == b"-" => s.unknown = Some("the file list is read from standard input"),
        Some(&l) => {
            for &base in srcs {
                s.lists.push(super::Root {
                    dir: Some(base.to_vec()),
                    path: l.to_vec(),
                });
            }
        }
        None => {
            for &o in srcs {
                s.root(None, o);
            }
        }
    }
    s.skips_unchanged = true;
    s
}

/// Whether a source operand copies its contents (`src/`) rather than the
/// directory itself (`src`).
pub fn contents_only(op: &[u8]) -> bool {
    op.ends_with(b"/") || op.ends_with(b"/.")
}
