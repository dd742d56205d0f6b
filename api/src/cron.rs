//! Cron expressions of the settings `autostart_agent_deploy_interval`,
//! `autostart_agent_repair_interval` and `auto_full_compile`, read as Inmanta reads them (the
//! Python `crontab` package, always in UTC): five fields are `min hour dom month dow`, six
//! `min hour dom month dow year`, seven start with seconds; `@yearly`, `@annually`, `@monthly`,
//! `@weekly`, `@daily`, `@hourly` stand for their five fields. Here so that the settings'
//! validation and the timers that fire them agree.
//!
//! Day of week: 0 and 7 are Sunday, 1 Monday to 6 Saturday (`0 9 * * 1-5` is Monday to
//! Friday), or `sun`..`sat`; `sat-sun` wraps. Months are 1–12 or `jan`..`dec`. Each field is
//! `*` (or `?` in the day fields), or a list of values, ranges `a-b` and steps `a-b/n`, `*/n`,
//! `a/n` (from `a` to the field's end). The day of month takes `l` (its last day) and `z<n>`,
//! `z<a>-<b>` (n days before it); the day of week `l<d>`, `l<a>-<b>` (the last such weekday of
//! the month). A time matches when every field matches, the day of month and of week included.
//! Years run from 1970 to 2099.

use std::collections::BTreeSet;

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveTime, SubsecRound, Timelike, Utc};

/// The fields, in the order of a seven-field expression.
const SECOND: usize = 0;
const MINUTE: usize = 1;
const HOUR: usize = 2;
const DAY: usize = 3;
const MONTH: usize = 4;
const WEEKDAY: usize = 5;
const YEAR: usize = 6;

/// Each field's name (in messages) and its range.
const FIELDS: [(&str, u32, u32); 7] = [
    ("second", 0, 59),
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day of month", 1, 31),
    ("month", 1, 12),
    ("day of week", 0, 6),
    ("year", 1970, 2099),
];

const MONTHS: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// The times a cron expression names.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    fields: Vec<Field>,
}

/// One field: the values it allows, and the pieces that depend on the month (`l`, `z<n>`, `l<d>`).
#[derive(Debug, Clone, PartialEq)]
struct Field {
    any: bool,
    allowed: BTreeSet<u32>,
    relative: Vec<Relative>,
}

/// A piece of a day field that depends on the month's length, in the order written.
#[derive(Debug, Clone, PartialEq)]
enum Relative {
    /// `l` in the day of month.
    LastDay,
    /// `z<n>`: n days before the last; it decides the match on its own, as in `crontab`.
    BeforeLast(u32),
    /// `z<a>-<b>`.
    BeforeLastRange(u32, u32),
    /// `l<d>` / `l<a>-<b>`: these weekdays within the month's last seven days.
    LastWeekdays(BTreeSet<u32>),
}

/// The schedule an expression names, or why it names none.
pub fn parse(expr: &str) -> Result<Schedule, String> {
    let expr = match expr.trim() {
        "@yearly" | "@annually" => "0 0 1 1 *",
        "@monthly" => "0 0 1 * *",
        "@weekly" => "0 0 * * 0",
        "@daily" => "0 0 * * *",
        "@hourly" => "0 * * * *",
        other => other,
    };
    let mut parts: Vec<&str> = expr.split_whitespace().collect();
    match parts.len() {
        5 => {
            parts.insert(0, "0");
            parts.push("*");
        }
        6 => parts.insert(0, "0"),
        7 => {}
        n => {
            return Err(format!(
                "a cron expression has 5 to 7 fields ([sec] min hour dom month dow [year]), this one has {n}"
            ));
        }
    }
    let fields = parts.iter().enumerate().map(|(which, text)| Field::parse(which, text)).collect::<Result<_, _>>()?;
    Ok(Schedule { fields })
}

/// The first time after `now` that a cron expression names (UTC), to the second.
pub fn next_fire(expr: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    parse(expr).ok()?.next_after(now)
}

