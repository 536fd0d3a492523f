//! Compiles and tests the progress pane (src/ui/progress.rs) until the
//! dashboard's `ui` module includes it; then this file can go.
use iolens::{collect, format, model};

#[path = "../src/ui/progress.rs"]
#[allow(dead_code)]
mod progress;
