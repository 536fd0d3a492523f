//! CSV output for scripts (`--csv devices`, `--csv processes`): one header
//! line, then one row per device (or busiest process) per interval, every
//! number in plain units — bytes per second, bytes, milliseconds, percent —
//! never auto-scaled, and `n/a` where a value cannot be known (no request
//! completed, a kernel without the field). A text field is the value the
//! text output shows (control characters escaped once, as `\x1b`, a
//! backslash doubled), quoted per RFC 4180 when it holds a comma, a quote,
//! CR or LF.

use std::fmt::Write as _;

use crate::cli::CsvTable;
use crate::format;
use crate::model::disk::DiskRates;
use crate::model::{Model, pattern};
use crate::present::device::WIDE;
use crate::present::process::{ProcCol, rate_nums};

/// The header line of `table`.
pub fn header(table: CsvTable) -> String {
    match table {
        CsvTable::Devices => {
            let cols: Vec<String> = WIDE.iter().map(|c| c.csv_head()).collect();
            format!("time_s,device,{},pattern,mount\n", cols.join(","))
        }
        CsvTable::Processes => {
            let cols = ProcCol::ALL.map(|c| c.def().csv_head);
            format!("time_s,{}\n", cols.join(","))
        }
    }
}

pub use crate::present::text::csv_field as field;

/// A text field of a name or path from the system: escaped, then quoted.
fn raw(s: &str) -> String {
    field(&format::escape(s))
}

fn device_row(out: &mut String, t: &str, name: &str, r: Option<&DiskRates>, mount: &str) {
    let _ = write!(out, "{t},{}", raw(name));
    for c in WIDE {
        out.push(',');
        out.push_str(&c.csv(r));
    }
    let pat = r.map_or(format::NA.to_string(), |r| {
        pattern::text(r.pattern, r.seq_byte_share, r.pattern_basis)
    });
    let _ = writeln!(out, ",{},{}", field(&pat), raw(mount));
}

/// The rows of one interval: `time_s` is the seconds since `start_ns`
/// (the monotonic time of the first sample).
pub fn rows(model: &Model, table: CsvTable, top: usize, start_ns: u64) -> String {
    let t = format!("{:.3}", model.mono_ns.saturating_sub(start_ns) as f64 / 1e9);
    let mut out = String::new();
    match table {
        CsvTable::Devices => {
            for d in model.devices.iter().filter(|d| !d.has_no_media()) {
                let mount = d
                    .info
                    .as_ref()
                    .and_then(|i| i.mounts.first())
                    .map_or("", |m| m.mount_point.as_str());
                device_row(&mut out, &t, &d.name, d.rates.as_ref(), mount);
            }
            if let Some(total) = &model.total {
                device_row(&mut out, &t, "total", Some(total), "");
            }
        }
        CsvTable::Processes => {
            for p in super::top_procs(model, top) {
                let Some(r) = p.rates.as_deref() else { continue };
                let n = rate_nums(r);
                out.push_str(&t);
                for c in ProcCol::ALL {
                    out.push(',');
                    out.push_str(&c.csv(p, &n));
                }
                out.push('\n');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::present::device::num;

    #[test]
    fn fields_are_escaped_and_quoted() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(raw("evil\x1b[2J"), "evil\\x1b[2J");
        // Escaped once: the text output's value is not escaped again.
        assert_eq!(field("evil\\x1b[2J a\\\\b"), "evil\\x1b[2J a\\\\b");
        assert_eq!(field("two\nlines\r"), "\"two\nlines\r\"");
        assert_eq!(num(None, 2), "n/a");
        assert_eq!(num(Some(f64::NAN), 2), "n/a");
        assert_eq!(num(Some(1234.5678), 0), "1235");
    }

    #[test]
    fn header_and_rows_have_the_same_number_of_fields() {
        for t in [CsvTable::Devices, CsvTable::Processes] {
            assert!(header(t).starts_with("time_s,"));
        }
        let mut out = String::new();
        device_row(&mut out, "1.000", "sda", None, "/mnt/a,b");
        assert_eq!(
            out.trim_end().split(',').count(),
            header(CsvTable::Devices).trim_end().split(',').count() + 1,
            "one quoted comma in the mount: {out}"
        );
        assert!(out.ends_with(",n/a,n/a,n/a,n/a,n/a,\"/mnt/a,b\"\n"), "{out}");
    }
}
