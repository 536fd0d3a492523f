//! Probe results kept across sessions: one JSON object per line, appended
//! to `$XDG_STATE_HOME/iolens/probes.jsonl` (default
//! `~/.local/state/iolens/probes.jsonl`).

use std::io::Write;
use std::path::PathBuf;

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
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("creating {}: {e}", dir.display()))?;
    }
    let mut line = crate::format::json(r)?;
    line.push('\n');
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| anyhow::anyhow!("opening {}: {e}", path.display()))?;
    f.write_all(line.as_bytes())
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
    Ok(path)
}
