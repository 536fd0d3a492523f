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
