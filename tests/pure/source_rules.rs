//! Rules about the source itself that a compiler does not check alone.

use std::path::{Path, PathBuf};

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

/// `unsafe` is denied for the library and the binary, and allowed once:
/// on `mod sys`, the system-call module.
#[test]
fn unsafe_code_is_denied_but_in_sys() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut allows = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (i, line) in text.lines().enumerate() {
            if line.contains("allow(unsafe_code)") {
                allows.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    assert_eq!(allows.len(), 1, "{allows:#?}");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    assert!(
        lib.contains("#[allow(unsafe_code)]\npub mod sys;"),
        "the one allowance is on mod sys"
    );
    for root in ["lib.rs", "main.rs"] {
        let text = std::fs::read_to_string(src.join(root)).unwrap();
        assert!(text.contains("#![deny(unsafe_code)]"), "{root} denies unsafe code");
    }
}

/// Lines of `text` before its first `#[cfg(test)]` line (all of them when
/// it has none).
fn lines_before_tests(text: &str) -> usize {
    text.lines().take_while(|l| !l.contains("#[cfg(test)]")).count()
}

/// What gates code that only tests, benches and examples use.
const GATE: &str = "#[cfg(any(test, feature = \"test-support\"))]";

/// The files of modules declared `#[cfg(test)] mod name;` (or behind
/// [`GATE`]) in `file`: test code as a whole.
fn test_modules(file: &Path, text: &str) -> Vec<PathBuf> {
    let dir = file.parent().unwrap();
    let stem = file.file_stem().unwrap().to_str().unwrap();
    let base = if ["mod", "lib", "main"].contains(&stem) {
        dir.to_path_buf()
    } else {
        dir.join(stem)
    };
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if *l != "#[cfg(test)]" && *l != GATE {
            continue;
        }
        let Some(decl) = lines[i + 1..].iter().find(|l| !l.starts_with("#[")) else {
            continue;
        };
        let decl = decl.strip_prefix("pub ").unwrap_or(decl);
        if let Some(name) = decl.strip_prefix("mod ").and_then(|d| d.strip_suffix(';')) {
            out.push(base.join(format!("{name}.rs")));
            out.push(base.join(name).join("mod.rs"));
        }
    }
    out
}

/// No file in `src/` has more than 600 lines before its first
/// `#[cfg(test)]` line; files that are a `#[cfg(test)]` module as a whole
/// (`app/tests.rs`) are test code.
#[test]
fn no_source_file_over_600_lines_outside_tests() {
    const MAX: usize = 600;
    let mut over: Vec<String> = non_test_code()
        .into_iter()
        .map(|(f, code)| (f, code.lines().count()))
        .filter(|(_, n)| *n > MAX)
        .map(|(f, n)| format!("{}: {n} lines", f.display()))
        .collect();
    over.sort();
    assert!(
        over.is_empty(),
        "over {MAX} lines outside #[cfg(test)] code:\n{}",
        over.join("\n")
    );
}

/// Every file of `src/` with its code outside `#[cfg(test)]`: the lines
/// before the first `#[cfg(test)]` line, none for a file that is a test
/// module as a whole. Paths relative to `src/`.
fn non_test_code() -> Vec<(PathBuf, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let texts: Vec<(PathBuf, String)> = files
        .into_iter()
        .map(|f| {
            let t = std::fs::read_to_string(&f).unwrap();
            (f, t)
        })
        .collect();
    let tests: Vec<PathBuf> = texts.iter().flat_map(|(f, t)| test_modules(f, t)).collect();
    texts
        .into_iter()
        .filter(|(f, _)| !tests.contains(f))
        .map(|(f, t)| {
            let code: Vec<&str> = t.lines().take(lines_before_tests(&t)).collect();
            (f.strip_prefix(&src).unwrap().to_path_buf(), code.join("\n"))
        })
        .collect()
}

/// The session builds the collectors: `Collector::new(` has one call
/// outside test code, in `src/session/`.
#[test]
fn the_collector_is_built_by_the_session_alone() {
    let mut calls = Vec::new();
    for (f, code) in non_test_code() {
        for (i, line) in code.lines().enumerate() {
            if line.contains("Collector::new(") {
                calls.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    assert_eq!(calls.len(), 1, "calls of Collector::new outside tests: {calls:#?}");
    assert!(calls[0].starts_with("session/"), "{calls:?}");
}

/// Code that only tests, benches and examples use stays out of the binary:
/// the made-up probe results, example rows and jobs and the test accessors
/// sit behind `#[cfg(any(test, feature = "test-support"))]` (the feature is
/// switched on by the crate's dev-dependency on itself, never by default).
/// An item whose doc says it is for tests, and a function or module named
/// `example*` not used by iolens itself, carries that gate.
#[test]
fn test_support_code_is_gated() {
    // `example` constructors the binary uses: the rows of processes known
    // only from their exit record (model::proc_update).
    let used = [
        ("collect/process/mod.rs", "pub fn example("),
        ("model/mod.rs", "pub fn example("),
    ];
    let says_tests = |doc: &str| {
        ["for tests", "snapshot tests", "(tests)", "for the tests"]
            .iter()
            .any(|w| doc.contains(w))
    };
    let mut bad = Vec::new();
    let mut gated = 0;
    for (file, code) in non_test_code() {
        let (mut doc, mut attrs) = (String::new(), Vec::new());
        for (i, line) in code.lines().map(str::trim).enumerate() {
            if let Some(d) = line.strip_prefix("///") {
                doc.push_str(d);
                doc.push(' ');
                continue;
            }
            if line.starts_with("#[") {
                attrs.push(line);
                continue;
            }
            let item = line.trim_start_matches("pub ").trim_start_matches("pub(crate) ");
            let example = ["fn example", "mod example", "use job::example"]
                .iter()
                .any(|p| item.starts_with(p));
            let is_item = ["fn ", "mod ", "use "].iter().any(|p| item.starts_with(p));
            let exempt = used.iter().any(|(f, l)| file == Path::new(f) && line.starts_with(l));
            if is_item && (example || says_tests(&doc)) && !exempt {
                if attrs.contains(&GATE) {
                    gated += 1;
                } else {
                    bad.push(format!("src/{}:{}: {line}", file.display(), i + 1));
                }
            }
            doc.clear();
            attrs.clear();
        }
    }
    assert!(
        bad.is_empty(),
        "test-only code compiled into the binary (gate it with {GATE}):\n{}",
        bad.join("\n")
    );
    // The scan sees the gated items (a scan that matched nothing would pass).
    assert!(gated >= 4, "{gated} gated items found");
    let manifest = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains("\ntest-support = []\n"),
        "the feature enables nothing else"
    );
    assert!(
        !manifest.contains("\ndefault = "),
        "no default features (test-support must stay off)"
    );
    assert!(manifest.contains("iolens = { path = \".\", features = [\"test-support\"] }"));
}
