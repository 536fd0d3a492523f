//! The files a job's processes read, traced (root only): a small tracefs
//! instance of its own, `iolens-<pid>-<start time>-jobs`, beside the block
//! tracer's, with two events enabled:
//!
//! - `filemap:mm_filemap_get_pages` (`s_dev`, `i_ino`, `index`,
//!   `last_index`): fires at every `read()`, `splice` or `copy_file_range`
//!   of a page-cache file, cache hits included;
//! - `filemap:mm_filemap_add_to_page_cache`: the read path that creates a
//!   folio itself (`filemap_create_folio`) returns before the first
//!   event fires.
//!
//! Both filtered in the kernel to the first page of a file (`index == 0`:
//! one or two events per file read from its start, whatever its size) and
//! to the copy tools' command names (`comm`), so that a job started after
//! the instance is on is traced from its first read, before iolens lists
//! it. (A pid filter, `set_event_pid` with `event-fork`, can only name
//! processes iolens already saw: a job's root is always older than that.)
//! The buffers are read without blocking at each pass; what the events
//! mean is model code (`model::jobs::files`).

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::instance::{CpuStats, Mount, Owner, make_dir, remove_stale, write_file};
use super::layout::{EventFormat, parse_event_format, parse_header_event, parse_header_page};
use super::page::{Layout, Page, RawEvent, read_uint};
use super::read_small;
use super::reader::cpus;

/// The instance name's suffix (after the owner's, see [`Owner`]).
pub const SUFFIX: &str = "-jobs";

/// The tracepoints, under `events/filemap/`.
pub const EVENTS: [&str; 2] = ["mm_filemap_get_pages", "mm_filemap_add_to_page_cache"];

/// Per-CPU ring buffer in KiB: events are one or two per file, 40 bytes
/// each: 512 KiB holds about 13,000 files per CPU between two passes.
pub const BUFFER_KB: u64 = 512;

/// A read of a file's first page by a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileRead {
    /// The task (thread id).
    pub pid: i32,
    /// `major << 32 | minor` of the file's superblock device.
    pub dev: u64,
    pub ino: u64,
}

#[derive(Debug, Clone, Copy)]
struct Loc {
    id: u16,
    pid: (usize, usize),
    dev: (usize, usize),
    ino: (usize, usize),
}

/// Decodes the two events from their `format` files.
#[derive(Debug, Clone)]
pub struct ReadDecoder {
    pub layout: Layout,
    events: Vec<Loc>,
}

fn loc(f: &EventFormat) -> Result<Loc, String> {
    let get = |n: &str| {
        f.field(n)
            .map(|x| (x.offset, x.size))
            .ok_or_else(|| format!("{} has no {n} field", f.name))
    };
    Ok(Loc {
        id: f.id,
        pid: get("common_pid")?,
        dev: get("s_dev")?,
        ino: get("i_ino")?,
    })
}

impl ReadDecoder {
    /// Load the layouts from an `events` directory (an instance's, or a
    /// fixture with the same files); both events are needed.
    pub fn load(events: &Path) -> Result<ReadDecoder, String> {
        let hp = read_small(&events.join("header_page"))?;
        let he = read_small(&events.join("header_event"))?;
        let layout = Layout {
            page: parse_header_page(&hp).map_err(|e| format!("header_page: {e}"))?,
            event: parse_header_event(&he).map_err(|e| format!("header_event: {e}"))?,
        };
        let mut out = Vec::new();
        for name in EVENTS {
            let p = events.join("filemap").join(name).join("format");
            let f = parse_event_format(&read_small(&p)?).map_err(|e| format!("{}: {e}", p.display()))?;
            out.push(loc(&f)?);
        }
        Ok(ReadDecoder { layout, events: out })
    }

    pub fn decode(&self, ev: &RawEvent<'_>) -> Option<FileRead> {
        let p = ev.payload;
        let id = read_uint(p, 0, 2)? as u16;
        let l = self.events.iter().find(|l| l.id == id)?;
        let dev = read_uint(p, l.dev.0, l.dev.1)?;
        Some(FileRead {
            pid: read_uint(p, l.pid.0, l.pid.1)? as u32 as i32,
            dev: ((dev >> 20) << 32) | (dev & ((1 << 20) - 1)),
            ino: read_uint(p, l.ino.0, l.ino.1)?,
        })
    }

    /// Decode one page into `out`; returns the events lost before it
    /// (1 when the page says some were, without their number) or `None`
    /// for a page that could not be read.
    pub fn decode_page(&self, buf: &[u8], out: &mut Vec<FileRead>) -> Option<u64> {
        let page = Page::parse(buf, &self.layout).ok()?;
        for ev in page.events() {
            match ev {
                Ok(raw) => out.extend(self.decode(&raw)),
                Err(_) => return None,
            }
        }
        Some(if page.missed.flagged {
            page.missed.count.unwrap_or(1).max(1)
        } else {
            0
        })
    }
}

/// The kernel filter of both events: the first page, the tools' names.
pub fn filter(comms: &[&str]) -> String {
    let names: Vec<String> = comms.iter().map(|c| format!("comm == \"{c}\"")).collect();
    format!("index == 0 && ({})", names.join(" || "))
}

/// The jobs' instance, its open buffers; removed on drop.
#[derive(Debug)]
pub struct ReadTrace {
    dir: PathBuf,
    pipes: Vec<(usize, File)>,
    decoder: ReadDecoder,
    buf: Vec<u8>,
    /// CLOCK_BOOTTIME ns read right after tracing was switched on.
    pub on_boot_ns: u64,
    /// Events lost: flagged in pages, or counted in the CPUs' stats.
    lost_pages: u64,
    lost_stats: u64,
    _mount: Mount,
}

