//! Every `iolens …` command line the documentation shows parses: each is
//! run with `--help` appended, which makes clap check the subcommands and
//! the options (and their values) that come before it, then print the help
//! and exit 0 — without touching a device or starting a sampler. A command
//! the docs name that does not exist (`probe random`), or a flag that was
//! renamed, fails here.
//!
//! Commands are taken from the lines of code blocks that start with
//! `iolens ` (also after `$ ` or `sudo `) and from inline code spans that
//! start with `iolens ` (metric names, `iolens_…`, are not commands). What
//! the shell would do with the rest of the line — a comment, a pipe, a
//! redirection — is cut off.

use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_iolens");

/// README.md and every Markdown file under docs/.
fn documents() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut docs = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs")];
    while let Some(d) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                docs.push(p);
            }
        }
    }
    docs.sort();
    docs
}

/// Split a shell command line into words: single and double quotes and
/// backslashes as the shell reads them; the line ends at an unquoted `#`
/// that starts a word, `|`, `;`, `&`, `>` or `<`.
fn words(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut in_word) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    cur.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => cur.extend(chars.next()),
                        _ => cur.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                cur.extend(chars.next());
            }
            '#' if !in_word => break,
            '>' | '<' => {
                // "2>/dev/null": the number glued to it is no argument.
                if in_word && !cur.is_empty() && cur.chars().all(|c| c.is_ascii_digit()) {
                    in_word = false;
                }
                break;
            }
            '|' | ';' | '&' => break,
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    out
}

/// A placeholder the docs write for a number: a sample count.
fn fill(word: String) -> String {
    match word.as_str() {
        "N" | "SECONDS" | "PID" => "1".to_string(),
        _ => word,
    }
}

/// The iolens command lines of one document, with their line numbers.
fn commands(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_block = false;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block {
            let t = t.strip_prefix("$ ").or_else(|| t.strip_prefix("# ")).unwrap_or(t);
            let t = t.strip_prefix("sudo ").unwrap_or(t);
            if t.starts_with("iolens ") || t == "iolens" {
                out.push((i + 1, t.to_string()));
            }
            continue;
        }
        // An inline span holding `·`, `×` or a parenthesis shows screen
        // text (the replay header), not a command.
        for (k, span) in line.split('`').enumerate() {
            let screen = span.contains(['·', '×', '(']);
            if k % 2 == 1 && !screen && (span.starts_with("iolens ") || span == "iolens") {
                out.push((i + 1, span.to_string()));
            }
        }
    }
    out
}

#[test]
fn the_word_splitter_reads_lines_as_the_shell_does() {
    assert_eq!(
        words("iolens --csv processes --top 5 --count 1 | column -s, -t"),
        ["iolens", "--csv", "processes", "--top", "5", "--count", "1"]
    );
    assert_eq!(
        words("iolens generate man > iolens.1   # man page"),
        ["iolens", "generate", "man"]
    );
    assert_eq!(
        words("iolens --name 'a b' \"c\\\"d\" e#f"),
        ["iolens", "--name", "a b", "c\"d", "e#f"]
    );
    assert_eq!(words("iolens --json 2>/dev/null"), ["iolens", "--json"]);
    assert_eq!(words("iolens --count 12 > disks.csv"), ["iolens", "--count", "12"]);
    assert_eq!(
        commands(
            "text `iolens --pid 1234` and `iolens_samples_total`\n```sh\n$ iolens probe rand /dev/sdb  # x\n```\n"
        ),
        [
            (1, "iolens --pid 1234".to_string()),
            (3, "iolens probe rand /dev/sdb  # x".to_string())
        ]
    );
}

#[test]
fn every_documented_command_line_parses() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let name = doc.file_name().unwrap().to_string_lossy().into_owned();
        for (line, cmd) in commands(&text) {
            let w: Vec<String> = words(&cmd).into_iter().map(fill).collect();
            let out = Command::new(BIN)
                .args(&w[1..])
                .arg("--help")
                .env_remove("IOLENS_CONFIG")
                .output()
                .unwrap();
            checked += 1;
            if !out.status.success() {
                let err = String::from_utf8_lossy(&out.stderr);
                failures.push(format!(
                    "{name}:{line}: {cmd}\n    {}",
                    err.lines().next().unwrap_or("")
                ));
            }
        }
    }
    println!("{checked} documented command lines checked");
    assert!(
        checked >= 40,
        "only {checked} command lines found: is the extraction broken?"
    );
    assert!(
        failures.is_empty(),
        "{} do not parse:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
