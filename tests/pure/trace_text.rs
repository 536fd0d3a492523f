//! The kernel's own text rendering of trace events (the `trace` file),
//! the ground truth the decoder tests compare with.

/// `  dd-16991   (  16991) [001] .....   619.747605: block_io_start: 7,0 ...`
/// → (the timestamp in µs, the pid, `block_io_start: 7,0 ...`).
pub fn split_line(line: &str) -> Option<(u64, i32, &str)> {
    let (head, rest) = line.split_once(": ")?;
    let task = head.trim_start().split(" (").next()?.trim_end();
    let pid = task.rsplit_once('-')?.1.parse().ok()?;
    let ts = head.rsplit(' ').next()?;
    let (s, us) = ts.split_once('.')?;
    let us = s.parse::<u64>().ok()? * 1_000_000 + us.parse::<u64>().ok()?;
    Some((us, pid, rest))
}
