//! The total of a job: a bounded walk of its sources in a child process
//! (`iolens __walk REQUEST`), never in the sampler. A `stat` on a hung FUSE
//! or network filesystem blocks uninterruptibly, and a thread stuck so
//! cannot be killed; a child can be abandoned. The child prints its counts
//! as it goes (`p FILES BYTES`, at most every 100 ms), then `d FILES BYTES
//! SKIPPED`, on a pipe the parent reads without blocking.
//!
//! The walk never enters a FUSE, network or automount filesystem (the
//! mount table's [`may_block`](super::mountinfo::may_block) types, checked
//! by path before the mount point is stat'ed) unless asked
//! (`--walk-network`); stays on each root's filesystem when the tool does;
//! counts a file with several links once when the tool does (a set of
//! (dev, ino) kept only for such files: no path is kept, so 100,000 files
//! cost a few hundred bytes of stack, not their names); and counts a sparse
//! file's allocated bytes when the tool skips holes.
//!
//! For the job's files done, the child also prints the identity of every
//! regular file it counted (`i MAJOR:MINOR INO…`, hex inode numbers, at
//! most [`MAX_IDS`]; `o` when there were more) before its last line, which
//! then adds the files a read trace may miss: empty, several-link and
//! sparse ones.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::{BufRead, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// What to walk, as the parent resolved it (absolute paths).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// Each source as the paths it may be (a relative operand of a tool
    /// that changed directory): the first that exists is walked.
    pub roots: Vec<Vec<PathBuf>>,
    /// (list file, base directory of its names).
    pub lists: Vec<(PathBuf, PathBuf)>,
    pub excludes: Vec<Vec<u8>>,
    pub recurse: bool,
    pub one_fs: bool,
    pub links_once: bool,
    pub holes_skipped: bool,
    /// Walk into FUSE, network and automount filesystems too.
    pub network: bool,
}

/// Counts so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub files: u64,
    pub bytes: u64,
    /// Mount points (and list entries) not walked: FUSE, network, automount.
    pub skipped: u64,
    /// Sources not found (by any of their paths).
    pub missing: u64,
    /// Regular files counted that hold no byte (read without a page).
    pub empty: u64,
    /// Regular files counted with more than one link.
    pub linked: u64,
    /// Regular files counted with fewer blocks than their size (holes).
    pub sparse: u64,
}

/// The most file identities a walk prints (16 bytes each in the parent:
/// 16 MiB).
pub const MAX_IDS: usize = 1 << 20;

/// A file's identity as the trace and the walk both give it: the
/// device's `major << 32 | minor`, and the inode number.
pub type FileId = (u64, u64);

/// The device part of a [`FileId`] from a `st_dev`.
pub fn dev_key(st_dev: u64) -> u64 {
    (u64::from(rustix::fs::major(st_dev)) << 32) | u64::from(rustix::fs::minor(st_dev))
}

/// Deepest directory nesting walked.
const MAX_DEPTH: usize = 512;
/// Longest file list read (names), and the longest name line.
const MAX_LIST_BYTES: u64 = 256 << 20;

struct Walker<'a> {
    req: &'a Request,
    blocked: Vec<PathBuf>,
    links: HashSet<(u64, u64)>,
    ids: Vec<FileId>,
    ids_over: bool,
    c: Counts,
    last: Instant,
    out: std::io::StdoutLock<'static>,
}

