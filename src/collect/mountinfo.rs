//! `/proc/<pid>/mountinfo`: which filesystem each mount is, so that iolens
//! never makes a call that can block on a FUSE, network or automount
//! filesystem (a `stat` there waits for the FUSE daemon or the server, and
//! once a FUSE daemon has read the request the caller waits
//! uninterruptibly: not even SIGKILL ends it).
//!
//! Mount ids are global (one counter for every mount namespace), so one
//! table keyed by id serves every process; a process in another mount
//! namespace has mounts that only its own `/proc/<pid>/mountinfo` lists.
//!
//! The same file names the filesystems on anonymous devices (major 0:
//! overlay, btrfs, NFS, FUSE, tmpfs, ...), so that a process's open file on
//! one can be named by its filesystem: its `st_dev` names no block device.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::Reader;

/// One line of mountinfo (proc(5)): the fields iolens uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub id: u64,
    pub parent: u64,
    /// `st_dev` of files on this mount.
    pub major: u32,
    pub minor: u32,
    /// Unescaped ("\040" → " ").
    pub mount_point: String,
    pub fs_type: String,
    /// The mount source ("/dev/vda1", "server:/export", "sshfs#host:").
    pub source: String,
}

/// Filesystems where a `stat`, `statvfs` or `open` can wait on something
/// outside the kernel: a FUSE daemon, a network server, an automounter.
/// FUSE mounts show as `fuse`, `fuseblk` or `fuse.<name>` (`fuse.sshfs`).
pub fn may_block(fs_type: &str) -> bool {
    const TYPES: &[&str] = &[
        "fuse",
        "fuseblk",
        "fusectl",
        "virtiofs",
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "ceph",
        "9p",
        "afs",
        "autofs",
        "glusterfs",
        "lustre",
        "gfs2",
        "ocfs2",
        "orangefs",
        "coda",
        "ncpfs",
        "davfs",
        "sshfs",
        "beegfs",
        "gpfs",
    ];
    fs_type.starts_with("fuse.") || TYPES.contains(&fs_type)
}

/// Undo the octal escapes of mount files ("\040" for a space, "\134" for a
/// backslash).
pub fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            let v = u32::from(b[i + 1] - b'0') * 64 + u32::from(b[i + 2] - b'0') * 8 + u32::from(b[i + 3] - b'0');
            out.push(v as u8);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parse one mountinfo line; `None` for a malformed one.
pub fn parse_line(line: &str) -> Option<Mount> {
    let mut f = line.split(' ');
    let id = f.next()?.parse().ok()?;
    let parent = f.next()?.parse().ok()?;
    let (major, minor) = f.next()?.split_once(':')?;
    let (major, minor) = (major.parse().ok()?, minor.parse().ok()?);
    let _root = f.next()?;
    let mount_point = unescape(f.next()?);
    let _options = f.next()?;
    // Optional fields ("shared:1 master:2") end with a lone "-".
    f.by_ref().find(|x| *x == "-")?;
    let fs_type = unescape(f.next()?);
    let source = unescape(f.next()?);
    Some(Mount {
        id,
        parent,
        major,
        minor,
        mount_point,
        fs_type,
        source,
    })
}

/// Parse a whole mountinfo file, skipping malformed lines.
pub fn parse(text: &[u8]) -> Vec<Mount> {
    String::from_utf8_lossy(text).lines().filter_map(parse_line).collect()
}

/// Mounts by id, with the answer to "can a call on this mount block?".
#[derive(Debug, Default, Clone)]
pub struct MountTable {
    by_id: HashMap<u64, Mount>,
}

impl MountTable {
    pub fn new(mounts: Vec<Mount>) -> Self {
        let mut t = MountTable::default();
        t.extend(mounts);
        t
    }

    pub fn extend(&mut self, mounts: Vec<Mount>) {
        for m in mounts {
            self.by_id.insert(m.id, m);
        }
    }

    pub fn clear(&mut self) {
        self.by_id.clear();
    }

    pub fn get(&self, id: u64) -> Option<&Mount> {
        self.by_id.get(&id)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Mount> {
        self.by_id.values()
    }

    /// Whether a file on mount `id` may block when stat'ed through its
    /// descriptor. `None` when the mount is not in the table.
    pub fn fd_may_block(&self, id: u64) -> Option<bool> {
        self.by_id.get(&id).map(|m| may_block(&m.fs_type))
    }

    /// Whether a path walk to this mount's mount point may block: the mount
    /// itself or any mount above it is one that can (a local filesystem
    /// mounted under an sshfs mount is reached through the sshfs lookup).
    pub fn path_may_block(&self, id: u64) -> bool {
        let mut cur = id;
        // Bounded: a cycle in a captured or hostile file must not spin.
        for _ in 0..64 {
            let Some(m) = self.by_id.get(&cur) else {
                return false;
            };
            if may_block(&m.fs_type) {
                return true;
            }
            if m.parent == m.id {
                return false;
            }
            cur = m.parent;
        }
        true
    }
}

/// One mount whose device number has major 0.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnonMount {
    pub minor: u32,
    pub fs_type: String,
    /// The mount source as mountinfo gives it ("/dev/vdb" for btrfs,
    /// "overlay", "server:/export").
    pub source: String,
    /// Where it is mounted (unescaped: escape it before a terminal; empty
    /// in a recording made before it was kept).
    #[serde(default)]
    pub mount_point: String,
}

