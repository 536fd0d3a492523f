//! Optional TOML configuration for the dashboard.
//!
//! Looked up at `$XDG_CONFIG_HOME/iolens/config.toml` (or
//! `~/.config/iolens/config.toml`), or wherever `--config` says. Precedence:
//! command line (and its `IOLENS_*` variables) > config file > default.
//! `NO_COLOR` (non-empty) turns colours off like `--no-color`. An annotated
//! example is `assets/config.toml`. The file is read bounded
//! ([`MAX_FILE`]) and only if it is a regular file; `/dev/null` stands for
//! no file. Batch and JSON output take its `interval` and pattern
//! thresholds too.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use anyhow::{Context, bail};
use ratatui::style::Color;
use serde::Deserialize;

use crate::cli::Cli;
use crate::format;
use crate::present::device::DevCol;
use crate::present::process::ProcCol;
use crate::present::theme::{Palette, SeverityThresholds, Theme};

#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// Seconds between samples.
    pub interval: Option<f64>,
    /// `false` turns colours off.
    pub color: Option<bool>,
    /// `true`: j/k/g/G move the selection, SIGTERM moves to K and F9.
    pub vim_keys: Option<bool>,
    #[serde(default)]
    pub columns: Columns,
    #[serde(default)]
    pub colors: Colors,
    #[serde(default)]
    pub thresholds: ThresholdCfg,
    /// The findings' thresholds and windows (`[findings]`).
    #[serde(default)]
    pub findings: crate::model::findings::FindingsCfg,
}

#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Columns {
    pub devices: Option<Vec<String>>,
    pub processes: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Colors {
    pub accent: Option<String>,
    pub ok: Option<String>,
    pub warn: Option<String>,
    pub crit: Option<String>,
    pub dim: Option<String>,
}

#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ThresholdCfg {
    pub await_warn_ms: Option<f64>,
    pub await_crit_ms: Option<f64>,
    pub util_warn_pct: Option<f64>,
    pub util_crit_pct: Option<f64>,
    /// Traced sequential share of bytes (%) at or above which a device
    /// reads SEQ.
    pub seq_pct: Option<f64>,
    /// Traced sequential share of bytes (%) at or below which a device
    /// reads RAND.
    pub rand_pct: Option<f64>,
}

/// The dashboard settings after merging.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub interval: Duration,
    pub theme: Theme,
    pub dev_cols: Vec<DevCol>,
    pub proc_cols: Vec<ProcCol>,
    pub vim_keys: bool,
    /// Where the traced sequential share of bytes switches SEQ / MIXED / RAND.
    pub pattern: crate::model::trace::PatternThresholds,
    /// The findings' thresholds and windows (`[findings]`).
    pub findings: crate::model::findings::FindingsCfg,
    /// The file the settings came from, if any.
    pub file: Option<PathBuf>,
}

/// `$XDG_CONFIG_HOME/iolens/config.toml`, else `$HOME/.config/iolens/config.toml`.
pub fn default_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("iolens").join("config.toml"))
}

/// The largest config file read (the annotated example is ~3 KiB).
pub const MAX_FILE: u64 = 1 << 20;

/// A path as error messages show it: escaped ([`format::escape_bytes`]).
fn shown(path: &Path) -> String {
    format::escape_bytes(path.as_os_str().as_bytes())
}

/// toml's message quotes the offending line of the file: every line of it
/// escaped ([`format::escape`]), so that no control character in the file
/// reaches the terminal; the lines stay lines.
fn escape_lines(text: &str) -> String {
    text.split('\n').map(format::escape).collect::<Vec<_>>().join("\n")
}

pub fn parse(text: &str, path: &Path) -> anyhow::Result<FileConfig> {
    toml::from_str(text).map_err(|e| {
        anyhow::anyhow!(
            "parsing config file {}: {}",
            shown(path),
            escape_lines(e.to_string().trim_end())
        )
    })
}

/// Whether `path` is the null device (`--config /dev/null`: no file).
fn is_null_device(path: &Path) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    std::fs::metadata(path).is_ok_and(|m| {
        let rdev = m.rdev();
        m.file_type().is_char_device() && rustix::fs::major(rdev) == 1 && rustix::fs::minor(rdev) == 3
    })
}

