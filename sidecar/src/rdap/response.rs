//! Reading an RDAP answer: the registration time of a domain object (RFC 9083: `events`,
//! section 4.5; dates in RFC 3339), a `Retry-After` value (RFC 9110 section 10.2.3), and the age
//! in whole days. Pure functions, no I/O.

/// Why a `200` body cannot be read as a domain object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Unusable {
    #[error("the body is not a JSON object")]
    NotJson,
    #[error("the object is not a domain (objectClassName)")]
    NotADomain,
}

/// The registration time (Unix seconds) of an RDAP domain object: the latest `registration`
/// event whose `eventDate` reads as a date (a re-registered name's current registration), or
/// `None` when it has no such event. Unreadable dates are skipped, not guessed at.
pub fn registration(body: &[u8]) -> Result<Option<i64>, Unusable> {
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|_| Unusable::NotJson)?;
    let object = value.as_object().ok_or(Unusable::NotJson)?;
    if let Some(class) = object.get("objectClassName")
        && class.as_str().is_none_or(|c| !c.eq_ignore_ascii_case("domain"))
    {
        return Err(Unusable::NotADomain);
    }
    let Some(events) = object.get("events").and_then(|e| e.as_array()) else { return Ok(None) };
    Ok(events
        .iter()
        .filter(|e| {
            e.get("eventAction").and_then(|a| a.as_str()).is_some_and(|a| a.eq_ignore_ascii_case("registration"))
        })
        .filter_map(|e| e.get("eventDate").and_then(|d| d.as_str()).and_then(parse_date))
        .max())
}

/// Whole days from `registered` to `now` (Unix seconds); `None` for a registration more than a
/// day in the future (a bogus date, not clock skew), `0` for one in the last day or just ahead.
pub fn age_days(registered: i64, now: i64) -> Option<u32> {
    if registered > now + 86_400 {
        return None;
    }
    Some(u32::try_from(now.saturating_sub(registered).max(0) / 86_400).unwrap_or(u32::MAX))
}

/// Unix seconds of an RFC 3339 date-time as RDAP servers write it: `YYYY-MM-DDTHH:MM:SS`, an
/// optional fraction, then `Z` or an offset (`±HH:MM`, `±HHMM`, `±HH`). Leniently, also a space
/// or `t` for the `T`, no seconds, no zone (read as UTC) and a bare date (midnight UTC), which
/// some registries send. Anything else, or an impossible date, is `None`.
pub fn parse_date(s: &str) -> Option<i64> {
    let s = s.trim().as_bytes();
    let num = |b: &[u8]| -> Option<i64> {
        (!b.is_empty() && b.iter().all(u8::is_ascii_digit))
            .then(|| b.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0')))
    };
    if s.len() < 10 || s[4] != b'-' || s[7] != b'-' {
        return None;
    }
    let (year, month, day) = (num(&s[0..4])?, num(&s[5..7])?, num(&s[8..10])?);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    let date = days_from_civil(year, month, day) * 86_400;
    let rest = &s[10..];
    if rest.is_empty() {
        return Some(date);
    }
    if !matches!(rest[0], b'T' | b't' | b' ') || rest.len() < 6 || rest[3] != b':' {
        return None;
    }
    let (hour, minute) = (num(&rest[1..3])?, num(&rest[4..6])?);
    let mut i = 6;
    let mut second = 0;
    if rest.get(i) == Some(&b':') {
        second = num(rest.get(i + 1..i + 3)?)?;
        i += 3;
        if rest.get(i) == Some(&b'.') {
            let digits = rest[i + 1..].iter().take_while(|b| b.is_ascii_digit()).count();
            if digits == 0 {
                return None;
            }
            i += 1 + digits;
        }
    }
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let offset = zone_offset(&rest[i..])?;
    Some(date + hour * 3600 + minute * 60 + second - offset)
}

/// Seconds east of UTC of a zone designator; an empty one is UTC.
fn zone_offset(zone: &[u8]) -> Option<i64> {
    let two = |b: &[u8]| -> Option<i64> {
        (b.len() == 2 && b.iter().all(u8::is_ascii_digit)).then(|| i64::from(b[0] - b'0') * 10 + i64::from(b[1] - b'0'))
    };
    let (sign, rest) = match zone {
        [] | [b'Z' | b'z'] => return Some(0),
        [b'+', rest @ ..] => (1, rest),
        [b'-', rest @ ..] => (-1, rest),
        _ => return None,
    };
    let (h, m) = match rest.len() {
        2 => (two(rest)?, 0),
        4 => (two(&rest[..2])?, two(&rest[2..])?),
        5 if rest[2] == b':' => (two(&rest[..2])?, two(&rest[3..])?),
        _ => return None,
    };
    (h <= 23 && m <= 59).then_some(sign * (h * 3600 + m * 60))
}

/// How long a `Retry-After` value asks to wait: delay-seconds, or an HTTP date (IMF-fixdate,
/// `Sun, 06 Nov 1994 08:49:37 GMT`) relative to `now` (Unix seconds; a date past is no wait).
pub fn retry_after(value: &str, now: i64) -> Option<u64> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        return Some(value.parse().unwrap_or(u64::MAX));
    }
    let at = http_date(value)?;
    Some(u64::try_from(at - now).unwrap_or(0))
}

