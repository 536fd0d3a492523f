//! Per-cgroup I/O on fixture trees: the collector reads a copy of
//! `tests/fixtures/cgroup-v2` (systemd, Docker and Kubernetes-shaped, io
//! controller on) or `tests/fixtures/cgroup-v1` (this VM's hybrid layout:
//! blkio on v1, v2 without io), the test advances counters by hand between
//! samples, and the rates are checked against hand-computed values.

use std::path::Path;

use iolens::collect::Collector;
use iolens::collect::cgroup::names::CgroupKind;
use iolens::collect::cgroup::{CgroupReader, Hierarchy};
use iolens::collect::sample::HostInfo;
use iolens::model::Model;
use iolens::model::cgroup::{CgroupRow, Source};
use iolens::ui::{self, Pane, Popup, ViewState};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
const ID: &str = "3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a19";
const POD: &str = "7c1e2d3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f";
const PODMAN: &str = "9a8b7c6d5e4f30211203948576a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7";
const ROOTLESS: &str = "b1c2d3e4f5a697881223344556677889aabbccddeeff00112233445566778899";

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
}

struct Tree {
    dir: tempfile::TempDir,
    collector: Collector,
    model: Model,
}

impl Tree {
    fn new(fixture: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        copy_tree(&Path::new(FIX).join(fixture), dir.path());
        let mut collector = Collector::new(dir.path());
        collector.cgroups = Some(CgroupReader::new());
        Tree {
            dir,
            collector,
            model: Model::new(HostInfo::default(), 100.0),
        }
    }

    fn write(&self, rel: &str, text: &str) {
        std::fs::write(self.dir.path().join(rel), text).unwrap();
    }

    /// Take a sample stamped `t_s` seconds.
    fn sample_at(&mut self, t_s: f64) {
        let mut s = self.collector.sample();
        s.mono_ns = (t_s * 1e9) as u64;
        self.model.update(s);
    }

