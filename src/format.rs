//! Unit formatting and escaping of system-supplied text.
//!
//! Conventions (see the crate docs): throughput and capacity in decimal units
//! (kB/s, MB/s, GB); request, block and buffer sizes in binary units
//! (KiB, MiB); latency in ms with enough digits to show 0.05 ms; "n/a" for
//! values that cannot be known.

/// Text shown for a value that cannot be known.
pub const NA: &str = "n/a";

/// Decimal bytes per second: "0 B/s", "512 B/s", "12.3 kB/s", "1.05 MB/s", "2.10 GB/s".
pub fn rate(bytes_per_sec: f64) -> String {
    format!("{}/s", decimal(bytes_per_sec))
}

/// Decimal byte count: "512 B", "12.3 kB", "1.05 MB", "3.20 GB", "1.50 TB".
pub fn decimal(bytes: f64) -> String {
    if !bytes.is_finite() {
        return NA.to_string();
    }
    const UNITS: [&str; 6] = ["B", "kB", "MB", "GB", "TB", "PB"];
    scaled(bytes, 1000.0, &UNITS)
}

/// Binary byte count for request/block sizes: "512 B", "4.0 KiB", "1.0 MiB".
pub fn binary(bytes: f64) -> String {
    if !bytes.is_finite() {
        return NA.to_string();
    }
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    scaled(bytes, 1024.0, &UNITS)
}

fn scaled(value: f64, base: f64, units: &[&str]) -> String {
    let mut v = value.max(0.0);
    let mut i = 0;
    while v >= base && i + 1 < units.len() {
        v /= base;
        i += 1;
    }
    if i == 0 {
        format!("{:.0} {}", v, units[0])
    } else if v < 10.0 {
        format!("{:.2} {}", v, units[i])
    } else if v < 100.0 {
        format!("{:.1} {}", v, units[i])
    } else {
        format!("{:.0} {}", v, units[i])
    }
}

/// Latency in milliseconds, always showing at least 0.01 ms resolution.
pub fn ms(v: f64) -> String {
    if !v.is_finite() {
        NA.to_string()
    } else if v < 10.0 {
        format!("{v:.2}")
    } else if v < 1000.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// Optional latency: "n/a" when unknown.
pub fn opt_ms(v: Option<f64>) -> String {
    v.map_or_else(|| NA.to_string(), ms)
}

/// A plain number with a precision that fits in a few columns.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        NA.to_string()
    } else if v == 0.0 {
        "0".to_string()
    } else if v < 10.0 {
        format!("{v:.2}")
    } else if v < 1000.0 {
        format!("{v:.1}")
    } else if v < 1_000_000.0 {
        format!("{v:.0}")
    } else {
        format!("{:.1}M", v / 1_000_000.0)
    }
}

/// A count with thousands separated: "41,000".
pub fn thousands(n: u64) -> String {
    let d = n.to_string();
    let mut out = String::new();
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Percent with one decimal, or "n/a".
pub fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| NA.to_string(), |p| format!("{p:.1}%"))
}

/// Duration in seconds as "1h02m", "3m05s", "42s", or "n/a".
pub fn duration(secs: Option<f64>) -> String {
    let Some(s) = secs.filter(|s| s.is_finite() && *s >= 0.0) else {
        return NA.to_string();
    };
    let s = s.round() as u64;
    let (d, h, m, sec) = (s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60);
    if d > 0 {
        format!("{d}d{h:02}h")
    } else if h > 0 {
        format!("{h}h{m:02}m")
    } else if m > 0 {
        format!("{m}m{sec:02}s")
    } else {
        format!("{sec}s")
    }
}

/// Escape text from the system (process names, paths) so that it cannot drive
/// the terminal: control characters (C0, DEL, C1) become `\xNN`, `\n`, `\t`,
/// and a backslash becomes `\\`, so the output is unambiguous.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f || (0x80..0xa0).contains(&(c as u32)) => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}

/// One JSON value on one line, with the characters JSON leaves raw but a
/// terminal acts on escaped too: DEL and the C1 controls (U+007F..U+009F,
/// e.g. U+009B, a one-character CSI) become `\u007f`..`\u009f`. (C0
/// controls are escaped by JSON itself.) Outside strings JSON has none of
/// these characters, so the result is the same value.
pub fn json<T: serde::Serialize + ?Sized>(v: &T) -> serde_json::Result<String> {
    Ok(escape_json_controls(serde_json::to_string(v)?))
}