/// Unix seconds of an IMF-fixdate (RFC 9110 section 5.6.7).
fn http_date(s: &str) -> Option<i64> {
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let mut parts = s.split_ascii_whitespace();
    let (_weekday, day, month, year, time, zone) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || zone != "GMT" || day.len() != 2 || year.len() != 4 {
        return None;
    }
    let month = MONTHS.iter().position(|m| *m == month)? + 1;
    let date = format!("{year}-{month:02}-{day}T{time}Z");
    parse_date(&date)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm, the
/// inverse of `clock::utc_day`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::rfc3339;

    #[test]
    fn dates_as_registries_write_them() {
        let t = 1_579_921_445; // 2020-01-25T03:04:05Z
        assert_eq!(rfc3339(t), "2020-01-25T03:04:05Z");
        for s in [
            "2020-01-25T03:04:05Z",
            "2020-01-25T03:04:05z",
            "2020-01-25t03:04:05Z",
            "2020-01-25T03:04:05.123Z",
            "2020-01-25T03:04:05.123456789Z",
            "2020-01-25T04:04:05+01:00",
            "2020-01-25T04:04:05+0100",
            "2020-01-25T04:04:05+01",
            "2020-01-24T22:04:05-05:00",
            "2020-01-25 03:04:05",
            "2020-01-25T03:04:05",
            " 2020-01-25T03:04:05Z ",
        ] {
            assert_eq!(parse_date(s), Some(t), "{s}");
        }
        assert_eq!(parse_date("2020-01-25T03:04Z"), Some(t - 5));
        assert_eq!(parse_date("2020-01-25"), Some(t - 3 * 3600 - 4 * 60 - 5));
        assert_eq!(parse_date("1985-03-15T05:00:00Z").map(rfc3339).as_deref(), Some("1985-03-15T05:00:00Z"));
        assert_eq!(parse_date("2024-02-29T00:00:00Z").map(rfc3339).as_deref(), Some("2024-02-29T00:00:00Z"));
        assert_eq!(parse_date("1969-12-31T23:59:59Z"), Some(-1));
    }

    #[test]
    fn malformed_dates_are_none() {
        for s in [
            "",
            "yesterday",
            "2020-1-25T03:04:05Z",
            "2020/01/25",
            "2020-13-01T00:00:00Z",
            "2020-00-10T00:00:00Z",
            "2021-02-29T00:00:00Z",
            "2020-04-31T00:00:00Z",
            "2020-01-25T24:00:00Z",
            "2020-01-25T03:60:00Z",
            "2020-01-25T03:04:05.Z",
            "2020-01-25T03:04:05+1:00",
            "2020-01-25T03:04:05 UTC",
            "2020-01-25T03:04:05+25:00",
            "2020-01-25X03:04:05Z",
            "２０２０-01-25",
            "+2020-01-25",
            "2020-01-25T03",
        ] {
            assert_eq!(parse_date(s), None, "{s:?}");
        }
    }

    #[test]
    fn the_latest_registration_event_is_the_registration() {
        let body = br#"{"objectClassName": "domain", "ldhName": "shop.example", "events": [
            {"eventAction": "last changed", "eventDate": "2024-05-01T00:00:00Z"},
            {"eventAction": "registration", "eventDate": "2001-02-03T04:05:06Z"},
            {"eventAction": "expiration", "eventDate": "2030-02-03T04:05:06Z"}]}"#;
        assert_eq!(registration(body).map(|t| t.map(rfc3339)), Ok(Some("2001-02-03T04:05:06Z".into())));
        let again = br#"{"events": [
            {"eventAction": "registration", "eventDate": "2001-02-03T04:05:06Z"},
            {"eventAction": "Registration", "eventDate": "2019-07-01T00:00:00Z"}]}"#;
        assert_eq!(registration(again).map(|t| t.map(rfc3339)), Ok(Some("2019-07-01T00:00:00Z".into())));
        let skipped = br#"{"events": [
            {"eventAction": "registration", "eventDate": "not a date"},
            {"eventAction": "registration", "eventDate": "2010-01-01T00:00:00Z"}]}"#;
        assert_eq!(registration(skipped).map(|t| t.map(rfc3339)), Ok(Some("2010-01-01T00:00:00Z".into())));
    }

    #[test]
    fn no_registration_event_is_none_and_other_bodies_are_unusable() {
        for body in [
            &br#"{"objectClassName": "domain", "ldhName": "shop.example"}"#[..],
            br#"{"objectClassName": "domain", "events": []}"#,
            br#"{"objectClassName": "domain", "events": "registration"}"#,
            br#"{"events": [{"eventAction": "expiration", "eventDate": "2030-01-01T00:00:00Z"}]}"#,
            br#"{"events": [{"eventAction": "registration", "eventDate": "2001-02-30T00:00:00Z"}]}"#,
            br#"{"events": [{"eventAction": "registration"}]}"#,
            br#"{"events": [{"eventAction": "registration", "eventDate": 981173106}]}"#,
            br#"{"events": [{"eventDate": "2001-02-03T04:05:06Z"}]}"#,
        ] {
            assert_eq!(registration(body), Ok(None), "{}", String::from_utf8_lossy(body));
        }
        assert_eq!(registration(b"<html>Too many requests</html>"), Err(Unusable::NotJson));
        assert_eq!(registration(b"[]"), Err(Unusable::NotJson));
        assert_eq!(registration(b""), Err(Unusable::NotJson));
        let error = br#"{"objectClassName": "entity", "events": [{"eventAction": "registration", "eventDate": "2001-02-03T04:05:06Z"}]}"#;
        assert_eq!(registration(error), Err(Unusable::NotADomain));
    }

    #[test]
    fn ages_in_whole_days() {
        let now = 1_800_000_000;
        assert_eq!(age_days(now, now), Some(0));
        assert_eq!(age_days(now - 86_399, now), Some(0));
        assert_eq!(age_days(now - 86_400, now), Some(1));
        assert_eq!(age_days(now - 10 * 86_400 - 3600, now), Some(10));
        assert_eq!(age_days(now + 3600, now), Some(0), "a little ahead: clock skew");
        assert_eq!(age_days(now + 2 * 86_400, now), None, "far ahead: bogus");
        assert_eq!(age_days(i64::MIN, now), Some(u32::MAX));
    }

    #[test]
    fn retry_after_in_seconds_or_as_a_date() {
        let now = parse_date("1994-11-06T08:49:00Z").unwrap();
        assert_eq!(retry_after("120", now), Some(120));
        assert_eq!(retry_after(" 0 ", now), Some(0));
        assert_eq!(retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now), Some(37));
        assert_eq!(retry_after("Sun, 06 Nov 1994 08:48:37 GMT", now), Some(0), "a date past: no wait");
        assert_eq!(retry_after("99999999999999999999999", now), Some(u64::MAX));
        for bad in ["", "-5", "1.5", "soon", "Sun, 06 Nov 1994 08:49:37 UTC", "Sunday, 06-Nov-94 08:49:37 GMT"] {
            assert_eq!(retry_after(bad, now), None, "{bad:?}");
        }
    }
}