impl Schedule {
    /// The first time after `now` (to the second) that the schedule names, `None` when it
    /// names none before 2100.
    pub fn next_after(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let start = now.trunc_subsecs(0) + Duration::seconds(1);
        let mut date = start.date_naive();
        let mut from = (start.hour(), start.minute(), start.second());
        while date.year() <= FIELDS[YEAR].2 as i32 {
            if self.day_matches(date)
                && let Some((h, m, s)) = self.first_time_from(from)
            {
                return Some(date.and_time(NaiveTime::from_hms_opt(h, m, s)?).and_utc());
            }
            date = date.succ_opt()?;
            from = (0, 0, 0);
        }
        None
    }

    fn day_matches(&self, date: NaiveDate) -> bool {
        let weekday = date.weekday().num_days_from_sunday();
        self.fields[YEAR].matches(date.year() as u32, date)
            && self.fields[MONTH].matches(date.month(), date)
            && self.fields[DAY].matches(date.day(), date)
            && self.fields[WEEKDAY].matches(weekday, date)
    }

    /// The first (hour, minute, second) at or after `from` the time fields allow.
    fn first_time_from(&self, (h0, m0, s0): (u32, u32, u32)) -> Option<(u32, u32, u32)> {
        for h in self.fields[HOUR].values(HOUR).filter(|h| *h >= h0) {
            let m_start = if h == h0 { m0 } else { 0 };
            for m in self.fields[MINUTE].values(MINUTE).filter(|m| *m >= m_start) {
                let s_start = if (h, m) == (h0, m0) { s0 } else { 0 };
                if let Some(s) = self.fields[SECOND].values(SECOND).find(|s| *s >= s_start) {
                    return Some((h, m, s));
                }
            }
        }
        None
    }
}

impl Field {
    fn parse(which: usize, text: &str) -> Result<Field, String> {
        let lower = text.to_lowercase();
        let mut field = Field { any: false, allowed: BTreeSet::new(), relative: Vec::new() };
        for piece in lower.split(',') {
            field.add(which, piece).map_err(|why| format!("{} field {text:?}: {why}", FIELDS[which].0))?;
        }
        Ok(field)
    }

    fn add(&mut self, which: usize, piece: &str) -> Result<(), String> {
        let (_, low, high) = FIELDS[which];
        match piece {
            "*" => self.any = true,
            "?" if which == DAY || which == WEEKDAY => self.any = true,
            "?" => return Err("`?` is only for the day of month or of week".into()),
            "l" if which == DAY => self.relative.push(Relative::LastDay),
            "l" => return Err("a bare `l` is only for the day of month".into()),
            _ if piece.starts_with('z') => {
                if which != DAY {
                    return Err("`z<n>` is only for the day of month".into());
                }
                self.relative.push(match relative_range(&piece[1..])? {
                    (a, None) => Relative::BeforeLast(a),
                    (a, Some(b)) => Relative::BeforeLastRange(a, b),
                });
            }
            _ if piece.starts_with('l') => {
                if which != WEEKDAY {
                    return Err("`l<d>` is only for the day of week".into());
                }
                let (a, b) = relative_range(&piece[1..])?;
                let days = (a..=b.unwrap_or(a)).map(|d| d % 7).collect();
                self.relative.push(Relative::LastWeekdays(days));
            }
            _ => {
                // Sunday may be written 7, and a range may end at it.
                let limit = if which == WEEKDAY { 7 } else { high };
                let (range, step) = match piece.split_once('/') {
                    Some((range, step)) => {
                        let step: u32 = number(step)?;
                        if step == 0 || step > limit {
                            return Err(format!("the step {step} is not within 1..{limit}"));
                        }
                        (range, Some(step))
                    }
                    None => (piece, None),
                };
                let (start, end) = if range == "*" {
                    (low, high)
                } else if let Some((a, b)) = range.split_once('-') {
                    let (a, mut b) = (value(which, a, limit)?, value(which, b, limit)?);
                    if which == WEEKDAY && b == 0 {
                        b = 7;
                    }
                    (a, b)
                } else {
                    let a = value(which, range, limit)?;
                    if step.is_none() {
                        self.allowed.insert(if which == WEEKDAY { a % 7 } else { a });
                        return Ok(());
                    }
                    (a, high)
                };
                if start > end {
                    return Err(format!("the range starts at {start}, after its end {end}"));
                }
                if let Some(step) = step
                    && start + step > limit
                {
                    return Err(format!("a step of {step} from {start} leaves the range {low}..{limit}"));
                }
                let step = step.unwrap_or(1) as usize;
                self.allowed.extend((start..=end).step_by(step).map(|v| if which == WEEKDAY { v % 7 } else { v }));
            }
        }
        Ok(())
    }