    fn row(&self, path: &str) -> &CgroupRow {
        let v = self.model.cgroups.as_ref().expect("cgroups in the model");
        v.rows.iter().find(|r| r.path == path).unwrap_or_else(|| {
            panic!(
                "no row {path} in {:?}",
                v.rows.iter().map(|r| &r.path).collect::<Vec<_>>()
            )
        })
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6 * b.abs().max(1.0)
}

fn io_proc(rb: u64) -> String {
    format!("rchar: {rb}\nwchar: 0\nsyscr: 10\nsyscw: 10\nread_bytes: {rb}\nwrite_bytes: 0\ncancelled_write_bytes: 0\n")
}

fn psi(some: u64, full: u64) -> String {
    format!(
        "some avg10=1.50 avg60=0.80 avg300=0.20 total={some}\nfull avg10=0.50 avg60=0.30 avg300=0.10 total={full}\n"
    )
}

const NGINX: &str = "/system.slice/nginx.service";

/// Sample the v2 tree at t = 0, 1, 2, 3 s with nginx.service reading
/// 1,900,000 B/s (30 req/s) and writing 500,000 B/s (10 req/s) on sdb, and
/// its loop0 reads at 1,000,000 B/s.
fn v2_run() -> Tree {
    let mut t = Tree::new("cgroup-v2");
    let cg = "sys/fs/cgroup";
    for k in 0..4u64 {
        let sdb = format!(
            "8:16 rbytes={} wbytes={} rios={} wios={} dbytes=0 dios=0\n",
            10_000_000 + k * 1_900_000,
            2_000_000 + k * 500_000,
            100 + k * 30,
            40 + k * 10
        );
        let stat = format!(
            "{sdb}8:0 rbytes=4096 wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n7:0 rbytes={} wbytes=0 rios={} wios=0 dbytes=0 dios=0\n",
            1_048_576 + k * 1_000_000,
            16 + k * 8
        );
        t.write(&format!("{cg}{NGINX}/io.stat"), &stat);
        t.write(
            &format!("{cg}{NGINX}/io.pressure"),
            &psi(1000 + k * 250_000, 400 + k * 100_000),
        );
        t.write("proc/100/io", &io_proc(5_000_000 + k * 1_500_000));
        t.write(
            &format!("{cg}/system.slice/docker-{ID}.scope/io.stat"),
            &format!(
                "8:0 rbytes=0 wbytes={} rios=0 wios={} dbytes=0 dios=0 cost.usage={} cost.wait=20 cost.indebt=0 cost.indelay=0\n",
                8192 + k * 40_960,
                2 + k * 10,
                500 + k * 1000
            ),
        );
        t.sample_at(k as f64);
    }
    t
}

#[test]
fn v2_rates_names_limits_pressure() {
    let t = v2_run();
    let v = t.model.cgroups.as_ref().unwrap();
    assert_eq!(v.hierarchy, Some(Hierarchy::V2));
    assert_eq!(v.counted_devices, None);
    // Skipped: idle.slice (zero counters, no process), the pod slice (empty
    // io.stat, no process), the root (no io.stat, no process).
    let mut paths: Vec<&str> = v.rows.iter().map(|r| r.path.as_str()).collect();
    paths.sort_unstable();
    assert_eq!(paths.len(), 7, "{paths:?}");
    assert!(!paths.contains(&"/idle.slice") && !paths.contains(&"/"), "{paths:?}");

    let n = t.row(NGINX);
    assert_eq!(
        (n.kind, n.name.as_str(), n.source),
        (CgroupKind::Systemd, "nginx.service", Source::Kernel)
    );
    assert_eq!(n.pids, [100, 101]);
    let sdb = n.devices.iter().find(|d| d.device == "sdb").unwrap();
    let r = sdb.rates.unwrap();
    assert!(close(r.read_bps, 1_900_000.0) && close(r.write_bps, 500_000.0), "{r:?}");
    assert!(
        close(r.read_iops.unwrap(), 30.0) && close(r.write_iops.unwrap(), 10.0),
        "{r:?}"
    );
    // Whole disks only: sdb + sda (idle); loop0's 1 MB/s is not added.
    let loop0 = n.devices.iter().find(|d| d.device == "loop0").unwrap();
    assert!(!loop0.in_total && close(loop0.rates.unwrap().read_bps, 1_000_000.0));
    let total = n.rates.unwrap();
    assert!(
        close(total.read_bps, 1_900_000.0) && close(total.read_iops.unwrap(), 30.0),
        "{total:?}"
    );
    // Own rbps 2 MB/s; wbps 1 MB/s from system.slice (hierarchical on v2).
    assert_eq!(sdb.limits.rbps, Some(2_000_000));
    assert_eq!(sdb.limits.wbps, None);
    assert_eq!(
        (sdb.effective_limits.rbps, sdb.effective_limits.wbps),
        (Some(2_000_000), Some(1_000_000))
    );
    // 1.9 MB/s over 3 s ≥ 90 % of 2 MB/s; 0.5 MB/s < 90 % of 1 MB/s.
    assert_eq!(sdb.at_limit, Some(true));
    assert_eq!(sdb.at_limits, ["rbps"]);
    assert!(n.at_limit);
    assert_eq!(loop0.at_limit, None, "no limit on loop0");
    // Pressure: Δsome 250,000 µs per 1 s = 25 %, Δfull 100,000 µs = 10 %.
    let p = n.pressure.unwrap();
    assert!(
        close(p.some_pct.unwrap(), 25.0) && close(p.full_pct.unwrap(), 10.0),
        "{p:?}"
    );
    assert_eq!(p.some.unwrap().avg10, 1.5);
    // The processes' own I/O is summed beside: pid 100 at 1.5 MB/s.
    assert_eq!((n.processes.count, n.processes.without_rates), (2, 0));
    assert!(close(n.processes.read_bps, 1_500_000.0));
    assert_eq!(n.weight.as_ref().unwrap().per_device.len(), 1);

    let d = t.row(&format!("/system.slice/docker-{ID}.scope"));
    assert_eq!(d.kind, CgroupKind::Docker);
    assert_eq!(d.name, "docker 3f2a9c1d8e7b (web-frontend)");
    assert_eq!(d.container_name.as_deref(), Some("web-frontend"));
    let sda = &d.devices[0];
    assert!(close(sda.rates.unwrap().write_bps, 40_960.0));
    assert!(close(sda.iocost.unwrap().usage_us_per_s.unwrap(), 1000.0));

    let k = v.rows.iter().find(|r| r.kind == CgroupKind::Kubernetes).unwrap();
    assert_eq!(k.name, format!("pod {POD} / 0a1b2c3d4e5f"));
    assert_eq!(k.pod_uid.as_deref(), Some(POD));
    assert!(close(k.rates.unwrap().read_bps, 0.0));

    // Podman: a rootful container named from the storage's containers.json,
    // a rootless one (user@1000.service) from alice's volatile list.
    let p = t.row(&format!("/machine.slice/libpod-{PODMAN}.scope"));
    assert_eq!(
        (p.kind, p.name.as_str()),
        (CgroupKind::Podman, "podman 9a8b7c6d5e4f (db-primary)")
    );
    assert_eq!(
        (p.container_id.as_deref(), p.container_name.as_deref()),
        (Some(PODMAN), Some("db-primary"))
    );
    let user = format!("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-{ROOTLESS}.scope");
    assert_eq!(t.row(&user).name, "podman b1c2d3e4f5a6 (fedora-toolbox-41)");

    let init = t.row("/init.scope");
    assert!(init.devices.is_empty());
    assert_eq!(init.rates.unwrap().total_bps(), 0.0);
    // The v2 run has every field: request rates, pressure, limits.
    let json = iolens::batch::json_report(&t.model, 10);
    table_names_are_the_outputs_names(&t.model, json["cgroups"].as_array().unwrap());
}

/// The hybrid layout of this VM: rows from v1 blkio; kernel counters only on
/// loop0 (the only device in the root's throttle file); vda uncounted, so
/// every row's total is its processes' own I/O.
fn v1_run() -> Tree {
    let mut t = Tree::new("cgroup-v1");
    let k = "sys/fs/cgroup/blkio";
    let rw = |dev: &str, r: u64| {
        format!(
            "{dev} Read {r}\n{dev} Write 0\n{dev} Sync {r}\n{dev} Async 0\n{dev} Discard 0\n{dev} Total {r}\nTotal {r}\n"
        )
    };
    for step in 0..3u64 {
        // 20,000,000 B/s and 305 req/s on loop0 for iolens-a; samples 2 s apart.
        t.write(
            &format!("{k}/iolens-a/blkio.throttle.io_service_bytes"),
            &rw("7:0", 26_214_400 + step * 40_000_000),
        );
        t.write(
            &format!("{k}/iolens-a/blkio.throttle.io_serviced"),
            &rw("7:0", 400 + step * 610),
        );
        t.write("proc/400/io", &io_proc(26_214_400 + step * 40_000_000));
        t.write("proc/401/io", &io_proc(1_000_000 + step * 10_000_000));
        t.write(
            "sys/fs/cgroup/unified/iolens-a/io.pressure",
            &psi(200_000 + step * 400_000, 100_000),
        );
        t.sample_at(step as f64 * 2.0);
    }
    t
}

#[test]
fn v1_throttle_counters_and_fallback() {
    let t = v1_run();
    let v = t.model.cgroups.as_ref().unwrap();
    assert_eq!(v.hierarchy, Some(Hierarchy::V1Blkio));
    assert_eq!(v.counted_devices.as_deref(), Some(&["loop0".to_string()][..]));
    assert!(v.rows.iter().all(|r| r.path != "/empty"), "empty cgroup skipped");

    let a = t.row("/iolens-a");
    assert_eq!(a.source, Source::Processes);
    let total = a.rates.unwrap();
    assert!(close(total.read_bps, 20_000_000.0), "{total:?}");
    assert_eq!(total.read_iops, None, "processes cannot count requests");
    let l = &a.devices[0];
    assert_eq!(l.device, "loop0");
    let r = l.rates.unwrap();
    assert!(
        close(r.read_bps, 20_000_000.0) && close(r.read_iops.unwrap(), 305.0),
        "{r:?}"
    );
    assert_eq!(l.effective_limits.rbps, Some(20_000_000));
    assert_eq!(l.at_limit, Some(true));
    assert!(a.at_limit);
    // Pressure from the v2 cgroup of the same path, where pid 400 is: 400,000 µs / 2 s.
    assert!(close(a.pressure.unwrap().some_pct.unwrap(), 20.0));
    assert_eq!(a.systemd_path.as_deref(), Some("/user.slice/session-1.scope"));

    let p = t.row("/plain");
    assert_eq!(p.source, Source::Processes);
    assert!(p.devices.is_empty());
    assert!(close(p.rates.unwrap().read_bps, 5_000_000.0));
    // pid 401 is in the v2 root, not /plain: no pressure can be claimed.
    assert_eq!(p.pressure, None);
    assert!(!p.at_limit);
    assert_eq!(p.systemd_path.as_deref(), Some("/system.slice/backup.service"));

    let text = iolens::batch::text_report(&t.model, 10);
    assert!(
        text.contains("cgroups (cgroup v1 blkio, kernel counters on loop0)"),
        "{text}"
    );
    assert!(text.contains("AT LIMIT (rbps, 3s window)"), "{text}");
    assert!(text.contains("limit rbps 20.0 MB/s"), "{text}");
    // --units raw: the cgroup rates and limits in plain bytes/s too;
    // --top 0: no cgroup section, as no process section.
    let raw = iolens::batch::text_report_in(
        &t.model,
        10,
        iolens::batch::TextStyle {
            units: iolens::cli::Units::Raw,
            wide: false,
        },
    );
    assert!(raw.contains("limit rbps 20000000"), "{raw}");
    let section = &raw[raw.find("\ncgroups (").unwrap()..];
    assert!(!section.contains("B/s"), "{section}");
    let none = iolens::batch::text_report_in(&t.model, 0, Default::default());
    assert!(!none.contains("cgroups (") && !none.contains("/iolens-a"), "{none}");
    let json = iolens::batch::json_report(&t.model, 10);
    let rows = json["cgroups"].as_array().unwrap();
    let a = rows.iter().find(|r| r["path"] == "/iolens-a").unwrap();
    assert_eq!(a["source"], "processes");
    assert_eq!(a["kind"], "path");
    assert_eq!(a["at_limit"], true);
    assert_eq!(a["devices"][0]["effective_limits"]["rbps"], 20_000_000);
    assert_eq!(a["rates"]["read_iops"], serde_json::Value::Null);
    let plain = rows.iter().find(|r| r["path"] == "/plain").unwrap();
    assert_eq!(plain["pressure"], serde_json::Value::Null);
    assert_eq!(json["cgroups_info"]["hierarchy"], "v1_blkio");
}

/// The names the cgroup table records for JSON and the exporter are the
/// ones those outputs use (public interfaces, not generated from the
/// table): each JSON field is in some row, each counter is declared.
fn table_names_are_the_outputs_names(model: &iolens::model::Model, rows: &[serde_json::Value]) {
    use iolens::present::cgroup::CgCol;
    let mut e = iolens::export::metrics::Exported::new(1);
    e.update(model, 1.0);
    let om = e.openmetrics();
    let mut checked = 0;
    for c in CgCol::ALL {
        for name in c.def().json {
            let found = rows.iter().any(|r| {
                let v = name.split('.').try_fold(r, |v, k| v.as_object()?.get(k));
                v.is_some()
            });
            assert!(found, "{c:?}: no JSON field {name} in the cgroup rows");
            checked += 1;
        }
        for name in c.def().metric {
            assert!(
                om.contains(&format!("# TYPE iolens_{name} counter")),
                "{c:?}: no metric {name} in {om}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 15, "{checked}");
}

#[test]
fn first_sample_and_missing_hierarchy() {
    let mut t = Tree::new("cgroup-v1");
    t.sample_at(0.0);
    let a = t.row("/iolens-a");
    assert_eq!(a.rates, None, "no rates before two samples");
    assert_eq!(a.devices[0].rates, None);
    assert_eq!(a.devices[0].at_limit, None);
    // No cgroup mounts at all: a note, no rows, no panic.
    t.write("proc/mounts", "proc /proc proc rw 0 0\n");
    t.sample_at(1.0);
    let v = t.model.cgroups.as_ref().unwrap();
    assert!(v.rows.is_empty());
    assert!(v.notes[0].contains("no cgroup hierarchy"), "{:?}", v.notes);
}

#[test]
fn counter_going_backwards_is_no_rate() {
    let mut t = Tree::new("cgroup-v1");
    t.sample_at(0.0);
    let k = "sys/fs/cgroup/blkio/iolens-a";
    t.write(
        &format!("{k}/blkio.throttle.io_service_bytes"),
        "7:0 Read 5\n7:0 Write 0\nTotal 5\n",
    );
    t.sample_at(1.0);
    assert_eq!(t.row("/iolens-a").devices[0].rates, None);
}

/// User names come from the host's user database (the fixture's processes
/// are owned by whoever checked the tree out): pin them so the snapshot does
/// not depend on the machine.
fn pin_users(model: &mut Model) {
    for p in &mut model.procs {
        p.raw.user = Some("root".into());
    }
}

fn draw(model: &Model, view: &ViewState, w: u16, h: u16) -> Terminal<TestBackend> {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| ui::render(f, model, view)).unwrap();
    t
}

fn line_with<'a>(screen: &'a str, what: &str) -> &'a str {
    screen
        .lines()
        .find(|l| l.contains(what))
        .unwrap_or_else(|| panic!("no line with {what} in\n{screen}"))
}

fn cgroups_view(sel: &str) -> ViewState {
    ViewState {
        show_cgroups: true,
        focus: Pane::Cgroups,
        cg_sel: Some(sel.to_string()),
        ..Default::default()
    }
}

/// The cgroups pane on the v2 run: nginx.service reads 1.9 MB/s (30 req/s)
/// on sdb against an effective rbps limit of 2 MB/s (95 % over 3 s: at its
/// limit), io pressure some 25 % / full 10 %; loop0's 1 MB/s is not in
/// its total.
#[test]
fn dashboard_cgroups_pane_v2() {
    let mut t = v2_run();
    pin_users(&mut t.model);
    let view = cgroups_view(NGINX);
    let screen = draw(&t.model, &view, 120, 40).backend().to_string();
    insta::assert_snapshot!("cgroups_pane_v2_120x40", screen);
    let n = line_with(&screen, "nginx.service");
    for want in [
        "kernel",
        "1.90 MB/s",
        "500 kB/s",
        "30.0",
        "10.0",
        "25.0%",
        "sdb rbps 2.00 MB/s",
        "AT 95%",
    ] {
        assert!(n.contains(want), "{want} not in {n}");
    }
    assert!(
        screen.contains("Cgroups 7 · cgroup v2, kernel counters on every device"),
        "{screen}"
    );
    let d = line_with(&screen, "docker 3f2a9c1d8e7b (web-fronte…");
    assert!(d.contains("41.0 kB/s") && d.contains("none"), "{d}");
    // Sorted by READ/s, busiest first: nginx is the first row.
    let first = screen.lines().position(|l| l.contains("nginx.service")).unwrap();
    assert!(screen.lines().nth(first - 1).unwrap().contains("READ/s▼"), "{screen}");
    let small = draw(&t.model, &view, 80, 24).backend().to_string();
    insta::assert_snapshot!("cgroups_pane_v2_80x24", small);
    let n = line_with(&small, "nginx.service");
    assert!(
        n.contains("1.90 MB/s") && n.contains("AT 95%") && n.contains("kernel"),
        "{n}"
    );
    // 2 of the 7 rows fit: the title says so, as the other panes do.
    assert!(small.contains("Cgroups 7 · 5 more: ↓ or z to maximise"), "{small}");
    // Sorted by a column too narrow to be kept at 80 columns: it is shown,
    // with its arrow.
    let by_procs = ViewState {
        cg_sort: iolens::ui::cgroups::CgCol::Procs,
        ..cgroups_view(NGINX)
    };
    let s = draw(&t.model, &by_procs, 80, 24).backend().to_string();
    assert!(line_with(&s, "CGROUP").contains("PROCS▼"), "{s}");
}

/// Enter on nginx.service: its devices (sdb at its limit, loop0 not in the
/// total) and its processes.
#[test]
fn dashboard_cgroup_detail_v2() {
    let t = v2_run();
    let view = ViewState {
        popup: Popup::Cgroup(NGINX.to_string()),
        ..cgroups_view(NGINX)
    };
    let screen = draw(&t.model, &view, 120, 40).backend().to_string();
    insta::assert_snapshot!("cgroup_detail_v2_120x40", screen);
    let sdb = line_with(&screen, "┃sdb ");
    for want in [
        "1.90 MB/s",
        "500 kB/s",
        "30.0",
        "AT rbps 95%",
        "rbps 2.00 MB/s wbps 1.00 MB/s (own rbps 2.00 MB/s)",
    ] {
        assert!(sdb.contains(want), "{want} not in {sdb}");
    }
    assert!(line_with(&screen, "┃loop0 *").contains("1.00 MB/s"), "{screen}");
    assert!(
        screen.contains("pressure some   25.0% over the interval (avg10 1.50%"),
        "{screen}"
    );
    assert!(screen.contains("processes (2)"), "{screen}");
    assert!(line_with(&screen, "    100 ").contains("1.50 MB/s"), "{screen}");
    insta::assert_snapshot!("cgroup_detail_v2_80x24", draw(&t.model, &view, 80, 24).backend());
}

/// This VM's layout: the row's total from its processes (requests n/a),
/// the kernel's counters on loop0 and its limit, marked at it.
#[test]
fn dashboard_cgroups_pane_v1() {
    let t = v1_run();
    let screen = draw(&t.model, &cgroups_view("/iolens-a"), 120, 40)
        .backend()
        .to_string();
    let a = line_with(&screen, "/iolens-a");
    for want in ["procs", "20.0 MB/s", "n/a", "20.0%", "loop0 rbps 20.0 MB/s", "AT 100%"] {
        assert!(a.contains(want), "{want} not in {a}");
    }
    assert!(screen.contains("cgroup v1 blkio, kernel counters on loop0"), "{screen}");
    assert!(
        screen.contains("note: cgroup v1 blkio: kernel counters only on devices"),
        "{screen}"
    );
    let p = line_with(&screen, "/plain");
    assert!(p.contains("5.00 MB/s") && p.contains("none"), "{p}");
}

/// A cgroup named with a terminal escape sequence is shown escaped in the
/// pane and the detail; no control character reaches the screen.
#[test]
fn hostile_cgroup_names_are_escaped() {
    let mut t = Tree::new("cgroup-v2");
    let evil = "sys/fs/cgroup/system.slice/evil\x1b]0;pwned\x07\x1b[2J.service";
    std::fs::create_dir_all(t.dir.path().join(evil)).unwrap();
    for k in 0..2u64 {
        t.write(
            &format!("{evil}/io.stat"),
            &format!(
                "8:16 rbytes={} wbytes=0 rios={} wios=0\n",
                4096 + k * 409_600,
                1 + k * 100
            ),
        );
        t.sample_at(k as f64);
    }
    let path = "/system.slice/evil\x1b]0;pwned\x07\x1b[2J.service";
    assert!(t.row(path).rates.is_some());
    // The pane cuts the name to its column; the detail shows all of it.
    for (popup, shown) in [
        (Popup::None, "evil\\x1b]0;pwned\\x07"),
        (
            Popup::Cgroup(path.to_string()),
            "evil\\x1b]0;pwned\\x07\\x1b[2J.service",
        ),
    ] {
        let view = ViewState {
            popup,
            ..cgroups_view(path)
        };
        let term = draw(&t.model, &view, 120, 40);
        let screen = term.backend().to_string();
        assert!(screen.contains(shown), "{screen}");
        let raw: String = term.backend().buffer().content().iter().map(|c| c.symbol()).collect();
        assert!(
            !raw.chars().any(|c| c.is_control()),
            "a control character reached the buffer"
        );
    }
}
