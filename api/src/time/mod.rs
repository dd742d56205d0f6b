//! The one type for a moment in time, from the database row through the API to the console.
//!
//! On the wire and in both databases a time is fixed-width UTC text with microseconds,
//! `2026-11-23T10:00:00.123456Z`: fixed width so that text order is time order in SQL. Reading
//! accepts what Inmanta and people write too: any RFC 3339 offset, and naive times (taken as UTC).

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, NaiveDateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

mod iso8601;

/// A moment in UTC, written as `YYYY-MM-DDTHH:MM:SS.ffffffZ`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(DateTime<Utc>);

/// The stored and wire form.
const FORMAT: &str = "%Y-%m-%dT%H:%M:%S%.6fZ";

/// Naive forms read as UTC (Inmanta answers without offset; people type a space).
const NAIVE_FORMATS: [&str; 3] = ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S%.f"];

impl Timestamp {
    pub fn now() -> Timestamp {
        Timestamp(Utc::now())
    }

    pub fn datetime(self) -> DateTime<Utc> {
        self.0
    }

    /// Seconds from `self` to `later` (negative when `later` is earlier).
    pub fn seconds_until(self, later: Timestamp) -> f64 {
        (later.0 - self.0).num_microseconds().map_or(0.0, |us| us as f64 / 1e6)
    }

    /// Reads a date as Inmanta's list filters read one (`dateutil`'s ISO 8601 parser): every
    /// RFC 3339 form and the shorter ones, `2026-11-24 22:07:46`, `2026-11-24`, `20261124T2207`,
    /// week and ordinal dates; without an offset the time is UTC.
    pub fn parse_iso8601(text: &str) -> Result<Timestamp, BadTimestamp> {
        iso8601::parse(text).map(Timestamp).ok_or_else(|| BadTimestamp(text.to_string()))
    }

    /// `2026-11-23 10:00:00`: the time for people, to the second.
    pub fn short(self) -> String {
        self.0.format("%Y-%m-%d %H:%M:%S").to_string()
    }
}

impl From<DateTime<Utc>> for Timestamp {
    fn from(t: DateTime<Utc>) -> Timestamp {
        Timestamp(t)
    }
}

impl From<Timestamp> for DateTime<Utc> {
    fn from(t: Timestamp) -> DateTime<Utc> {
        t.0
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.format(FORMAT))
    }
}

/// A text that is not a time in any accepted form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadTimestamp(pub String);

impl fmt::Display for BadTimestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} is not an ISO-8601 timestamp", self.0)
    }
}

impl std::error::Error for BadTimestamp {}

impl FromStr for Timestamp {
    type Err = BadTimestamp;

    fn from_str(text: &str) -> Result<Timestamp, BadTimestamp> {
        // chrono's own reading is RFC 3339 with a space allowed for the `T`
        if let Ok(t) = text.parse::<DateTime<Utc>>() {
            return Ok(Timestamp(t));
        }
        NAIVE_FORMATS
            .iter()
            .find_map(|f| NaiveDateTime::parse_from_str(text, f).ok())
            .map(|t| Timestamp(t.and_utc()))
            .ok_or_else(|| BadTimestamp(text.to_string()))
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Timestamp, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stored_form_round_trips() {
        let text = "2026-11-23T10:00:00.123456Z";
        let t: Timestamp = text.parse().unwrap();
        assert_eq!(t.to_string(), text);
        assert_eq!(serde_json::to_string(&t).unwrap(), format!("\"{text}\""));
        assert_eq!(serde_json::from_str::<Timestamp>(&format!("\"{text}\"")).unwrap(), t);
    }

    #[test]
    fn offsets_and_naive_times_are_read_as_utc() {
        let want: Timestamp = "2026-11-23T10:00:00.500000Z".parse().unwrap();
        for text in ["2026-11-23T11:00:00.5+01:00", "2026-11-23T10:00:00.5", "2026-11-23 10:00:00.5"] {
            assert_eq!(text.parse::<Timestamp>().unwrap(), want, "{text}");
        }
        let whole: Timestamp = "2026-11-23T10:00:00".parse().unwrap();
        assert_eq!(whole.to_string(), "2026-11-23T10:00:00.000000Z");
        assert_eq!(whole.short(), "2026-11-23 10:00:00");
    }

    #[test]
    fn text_order_is_time_order() {
        let a: Timestamp = "2026-01-02T03:04:05.000001Z".parse().unwrap();
        let b: Timestamp = "2026-01-02T03:04:05.1Z".parse().unwrap();
        assert!(a < b && a.to_string() < b.to_string());
        assert!((a.seconds_until(b) - 0.099999).abs() < 1e-9);
    }

    #[test]
    fn nonsense_is_refused() {
        assert!("yesterday".parse::<Timestamp>().is_err());
        assert!(serde_json::from_str::<Timestamp>("\"2026-13-01T00:00:00Z\"").is_err());
    }
}
