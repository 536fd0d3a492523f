//! Probe results kept across sessions: one JSON object per line, appended
//! to `$XDG_STATE_HOME/iolens/probes.jsonl` (default
//! `~/.local/state/iolens/probes.jsonl`).

use std::io::{Read, Seek, SeekFrom, Write};
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

/// At most this much of the end of the results file is read.
pub const READ_CAP: u64 = 4 << 20;

/// The last `cap` bytes of a regular file, from its first whole line. A
/// FIFO, a device or a directory is an error at once, never a wait in
/// `open` ([`crate::sys::input::open_regular`]).
pub fn read_tail(path: &Path, cap: u64) -> std::io::Result<String> {
    let mut f = crate::sys::input::open_regular(path)?;
    let len = f.metadata()?.len();
    let from = len.saturating_sub(cap);
    f.seek(SeekFrom::Start(from))?;
    let mut buf = Vec::new();
    f.take(cap).read_to_end(&mut buf)?;
    if from > 0 {
        // Cut inside a line: start after its end.
        let skip = buf.iter().position(|b| *b == b'\n').map_or(buf.len(), |i| i + 1);
        buf.drain(..skip);
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// The saved results of each device, from the last [`READ_CAP`] bytes of
/// the results file at `path` (the default file where `None`): a missing
/// file is no results; a file that cannot be read says so in `error`.
pub fn load_saved(path: Option<&Path>) -> crate::model::saved::SavedProbes {
    use crate::model::saved::SavedProbes;
    let Some(path) = path.map(Path::to_path_buf).or_else(results_path) else {
        return SavedProbes::default();
    };
    match read_tail(&path, READ_CAP) {
        Ok(text) => SavedProbes::from_text(&text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => SavedProbes::default(),
        Err(e) => SavedProbes {
            error: Some(format!("reading {}: {e}", path.display())),
            ..Default::default()
        },
    }
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
