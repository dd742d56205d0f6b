//! Environment metrics as Inmanta 20.1 records and serves them (`GET /api/v2/metrics`, what the
//! console's dashboard charts): once a minute the server stores, per environment, resources by
//! state and agents by state (gauges), and the compiles that finished or started in that minute
//! with their total duration or waiting time (timers). A read divides a time interval into
//! windows and answers per window the average of a gauge, the mean of a timer and the compile
//! rate (compiles an hour). Old rows go after the environment's `environment_metrics_retention`.
//!
//! Unlike Inmanta, the collection windows are whole minutes of the clock: every server of a
//! cluster collects the same window and writes the same keys, so the first write wins and a
//! compile is never counted twice.

use std::collections::BTreeMap;

use api::environment_metrics::{EnvironmentMetrics, MetricName, MetricPoint};
use api::settings::EnvironmentSettings;
use api::state::ResourceState;
use chrono::{DateTime, Duration, DurationRound, TimeDelta, Utc};
use sqlx::Row;
use uuid::Uuid;

use crate::store::{format_time, parse_time};
use crate::{Error, Orchestrator, Result};

/// The category of a metric that has none (part of the primary key, so not NULL), as Inmanta.
const NO_CATEGORY: &str = "__None__";

/// The retention when the setting cannot be read (Inmanta's default: 336 hours).
const DEFAULT_RETENTION_HOURS: i64 = 336;

/// The most windows one read may ask for (Inmanta sets no bound; an answer holds this many
/// points per metric, so without one a single request could ask for billions).
pub const MAX_DATAPOINTS: u32 = 10_000;

/// How long one collection window is.
pub const COLLECTION_INTERVAL: Duration = Duration::seconds(60);

/// What `GET /api/v2/metrics` asks.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricsQuery {
    pub metrics: Vec<MetricName>,
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    pub datapoints: u32,
    pub round_timestamps: bool,
}

/// The windows an interval is divided into: possibly widened to whole hours, and the end of
/// each window.
#[derive(Debug, Clone, PartialEq)]
pub struct Windows {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    pub count: u32,
    pub ends: Vec<DateTime<Utc>>,
}

impl MetricsQuery {
    /// Refuses what Inmanta refuses, with its reasons.
    pub fn windows(&self) -> Result<Windows> {
        let bad = |m: &str| Err(Error::BadRequest(m.to_string()));
        if self.start >= self.end {
            return bad("start_interval should be strictly smaller than end_interval.");
        }
        if self.datapoints > MAX_DATAPOINTS {
            return Err(Error::BadRequest(format!(
                "nb_datapoints is at most {MAX_DATAPOINTS} (a point per pixel of a wide chart is enough)"
            )));
        }
        // Inmanta's `start + nb_datapoints minutes >= end`, without a date past the calendar.
        if self.end - self.start <= Duration::minutes(i64::from(self.datapoints)) {
            return bad(
                "start_interval and end_interval should be at least <nb_datapoints> minutes separated from each other.",
            );
        }
        if self.datapoints == 0 {
            return bad("nb_datapoints should be larger than 0");
        }
        if self.metrics.is_empty() {
            return bad("The 'metrics' argument should contain the name of at least one metric.");
        }
        let seconds = (self.end - self.start).num_milliseconds() as f64 / 1000.0;
        if self.round_timestamps && seconds < 3600.0 * f64::from(self.datapoints) {
            return bad(
                "When round_timestamps is set to True, the number of hours between start_interval and end_interval \
                 should be at least the amount of hours equal to nb_datapoints.",
            );
        }
        Ok(divide(self.start, self.end, self.datapoints, self.round_timestamps))
    }
}

/// Inmanta's division of `[start, end)` into `count` windows: with `round`, windows of whole
/// hours that start and end on a multiple of their length (since the Unix epoch).
fn divide(mut start: DateTime<Utc>, mut end: DateTime<Utc>, mut count: u32, round: bool) -> Windows {
    if round {
        let seconds = (end - start).num_milliseconds() as f64 / 1000.0;
        let hours = (seconds / f64::from(count) / 3600.0).floor() as i64;
        start = round_to_hours(start, hours, false);
        end = round_to_hours(end, hours, true);
        count = ((end - start).num_seconds() / (hours * 3600)) as u32;
    }
    let window =
        TimeDelta::seconds(((end - start).num_milliseconds() as f64 / 1000.0 / f64::from(count)).floor() as i64);
    let ends = (0..count as i32).rev().map(|i| end - window * i).collect();
    Windows { start, end, count, ends }
}

