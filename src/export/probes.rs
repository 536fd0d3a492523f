//! The last probe result per device, for `iolens export --probe-results
//! FILE`: the exporter never runs a probe; it reads the results file that
//! `iolens probe` and the dashboard append to (one JSON object per line),
//! and exports the newest completed result of each device as gauges.
//!
//! The file is read again only when its size or modification time
//! changed, and only its last [`READ_CAP`] bytes.

use std::path::{Path, PathBuf};

use prometheus_client::encoding::DescriptorEncoder;

use crate::model::saved::SavedProbes;
use crate::probe::store::{READ_CAP, read_tail};

/// One device's newest completed probe, and the parser of the results
/// file's lines (shared with the findings and the device detail).
pub use crate::model::saved::{SavedProbe as LastProbe, parse};

/// The results file, read again when it changed.
#[derive(Debug, Clone)]
pub struct ResultsFile {
    pub path: PathBuf,
    seen: Option<(u64, std::time::SystemTime)>,
    pub last: Vec<LastProbe>,
    /// The same lines as the findings' basis ([`SavedProbes::from_text`]).
    pub saved: SavedProbes,
    /// The last read error, said once when it appears.
    pub error: Option<String>,
}

impl ResultsFile {
    pub fn new(path: &Path) -> Self {
        ResultsFile {
            path: path.to_path_buf(),
            seen: None,
            last: Vec::new(),
            saved: SavedProbes::default(),
            error: None,
        }
    }

    /// Read the file again if its size or mtime changed. A missing file
    /// is no probe yet, not an error. True when what was read changed.
    pub fn refresh(&mut self) -> bool {
        let meta = match std::fs::metadata(&self.path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let had = self.seen.take().is_some();
                self.last.clear();
                self.saved = SavedProbes::default();
                return had;
            }
            Err(e) => {
                self.fail(format!("reading {}: {e}", self.path.display()));
                return false;
            }
        };
        let stamp = (meta.len(), meta.modified().unwrap_or(std::time::UNIX_EPOCH));
        if self.seen == Some(stamp) {
            return false;
        }
        match read_tail(&self.path, READ_CAP) {
            Ok(text) => {
                self.last = parse(&text);
                self.saved = SavedProbes::from_text(&text);
                self.seen = Some(stamp);
                self.error = None;
                true
            }
            Err(e) => {
                self.fail(format!("reading {}: {e}", self.path.display()));
                false
            }
        }
    }

    fn fail(&mut self, e: String) {
        if self.error.as_ref() != Some(&e) {
            eprintln!("iolens: --probe-results: {e}");
        }
        self.error = Some(e);
    }
}

