//! Process reading on the live system: a process that exits between listing
//! and reading, a zombie, pid churn while sampling, and a process whose I/O
//! counters another user may not read (permission denied, which is neither
//! "exited" nor "hidden").

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use iolens::collect::Reader;
use iolens::collect::process::{IoUnavailable, ProcReader};

fn skip(reason: &str) {
    eprintln!("skipped: {reason}");
}

#[test]
fn process_gone_between_listing_and_reading_is_exited() {
    let mut child = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = child.id() as i32;
    // Wait until it has exec'd sleep (its cmdline is set).
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default() != b"sleep\x0030\x00" {
        assert!(Instant::now() < deadline, "sleep did not start");
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut r = Reader::new("/");
    let mut pr = ProcReader::new();
    // Listed (and readable) while it runs ...
    let p = pr.read_one(&mut r, pid).unwrap();
    assert_eq!(&*p.comm, "sleep");
    assert_eq!(&*p.cmdline, "sleep 30");
    assert!(p.io.is_ok(), "{:?}", p.io);
    // ... then it ends and is reaped before the next read.
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(pr.read_one(&mut r, pid), Err(IoUnavailable::Exited));
}

#[test]
fn zombie_is_read_as_state_z_until_reaped() {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id() as i32;
    let mut r = Reader::new("/");
    let mut pr = ProcReader::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    let state = loop {
        let p = pr.read_one(&mut r, pid).unwrap();
        if p.state == 'Z' || Instant::now() > deadline {
            break p.state;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(state, 'Z');
    child.wait().unwrap();
    assert_eq!(pr.read_one(&mut r, pid), Err(IoUnavailable::Exited));
}

#[test]
fn sampling_while_processes_come_and_go_never_fails() {
    // A shell that starts and ends 300 short-lived processes while we read
    // every process on the machine over and over.
    let mut churn = Command::new("sh")
        .args(["-c", "i=0; while [ $i -lt 300 ]; do /bin/true; i=$((i+1)); done"])
        .spawn()
        .unwrap();
    let mut r = Reader::new("/");
    let mut pr = ProcReader::new();
    let mut samples = 0;
    loop {
        let snap = pr.read_all(&mut r).expect("listing /proc");
        samples += 1;
        for p in &snap.procs {
            assert!(p.key.pid > 0);
            match &p.io {
                Ok(_) | Err(IoUnavailable::Exited) | Err(IoUnavailable::PermissionDenied) => {}
                Err(other) => panic!("pid {}: {other:?}", p.key.pid),
            }
        }
        if churn.try_wait().unwrap().is_some() && samples >= 3 {
            break;
        }
    }
    assert!(churn.wait().unwrap().success());
}

/// Not a test on its own: the body that `permission_denied_*` runs as
/// another user (it does nothing unless IOLENS_TEST_READ_PID is set).
#[test]
fn child_reads_a_process_as_another_user() {
    let Ok(pid) = std::env::var("IOLENS_TEST_READ_PID") else {
        return;
    };
    let pid: i32 = pid.parse().unwrap();
    let mut r = Reader::new("/");
    let mut pr = ProcReader::new();
    let target = pr.read_one(&mut r, pid);
    let me = pr.read_one(&mut r, std::process::id() as i32);
    let snap = pr.read_all(&mut r).unwrap();
    let listed = snap.procs.iter().find(|p| p.key.pid == pid).map(|p| p.io.clone());
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    println!("CHILD euid={euid}");
    println!("CHILD target={:?}", target.map(|p| (p.uid, p.io)));
    println!("CHILD self_io_ok={}", me.is_ok_and(|p| p.io.is_ok()));
    println!("CHILD listed={listed:?}");
    println!("CHILD denied>0={} hidden={}", snap.denied() > 0, snap.hidden);
    // A sleeping single-threaded process of another user, over samples:
    // its io stays denied, and its stat is read only when due.
    if let Some(idle) = std::env::var("IOLENS_TEST_IDLE_PID")
        .ok()
        .and_then(|p| p.parse::<i32>().ok())
    {
        let mut seen = Vec::new();
        for _ in 0..8 {
            let snap = pr.read_all(&mut r).unwrap();
            if let Some(p) = snap.procs.iter().find(|p| p.key.pid == idle) {
                seen.push((format!("{:?}", p.io), pr.stat_age(p.key)));
            }
        }
        println!("CHILD idle={seen:?}");
    }
}

fn unprivileged(cmd: &str, args: &[&str]) -> Command {
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", cmd])
        .args(args);
    c
}

/// Root is needed to switch to another user; setpriv must exist; and the
/// binary must be reachable by uid 65534.
fn can_switch_user() -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("needs root to run a reader as another user (setpriv)".into());
    }
    match Command::new("setpriv").arg("--version").output() {
        Ok(o) if o.status.success() => {}
        _ => return Err("setpriv is not installed".into()),
    }
    let exe = std::env::current_exe().unwrap();
    let ok = unprivileged("test", &["-x", exe.to_str().unwrap()])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        return Err(format!("uid 65534 cannot execute {}", exe.display()));
    }
    Ok(())
}

