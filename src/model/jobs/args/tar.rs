//! GNU tar and bsdtar creating an archive: `tar -czf out.tgz -C /srv data
//! --exclude='*.log'`, the old style `tar czf out.tgz dir` (each letter
//! that takes a value takes the next word, in order), `-C` changing the
//! directory of the operands after it, `-T`/`--files-from` lists (`-` is
//! standard input: unknowable), `-X` exclude files (not read: estimate).
//! Hard links are stored once (`--hard-dereference` reads each); holes are
//! read as zeros unless `-S`/`--sparse`.

use super::{Item, Sources, Spec, getopt, has};

const SHORT_VALUES: &[u8] = b"fCTXbHIKLNVFg";
const LONG_VALUES: &[&str] = &[
    "file",
    "directory",
    "files-from",
    "exclude",
    "exclude-from",
    "transform",
    "xform",
    "format",
    "owner",
    "group",
    "mode",
    "mtime",
    "newer",
    "after-date",
    "newer-mtime",
    "use-compress-program",
    "blocking-factor",
    "label",
    "listed-incremental",
    "record-size",
    "tape-length",
    "volno-file",
    "index-file",
    "warning",
    "exclude-tag",
    "exclude-tag-all",
    "exclude-tag-under",
    "exclude-ignore",
    "exclude-ignore-recursive",
    "strip-components",
    "to-command",
    "rsh-command",
    "info-script",
    "new-volume-script",
    "suffix",
    "sort",
    "quoting-style",
    "quote-chars",
    "no-quote-chars",
    "level",
    "hole-detection",
    "pax-option",
    "add-file",
    "checkpoint-action",
    "owner-map",
    "group-map",
    "rmt-command",
    "starting-file",
    "xattrs-include",
    "xattrs-exclude",
    "options",
];

/// The old style's first word (no dash: `czf`) as dashed words, each value
/// letter followed by the next word it takes: `czf out.tgz dir` →
/// `-c -z -f out.tgz dir`.
fn normalize(args: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let Some(first) = args.first() else {
        return Vec::new();
    };
    if first.starts_with(b"-") {
        return args.to_vec();
    }
    let mut rest = args[1..].iter();
    let mut out = Vec::new();
    for &c in first {
        out.push(vec![b'-', c]);
        if SHORT_VALUES.contains(&c)
            && let Some(v) = rest.next()
        {
            out.push(v.clone());
        }
    }
    out.extend(rest.cloned());
    out
}

fn items(args: &[Vec<u8>]) -> Vec<Item> {
    getopt(
        &normalize(args),
        &Spec {
            short_values: SHORT_VALUES,
            long_values: LONG_VALUES,
            short_optional: b"",
        },
    )
}

/// Whether tar creates or appends to an archive (`c`, `r`, `u`), the
/// modes that read source files.
pub fn creates(args: &[Vec<u8>]) -> bool {
    has(&items(args), b"cru", &["create", "append", "update"])
}

/// The sources of a tar creating an archive.
pub fn sources(args: &[Vec<u8>]) -> Sources {
    let items = items(args);
    let mut s = Sources::recursive();
    s.links_once = !has(&items, b"", &["hard-dereference"]);
    s.holes_skipped = has(&items, b"S", &["sparse"]);
    s.one_fs = has(&items, b"", &["one-file-system"]);
    let mut dir: Option<Vec<u8>> = None;
    for it in &items {
        match it {
            Item::Short(b'C', Some(d)) => dir = Some(join_dir(dir.as_deref(), d)),
            Item::Long(n, Some(d)) if n == b"directory" => dir = Some(join_dir(dir.as_deref(), d)),
            Item::Short(b'T', Some(l)) => list(&mut s, dir.as_deref(), l),
            Item::Long(n, Some(l)) if n == b"files-from" => list(&mut s, dir.as_deref(), l),
            Item::Long(n, Some(p)) if n == b"exclude" => s.exclude(p),
            Item::Short(b'X', Some(_)) => s.estimate("an exclude file iolens does not read"),
            Item::Long(n, Some(_)) if n == b"exclude-from" || n.starts_with(b"exclude-tag") => {
                s.estimate("an exclude file or tag iolens does not read")
            }
            Item::Long(n, _) if n == b"exclude-vcs" || n == b"exclude-caches" || n == b"exclude-backups" => {
                s.estimate("a built-in exclude list iolens does not apply")
            }
            Item::Short(b'h', _) => s.estimate("symbolic links followed (not walked)"),
            Item::Long(n, _) if n == b"dereference" => s.estimate("symbolic links followed (not walked)"),
            Item::Long(n, Some(_)) if n == b"listed-incremental" || n == b"newer" || n == b"after-date" => {
                s.estimate("an incremental archive reads only changed files (the total counts all)")
            }
            Item::Short(b'g' | b'N', Some(_)) => {
                s.estimate("an incremental archive reads only changed files (the total counts all)")
            }
            Item::Operand(o) => s.root(dir.as_deref(), o),
            _ => {}
        }
    }
    if s.roots.is_empty() && s.lists.is_empty() && s.unknown.is_none() {
        s.unknown = Some("no source operands on the command line");
    }
    s
}

/// `-C` is relative to the previous `-C`.
fn join_dir(cur: Option<&[u8]>, d: &[u8]) -> Vec<u8> {
    match cur {
        Some(c) if !d.starts_with(b"/") => {
            let mut v = c.to_vec();
            if !v.ends_with(b"/") {
                v.push(b'/');
            }
            v.extend_from_slice(d);
            v
        }
        _ => d.to_vec(),
    }
}

fn list(s: &mut Sources, dir: Option<&[u8]>, l: &[u8]) {
    if l == b"-" {
        s.unknown = Some("the file list is read from standard input");
    } else {
        // The list file itself is opened relative to the current -C in
        // GNU tar; its names too.
        s.lists.push(super::Root {
            dir: dir.map(<[u8]>::to_vec),
            path: l.to_vec(),
        });
    }
}
