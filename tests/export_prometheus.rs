//! `iolens export` against a real Prometheus server (Debian's package, on
//! loopback with a temporary config and data dir): it scrapes iolens
//! (OpenMetrics) and its query API returns iolens series with plausible
//! values; `promtool check metrics` passes on the text format; bad
//! requests get HTTP errors and do not stop sampling.

#[path = "common/tools.rs"]
mod tools;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tools::need;

const BIN: &str = env!("CARGO_BIN_EXE_iolens");

/// Stops and reaps a child on every path: SIGTERM first, so that iolens
/// removes its tracefs instance (and the mount it made), then SIGKILL
/// after 5 s.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the pid of a child not yet reaped.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let t0 = std::time::Instant::now();
        while matches!(self.0.try_wait(), Ok(None)) && t0.elapsed() < std::time::Duration::from_secs(5) {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start `iolens export` on a free loopback port; its address.
fn start_export(extra: &[&str]) -> (Killed, String) {
    let mut child = Command::new(BIN)
        .args(["export", "--listen", "127.0.0.1:0", "--interval", "0.5"])
        .args(extra)
        .env("IOLENS_CONFIG", "/dev/null")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting iolens export");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    // Keep draining stderr so the exporter never blocks on it.
    std::thread::spawn(move || {
        let mut sink = String::new();
        let _ = err.read_to_string(&mut sink);
    });
    (Killed(child), addr)
}

/// A raw HTTP/1.1 request; (status, headers, body).
fn http(addr: &str, request: &str) -> (u16, String, String) {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return (0, String::new(), String::new());
    };
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, head.to_string(), body.to_string())
}

fn get(addr: &str, path: &str, accept: &str) -> (u16, String, String) {
    http(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"),
    )
}