fn hidepid() -> bool {
    std::fs::read_to_string("/proc/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("proc /proc ") && l.contains("hidepid"))
}

#[test]
fn permission_denied_process_is_reported_as_such() {
    if let Err(reason) = can_switch_user() {
        return skip(&reason);
    }
    let exe = std::env::current_exe().unwrap();
    // Root's: a process the child may not read the io of.
    let mut idle = Command::new("sleep").arg("60").spawn().unwrap();
    let out = unprivileged(
        exe.to_str().unwrap(),
        &[
            "--exact",
            "child_reads_a_process_as_another_user",
            "--nocapture",
            "--test-threads=1",
        ],
    )
    .env("IOLENS_TEST_READ_PID", std::process::id().to_string())
    .env("IOLENS_TEST_IDLE_PID", idle.id().to_string())
    .stderr(Stdio::inherit())
    .output()
    .unwrap();
    let _ = idle.kill();
    let _ = idle.wait();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "child failed: {text}");
    let line = |k: &str| {
        text.lines()
            .find_map(|l| l.split_once(&format!("CHILD {k}=")).map(|(_, v)| v))
            .unwrap_or_else(|| panic!("no {k} in child output: {text}"))
            .to_string()
    };
    assert_eq!(line("euid"), "65534");
    // This root-owned test process: stat readable, owner known, I/O denied.
    assert_eq!(line("target"), "Ok((Some(0), Err(PermissionDenied)))");
    assert_eq!(line("listed"), "Some(Err(PermissionDenied))");
    // Its own process is readable.
    assert_eq!(line("self_io_ok"), "true");
    if hidepid() {
        return skip("/proc is mounted with hidepid: root's processes are not listed to others");
    }
    assert_eq!(line("denied>0"), "true hidden=0");
    // The sleeping process: denied in every sample, its stat reused between
    // reads (from its schedstat: it has not run, so nothing it could change
    // has changed), read again when due (at most 5 samples apart).
    let idle = line("idle");
    assert_eq!(idle.matches("Err(PermissionDenied)").count(), 8, "{idle}");
    assert!(idle.contains("Some(1)"), "stat reused: {idle}");
    assert!(!idle.contains("Some(5)"), "stat read when due: {idle}");
}