impl Walker<'_> {
    fn excluded(&self, name: &[u8]) -> bool {
        self.req.excludes.iter().any(|p| name_matches(p, name))
    }

    fn report(&mut self) {
        if self.last.elapsed() >= Duration::from_millis(100) {
            self.last = Instant::now();
            let _ = writeln!(self.out, "p {} {}", self.c.files, self.c.bytes);
            let _ = self.out.flush();
        }
    }

    fn file(&mut self, md: &std::fs::Metadata, path: &Path) {
        let ft = md.file_type();
        let bytes = if ft.is_file() {
            if self.req.links_once && md.nlink() > 1 && !self.links.insert((md.dev(), md.ino())) {
                return;
            }
            if md.size() == 0 {
                self.c.empty += 1;
            }
            if md.nlink() > 1 {
                self.c.linked += 1;
            }
            if md.blocks().saturating_mul(512) < md.size() {
                self.c.sparse += 1;
            }
            if self.ids.len() < MAX_IDS {
                self.ids.push((dev_key(md.dev()), md.ino()));
            } else {
                self.ids_over = true;
            }
            if self.req.holes_skipped {
                md.size().min(md.blocks().saturating_mul(512))
            } else {
                md.size()
            }
        } else if ft.is_block_device() {
            block_size(md.rdev()).unwrap_or(0)
        } else {
            let _ = path;
            return;
        };
        self.c.files += 1;
        self.c.bytes += bytes;
        self.report();
    }

    /// Walk `path` (already known not to be a blocked mount point).
    fn walk(&mut self, path: &mut PathBuf, root_dev: Option<u64>, depth: usize) {
        let Ok(md) = std::fs::symlink_metadata(&*path) else {
            return;
        };
        if !md.is_dir() {
            self.file(&md, path);
            return;
        }
        if !self.req.recurse && depth > 0 || depth > MAX_DEPTH {
            return;
        }
        if self.req.one_fs && root_dev.is_some_and(|d| d != md.dev()) {
            return;
        }
        let root_dev = root_dev.or(Some(md.dev()));
        let Ok(rd) = std::fs::read_dir(&*path) else {
            return;
        };
        for e in rd.flatten() {
            let name = e.file_name();
            if self.excluded(name.as_bytes()) {
                continue;
            }
            path.push(&name);
            match e.file_type() {
                Ok(t) if t.is_dir() => {
                    if self.blocked.iter().any(|b| b == path) {
                        self.c.skipped += 1;
                    } else {
                        self.walk(path, root_dev, depth + 1);
                    }
                }
                Ok(_) => {
                    if let Ok(md) = e.metadata() {
                        self.file(&md, path);
                    }
                }
                Err(_) => {}
            }
            path.pop();
        }
    }

    /// Whether `p` is on (or is) a blocked mount.
    fn under_blocked(&self, p: &Path) -> bool {
        self.blocked.iter().any(|b| p.starts_with(b))
    }

    fn root(&mut self, p: &Path) {
        if self.under_blocked(p) {
            self.c.skipped += 1;
            return;
        }
        if p.file_name().is_some_and(|n| self.excluded(n.as_bytes())) {
            return;
        }
        self.walk(&mut p.to_path_buf(), None, 0);
    }

    fn list(&mut self, list: &Path, base: &Path) {
        if self.under_blocked(list) {
            self.c.skipped += 1;
            return;
        }
        let Ok(f) = crate::sys::input::open_regular(list) else {
            return;
        };
        let mut r = std::io::BufReader::new(f.take(MAX_LIST_BYTES));
        let mut line = Vec::new();
        while r.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
            let name = line.strip_suffix(b"\n").unwrap_or(&line);
            if !name.is_empty() {
                let p = base.join(std::ffi::OsStr::from_bytes(name));
                self.root(&p);
            }
            line.clear();
        }
    }
}

/// The size of a block device from sysfs (opening it may be refused even
/// to root), bytes.
fn block_size(rdev: u64) -> Option<u64> {
    let (maj, min) = (rustix::fs::major(rdev), rustix::fs::minor(rdev));
    let s = std::fs::read_to_string(format!("/sys/dev/block/{maj}:{min}/size")).ok()?;
    s.trim().parse::<u64>().ok()?.checked_mul(512)
}

/// Mount points the walk must not enter.
fn blocked_mounts() -> Vec<PathBuf> {
    let Ok(text) = std::fs::read("/proc/self/mountinfo") else {
        return Vec::new();
    };
    super::mountinfo::parse(&text)
        .into_iter()
        .filter(|m| super::mountinfo::may_block(&m.fs_type))
        .map(|m| PathBuf::from(m.mount_point))
        .collect()
}

