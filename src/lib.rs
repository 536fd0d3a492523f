//! iolens: live disk analysis for Linux.
//!
//! Data flows one way: [`collect`] (the only code touching /proc and /sys)
//! → [`model`] (pure arithmetic over raw samples) → views (batch output and
//! the dashboard).

pub mod batch;
pub mod cli;
pub mod collect;
pub mod format;
pub mod model;
pub mod probe;
pub mod progress;

/// Dashboard panes. Only the probe results pane lives here so far; when the
/// dashboard's `src/ui/mod.rs` exists this inline module becomes `pub mod
/// ui;` with `pub mod results;` inside it.
pub mod ui {
    pub mod results;
}
