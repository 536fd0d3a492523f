//! Source operands of a job's command line, parsed per tool: which paths it
//! reads, relative to what, and how the tool counts what it finds there
//! (hard links once, holes skipped, one filesystem). Pure: the paths are
//! not looked at here (the walk does that, in a child process).
//!
//! Each tool's parser is a small getopt: options that take a value (as the
//! next word, attached, or after `=`), bundled short options (`-czf
//! out.tgz`: `f` takes the next word), `--` ending the options, and
//! operands anywhere (GNU permutation). Long options are matched exactly
//! (an abbreviation like `--fil` is not recognised: it is then taken as a
//! flag, and the total may be off by its value read as an operand).

pub mod cp;
pub mod cpio;
pub mod other;
pub mod rsync;
pub mod tar;

pub use other::{borg, restic};

use serde::Serialize;

use super::Tool;

/// One source operand.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Root {
    /// The directory it is relative to (`tar -C dir`), itself relative to
    /// the process's working directory unless absolute; `None`: the
    /// working directory.
    #[serde(serialize_with = "ser_lossy_opt")]
    pub dir: Option<Vec<u8>>,
    #[serde(serialize_with = "ser_lossy")]
    pub path: Vec<u8>,
}

fn ser_lossy<S: serde::Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&String::from_utf8_lossy(b))
}

fn ser_lossy_opt<S: serde::Serializer>(b: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
    match b {
        Some(b) => s.serialize_str(&String::from_utf8_lossy(b)),
        None => s.serialize_none(),
    }
}

/// What a job reads, as its command line says.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Sources {
    /// Paths walked (a directory with all it holds).
    pub roots: Vec<Root>,
    /// Files naming one source per line (`tar -T`, `rsync --files-from`),
    /// each name relative to the list's `dir`.
    pub lists: Vec<Root>,
    /// Plain name patterns excluded (`*`, `?`; matched against each name).
    #[serde(skip)]
    pub excludes: Vec<Vec<u8>>,
    /// Stays on the filesystem of each root (`--one-file-system`, `-x`).
    pub one_fs: bool,
    /// Counts a file with several hard links once (tar, `rsync -H`, `cp -a`).
    pub links_once: bool,
    /// Reads only the allocated parts of sparse files (`tar -S`, `cp`).
    pub holes_skipped: bool,
    /// Lists recurse into directories (rsync's `--files-from` does not
    /// unless `-r` is given explicitly).
    pub recurse: bool,
    /// Why the total cannot be known at all (a list read from standard
    /// input, a remote source).
    pub unknown: Option<&'static str>,
    /// Why the total is only an estimate (an exclude iolens cannot match,
    /// includes, files skipped when unchanged).
    pub estimate: Vec<&'static str>,
    /// Files already up to date at the destination are skipped, unread
    /// (rsync, borg, restic): the position counts only what was read.
    pub skips_unchanged: bool,
    /// `dd`: at most this many bytes (`count=`) ...
    pub byte_cap: Option<u64>,
    /// ... after skipping this many (`skip=`).
    pub skip_bytes: u64,
}

impl Sources {
    fn recursive() -> Self {
        Sources {
            recurse: true,
            ..Default::default()
        }
    }

    fn root(&mut self, dir: Option<&[u8]>, path: &[u8]) {
        self.roots.push(Root {
            dir: dir.map(<[u8]>::to_vec),
            path: path.to_vec(),
        });
    }

    /// An exclude pattern: kept when it is a plain name pattern iolens can
    /// match like the tool does; otherwise the total becomes an estimate.
    fn exclude(&mut self, pat: &[u8]) {
        if plain_pattern(pat) {
            self.excludes.push(pat.to_vec());
        } else {
            self.estimate("an exclude pattern iolens does not match (the total includes what it excludes)");
        }
    }

    fn estimate(&mut self, why: &'static str) {
        if !self.estimate.contains(&why) {
            self.estimate.push(why);
        }
    }
}

/// Parse the source operands of `tool`'s command line (`argv[1..]`).
pub fn sources(tool: Tool, args: &[Vec<u8>]) -> Sources {
    match tool {
        Tool::Tar => tar::sources(args),
        Tool::Rsync => rsync::sources(args),
        Tool::Cp => cp::sources(args, false),
        Tool::Mv => cp::sources(args, true),
        Tool::Zip => other::zip(args),
        Tool::SevenZip => other::seven_zip(args),
        Tool::Borg => borg::sources(args),
        Tool::Restic => restic::sources(args),
        Tool::Cpio => cpio::sources(args),
        Tool::Dd => other::dd(args),
    }
}

