//! The wall clock and the ways cmdlog writes and reads times. Projections never
//! read the clock (time is a field of each event); the edges do, here.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Now, in unix milliseconds (0 on a clock before 1970).
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Now, in unix nanoseconds (0 on a clock before 1970).
pub fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// The civil date and time of unix milliseconds, UTC: (year, month, day, hour,
/// minute, second, millisecond).
fn civil(ms: u64) -> (i64, i64, i64, i64, i64, i64, u64) {
    let secs = (ms / 1000) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        year,
        month,
        day,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000,
    )
}

/// `YYYY-MM-DD HH:MM:SS.mmm`, UTC: how cmdlog shows a time to people.
pub fn utc(ms: u64) -> String {
    let (y, mo, d, h, mi, s, milli) = civil(ms);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}.{milli:03}")
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ`: RFC 3339 with milliseconds, for the wire.
pub fn rfc3339(ms: u64) -> String {
    let (y, mo, d, h, mi, s, milli) = civil(ms);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z")
}

/// Unix milliseconds of an RFC 3339 UTC time (`2026-08-01T10:00:00.000Z`, any
/// fraction; a missing `Z` is read as UTC), if it is one.
pub fn parse_rfc3339(text: &str) -> Option<u64> {
    humantime::parse_rfc3339_weak(text.trim_end_matches('Z'))
        .ok()
        .or_else(|| humantime::parse_rfc3339(text).ok())
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as u64)
}

/// A time people give for "since": a span back from `now` (`24h`, `7d`), a date
/// (`2026-11-28`, midnight UTC) or an RFC 3339 UTC time. Unix ms.
pub fn parse_since(text: &str, now: u64) -> Option<u64> {
    if let Ok(span) = humantime::parse_duration(text) {
        return Some(now.saturating_sub(span.as_millis() as u64));
    }
    if text.len() == 10 {
        parse_rfc3339(&format!("{text}T00:00:00Z"))
    } else {
        parse_rfc3339(text)
    }
}

/// A duration as people write it (`90s`, `1h 30m`, `2days`).
pub fn parse_duration(text: &str) -> Result<Duration, humantime::DurationError> {
    humantime::parse_duration(text)
}

/// A duration as people read it (`1h 30m`).
pub fn format_duration(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// `12µs`, `1.5ms`, `2.00s`: an elapsed time in microseconds, short.
pub fn micros(us: u64) -> String {
    match us {
        0..1_000 => format!("{us}µs"),
        1_000..1_000_000 => format!("{:.1}ms", us as f64 / 1e3),
        _ => format!("{:.2}s", us as f64 / 1e6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_written_and_read_back() {
        // 2026-12-01 15:13:51.118 UTC
        let ms = 1_796_138_031_118;
        assert_eq!(utc(ms), "2026-12-01 15:13:51.118");
        assert_eq!(rfc3339(ms), "2026-12-01T15:13:51.118Z");
        assert_eq!(parse_rfc3339(&rfc3339(ms)), Some(ms));
        assert_eq!(parse_rfc3339("2026-12-01T15:13:51"), Some(ms - 118));
        assert_eq!(parse_rfc3339("yesterday"), None);
        assert_eq!(utc(0), "1970-01-01 00:00:00.000");
        assert_eq!(utc(951_782_400_123), "2000-02-29 00:00:00.123");
        assert_eq!(utc(1_796_000_000_000), "2026-11-30 00:53:20.000");
        assert_eq!(parse_since("1h", 7_200_000), Some(3_600_000));
        assert_eq!(
            parse_since("2026-12-01", 0),
            Some(ms - 15 * 3_600_000 - 13 * 60_000 - 51_118)
        );
        assert_eq!(parse_since("2026-12-01T15:13:51.118Z", 0), Some(ms));
        assert_eq!(parse_since("soon", 0), None);
        assert_eq!(micros(12), "12µs");
        assert_eq!(micros(1_500), "1.5ms");
        assert_eq!(micros(2_000_000), "2.00s");
    }
}