/// The child: `iolens __walk REQUEST-JSON`.
pub fn child_main(arg: Option<&std::ffi::OsStr>) -> ExitCode {
    let Some(req) = arg.and_then(|a| serde_json::from_slice::<Request>(a.as_bytes()).ok()) else {
        eprintln!("iolens __walk: a walk request (JSON) expected");
        return ExitCode::from(2);
    };
    let mut w = Walker {
        req: &req,
        blocked: if req.network { Vec::new() } else { blocked_mounts() },
        links: HashSet::new(),
        ids: Vec::new(),
        ids_over: false,
        c: Counts::default(),
        last: Instant::now(),
        out: std::io::stdout().lock(),
    };
    for alts in &req.roots {
        // symlink_metadata only where no blocked mount is on the way.
        match alts
            .iter()
            .find(|p| !w.under_blocked(p) && std::fs::symlink_metadata(p).is_ok())
        {
            Some(p) => w.root(p),
            None if alts.iter().any(|p| w.under_blocked(p)) => w.c.skipped += 1,
            None => w.c.missing += 1,
        }
    }
    for (l, b) in &req.lists {
        w.list(l, b);
    }
    let c = w.c;
    let mut ids = std::mem::take(&mut w.ids);
    ids.sort_unstable();
    for chunk in ids.chunk_by(|a, b| a.0 == b.0) {
        for part in chunk.chunks(64) {
            let mut line = format!("i {}:{}", part[0].0 >> 32, part[0].0 & 0xffff_ffff);
            for (_, ino) in part {
                let _ = write!(line, " {ino:x}");
            }
            let _ = writeln!(w.out, "{line}");
        }
    }
    if w.ids_over {
        let _ = writeln!(w.out, "o");
    }
    let _ = writeln!(
        w.out,
        "d {} {} {} {} {} {} {}",
        c.files, c.bytes, c.skipped, c.missing, c.empty, c.linked, c.sparse
    );
    let _ = w.out.flush();
    ExitCode::SUCCESS
}

/// Where a walk is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum WalkState {
    Counting { so_far: Counts },
    Done { total: Counts },
    Failed { why: String },
}

/// A walk running in a child process.
#[derive(Debug)]
pub struct Walk {
    child: Child,
    out: std::process::ChildStdout,
    buf: Vec<u8>,
    deadline: Instant,
    /// When the child last printed a line (or started).
    heard: Instant,
    pub state: WalkState,
    /// The regular files counted (sorted, once the walk is done), unless
    /// there were more than [`MAX_IDS`] (`ids_over`).
    pub ids: Vec<FileId>,
    pub ids_over: bool,
}

/// A walk that prints nothing for this long is stuck (a hung FUSE or
/// network mount: its stat or readdir never returns) and is ended: the
/// child counts a file at least every few milliseconds on a disk, and
/// prints at most every 100 ms while it does.
pub const WALK_STALL: Duration = Duration::from_secs(5);

impl Walk {
    /// Start `iolens __walk` for `req`, ending it after `limit`.
    pub fn start(req: &Request, limit: Duration) -> Result<Walk, String> {
        let exe = std::env::current_exe().map_err(|e| format!("finding iolens's own executable: {e}"))?;
        let json = serde_json::to_string(req).map_err(|e| format!("encoding the walk request: {e}"))?;
        let mut child = Command::new(exe)
            .arg("__walk")
            .arg(json)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting the walk: {e}"))?;
        let out = child.stdout.take().ok_or("the walk's pipe")?;
        rustix::fs::fcntl_setfl(&out, rustix::fs::OFlags::NONBLOCK).map_err(|e| format!("walk pipe: {e}"))?;
        Ok(Walk {
            child,
            out,
            buf: Vec::new(),
            deadline: Instant::now() + limit,
            heard: Instant::now(),
            state: WalkState::Counting {
                so_far: Counts::default(),
            },
            ids: Vec::new(),
            ids_over: false,
        })
    }

    /// Read what the child printed (never blocks); end it past its
    /// deadline. True while it runs.
    pub fn poll(&mut self) -> bool {
        if !matches!(self.state, WalkState::Counting { .. }) {
            let _ = self.child.try_wait();
            return false;
        }
        // Everything the child printed, up to 32 MiB a poll (its file
        // identities come at the end: 1,000,000 files print about 9 MB).
        let mut chunk = [0u8; 65536];
        let mut taken = 0usize;
        while taken < 32 << 20 {
            match self.out.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    taken += n;
                    self.buf.extend_from_slice(&chunk[..n]);
                    self.lines();
                    // A line longer than any the child prints: not ours.
                    if self.buf.len() > 1 << 16 {
                        self.buf.clear();
                    }
                }
            }
        }
        if matches!(self.state, WalkState::Counting { .. }) && self.heard.elapsed() >= WALK_STALL {
            let _ = self.child.kill();
            self.state = WalkState::Failed {
                why: format!(
                    "the walk made no progress for {} s (a hung filesystem?): not counted",
                    WALK_STALL.as_secs()
                ),
            };
        }
        if matches!(self.state, WalkState::Counting { .. }) && Instant::now() >= self.deadline {
            let _ = self.child.kill();
            self.state = WalkState::Failed {
                why: "the walk did not finish in time".into(),
            };
        }
        if let Ok(Some(st)) = self.child.try_wait()
            && matches!(self.state, WalkState::Counting { .. })
        {
            self.state = WalkState::Failed {
                why: format!("the walk ended early ({st})"),
            };
        }
        matches!(self.state, WalkState::Counting { .. })
    }

    fn lines(&mut self) {
        let mut start = 0;
        while let Some(nl) = self.buf[start..].iter().position(|&c| c == b'\n') {
            let line = &self.buf[start..start + nl];
            start += nl + 1;
            if let Some(ids) = parse_ids(line) {
                if self.ids.len() + ids.len() <= MAX_IDS {
                    self.ids.extend(ids);
                } else {
                    self.ids_over = true;
                }
            } else if line == b"o" {
                self.ids_over = true;
            } else if let Some(s) = parse_line(line) {
                self.state = s;
                self.heard = Instant::now();
            }
        }
        self.buf.drain(..start);
    }

    /// The child is gone (reaped): a walk killed while stuck in a hung
    /// mount stays here until the kernel lets it go.
    pub fn reaped(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }
}