/// Read the config file: the one given with `--config` (must exist), else the
/// XDG one if it exists. A FIFO, a device (but the null device, which is no
/// file) or a directory is an error at once, and so is a file over
/// [`MAX_FILE`] ([`crate::sys::input::read_regular`]).
pub fn read_file(explicit: Option<&Path>) -> anyhow::Result<(FileConfig, Option<PathBuf>)> {
    let path = match explicit {
        Some(p) if is_null_device(p) => return Ok((FileConfig::default(), None)),
        Some(p) => p.to_path_buf(),
        None => match default_path() {
            Some(p) if p.exists() => p,
            _ => return Ok((FileConfig::default(), None)),
        },
    };
    let bytes = crate::sys::input::read_regular(&path, MAX_FILE)
        .with_context(|| format!("reading config file {}", shown(&path)))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "reading config file {}: not UTF-8 (byte {})",
            shown(&path),
            e.utf8_error().valid_up_to()
        )
    })?;
    Ok((parse(&text, &path)?, Some(path)))
}

/// The interval: the command line's (`--interval`, `IOLENS_INTERVAL`), else
/// the file's, else the default ([`crate::session::DEFAULT_INTERVAL`]); a bad
/// value is refused naming where it came from.
pub fn interval(cli: Option<f64>, file: Option<f64>) -> anyhow::Result<Duration> {
    match (cli, file) {
        (None, Some(v)) => crate::session::check_interval(v, "interval"),
        _ => crate::session::interval(cli),
    }
}

/// Every threshold finite and not negative (`nan` and `inf` are TOML).
fn check_thresholds(f: &ThresholdCfg) -> anyhow::Result<()> {
    let all = [
        ("await_warn_ms", f.await_warn_ms),
        ("await_crit_ms", f.await_crit_ms),
        ("util_warn_pct", f.util_warn_pct),
        ("util_crit_pct", f.util_crit_pct),
        ("seq_pct", f.seq_pct),
        ("rand_pct", f.rand_pct),
    ];
    for (key, v) in all {
        if let Some(v) = v.filter(|v| !(v.is_finite() && *v >= 0.0)) {
            bail!("thresholds.{key} must be a number from 0 up, got {v}");
        }
    }
    Ok(())
}

fn color(name: &Option<String>, default: Color, what: &str) -> anyhow::Result<Color> {
    match name {
        None => Ok(default),
        Some(n) => Color::from_str(n).map_err(|_| anyhow::anyhow!("colors.{what}: unknown colour {n:?}")),
    }
}

fn columns<T: Copy>(
    names: &Option<Vec<String>>,
    all: &[T],
    from: fn(&str) -> Option<T>,
    what: &str,
) -> anyhow::Result<Vec<T>> {
    let Some(names) = names else { return Ok(all.to_vec()) };
    let mut out = Vec::new();
    for n in names {
        match from(n) {
            Some(c) => out.push(c),
            None => bail!("columns.{what}: unknown column {n:?}"),
        }
    }
    Ok(out)
}

/// Merge command line, file and defaults. `no_color_env` is whether
/// `NO_COLOR` is set to a non-empty value.
pub fn resolve(cli: &Cli, file: &FileConfig, no_color_env: bool) -> anyhow::Result<Settings> {
    let interval = interval(cli.interval, file.interval)?;
    check_thresholds(&file.thresholds)?;
    let d = Palette::default();
    let palette = Palette {
        accent: color(&file.colors.accent, d.accent, "accent")?,
        ok: color(&file.colors.ok, d.ok, "ok")?,
        warn: color(&file.colors.warn, d.warn, "warn")?,
        crit: color(&file.colors.crit, d.crit, "crit")?,
        dim: color(&file.colors.dim, d.dim, "dim")?,
    };
    let dt = SeverityThresholds::default();
    let f = &file.thresholds;
    let thresholds = SeverityThresholds {
        await_warn_ms: f.await_warn_ms.unwrap_or(dt.await_warn_ms),
        await_crit_ms: f.await_crit_ms.unwrap_or(dt.await_crit_ms),
        util_warn_pct: f.util_warn_pct.unwrap_or(dt.util_warn_pct),
        util_crit_pct: f.util_crit_pct.unwrap_or(dt.util_crit_pct),
    };
    let pattern = pattern_thresholds(f)?;
    let color_on = !cli.no_color && !no_color_env && file.color.unwrap_or(true);
    Ok(Settings {
        interval,
        theme: Theme {
            color: color_on,
            palette,
            thresholds,
        },
        dev_cols: columns(&file.columns.devices, &DevCol::ALL, DevCol::from_key, "devices")?,
        proc_cols: columns(&file.columns.processes, &ProcCol::ALL, ProcCol::from_key, "processes")?,
        vim_keys: file.vim_keys.unwrap_or(false),
        pattern,
        findings: {
            file.findings.check().map_err(anyhow::Error::msg)?;
            file.findings.clone()
        },
        file: None,
    })
}

