//! zip, 7z, borg, restic and dd.

use super::{Item, Sources, Spec, getopt, has, operands};

/// `zip [options] zipfile [names...]`: `-r` recurses, `-x`/`-i` take the
/// names after them (up to the next option), `-@` reads names from
/// standard input. zip stores each hard link's data again and reads holes
/// as zeros.
pub fn zip(args: &[Vec<u8>]) -> Sources {
    let mut s = Sources::default();
    let mut ops: Vec<&[u8]> = Vec::new();
    let mut it = args.iter().peekable();
    let mut in_list: Option<u8> = None;
    while let Some(a) = it.next() {
        if a.starts_with(b"-") && a.len() > 1 {
            in_list = None;
            match a.as_slice() {
                b"-b" | b"-n" | b"-P" | b"-t" | b"-tt" | b"-O" | b"-Z" | b"-s" | b"-sp" | b"--out" | b"--temp-path"
                | b"--password" => {
                    it.next();
                }
                b"-x" | b"--exclude" => in_list = Some(b'x'),
                b"-i" | b"--include" => in_list = Some(b'i'),
                b"-@" | b"--names-stdin" => s.unknown = Some("the file list is read from standard input"),
                b"-r" | b"--recurse-paths" | b"-R" | b"--recurse-patterns" => s.recurse = true,
                _ if a.len() > 2 && a[1] != b'-' && a[1..].iter().all(u8::is_ascii_alphanumeric) => {
                    // Bundled flags such as -rq, -9r.
                    s.recurse |= a.contains(&b'r');
                }
                _ => {}
            }
        } else {
            match in_list {
                Some(b'x') => s.exclude(a),
                Some(_) => s.estimate("include patterns iolens does not apply"),
                None => ops.push(a),
            }
        }
    }
    // The first operand is the archive.
    for o in ops.iter().skip(1) {
        s.root(None, o);
    }
    if ops.len() < 2 && s.unknown.is_none() {
        s.unknown = Some("no source operands on the command line");
    }
    s
}

/// `7z a [switches] archive [names...] [@listfile]`: switches are one word
/// (`-xr!*.log`, `-r`, `-mx=9`); no names is the current directory.
pub fn seven_zip(args: &[Vec<u8>]) -> Sources {
    let mut s = Sources::recursive();
    let mut words = args.iter().filter(|a| !a.starts_with(b"-"));
    let _cmd = words.next();
    let _archive = words.next();
    for w in words {
        match w.strip_prefix(b"@") {
            Some(l) => s.lists.push(super::Root {
                dir: None,
                path: l.to_vec(),
            }),
            None => s.root(None, w),
        }
    }
    for a in args.iter().filter(|a| a.starts_with(b"-x")) {
        // -x!name, -xr!*.log, -xr0!x: the pattern after the '!'.
        match a.iter().position(|&c| c == b'!') {
            Some(b) => s.exclude(&a[b + 1..]),
            None => s.estimate("an exclude list file iolens does not read"),
        }
    }
    if s.roots.is_empty() && s.lists.is_empty() {
        s.root(None, b".");
    }
    s
}

pub mod borg {
    use super::*;

    /// Global options of borg that take a value.
    pub const GLOBAL_VALUES: &[&str] = &["--remote-path", "--rsh", "--lock-wait", "--umask", "--debug-topic"];

    const LONG: &[&str] = &[
        "remote-path",
        "rsh",
        "lock-wait",
        "umask",
        "debug-topic",
        "upload-ratelimit",
        "upload-buffer",
        "exclude",
        "exclude-from",
        "pattern",
        "patterns-from",
        "exclude-if-present",
        "comment",
        "timestamp",
        "checkpoint-interval",
        "checkpoint-volume",
        "chunker-params",
        "compression",
        "files-cache",
        "stdin-name",
        "stdin-user",
        "stdin-group",
        "stdin-mode",
        "paths-delimiter",
    ];

    /// `borg [global] create [options] REPO::ARCHIVE PATH...`: `-x` one
    /// filesystem, hard links read once, files unchanged since the last
    /// backup (its files cache) not read.
    pub fn sources(args: &[Vec<u8>]) -> Sources {
        let items = getopt(
            args,
            &Spec {
                short_values: b"eC",
                long_values: LONG,
                short_optional: b"",
            },
        );
        let mut s = Sources::recursive();
        s.links_once = true;
        s.skips_unchanged = true;
        s.one_fs = has(&items, b"x", &["one-file-system"]);
        for it in &items {
            match it {
                Item::Short(b'e', Some(p)) => s.exclude(p),
                Item::Long(n, Some(p)) if n == b"exclude" => s.exclude(p),
                Item::Long(n, Some(_))
                    if n != b"exclude" && (n.starts_with(b"exclude") || n.starts_with(b"pattern")) =>
                {
                    s.estimate("patterns or exclude files iolens does not apply")
                }
                Item::Long(n, _) if n == b"paths-from-stdin" || n == b"content-from-command" => {
                    s.unknown = Some("the sources come from standard input or a command")
                }
                _ => {}
            }
        }
        // create, the archive, then the paths.
        for o in operands(&items).iter().skip(2) {
            s.root(None, o);
        }
        if s.roots.is_empty() && s.unknown.is_none() {
            s.unknown = Some("no source operands on the command line");
        }
        s
    }
}

pub mod restic {
    use super::*;

