//! Filesystems on anonymous devices (major 0: overlay, btrfs, NFS, FUSE,
//! tmpfs, ...), from `/proc/self/mountinfo`, so a process's open file on one
//! can be named by its filesystem: its `st_dev` names no block device.

use serde::Serialize;

use super::Reader;

/// One mount whose device number has major 0.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AnonMount {
    pub minor: u32,
    pub fs_type: String,
    /// The mount source as mountinfo gives it ("/dev/vdb" for btrfs,
    /// "overlay", "server:/export").
    pub source: String,
}

/// Parse mountinfo text: `id parent major:minor root mountpoint options
/// [optional fields] - fstype source superoptions`. Keeps the first mount
/// of each anonymous device.
pub fn parse_anon(text: &str) -> Vec<AnonMount> {
    let mut out: Vec<AnonMount> = Vec::new();
    for line in text.lines() {
        let mut f = line.split(' ');
        let Some(dev) = f.nth(2) else { continue };
        let Some(("0", minor)) = dev.split_once(':') else {
            continue;
        };
        let Ok(minor) = minor.parse::<u32>() else { continue };
        let mut after = f.skip_while(|x| *x != "-").skip(1);
        let (Some(fs_type), Some(source)) = (after.next(), after.next()) else {
            continue;
        };
        if out.iter().any(|m| m.minor == minor) {
            continue;
        }
        out.push(AnonMount {
            minor,
            fs_type: fs_type.to_string(),
            source: source.to_string(),
        });
    }
    out
}

/// The anonymous-device mounts seen by this process (empty when mountinfo
/// cannot be read, as under most replay roots).
pub fn read_anon(r: &mut Reader) -> Vec<AnonMount> {
    match r.read("/proc/self/mountinfo") {
        Ok(b) => parse_anon(&String::from_utf8_lossy(b)),
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
