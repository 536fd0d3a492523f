//! Probe results kept across sessions: one JSON object per line, appended
//! to `$XDG_STATE_HOME/iolens/probes.jsonl` (default
//! `~/.local/state/iolens/probes.jsonl`).

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::ProbeResult;

/// The results file, from `XDG_STATE_HOME` or `HOME`; `None` when neither
/// is set to an absolute path.
pub fn results_path() -> Option<PathBuf> {
    let abs = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    let base = std::env::var_os("XDG_STATE_HOME")
        .and_then(abs)
        .or_else(|| std::env::var_os("HOME").and_then(abs).map(|h| h.join(".local/state")))?;
    Some(base.join("iolens").join("probes.jsonl"))
}

/// Append `r` as one line; returns the file written.
pub fn append(r: &ProbeResult) -> anyhow::Result<PathBuf> {
    let path =
        results_path().ok_or_else(|| anyhow::anyhow!("neither XDG_STATE_HOME nor HOME is set: results not saved"))?;
    append_to(&path, r)?;
    Ok(path)
}

/// Append `r` as one line to `path` (its directory created if missing).
pub fn append_to(path: &Path, r: &ProbeResult) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("creating {}: {e}", dir.display()))?;
    }
    // Never a device, FIFO or symlink: results go into a regular file only.
    if let Ok(m) = std::fs::symlink_metadata(path)
        && !m.is_file()
    {
        anyhow::bail!("{}: not a regular file: results not saved", path.display());
    }
    let mut line = crate::format::json(r)?;
    line.push('\n');
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| anyhow::anyhow!("opening {}: {e}", path.display()))?;
    f.write_all(line.as_bytes())
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::{Status, example};

    #[test]
    fn results_go_to_regular_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/probes.jsonl");
        let r = example::result(Status::Completed);
        append_to(&path, &r).unwrap();
        append_to(&path, &r).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 2);
        let e = append_to(Path::new("/dev/null"), &r).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert!(append_to(&link, &r).is_err());
    }
}
