//! Finding a probe target without a call that can hang.
//!
//! A `stat` or `open` of a path on a FUSE, network or automount
//! filesystem waits for the daemon or the server — uninterruptibly once a
//! FUSE daemon has read the request, so neither Ctrl-C nor SIGKILL ends it.
//! So the path is walked here one component at a time, and each component
//! is looked up (`lstat`, `readlink`) only once `/proc/self/mountinfo` says
//! that the mount it lies on is not one of those ([`mountinfo::may_block`]).
//! A target on such a mount is refused before anything on it is touched:
//! there is no block device under it to measure anyway.
//!
//! A bare name such as `loop0`, `nvme0n1` or `dm-0` — what the dashboard,
//! `iostat` and `/proc/diskstats` call a device — is `/dev/<name>` when
//! `/sys/class/block/<name>` exists (`!` in a sysfs name is a `/` under
//! `/dev`, as in `cciss!c0d0`), and a device-mapper name (`iostat -N`) is
//! `/dev/mapper/<name>`. A file of that name in the current directory is
//! `./loop0`.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};

use crate::collect::Reader;
use crate::collect::mountinfo::{self, Mount};
use crate::format;

/// Symlinks followed at most (the kernel's own limit).
const MAX_LINKS: usize = 40;

/// The path to open for `given`: a device name turned into its `/dev`
/// path, anything else made absolute with its symlinks resolved, or an
/// error when it lies on a mount where a lookup may hang. `root` is where
/// `/sys` is read for device names (normally "/"); the mount table is the
/// live one, as the paths looked up are.
pub fn resolve(given: &Path, root: &Path) -> anyhow::Result<PathBuf> {
    if let Some(dev) = device_name(given, root) {
        return Ok(dev);
    }
    // The live mounts, whatever `root` is: the walk looks up live paths.
    let mounts = match Reader::new("/").read("/proc/self/mountinfo") {
        Ok(b) => mountinfo::parse(b),
        // Nothing to go by (no /proc): the path is used as given.
        Err(_) => return Ok(given.to_path_buf()),
    };
    let start = if given.is_absolute() {
        PathBuf::new()
    } else {
        // getcwd reads the kernel's dentries: no filesystem is asked.
        std::env::current_dir()
            .map_err(|e| anyhow::anyhow!("cannot find the current directory for {}: {e}", shown(given)))?
    };
    walk(given, start, &mounts, &|p| lookup(p))
}

/// What one component turned out to be.
#[derive(Debug, PartialEq)]
enum Found {
    /// A symlink to this.
    Link(PathBuf),
    /// Anything else (the open that follows says what is wrong with it).
    Other,
}

fn lookup(p: &Path) -> std::io::Result<Found> {
    let m = std::fs::symlink_metadata(p)?;
    if m.file_type().is_symlink() {
        Ok(Found::Link(std::fs::read_link(p)?))
    } else {
        Ok(Found::Other)
    }
}

/// Walk `given` from `start` (an absolute directory, or empty when `given`
/// is absolute), checking each component's mount before `look` touches it.
fn walk(
    given: &Path,
    start: PathBuf,
    mounts: &[Mount],
    look: &dyn Fn(&Path) -> std::io::Result<Found>,
) -> anyhow::Result<PathBuf> {
    let mut done = PathBuf::from("/");
    for c in start.components().filter(|c| matches!(c, Component::Normal(_))) {
        done.push(c);
    }
    // Components still to walk, the next one last.
    let mut todo: Vec<OsString> = components(given);
    let mut links = 0;
    while let Some(c) = todo.pop() {
        if c == ".." {
            done.pop();
            continue;
        }
        let next = done.join(&c);
        if let Some(m) = mount_of(mounts, &next).filter(|m| mountinfo::may_block(&m.fs_type)) {
            anyhow::bail!(
                "{} is on a {} mount ({}): a probe touches nothing on a FUSE, network or automount filesystem (a hung one holds any call on it, and not even SIGKILL ends the wait), and there is no block device under it to measure",
                shown(given),
                format::escape(&m.fs_type),
                format::escape(&m.mount_point)
            );
        }
        match look(&next) {
            Ok(Found::Link(to)) => {
                links += 1;
                anyhow::ensure!(
                    links <= MAX_LINKS,
                    "{}: more than {MAX_LINKS} symbolic links (a loop?)",
                    shown(given)
                );
                if to.is_absolute() {
                    done = PathBuf::from("/");
                }
                todo.extend(components(&to));
            }
            // A missing or unreadable component: left to the open, which
            // says what is wrong in its own words.
            Ok(Found::Other) | Err(_) => done = next,
        }
    }
    Ok(done)
}

/// The normal and `..` components of `p`, last first.
fn components(p: &Path) -> Vec<OsString> {
    let mut v: Vec<OsString> = p
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            _ => None,
        })
        .collect();
    v.reverse();
    v
}

/// The mount `p` (absolute, without symlinks) lies on: the longest mount
/// point above it, the one mounted last where several share it.
fn mount_of<'a>(mounts: &'a [Mount], p: &Path) -> Option<&'a Mount> {
    let mut best: Option<&Mount> = None;
    for m in mounts {
        let mp = Path::new(&m.mount_point);
        if p.starts_with(mp)
            && best.is_none_or(|b| mp.components().count() >= Path::new(&b.mount_point).components().count())
        {
            best = Some(m);
        }
    }
    best
}