/// The probe gauges.
pub fn encode(probes: &[LastProbe], enc: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    use super::family::{Labels, gauge_family};
    use super::metrics::label;
    let dev = |p: &LastProbe| vec![("device", label(&p.device))];
    let each = |f: &dyn Fn(&LastProbe) -> Option<f64>| -> Vec<(Labels, f64)> {
        probes.iter().filter_map(|p| f(p).map(|v| (dev(p), v))).collect()
    };
    gauge_family(
        enc,
        "probe_info",
        "The device's last completed probe (iolens probe or the dashboard): its verdict, value 1",
        &probes
            .iter()
            .map(|p| (vec![("device", label(&p.device)), ("verdict", label(&p.verdict))], 1.0))
            .collect::<Vec<_>>(),
    )?;
    gauge_family(
        enc,
        "probe_timestamp_seconds",
        "When the device's last completed probe started, s since the Unix epoch",
        &each(&|p| Some(p.started_unix)),
    )?;
    gauge_family(
        enc,
        "probe_random_read_iops",
        "Last probe: random reads per second at queue depth 1",
        &each(&|p| p.random_iops),
    )?;
    gauge_family(
        enc,
        "probe_random_read_block_bytes",
        "Last probe: size of the random reads",
        &each(&|p| p.random_bs),
    )?;
    let lat: Vec<(Labels, f64)> = probes
        .iter()
        .flat_map(|p| {
            p.latency_s
                .iter()
                .map(|(q, s)| (vec![("device", label(&p.device)), ("percentile", (*q).to_string())], *s))
        })
        .collect();
    gauge_family(
        enc,
        "probe_read_latency_seconds",
        "Last probe: random read latency at these percentiles (100 = the slowest read)",
        &lat,
    )?;
    gauge_family(
        enc,
        "probe_seq_read_bytes_per_second",
        "Last probe: sequential read rate, median over the zones of the sweep",
        &each(&|p| p.seq_bps),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::{Status, example};

    fn line(status: Status, device: &str, started: u64) -> String {
        let mut r = example::result(status);
        r.started_unix = started;
        if let Some(d) = r.device.as_mut() {
            d.name = device.to_string();
        }
        crate::format::json(&r).unwrap()
    }

    #[test]
    fn the_newest_completed_result_per_device() {
        let text = [
            line(Status::Completed, "sda", 100),
            "{not json".to_string(),
            line(Status::Completed, "sdb", 150),
            line(Status::Completed, "sda", 200),
            // A cancelled probe does not replace a completed one.
            line(Status::Cancelled, "sda", 300),
        ]
        .join("\n");
        let p = parse(&text);
        assert_eq!(p.len(), 2);
        let sda = &p[0];
        assert_eq!((sda.device.as_str(), sda.started_unix), ("sda", 200.0));
        assert_eq!(sda.random_iops, Some(100.0));
        assert_eq!(sda.random_bs, Some(4096.0));
        // The example's latency summary, in seconds.
        let ex = example::result(Status::Completed).random.unwrap().latency;
        let q = |k: &str| sda.latency_s.iter().find(|(q, _)| *q == k).map(|(_, v)| *v);
        assert_eq!(q("50"), ex.p50_ms.map(|v| v / 1e3));
        assert_eq!(q("99"), ex.p99_ms.map(|v| v / 1e3));
        assert_eq!(q("100"), ex.max_ms.map(|v| v / 1e3));
        let ex = example::result(Status::Completed);
        assert_eq!(sda.seq_bps, ex.sweep.and_then(|s| s.median_mb_per_s).map(|m| m * 1e6));
        assert_eq!(p[1].device, "sdb");
    }

    /// A FIFO with no writer: `open` would wait forever in the sampler
    /// (`/metrics` then answers 503); it is an error at once, said once.
    #[test]
    fn a_fifo_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("probes.fifo");
        let mode = rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR;
        rustix::fs::mknodat(rustix::fs::CWD, &fifo, rustix::fs::FileType::Fifo, mode, 0).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let path = fifo.clone();
        std::thread::spawn(move || {
            let mut f = ResultsFile::new(&path);
            f.refresh();
            let _ = tx.send(f);
        });
        let f = rx
            .recv_timeout(std::time::Duration::from_secs(5))
            .expect("refresh of a FIFO still blocked after 5 s");
        assert!(f.last.is_empty());
        assert_eq!(
            f.error,
            Some(format!("reading {}: not a regular file (a FIFO)", fifo.display()))
        );
    }

    #[test]
    fn a_long_file_is_read_from_its_tail_at_a_line_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("probes.jsonl");
        let one = line(Status::Completed, "sda", 1) + "\n";
        let n = (READ_CAP as usize / one.len()) + 10;
        let mut text = one.repeat(n);
        text.push_str(&(line(Status::Completed, "sda", 2) + "\n"));
        std::fs::write(&path, &text).unwrap();
        let tail = read_tail(&path, READ_CAP).unwrap();
        assert!(tail.len() as u64 <= READ_CAP);
        assert!(tail.starts_with('{'), "{}", &tail[..40]);
        let mut f = ResultsFile::new(&path);
        assert!(f.refresh(), "read: changed");
        assert_eq!(f.last.len(), 1);
        assert_eq!(f.last[0].started_unix, 2.0);
        assert_eq!(f.error, None);
        // The findings' basis from the same lines.
        assert_eq!(f.saved.of("sda").map(|p| p.started_unix), Some(2.0));
        assert!(!f.refresh(), "unchanged file: not read again");
        std::fs::remove_file(&path).unwrap();
        assert!(f.refresh(), "gone: changed");
        assert!(f.saved.devices.is_empty() && f.last.is_empty());
        assert!(!f.refresh());
        // Missing: no probes, no error.
        let mut g = ResultsFile::new(&dir.path().join("none"));
        g.refresh();
        assert!(g.last.is_empty() && g.error.is_none());
    }
}
