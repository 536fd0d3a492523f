//! What scripts/dist.sh ships.
//!
//! - The man page and the bash, zsh and fish completions it generates from
//!   the CLI (pure: runs in every test run).
//! - The static binary (`target/x86_64-unknown-linux-gnu/release/iolens`,
//!   built by `scripts/dist.sh`, or `IOLENS_STATIC_BIN`): no `NEEDED`
//!   entry, no `PT_INTERP` header, and, as root, `--batch` and `--json`
//!   work in an empty root holding only the binary (/proc, /sys and /dev
//!   bind-mounted), with numeric user names. Skipped with the reason when
//!   the binary was not built: a second release build would add minutes
//!   to CI.
//! - The .deb (`target/dist/iolens_*_amd64.deb`, or `IOLENS_DEB`): its
//!   contents, then as root `dpkg -i`, the installed `iolens --version`
//!   and `man -w iolens`, `systemd-analyze verify` of the units, `lintian`
//!   errors, and `dpkg -P` leaving nothing behind.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_iolens");

fn root_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool} >/dev/null")])
        .status()
        .is_ok_and(|s| s.success())
}

fn run(cmd: &str, args: &[&str]) -> Output {
    Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd} {args:?}: {e}"))
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn man_page_and_completions_are_generated_from_the_cli() {
    let generated = |args: &[&str]| {
        let o = run(BIN, args);
        assert!(
            o.status.success(),
            "iolens {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        text(&o)
    };
    let man = generated(&["generate", "man"]);
    assert!(
        man.starts_with(".ie") || man.contains(".TH iolens 1"),
        "man page: {}",
        &man[..man.len().min(200)]
    );
    for sub in ["progress", "probe", "record", "replay", "export"] {
        assert!(man.contains(sub), "the man page names {sub}");
    }
    let bash = generated(&["generate", "completions", "bash"]);
    assert!(
        bash.contains("_iolens()") && bash.contains("complete -F _iolens"),
        "bash"
    );
    let zsh = generated(&["generate", "completions", "zsh"]);
    assert!(zsh.starts_with("#compdef iolens"), "zsh: {}", &zsh[..zsh.len().min(80)]);
    let fish = generated(&["generate", "completions", "fish"]);
    assert!(
        fish.contains("complete -c iolens") && fish.contains("__fish_iolens_using_subcommand record"),
        "fish"
    );
    for c in [&bash, &zsh, &fish] {
        assert!(
            c.contains("interval") && c.contains("max-size"),
            "flags and subcommand flags"
        );
    }
    // The .deb takes these files by the names dist.sh writes them under.
    let toml = std::fs::read_to_string(root_dir().join("Cargo.toml")).unwrap();
    let script = std::fs::read_to_string(root_dir().join("scripts/dist.sh")).unwrap();
    for f in [
        "man/iolens.1.gz",
        "completions/iolens.bash",
        "completions/_iolens",
        "completions/iolens.fish",
    ] {
        assert!(
            toml.contains(&format!("target/dist/{f}")),
            "Cargo.toml's deb assets name {f}"
        );
        assert!(script.contains(&format!("$dist/{f}")), "dist.sh writes {f}");
    }
    for f in [
        "packaging/systemd/iolens-record.service",
        "packaging/systemd/iolens-export.service",
        "assets/config.toml",
    ] {
        assert!(
            toml.contains(f) && root_dir().join(f).is_file(),
            "{f} is shipped and exists"
        );
    }
}

fn static_bin() -> Option<PathBuf> {
    let p = std::env::var_os("IOLENS_STATIC_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| root_dir().join("target/x86_64-unknown-linux-gnu/release/iolens"));
    if p.is_file() {
        Some(p)
    } else {
        eprintln!(
            "skipped: no static binary at {} (bash scripts/dist.sh builds it)",
            p.display()
        );
        None
    }
}

/// Bind mounts under a directory, undone (in reverse) when dropped.
struct Mounts(Vec<PathBuf>);

impl Drop for Mounts {
    fn drop(&mut self) {
        for m in self.0.iter().rev() {
            let _ = run("umount", &["-R", &m.to_string_lossy()]);
        }
    }
}

#[test]
fn static_binary_needs_no_shared_library_and_runs_in_an_empty_root() {
    let Some(bin) = static_bin() else { return };
    if !have("readelf") {
        eprintln!("skipped: readelf is not installed");
        return;
    }
    let b = bin.to_string_lossy().into_owned();
    let dynamic = text(&run("readelf", &["-d", &b]));
    assert!(!dynamic.contains("(NEEDED)"), "shared libraries needed:\n{dynamic}");
    let headers = text(&run("readelf", &["-lW", &b]));
    assert!(!headers.contains("INTERP"), "a program interpreter:\n{headers}");
    assert!(
        headers.contains("LOAD"),
        "readelf -lW read no program headers:\n{headers}"
    );

    if !is_root() {
        eprintln!("skipped: the empty-root run needs root (chroot, bind mounts)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let chroot = dir.path();
    std::fs::copy(&bin, chroot.join("iolens")).unwrap();
    let mut mounts = Mounts(Vec::new());
    for d in ["proc", "sys", "dev"] {
        let at = chroot.join(d);
        std::fs::create_dir(&at).unwrap();
        let o = run("mount", &["--rbind", &format!("/{d}"), &at.to_string_lossy()]);
        assert!(
            o.status.success(),
            "mount --rbind /{d}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        // Unmounting a recursive bind must not propagate to the host's mounts.
        let _ = run("mount", &["--make-rslave", &at.to_string_lossy()]);
        mounts.0.push(at);
    }
    let c = chroot.to_string_lossy().into_owned();
    let batch = run(
        "chroot",
        &[&c, "/iolens", "--batch", "--count", "2", "--interval", "0.2"],
    );
    let err = String::from_utf8_lossy(&batch.stderr);
    assert!(batch.status.success(), "--batch in the empty root: {err}");
    assert!(!err.contains("panicked"), "{err}");
    let out = text(&batch);
    assert!(out.contains("Device") && out.contains("PID"), "{out}");

    let json = run(
        "chroot",
        &[
            &c,
            "/iolens",
            "--json",
            "--count",
            "2",
            "--interval",
            "0.2",
            "--top",
            "50",
        ],
    );
    assert!(
        json.status.success(),
        "--json in the empty root: {}",
        String::from_utf8_lossy(&json.stderr)
    );
    let reports: Vec<serde_json::Value> = text(&json)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(reports.len(), 2, "two JSON reports");
    let procs = reports[1]["processes"].as_array().cloned().unwrap_or_default();
    // No /etc/passwd there: no names, the uid stands for the user.
    for p in &procs {
        assert!(
            p["user"].is_null() && p["uid"].is_u64(),
            "user without /etc/passwd: {p}"
        );
    }
    drop(mounts);
    for d in ["proc", "sys", "dev"] {
        let left = std::fs::read_dir(chroot.join(d)).map(|r| r.count()).unwrap_or(0);
        assert_eq!(left, 0, "{d} still mounted in the chroot");
    }

    // On the host the static binary names users as the dynamic one does
    // (both read /etc/passwd: no NSS).
    let names = |bin: &str| -> std::collections::BTreeMap<u64, serde_json::Value> {
        let o = run(bin, &["--json", "--count", "2", "--interval", "0.2", "--top", "1000"]);
        let last = text(&o).lines().last().map(str::to_string).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&last).unwrap_or_else(|e| panic!("{bin}: {e}"));
        v["processes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| Some((p["uid"].as_u64()?, p["user"].clone())))
            .collect()
    };
    let (stat, dynamic) = (names(&b), names(BIN));
    for (uid, user) in &stat {
        if let Some(d) = dynamic.get(uid) {
            assert_eq!(user, d, "uid {uid}: the static binary's name against the dynamic one's");
        }
    }
}

/// What the .deb must hold.
const DEB_FILES: [&str; 9] = [
    "./usr/bin/iolens",
    "./usr/share/man/man1/iolens.1.gz",
    "./usr/share/bash-completion/completions/iolens",
    "./usr/share/zsh/vendor-completions/_iolens",
    "./usr/share/fish/vendor_completions.d/iolens.fish",
    "./usr/lib/systemd/system/iolens-record.service",
    "./usr/lib/systemd/system/iolens-export.service",
    "./usr/share/doc/iolens/examples/config.toml",
    "./usr/share/doc/iolens/copyright",
];

fn deb() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("IOLENS_DEB") {
        return Some(PathBuf::from(p));
    }
    let dist = root_dir().join("target/dist");
    let found = std::fs::read_dir(&dist).ok().and_then(|r| {
        r.flatten()
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().ends_with("_amd64.deb"))
    });
    if found.is_none() {
        eprintln!(
            "skipped: no .deb under {} (bash scripts/dist.sh builds it)",
            dist.display()
        );
    }
    found
}

fn installed() -> bool {
    run("dpkg-query", &["-W", "-f=${Status}", "iolens"])
        .stdout
        .starts_with(b"install ok installed")
}

#[test]
fn deb_installs_runs_and_purges_cleanly() {
    let Some(deb) = deb() else { return };
    if !have("dpkg-deb") {
        eprintln!("skipped: dpkg-deb is not installed");
        return;
    }
    let d = deb.to_string_lossy().into_owned();
    let listing = text(&run("dpkg-deb", &["-c", &d]));
    for f in DEB_FILES {
        assert!(
            listing
                .lines()
                .any(|l| l.ends_with(f) || l.contains(&format!("{f} -> "))),
            "{f} is not in the .deb:\n{listing}"
        );
    }
    let info = text(&run("dpkg-deb", &["-f", &d, "Depends"]));
    assert!(!info.contains("libc6"), "a static binary depends on no library: {info}");

    if have("lintian") {
        let o = run("lintian", &["--tag-display-limit", "0", &d]);
        let out = text(&o);
        let errors: Vec<&str> = out.lines().filter(|l| l.starts_with("E:")).collect();
        assert!(errors.is_empty(), "lintian errors:\n{out}");
        println!("lintian:\n{out}");
    } else {
        eprintln!("lintian is not installed: not run");
    }

    if !is_root() {
        eprintln!("skipped: installing the .deb needs root");
        return;
    }
    if installed() {
        eprintln!("skipped: iolens is installed already; not touching it");
        return;
    }
    let i = run("dpkg", &["-i", &d]);
    assert!(i.status.success(), "dpkg -i: {}", String::from_utf8_lossy(&i.stderr));
    let result = std::panic::catch_unwind(|| {
        let v = run("/usr/bin/iolens", &["--version"]);
        assert!(v.status.success() && text(&v).starts_with("iolens "), "{v:?}");
        if have("man") {
            let m = run("man", &["-w", "iolens"]);
            assert!(text(&m).contains("/usr/share/man/man1/iolens.1.gz"), "man -w: {m:?}");
        }
        if have("systemd-analyze") {
            for u in ["iolens-record.service", "iolens-export.service"] {
                // --man=no: the Documentation= page is checked by man -w above.
                let o = run(
                    "systemd-analyze",
                    &["verify", "--man=no", &format!("/usr/lib/systemd/system/{u}")],
                );
                let err = String::from_utf8_lossy(&o.stderr);
                assert!(
                    o.status.success() && !err.contains("iolens"),
                    "systemd-analyze verify {u}: {err}"
                );
            }
            let e = run("systemctl", &["is-enabled", "iolens-record.service"]);
            assert!(!text(&e).starts_with("enabled"), "the recorder is shipped disabled");
        }
    });
    let p = run("dpkg", &["-P", "iolens"]);
    assert!(p.status.success(), "dpkg -P: {}", String::from_utf8_lossy(&p.stderr));
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
    assert!(!installed(), "still installed after dpkg -P");
    for f in DEB_FILES {
        let path = Path::new(&f[1..]);
        assert!(!path.exists(), "{} left behind", path.display());
    }
    assert!(
        !Path::new("/usr/share/doc/iolens").exists(),
        "/usr/share/doc/iolens left behind"
    );
}
