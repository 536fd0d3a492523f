//! iolens: live disk analysis for Linux.
//!
//! Data flows one way: [`collect`] (the only code touching /proc and /sys)
//! → [`model`] (pure arithmetic over raw samples) → views (batch output and
//! the dashboard).

pub mod app;
pub mod batch;
pub mod batch_cgroups;
pub mod cli;
pub mod collect;
pub mod config;
pub mod format;
pub mod model;
pub mod probe;
pub mod progress;
pub mod sys;
pub mod tracer;
pub mod ui;
