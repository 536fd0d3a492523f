//! cpio in copy-out mode (`-o`, `--create`) reads the names of its sources
//! from standard input: the list can only be known when standard input is
//! a regular file (`cpio -o < list`), which the collector checks (it is
//! then a file list, see [`Sources::lists`]); from a pipe (`find . | cpio
//! -o`) the total is unknowable. Pass-through mode (`-p`) reads the same
//! way.

use super::{Sources, Spec, getopt, has};

const SPEC: Spec<'static> = Spec {
    short_values: b"HFCDOIMRE",
    long_values: &[
        "format",
        "file",
        "io-size",
        "directory",
        "message",
        "owner",
        "pattern-file",
        "rsh-command",
    ],
    short_optional: b"",
};

/// Whether cpio copies files out (`-o`) or passes them through (`-p`).
pub fn copies_out(args: &[Vec<u8>]) -> bool {
    has(&getopt(args, &SPEC), b"op", &["create", "pass-through"])
}

pub fn sources(_args: &[Vec<u8>]) -> Sources {
    // Each name is read once, directories not recursed; hard links are
    // stored once (newc, crc).
    Sources {
        links_once: true,
        unknown: Some(STDIN_LIST),
        ..Default::default()
    }
}

/// Why a cpio's total is unknown until its standard input is found to be
/// a regular file.
pub const STDIN_LIST: &str = "the file list is read from standard input";

/// The sources once standard input is known to be the regular file `list`.
pub fn from_stdin_file(mut s: Sources, list: &[u8]) -> Sources {
    if s.unknown == Some(STDIN_LIST) {
        s.unknown = None;
        s.lists.push(super::Root {
            dir: None,
            path: list.to_vec(),
        });
    }
    s
}
