//! The per-file figures in a recording: the interval's busiest files
//! ([`MAX_RECORDED`] at most, as the views list them) with their names, in
//! a frame of their own after the sample (`frame::kind::FILES`).

use serde::{Deserialize, Serialize};

use crate::model::files::{FilesInterval, FilesView};

/// Files recorded per interval (the busiest).
pub const MAX_RECORDED: usize = 256;

/// One interval's files as recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RecordedFiles {
    pub interval: FilesInterval,
    /// The names of `interval.files`, in their order (as text: bytes that
    /// are not UTF-8 come back as U+FFFD).
    pub names: Vec<Option<String>>,
}

impl RecordedFiles {
    /// What to record of a view; `None` while the events are not traced.
    pub fn of(v: &FilesView) -> Option<RecordedFiles> {
        if !v.active {
            return None;
        }
        let mut interval = v.interval.clone();
        interval.files.truncate(MAX_RECORDED);
        let names = (0..interval.files.len())
            .map(|i| {
                v.names
                    .get(i)
                    .and_then(|n| n.as_deref())
                    .map(|n| String::from_utf8_lossy(n).into_owned())
            })
            .collect();
        Some(RecordedFiles { interval, names })
    }

    /// The view a replay shows.
    pub fn into_view(self) -> FilesView {
        FilesView {
            active: true,
            reason: None,
            names: self
                .names
                .into_iter()
                .map(|n| n.map(|s| s.into_bytes().into()))
                .collect(),
            interval: self.interval,
        }
    }
}
