use super::*;

fn w(s: &str) -> Vec<Vec<u8>> {
    s.split_whitespace().map(|x| x.as_bytes().to_vec()).collect()
}

fn roots(s: &Sources) -> Vec<(Option<String>, String)> {
    s.roots
        .iter()
        .map(|r| {
            (
                r.dir.as_ref().map(|d| String::from_utf8_lossy(d).into_owned()),
                String::from_utf8_lossy(&r.path).into_owned(),
            )
        })
        .collect()
}

fn plain(paths: &[&str]) -> Vec<(Option<String>, String)> {
    paths.iter().map(|p| (None, p.to_string())).collect()
}

#[test]
fn tar_dashed_bundle_with_directory_and_exclude() {
    let s = sources(Tool::Tar, &w("-czf out.tgz -C /srv data --exclude=*.log"));
    assert_eq!(roots(&s), vec![(Some("/srv".into()), "data".into())]);
    assert_eq!(s.excludes, vec![b"*.log".to_vec()]);
    assert!(s.links_once && !s.holes_skipped && !s.one_fs && s.recurse);
    assert!(s.unknown.is_none() && s.estimate.is_empty());
}

#[test]
fn tar_old_style_letters_take_words_in_order() {
    // f takes out.tar, C takes /srv (in the order of the letters).
    let s = sources(Tool::Tar, &w("cfC out.tar /srv a b"));
    assert_eq!(
        roots(&s),
        vec![(Some("/srv".into()), "a".into()), (Some("/srv".into()), "b".into())]
    );
    let s = sources(Tool::Tar, &w("czvf backup.tgz /etc /home"));
    assert_eq!(roots(&s), plain(&["/etc", "/home"]));
}

#[test]
fn tar_to_stdout_in_a_pipeline() {
    let s = sources(Tool::Tar, &w("cf - ."));
    assert_eq!(roots(&s), plain(&["."]));
    let s = sources(Tool::Tar, &w("-c -f - --one-file-system -S dir"));
    assert_eq!(roots(&s), plain(&["dir"]));
    assert!(s.one_fs && s.holes_skipped);
}

#[test]
fn tar_directory_changes_apply_to_later_operands_and_chain() {
    let s = sources(Tool::Tar, &w("-cf x.tar a -C /srv b -C sub c --directory=/abs d"));
    assert_eq!(
        roots(&s),
        vec![
            (None, "a".into()),
            (Some("/srv".into()), "b".into()),
            (Some("/srv/sub".into()), "c".into()),
            (Some("/abs".into()), "d".into()),
        ]
    );
}

#[test]
fn tar_lists_excludes_and_long_values() {
    let s = sources(
        Tool::Tar,
        &w("--create --file x.tar -T list.txt --exclude *.tmp --hard-dereference"),
    );
    assert!(s.roots.is_empty());
    assert_eq!(s.lists.len(), 1);
    assert_eq!(s.lists[0].path, b"list.txt");
    assert_eq!(s.excludes, vec![b"*.tmp".to_vec()]);
    assert!(!s.links_once);
    let s = sources(Tool::Tar, &w("-cf x.tar --files-from=- "));
    assert_eq!(s.unknown, Some("the file list is read from standard input"));
    let s = sources(Tool::Tar, &w("-cf x.tar -X ex.txt --exclude=a/b src"));
    assert_eq!(roots(&s), plain(&["src"]));
    assert!(s.excludes.is_empty());
    assert_eq!(s.estimate.len(), 2, "{:?}", s.estimate);
}

#[test]
fn tar_modes() {
    assert!(tar::creates(&w("czf x.tgz d")));
    assert!(tar::creates(&w("-rf x.tar d")));
    assert!(tar::creates(&w("--create -f x d")));
    assert!(!tar::creates(&w("xzf x.tgz")));
    assert!(!tar::creates(&w("-tvf x.tar")));
    // The f's value is not a mode letter.
    assert!(!tar::creates(&w("-xf c.tar")));
    assert_eq!(
        sources(Tool::Tar, &w("-cf x.tar")).unknown,
        Some("no source operands on the command line")
    );
}

