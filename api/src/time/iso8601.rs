//! ISO 8601 as Inmanta's list filters read a date (`dateutil.parser.isoparse`, called by
//! `inmanta.server.validate_filter`): the forms its web console and its users send, such as
//! `2026-11-24 22:07:46` (the console's `YYYY-MM-DD+HH:mm:ss`, whose `+` is a space in a query).
//!
//! Date: `YYYY`, `YYYY-MM`, `YYYY-MM-DD`, `YYYYMMDD`, the ordinal `YYYY-DDD` / `YYYYDDD` and the
//! week dates `YYYY-Www[-D]` / `YYYYWww[D]`. Time, after any one separator character: `hh`,
//! `hh:mm` / `hhmm`, `hh:mm:ss` / `hhmmss`, then a fraction after `.` or `,` (digits past the
//! sixth dropped), `24:00` being the next midnight. Offset: `Z`, `z`, `±HH`, `±HHMM`, `±HH:MM`.
//! A time without an offset is UTC, as Inmanta takes it.

use chrono::{DateTime, Datelike, Duration, FixedOffset, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc};

/// Reads `text`, or `None` when isoparse would refuse it.
pub(super) fn parse(text: &str) -> Option<DateTime<Utc>> {
    if !text.is_ascii() {
        return None;
    }
    let bytes = text.as_bytes();
    let (date, pos) = date_common(bytes).or_else(|| date_uncommon(bytes))?;
    if pos == bytes.len() {
        return Some(date.and_time(NaiveTime::MIN).and_utc());
    }
    // Any one character separates the date from the time (`T` in the standard).
    let time = Time::parse(&bytes[pos + 1..])?;
    let mut naive =
        NaiveDateTime::new(date, NaiveTime::from_hms_micro_opt(time.hour % 24, time.minute, time.second, time.micro)?);
    if time.hour == 24 {
        naive += Duration::days(1);
    }
    Some(match time.offset_seconds {
        None => naive.and_utc(),
        Some(seconds) => FixedOffset::east_opt(seconds)?.from_local_datetime(&naive).single()?.with_timezone(&Utc),
    })
}

/// `count` ASCII digits at `pos` as a number.
fn digits(bytes: &[u8], pos: usize, count: usize) -> Option<u32> {
    let part = bytes.get(pos..pos + count)?;
    part.iter().all(u8::is_ascii_digit).then(|| part.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
}

/// `YYYY`, `YYYY-MM`, `YYYY-MM-DD` or `YYYYMMDD`; the date and where it ends.
fn date_common(bytes: &[u8]) -> Option<(NaiveDate, usize)> {
    let year = digits(bytes, 0, 4)? as i32;
    let mut pos = 4;
    if pos == bytes.len() {
        return Some((NaiveDate::from_ymd_opt(year, 1, 1)?, pos));
    }
    let dashed = bytes[pos] == b'-';
    pos += usize::from(dashed);
    let month = digits(bytes, pos, 2)?;
    pos += 2;
    if pos == bytes.len() {
        return dashed.then(|| NaiveDate::from_ymd_opt(year, month, 1).map(|d| (d, pos))).flatten();
    }
    if dashed {
        (bytes[pos] == b'-').then_some(())?;
        pos += 1;
    }
    let day = digits(bytes, pos, 2)?;
    Some((NaiveDate::from_ymd_opt(year, month, day)?, pos + 2))
}

/// The week date `YYYY-Www[-D]` / `YYYYWww[D]` or the ordinal date `YYYY-DDD` / `YYYYDDD`.
fn date_uncommon(bytes: &[u8]) -> Option<(NaiveDate, usize)> {
    let year = digits(bytes, 0, 4)? as i32;
    let dashed = bytes.get(4) == Some(&b'-');
    let mut pos = 4 + usize::from(dashed);
    if bytes.get(pos) == Some(&b'W') {
        let week = digits(bytes, pos + 1, 2)?;
        pos += 3;
        let mut day = 1;
        if pos < bytes.len() {
            ((bytes[pos] == b'-') == dashed).then_some(())?;
            pos += usize::from(dashed);
            day = digits(bytes, pos, 1)?;
            pos += 1;
        }
        if !(1..=53).contains(&week) || !(1..=7).contains(&day) {
            return None;
        }
        // Week 1 is the one that holds January 4th; weeks past the year's last run on.
        let january_4 = NaiveDate::from_ymd_opt(year, 1, 4)?;
        let week_1 = january_4 - Duration::days(i64::from(january_4.weekday().num_days_from_monday()));
        return Some((week_1 + Duration::days(i64::from((week - 1) * 7 + day - 1)), pos));
    }
    let ordinal = digits(bytes, pos, 3)?;
    Some((NaiveDate::from_yo_opt(year, ordinal)?, pos + 3))
}

/// The time part: hours, minutes, seconds, microseconds and the offset, if any.
struct Time {
    hour: u32,
    minute: u32,
    second: u32,
    micro: u32,
    offset_seconds: Option<i32>,
}

impl Time {
    fn parse(bytes: &[u8]) -> Option<Time> {
        if bytes.len() < 2 {
            return None;
        }
        let mut fields = [0u32; 3];
        let mut micro = 0;
        let mut offset_seconds = None;
        let mut pos = 0;
        let mut colons = false;
        #[allow(
            clippy::needless_range_loop,
            reason = "five parts of a time are read, only the first three into `fields`"
        )]
        for field in 0..5 {
            if pos >= bytes.len() {
                break;
            }
            if matches!(bytes[pos], b'-' | b'+' | b'Z' | b'z') {
                offset_seconds = Some(offset(&bytes[pos..])?);
                pos = bytes.len();
                break;
            }
            if field == 1 && bytes[pos] == b':' {
                colons = true;
                pos += 1;
            } else if field == 2 && colons {
                (bytes[pos] == b':').then_some(())?;
                pos += 1;
            }
            if field < 3 {
                fields[field] = digits(bytes, pos, 2)?;
                pos += 2;
            } else if field == 3 && matches!(bytes[pos], b'.' | b',') {
                let count = bytes[pos + 1..].iter().take_while(|b| b.is_ascii_digit()).count();
                if count > 0 {
                    let kept = count.min(6);
                    micro = digits(bytes, pos + 1, kept)? * 10u32.pow(6 - kept as u32);
                    pos += 1 + count;
                }
            }
        }
        if pos < bytes.len() {
            return None;
        }
        let [hour, minute, second] = fields;
        if hour == 24 && (minute, second, micro) != (0, 0, 0) {
            return None;
        }
        Some(Time { hour, minute, second, micro, offset_seconds })
    }
}