impl Drop for Walk {
    fn drop(&mut self) {
        if !matches!(self.child.try_wait(), Ok(Some(_))) {
            let _ = self.child.kill();
            let _ = self.child.try_wait();
        }
    }
}

/// One line of the child's output.
pub fn parse_line(line: &[u8]) -> Option<WalkState> {
    let s = std::str::from_utf8(line).ok()?;
    let mut f = s.split_ascii_whitespace();
    let kind = f.next()?;
    let mut n = || f.next()?.parse::<u64>().ok();
    let (files, bytes) = (n()?, n()?);
    match kind {
        "p" => Some(WalkState::Counting {
            so_far: Counts {
                files,
                bytes,
                ..Counts::default()
            },
        }),
        "d" => Some(WalkState::Done {
            total: Counts {
                files,
                bytes,
                skipped: n().unwrap_or(0),
                missing: n().unwrap_or(0),
                empty: n().unwrap_or(0),
                linked: n().unwrap_or(0),
                sparse: n().unwrap_or(0),
            },
        }),
        _ => None,
    }
}

/// An `i MAJOR:MINOR INO…` line (hex inode numbers).
pub fn parse_ids(line: &[u8]) -> Option<Vec<FileId>> {
    let s = std::str::from_utf8(line).ok()?;
    let mut f = s.split_ascii_whitespace();
    if f.next()? != "i" {
        return None;
    }
    let (maj, min) = f.next()?.split_once(':')?;
    let dev = (maj.parse::<u64>().ok()? << 32) | min.parse::<u32>().ok()? as u64;
    f.map(|i| Some((dev, u64::from_str_radix(i, 16).ok()?))).collect()
}

/// Whether `name` matches the plain pattern `pat` (`*`: any run, `?`: one
/// byte).
pub fn name_matches(pat: &[u8], name: &[u8]) -> bool {
    // Iterative wildcard match with one backtrack point.
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pat.get(p) {
            Some(b'*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == b'?' || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    pat[p..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        assert_eq!(
            parse_line(b"p 3 40\n"),
            Some(WalkState::Counting {
                so_far: Counts {
                    files: 3,
                    bytes: 40,
                    ..Counts::default()
                }
            })
        );
        assert_eq!(
            parse_line(b"d 5 6 1 2\n"),
            Some(WalkState::Done {
                total: Counts {
                    files: 5,
                    bytes: 6,
                    skipped: 1,
                    missing: 2,
                    ..Counts::default()
                }
            })
        );
        assert_eq!(
            parse_line(b"d 5 6 1 2 3 4 1\n"),
            Some(WalkState::Done {
                total: Counts {
                    files: 5,
                    bytes: 6,
                    skipped: 1,
                    missing: 2,
                    empty: 3,
                    linked: 4,
                    sparse: 1
                }
            })
        );
        assert_eq!(
            parse_ids(b"i 7:3 1f 20"),
            Some(vec![((7 << 32) | 3, 0x1f), ((7 << 32) | 3, 0x20)])
        );
        assert_eq!(parse_ids(b"i 7:3 1g"), None);
        assert_eq!(parse_ids(b"p 7:3 1"), None);
        assert_eq!(dev_key(rustix::fs::makedev(254, 3)), (254 << 32) | 3);
        assert_eq!(parse_line(b"x 1 2\n"), None);
        assert_eq!(parse_line(b"p 1\n"), None);
    }
}
