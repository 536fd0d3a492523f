//! The module graph of `src/`: which module names which, read from the
//! source (every `crate::`, `super::` and `self::` path, in `use` lines —
//! grouped ones included — and inline; a name brought in by `use` or a
//! child module declared in the file is followed too). `#[cfg(test)]` code
//! is left out. Checked: no cycle between the top-level modules, none
//! between the parts (files and folders) of `collect/`, and the layers that
//! must not name each other do not.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Imports that must not exist: (importing top-level module, named module).
const FORBIDDEN: &[(&str, &str)] = &[
    ("batch", "ui"),
    ("record", "ui"),
    ("export", "ui"),
    ("config", "ui"),
    ("ui", "batch"),
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module path of a file under `src/` (`collect/process/mod.rs` ->
/// `["collect", "process"]`; `lib.rs` -> `[]`).
fn module_of(rel: &Path) -> Vec<String> {
    let mut segs: Vec<String> = rel.iter().map(|s| s.to_str().unwrap().to_string()).collect();
    let last = segs.pop().unwrap();
    let stem = last.strip_suffix(".rs").unwrap();
    if !["mod", "lib"].contains(&stem) {
        segs.push(stem.to_string());
    }
    segs
}

/// `text` with comments, string and character literals blanked (newlines
/// kept, so line numbers hold).
fn strip(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('#') || next == Some('"')) && !ident_char(&b, i) {
            // Raw string r"..." or r#"..."#.
            let mut j = i + 1;
            while b.get(j) == Some(&'#') {
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let hashes = j - i - 1;
            j += 1;
            while j < b.len() {
                if b[j] == '"' && (1..=hashes).all(|k| b.get(j + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            for &ch in &b[i..j.min(b.len())] {
                out.push(blank(ch));
            }
            i = j;
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < b.len() {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{..}'), or a lifetime.
            let end = if next == Some('\\') {
                (i + 2..b.len()).find(|&j| b[j] == '\'')
            } else if b.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(e) => {
                    for _ in i..=e {
                        out.push(' ');
                    }
                    i = e + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_char(b: &[char], i: usize) -> bool {
    i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_')
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Punct(char),
    PathSep,
}

/// Tokens with their line numbers (1-based).
fn tokens(text: &str) -> Vec<(Tok, usize)> {
    let b: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < b.len() {
        let c = b[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let s = i;
            while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_') {
                i += 1;
            }
            out.push((Tok::Ident(b[s..i].iter().collect()), line));
        } else if c == ':' && b.get(i + 1) == Some(&':') {
            out.push((Tok::PathSep, line));
            i += 2;
        } else {
            out.push((Tok::Punct(c), line));
            i += 1;
        }
    }
    out
}

/// `toks` without the items under `#[cfg(test)]`.
fn drop_test_items(toks: &[(Tok, usize)]) -> Vec<(Tok, usize)> {
    let is = |i: usize, t: &Tok| toks.get(i).is_some_and(|(x, _)| x == t);
    let id = |s: &str| Tok::Ident(s.to_string());
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let cfg_test = is(i, &Tok::Punct('#'))
            && is(i + 1, &Tok::Punct('['))
            && is(i + 2, &id("cfg"))
            && is(i + 3, &Tok::Punct('('))
            && is(i + 4, &id("test"))
            && is(i + 5, &Tok::Punct(')'))
            && is(i + 6, &Tok::Punct(']'));
        if !cfg_test {
            out.push(toks[i].clone());
            i += 1;
            continue;
        }
        // Skip to the end of the item: its first `;` or its braced body,
        // whichever comes first outside () and [].
        i += 7;
        let mut depth = 0i32;
        while i < toks.len() {
            match toks[i].0 {
                Tok::Punct('(' | '[') => depth += 1,
                Tok::Punct(')' | ']') => depth -= 1,
                Tok::Punct(';') if depth == 0 => {
                    i += 1;
                    break;
                }
                Tok::Punct('{') if depth == 0 => {
                    let mut braces = 0;
                    while i < toks.len() {
                        match toks[i].0 {
                            Tok::Punct('{') => braces += 1,
                            Tok::Punct('}') => braces -= 1,
                            _ => {}
                        }
                        i += 1;
                        if braces == 0 {
                            break;
                        }
                    }
                    break;
                }
                _ => {}
            }
            i += 1;
        }
    }
    out
}

/// The full paths of a `use` tree starting at `toks[*i]`, up to its `;`
/// (or the `,`/`}` ending a nested tree).
fn use_tree(toks: &[(Tok, usize)], i: &mut usize, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let mut path = prefix.to_vec();
    while *i < toks.len() {
        match &toks[*i].0 {
            Tok::Ident(s) if s == "as" => {
                *i += 2;
                out.push(path);
                return;
            }
            Tok::Ident(s) => path.push(s.clone()),
            Tok::PathSep => {}
            Tok::Punct('{') => {
                *i += 1;
                loop {
                    use_tree(toks, i, &path, out);
                    match toks.get(*i).map(|t| &t.0) {
                        Some(Tok::Punct(',')) => *i += 1,
                        _ => break,
                    }
                    if matches!(toks.get(*i).map(|t| &t.0), Some(Tok::Punct('}'))) {
                        break;
                    }
                }
                *i += 1; // the '}'
                return;
            }
            Tok::Punct('*') => {
                *i += 1;
                out.push(path);
                return;
            }
            _ => {
                out.push(path);
                return;
            }
        }
        *i += 1;
    }
}

/// One use of a module by another: where it was seen.
struct Use {
    from: Vec<String>,
    to: Vec<String>,
    at: String,
}

/// The longest prefix of `path` that is a module.
fn module_prefix(path: &[String], modules: &BTreeSet<Vec<String>>) -> Vec<String> {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| modules.contains(p))
        .unwrap_or_default()
}

/// `path` as seen from module `here`: `crate::`, `super::` and `self::`
/// resolved, a first segment that is an alias (a `use`d module or a child
/// module) expanded. None for a path that leaves the crate.
fn absolute(
    path: &[String],
    here: &[String],
    aliases: &BTreeMap<String, Vec<String>>,
    modules: &BTreeSet<Vec<String>>,
) -> Option<Vec<String>> {
    let first = path.first()?;
    let mut base: Vec<String>;
    let mut rest = path;
    match first.as_str() {
        "crate" => {
            base = Vec::new();
            rest = &path[1..];
        }
        "self" | "super" => {
            base = here.to_vec();
            while let Some(s) = rest.first() {
                match s.as_str() {
                    "self" => {}
                    "super" => {
                        base.pop()?;
                    }
                    _ => break,
                }
                rest = &rest[1..];
            }
        }
        name => {
            let mut child = here.to_vec();
            child.push(name.to_string());
            if modules.contains(&child) {
                base = here.to_vec();
            } else {
                base = aliases.get(name)?.clone();
                rest = &path[1..];
            }
        }
    }
    base.extend(rest.iter().cloned());
    Some(module_prefix(&base, modules))
}

/// Every use of a module by another in `src/`.
fn module_uses(src: &Path) -> Vec<Use> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.retain(|f| !f.ends_with("main.rs"));
    let mut parsed = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(src).unwrap().to_path_buf();
        let text = std::fs::read_to_string(f).unwrap();
        let toks = drop_test_items(&tokens(&strip(&text)));
        parsed.push((rel, toks));
    }
    // Modules: files, minus those only declared under #[cfg(test)], plus
    // inline `mod name {` blocks.
    let mut modules: BTreeSet<Vec<String>> = BTreeSet::new();
    let mut declared: BTreeSet<Vec<String>> = BTreeSet::new();
    declared.insert(Vec::new());
    for (rel, toks) in &parsed {
        let here = module_of(rel);
        modules.insert(here.clone());
        for w in toks.windows(2) {
            if let (Tok::Ident(m), Tok::Ident(name)) = (&w[0].0, &w[1].0)
                && m == "mod"
            {
                let mut child = here.clone();
                child.push(name.clone());
                declared.insert(child);
            }
        }
    }
    modules.retain(|m| declared.contains(m));
    let test_code: BTreeSet<PathBuf> = parsed
        .iter()
        .filter(|(rel, _)| !modules.contains(&module_of(rel)))
        .map(|(rel, _)| rel.clone())
        .collect();
    modules.extend(declared);
    let mut uses = Vec::new();
    for (rel, toks) in &parsed {
        if test_code.contains(rel) {
            continue;
        }
        file_uses(rel, toks, &modules, &mut uses);
    }
    uses
}

/// The uses of modules in one file.
fn file_uses(rel: &Path, toks: &[(Tok, usize)], modules: &BTreeSet<Vec<String>>, out: &mut Vec<Use>) {
    let file_mod = module_of(rel);
    // Inline modules: (name, brace depth at which its body opened).
    let mut inline: Vec<(String, i32)> = Vec::new();
    let mut depth = 0;
    let mut aliases: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let here = |inline: &[(String, i32)]| {
        let mut m = file_mod.clone();
        m.extend(inline.iter().map(|(n, _)| n.clone()));
        m
    };
    let mut record = |from: Vec<String>, to: Vec<String>, line: usize| {
        if !to.is_empty() && from != to {
            let at = format!("{}:{line}", rel.display());
            out.push(Use { from, to, at });
        }
    };
    let mut i = 0;
    while i < toks.len() {
        let (tok, line) = &toks[i];
        let prev_sep = i > 0 && toks[i - 1].0 == Tok::PathSep;
        match tok {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth -= 1;
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            Tok::Ident(m) if m == "mod" => {
                if let (Some((Tok::Ident(name), _)), Some((Tok::Punct('{'), _))) = (toks.get(i + 1), toks.get(i + 2)) {
                    inline.push((name.clone(), depth));
                }
            }
            Tok::Ident(u) if u == "use" && !prev_sep => {
                let mut paths = Vec::new();
                i += 1;
                use_tree(toks, &mut i, &[], &mut paths);
                let h = here(&inline);
                for p in paths {
                    let Some(abs) = absolute(&p, &h, &aliases, modules) else {
                        continue;
                    };
                    // A `use` of a module by name makes that name an alias.
                    let full = absolute_raw(&p, &h);
                    if full.as_ref() == Some(&abs)
                        && let Some(last) = p.last().filter(|l| *l != "self")
                    {
                        aliases.insert(last.clone(), abs.clone());
                    }
                    record(h.clone(), abs, *line);
                }
                continue;
            }
            Tok::Ident(first) if !prev_sep && toks.get(i + 1).is_some_and(|t| t.0 == Tok::PathSep) => {
                let mut path = vec![first.clone()];
                let mut j = i + 1;
                while toks.get(j).is_some_and(|t| t.0 == Tok::PathSep) {
                    match toks.get(j + 1) {
                        Some((Tok::Ident(s), _)) => path.push(s.clone()),
                        _ => break,
                    }
                    j += 2;
                }
                let h = here(&inline);
                if let Some(abs) = absolute(&path, &h, &aliases, modules) {
                    record(h, abs, *line);
                }
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
}

/// `path` with only `crate`/`self`/`super` resolved (None otherwise): to
/// tell a `use` of a module from a `use` of an item.
fn absolute_raw(path: &[String], here: &[String]) -> Option<Vec<String>> {
    let mut base = match path.first()?.as_str() {
        "crate" => Vec::new(),
        "self" | "super" => here.to_vec(),
        _ => return None,
    };
    let mut rest = &path[1..];
    if path[0] == "super" {
        base.pop()?;
    }
    while let Some(s) = rest.first() {
        match s.as_str() {
            "super" => {
                base.pop()?;
            }
            "self" => {}
            _ => break,
        }
        rest = &rest[1..];
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// A graph between named nodes, each edge with the first place seen.
type Graph = BTreeMap<String, BTreeMap<String, String>>;

fn graph(uses: &[Use], node: impl Fn(&[String]) -> Option<String>) -> Graph {
    let mut g = Graph::new();
    for u in uses {
        let (Some(a), Some(b)) = (node(&u.from), node(&u.to)) else {
            continue;
        };
        if a != b {
            g.entry(a).or_default().entry(b).or_insert_with(|| u.at.clone());
        }
    }
    g
}

/// The cycles of `g`, one per strongly connected component of more than
/// one node, each as a path `a -> b -> ... -> a` with where each edge is
/// seen.
fn cycles(g: &Graph) -> Vec<String> {
    let nodes: BTreeSet<&String> = g.keys().chain(g.values().flat_map(|m| m.keys())).collect();
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(n) = stack.pop() {
            for m in g.get(&n).into_iter().flat_map(|e| e.keys()) {
                if seen.insert(m.clone()) {
                    stack.push(m.clone());
                }
            }
        }
        seen
    };
    let reach: BTreeMap<&String, BTreeSet<String>> = nodes.iter().map(|n| (*n, reach(n))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for n in &nodes {
        if done.contains(*n) || !reach[n].contains(*n) {
            continue;
        }
        let scc: BTreeSet<String> = reach[n].iter().filter(|m| reach[m].contains(*n)).cloned().collect();
        done.extend(scc.iter().cloned());
        // Shortest cycle through n inside its component (breadth first).
        let mut prev: BTreeMap<String, String> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([(*n).clone()]);
        'bfs: while let Some(a) = queue.pop_front() {
            for b in g.get(&a).into_iter().flat_map(|e| e.keys()) {
                if !scc.contains(b) || prev.contains_key(b) {
                    continue;
                }
                prev.insert(b.clone(), a.clone());
                if b == *n {
                    break 'bfs;
                }
                queue.push_back(b.clone());
            }
        }
        let mut path = vec![(*n).clone()];
        let mut cur = (*n).clone();
        while let Some(p) = prev.get(&cur) {
            path.push(p.clone());
            cur = p.clone();
            if cur == **n {
                break;
            }
        }
        path.reverse();
        let steps: Vec<String> = path
            .windows(2)
            .map(|w| format!("  {} -> {}   ({})", w[0], w[1], g[&w[0]][&w[1]]))
            .collect();
        let members: Vec<&str> = scc.iter().map(String::as_str).collect();
        let all: Vec<String> = scc
            .iter()
            .flat_map(|a| g.get(a).into_iter().flatten().map(move |(b, at)| (a, b, at)))
            .filter(|(_, b, _)| scc.contains(*b))
            .map(|(a, b, at)| format!("    {a} -> {b}   ({at})"))
            .collect();
        out.push(format!(
            "cycle among {{{}}}:\n{}\n  all edges among them:\n{}",
            members.join(", "),
            steps.join("\n"),
            all.join("\n")
        ));
    }
    out
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn top(m: &[String]) -> Option<String> {
    m.first().cloned()
}

/// A part of `collect/`: the file or folder right under it. `collect/mod.rs`
/// itself (the reader every part uses) is not a part.
fn collect_part(m: &[String]) -> Option<String> {
    match m {
        [c, part, ..] if c == "collect" => Some(format!("collect/{part}")),
        _ => None,
    }
}

#[test]
fn no_cycle_between_top_level_modules() {
    let uses = module_uses(&src());
    let found = cycles(&graph(&uses, top));
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn no_cycle_between_parts_of_collect() {
    let uses = module_uses(&src());
    let found = cycles(&graph(&uses, collect_part));
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn layers_do_not_name_each_other() {
    let uses = module_uses(&src());
    let mut bad: Vec<String> = uses
        .iter()
        .filter_map(|u| {
            let pair = (top(&u.from)?, top(&u.to)?);
            let pair = (pair.0.as_str(), pair.1.as_str());
            (FORBIDDEN.contains(&pair)).then(|| format!("{}: crate::{} in {}", u.at, pair.1, pair.0))
        })
        .collect();
    bad.sort();
    bad.dedup();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The parser itself: grouped `use`, `super::` from an inline module,
/// an alias, and `#[cfg(test)]` code.
#[test]
fn parser_reads_paths() {
    let text = r#"
use crate::{a, b::{c, d::E}};
use super::f as g;
// crate::commented::Out
fn x() { let s = "crate::in_string"; crate::h::i(); }
mod inner { fn y() { super::super::j::k(); } }
#[cfg(test)]
mod tests { use crate::t; }
fn z() { a::l(); }
"#;
    let toks = drop_test_items(&tokens(&strip(text)));
    let modules: BTreeSet<Vec<String>> = [
        vec![],
        vec!["a"],
        vec!["b"],
        vec!["b", "d"],
        vec!["m"],
        vec!["m", "n"],
        vec!["m", "n", "inner"],
        vec!["m", "f"],
        vec!["h"],
        vec!["j"],
        vec!["t"],
    ]
    .into_iter()
    .map(|v| v.into_iter().map(String::from).collect())
    .collect();
    let mut out = Vec::new();
    file_uses(Path::new("m/n.rs"), &toks, &modules, &mut out);
    let got: Vec<String> = out
        .iter()
        .map(|u| {
            format!(
                "{}>{}:{}",
                u.from.join("/"),
                u.to.join("/"),
                u.at.rsplit(':').next().unwrap()
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            "m/n>a:2",
            "m/n>b:2",
            "m/n>b/d:2",
            "m/n>m/f:3",
            "m/n>h:5",
            "m/n/inner>m:6",
            "m/n>a:9"
        ],
        "{got:#?}"
    );
}

/// The test finds a cycle when there is one.
#[test]
fn cycles_are_found_and_shown() {
    let uses = vec![
        Use {
            from: vec!["a".into()],
            to: vec!["b".into()],
            at: "a.rs:1".into(),
        },
        Use {
            from: vec!["b".into()],
            to: vec!["c".into()],
            at: "b.rs:2".into(),
        },
        Use {
            from: vec!["c".into()],
            to: vec!["a".into()],
            at: "c.rs:3".into(),
        },
        Use {
            from: vec!["c".into()],
            to: vec!["d".into()],
            at: "c.rs:4".into(),
        },
    ];
    let found = cycles(&graph(&uses, top));
    assert_eq!(
        found,
        [
            "cycle among {a, b, c}:\n  a -> b   (a.rs:1)\n  b -> c   (b.rs:2)\n  c -> a   (c.rs:3)\n  \
          all edges among them:\n    a -> b   (a.rs:1)\n    b -> c   (b.rs:2)\n    c -> a   (c.rs:3)"
        ]
    );
}
