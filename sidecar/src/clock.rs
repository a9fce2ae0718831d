//! Wall-clock helpers. The UTC day is what quotas are counted by; it is computed from Unix time
//! so that callers (and tests) can pass any instant in.

use std::time::{SystemTime, UNIX_EPOCH};

pub fn unix_now() -> i64 {
    SystemClock.now_ms().div_euclid(1000)
}

/// `YYYY-MM-DD` of the UTC day holding `unix` (proleptic Gregorian; Howard Hinnant's algorithm).
/// Every admission asks for today's: the last day asked for is kept per thread, not formatted
/// again.
pub fn utc_day(unix: i64) -> String {
    thread_local! {
        static LAST: std::cell::RefCell<(i64, String)> = const { std::cell::RefCell::new((i64::MIN, String::new())) };
    }
    let days = unix.div_euclid(86_400);
    LAST.with_borrow_mut(|(at, day)| {
        if *at != days {
            (*at, *day) = (days, civil_day(days));
        }
        day.clone()
    })
}

fn civil_day(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// `YYYY-MM-DDTHH:MM:SSZ` for Unix seconds.
pub fn rfc3339(unix: i64) -> String {
    let secs = unix.rem_euclid(86_400);
    format!("{}T{:02}:{:02}:{:02}Z", utc_day(unix), secs / 3600, secs % 3600 / 60, secs % 60)
}

/// Where "now" comes from; tests inject a fixed or moving time.
pub trait Clock: Send + Sync + 'static {
    fn now_ms(&self) -> i64;
}

pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
    }
}

/// Test-only: the server's clock runs this many ms off the system's (the day rolling over
/// during an end-to-end test). Never set in production; the server logs it when set.
pub const TEST_OFFSET_ENV: &str = "EMAIL_VERDICT_TEST_CLOCK_OFFSET_MS";

/// The system clock shifted by a fixed offset (see [`TEST_OFFSET_ENV`]).
pub struct OffsetClock(pub i64);

impl Clock for OffsetClock {
    fn now_ms(&self) -> i64 {
        SystemClock.now_ms().saturating_add(self.0)
    }
}

/// The server's clock: the system's, unless [`TEST_OFFSET_ENV`] shifts it.
pub fn server_clock() -> std::sync::Arc<dyn Clock> {
    match std::env::var(TEST_OFFSET_ENV).ok().and_then(|v| v.parse::<i64>().ok()) {
        Some(offset) if offset != 0 => {
            tracing::warn!(offset_ms = offset, "test-only clock offset in force ({TEST_OFFSET_ENV})");
            std::sync::Arc::new(OffsetClock(offset))
        }
        _ => std::sync::Arc::new(SystemClock),
    }
}

/// Unix seconds of the next midnight UTC after `unix`.
pub fn next_midnight(unix: i64) -> i64 {
    (unix.div_euclid(86_400) + 1) * 86_400
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_days() {
        for (unix, day) in [
            (0, "1970-01-01"),
            (86_399, "1970-01-01"),
            (86_400, "1970-01-02"),
            (951_782_400, "2000-02-29"),
            (1_709_164_800, "2024-02-29"),
            (1_798_761_599, "2026-12-31"),
            (1_798_761_600, "2027-01-01"),
            (-1, "1969-12-31"),
        ] {
            assert_eq!(utc_day(unix), day, "{unix}");
        }
        assert_eq!(rfc3339(1_795_330_023), "2026-11-22T06:47:03Z");
        assert_eq!(next_midnight(0), 86_400);
        assert_eq!(next_midnight(86_399), 86_400);
        assert_eq!(next_midnight(86_400), 172_800);
    }
}