/// `/dev/<name>` for a bare block-device name that sysfs knows.
fn device_name(given: &Path, root: &Path) -> Option<PathBuf> {
    let b = given.as_os_str().as_bytes();
    if b.is_empty() || b.contains(&b'/') || b == b"." || b == b".." {
        return None;
    }
    let r = Reader::new(root);
    // sysfs and /dev are local: these lookups cannot hang.
    if std::fs::symlink_metadata(r.path("/sys/class/block").join(given)).is_err() {
        // A device-mapper name, as `iostat -N` shows it ("vg0-root").
        let mapper = Path::new("/dev/mapper").join(given);
        return std::fs::symlink_metadata(r.path(&mapper)).is_ok().then_some(mapper);
    }
    let dev: Vec<u8> = b.iter().map(|&c| if c == b'!' { b'/' } else { c }).collect();
    Some(Path::new("/dev").join(OsString::from_vec(dev)))
}

fn shown(p: &Path) -> String {
    super::target::describe_path(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTS: &str = "\
22 1 252:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
40 22 0:35 / /mnt/my\\040fuse rw,nosuid,nodev shared:20 - fuse.hangfs hangfs rw,user_id=0
41 40 7:0 / /mnt/my\\040fuse/inner rw - xfs /dev/loop0 rw
43 22 0:51 / /srv/nfs rw - nfs4 srv:/e rw
44 22 7:1 / /srv rw - ext4 /dev/loop1 rw
";

    /// A walk over a made-up tree: `links` maps paths to symlink targets;
    /// every path looked up is recorded.
    fn walk_with(given: &str, cwd: &str, links: &[(&str, &str)]) -> (anyhow::Result<PathBuf>, Vec<PathBuf>) {
        let mounts = mountinfo::parse(MOUNTS.as_bytes());
        let seen = std::cell::RefCell::new(Vec::new());
        let look = |p: &Path| {
            seen.borrow_mut().push(p.to_path_buf());
            Ok(match links.iter().find(|(from, _)| Path::new(from) == p) {
                Some((_, to)) => Found::Link(PathBuf::from(to)),
                None => Found::Other,
            })
        };
        let r = walk(Path::new(given), PathBuf::from(cwd), &mounts, &look);
        (r, seen.into_inner())
    }

    #[test]
    fn nothing_on_a_fuse_or_network_mount_is_looked_up() {
        let (r, seen) = walk_with("/mnt/my fuse/data", "", &[]);
        let e = r.unwrap_err().to_string();
        assert!(
            e.starts_with("/mnt/my fuse/data is on a fuse.hangfs mount (/mnt/my fuse)"),
            "{e}"
        );
        assert_eq!(seen, [PathBuf::from("/mnt")], "only /mnt was looked up");
        // Relative to a directory there, through a symlink to it, and a
        // local mount under it (reached through the FUSE lookup).
        for (given, cwd, links) in [
            ("data", "/mnt/my fuse", &[][..]),
            ("/home/me/link/data", "", &[("/home/me/link", "../../mnt/my fuse")][..]),
            ("/mnt/my fuse/inner/f", "", &[][..]),
            ("/srv/nfs/x", "", &[][..]),
        ] {
            let (r, seen) = walk_with(given, cwd, links);
            assert!(r.is_err(), "{given}: {r:?}");
            assert!(
                !seen
                    .iter()
                    .any(|p| p.starts_with("/mnt/my fuse") || p.starts_with("/srv/nfs")),
                "{given}: {seen:?}"
            );
        }
    }

    #[test]
    fn local_paths_resolve_through_symlinks() {
        let (r, _) = walk_with("big.file", "/srv/data", &[]);
        assert_eq!(r.unwrap(), Path::new("/srv/data/big.file"));
        let (r, _) = walk_with("./a/../b/./c", "/srv", &[("/srv/b", "/var/lib/x")]);
        assert_eq!(r.unwrap(), Path::new("/var/lib/x/c"));
        let (r, _) = walk_with("/srv/l", "", &[("/srv/l", "../home/f")]);
        assert_eq!(r.unwrap(), Path::new("/home/f"));
        // A symlink loop ends with an error, not a hang.
        let (r, _) = walk_with("/srv/a", "", &[("/srv/a", "/srv/b"), ("/srv/b", "a")]);
        assert!(r.unwrap_err().to_string().contains("symbolic links"));
    }

    #[test]
    fn bare_device_names_are_dev_paths() {
        let root = tempfile::tempdir().unwrap();
        let sys = root.path().join("sys/class/block");
        std::fs::create_dir_all(&sys).unwrap();
        for n in ["loop0", "nvme0n1", "cciss!c0d0"] {
            std::fs::create_dir(sys.join(n)).unwrap();
        }
        let r = |s: &str| device_name(Path::new(s), root.path());
        assert_eq!(r("loop0"), Some(PathBuf::from("/dev/loop0")));
        assert_eq!(r("nvme0n1"), Some(PathBuf::from("/dev/nvme0n1")));
        assert_eq!(r("cciss!c0d0"), Some(PathBuf::from("/dev/cciss/c0d0")));
        std::fs::create_dir_all(root.path().join("dev/mapper")).unwrap();
        std::fs::write(root.path().join("dev/mapper/vg0-root"), b"").unwrap();
        assert_eq!(r("vg0-root"), Some(PathBuf::from("/dev/mapper/vg0-root")));
        for not in ["loop9", "./loop0", "/dev/loop0", "", ".."] {
            assert_eq!(r(not), None, "{not}");
        }
    }
}