#[test]
fn permission_denied_counts_in_json_output_of_a_non_root_run() {
    if let Err(reason) = can_switch_user() {
        return skip(&reason);
    }
    let bin = env!("CARGO_BIN_EXE_iolens");
    let ok = unprivileged("test", &["-x", bin]).status().is_ok_and(|s| s.success());
    if !ok {
        return skip(&format!("uid 65534 cannot execute {bin}"));
    }
    let out = unprivileged(bin, &["--json", "--count", "1", "--interval", "0.1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // At least pid 1 and this test process are root's: denied, not hidden.
    assert!(v["processes_denied"].as_u64().unwrap() >= 2, "{v}");
    if !hidepid() {
        assert_eq!(v["processes_hidden"], 0, "{v}");
    }
}

#[test]
fn exec_after_first_sight_refreshes_the_cached_command_line() {
    // A captured tree: pid 300 is first seen as the shell that forked it,
    // then (same pid, same start time) after it exec'd tar.
    let dir = tempfile::tempdir().unwrap();
    let pdir = dir.path().join("proc/300");
    std::fs::create_dir_all(&pdir).unwrap();
    let stat = |comm: &str| {
        format!(
            "300 ({comm}) R 299 300 300 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 4242 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
        )
    };
    std::fs::write(pdir.join("stat"), stat("bash")).unwrap();
    std::fs::write(pdir.join("cmdline"), b"bash\0-c\0tar cf /b.tar /srv\0").unwrap();
    let mut r = Reader::new(dir.path());
    let mut pr = ProcReader::new();
    let p = pr.read_one(&mut r, 300).unwrap();
    assert_eq!(&*p.cmdline, "bash -c tar cf /b.tar /srv");
    std::fs::write(pdir.join("stat"), stat("tar")).unwrap();
    std::fs::write(pdir.join("cmdline"), b"tar\0cf\0/b.tar\0/srv\0").unwrap();
    let p = pr.read_one(&mut r, 300).unwrap();
    assert_eq!((p.key.start_time, &*p.comm), (4242, "tar"));
    assert_eq!(&*p.cmdline, "tar cf /b.tar /srv");
    assert!(
        matches!(p.io, Err(IoUnavailable::Unreadable(_))),
        "no io file in this tree"
    );
}

#[test]
fn kept_stat_file_of_an_ended_process_reads_as_esrch() {
    // What the kept-descriptor fast path relies on: re-reading an open
    // /proc/<pid>/stat gives fresh contents while the process lives, and
    // ESRCH once it is gone (whatever now has its pid).
    let mut child = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = child.id() as i32;
    let mut r = Reader::new("/");
    let fd = r.open_pid_file(pid, "stat").unwrap();
    let first = String::from_utf8_lossy(r.reread(&fd).unwrap()).into_owned();
    assert!(first.starts_with(&format!("{pid} (")), "{first}");
    // Stop it: the kept file shows the new state (T), not the old text.
    // SAFETY: kill(2) on our own child, with a valid signal.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = String::from_utf8_lossy(r.reread(&fd).unwrap()).into_owned();
        if text.contains(") T ") {
            break;
        }
        assert!(Instant::now() < deadline, "never saw state T: {text}");
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let err = r.reread(&fd).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ESRCH), "{err}");
}

/// Read every process once and return `pid`'s.
fn sample_of(pr: &mut ProcReader, r: &mut Reader, pid: i32) -> iolens::collect::process::RawProc {
    let snap = pr.read_all(r).expect("listing /proc");
    snap.procs
        .into_iter()
        .find(|p| p.key.pid == pid)
        .unwrap_or_else(|| panic!("pid {pid} is not listed"))
}

/// Read every process `n` times and return what was read of `pid` each
/// time, with the age of its stat.
fn samples_of(pr: &mut ProcReader, r: &mut Reader, pid: i32, n: usize) -> Vec<(char, i32, u64)> {
    (0..n)
        .filter_map(|_| {
            let snap = pr.read_all(r).expect("listing /proc");
            let p = snap.procs.into_iter().find(|p| p.key.pid == pid)?;
            Some((p.state, p.ppid, pr.stat_age(p.key)?))
        })
        .collect()
}

