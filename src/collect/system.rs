//! System-wide counters: CPU times from `/proc/stat` (for %iowait like
//! iostat's avg-cpu line), I/O pressure from `/proc/pressure/io`, and Dirty /
//! Writeback from `/proc/meminfo`.
//!
//! All three have small parsers of their own, over bytes: the procfs crate's
//! panic on odd input (its meminfo slices inside a multi-byte character, its
//! PSI parser on a line cut short) and call a malformed file a bug to
//! report. A malformed file here is an error naming it, a malformed line is
//! skipped.

use serde::{Deserialize, Serialize};

use super::{Reader, parse_u64};

/// Aggregate CPU time in clock ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
    /// Processes blocked on I/O right now (`procs_blocked`).
    pub procs_blocked: Option<u32>,
    /// Processes and threads created since boot (`processes`): not
    /// recorded, only the live process reader uses it.
    #[serde(skip)]
    pub forks: Option<u64>,
}

impl CpuTimes {
    /// Total ticks, as iostat counts them (guest time is already in user).
    pub fn total(&self) -> u64 {
        [
            self.nice,
            self.system,
            self.idle,
            self.iowait,
            self.irq,
            self.softirq,
            self.steal,
        ]
        .into_iter()
        .fold(self.user, u64::saturating_add)
    }
}

/// Parse `/proc/stat`: the aggregate "cpu " line (user, nice, system and
/// idle required; iowait, irq, softirq, steal 0 where a kernel lacks them)
/// and `procs_blocked`.
pub fn parse_cpu(buf: &[u8]) -> Result<CpuTimes, String> {
    let mut cpu = None;
    let mut blocked = None;
    let mut forks = None;
    for line in buf.split(|&c| c == b'\n') {
        let mut f = line.split(|c| c.is_ascii_whitespace()).filter(|f| !f.is_empty());
        match f.next() {
            Some(b"cpu") => {
                let v: Vec<Option<u64>> = f.take(8).map(parse_u64).collect();
                let get = |i: usize| v.get(i).copied().flatten();
                let (Some(user), Some(nice), Some(system), Some(idle)) = (get(0), get(1), get(2), get(3)) else {
                    return Err("the cpu line has fewer than 4 numbers".into());
                };
                let opt = |i: usize| get(i).unwrap_or(0);
                cpu = Some(CpuTimes {
                    user,
                    nice,
                    system,
                    idle,
                    iowait: opt(4),
                    irq: opt(5),
                    softirq: opt(6),
                    steal: opt(7),
                    procs_blocked: None,
                    forks: None,
                });
            }
            Some(b"procs_blocked") => blocked = f.next().and_then(parse_u64).and_then(|v| u32::try_from(v).ok()),
            Some(b"processes") => forks = f.next().and_then(parse_u64),
            _ => {}
        }
    }
    let mut cpu = cpu.ok_or("no cpu line")?;
    cpu.procs_blocked = blocked;
    cpu.forks = forks;
    Ok(cpu)
}

/// One line of a PSI file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PsiLine {
    pub avg10: f64,
    pub avg60: f64,
    pub avg300: f64,
    /// Total stall time in µs.
    pub total_us: u64,
}

/// `/proc/pressure/io`. `full` is missing on some kernels and parse failures
/// leave the line as `None` rather than failing the whole file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Pressure {
    pub some: Option<PsiLine>,
    pub full: Option<PsiLine>,
}

fn parse_psi_line(rest: &[u8]) -> Option<PsiLine> {
    let mut l = PsiLine::default();
    let mut seen = 0u8;
    for kv in rest.split(|c| c.is_ascii_whitespace()).filter(|f| !f.is_empty()) {
        let eq = kv.iter().position(|&c| c == b'=')?;
        let (k, v) = (&kv[..eq], std::str::from_utf8(&kv[eq + 1..]).ok()?);
        match k {
            b"avg10" => (l.avg10, seen) = (v.parse().ok()?, seen | 1),
            b"avg60" => (l.avg60, seen) = (v.parse().ok()?, seen | 2),
            b"avg300" => (l.avg300, seen) = (v.parse().ok()?, seen | 4),
            b"total" => (l.total_us, seen) = (v.parse().ok()?, seen | 8),
            _ => {}
        }
    }
    // A share of time is 0..=100: anything else (NaN, inf, a 309-digit
    // number in a captured file) is not a measurement.
    let sane = |v: f64| v.is_finite() && (0.0..=100.0).contains(&v);
    (seen == 15 && sane(l.avg10) && sane(l.avg60) && sane(l.avg300)).then_some(l)
}

pub fn parse_pressure(buf: &[u8]) -> Pressure {
    let mut p = Pressure::default();
    for line in buf.split(|&c| c == b'\n') {
        if let Some(rest) = line.strip_prefix(b"some ") {
            p.some = parse_psi_line(rest);
        } else if let Some(rest) = line.strip_prefix(b"full ") {
            p.full = parse_psi_line(rest);
        }
    }
    p
}

/// The memory that is waiting to reach, or on its way to, the disks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemDirty {
    pub dirty_bytes: u64,
    pub writeback_bytes: u64,
    pub total_bytes: u64,
}