/// `Z`, `z`, `±HH`, `±HHMM` or `±HH:MM` as seconds east of UTC.
fn offset(bytes: &[u8]) -> Option<i32> {
    if matches!(bytes, b"Z" | b"z") {
        return Some(0);
    }
    if ![3, 5, 6].contains(&bytes.len()) {
        return None;
    }
    let sign = match bytes[0] {
        b'-' => -1,
        b'+' => 1,
        _ => return None,
    };
    let hours = digits(bytes, 1, 2)?;
    let minutes = match bytes.len() {
        3 => 0,
        _ if bytes[3] == b':' => digits(bytes, 4, bytes.len() - 4)?,
        _ => digits(bytes, 3, bytes.len() - 3)?,
    };
    if (hours, minutes) != (0, 0) && (minutes > 59 || hours > 23) {
        return None;
    }
    Some(sign * (hours * 3600 + minutes * 60) as i32)
}

#[cfg(test)]
mod tests {
    use super::parse;

    fn utc(text: &str) -> Option<String> {
        parse(text).map(|t| t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string())
    }

    /// Answers of `dateutil.parser.isoparse` (2.9, the reference install of Inmanta 20.1), naive
    /// results taken as UTC as Inmanta's filters take them.
    #[test]
    fn reads_what_inmanta_reads() {
        let cases = [
            ("2026-11-24 22:07:46", "2026-11-24T22:07:46.000000Z"),
            ("2026-11-24+22:07:46", "2026-11-24T22:07:46.000000Z"),
            ("2026-11-24T22:07:46.123456789+02:00", "2026-11-24T20:07:46.123456Z"),
            ("2026-11-24T22:07:46,5Z", "2026-11-24T22:07:46.500000Z"),
            ("2026-11-24T22:07:46-0130", "2026-11-24T23:37:46.000000Z"),
            ("2026-11-24T22:07:46+01", "2026-11-24T21:07:46.000000Z"),
            ("2026-11-24T22z", "2026-11-24T22:00:00.000000Z"),
            ("2026-11-24T2207", "2026-11-24T22:07:00.000000Z"),
            ("20261124T220746", "2026-11-24T22:07:46.000000Z"),
            ("2026-11-24T24:00", "2026-11-25T00:00:00.000000Z"),
            ("2026-11-24", "2026-11-24T00:00:00.000000Z"),
            ("2026-11", "2026-11-01T00:00:00.000000Z"),
            ("2026", "2026-01-01T00:00:00.000000Z"),
            ("2026-328", "2026-11-24T00:00:00.000000Z"),
            ("2026W482", "2026-11-24T00:00:00.000000Z"),
            ("2026-W48-2T10:00", "2026-11-24T10:00:00.000000Z"),
            ("2026-W48", "2026-11-23T00:00:00.000000Z"),
        ];
        for (text, expected) in cases {
            assert_eq!(utc(text).as_deref(), Some(expected), "{text}");
        }
    }

    #[test]
    fn refuses_what_inmanta_refuses() {
        for text in [
            "",
            "26-11-24",
            "202611",
            "2026-1124",
            "2026-11-24T",
            "2026-11-24T1",
            "2026-11-24T10:30.5",
            "2026-11-24T24:01",
            "2026-11-24T10:00+2",
            "2026-11-24T10:00+24:00",
            "2026-13-01",
            "2026-W54",
            "2026-W48-8",
            "2026-W482",
            "2026-11-24T10:00:00 extra",
            "2026-11-24Té",
            "yesterday",
        ] {
            assert_eq!(utc(text), None, "{text}");
        }
    }
}