/// The SEQ / RAND cut-offs of the traced sequential share of bytes: percentages in
/// the file, 0 ≤ rand_pct < seq_pct ≤ 100.
pub fn pattern_thresholds(f: &ThresholdCfg) -> anyhow::Result<crate::model::trace::PatternThresholds> {
    let d = crate::model::trace::PatternThresholds::default();
    let seq = f.seq_pct.map_or(d.seq, |p| p / 100.0);
    let rand = f.rand_pct.map_or(d.rand, |p| p / 100.0);
    if !(0.0..=1.0).contains(&seq) || !(0.0..=1.0).contains(&rand) || rand >= seq {
        bail!(
            "thresholds: rand_pct {} and seq_pct {} must be percentages with rand_pct < seq_pct",
            rand * 100.0,
            seq * 100.0
        );
    }
    Ok(crate::model::trace::PatternThresholds { seq, rand })
}

/// "in config file PATH", the context of a bad value in the file.
fn in_file(path: Option<&Path>) -> String {
    format!("in config file {}", path.map_or_else(|| "(none)".to_string(), shown))
}

/// The pattern cut-offs for batch output: from the config file (the one
/// given with `--config`, else the XDG one), defaults without one.
pub fn load_pattern(cli: &Cli) -> anyhow::Result<crate::model::trace::PatternThresholds> {
    let (file, path) = read_file(cli.config.as_deref())?;
    check_thresholds(&file.thresholds)
        .and_then(|()| pattern_thresholds(&file.thresholds))
        .with_context(|| in_file(path.as_deref()))
}

/// The findings' thresholds: defaults overridden by the config file's
/// `[findings]` table.
pub fn load_findings(cli: &Cli) -> anyhow::Result<crate::model::findings::FindingsCfg> {
    let (file, path) = read_file(cli.config.as_deref())?;
    file.findings
        .check()
        .map_err(anyhow::Error::msg)
        .with_context(|| in_file(path.as_deref()))?;
    Ok(file.findings)
}

/// The interval of batch and JSON output: command line > config file >
/// default, as for the dashboard.
pub fn load_interval(cli: &Cli) -> anyhow::Result<Duration> {
    let (file, path) = read_file(cli.config.as_deref())?;
    if cli.interval.is_some() {
        return interval(cli.interval, None);
    }
    interval(None, file.interval).with_context(|| in_file(path.as_deref()))
}