/// The mounts of anonymous devices in mountinfo text, the first mount of
/// each device only.
pub fn parse_anon(text: &str) -> Vec<AnonMount> {
    let mut out: Vec<AnonMount> = Vec::new();
    for m in text.lines().filter_map(parse_line) {
        if m.major != 0 || out.iter().any(|a| a.minor == m.minor) {
            continue;
        }
        out.push(AnonMount {
            minor: m.minor,
            fs_type: m.fs_type,
            source: m.source,
            mount_point: m.mount_point,
        });
    }
    out
}

/// The anonymous-device mounts seen by this process (empty when mountinfo
/// cannot be read, as under most captured trees).
pub fn read_anon(r: &mut Reader) -> Vec<AnonMount> {
    match r.read("/proc/self/mountinfo") {
        Ok(b) => parse_anon(&String::from_utf8_lossy(b)),
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
22 1 252:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
25 22 0:22 / /proc rw,nosuid - proc proc rw
40 22 0:35 / /mnt/my\\040fuse rw,nosuid,nodev shared:20 master:3 - fuse.sshfs host:/x rw,user_id=0
41 40 7:0 / /mnt/my\\040fuse/inner rw - xfs /dev/loop0 rw
42 22 0:50 / /net rw - autofs systemd-1 rw,fd=1
bad line
43 22 0:51 / /nfs rw - nfs4 srv:/e rw
";

    #[test]
    fn parses_fields_and_escapes() {
        let m = parse(SAMPLE.as_bytes());
        assert_eq!(m.len(), 6);
        assert_eq!(m[0].source, "/dev/vda1");
        assert_eq!((m[0].major, m[0].minor), (252, 1));
        assert_eq!(m[2].mount_point, "/mnt/my fuse");
        assert_eq!(m[2].fs_type, "fuse.sshfs");
        assert_eq!(m[3].parent, 40);
    }

    #[test]
    fn classifies_blocking_mounts() {
        let t = MountTable::new(parse(SAMPLE.as_bytes()));
        assert_eq!(t.fd_may_block(22), Some(false));
        assert_eq!(t.fd_may_block(40), Some(true));
        assert_eq!(t.fd_may_block(42), Some(true));
        assert_eq!(t.fd_may_block(43), Some(true));
        assert_eq!(t.fd_may_block(99), None);
        // xfs itself is local, but its mount point is reached through sshfs.
        assert_eq!(t.fd_may_block(41), Some(false));
        assert!(t.path_may_block(41));
        assert!(!t.path_may_block(22));
        assert!(may_block("fuseblk") && may_block("cifs") && !may_block("tmpfs"));
    }

    #[test]
    fn malformed_lines_never_panic() {
        for l in [
            "",
            "1",
            "1 2 3:4",
            "a b c d e f - x",
            "1 2 3:4 / /m o x y",
            "1 2 3:4 / /m o -",
            "\\",
        ] {
            let _ = parse_line(l);
        }
        assert_eq!(unescape("a\\0"), "a\\0");
        assert_eq!(unescape("a\\134b"), "a\\b");
    }

    #[test]
    fn anonymous_mounts_only() {
        let text = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
23 22 0:21 / /proc rw,nosuid shared:12 - proc proc rw
40 22 0:35 / /mnt/b rw,relatime shared:20 - btrfs /dev/vdb1 rw,space_cache
41 22 0:35 /sub /mnt/c rw,relatime - btrfs /dev/vdb1 rw
42 22 0:50 / /merged rw,relatime - overlay overlay rw,lowerdir=/l,upperdir=/u,workdir=/w
bad line
";
        let v = parse_anon(text);
        assert_eq!(v.len(), 3);
        assert_eq!((v[0].minor, v[0].fs_type.as_str()), (21, "proc"));
        assert_eq!(
            (v[1].minor, v[1].fs_type.as_str(), v[1].source.as_str()),
            (35, "btrfs", "/dev/vdb1")
        );
        assert_eq!((v[2].minor, v[2].fs_type.as_str()), (50, "overlay"));
    }

    #[test]
    fn live_mountinfo_has_proc() {
        let mut r = Reader::new("/");
        assert!(read_anon(&mut r).iter().any(|m| m.fs_type == "proc"));
    }
}