    /// The values of a time field in order (every one of its range for `*`).
    fn values(&self, which: usize) -> Box<dyn Iterator<Item = u32> + '_> {
        let (_, low, high) = FIELDS[which];
        if self.any { Box::new(low..=high) } else { Box::new(self.allowed.iter().copied()) }
    }

    /// Whether `v`, the field's value on `date`, matches.
    fn matches(&self, v: u32, date: NaiveDate) -> bool {
        let last_day = last_day_of_month(date);
        for piece in &self.relative {
            match piece {
                Relative::LastDay if v == last_day => return true,
                Relative::BeforeLast(n) => return last_day.checked_sub(*n) == Some(v),
                Relative::BeforeLastRange(a, b) if (*a..=*b).any(|n| last_day.checked_sub(n) == Some(v)) => {
                    return true;
                }
                Relative::LastWeekdays(days) if date.day() + 7 > last_day && days.contains(&v) => return true,
                _ => {}
            }
        }
        self.any || self.allowed.contains(&v)
    }
}

/// `n` or `a-b` (0..7) after the `z` or `l` of a relative piece.
fn relative_range(text: &str) -> Result<(u32, Option<u32>), String> {
    let within = |n: u32| if n <= 7 { Ok(n) } else { Err(format!("{n} is not within 0..7")) };
    match text.split_once('-') {
        Some((a, b)) => {
            let (a, b) = (within(number(a)?)?, within(number(b)?)?);
            if a > b {
                return Err(format!("the range starts at {a}, after its end {b}"));
            }
            Ok((a, Some(b)))
        }
        None => Ok((within(number(text)?)?, None)),
    }
}

fn number(text: &str) -> Result<u32, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{text:?} is not a number"));
    }
    text.parse().map_err(|_| format!("{text:?} is too large"))
}

/// A value of a field: a number within its range, or a month's or weekday's name.
fn value(which: usize, text: &str, limit: u32) -> Result<u32, String> {
    let names: &[&str] = match which {
        MONTH => &MONTHS,
        WEEKDAY => &WEEKDAYS,
        _ => &[],
    };
    if let Some(i) = names.iter().position(|n| *n == text) {
        return Ok(i as u32 + if which == MONTH { 1 } else { 0 });
    }
    let n = number(text)?;
    let low = FIELDS[which].1;
    if !(low..=limit).contains(&n) {
        return Err(format!("{n} is not within {low}..{limit}"));
    }
    Ok(n)
}

