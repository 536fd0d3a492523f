//! Per-cgroup I/O: which service, container or pod is doing the I/O.
//!
//! One hierarchy gives the rows: cgroup v2 when its root has the `io`
//! controller (`io.stat` counts on every device), else the v1 `blkio`
//! hierarchy (whose `blkio.throttle.io_service_bytes` / `io_serviced` only
//! count on devices where a throttle limit was ever set: the devices listed
//! in the root cgroup's file), else v2 without counters (pressure only).
//! Processes are placed by `/proc/<pid>/cgroup` (the blkio line on v1, the
//! `0::` line on v2; the `name=systemd` line for names). Cgroups with no
//! process and no non-zero counter are skipped after one read.

pub mod members;
pub mod names;
pub mod parse;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::Reader;
use super::process::ProcSnapshot;
use super::system::{Pressure, parse_pressure};
use members::{Group, MemberCache, Members};
use names::CgroupKind;
use parse::{DevCounters, DevId, Limits, V1Limit, Weight};

/// Most cgroup directories walked per sample; beyond it the walk stops with a note.
pub const MAX_CGROUPS: usize = 20_000;
/// Deepest nesting walked.
pub const MAX_DEPTH: usize = 32;
/// Largest cgroup I/O file read (an `io.stat` line is ~150 bytes per device).
const FILE_LIMIT: usize = 256 * 1024;
/// Largest container config read for a name.
const CONFIG_LIMIT: usize = 1024 * 1024;
/// Largest list of containers read for a name (Podman's storage keeps all
/// its containers in one file, about 1 kB each).
const STORAGE_LIST_LIMIT: usize = 8 * 1024 * 1024;

/// Which tree the rows come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Hierarchy {
    /// cgroup v2 with the io controller: `io.stat` on every device.
    V2,
    /// cgroup v2 without the io controller: no kernel counters.
    V2NoIo,
    /// cgroup v1 blkio: throttle counters on the devices that ever had a limit.
    V1Blkio,
}

/// One cgroup as read in one sample.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RawCgroup {
    /// Path relative to the hierarchy root, "/" for the root.
    pub path: String,
    /// Kernel counters per device (v2 `io.stat`, v1 throttle files).
    pub counters: Vec<DevCounters>,
    /// v1 BFQ counters per device (`blkio.bfq.io_service_bytes` / `io_serviced`).
    pub bfq: Vec<DevCounters>,
    /// This cgroup's own throttle limits (v2 `io.max`, v1 `*_device`).
    pub limits: Vec<(DevId, Limits)>,
    pub weight: Option<Weight>,
    pub bfq_weight: Option<Weight>,
    /// v2 `io.latency` targets in µs.
    pub latency_target_us: Vec<(DevId, u64)>,
    /// `io.pressure` of this cgroup (v2), or of the v2 cgroup at the same
    /// path when every member process is in it (v1 rows of a hybrid layout).
    pub pressure: Option<Pressure>,
    /// Member processes (from `/proc/<pid>/cgroup`).
    pub pids: Vec<i32>,
    /// The `name=systemd` path shared by every member, where there is one.
    pub systemd_path: Option<String>,
    /// A container's name read locally (Docker `config.v2.json`, Podman's
    /// storage list of containers).
    pub container_name: Option<String>,
}

/// All cgroups of one sample.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CgroupSnapshot {
    pub hierarchy: Option<Hierarchy>,
    /// Devices on which the kernel counts per cgroup; `None` = all of them
    /// (v2 with io) — with [`Hierarchy::V2NoIo`] it is an empty list.
    pub counted_devices: Option<Vec<DevId>>,
    pub cgroups: Vec<RawCgroup>,
    /// Limits of the ancestors of listed cgroups that are not listed
    /// themselves (v2, where limits are hierarchical), by path.
    pub ancestor_limits: Vec<(String, Vec<(DevId, Limits)>)>,
    /// What is missing and why (no controller, unreadable files, walk cut short).
    pub notes: Vec<String>,
    /// Cgroup directories looked at (listed or skipped).
    pub walked: usize,
}

/// Where the cgroup hierarchies are mounted, from `/proc/mounts`, and which
/// mount points are on filesystems where a read can hang.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mounts {
    pub v2: Option<String>,
    pub blkio: Option<String>,
    /// Every mount point, and whether a read under it may block (FUSE,
    /// network, automount).
    pub points: Vec<(String, bool)>,
}