/// Everything at once, for the dashboard.
pub fn load(cli: &Cli) -> anyhow::Result<Settings> {
    let (file, path) = read_file(cli.config.as_deref())?;
    let no_color_env = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let mut s = resolve(cli, &file, no_color_env).with_context(|| in_file(path.as_deref()))?;
    s.file = path;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn cli(args: &[&str]) -> Cli {
        Cli::try_parse_from(std::iter::once("iolens").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn cli_beats_file_beats_default() {
        let file = parse(
            "interval = 2.5\ncolor = true\n[columns]\ndevices = [\"name\", \"%util\"]\n[colors]\nwarn = \"magenta\"\n[thresholds]\nawait_warn_ms = 5\n",
            Path::new("t.toml"),
        )
        .unwrap();
        let s = resolve(&cli(&[]), &file, false).unwrap();
        assert_eq!(s.interval, Duration::from_millis(2500));
        assert_eq!(s.dev_cols, [DevCol::Name, DevCol::Util]);
        assert_eq!(s.proc_cols, ProcCol::ALL);
        assert_eq!(s.theme.palette.warn, Color::Magenta);
        assert_eq!(s.theme.thresholds.await_warn_ms, 5.0);
        assert_eq!(s.theme.thresholds.await_crit_ms, 50.0);
        let pat = parse("[thresholds]\nseq_pct = 80\nrand_pct = 20\n", Path::new("t.toml")).unwrap();
        let s2 = resolve(&cli(&[]), &pat, false).unwrap();
        assert_eq!(
            s2.pattern,
            crate::model::trace::PatternThresholds { seq: 0.8, rand: 0.2 }
        );
        assert_eq!(s2.pattern.label(0.75), crate::model::pattern::Pattern::Mixed);
        assert_eq!(s.pattern, crate::model::trace::PatternThresholds::default());
        assert!(s.theme.color);
        let s = resolve(&cli(&["--interval", "0.5", "--no-color"]), &file, false).unwrap();
        assert_eq!(s.interval, Duration::from_millis(500));
        assert!(!s.theme.color);
        let d = resolve(&cli(&[]), &FileConfig::default(), true).unwrap();
        assert_eq!(d.interval, Duration::from_secs(1));
        assert!(!d.theme.color, "NO_COLOR wins over the default");
    }

    #[test]
    fn mistakes_are_reported_with_what_was_wrong() {
        let p = Path::new("/x/config.toml");
        let e = parse("intervall = 3\n", p).unwrap_err();
        assert!(format!("{e:#}").contains("/x/config.toml"), "{e:#}");
        let bad_col = parse("[columns]\nprocesses = [\"pid\", \"bogus\"]\n", p).unwrap();
        let e = resolve(&cli(&[]), &bad_col, false).unwrap_err();
        assert!(e.to_string().contains("bogus"), "{e}");
        let bad_color = parse("[colors]\naccent = \"blurple\"\n", p).unwrap();
        assert!(resolve(&cli(&[]), &bad_color, false).is_err());
        let crossed = parse("[thresholds]\nseq_pct = 40\nrand_pct = 60\n", p).unwrap();
        let e = resolve(&cli(&[]), &crossed, false).unwrap_err();
        assert!(e.to_string().contains("rand_pct 60 and seq_pct 40"), "{e}");
        let bad_interval = parse("interval = 0\n", p).unwrap();
        assert!(resolve(&cli(&[]), &bad_interval, false).is_err());
    }

    #[test]
    fn a_bad_value_in_the_file_names_its_key() {
        let p = Path::new("t.toml");
        for v in ["nan", "inf", "-inf", "0", "-1", "1e9"] {
            let f = parse(&format!("interval = {v}\n"), p).unwrap();
            let e = resolve(&cli(&[]), &f, false).unwrap_err().to_string();
            assert!(
                e.starts_with("interval must be between 0.05 and 3600 seconds"),
                "{v}: {e}"
            );
            // The command line's value is used (and checked) instead.
            let s = resolve(&cli(&["--interval", "2"]), &f, false).unwrap();
            assert_eq!(s.interval, Duration::from_secs(2));
        }
        let e = resolve(&cli(&["--interval", "NaN"]), &FileConfig::default(), false).unwrap_err();
        assert!(e.to_string().starts_with("--interval must be"), "{e}");
        let f = parse("[thresholds]\nawait_warn_ms = nan\n", p).unwrap();
        let e = resolve(&cli(&[]), &f, false).unwrap_err();
        assert_eq!(
            e.to_string(),
            "thresholds.await_warn_ms must be a number from 0 up, got NaN"
        );
    }

    #[test]
    fn a_parse_error_quotes_the_line_escaped() {
        let e = parse("color = tru\x1b]52;c;aGk=\x07\n", Path::new("/x/c\x1b.toml")).unwrap_err();
        let text = format!("{e:#}");
        assert!(
            text.starts_with("parsing config file /x/c\\x1b.toml: TOML parse error"),
            "{text}"
        );
        assert!(text.contains("1 | color = tru\\x1b]52;c;aGk=\\x07\n"), "{text}");
        assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{text:?}");
    }

    #[test]
    fn dev_null_is_no_file() {
        let (f, path) = read_file(Some(Path::new("/dev/null"))).unwrap();
        assert_eq!((f, path), (FileConfig::default(), None));
    }

    #[test]
    fn shipped_example_config_parses_to_the_defaults() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/config.toml");
        let text = std::fs::read_to_string(path).unwrap();
        let f = parse(&text, Path::new(path)).unwrap();
        let s = resolve(&cli(&[]), &f, false).unwrap();
        let d = resolve(&cli(&[]), &FileConfig::default(), false).unwrap();
        assert_eq!(s, d);
    }

    #[test]
    fn explicit_missing_file_is_an_error() {
        let e = read_file(Some(Path::new("/nonexistent/iolens.toml"))).unwrap_err();
        assert!(format!("{e:#}").contains("/nonexistent/iolens.toml"));
    }
}