fn round_to_hours(t: DateTime<Utc>, hours: i64, up: bool) -> DateTime<Utc> {
    let in_hours = t.timestamp_micros() as f64 / 3_600_000_000.0 / hours as f64;
    let rounded = if up { in_hours.ceil() } else { in_hours.floor() } as i64 * hours;
    DateTime::from_timestamp(rounded * 3600, 0).unwrap_or(t)
}

/// PostgreSQL's `width_bucket` over the interval, 0-based: which window `t` falls in.
fn window_of(t: DateTime<Utc>, w: &Windows) -> Option<usize> {
    if t < w.start || t >= w.end {
        return None;
    }
    let span = (w.end - w.start).num_microseconds()? as f64;
    let offset = (t - w.start).num_microseconds()? as f64;
    Some(((offset / span * f64::from(w.count)).floor() as usize).min(w.count as usize - 1))
}

/// Per window, per category: what a gauge or timer row adds up to.
#[derive(Default, Clone, Copy)]
struct Sums {
    count: f64,
    value: f64,
    rows: f64,
}

impl Orchestrator {
    /// Stores the minute that ended at the last whole minute before `now` (once per cluster).
    pub async fn collect_environment_metrics(&self, now: DateTime<Utc>) -> Result<()> {
        let end = now.duration_trunc(COLLECTION_INTERVAL).map_err(|e| Error::Corrupt(e.to_string()))?;
        let start = end - COLLECTION_INTERVAL;
        let stamp = format_time(end);
        let counts = self.metric_counts().await?;
        let mut gauges: Vec<(Uuid, MetricName, String, i64)> = Vec::new();
        for ((env, state), n) in &counts.resources {
            gauges.push((*env, MetricName::ResourceCount, state.clone(), *n as i64));
        }
        for env in counts.environments.keys() {
            // Inmanta counts every state of its enum, `dry` (never a resource's state) included.
            gauges.push((*env, MetricName::ResourceCount, ResourceState::Dry.as_str().to_string(), 0));
        }
        for ((env, state), n) in &counts.agents {
            gauges.push((*env, MetricName::AgentCount, state.to_string(), *n as i64));
        }
        let timers = self.compile_timers(start, end).await?;
        let mut tx = self.store.begin_write().await?;
        for (env, metric, category, count) in gauges {
            sqlx::query(
                "INSERT INTO environment_metrics_gauge (environment, metric_name, category, timestamp, count) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
            )
            .bind(env.to_string())
            .bind(metric.as_str())
            .bind(category)
            .bind(&stamp)
            .bind(count)
            .execute(&mut *tx)
            .await?;
        }
        for (env, metric, count, seconds) in timers {
            sqlx::query(
                "INSERT INTO environment_metrics_timer (environment, metric_name, category, timestamp, count, value) \
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
            )
            .bind(env.to_string())
            .bind(metric.as_str())
            .bind(NO_CATEGORY)
            .bind(&stamp)
            .bind(count)
            .bind(seconds)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Compiles that completed in `[start, end)` with their total run time, and those that
    /// started in it with their total time in the queue, per environment.
    async fn compile_timers(
        &self,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<Vec<(Uuid, MetricName, i64, f64)>> {
        let (from, to) = (format_time(start), format_time(end));
        let mut sums: BTreeMap<(Uuid, MetricName), (i64, f64)> = BTreeMap::new();
        let rows = sqlx::query(
            "SELECT environment, requested, started, completed FROM compile \
             WHERE (completed >= $1 AND completed < $2) OR (started >= $1 AND started < $2)",
        )
        .bind(&from)
        .bind(&to)
        .fetch_all(self.store.pool())
        .await?;
        for row in rows {
            let env = crate::store::parse_uuid(&row.try_get::<String, _>("environment")?)?;
            let requested = parse_time(&row.try_get::<String, _>("requested")?)?;
            let started = row.try_get::<Option<String>, _>("started")?.map(|t| parse_time(&t)).transpose()?;
            let completed = row.try_get::<Option<String>, _>("completed")?.map(|t| parse_time(&t)).transpose()?;
            let within = |t: DateTime<Utc>| t >= start && t < end;
            if let Some(started) = started.filter(|t| within(*t)) {
                let sum = sums.entry((env, MetricName::CompileWaitingTime)).or_default();
                *sum = (sum.0 + 1, sum.1 + seconds(started - requested));
            }
            if let (Some(started), Some(completed)) = (started, completed.filter(|t| within(*t))) {
                let sum = sums.entry((env, MetricName::CompileTime)).or_default();
                *sum = (sum.0 + 1, sum.1 + seconds(completed - started));
            }
        }
        Ok(sums.into_iter().map(|((env, metric), (count, total))| (env, metric, count, total)).collect())
    }

    /// Deletes rows older than each environment's `environment_metrics_retention` (hours, 0
    /// keeps everything); halted environments keep theirs, as in Inmanta.
    pub async fn clean_old_environment_metrics(&self, now: DateTime<Utc>) -> Result<u64> {
        let mut deleted = 0;
        for env in self.list_environments().await? {
            if env.halted {
                continue;
            }
            let hours = match self.environment_settings(env.id).await {
                Ok(settings) => retention_hours(&settings),
                Err(Error::NotFound(_)) => continue,
                Err(e) => return Err(e),
            };
            if hours <= 0 {
                continue;
            }
            let before = format_time(now - Duration::hours(hours));
            for table in ["environment_metrics_gauge", "environment_metrics_timer"] {
                let done = sqlx::query(&format!("DELETE FROM {table} WHERE environment = $1 AND timestamp < $2"))
                    .bind(env.id.to_string())
                    .bind(&before)
                    .execute(self.store.pool())
                    .await?;
                deleted += done.rows_affected();
            }
        }
        Ok(deleted)
    }

    /// The metrics of one environment over the windows of `query`.
    pub async fn environment_metrics(&self, env: Uuid, query: &MetricsQuery) -> Result<EnvironmentMetrics> {
        self.ensure_environment(env).await?;
        let windows = query.windows()?;
        let stored: Vec<&str> = query
            .metrics
            .iter()
            .map(|m| if *m == MetricName::CompileRate { MetricName::CompileTime } else { *m })
            .map(MetricName::as_str)
            .collect();
        let mut sums: BTreeMap<(MetricName, String, usize), Sums> = BTreeMap::new();
        for (table, value) in [("environment_metrics_gauge", "0.0"), ("environment_metrics_timer", "value")] {
            let placeholders: Vec<String> = (0..stored.len()).map(|i| format!("${}", i + 4)).collect();
            let sql = format!(
                "SELECT metric_name, category, timestamp, count, CAST({value} AS DOUBLE PRECISION) AS value FROM {table} \
                 WHERE environment = $1 AND timestamp >= $2 AND timestamp < $3 AND metric_name IN ({})",
                placeholders.join(", ")
            );
            let mut q =
                sqlx::query(&sql).bind(env.to_string()).bind(format_time(windows.start)).bind(format_time(windows.end));
            for name in &stored {
                q = q.bind(*name);
            }
            for row in q.fetch_all(self.store.pool()).await? {
                let Some(metric) = MetricName::parse(&row.try_get::<String, _>("metric_name")?) else { continue };
                let Some(window) = window_of(parse_time(&row.try_get::<String, _>("timestamp")?)?, &windows) else {
                    continue;
                };
                let category = row.try_get::<String, _>("category")?;
                let sum = sums.entry((metric, category, window)).or_default();
                sum.count += row.try_get::<i64, _>("count")? as f64;
                sum.value += row.try_get::<f64, _>("value")?;
                sum.rows += 1.0;
            }
        }
        let hours_per_window =
            (windows.end - windows.start).num_milliseconds() as f64 / 1000.0 / 3600.0 / f64::from(windows.count);
        let mut metrics: BTreeMap<String, Vec<MetricPoint>> = BTreeMap::new();
        for metric in &query.metrics {
            let empty = if *metric == MetricName::CompileRate { MetricPoint::Value(0.0) } else { MetricPoint::None };
            metrics.insert(metric.as_str().to_string(), vec![empty; windows.count as usize]);
        }
        for ((metric, category, window), sum) in sums {
            let mut put = |name: MetricName, value: Option<f64>| {
                let (Some(points), Some(value)) = (metrics.get_mut(name.as_str()), value) else { return };
                points[window].set(&category, value, NO_CATEGORY);
            };
            match metric {
                MetricName::ResourceCount | MetricName::AgentCount => put(metric, Some(sum.count / sum.rows)),
                MetricName::CompileTime | MetricName::CompileWaitingTime => {
                    put(metric, (sum.count > 0.0).then(|| sum.value / sum.count));
                    if metric == MetricName::CompileTime {
                        put(MetricName::CompileRate, Some(sum.count / hours_per_window));
                    }
                }
                MetricName::CompileRate => {}
            }
        }
        Ok(EnvironmentMetrics {
            start: windows.start.into(),
            end: windows.end.into(),
            timestamps: windows.ends.iter().map(|t| (*t).into()).collect(),
            metrics,
        })
    }
}

/// Records a window at the start of every minute (a second after it, so the compiles that
/// finished in its last instant are stored) and removes expired rows at start and every hour;
/// failures (a database outage) are logged and the next minute tries again.
pub fn start_recording(orchestrator: Orchestrator) {
    tokio::spawn(async move {
        let mut last_cleanup: Option<DateTime<Utc>> = None;
        loop {
            let now = Utc::now();
            if last_cleanup.is_none_or(|t| now - t >= Duration::hours(1)) {
                match orchestrator.clean_old_environment_metrics(now).await {
                    Ok(n) => tracing::debug!(n, "removed expired environment metrics"),
                    Err(e) => tracing::warn!("cannot remove expired environment metrics: {e}"),
                }
                last_cleanup = Some(now);
            }
            let next =
                now.duration_trunc(COLLECTION_INTERVAL).unwrap_or(now) + COLLECTION_INTERVAL + Duration::seconds(1);
            tokio::time::sleep((next - now).to_std().unwrap_or(std::time::Duration::from_secs(60))).await;
            if let Err(e) = orchestrator.collect_environment_metrics(Utc::now()).await {
                tracing::warn!("cannot record environment metrics: {e}");
            }
        }
    });
}

fn seconds(d: TimeDelta) -> f64 {
    d.num_microseconds().map_or(0.0, |us| us as f64 / 1e6)
}

fn retention_hours(settings: &EnvironmentSettings) -> i64 {
    match settings.settings.get(api::settings::names::ENVIRONMENT_METRICS_RETENTION) {
        Some(api::settings::SettingValue::Int(hours)) => *hours,
        _ => DEFAULT_RETENTION_HOURS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn windows_end_at_the_interval_end_and_step_back_by_whole_seconds() {
        let w = divide(at("2026-01-01T00:00:00Z"), at("2026-01-01T00:10:00Z"), 3, false);
        // 600 s / 3 = 200 s per window, counted back from the end.
        assert_eq!(w.ends, vec![at("2026-01-01T00:03:20Z"), at("2026-01-01T00:06:40Z"), at("2026-01-01T00:10:00Z")]);
        let w = divide(at("2026-01-01T00:00:00Z"), at("2026-01-01T00:10:01Z"), 3, false);
        // 601 s / 3 floors to 200 s, counted back from the end: the first window is a second
        // longer (Inmanta 20.1 gives the same ends).
        assert_eq!(w.ends, vec![at("2026-01-01T00:03:21Z"), at("2026-01-01T00:06:41Z"), at("2026-01-01T00:10:01Z")]);
    }

    #[test]
    fn rounded_windows_are_whole_hours_on_multiples_of_their_length() {
        // 25 h 30 min in 5 windows: 5 h each (floor of 5.1), start down and end up to multiples
        // of 5 h since the epoch, hence 6 windows (the values Inmanta 20.1's
        // `_divide_time_interval_in_time_windows` gives for the same arguments).
        let w = divide(at("2026-01-01T01:15:00Z"), at("2026-01-02T02:45:00Z"), 5, true);
        assert_eq!((w.start, w.end), (at("2025-12-31T23:00:00Z"), at("2026-01-02T05:00:00Z")));
        assert_eq!(w.count, 6);
        assert_eq!(w.ends.first(), Some(&at("2026-01-01T04:00:00Z")));
    }

    #[test]
    fn a_timestamp_falls_in_the_window_width_bucket_names() {
        let w = divide(at("2026-01-01T00:00:00Z"), at("2026-01-01T00:10:00Z"), 2, false);
        assert_eq!(window_of(at("2026-01-01T00:00:00Z"), &w), Some(0));
        assert_eq!(window_of(at("2026-01-01T00:04:59Z"), &w), Some(0));
        assert_eq!(window_of(at("2026-01-01T00:05:00Z"), &w), Some(1));
        assert_eq!(window_of(at("2026-01-01T00:10:00Z"), &w), None);
    }

    #[test]
    fn bad_queries_are_refused_with_inmanta_reasons() {
        let q = |start: &str, end: &str, n: u32, round: bool, metrics: Vec<MetricName>| MetricsQuery {
            metrics,
            start: at(start),
            end: at(end),
            datapoints: n,
            round_timestamps: round,
        };
        let all = vec![MetricName::ResourceCount];
        for (query, says) in [
            (q("2026-01-01T01:00:00Z", "2026-01-01T00:00:00Z", 1, false, all.clone()), "strictly smaller"),
            (q("2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z", 5, false, all.clone()), "minutes separated"),
            (q("2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z", 2, true, all.clone()), "round_timestamps"),
            (q("2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z", 2, false, vec![]), "at least one metric"),
            (q("0001-01-01T00:00:00Z", "9999-12-31T00:00:00Z", u32::MAX, false, all.clone()), "at most 10000"),
        ] {
            match query.windows() {
                Err(Error::BadRequest(m)) => assert!(m.contains(says), "{m:?} should say {says:?}"),
                other => panic!("{query:?} gave {other:?}"),
            }
        }
    }
}
