use super::*;

fn w(s: &str) -> Vec<Vec<u8>> {
    s.split_whitespace().map(|x| x.as_bytes().to_vec()).collect()
}

fn p(pid: i32, ppid: i32, comm: &str, argv: &str, stdin: Option<u64>, stdout: Option<u64>) -> ProcFacts {
    ProcFacts {
        pid,
        ppid,
        comm: comm.into(),
        argv: w(argv),
        stdin_pipe: stdin,
        stdout_pipe: stdout,
    }
}

#[test]
fn classify_tools_and_modes() {
    assert_eq!(classify("tar", &w("tar czf x.tgz d")), Some(Tool::Tar));
    assert_eq!(classify("tar", &w("/bin/tar -xf x.tar")), None);
    assert_eq!(classify("rsync", &w("rsync -a a b")), Some(Tool::Rsync));
    assert_eq!(classify("7z", &w("7z a x.7z d")), Some(Tool::SevenZip));
    assert_eq!(classify("7z", &w("7z x x.7z")), None);
    assert_eq!(
        classify("borg", &w("/usr/bin/python3 /usr/bin/borg create r::a /home")),
        Some(Tool::Borg)
    );
    assert_eq!(classify("borg", &w("/usr/bin/python3 /usr/bin/borg list r")), None);
    assert_eq!(classify("restic", &w("restic -r /r backup /srv")), Some(Tool::Restic));
    assert_eq!(classify("restic", &w("restic -r /r snapshots")), None);
    assert_eq!(classify("cpio", &w("cpio -o -H newc")), Some(Tool::Cpio));
    assert_eq!(classify("cpio", &w("cpio -i")), None);
    assert_eq!(classify("dd", &w("dd if=/dev/vda of=x")), Some(Tool::Dd));
    assert_eq!(classify("bash", &w("bash -c tar")), None);
    // An empty command line falls back on the comm.
    assert_eq!(classify("cp", &[]), Some(Tool::Cp));
}

#[test]
fn maintenance_commands() {
    assert!(is_maintenance_command("cp", &w("cp -a /srv /mnt")));
    assert!(!is_maintenance_command("cp", &w("cp a b")));
    assert!(is_maintenance_command("tar", &w("tar cf - .")));
    assert!(is_maintenance_command("dd", &w("dd if=/dev/sda of=/dev/sdb")));
    assert!(!is_maintenance_command("tar", &w("tar tf x.tar")));
    assert!(!is_maintenance_command("gzip", &w("gzip -9 x")));
}

#[test]
fn tar_with_its_compressor_and_a_pipeline() {
    // bash(10) runs `tar czf - d | pv > out`: tar(11) forks gzip(12);
    // pv(13) reads the pipe tar's child writes (pipe 500) — tar itself
    // writes pipe 400 into gzip.
    let procs = vec![
        p(10, 1, "bash", "bash", None, None),
        p(11, 10, "tar", "tar czf - d", None, Some(500)),
        p(12, 11, "gzip", "gzip", Some(400), Some(500)),
        p(13, 10, "pv", "pv -q", Some(500), None),
        p(14, 10, "sleep", "sleep 9", None, None),
    ];
    let g = group(&procs);
    assert_eq!(g.len(), 1);
    assert_eq!((g[0].tool, g[0].root), (Tool::Tar, 11));
    assert_eq!(g[0].tree, vec![11, 12]);
    assert_eq!(g[0].pipeline, vec![13]);
}

#[test]
fn rsync_forks_are_one_job_and_two_jobs_stay_apart() {
    let procs = vec![
        p(20, 1, "rsync", "rsync -a a b", None, None),
        p(21, 20, "rsync", "rsync -a a b", None, None),
        p(22, 21, "rsync", "rsync -a a b", None, None),
        p(30, 1, "cp", "cp -r x y", None, None),
        // A list producer feeding cpio.
        p(40, 1, "find", "find .", None, Some(900)),
        p(41, 1, "cpio", "cpio -o", Some(900), None),
    ];
    let g = group(&procs);
    let roots: Vec<(i32, Tool)> = g.iter().map(|g| (g.root, g.tool)).collect();
    assert_eq!(roots, vec![(20, Tool::Rsync), (30, Tool::Cp), (41, Tool::Cpio)]);
    assert_eq!(g[0].tree, vec![20, 21, 22]);
    assert_eq!(g[2].pipeline, vec![40]);
}

#[test]
fn a_cycle_in_a_racy_listing_ends() {
    let procs = vec![
        p(50, 51, "cp", "cp -r a b", None, None),
        p(51, 50, "cp", "cp -r c d", None, None),
    ];
    // Each claims the other as an ancestor: no root, and no hang.
    assert!(group(&procs).is_empty());
}