#[test]
fn rsync_trailing_slash_and_destination() {
    let s = sources(Tool::Rsync, &w("-a src/ dst"));
    assert_eq!(roots(&s), plain(&["src/"]));
    assert!(rsync::contents_only(b"src/"));
    let s = sources(Tool::Rsync, &w("-a src dst"));
    assert_eq!(roots(&s), plain(&["src"]));
    assert!(!rsync::contents_only(b"src"));
    assert!(s.recurse && !s.links_once && s.skips_unchanged);
    let s = sources(Tool::Rsync, &w("-aHx --bwlimit 20m -e ssh a b/ /mnt/dst"));
    assert_eq!(roots(&s), plain(&["a", "b/"]));
    assert!(s.links_once && s.one_fs);
}

#[test]
fn rsync_remote_lists_and_filters() {
    assert_eq!(
        sources(Tool::Rsync, &w("-a host:/srv /dst")).unknown,
        Some("a source on another host")
    );
    assert!(sources(Tool::Rsync, &w("-a /srv host:/dst")).unknown.is_none());
    assert_eq!(
        sources(Tool::Rsync, &w("-a /srv")).unknown,
        Some("no destination: rsync only lists")
    );
    let s = sources(Tool::Rsync, &w("-a --files-from=list /base /dst"));
    assert!(s.roots.is_empty() && !s.recurse);
    assert_eq!(s.lists[0].dir.as_deref(), Some(b"/base".as_slice()));
    assert_eq!(s.lists[0].path, b"list");
    let s = sources(Tool::Rsync, &w("-a --exclude *.o --exclude=cache/ --include x src dst"));
    assert_eq!(s.excludes, vec![b"*.o".to_vec()]);
    assert_eq!(s.estimate.len(), 2, "{:?}", s.estimate);
    assert!(
        sources(Tool::Rsync, &w("--server --sender -logDtpre.iLsfxC . /srv"))
            .unknown
            .is_some()
    );
}

#[test]
fn cp_operands_and_flags() {
    let s = sources(Tool::Cp, &w("-a a b c dst/"));
    assert_eq!(roots(&s), plain(&["a", "b", "c"]));
    assert!(s.recurse && s.links_once && s.holes_skipped);
    let s = sources(Tool::Cp, &w("-r src /mnt/dst"));
    assert!(s.recurse && !s.links_once);
    let s = sources(Tool::Cp, &w("-t /dst -rx a b"));
    assert_eq!(roots(&s), plain(&["a", "b"]));
    assert!(s.one_fs);
    let s = sources(Tool::Cp, &w("--target-directory=/dst a"));
    assert_eq!(roots(&s), plain(&["a"]));
    let s = sources(Tool::Cp, &w("-S .bak --preserve=mode,links -R a b"));
    assert_eq!(roots(&s), plain(&["a"]));
    assert!(s.links_once);
    assert!(sources(Tool::Cp, &w("-al a b")).unknown.is_some());
    assert!(cp::recursive(&w("-a x y")) && cp::recursive(&w("--recursive x y")));
    assert!(!cp::recursive(&w("x y")) && !cp::recursive(&w("-S r x y")));
}

#[test]
fn mv_is_a_copy_keeping_links() {
    let s = sources(Tool::Mv, &w("-v a b /other"));
    assert_eq!(roots(&s), plain(&["a", "b"]));
    assert!(s.links_once && s.recurse);
}

#[test]
fn zip_and_7z() {
    let s = sources(Tool::Zip, &w("-r -9 out.zip dir file -x *.log"));
    assert_eq!(roots(&s), plain(&["dir", "file"]));
    assert!(s.recurse);
    assert_eq!(s.excludes, vec![b"*.log".to_vec()]);
    let s = sources(Tool::Zip, &w("-qr out.zip dir"));
    assert_eq!(roots(&s), plain(&["dir"]));
    assert!(s.recurse);
    assert!(sources(Tool::Zip, &w("-@ out.zip")).unknown.is_some());
    let s = sources(Tool::SevenZip, &w("a -mx=9 -xr!*.tmp out.7z src @more.txt"));
    assert_eq!(roots(&s), plain(&["src"]));
    assert_eq!(s.lists[0].path, b"more.txt");
    assert_eq!(s.excludes, vec![b"*.tmp".to_vec()]);
    assert_eq!(roots(&sources(Tool::SevenZip, &w("a out.7z"))), plain(&["."]));
}