    /// Global options of restic that take a value (as one word each).
    pub const GLOBAL_VALUES: &[&str] = &[
        "-r",
        "--repo",
        "-p",
        "--password-file",
        "--password-command",
        "--repository-file",
        "--cache-dir",
        "--limit-upload",
        "--limit-download",
        "-o",
        "--option",
        "--key-hint",
        "--tls-client-cert",
        "--cacert",
        "--pack-size",
        "--compression",
    ];

    const LONG: &[&str] = &[
        "repo",
        "password-file",
        "password-command",
        "repository-file",
        "cache-dir",
        "limit-upload",
        "limit-download",
        "option",
        "key-hint",
        "tls-client-cert",
        "cacert",
        "pack-size",
        "compression",
        "exclude",
        "iexclude",
        "exclude-file",
        "iexclude-file",
        "exclude-if-present",
        "exclude-larger-than",
        "files-from",
        "files-from-verbatim",
        "files-from-raw",
        "host",
        "tag",
        "parent",
        "time",
        "stdin-filename",
        "read-concurrency",
        "group-by",
    ];

    /// `restic [global] backup [options] PATH...`: `-x` one filesystem,
    /// unchanged files (by its parent snapshot) not read.
    pub fn sources(args: &[Vec<u8>]) -> Sources {
        let items = getopt(
            args,
            &Spec {
                short_values: b"rpoeH",
                long_values: LONG,
                short_optional: b"",
            },
        );
        let mut s = Sources::recursive();
        s.skips_unchanged = true;
        s.one_fs = has(&items, b"x", &["one-file-system"]);
        for it in &items {
            match it {
                Item::Short(b'e', Some(p)) => s.exclude(p),
                Item::Long(n, Some(p)) if n == b"exclude" => s.exclude(p),
                Item::Long(n, Some(_)) if n.starts_with(b"iexclude") || n.starts_with(b"exclude-") => {
                    s.estimate("patterns or exclude files iolens does not apply")
                }
                Item::Long(n, Some(l)) if n.starts_with(b"files-from") => {
                    if l == b"-" {
                        s.unknown = Some("the file list is read from standard input");
                    } else {
                        s.lists.push(super::super::Root {
                            dir: None,
                            path: l.clone(),
                        });
                    }
                }
                Item::Long(n, _) if n == b"stdin" || n == b"stdin-from-command" => {
                    s.unknown = Some("the data comes from standard input or a command")
                }
                _ => {}
            }
        }
        for o in operands(&items).iter().skip(1) {
            s.root(None, o);
        }
        if s.roots.is_empty() && s.lists.is_empty() && s.unknown.is_none() {
            s.unknown = Some("no source operands on the command line");
        }
        s
    }
}

/// A dd size: a number with an optional multiplier (`c` 1, `w` 2, `b`
/// 512, `K`/`KiB` 1024, `kB` 1000, ... `xM` products).
pub fn dd_number(v: &[u8]) -> Option<u64> {
    let v = std::str::from_utf8(v).ok()?;
    v.split('x')
        .try_fold(1u64, |acc, part| acc.checked_mul(dd_factor(part)?))
}

fn dd_factor(p: &str) -> Option<u64> {
    let digits = p.bytes().take_while(u8::is_ascii_digit).count();
    let n: u64 = p.get(..digits)?.parse().ok()?;
    let mult: u64 = match p.get(digits..)? {
        "" | "c" => 1,
        "w" => 2,
        "b" => 512,
        "K" | "k" | "KiB" => 1 << 10,
        "kB" | "KB" => 1000,
        "M" | "MiB" => 1 << 20,
        "MB" => 1_000_000,
        "G" | "GiB" => 1 << 30,
        "GB" => 1_000_000_000,
        "T" | "TiB" => 1 << 40,
        "TB" => 1_000_000_000_000,
        _ => return None,
    };
    n.checked_mul(mult)
}

/// `dd if=SRC [bs=|ibs=] [count=] [skip=|iseek=] [iflag=count_bytes,skip_bytes]`:
/// one source (standard input without `if=`: unknowable), read from
/// `skip` blocks on for at most `count` blocks. A block device's size
/// comes from sysfs.
pub fn dd(args: &[Vec<u8>]) -> Sources {
    let mut s = Sources::default();
    let (mut ibs, mut count, mut skip) = (512u64, None, None);
    let mut flags: Vec<Vec<u8>> = Vec::new();
    for a in args {
        let Some(eq) = a.iter().position(|&c| c == b'=') else {
            continue;
        };
        let (k, v) = (&a[..eq], &a[eq + 1..]);
        match k {
            b"if" => s.root(None, v),
            b"bs" | b"ibs" => ibs = dd_number(v).unwrap_or(ibs),
            b"count" => count = Some(v.to_vec()),
            b"skip" | b"iseek" => skip = Some(v.to_vec()),
            b"iflag" => flags.extend(v.split(|&c| c == b',').map(<[u8]>::to_vec)),
            _ => {}
        }
    }
    let unit = |flag: &[u8]| if flags.iter().any(|f| f == flag) { 1 } else { ibs };
    if let Some(c) = count {
        s.byte_cap = dd_number(&c).and_then(|n| n.checked_mul(unit(b"count_bytes")));
    }
    if let Some(k) = skip {
        s.skip_bytes = dd_number(&k)
            .and_then(|n| n.checked_mul(unit(b"skip_bytes")))
            .unwrap_or(0);
    }
    if s.roots.is_empty() {
        s.unknown = Some("reads standard input (no if=)");
        if s.byte_cap.is_some() {
            s.unknown = None;
        }
    }
    s
}
