//! Recordings carry the jobs: a sample's jobs read back as written and
//! replay into the model's job views; a sample written before jobs (and
//! exit statuses) were recorded still reads, without them.

use iolens::collect::RawSample;
use iolens::collect::taskstats::{ExitBatch, ExitRecord};
use iolens::model::jobs::Tool;
use iolens::model::jobs::track::{JobInput, Total};
use iolens::record::file::{Header, Recording, Writer};

fn sample(t: u64) -> RawSample {
    RawSample {
        mono_ns: t * 1_000_000_000,
        jobs: vec![JobInput {
            key: (700, 12),
            tool: Tool::Rsync,
            command: "rsync -a /srv/ /mnt/b/".into(),
            pids: vec![700, 701],
            position: Some(t * 100_000_000),
            total: Total::Known {
                files: 600,
                bytes: 1_000_000_000,
            },
            notes: vec!["files already up to date are skipped unread".into()],
            current: Some(("/srv/a\x1b.bin".into(), 5, Some(10))),
            files_done: Some(60),
            files_why: None,
            age_ns: None,
            gone: false,
        }],
        exits: ExitBatch {
            active: true,
            records: vec![ExitRecord {
                pid: 9,
                tgid: 9,
                ppid: 1,
                uid: 0,
                comm: "sh".into(),
                etime_us: 1,
                exit_status: Some(3 << 8),
                recv_boot_ns: 1,
                io: Default::default(),
            }],
            ..Default::default()
        },
        ..Default::default()
    }
}

#[test]
fn jobs_are_recorded_and_replayed_and_old_samples_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jobs.rec");
    let header = Header {
        host: "h".into(),
        clk_tck: 100.0,
        ..Default::default()
    };
    let mut w = Writer::open(&path, &header, None).unwrap();
    for t in 1..=3 {
        w.append(&sample(t), None).unwrap();
    }
    drop(w);
    let rec = Recording::open(&path).unwrap();
    let back: Vec<RawSample> = rec.segments[0].samples.iter().map(|f| rec.sample(f).unwrap()).collect();
    assert_eq!(back.len(), 3);
    assert_eq!(back[2].jobs, sample(3).jobs);
    assert_eq!(back[2].exits.records[0].exit_status, Some(3 << 8));
    // Replayed: the model's job view, 30 % at 100 MB/s.
    let mut m = iolens::model::Model::default();
    for s in back {
        m.update(s);
    }
    let v = &m.jobs.views[0];
    assert_eq!((v.pid, v.tool, v.percent), (700, Tool::Rsync, Some(30.0)));
    assert_eq!(v.rate_bps, Some(100_000_000.0));
    // Its traced files done replay as counted.
    assert_eq!(v.files_done, Some(60));
    // A sample as recorded before jobs: no "jobs", no "exit_status".
    let mut old = serde_json::to_value(sample(1)).unwrap();
    let o = old.as_object_mut().unwrap();
    o.remove("jobs");
    o["exits"]["records"][0].as_object_mut().unwrap().remove("exit_status");
    let s: RawSample = serde_json::from_value(old).unwrap();
    assert!(s.jobs.is_empty());
    assert_eq!(s.exits.records[0].exit_status, None);
    // A job as recorded before its files were traced: no files done.
    let mut old = serde_json::to_value(sample(1)).unwrap();
    let j = old["jobs"][0].as_object_mut().unwrap();
    for k in ["files_done", "files_why", "gone"] {
        assert!(j.remove(k).is_some(), "{k}");
    }
    let s: RawSample = serde_json::from_value(old).unwrap();
    assert_eq!(
        (s.jobs[0].files_done, s.jobs[0].files_why.clone(), s.jobs[0].gone),
        (None, None, false)
    );
}
