//! cp and mv: every operand but the last is a source (or all of them with
//! `-t DIR`/`--target-directory`). `cp -a` (and `--preserve=links`,
//! `-d`... with -R) keeps hard links, so copies each once; `mv` across
//! filesystems copies like `cp -a`. cp reads sparse files by their data
//! (holes are found with SEEK_DATA and not read). `-x` stays on one
//! filesystem. `cp -l`/`-s` make links: nothing is read.

use super::{Item, Sources, Spec, getopt, has, operands};

const SPEC: Spec<'static> = Spec {
    short_values: b"St",
    long_values: &["suffix", "target-directory"],
    short_optional: b"",
};

/// Whether a cp copies trees (`-r`, `-R`, `-a`, `--recursive`, `--archive`).
pub fn recursive(args: &[Vec<u8>]) -> bool {
    has(&getopt(args, &SPEC), b"rRa", &["recursive", "archive"])
}

/// The sources of a cp (`mv`: true for mv).
pub fn sources(args: &[Vec<u8>], mv: bool) -> Sources {
    let items = getopt(args, &SPEC);
    let mut s = Sources {
        recurse: mv || has(&items, b"rRa", &["recursive", "archive"]),
        one_fs: has(&items, b"x", &["one-file-system"]),
        holes_skipped: true,
        ..Default::default()
    };
    let preserve_links = items.iter().any(|i| match i {
        Item::Long(n, Some(v)) if n == b"preserve" => v.split(|&c| c == b',').any(|w| w == b"links" || w == b"all"),
        _ => false,
    });
    s.links_once = mv || has(&items, b"a", &["archive"]) || preserve_links;
    if has(&items, b"ls", &["link", "symbolic-link", "attributes-only"]) {
        s.unknown = Some("makes links or copies attributes only: no data is read");
        return s;
    }
    if has(&items, b"L", &["dereference"]) {
        s.estimate("symbolic links followed (not walked)");
    }
    if has(&items, b"u", &["update"]) {
        s.skips_unchanged = true;
    }
    let ops = operands(&items);
    let target = super::values(&items, Some(b't'), "target-directory").next().is_some();
    let srcs: &[&[u8]] = if target {
        &ops
    } else {
        ops.split_last().map_or(&[], |(_, s)| s)
    };
    for o in srcs {
        s.root(None, o);
    }
    if s.roots.is_empty() {
        s.unknown = Some("no source operands on the command line");
    }
    s
}
