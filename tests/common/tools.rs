//! Small helpers shared by the live tests: is this root, is a tool there.
#![allow(dead_code)]

use std::process::{Command, Stdio};

pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Whether `tool` is on PATH.
pub fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// [`have`], printing the reason for the skip when the tool is missing.
pub fn need(tool: &str) -> bool {
    let ok = have(tool);
    if !ok {
        eprintln!("skipped: {tool} is not installed");
    }
    ok
}