impl Mounts {
    /// Whether `path` lies on a filesystem where a read may block: the
    /// mount with the longest matching mount point decides.
    pub fn may_block_at(&self, path: &str) -> bool {
        let under = |p: &str| path == p || p == "/" || path.starts_with(&format!("{}/", p.trim_end_matches('/')));
        self.points
            .iter()
            .filter(|(p, _)| under(p))
            .max_by_key(|(p, _)| p.len())
            .is_some_and(|(_, b)| *b)
    }
}

pub fn parse_mounts(buf: &[u8]) -> Mounts {
    let mut m = Mounts::default();
    for line in String::from_utf8_lossy(buf).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [_, dir, fstype, opts, ..] = f[..] else { continue };
        m.points
            .push((super::mountinfo::unescape(dir), super::mountinfo::may_block(fstype)));
        if fstype == "cgroup2" && m.v2.is_none() {
            m.v2 = Some(dir.to_string());
        } else if fstype == "cgroup" && opts.split(',').any(|o| o == "blkio") && m.blkio.is_none() {
            m.blkio = Some(dir.to_string());
        }
    }
    m
}

/// Reads the cgroup tree each sample; caches container names.
#[derive(Debug, Default)]
pub struct CgroupReader {
    container_names: HashMap<String, Option<String>>,
    /// Which cgroup each process is in, kept between samples.
    pub members: MemberCache,
    /// The last sample's placement (its room reused).
    placed: Members,
}

impl CgroupReader {
    pub fn new() -> Self {
        Self::default()
    }

    /// Read every cgroup under the root's mounts. Never fails: what is
    /// missing goes to `notes`.
    pub fn read(&mut self, r: &mut Reader, procs: &ProcSnapshot) -> CgroupSnapshot {
        let mut snap = CgroupSnapshot::default();
        let mounts = match r.read_limited("/proc/mounts", 1 << 20) {
            Ok(b) => parse_mounts(b),
            Err(e) => {
                snap.notes.push(e.to_string());
                return snap;
            }
        };
        let v2_io = mounts.v2.as_ref().is_some_and(|d| {
            r.read_limited(Path::new(d).join("cgroup.controllers"), 4096)
                .is_ok_and(|b| b.split(|c| c.is_ascii_whitespace()).any(|w| w == b"io"))
        });
        let (hier, dir) = match (&mounts.v2, &mounts.blkio) {
            (Some(d), _) if v2_io => (Hierarchy::V2, d.clone()),
            (_, Some(d)) => (Hierarchy::V1Blkio, d.clone()),
            (Some(d), None) => (Hierarchy::V2NoIo, d.clone()),
            (None, None) => {
                snap.notes
                    .push("no cgroup hierarchy mounted: per-cgroup I/O unavailable".to_string());
                return snap;
            }
        };
        snap.hierarchy = Some(hier);
        match hier {
            Hierarchy::V2 => {}
            Hierarchy::V1Blkio => snap.notes.push(
                "cgroup v1 blkio: kernel counters only on devices that ever had a throttle limit; elsewhere the sum of member processes' own I/O"
                    .to_string(),
            ),
            Hierarchy::V2NoIo => snap.notes.push(
                "cgroup v2 without the io controller (and no v1 blkio): I/O is the sum of member processes' own I/O"
                    .to_string(),
            ),
        }
        let mut members = std::mem::take(&mut self.placed);
        self.members
            .place(r, procs, hier == Hierarchy::V1Blkio, &mut members, &mut snap.notes);
        let dirs = walk(r, Path::new(&dir), &mut snap.notes);
        snap.walked = dirs.len();
        for rel in dirs {
            let path = if rel.is_empty() { "/".to_string() } else { rel.clone() };
            let abs = PathBuf::from(&dir).join(rel.trim_start_matches('/'));
            let counters = read_counters(r, &abs, hier, &mut snap.notes);
            let group = members.by_path.get(path.as_str());
            let pids = group.map(|g| g.pids.clone()).unwrap_or_default();
            if path == "/" && hier == Hierarchy::V1Blkio {
                snap.counted_devices = Some(counters.iter().map(|c| c.dev).collect());
            }
            let busy = counters.iter().any(|c| c.rbytes | c.wbytes | c.rios | c.wios != 0);
            if pids.is_empty() && !busy {
                continue;
            }
            let mut cg = RawCgroup {
                path,
                counters,
                pids,
                ..Default::default()
            };
            self.read_details(r, &abs, hier, &mut cg, group, &mounts);
            snap.cgroups.push(cg);
        }
        match hier {
            Hierarchy::V2 => snap.counted_devices = None,
            Hierarchy::V2NoIo => snap.counted_devices = Some(Vec::new()),
            Hierarchy::V1Blkio => {}
        }
        if hier == Hierarchy::V2 {
            snap.ancestor_limits = ancestor_limits(r, &dir, &snap.cgroups);
        }
        self.placed = members;
        snap
    }

