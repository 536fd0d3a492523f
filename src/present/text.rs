//! Text the outputs share about a process: its command line, its devices,
//! the label of the line for its exited threads and children.

use crate::format;
use crate::model::ProcRow;

/// The line under a process for what arrived from its exited threads and
/// reaped children (without exit records).
pub const CHILDREN_LABEL: &str = "↳ exited threads and children";

/// The command line; "[comm]" for kernel threads ("[loop0 backing I/O]
/// kworker/u8:3-loop0" for a loop worker); "(comm) cmdline" unless comm is
/// exactly what exec gives (see [`comm_from_argv0`]), so a changed comm is
/// never invisible.
pub fn command(p: &ProcRow) -> String {
    let (comm, cmd) = (&p.raw.comm, &p.raw.cmdline);
    if p.exited {
        return format!("{} (exited)", format::escape(comm));
    }
    if let Some(w) = &p.worker {
        return format!("[{}] {}", w.label(), format::escape(comm));
    }
    if cmd.is_empty() {
        return format!("[{}]", format::escape(comm));
    }
    if comm_from_argv0(comm, cmd) {
        format::escape(cmd)
    } else {
        format!("({}) {}", format::escape(comm), format::escape(cmd))
    }
}

/// Whether `comm` is exactly the kernel's comm for the command line `cmd`:
/// the basename of argv[0] cut to 15 bytes (TASK_COMM_LEN - 1), as exec
/// sets it. Both were read as lossy UTF-8: where either holds U+FFFD (bytes
/// that were not UTF-8, or a cut inside a character) the bytes cannot be
/// compared, so the comm is shown.
pub fn comm_from_argv0(comm: &str, cmd: &str) -> bool {
    const COMM_MAX: usize = 15;
    let argv0 = cmd.split(' ').next().unwrap_or("");
    let base = argv0.rsplit('/').next().unwrap_or(argv0);
    if base.contains('\u{FFFD}') || comm.contains('\u{FFFD}') {
        return false;
    }
    let cut = if base.len() > COMM_MAX {
        base.get(..COMM_MAX)
    } else {
        Some(base)
    };
    cut.is_some_and(|c| !c.is_empty() && c == comm)
}

/// The devices of the process's open files, comma-separated ("-" when its
/// files were not read or hold no storage).
pub fn devices_text(p: &ProcRow) -> String {
    if p.devices.is_empty() {
        return "-".to_string();
    }
    let names: Vec<String> = p.devices.iter().map(|d| format::escape(&d.name)).collect();
    names.join(",")
}

/// A CSV text field holding `text`, the value the text output shows
/// (already escaped once: control characters as `\x1b`, a backslash
/// doubled), quoted per RFC 4180: in quotes, with its quotes doubled, when
/// it holds a comma, a quote, CR or LF.
pub fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// Cut to `w` characters (display width of escaped ASCII-ish text).
pub fn truncate(s: &str, w: usize) -> String {
    if s.chars().count() <= w {
        s.to_string()
    } else if w == 0 {
        String::new()
    } else {
        let mut out: String = s.chars().take(w - 1).collect();
        out.push('…');
        out
    }
}
