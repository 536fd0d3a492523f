//! Jobs: a copy or backup command and the processes it started, seen as one
//! thing with one total and one position. Pure: what the processes are
//! (comm, command line, parent, what their stdin and stdout are) comes from
//! the collector; nothing here reads the system.
//!
//! - [`classify`] names the tool of a command line ([`Tool`]); the findings
//!   engine asks [`is_maintenance_command`] whether a process is a copy or
//!   backup job at all.
//! - [`group`] ties a tool's process to the processes it started (by parent
//!   pid, at any depth: `tar`'s `gzip`, `rsync`'s receiver and generator)
//!   and to its pipeline partners (the process reading the pipe the tool
//!   writes to, or writing the pipe it reads: `tar cf - . | pv > out`), where
//!   both ends of the pipe are seen open.
//! - [`args`] parses each tool's command line for its source operands.
//! - [`track`] folds the samples of a job into its position, rate, ETA and
//!   phase.

pub mod args;
pub mod files;
pub mod track;

pub use crate::collect::jobproc::Tool;

/// The last path component of `argv[0]` (or of the comm when the command
/// line is empty: a kernel thread or a process that cleared it).
fn program<'a>(comm: &'a str, argv: &'a [Vec<u8>]) -> &'a [u8] {
    match argv.first() {
        Some(a0) if !a0.is_empty() => a0.rsplit(|&c| c == b'/').next().unwrap_or(a0),
        _ => comm.as_bytes(),
    }
}

/// The tool of a process, from its comm and command line; `None` when it is
/// not a job iolens understands (a `tar` that extracts or lists, a `cpio`
/// that copies in, a `borg` or `restic` doing anything but a backup).
///
/// Interpreted tools (`borg` is Python) are named by their script:
/// the kernel's comm is the script's name.
pub fn classify(comm: &str, argv: &[Vec<u8>]) -> Option<Tool> {
    let prog = program(comm, argv);
    let args = argv.get(1..).unwrap_or_default();
    let by_name = |n: &[u8]| match n {
        b"tar" | b"gtar" | b"bsdtar" => Some(Tool::Tar),
        b"rsync" => Some(Tool::Rsync),
        b"cp" => Some(Tool::Cp),
        b"mv" => Some(Tool::Mv),
        b"zip" => Some(Tool::Zip),
        b"7z" | b"7za" | b"7zr" | b"7zz" => Some(Tool::SevenZip),
        b"borg" | b"borgbackup" => Some(Tool::Borg),
        b"restic" => Some(Tool::Restic),
        b"cpio" => Some(Tool::Cpio),
        b"dd" => Some(Tool::Dd),
        _ => None,
    };
    // A python interpreter running borg shows comm "borg" and argv
    // ["/usr/bin/python3", "/usr/bin/borg", ...].
    let (tool, args) = match by_name(prog) {
        Some(t) => (t, args),
        None => {
            let t = by_name(comm.as_bytes())?;
            let at = argv
                .iter()
                .position(|a| program("", std::slice::from_ref(a)) == comm.as_bytes())?;
            (t, argv.get(at + 1..).unwrap_or_default())
        }
    };
    let ok = match tool {
        Tool::Tar => args::tar::creates(args),
        Tool::SevenZip => args
            .iter()
            .find(|a| !a.starts_with(b"-"))
            .is_some_and(|a| a == b"a" || a == b"u"),
        Tool::Borg => args::subcommand(args, args::borg::GLOBAL_VALUES) == Some(b"create".as_slice()),
        Tool::Restic => args::subcommand(args, args::restic::GLOBAL_VALUES) == Some(b"backup".as_slice()),
        Tool::Cpio => args::cpio::copies_out(args),
        _ => true,
    };
    ok.then_some(tool)
}

/// Whether a process is a maintenance or backup job (a copy of a tree, an
/// archive, a backup, a raw device copy): the findings rule's question. A
/// `cp` or `mv` of single files is not one; `cp -r`/`-a` and `mv` of a
/// directory tree (a move across filesystems copies it) are.
pub fn is_maintenance_command(comm: &str, argv: &[Vec<u8>]) -> bool {
    match classify(comm, argv) {
        Some(Tool::Cp) => args::cp::recursive(argv.get(1..).unwrap_or_default()),
        Some(_) => true,
        None => false,
    }
}