    fn read_details(
        &mut self,
        r: &mut Reader,
        abs: &Path,
        hier: Hierarchy,
        cg: &mut RawCgroup,
        group: Option<&Group>,
        mounts: &Mounts,
    ) {
        let mut read = |name: &str| r.read_limited(abs.join(name), FILE_LIMIT).ok().map(<[u8]>::to_vec);
        match hier {
            Hierarchy::V2 | Hierarchy::V2NoIo => {
                cg.limits = read("io.max").map(|b| parse::parse_io_max(&b)).unwrap_or_default();
                cg.weight = read("io.weight").and_then(|b| parse::parse_weight(&b));
                cg.bfq_weight = read("io.bfq.weight").and_then(|b| parse::parse_weight(&b));
                cg.latency_target_us = read("io.latency")
                    .map(|b| parse::parse_io_latency(&b))
                    .unwrap_or_default();
                cg.pressure = read("io.pressure").map(|b| parse_pressure(&b));
            }
            Hierarchy::V1Blkio => {
                for (which, file) in V1Limit::ALL {
                    if let Some(b) = read(file) {
                        parse::add_v1_limits(&mut cg.limits, which, &b);
                    }
                }
                if let (Some(b), Some(i)) = (read("blkio.bfq.io_service_bytes"), read("blkio.bfq.io_serviced")) {
                    cg.bfq = parse::join_rwstat(&parse::parse_rwstat(&b), &parse::parse_rwstat(&i));
                }
                cg.bfq_weight = read("blkio.bfq.weight").and_then(|b| parse::parse_weight(&b));
                // Pressure of the v2 cgroup at the same path, only when no
                // member process is elsewhere in the v2 tree.
                let same = group.is_none_or(|g| g.v2_same_path);
                if let (true, Some(v2)) = (same, &mounts.v2) {
                    let p = PathBuf::from(v2)
                        .join(cg.path.trim_start_matches('/'))
                        .join("io.pressure");
                    cg.pressure = r.read_limited(p, 4096).ok().map(parse_pressure);
                }
            }
        }
        cg.systemd_path = group.and_then(|g| g.systemd.as_deref()).map(str::to_string);
        let n = names::name_of(&cg.path);
        let lookup: fn(&mut Reader, &Mounts, &str, &str) -> Option<String> = match n.kind {
            CgroupKind::Docker => |r, m, _, id| docker_name(r, m, id),
            CgroupKind::Podman => podman_name,
            _ => return,
        };
        if let Some(id) = n.container_id {
            cg.container_name = self
                .container_names
                .entry(id.clone())
                .or_insert_with(|| lookup(r, mounts, &cg.path, &id))
                .clone();
        }
    }
}

/// Cgroup directories under `root` (a mount point under the reader's
/// root; paths relative to it, "" for the root itself), parents before
/// children, at most [`MAX_CGROUPS`]. Symlinks are not followed.
fn walk(r: &Reader, root: &Path, notes: &mut Vec<String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![(String::new(), 0usize)];
    while let Some((rel, depth)) = stack.pop() {
        if out.len() >= MAX_CGROUPS {
            notes.push(format!("more than {MAX_CGROUPS} cgroups: the rest are not read"));
            break;
        }
        let dir = root.join(rel.trim_start_matches('/'));
        out.push(rel);
        if depth >= MAX_DEPTH {
            continue;
        }
        let Ok(entries) = r.list_dir(&dir) else {
            notes.push(format!("reading {}: not listable", r.path(&dir).display()));
            continue;
        };
        let mut subs: Vec<String> = entries
            .into_iter()
            .filter(|e| e.kind == rustix::fs::FileType::Directory)
            .filter_map(|e| e.name.into_string().ok())
            .collect();
        // Reversed, so the stack pops them in name order.
        subs.sort_unstable_by(|a, b| b.cmp(a));
        let parent = out.last().cloned().unwrap_or_default();
        stack.extend(subs.into_iter().map(|s| (format!("{parent}/{s}"), depth + 1)));
    }
    out
}