#[test]
fn borg_and_restic() {
    let s = sources(
        Tool::Borg,
        &w("--lock-wait 5 create -x --exclude *.pyc -C lz4 /repo::{now} /home /etc"),
    );
    assert_eq!(roots(&s), plain(&["/home", "/etc"]));
    assert!(s.one_fs && s.links_once && s.skips_unchanged);
    assert_eq!(s.excludes, vec![b"*.pyc".to_vec()]);
    let s = sources(Tool::Restic, &w("-r /repo backup --exclude=*.iso -x /srv"));
    assert_eq!(roots(&s), plain(&["/srv"]));
    assert!(s.one_fs && s.skips_unchanged);
    let s = sources(Tool::Restic, &w("backup --files-from list.txt"));
    assert_eq!(s.lists[0].path, b"list.txt");
    assert!(sources(Tool::Restic, &w("backup --stdin")).unknown.is_some());
}

#[test]
fn cpio_and_dd() {
    let s = sources(Tool::Cpio, &w("-o -H newc"));
    assert_eq!(s.unknown, Some(cpio::STDIN_LIST));
    let s = cpio::from_stdin_file(s, b"/tmp/list");
    assert!(s.unknown.is_none());
    assert_eq!(s.lists[0].path, b"/tmp/list");
    let s = sources(Tool::Dd, &w("if=/dev/vda of=/backup/vda.img bs=4M status=progress"));
    assert_eq!(roots(&s), plain(&["/dev/vda"]));
    assert_eq!((s.byte_cap, s.skip_bytes), (None, 0));
    let s = sources(Tool::Dd, &w("if=big bs=1M count=100 skip=10"));
    assert_eq!((s.byte_cap, s.skip_bytes), (Some(100 << 20), 10 << 20));
    let s = sources(
        Tool::Dd,
        &w("if=big ibs=4k count=1000 skip=5000 iflag=count_bytes,skip_bytes"),
    );
    assert_eq!((s.byte_cap, s.skip_bytes), (Some(1000), 5000));
    assert_eq!(
        sources(Tool::Dd, &w("of=x")).unknown,
        Some("reads standard input (no if=)")
    );
    assert_eq!(other::dd_number(b"2x512"), Some(1024));
    assert_eq!(other::dd_number(b"1kB"), Some(1000));
    assert_eq!(other::dd_number(b"9z"), None);
    assert_eq!(other::dd_number(b"99999999999999G"), None);
}

#[test]
fn getopt_forms() {
    let spec = Spec {
        short_values: b"f",
        long_values: &["file"],
        short_optional: b"",
    };
    let items = getopt(&w("-vf x -fy --file z --file=w -- -a -"), &spec);
    assert_eq!(
        items,
        vec![
            Item::Short(b'v', None),
            Item::Short(b'f', Some(b"x".to_vec())),
            Item::Short(b'f', Some(b"y".to_vec())),
            Item::Long(b"file".to_vec(), Some(b"z".to_vec())),
            Item::Long(b"file".to_vec(), Some(b"w".to_vec())),
            Item::Operand(b"-a".to_vec()),
            Item::Operand(b"-".to_vec()),
        ]
    );
    // A value option at the end of the line has no value (not a panic).
    assert_eq!(getopt(&w("-f"), &spec), vec![Item::Short(b'f', None)]);
}

#[test]
fn patterns() {
    assert!(name_matches(b"*.log", b"a.log"));
    assert!(!name_matches(b"*.log", b"a.log.1"));
    assert!(name_matches(b"a?c*", b"abcdef"));
    assert!(name_matches(b"*", b""));
    assert!(name_matches(b"*a*b", b"xxaxxb"));
    assert!(!name_matches(b"*a*b", b"xxaxxbx"));
    assert!(plain_pattern(b"*.tmp") && !plain_pattern(b"a/b") && !plain_pattern(b"[ab]"));
    assert!(remote_operand(b"host:/x") && remote_operand(b"u@h:x") && remote_operand(b"rsync://h/m"));
    assert!(!remote_operand(b"/a:b") && !remote_operand(b"dir/a:b") && !remote_operand(b"plain"));
}