impl ReadTrace {
    /// Create the instance, trace the reads of processes named `comms`.
    pub fn start(comms: &[&str]) -> Result<ReadTrace, String> {
        if !crate::sys::is_root() {
            return Err("tracing the files a job reads needs root".into());
        }
        let mount = Mount::get()?;
        for r in remove_stale(&mount.dir) {
            r.map_err(|e| format!("a stale iolens instance could not be removed: {e}"))?;
        }
        let dir = mount.dir.join("instances").join(Owner::own_name() + SUFFIX);
        make_dir(&dir)?;
        let decoder = match ReadDecoder::load(&dir.join("events")) {
            Ok(d) => d,
            Err(e) => {
                let _ = std::fs::remove_dir(&dir);
                return Err(e);
            }
        };
        // From here on the instance is removed on any error (drop).
        let mut t = ReadTrace {
            dir,
            pipes: Vec::new(),
            decoder,
            buf: Vec::new(),
            on_boot_ns: 0,
            lost_pages: 0,
            lost_stats: 0,
            _mount: mount,
        };
        t.configure(comms)?;
        Ok(t)
    }

    fn configure(&mut self, comms: &[&str]) -> Result<(), String> {
        let d = self.dir.clone();
        write_file(&d.join("tracing_on"), "0")?;
        write_file(&d.join("buffer_size_kb"), &BUFFER_KB.to_string())?;
        write_file(&d.join("trace_clock"), "mono")?;
        let f = filter(comms);
        for name in EVENTS {
            let ev = d.join("events/filemap").join(name);
            write_file(&ev.join("filter"), &f)?;
            write_file(&ev.join("enable"), "1")?;
        }
        for cpu in cpus(&d.join("per_cpu")) {
            let path = d.join("per_cpu").join(format!("cpu{cpu}")).join("trace_pipe_raw");
            let file = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&path)
                .map_err(|e| format!("opening {}: {e}", path.display()))?;
            self.pipes.push((cpu, file));
        }
        self.buf = vec![0; self.decoder.layout.page.page_size()];
        write_file(&d.join("tracing_on"), "1")?;
        self.on_boot_ns = crate::collect::taskstats::boot_ns();
        Ok(())
    }

    /// Read what every CPU's buffer holds, without waiting (at most a full
    /// buffer's pages per CPU), into `out`.
    pub fn poll(&mut self, out: &mut Vec<FileRead>) {
        let max = (BUFFER_KB as usize * 1024 / self.buf.len().max(1)) + 4;
        for (_, f) in &mut self.pipes {
            for _ in 0..max {
                match f.read(&mut self.buf) {
                    Ok(0) => break,
                    Ok(n) => match self.decoder.decode_page(&self.buf[..n], out) {
                        Some(lost) => self.lost_pages += lost,
                        None => self.lost_pages += 1,
                    },
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                }
            }
        }
        let mut lost = 0;
        for (cpu, _) in &self.pipes {
            let p = self.dir.join("per_cpu").join(format!("cpu{cpu}")).join("stats");
            if let Ok(t) = read_small(&p) {
                lost += CpuStats::parse(&t).lost();
            }
        }
        self.lost_stats = self.lost_stats.max(lost);
    }

    /// Events lost since tracing started (an undecodable page counts one).
    pub fn lost(&self) -> u64 {
        self.lost_pages.max(self.lost_stats)
    }
}

impl Drop for ReadTrace {
    fn drop(&mut self) {
        self.pipes.clear();
        let _ = write_file(&self.dir.join("tracing_on"), "0");
        let _ = std::fs::remove_dir(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/reads-6.18");

    #[test]
    fn the_kernel_filter() {
        assert_eq!(
            filter(&["tar", "cp"]),
            "index == 0 && (comm == \"tar\" || comm == \"cp\")"
        );
    }

    /// A page captured on 6.18 while `tar` and `cp -r` read a tree of 5
    /// files (`tests/fixtures/reads-6.18/capture.sh`): its events as the
    /// kernel's own text (`trace.txt`) shows them.
    #[test]
    fn captured_page() {
        let d = ReadDecoder::load(&Path::new(DIR).join("events")).unwrap();
        let mut out = Vec::new();
        let raw = std::fs::read(format!("{DIR}/cpu.raw")).unwrap();
        let mut lost = 0;
        for p in raw.chunks(d.layout.page.page_size()) {
            lost += d.decode_page(p, &mut out).unwrap();
        }
        assert_eq!(lost, 0);
        let text = std::fs::read_to_string(format!("{DIR}/trace.txt")).unwrap();
        let want: Vec<FileRead> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let pid = l.split_whitespace().next()?.rsplit_once('-')?.1.parse().ok()?;
                let (dev, rest) = l.split_once("dev")?.1.trim_start_matches([' ', '=']).split_once(' ')?;
                let (maj, min) = dev.split_once(':')?;
                let ino = rest.trim_start_matches("ino").trim_start_matches([' ', '=']);
                let ino = ino.split_whitespace().next()?;
                Some(FileRead {
                    pid,
                    dev: (maj.parse::<u64>().ok()? << 32) | min.parse::<u64>().ok()?,
                    ino: u64::from_str_radix(ino, 16).ok()?,
                })
            })
            .collect();
        assert!(want.len() >= 10, "{want:?}");
        assert_eq!(out, want);
    }
}
