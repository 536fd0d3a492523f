//! The per-file counters of the page-cache events: bytes read from storage
//! into a file's cache and folios dirtied, accumulated since iolens
//! started. The busiest files (by a decayed ranking with hysteresis, as
//! for commands: [`super::metrics::rerank`]) get their own series, labelled
//! by device, inode and the file's name when its series began; the rest
//! are summed under `file="other"`. Bounded: at most `top` own series
//! plus `other` per counter, and [`MAX_FILES`] files ranked. Nothing is
//! exported while the events are not traced (no made-up 0).

use std::collections::HashMap;

use prometheus_client::encoding::DescriptorEncoder;

use super::family::{Labels, counter_family};
use super::metrics::{DECAY, OTHER, Ranked, label, rerank};
use crate::model::Model;
use crate::model::files::FileKey;
use crate::present::files::{FILE_COLUMNS, FileCol};

/// Files ranked at most (the least active ones without a series are
/// forgotten).
pub const MAX_FILES: usize = 4096;

/// The exported counters, in the order of [`amounts`].
const COLS: [FileCol; 3] = [FileCol::Read, FileCol::Dirtied, FileCol::Blocked];

/// The file's name and its device's, unescaped ([`label`] escapes them):
/// the path, else "inode N on DEV"; the device row's name, else "MAJ:MIN".
fn raw_names(m: &Model, key: FileKey, path: Option<&[u8]>) -> (String, String) {
    let d = key.dev;
    let device = m
        .devices
        .iter()
        .find(|r| r.major == d.major && r.minor == d.minor)
        .map_or_else(|| format!("{}:{}", d.major, d.minor), |r| r.name.clone());
    let file = path.map_or_else(
        || format!("inode {} on {device}", key.ino),
        |p| String::from_utf8_lossy(p).into_owned(),
    );
    (file, device)
}

#[derive(Debug, Clone, Default)]
struct Tracked {
    /// The labels, fixed when its own series first began.
    file: String,
    device: String,
    /// Accumulated while the file was exported on its own series.
    own: [f64; 3],
    rank: Ranked,
}

/// The per-file counters.
#[derive(Debug, Clone, Default)]
pub struct Files {
    /// The page-cache events were traced at the last sample.
    active: bool,
    files: HashMap<FileKey, Tracked>,
    other: [f64; 3],
}

impl Files {
    /// Fold in the model's last interval; `top` files get their own series.
    pub fn update(&mut self, m: &Model, top: usize) {
        let f = &m.trace.files;
        self.active = f.active;
        if !f.active {
            return;
        }
        for t in self.files.values_mut() {
            t.rank.recent *= DECAY;
        }
        for (key, row) in &f.interval.files {
            let busy = row.io.busy() as f64;
            if let Some(t) = self.files.get_mut(key) {
                t.rank.recent += busy;
            } else if self.files.len() < MAX_FILES {
                let mut t = Tracked::default();
                t.rank.recent = busy;
                self.files.insert(*key, t);
            }
        }
        rerank(
            self.files.iter_mut().map(|(k, t)| (k, &mut t.rank)).collect(),
            top.max(1),
        );
        for (i, (key, row)) in f.interval.files.iter().enumerate() {
            let a = [
                row.io.read as f64,
                row.io.dirtied as f64,
                row.io.blocked_ns as f64 / 1e9,
            ];
            let target = match self.files.get_mut(key) {
                Some(t) if t.rank.exported => {
                    if t.file.is_empty() {
                        (t.file, t.device) = raw_names(m, *key, f.names.get(i).and_then(|n| n.as_deref()));
                    }
                    &mut t.own
                }
                _ => &mut self.other,
            };
            for (x, y) in target.iter_mut().zip(a) {
                *x += y;
            }
        }
        if self.files.len() > MAX_FILES / 2 {
            self.files.retain(|_, t| t.rank.exported || t.rank.recent >= 1.0);
        }
    }

    /// The files with a series of their own, by label.
    #[cfg(any(test, feature = "test-support"))]
    pub fn exported(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self
            .files
            .values()
            .filter(|t| t.rank.exported)
            .map(|t| t.file.as_str())
            .collect();
        v.sort_unstable();
        v
    }

    pub fn encode(&self, enc: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        if !self.active && self.files.is_empty() && self.other == [0.0; 3] {
            return Ok(());
        }
        let mut own: Vec<(&FileKey, &Tracked)> = self.files.iter().filter(|(_, t)| t.rank.exported).collect();
        own.sort_by(|a, b| a.0.cmp(b.0));
        for (i, id) in COLS.iter().enumerate() {
            let Some((name, help)) = FILE_COLUMNS.iter().find(|c| c.id == *id).and_then(|c| c.metric) else {
                continue;
            };
            let mut series: Vec<(Labels, f64)> = own
                .iter()
                .map(|(k, t)| {
                    let labels = vec![
                        ("device", label(&t.device)),
                        ("inode", k.ino.to_string()),
                        ("file", label(&t.file)),
                    ];
                    (labels, t.own[i])
                })
                .collect();
            let other = vec![
                ("device", String::new()),
                ("inode", String::new()),
                ("file", OTHER.to_string()),
            ];
            series.push((other, self.other[i]));
            counter_family(enc, name, help, &series)?;
        }
        Ok(())
    }
}