/// Wait until `f` gives a value, up to `secs`.
fn wait_for<T>(secs: u64, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        if let Some(v) = f() {
            return Some(v);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    None
}

fn sample_value(body: &str, series: &str) -> Option<f64> {
    body.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|r| r.strip_prefix(' ')))
        .and_then(|v| v.trim().parse().ok())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn encode_query(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' | b'-' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// One instant query; the values of the result vector.
fn query(prom: &str, q: &str) -> Vec<(Value, f64)> {
    let (status, _, body) = get(prom, &format!("/api/v1/query?query={}", encode_query(q)), "*/*");
    if status != 200 {
        return Vec::new();
    }
    let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    v["data"]["result"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(|s| Some((s["metric"].clone(), s["value"][1].as_str()?.parse().ok()?)))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn prometheus_scrapes_iolens_and_promtool_accepts_the_text_format() {
    if !need("prometheus") || !need("promtool") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // A results file as `iolens probe --save` writes it: the example
    // result of sda (a cancelled newer one must not replace it).
    let probes = dir.path().join("probes.jsonl");
    let result = iolens::probe::example::result(iolens::probe::Status::Completed);
    let mut cancelled = iolens::probe::example::result(iolens::probe::Status::Cancelled);
    cancelled.started_unix += 60;
    let lines = [&result, &cancelled]
        .map(|r| iolens::format::json(r).unwrap())
        .join("\n");
    std::fs::write(&probes, lines + "\n").unwrap();
    let p99_s = result.random.as_ref().and_then(|r| r.latency.p99_ms).unwrap() / 1e3;
    let (_export, addr) = start_export(&["--probe-results", probes.to_str().unwrap()]);
    // dd's I/O counts from the first sample on: wait for two.
    wait_for(30, || {
        let (_, _, body) = get(&addr, "/metrics", "text/plain");
        sample_value(&body, "iolens_samples_total").filter(|v| *v >= 2.0)
    })
    .expect("iolens export took no samples");
    // Disk writes by a command of known name: 32 MiB dirtied by dd.
    let target = dir.path().join("written");
    let dd = Command::new("dd")
        .args([
            "if=/dev/zero",
            &format!("of={}", target.display()),
            "bs=1M",
            "count=32",
            "conv=fsync",
        ])
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(dd.success());
    // Wait for a sample after dd: its bytes are on its own series.
    let dd_bytes = wait_for(20, || {
        let (_, _, body) = get(&addr, "/metrics", "text/plain");
        sample_value(&body, "iolens_process_dirtied_bytes_total{comm=\"dd\"}").filter(|v| *v > 0.0)
    })
    .expect("dd's dirtied bytes never appeared");
    eprintln!("iolens_process_dirtied_bytes_total{{comm=\"dd\"}} = {dd_bytes}");
    assert!(
        (32.0 * 1048576.0..=40.0 * 1048576.0).contains(&dd_bytes),
        "dd dirtied 32 MiB, exported {dd_bytes}"
    );

    // promtool on the text format.
    let (status, head, text) = get(&addr, "/metrics", "text/plain");
    assert_eq!(status, 200);
    let served = sample_value(
        &text,
        "iolens_probe_read_latency_seconds{device=\"sda\",percentile=\"99\"}",
    );
    assert_eq!(served, Some(p99_s), "{text}");
    assert_eq!(
        sample_value(&text, "iolens_probe_timestamp_seconds{device=\"sda\"}"),
        Some(result.started_unix as f64)
    );
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    promtool.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = promtool.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // A real Prometheus scraping it.
    let port = free_port();
    let prom = format!("127.0.0.1:{port}");
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: iolens\n    static_configs:\n      - targets: ['{addr}']\n"
        ),
    )
    .unwrap();
    let data = dir.path().join("data");
    let _server = Killed(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", data.display()))
            .arg(format!("--web.listen-address={prom}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting prometheus"),
    );
    let found = wait_for(60, || {
        let r = query(&prom, "iolens_process_dirtied_bytes_total{comm=\"dd\"}");
        r.first().map(|(_, v)| *v)
    })
    .expect("Prometheus never stored iolens_process_dirtied_bytes_total{comm=\"dd\"}");
    eprintln!("Prometheus query API: iolens_process_dirtied_bytes_total{{comm=\"dd\"}} = {found}");
    assert_eq!(found, dd_bytes, "the value Prometheus stored is what iolens served");
    let up = query(&prom, "up{job=\"iolens\"}");
    assert_eq!(up.first().map(|(_, v)| *v), Some(1.0), "{up:?}");
    // Prometheus asked for OpenMetrics.
    let om = wait_for(20, || {
        query(&prom, "iolens_scrapes_total{format=\"openmetrics\"}")
            .first()
            .map(|(_, v)| *v)
            .filter(|v| *v > 0.0)
    });
    assert!(om.is_some(), "no OpenMetrics scrape counted");
    let p99 = query(
        &prom,
        "iolens_probe_read_latency_seconds{device=\"sda\",percentile=\"99\"}",
    );
    assert_eq!(p99.first().map(|(_, v)| *v), Some(p99_s), "{p99:?}");
    let info = query(&prom, "iolens_probe_info{device=\"sda\"}");
    assert!(
        info.first()
            .is_some_and(|(m, v)| *v == 1.0 && m["verdict"].as_str().is_some()),
        "{info:?}"
    );
    let samples = query(&prom, "iolens_samples_total");
    assert!(samples.first().is_some_and(|(_, v)| *v >= 2.0), "{samples:?}");
}

#[test]
fn bad_requests_get_http_errors_and_sampling_goes_on() {
    let (_export, addr) = start_export(&[]);
    let samples = |body: &str| sample_value(body, "iolens_samples_total").unwrap_or(0.0);
    let first = wait_for(20, || {
        let (s, _, b) = get(&addr, "/metrics", "text/plain");
        (s == 200).then(|| samples(&b))
    })
    .expect("no metrics");
    assert_eq!(get(&addr, "/other", "*/*").0, 404);
    assert_eq!(get(&addr, "/", "*/*").0, 404, "the README: other paths get 404");
    let (s, head, _) = http(
        &addr,
        &format!("POST /metrics HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"),
    );
    assert_eq!(s, 405);
    assert!(head.to_lowercase().contains("allow: get, head"), "{head}");
    // A head larger than the server's buffer.
    let huge = format!(
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nX-Big: {}\r\nConnection: close\r\n\r\n",
        "a".repeat(64 * 1024)
    );
    let (s, _, _) = http(&addr, &huge);
    assert_eq!(s, 431, "a 64 KiB header");
    // Slow clients: connections that send half a request and wait.
    let idle: Vec<TcpStream> = (0..20)
        .map(|_| {
            let mut c = TcpStream::connect(&addr).unwrap();
            c.write_all(b"GET /metr").unwrap();
            c
        })
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    let (s, head, body) = get(&addr, "/metrics", "application/openmetrics-text; version=1.0.0");
    assert_eq!(s, 200, "served while 20 clients stall");
    assert!(head.contains("application/openmetrics-text"), "{head}");
    assert!(body.ends_with("# EOF\n"));
    let later = sample_value(&body, "iolens_samples_total").unwrap_or(0.0);
    eprintln!("samples: {first} before the stalled clients, {later} 2 s later (interval 0.5 s)");
    assert!(
        later >= first + 1.0,
        "sampling stopped: {first} -> {later} in 2 s at 0.5 s"
    );
    drop(idle);
}

const ALERTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/prometheus/iolens-alerts.yml");
const ALERTS_TEST: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/prometheus/iolens-alerts_test.yml");

/// The shipped alert file is valid and its unit tests pass.
#[test]
fn promtool_checks_and_tests_the_shipped_alert_rules() {
    if !need("promtool") {
        return;
    }
    for args in [["check", "rules", ALERTS], ["test", "rules", ALERTS_TEST]] {
        let out = Command::new("promtool").args(args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        eprintln!("promtool {}: {text}", args.join(" "));
        assert!(out.status.success(), "promtool {} failed: {text}", args.join(" "));
        assert!(text.contains("SUCCESS"), "{text}");
    }
}

/// The alert file with every `for:` shortened to 1 s.
fn quick_alerts() -> String {
    let text = std::fs::read_to_string(ALERTS).unwrap();
    let mut n = 0;
    let out: Vec<String> = text
        .lines()
        .map(|l| match l.split_once("for: ") {
            Some((indent, _)) if indent.trim().is_empty() => {
                n += 1;
                format!("{indent}for: 1s")
            }
            _ => l.to_string(),
        })
        .collect();
    assert!(n >= 2, "no `for:` in {ALERTS}");
    out.join("\n") + "\n"
}

/// End to end: `dd bs=512` makes the tiny_syscalls finding (warning) in
/// `iolens export`, a real Prometheus loaded with the shipped alert file
/// (`for:` shortened) scrapes it and shows IolensFindingWarning firing for
/// dd in `ALERTS`.
#[test]
fn a_finding_fires_the_shipped_alert_in_prometheus() {
    if !need("prometheus") || !need("dd") {
        return;
    }
    let t0 = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let dd = Killed(
        Command::new("dd")
            .args(["if=/dev/zero", "of=/dev/null", "bs=512"])
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let (_export, addr) = start_export(&[]);
    let rules = dir.path().join("iolens-alerts.yml");
    std::fs::write(&rules, quick_alerts()).unwrap();
    let port = free_port();
    let prom = format!("127.0.0.1:{port}");
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {}\nscrape_configs:\n  - job_name: iolens\n    static_configs:\n      - targets: ['{addr}']\n",
            rules.display()
        ),
    )
    .unwrap();
    let _server = Killed(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address={prom}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting prometheus"),
    );
    // The finding as iolens serves it, subject dd (by command).
    let series = "iolens_finding{rule=\"tiny_syscalls\",severity=\"warning\",subject_kind=\"process\",subject=\"dd\"}";
    let served = wait_for(15, || {
        let (_, _, body) = get(&addr, "/metrics", "text/plain");
        sample_value(&body, series)
    });
    assert_eq!(served, Some(1.0), "iolens never served {series}");
    eprintln!("iolens served {series} 1 after {:.1} s", t0.elapsed().as_secs_f64());
    let q = "ALERTS{alertname=\"IolensFindingWarning\",alertstate=\"firing\",rule=\"tiny_syscalls\",subject=\"dd\"}";
    let firing = wait_for(15, || query(&prom, q).into_iter().next());
    let (labels, v) = firing.unwrap_or_else(|| panic!("{q} never showed in Prometheus"));
    eprintln!("ALERTS firing after {:.1} s: {labels}", t0.elapsed().as_secs_f64());
    assert_eq!(v, 1.0);
    assert_eq!(labels["severity"], "warning");
    assert_eq!(labels["subject_kind"], "process");
    drop(dd);
}
