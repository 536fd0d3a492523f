//! A captured tree (`--root`) is read without ever leaving it: a symlink
//! in the tree (`sys/block/evil -> /outside`, a process's `task` or the
//! cgroup mount point linked out of the tree) or a `..` path from the
//! tree's own mount table is neither listed, nor stat'ed, nor read through.
//! Each case puts recognisable entries in a directory outside the tree and
//! checks that none of them shows up. (The same links to a hung FUSE mount
//! are in `fuse_hang.rs`: there following one never comes back.)

use std::os::unix::fs::symlink;
use std::path::Path;

use iolens::collect::cgroup::CgroupReader;
use iolens::collect::process::threads;
use iolens::collect::process::{ProcKey, ProcSnapshot};
use iolens::collect::{Reader, procinfo, sysblock};

/// A tree under `base/tree` and a directory `base/outside` full of things
/// that must never be seen from the tree.
fn tree(base: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (root, out) = (base.join("tree"), base.join("outside"));
    for d in ["proc/4242", "sys/block/sda", "sys/fs"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    for d in ["evil1", "holders/leak", "task/4242", "cg/leak.slice"] {
        std::fs::create_dir_all(out.join(d)).unwrap();
    }
    std::fs::write(out.join("evil1/partition"), "1\n").unwrap();
    std::fs::write(out.join("size"), "2048\n").unwrap();
    std::fs::write(out.join("task/4242/io"), "rchar: 1\n").unwrap();
    std::fs::write(out.join("cg/cgroup.controllers"), "io\n").unwrap();
    symlink("/leak/cwd", out.join("cwd")).unwrap();
    std::fs::write(root.join("sys/block/sda/size"), "4096\n").unwrap();
    (root, out)
}

#[test]
fn symlinks_out_of_a_captured_tree_are_not_followed() {
    let base = tempfile::tempdir().unwrap();
    let (root, out) = tree(base.path());
    symlink(&out, root.join("sys/block/evil")).unwrap();
    symlink(out.join("holders"), root.join("sys/block/sda/holders")).unwrap();
    symlink(out.join("task"), root.join("proc/4242/task")).unwrap();
    symlink(&out, root.join("proc/4343")).unwrap();
    let mut r = Reader::new(&root);

    let devs = sysblock::read_devices(&mut r);
    let names: Vec<&str> = devs.iter().map(|d| d.name.as_str()).collect();
    assert!(
        !names.contains(&"evil1"),
        "a partition listed from outside the tree: {names:?}"
    );
    for d in &devs {
        assert!(
            d.holders.is_empty(),
            "{}: holders from outside the tree: {:?}",
            d.name,
            d.holders
        );
        assert_eq!(d.size_bytes.filter(|_| d.name != "sda"), None, "{}", d.name);
    }
    assert_eq!(
        devs.iter().find(|d| d.name == "sda").and_then(|d| d.size_bytes),
        Some(4096 * 512)
    );

    assert_eq!(
        threads::read_threads(&mut r, 4242),
        None,
        "task/ listed outside the tree"
    );

    let key = ProcKey {
        pid: 4343,
        start_time: 1,
    };
    let info = procinfo::read(&mut r, key, "x", None);
    assert_eq!(info.cwd, None, "cwd link read outside the tree");
}

#[test]
fn cgroup_mount_points_out_of_a_captured_tree_are_not_walked() {
    for (how, mount) in [
        ("a symlinked mount point", "/sys/fs/cgroup"),
        ("a .. path", "/../outside/cg"),
    ] {
        let base = tempfile::tempdir().unwrap();
        let (root, out) = tree(base.path());
        symlink(out.join("cg"), root.join("sys/fs/cgroup")).unwrap();
        std::fs::write(root.join("proc/mounts"), format!("cgroup2 {mount} cgroup2 rw 0 0\n")).unwrap();
        let mut r = Reader::new(&root);
        let snap = CgroupReader::new().read(&mut r, &ProcSnapshot::default());
        assert_eq!(snap.walked, 1, "{how}: walked outside the tree: {:?}", snap.notes);
        assert!(
            snap.notes.iter().any(|n| n.contains("not listable")),
            "{how}: {:?}",
            snap.notes
        );
    }
}