/// A pattern of `*` and `?` within one name (no `/`, no brackets, no
/// escapes): matched against each file name as tar, rsync and cp-like
/// tools do for unanchored patterns.
pub fn plain_pattern(p: &[u8]) -> bool {
    !p.is_empty() && !p.iter().any(|c| matches!(c, b'/' | b'[' | b']' | b'\\' | b'{' | b'}'))
}

/// The walker applies the excludes by this match (it is the collector's:
/// the model names collect, never the reverse).
pub use crate::collect::walk::name_matches;

/// One parsed word of a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// `-x` (with its value when it takes one).
    Short(u8, Option<Vec<u8>>),
    /// `--name` (with its value: `--name=v`, or the next word when it
    /// takes one).
    Long(Vec<u8>, Option<Vec<u8>>),
    Operand(Vec<u8>),
}

/// A tool's option syntax: the options that take a value.
pub struct Spec<'a> {
    pub short_values: &'a [u8],
    pub long_values: &'a [&'a str],
    /// Short options whose value is optional and only attached (`-v2`).
    pub short_optional: &'a [u8],
}

/// getopt_long with permutation: options anywhere, `--` ends them, a lone
/// `-` is an operand (standard input or output).
pub fn getopt(args: &[Vec<u8>], spec: &Spec) -> Vec<Item> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == b"--" {
            out.extend(it.by_ref().map(|a| Item::Operand(a.clone())));
            break;
        }
        if let Some(long) = a.strip_prefix(b"--") {
            let (name, val) = match long.iter().position(|&c| c == b'=') {
                Some(eq) => (&long[..eq], Some(long[eq + 1..].to_vec())),
                None => (long, None),
            };
            let takes = spec.long_values.iter().any(|l| l.as_bytes() == name);
            let val = if takes && val.is_none() {
                it.next().cloned()
            } else {
                val
            };
            out.push(Item::Long(name.to_vec(), val));
        } else if a.len() > 1 && a[0] == b'-' {
            let mut i = 1;
            while i < a.len() {
                let c = a[i];
                i += 1;
                if spec.short_values.contains(&c) {
                    let val = if i < a.len() {
                        Some(a[i..].to_vec())
                    } else {
                        it.next().cloned()
                    };
                    out.push(Item::Short(c, val));
                    break;
                }
                if spec.short_optional.contains(&c) {
                    out.push(Item::Short(c, (i < a.len()).then(|| a[i..].to_vec())));
                    break;
                }
                out.push(Item::Short(c, None));
            }
        } else {
            out.push(Item::Operand(a.clone()));
        }
    }
    out
}

/// The operands of parsed items.
pub fn operands(items: &[Item]) -> Vec<&[u8]> {
    items
        .iter()
        .filter_map(|i| match i {
            Item::Operand(o) => Some(o.as_slice()),
            _ => None,
        })
        .collect()
}

/// Whether a flag is present: any of the short letters or long names.
pub fn has(items: &[Item], shorts: &[u8], longs: &[&str]) -> bool {
    items.iter().any(|i| match i {
        Item::Short(c, _) => shorts.contains(c),
        Item::Long(n, _) => longs.iter().any(|l| l.as_bytes() == n.as_slice()),
        Item::Operand(_) => false,
    })
}

/// The values of an option, in order.
pub fn values<'a>(items: &'a [Item], short: Option<u8>, long: &str) -> impl Iterator<Item = &'a [u8]> + 'a {
    let long = long.to_string();
    items.iter().filter_map(move |i| match i {
        Item::Short(c, Some(v)) if Some(*c) == short => Some(v.as_slice()),
        Item::Long(n, Some(v)) if n.as_slice() == long.as_bytes() => Some(v.as_slice()),
        _ => None,
    })
}

/// The first operand before any other (a subcommand: `borg create`,
/// `restic backup`), skipping global options with values.
pub fn subcommand<'a>(args: &'a [Vec<u8>], global_values: &[&str]) -> Option<&'a [u8]> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a.starts_with(b"-") {
            let name = a.trim_ascii_start();
            let bare = !name.contains(&b'=');
            if bare && global_values.iter().any(|g| g.as_bytes() == name) {
                it.next();
            }
            continue;
        }
        return Some(a);
    }
    None
}

/// Whether a source operand names another host (`host:path`,
/// `user@host:path`, `rsync://`), which iolens cannot walk.
pub fn remote_operand(op: &[u8]) -> bool {
    if op.starts_with(b"/") || op.starts_with(b"./") {
        return false;
    }
    let colon = op.iter().position(|&c| c == b':');
    let slash = op.iter().position(|&c| c == b'/');
    match (colon, slash) {
        (Some(c), Some(s)) => c < s,
        (Some(_), None) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests;