fn read_counters(r: &mut Reader, abs: &Path, hier: Hierarchy, notes: &mut Vec<String>) -> Vec<DevCounters> {
    match hier {
        Hierarchy::V2NoIo => Vec::new(),
        Hierarchy::V2 => match r.read_limited(abs.join("io.stat"), FILE_LIMIT) {
            Ok(b) => parse::parse_io_stat(b),
            // The root has no io.stat on older kernels.
            Err(e) if e.error.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => {
                notes.push(e.to_string());
                Vec::new()
            }
        },
        Hierarchy::V1Blkio => {
            let bytes = match r.read_limited(abs.join("blkio.throttle.io_service_bytes"), FILE_LIMIT) {
                Ok(b) => parse::parse_rwstat(b),
                Err(e) => {
                    notes.push(e.to_string());
                    return Vec::new();
                }
            };
            if bytes.is_empty() {
                return Vec::new();
            }
            match r.read_limited(abs.join("blkio.throttle.io_serviced"), FILE_LIMIT) {
                Ok(b) => parse::join_rwstat(&bytes, &parse::parse_rwstat(b)),
                Err(e) => {
                    notes.push(e.to_string());
                    Vec::new()
                }
            }
        }
    }
}

/// v2 limits of every ancestor of a listed cgroup that is not listed.
fn ancestor_limits(r: &mut Reader, dir: &str, listed: &[RawCgroup]) -> Vec<(String, Vec<(DevId, Limits)>)> {
    let mut out: Vec<(String, Vec<(DevId, Limits)>)> = Vec::new();
    let mut seen: std::collections::HashSet<&str> = listed.iter().map(|c| c.path.as_str()).collect();
    for cg in listed {
        let mut p = cg.path.as_str();
        while let Some(i) = p.rfind('/') {
            p = if i == 0 { "/" } else { &p[..i] };
            if p == "/" || !seen.insert(p) {
                // The root has no io.max; listed ones carry their own.
                if p == "/" {
                    break;
                }
                continue;
            }
            let f = PathBuf::from(dir).join(p.trim_start_matches('/')).join("io.max");
            let l = r
                .read_limited(f, FILE_LIMIT)
                .map(parse::parse_io_max)
                .unwrap_or_default();
            out.push((p.to_string(), l));
        }
    }
    out
}

/// Read a container runtime's file for a name, unless it is on a
/// filesystem where the read could hang (never done from the sampler).
fn read_local<'a>(r: &'a mut Reader, mounts: &Mounts, path: &str, limit: usize) -> Option<&'a [u8]> {
    if mounts.may_block_at(path) {
        return None;
    }
    r.read_limited(path, limit).ok()
}

/// A Docker container's name from `/var/lib/docker/containers/<id>/config.v2.json`.
fn docker_name(r: &mut Reader, mounts: &Mounts, id: &str) -> Option<String> {
    let b = read_local(
        r,
        mounts,
        &format!("/var/lib/docker/containers/{id}/config.v2.json"),
        CONFIG_LIMIT,
    )?;
    let v: serde_json::Value = serde_json::from_slice(b).ok()?;
    let name = v.get("Name")?.as_str()?;
    Some(name.trim_start_matches('/').to_string())
}

/// The lists of containers Podman's storage (containers/storage) keeps, by
/// storage driver: `containers.json` and, for `--rm` / transient ones,
/// `volatile-containers.json`, under the graph root and the run root.
const STORAGE_DRIVERS: [&str; 3] = ["overlay", "vfs", "btrfs"];

/// Where a Podman container's record can be, for a rootful container or a
/// rootless one of `home` / `uid`.
fn podman_lists(user: Option<(&str, u32)>) -> Vec<String> {
    let (graph, run) = match user {
        None => (
            "/var/lib/containers/storage".to_string(),
            "/run/containers/storage".to_string(),
        ),
        Some((home, uid)) => (
            format!("{}/.local/share/containers/storage", home.trim_end_matches('/')),
            format!("/run/user/{uid}/containers"),
        ),
    };
    let mut out = Vec::new();
    for d in STORAGE_DRIVERS {
        for root in [&graph, &run] {
            for f in ["containers.json", "volatile-containers.json"] {
                out.push(format!("{root}/{d}-containers/{f}"));
            }
        }
    }
    out
}

