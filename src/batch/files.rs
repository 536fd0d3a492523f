//! The files section of the batch text: the interval's busiest files (read
//! from disk into the page cache, folios dirtied), columns from
//! [`crate::present::files::FILE_COLUMNS`].

use std::fmt::Write as _;

use crate::format;
use crate::model::Model;
use crate::present::files::{FILE_COLUMNS, FILES_HEADING, FileColumn, NOT_TRACED, cell};

fn pad(out: &mut String, c: &FileColumn, text: &str) {
    let w = c.width;
    let _ = match (w, c.right) {
        (0, _) => write!(out, "{text}"),
        (_, true) => write!(out, "{text:>w$} "),
        (_, false) => write!(out, "{text:<w$} "),
    };
}

/// The section, or one line saying why there is none.
pub(super) fn lines(out: &mut String, model: &Model, top: usize) {
    let f = &model.trace.files;
    if !f.active {
        let why = f.reason.as_deref().unwrap_or(NOT_TRACED);
        let _ = writeln!(out, "\nfiles: off ({})", format::escape(why));
        return;
    }
    match model.trace.sampled() {
        Some(tag) => {
            let _ = writeln!(out, "\n{FILES_HEADING} (~trace {tag}: scaled)");
        }
        None => {
            let _ = writeln!(out, "\n{FILES_HEADING}");
        }
    }
    for c in &FILE_COLUMNS {
        pad(out, c, c.head);
    }
    out.push('\n');
    for i in 0..f.interval.files.len().min(top) {
        for c in &FILE_COLUMNS {
            pad(out, c, &cell(c.id, model, i));
        }
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::files::FilesView;

    /// A model state: a 64 MiB cold read of a named file by pid 300, a
    /// 32 MiB buffered write (1 MiB folios) by pid 400 of a file deleted
    /// since, kernel readahead of an unnamed file, over a 2 s interval.
    #[test]
    fn files_section() {
        let mut m = Model::default();
        m.interval_s = Some(2.0);
        m.trace.files = FilesView::example(300, 400);
        // the writer, sampled blocked 1.5 s of the 2 (on B, the second row)
        m.trace.files.interval.files[1].1.io.blocked_ns = 1_500_000_000;
        let mut out = String::new();
        lines(&mut out, &m, 10);
        insta::assert_snapshot!(out);
        let mut off = String::new();
        m.trace.files = FilesView::off("block tracing needs root");
        lines(&mut off, &m, 10);
        assert_eq!(off, "\nfiles: off (block tracing needs root)\n");
    }
}
