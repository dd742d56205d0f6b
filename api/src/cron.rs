//! Cron expressions of the settings `autostart_agent_deploy_interval`,
//! `autostart_agent_repair_interval` and `auto_full_compile`, read as Inmanta reads them (UTC):
//! five fields are `min hour dom month dow`, six `min hour dom month dow year`, seven start with
//! seconds. Here so that the settings' validation and the timers that fire them agree.

use std::str::FromStr;

use chrono::{DateTime, Utc};

/// The schedule an expression names, or why it names none.
pub fn parse(expr: &str) -> Result<::cron::Schedule, String> {
    let full = match expr.split_whitespace().count() {
        5 | 6 => format!("0 {expr}"),
        7 => expr.to_string(),
        n => {
            return Err(format!(
                "a cron expression has 5 to 7 fields ([sec] min hour dom month dow [year]), this one has {n}"
            ));
        }
    };
    ::cron::Schedule::from_str(&full).map_err(|e| e.to_string())
}

/// The first time after `now` that a cron expression names (UTC).
pub fn next_fire(expr: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    parse(expr).ok()?.after(&now).next()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn five_six_or_seven_fields() {
        let now = Utc.with_ymd_and_hms(2030, 1, 1, 10, 0, 30).unwrap();
        assert_eq!(next_fire("*/5 * * * *", now), Some(Utc.with_ymd_and_hms(2030, 1, 1, 10, 5, 0).unwrap()));
        assert_eq!(next_fire("0 12 * * * *", now), Some(Utc.with_ymd_and_hms(2030, 1, 1, 12, 0, 0).unwrap()));
        assert_eq!(next_fire("45 * * * * * *", now), Some(Utc.with_ymd_and_hms(2030, 1, 1, 10, 0, 45).unwrap()));
        assert_eq!(next_fire("nonsense", now), None);
        assert!(parse("* * *").unwrap_err().contains("has 3"));
        assert!(parse("61 * * * *").is_err());
        // Valid, but never again: February 30th, a year gone by.
        assert_eq!(next_fire("0 0 30 2 *", now), None);
        assert_eq!(next_fire("0 0 1 1 * 2020", now), None);
    }
}