/// Parse `/proc/meminfo` ("Dirty:   1234 kB"): MemTotal, Dirty and
/// Writeback are required. Values in kB are turned into bytes.
pub fn parse_meminfo(buf: &[u8]) -> Result<MemDirty, String> {
    let (mut total, mut dirty, mut wb) = (None, None, None);
    for line in buf.split(|&c| c == b'\n') {
        let Some(colon) = line.iter().position(|&c| c == b':') else {
            continue;
        };
        let mut f = line[colon + 1..]
            .split(|c| c.is_ascii_whitespace())
            .filter(|f| !f.is_empty());
        let Some(v) = f.next().and_then(parse_u64) else {
            continue;
        };
        let v = match f.next() {
            Some(b"kB") => v.checked_mul(1024),
            None => Some(v),
            Some(_) => None,
        };
        match &line[..colon] {
            b"MemTotal" => total = v,
            b"Dirty" => dirty = v,
            b"Writeback" => wb = v,
            _ => {}
        }
    }
    match (total, dirty, wb) {
        (Some(total_bytes), Some(dirty_bytes), Some(writeback_bytes)) => Ok(MemDirty {
            dirty_bytes,
            writeback_bytes,
            total_bytes,
        }),
        _ => Err("MemTotal, Dirty or Writeback missing or malformed".into()),
    }
}

/// Read all three. A missing file is `None` without complaint (PSI is absent
/// on kernels without CONFIG_PSI); any other failure also goes to `errors`.
pub fn read_system(r: &mut Reader, errors: &mut Vec<String>) -> (Option<CpuTimes>, Option<Pressure>, Option<MemDirty>) {
    fn get<T>(
        r: &mut Reader,
        errors: &mut Vec<String>,
        path: &str,
        parse: impl FnOnce(&[u8]) -> Result<T, String>,
    ) -> Option<T> {
        let res = match r.read(path) {
            Ok(b) => parse(b).map_err(|e| format!("parsing {path}: {e}")),
            Err(e) if e.error.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => Err(e.to_string()),
        };
        res.map_err(|e| errors.push(e)).ok()
    }
    let cpu = get(r, errors, "/proc/stat", parse_cpu);
    let psi = get(r, errors, "/proc/pressure/io", |b| Ok(parse_pressure(b)));
    let mem = get(r, errors, "/proc/meminfo", parse_meminfo);
    (cpu, psi, mem)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/root-6.8");

    #[test]
    fn pressure_full_and_cut_short() {
        let p = parse_pressure(b"some avg10=1.50 avg60=0.73 avg300=0.42 total=2122332\nfull avg10=0.25 avg60=0.65 avg300=0.37 total=1908566\n");
        let some = p.some.unwrap();
        assert_eq!(
            (some.avg10, some.avg60, some.avg300, some.total_us),
            (1.5, 0.73, 0.42, 2_122_332)
        );
        assert_eq!(p.full.unwrap().total_us, 1_908_566);
        let cut = std::fs::read(format!("{FIX}/../pressure-io-cut")).unwrap();
        let p = parse_pressure(&cut);
        assert_eq!(p.some.unwrap().avg10, 0.29);
        assert_eq!(p.full, None);
        assert_eq!(parse_pressure(b"some avg10=x"), Pressure::default());
    }

    #[test]
    fn odd_input_is_an_error_or_n_a_never_a_panic() {
        // Multi-byte characters where procfs's meminfo sliced inside one.
        assert!(parse_meminfo("Dirtyé: 12 kB\nMemTotal: 10 kB\n".as_bytes()).is_err());
        let m =
            parse_meminfo("MemTotal: 10 kB\nDirty: 2 kB\nWriteback: 0 kB\nÜber: 1 kB\nHugepagesize: x\n".as_bytes());
        assert_eq!(
            m,
            Ok(MemDirty {
                dirty_bytes: 2048,
                writeback_bytes: 0,
                total_bytes: 10240
            })
        );
        assert!(parse_cpu(b"cpu 1 2\n").is_err());
        assert!(parse_cpu(b"intr 5\n").is_err());
        let c = parse_cpu(b"cpu  1 2 3 4\nprocs_blocked 99999999999\n").unwrap();
        assert_eq!((c.idle, c.iowait, c.procs_blocked), (4, 0, None));
        for bad in ["NaN", "inf", "-1.0", "1e309", "100.5"] {
            let text = format!("some avg10={bad} avg60=0.1 avg300=0.1 total=5\n");
            assert_eq!(parse_pressure(text.as_bytes()).some, None, "{bad}");
        }
    }

    #[test]
    fn reads_fixture_system_files() {
        let mut r = Reader::new(FIX);
        let mut errors = Vec::new();
        let (cpu, psi, mem) = read_system(&mut r, &mut errors);
        assert!(errors.is_empty(), "{errors:?}");
        let cpu = cpu.unwrap();
        assert_eq!((cpu.user, cpu.iowait, cpu.steal), (10_132_153, 25_623, 11));
        assert_eq!(cpu.procs_blocked, Some(2));
        assert_eq!(cpu.forks, Some(2915));
        assert_eq!(
            cpu.total(),
            10_132_153 + 290 + 3_084_202 + 94_381_237 + 25_623 + 25_282 + 11
        );
        assert!(psi.unwrap().some.is_some());
        let mem = mem.unwrap();
        assert_eq!(mem.dirty_bytes, 1_234 * 1024);
        assert_eq!(mem.writeback_bytes, 56 * 1024);
    }

    #[test]
    fn missing_psi_is_none_without_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = Reader::new(dir.path());
        let mut errors = Vec::new();
        let (cpu, psi, mem) = read_system(&mut r, &mut errors);
        assert_eq!((cpu, psi, mem), (None, None, None));
        assert!(errors.is_empty());
    }
}