fn last_day_of_month(date: NaiveDate) -> u32 {
    let (y, m) = if date.month() == 12 { (date.year() + 1, 1) } else { (date.year(), date.month() + 1) };
    NaiveDate::from_ymd_opt(y, m, 1).and_then(|d| d.pred_opt()).map_or(31, |d| d.day())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, s).unwrap()
    }

    /// The fire times after `now`, `count` of them.
    fn fires(expr: &str, mut now: DateTime<Utc>, count: usize) -> Vec<DateTime<Utc>> {
        let mut out = Vec::new();
        for _ in 0..count {
            now = next_fire(expr, now).unwrap();
            out.push(now);
        }
        out
    }

    #[test]
    fn five_six_or_seven_fields() {
        let now = at(2030, 1, 1, 10, 0, 30);
        assert_eq!(next_fire("*/5 * * * *", now), Some(at(2030, 1, 1, 10, 5, 0)));
        assert_eq!(next_fire("0 12 * * * *", now), Some(at(2030, 1, 1, 12, 0, 0)));
        assert_eq!(next_fire("45 * * * * * *", now), Some(at(2030, 1, 1, 10, 0, 45)));
        assert_eq!(next_fire("nonsense", now), None);
        assert!(parse("* * *").unwrap_err().contains("has 3"));
        assert!(parse("61 * * * *").is_err());
        // Valid, but never again: February 30th, a year gone by.
        assert_eq!(next_fire("0 0 30 2 *", now), None);
        assert_eq!(next_fire("0 0 1 1 * 2020", now), None);
    }

    /// Fire times of Python's `crontab` 1.0.5 (the reference install of Inmanta 20.1),
    /// `CronTab(expr).next(now=..., return_datetime=True)` from Tuesday 24 November 2026 10:00 UTC.
    #[test]
    fn days_of_week_are_inmantas() {
        let now = at(2026, 11, 24, 10, 0, 0);
        // Monday to Friday at nine: Wednesday 25th to Friday 27th, then Monday 30th and Tuesday.
        let weekdays = fires("0 9 * * 1-5", now, 5);
        let days: Vec<u32> = weekdays.iter().map(|t| t.day()).collect();
        assert_eq!(days, [25, 26, 27, 30, 1]);
        assert!(weekdays.iter().all(|t| (t.hour(), t.minute()) == (9, 0)));
        // Sunday as 0, as 7, as `sun`; Saturday and Sunday as `sat-sun`.
        for sunday in ["0 9 * * 0", "0 9 * * 7", "0 9 * * sun", "@weekly"] {
            let t = next_fire(sunday, now).unwrap();
            assert_eq!(t.weekday(), chrono::Weekday::Sun, "{sunday}");
            assert_eq!(t.day(), 29, "{sunday}");
        }
        assert_eq!(fires("0 9 * * sat-sun", now, 3).iter().map(|t| t.day()).collect::<Vec<_>>(), [28, 29, 5]);
        assert_eq!(fires("0 9 * * mon,fri", now, 2).iter().map(|t| t.day()).collect::<Vec<_>>(), [27, 30]);
        // Every other weekday from Sunday: Sunday, Tuesday, Thursday, Saturday.
        assert_eq!(fires("0 0 * * */2", now, 4).iter().map(|t| t.day()).collect::<Vec<_>>(), [26, 28, 29, 1]);
        // Day of month and day of week must both match: the 13th on a Friday.
        assert_eq!(next_fire("0 0 13 * 5", now), Some(at(2027, 8, 13, 0, 0, 0)));
    }

    #[test]
    fn days_relative_to_the_months_end() {
        let now = at(2026, 11, 24, 10, 0, 0);
        assert_eq!(next_fire("0 0 l * *", now), Some(at(2026, 11, 30, 0, 0, 0)));
        assert_eq!(next_fire("0 0 z1 * *", now), Some(at(2026, 11, 29, 0, 0, 0)));
        // The last Friday of the month: 27 November, then 25 December.
        assert_eq!(fires("0 0 * * l5", now, 2), [at(2026, 11, 27, 0, 0, 0), at(2026, 12, 25, 0, 0, 0)]);
        assert_eq!(next_fire("0 0 1 feb *", now), Some(at(2027, 2, 1, 0, 0, 0)));
        assert_eq!(next_fire("0 0 29 2 *", now), Some(at(2028, 2, 29, 0, 0, 0)));
        assert_eq!(next_fire("15/20 * * * *", now), Some(at(2026, 11, 24, 10, 15, 0)));
    }

    #[test]
    fn refuses_what_inmanta_refuses() {
        for expr in [
            "0 9 * * 8",
            "0 9 * * 5-1",
            "0 24 * * *",
            "0 0 0 * *",
            "0 0 * 13 *",
            "*/0 * * * *",
            "*/60 * * * *",
            "0 0 ? * *?",
            "0 ? * * *",
            "0 0 * * mon-funday",
            "0 0 l5 * *",
            "0 0 * * l",
            "0 0 * * * 2100",
            "1,,2 * * * *",
        ] {
            assert!(parse(expr).is_err(), "{expr}");
        }
    }
}