/// The first name of container `id` in a containers/storage list.
fn name_in_storage_list(buf: &[u8], id: &str) -> Option<String> {
    let v: Vec<serde_json::Value> = serde_json::from_slice(buf).ok()?;
    let c = v.iter().find(|c| c.get("id").and_then(|i| i.as_str()) == Some(id))?;
    Some(c.get("names")?.as_array()?.first()?.as_str()?.to_string())
}

/// "user@1000.service" in a path: the uid of a rootless container's user.
fn user_service_uid(path: &str) -> Option<u32> {
    path.split('/')
        .find_map(|c| c.strip_prefix("user@")?.strip_suffix(".service")?.parse().ok())
}

/// The home directory of `uid` in an /etc/passwd file.
fn home_of(passwd: &[u8], uid: u32) -> Option<String> {
    String::from_utf8_lossy(passwd).lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() >= 7 && f[2].parse() == Ok(uid)).then(|| f[5].to_string())
    })
}

/// A Podman container's name from its storage's list of containers
/// (rootful, or rootless under the home of the `user@<uid>.service` in the
/// cgroup path); `None` where no list is readable or it lacks the id, and
/// without reading where the file is on a FUSE or network filesystem (a
/// home directory on NFS).
fn podman_name(r: &mut Reader, mounts: &Mounts, path: &str, id: &str) -> Option<String> {
    let home = match user_service_uid(path) {
        Some(uid) => {
            let passwd = read_local(r, mounts, "/etc/passwd", 1 << 20)?;
            Some((home_of(passwd, uid)?, uid))
        }
        None => None,
    };
    let lists = podman_lists(home.as_ref().map(|(h, u)| (h.as_str(), *u)));
    lists.iter().find_map(|f| {
        let b = read_local(r, mounts, f, STORAGE_LIST_LIMIT)?;
        name_in_storage_list(b, id)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "9a8b7c6d5e4f30211203948576a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7";

    #[test]
    fn podman_storage_list_and_home() {
        let list =
            format!(r#"[{{"id":"00","names":["old"]}},{{"id":"{ID}","names":["db-primary","db"],"image":"x"}}]"#);
        assert_eq!(name_in_storage_list(list.as_bytes(), ID).as_deref(), Some("db-primary"));
        assert_eq!(name_in_storage_list(list.as_bytes(), "11"), None);
        assert_eq!(name_in_storage_list(b"[{\"id\":\"00\",\"names\":[]}]", "00"), None);
        assert_eq!(name_in_storage_list(b"not json", ID), None);
        let passwd = b"root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000:A:/home/alice:/bin/sh\nbad line\n";
        assert_eq!(home_of(passwd, 1000).as_deref(), Some("/home/alice"));
        assert_eq!(home_of(passwd, 1001), None);
        assert_eq!(
            user_service_uid("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-x.scope"),
            Some(1000)
        );
        assert_eq!(user_service_uid("/machine.slice/libpod-x.scope"), None);
        let rootless = podman_lists(Some(("/home/alice/", 1000)));
        assert!(rootless.contains(
            &"/home/alice/.local/share/containers/storage/overlay-containers/volatile-containers.json".to_string()
        ));
        assert!(
            rootless.contains(&"/run/user/1000/containers/overlay-containers/volatile-containers.json".to_string())
        );
        let m = parse_mounts(
            b"/dev/vda1 / ext4 rw 0 0\nsrv:/home /home nfs4 rw 0 0\n/dev/vdb /home/local\\040disk xfs rw 0 0\n",
        );
        assert!(m.may_block_at("/home/alice/.local/share/x.json"));
        assert!(m.may_block_at("/home"));
        assert!(!m.may_block_at("/home/local disk/x") && !m.may_block_at("/homework/x"));
        assert!(!m.may_block_at("/var/lib/containers/storage/overlay-containers/containers.json"));
        // alice's list is in the fixture tree: read from a local /home, not
        // from one on NFS.
        let mut r = Reader::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cgroup-v2"));
        let id = "b1c2d3e4f5a697881223344556677889aabbccddeeff00112233445566778899";
        let path = format!("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-{id}.scope");
        assert_eq!(podman_name(&mut r, &m, &path, id), None);
        let local = parse_mounts(b"/dev/vda1 / ext4 rw 0 0\n");
        assert_eq!(
            podman_name(&mut r, &local, &path, id).as_deref(),
            Some("fedora-toolbox-41")
        );
        assert!(
            podman_lists(None).contains(&"/var/lib/containers/storage/overlay-containers/containers.json".to_string())
        );
    }
}