#[test]
fn an_idle_process_stat_is_reused_for_at_most_the_recheck_period() {
    use iolens::collect::process::STAT_RECHECK_SAMPLES;
    let mut child = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = child.id() as i32;
    std::thread::sleep(Duration::from_millis(200));
    let mut r = Reader::new("/");
    let mut pr = ProcReader::new();
    let n = 2 * STAT_RECHECK_SAMPLES as usize + 1;
    let seen = samples_of(&mut pr, &mut r, pid, n);
    assert_eq!(seen.len(), n, "{seen:?}");
    let me = std::process::id() as i32;
    assert!(seen.iter().all(|(s, ppid, _)| *s == 'S' && *ppid == me), "{seen:?}");
    let ages: Vec<u64> = seen.iter().map(|s| s.2).collect();
    // Reused while idle (its counters do not move) ...
    assert!(ages.iter().any(|a| *a > 0), "{ages:?}");
    // ... but never older than the recheck period.
    assert!(ages.iter().all(|a| *a < STAT_RECHECK_SAMPLES), "{ages:?}");

    // Stopped by a signal (the process's counters do not move): seen as
    // stopped within the recheck period, then read every sample.
    let kill = |sig: &str| Command::new("kill").args([sig, &pid.to_string()]).status().unwrap();
    assert!(kill("-STOP").success());
    std::thread::sleep(Duration::from_millis(100));
    let seen = samples_of(&mut pr, &mut r, pid, n);
    let first_t = seen.iter().position(|s| s.0 == 'T').expect("never seen stopped");
    assert!(first_t < STAT_RECHECK_SAMPLES as usize, "{seen:?}");
    // It ran to stop: where its schedstat tells so, seen at once.
    if std::fs::read(format!("/proc/{pid}/schedstat")).is_ok_and(|b| b != b"0 0 0\n") {
        assert_eq!(first_t, 0, "{seen:?}");
    }
    assert!(seen[first_t..].iter().all(|s| s.0 == 'T' && s.2 == 0), "{seen:?}");
    kill("-CONT");
    child.kill().unwrap();
    child.wait().unwrap();
}