/// The DEL and C1 part of [`json`], on serialised JSON text.
pub fn escape_json_controls(text: String) -> String {
    if !text.chars().any(|c| ('\u{7f}'..='\u{9f}').contains(&c)) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if ('\u{7f}'..='\u{9f}').contains(&c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// Escape raw bytes (file names need not be UTF-8): invalid UTF-8 bytes are
/// shown as `\xNN` too.
pub fn escape_bytes(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len());
    for chunk in b.utf8_chunks() {
        out.push_str(&escape(chunk.valid()));
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    }
    out
}

/// Wall-clock time (ns since the Unix epoch) as RFC 3339 with the local
/// UTC offset (the `TZ` variable, else /etc/localtime), to the millisecond
/// (`"2026-11-23T16:20:01.123+01:00"`), or to the second with `seconds`
/// (`"2026-11-23T16:20:01+01:00"`, the batch text's time line). `n/a` for
/// 0: a sample that carries no wall-clock time.
pub fn wall_time(unix_ns: u64, seconds: bool) -> String {
    wall_time_in(unix_ns, &jiff::tz::TimeZone::system(), seconds)
}

/// [`wall_time`] in the given time zone.
pub fn wall_time_in(unix_ns: u64, tz: &jiff::tz::TimeZone, seconds: bool) -> String {
    if unix_ns == 0 {
        return NA.to_string();
    }
    let Ok(ts) = jiff::Timestamp::from_nanosecond(i128::from(unix_ns)) else {
        return NA.to_string();
    };
    let fmt = if seconds {
        "%Y-%m-%dT%H:%M:%S%:z"
    } else {
        "%Y-%m-%dT%H:%M:%S%.3f%:z"
    };
    ts.to_zoned_datetime(tz.clone()).strftime(fmt).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_separated() {
        assert_eq!(thousands(41000), "41,000");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1234567), "1,234,567");
    }

    #[test]
    fn json_escapes_del_and_c1_controls_once() {
        let name = "a\u{1b}[31m\u{7f}\u{80}\u{9b}2J\u{9f}\u{a0}é\\x1b";
        let text = json(&serde_json::json!({ "comm": name })).unwrap();
        // U+00A0 (no-break space) is not a control: kept as is.
        assert_eq!(
            text,
            format!(
                r#"{{"comm":"a\u001b[31m\u007f\u0080\u009b2J\u009f{}é\\x1b"}}"#,
                '\u{a0}'
            )
        );
        // Nothing a terminal acts on is left, and the value reads back the same.
        assert!(!text.chars().any(|c| c.is_control()));
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["comm"], name);
    }

    #[test]
    fn decimal_and_binary_units() {
        assert_eq!(decimal(0.0), "0 B");
        assert_eq!(decimal(999.0), "999 B");
        assert_eq!(decimal(1_000.0), "1.00 kB");
        assert_eq!(decimal(12_345.0), "12.3 kB");
        assert_eq!(decimal(1_050_000.0), "1.05 MB");
        assert_eq!(rate(250_000_000.0), "250 MB/s");
        assert_eq!(binary(4096.0), "4.00 KiB");
        assert_eq!(binary(1_048_576.0), "1.00 MiB");
        assert_eq!(binary(f64::NAN), "n/a");
    }

    #[test]
    fn latency_shows_hundredths() {
        assert_eq!(ms(0.05), "0.05");
        assert_eq!(ms(12.345), "12.3");
        assert_eq!(ms(1234.0), "1234");
        assert_eq!(opt_ms(None), "n/a");
    }

    #[test]
    fn durations() {
        assert_eq!(duration(Some(42.4)), "42s");
        assert_eq!(duration(Some(185.0)), "3m05s");
        assert_eq!(duration(Some(3720.0)), "1h02m");
        assert_eq!(duration(Some(90_000.0)), "1d01h");
        assert_eq!(duration(None), "n/a");
        assert_eq!(duration(Some(f64::INFINITY)), "n/a");
    }

    #[test]
    fn escapes_control_characters() {
        assert_eq!(escape("a\x1b[31mb"), "a\\x1b[31mb");
        assert_eq!(escape("x\ny\\"), "x\\ny\\\\");
        assert_eq!(escape("\u{9b}2J"), "\\x9b2J");
        assert_eq!(escape("naïve"), "naïve");
        assert_eq!(escape_bytes(b"f\xffo\x07"), "f\\xffo\\x07");
    }

    #[test]
    fn wall_time_rfc3339_with_offset() {
        // 2026-11-23 16:20:01.123456789 UTC.
        let ns = 1_795_450_801_123_456_789;
        let utc = jiff::tz::TimeZone::UTC;
        assert_eq!(wall_time_in(ns, &utc, false), "2026-11-23T16:20:01.123+00:00");
        assert_eq!(wall_time_in(ns, &utc, true), "2026-11-23T16:20:01+00:00");
        let plus = jiff::tz::TimeZone::fixed(jiff::tz::offset(1));
        assert_eq!(wall_time_in(ns, &plus, false), "2026-11-23T17:20:01.123+01:00");
        let minus = jiff::tz::TimeZone::fixed(jiff::tz::Offset::from_seconds(-(9 * 3600 + 30 * 60)).unwrap());
        assert_eq!(wall_time_in(ns, &minus, true), "2026-11-23T06:50:01-09:30");
        assert_eq!(wall_time_in(0, &utc, true), "n/a");
    }
}
