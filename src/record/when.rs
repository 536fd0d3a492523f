//! Times on the command line (`replay --from/--to`): RFC 3339
//! (`2026-11-23T03:00:00+01:00`), `HH:MM[:SS]` today in the local time
//! zone, or relative to now (`-1h`, `-30m`, `-90s`, `-2d`; `+10m` ahead).
//! The replay dashboard's jump prompt takes the same forms with "now" the
//! sample shown.

use anyhow::{Context, bail};
use jiff::Timestamp;
use jiff::civil::{DateTime, Time};
use jiff::tz::TimeZone;

/// `text` as ns since the Unix epoch, against `now` in `tz`.
pub fn parse(text: &str, now: Timestamp, tz: &TimeZone) -> anyhow::Result<u64> {
    let t = text.trim();
    let sign = t.chars().next().filter(|c| *c == '-' || *c == '+');
    let at = if let Some(rel) = sign.map(|_| &t[1..]) {
        let digits = rel.trim_end_matches(|c: char| c.is_ascii_alphabetic());
        let unit = &rel[digits.len()..];
        let n: u32 = digits
            .parse()
            .with_context(|| format!("{text:?}: a relative time is -N or +N followed by s, m, h or d (-1h)"))?;
        let secs = match unit {
            "s" => 1,
            "m" | "min" => 60,
            "h" => 3600,
            "d" => 86_400,
            _ => bail!("{text:?}: unknown unit {unit:?} (s, m, h or d)"),
        };
        let span = jiff::SignedDuration::from_secs(i64::from(n) * secs);
        if sign == Some('+') {
            now.checked_add(span)
                .with_context(|| format!("{text:?} is too far ahead"))?
        } else {
            now.checked_sub(span)
                .with_context(|| format!("{text:?} is too far back"))?
        }
    } else if t.contains('T') || t.contains(' ') && t.len() > 8 {
        t.parse::<Timestamp>().with_context(|| {
            format!("{text:?}: RFC 3339 needs a date, a time and an offset (2026-11-23T03:00:00+01:00)")
        })?
    } else {
        let time: Time = t
            .parse()
            .with_context(|| format!("{text:?}: expected HH:MM[:SS], an RFC 3339 time or -1h"))?;
        let today = now.to_zoned_datetime(tz.clone()).date();
        DateTime::from_parts(today, time)
            .to_zoned_datetime(tz.clone())
            .with_context(|| format!("{text:?} does not exist today in the local time zone"))?
            .timestamp()
    };
    u64::try_from(at.as_nanosecond()).with_context(|| format!("{text:?} is before 1970"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_forms() {
        // 2026-11-23T16:20:01Z.
        let now = Timestamp::from_second(1_795_450_801).unwrap();
        let s = |v: u64| v / 1_000_000_000;
        let utc = TimeZone::UTC;
        assert_eq!(s(parse("-1h", now, &utc).unwrap()), 1_795_450_801 - 3600);
        assert_eq!(s(parse("-90s", now, &utc).unwrap()), 1_795_450_801 - 90);
        assert_eq!(s(parse("-2d", now, &utc).unwrap()), 1_795_450_801 - 2 * 86_400);
        assert_eq!(s(parse("+10m", now, &utc).unwrap()), 1_795_450_801 + 600);
        assert_eq!(
            s(parse("2026-11-23T03:00:00+01:00", now, &utc).unwrap()),
            1_795_450_801 - (16 * 3600 + 20 * 60 + 1) + 2 * 3600
        );
        // Today, in the given zone: 03:00 UTC, and 03:00 at +01:00 (02:00 UTC).
        assert_eq!(
            s(parse("03:00", now, &utc).unwrap()),
            1_795_450_801 - (13 * 3600 + 20 * 60 + 1)
        );
        let plus1 = TimeZone::fixed(jiff::tz::offset(1));
        assert_eq!(
            s(parse("03:00:30", now, &plus1).unwrap()),
            1_795_450_801 - (14 * 3600 + 20 * 60 + 1) + 30
        );
        for bad in ["yesterday", "-1w", "25:00", "2026-11-23T03:00:00", "-h", "+", "+-1h"] {
            assert!(parse(bad, now, &utc).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes() {
        use crate::cli::parse_size;
        assert_eq!(parse_size("64K"), Ok(65_536));
        assert_eq!(parse_size("100M"), Ok(100 << 20));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("-1M").is_err());
    }
}
