//! Values written for people: durations and dates.

/// A duration for people: `0.4 s`, `12 s`, `3 min 4 s`, `2 h 5 min`.
pub fn duration_text(seconds: f64) -> String {
    if seconds < 10.0 {
        return format!("{seconds:.1} s");
    }
    let s = seconds.round() as u64;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        3600..86400 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        _ => format!("{} d {} h", s / 86400, s % 86400 / 3600),
    }
}

/// `2026-11-23T10:00:00.123456+00:00` -> `2026-11-23 10:00:00`.
pub fn short_date(date: &str) -> String {
    let d = date.replace('T', " ");
    d.get(..19).unwrap_or(&d).to_string()
}
