//! The documentation holds together: every relative link in README.md,
//! CONTRIBUTING.md, CHANGELOG.md, docs/*.md and benches/README.md points
//! to a file that exists (and to a heading of it, for `file.md#anchor`);
//! no table header row is repeated in two documents (one topic, one page);
//! the README stays a newcomer's page: at most 250 lines, with the run and
//! test commands in its first 30.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn documents() -> Vec<PathBuf> {
    let r = root();
    let mut docs: Vec<PathBuf> = ["README.md", "CONTRIBUTING.md", "CHANGELOG.md", "benches/README.md"]
        .iter()
        .map(|p| r.join(p))
        .collect();
    for e in std::fs::read_dir(r.join("docs")).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "md") {
            docs.push(e.path());
        }
    }
    docs.sort();
    docs
}

/// Lines outside fenced code blocks, with their numbers.
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut in_block = false;
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if l.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if !in_block {
            out.push((i + 1, l));
        }
    }
    out
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces
/// to hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim_start_matches('#')
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == ' ' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    prose(text)
        .into_iter()
        .filter(|(_, l)| l.starts_with('#'))
        .map(|(_, l)| anchor(l))
        .collect()
}

/// The targets of `[text](target)` links in a document, with line numbers;
/// a link may span two lines, so the text is joined first.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, l) in prose(text) {
        let mut rest = l;
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            out.push((n, after[..end].to_string()));
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn anchors_follow_github() {
    assert_eq!(
        anchor("## Per-cgroup I/O: which service, container or pod"),
        "per-cgroup-io-which-service-container-or-pod"
    );
    assert_eq!(
        anchor("# Probes: what can this disk really do?"),
        "probes-what-can-this-disk-really-do"
    );
    assert_eq!(
        links("a [b](x.md#y) c [d](../e)\n"),
        [(1, "x.md#y".to_string()), (1, "../e".to_string())]
    );
}

#[test]
fn every_relative_link_resolves() {
    let mut bad = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap_or_else(|e| panic!("{}: {e}", doc.display()));
        let dir = doc.parent().unwrap();
        let name = doc.strip_prefix(root()).unwrap().display().to_string();
        for (line, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (file, frag) = target.split_once('#').unwrap_or((&target, ""));
            let path = if file.is_empty() { doc.clone() } else { dir.join(file) };
            if !path.exists() {
                bad.push(format!("{name}:{line}: {target}: no such file"));
                continue;
            }
            if !frag.is_empty() && path.extension().is_some_and(|x| x == "md") {
                let t = std::fs::read_to_string(&path).unwrap();
                if !anchors(&t).contains(frag) {
                    bad.push(format!("{name}:{line}: {target}: no such heading"));
                }
            }
        }
    }
    println!("{checked} relative links checked");
    assert!(checked >= 30, "only {checked} links found: is the extraction broken?");
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
}

#[test]
fn no_table_header_is_in_two_documents() {
    let mut seen: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let lines = prose(&text);
        for w in lines.windows(2) {
            if w[0].1.starts_with('|') && w[1].1.starts_with("|---") {
                let name = doc.strip_prefix(root()).unwrap().display().to_string();
                seen.entry(w[0].1.to_string()).or_default().insert(name);
            }
        }
    }
    let twice: Vec<String> = seen
        .iter()
        .filter(|(_, d)| d.len() > 1)
        .map(|(h, d)| format!("{h} in {d:?}"))
        .collect();
    assert!(twice.is_empty(), "one table, one page:\n{}", twice.join("\n"));
}

#[test]
fn readme_is_short_with_the_two_commands_on_top() {
    let text = std::fs::read_to_string(root().join("README.md")).unwrap();
    let n = text.lines().count();
    assert!(n <= 250, "README.md has {n} lines; the reference belongs in docs/");
    let top: Vec<&str> = text.lines().take(30).collect();
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(
        ci.contains("cargo test --profile ci"),
        ".ci/run no longer runs the release tests"
    );
    assert!(
        top.iter().any(|l| l.starts_with("cargo run --release")),
        "the run command is not in README.md's first 30 lines"
    );
    assert!(
        top.iter().any(|l| l.starts_with("bash .ci/run")),
        "the test command (.ci/run) is not in README.md's first 30 lines"
    );
}