/// sh starts a sleep in the background, prints its pid and waits; killing
/// sh re-parents the sleep (to init or a subreaper) without waking it.
/// `forks`: what the reader is told of the kernel's fork count (a fixed
/// value: /proc is not listed again, and sh is still in the last listing).
/// `due`: whether the sample after the exit is one where the sleep's stat
/// is due again (its pid plus the sample number a multiple of
/// `STAT_RECHECK_SAMPLES`): then only its priorities would be asked for.
fn reparented_idle_process_shows_its_new_parent_at_once(forks: Option<u64>, due: bool) {
    use iolens::collect::process::STAT_RECHECK_SAMPLES as R;
    let mut sh = Command::new("sh")
        .args(["-c", "sleep 30 & echo $!; wait"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    use std::io::BufRead;
    std::io::BufReader::new(sh.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let pid: i32 = line.trim().parse().unwrap();
    let sh_pid = sh.id() as i32;
    std::thread::sleep(Duration::from_millis(200));
    let mut r = Reader::new("/");
    let mut pr = ProcReader::new();
    pr.forks = forks;
    // Samples 1..=n before the exit, n+1 after it.
    let due_after = |n: u64| (pid as u64 + n + 1).is_multiple_of(R);
    let n = (2..2 + R).find(|n| due_after(*n) == due).unwrap_or(3);
    let before = samples_of(&mut pr, &mut r, pid, n as usize);
    assert!(before.iter().all(|s| s.1 == sh_pid), "{before:?}");
    sh.kill().unwrap();
    sh.wait().unwrap();
    let after = samples_of(&mut pr, &mut r, pid, 1);
    let _ = Command::new("kill").arg(pid.to_string()).status();
    assert_eq!(after.len(), 1, "the sleep vanished");
    assert_ne!(after[0].1, sh_pid, "still shown under its dead parent: {after:?}");
}

#[test]
fn a_reparented_idle_process_shows_its_new_parent_at_once() {
    reparented_idle_process_shows_its_new_parent_at_once(None, false);
}

#[test]
fn a_reparented_idle_process_shows_its_new_parent_at_once_without_a_new_listing() {
    reparented_idle_process_shows_its_new_parent_at_once(Some(7), false);
    reparented_idle_process_shows_its_new_parent_at_once(Some(7), true);
}

#[test]
fn proc_is_listed_again_only_when_the_fork_count_moved() {
    use iolens::collect::process::LIST_EVERY_SAMPLES;
    let listed = |pr: &mut ProcReader, r: &mut Reader, pid: u32| {
        let snap = pr.read_all(r).expect("listing /proc");
        snap.procs.iter().any(|p| p.key.pid == pid as i32)
    };
    let mut old = Command::new("sleep").arg("30").spawn().unwrap();
    let mut r = Reader::new("/");
    let mut pr = ProcReader::new();
    pr.forks = Some(100);
    assert!(listed(&mut pr, &mut r, old.id()));
    // A process created while the count (as told) stands still is not
    // listed; one that ended drops out at once.
    let mut new = Command::new("sleep").arg("30").spawn().unwrap();
    old.kill().unwrap();
    old.wait().unwrap();
    assert!(
        !listed(&mut pr, &mut r, new.id()),
        "listed again though no fork was counted"
    );
    assert!(!listed(&mut pr, &mut r, old.id()), "an ended process is still listed");
    // The count moved: listed.
    pr.forks = Some(101);
    assert!(listed(&mut pr, &mut r, new.id()));
    // Unchanged for LIST_EVERY_SAMPLES samples: listed again anyway.
    let mut newer = Command::new("sleep").arg("30").spawn().unwrap();
    let seen = (0..LIST_EVERY_SAMPLES)
        .map(|_| listed(&mut pr, &mut r, newer.id()))
        .collect::<Vec<_>>();
    assert_eq!(seen.iter().filter(|s| **s).count(), 1, "{seen:?}");
    assert!(seen[seen.len() - 1], "{seen:?}");
    for c in [&mut new, &mut newer] {
        c.kill().unwrap();
        c.wait().unwrap();
    }
}

/// A python3 process whose `thread` (the main one, or a worker while the
/// main thread waits in `join`) writes 1 MiB to /dev/null for every line on
/// its stdin, then prints "done".
fn writer_on_demand(in_worker: bool) -> Option<std::process::Child> {
    let body = "import sys\ndef work():\n    print('ready', flush=True)\n    for _ in sys.stdin:\n        open('/dev/null', 'wb').write(b'x' * (1 << 20))\n        print('done', flush=True)\n";
    let run = if in_worker {
        "import threading\nt = threading.Thread(target=work)\nt.start()\nt.join()\n"
    } else {
        "work()\n"
    };
    Command::new("python3")
        .args(["-c", &format!("{body}{run}")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .ok()
}

/// Its threads' count, once it has `n` (python starting up).
fn wait_threads(pid: i32, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count()) != n {
        assert!(Instant::now() < deadline, "pid {pid} never had {n} threads");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The counters of an idle process are not re-read while its schedstat
/// stands still; the first write after that is seen in the very next
/// sample, whichever thread does it.
fn writes_are_seen_in_the_next_sample(in_worker: bool) {
    use std::io::{BufRead, Write};
    let Some(mut child) = writer_on_demand(in_worker) else {
        return skip("python3 not installed");
    };
    let pid = child.id() as i32;
    wait_threads(pid, if in_worker { 2 } else { 1 });
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n");
    // Asleep on its stdin: its schedstat stands still (a busy machine can
    // take a while to get it there).
    let schedstat = || std::fs::read(format!("/proc/{pid}/schedstat")).unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut last = schedstat();
    loop {
        std::thread::sleep(Duration::from_millis(300));
        let now = schedstat();
        if now == last {
            break;
        }
        assert!(Instant::now() < deadline, "pid {pid} never went idle");
        last = now;
    }
    let mut r = Reader::new("/");
    let mut pr = ProcReader::new();
    let read = |pr: &mut ProcReader, r: &mut Reader| {
        let p = sample_of(pr, r, pid);
        (p.io.expect("its io").wchar, pr.io_age(p.key).expect("read"))
    };
    let idle: Vec<(u64, u64)> = (0..4).map(|_| read(&mut pr, &mut r)).collect();
    if !in_worker && std::fs::read(format!("/proc/{pid}/schedstat")).is_ok_and(|b| b != b"0 0 0\n") {
        // Single-threaded and asleep: its io file is left alone.
        assert!(idle.iter().skip(2).all(|s| s.1 > 0), "{idle:?}");
    }
    let mut stdin = child.stdin.take().unwrap();
    for round in 0..3 {
        let before = read(&mut pr, &mut r).0;
        writeln!(stdin, "go").unwrap();
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        assert_eq!(line, "done\n");
        let (after, age) = read(&mut pr, &mut r);
        assert_eq!(age, 0, "round {round}");
        assert!(after >= before + (1 << 20), "round {round}: wchar {before} -> {after}");
    }
    drop(stdin);
    child.wait().unwrap();
}

#[test]
fn a_single_threaded_writer_is_seen_in_the_next_sample() {
    writes_are_seen_in_the_next_sample(false);
}

#[test]
fn a_worker_thread_writing_while_the_main_thread_sleeps_is_seen_in_the_next_sample() {
    writes_are_seen_in_the_next_sample(true);
}

#[test]
fn nice_and_io_priority_set_by_another_process_show_within_the_recheck_period() {
    use iolens::collect::process::{IoClass, STAT_RECHECK_SAMPLES};
    if !Command::new("ionice")
        .arg("-h")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return skip("ionice not installed");
    }
    let mut child = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = child.id() as i32;
    std::thread::sleep(Duration::from_millis(200));
    let mut r = Reader::new("/");
    let mut pr = ProcReader::new();
    let read = |pr: &mut ProcReader, r: &mut Reader| {
        let p = sample_of(pr, r, pid);
        (p.nice, p.ioprio.map(|i| i.class))
    };
    // Idle long enough that its stat is no longer read every sample.
    for _ in 0..2 * STAT_RECHECK_SAMPLES {
        assert_eq!(read(&mut pr, &mut r).0, 0);
    }
    // Neither wakes the sleep.
    let set = |cmd: &str, args: &[&str]| assert!(Command::new(cmd).args(args).status().unwrap().success(), "{cmd}");
    set("renice", &["-n", "7", "-p", &pid.to_string()]);
    set("ionice", &["-c", "3", "-p", &pid.to_string()]);
    let seen: Vec<_> = (0..STAT_RECHECK_SAMPLES).map(|_| read(&mut pr, &mut r)).collect();
    assert_eq!(seen.last(), Some(&(7, Some(IoClass::Idle))), "{seen:?}");
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn with_fewer_descriptors_than_two_per_process_every_process_keeps_its_schedstat() {
    // A budget of the listed processes plus 8: each keeps its schedstat
    // (what tells an idle process, whose stat is then not read), 8 keep a
    // stat file too, and nothing is kept beyond the budget.
    let mut kids: Vec<_> = (0..3)
        .map(|_| Command::new("sleep").arg("30").spawn().unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let mut r = Reader::new("/");
    let listed = ProcReader::new().read_all(&mut r).expect("listing /proc").procs.len();
    let budget = listed + 8;
    let mut pr = ProcReader::new();
    pr.set_fd_budget(budget);
    let pids: Vec<i32> = kids.iter().map(|k| k.id() as i32).collect();
    let mut ages = Vec::new();
    for _ in 0..2 * iolens::collect::process::STAT_RECHECK_SAMPLES {
        let snap = pr.read_all(&mut r).expect("listing /proc");
        let (stat, sched, io) = pr.kept_files();
        assert!(
            stat + sched + io <= budget,
            "{stat} + {sched} + {io} kept, budget {budget}"
        );
        // Processes started or ended since the listing above aside.
        assert!(
            sched + 8 >= snap.procs.len(),
            "{sched} schedstat kept of {}",
            snap.procs.len()
        );
        assert!(
            stat <= budget.saturating_sub(snap.procs.len().min(listed)) + 8,
            "{stat} stat kept"
        );
        for pid in &pids {
            let p = snap
                .procs
                .iter()
                .find(|p| p.key.pid == *pid)
                .expect("the child is listed");
            assert_eq!((p.state, p.ppid), ('S', std::process::id() as i32));
            ages.push(pr.stat_age(p.key).expect("read"));
        }
    }
    // The sleeping children's stat was reused (not read) while idle.
    assert!(ages.iter().any(|a| *a > 0), "{ages:?}");
    assert!(
        ages.iter().all(|a| *a < iolens::collect::process::STAT_RECHECK_SAMPLES),
        "{ages:?}"
    );
    for k in &mut kids {
        let _ = k.kill();
        let _ = k.wait();
    }
}