/// What the grouping needs of a process.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcFacts {
    pub pid: i32,
    pub ppid: i32,
    pub comm: String,
    pub argv: Vec<Vec<u8>>,
    /// Pipe inode of fd 0 / fd 1, when that fd is a pipe.
    pub stdin_pipe: Option<u64>,
    pub stdout_pipe: Option<u64>,
}

/// One job: the tool's process and the others tied to it.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub tool: Tool,
    /// The tool's first process (the one not started by another process of
    /// the same tool): its command line is the job's.
    pub root: i32,
    /// Processes it started (any depth), its root first.
    pub tree: Vec<i32>,
    /// Pipeline partners: processes tied by a pipe to a process of the tree.
    pub pipeline: Vec<i32>,
}

impl Group {
    /// Every pid of the job.
    pub fn pids(&self) -> impl Iterator<Item = i32> + '_ {
        self.tree.iter().chain(&self.pipeline).copied()
    }
}

/// Group processes into jobs. A process of a tool whose parent is a process
/// of the same tool (rsync's forks) belongs to the parent's job; any
/// descendant of a job's root is in its tree; a process outside every tree
/// whose stdin is a pipe a tree process writes (or whose stdout is a pipe a
/// tree process reads) is in its pipeline.
pub fn group(procs: &[ProcFacts]) -> Vec<Group> {
    use std::collections::HashMap;
    let by_pid: HashMap<i32, &ProcFacts> = procs.iter().map(|p| (p.pid, p)).collect();
    let tool_of: HashMap<i32, Tool> = procs
        .iter()
        .filter_map(|p| Some((p.pid, classify(&p.comm, &p.argv)?)))
        .collect();
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for p in procs {
        children.entry(p.ppid).or_default().push(p.pid);
    }
    let mut roots: Vec<(i32, Tool)> = tool_of
        .iter()
        .filter(|(pid, _)| {
            let parent = by_pid.get(pid).map(|p| p.ppid);
            // Any ancestor running a job claims it (rsync's forks; a `cp`
            // started by a `borg` hook is the borg job's).
            !ancestors(&by_pid, parent).any(|a| tool_of.contains_key(&a))
        })
        .map(|(p, t)| (*p, *t))
        .collect();
    roots.sort_unstable();
    let mut claimed = std::collections::HashSet::new();
    let mut out = Vec::new();
    for (root, tool) in roots {
        let mut tree = vec![root];
        let mut i = 0;
        while let Some(&p) = tree.get(i) {
            i += 1;
            for &c in children.get(&p).into_iter().flatten() {
                if tree.len() < 4096 && !tree.contains(&c) {
                    tree.push(c);
                }
            }
        }
        claimed.extend(tree.iter().copied());
        out.push(Group {
            tool,
            root,
            tree,
            pipeline: Vec::new(),
        });
    }
    for g in &mut out {
        let outs: Vec<u64> = g.tree.iter().filter_map(|p| by_pid.get(p)?.stdout_pipe).collect();
        let ins: Vec<u64> = g.tree.iter().filter_map(|p| by_pid.get(p)?.stdin_pipe).collect();
        for p in procs {
            if claimed.contains(&p.pid) {
                continue;
            }
            let fed = p.stdin_pipe.is_some_and(|i| outs.contains(&i));
            let feeds = p.stdout_pipe.is_some_and(|o| ins.contains(&o));
            if fed || feeds {
                g.pipeline.push(p.pid);
            }
        }
        g.pipeline.sort_unstable();
    }
    out
}

/// The pids above `start` (its parent first), bounded (a cycle in a racy
/// listing must not loop).
fn ancestors<'a>(
    by_pid: &'a std::collections::HashMap<i32, &ProcFacts>,
    start: Option<i32>,
) -> impl Iterator<Item = i32> + 'a {
    let mut cur = start;
    let mut n = 0;
    std::iter::from_fn(move || {
        let p = cur.filter(|p| *p > 1 && n < 64)?;
        n += 1;
        cur = by_pid.get(&p).map(|f| f.ppid);
        Some(p)
    })
}

#[cfg(test)]
mod tests;
