//! The environment metrics charts of the dashboard: what the server records once a minute
//! (`GET /api/v2/metrics`, orchestrator::environment_metrics) over the last hour, day or week,
//! drawn as small inline SVG line charts (no chart library: a polyline per series is enough).

use crate::error::ConsoleError;
use leptos::prelude::*;
use leptos::server_fn::codec::Json;
use leptos_router::hooks::use_query_map;
use serde::{Deserialize, Serialize};

use crate::components::{Loaded, link, live_resource, query};

#[cfg(all(test, feature = "ssr"))]
mod tests;

/// The time spans the dashboard offers: the `metrics` query value, its label, its length in
/// minutes and how many windows it is divided into (each window is one point of a chart; a
/// window must be longer than a minute, the collection interval).
pub const SPANS: &[(&str, &str, i64, u32)] =
    &[("hour", "Last hour", 60, 30), ("day", "Last day", 24 * 60, 96), ("week", "Last week", 7 * 24 * 60, 168)];

/// The metrics of one span, ready to draw.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricsView {
    /// The `metrics` query value of the span.
    pub span: String,
    pub start: String,
    pub end: String,
    pub charts: Vec<Chart>,
}

/// One chart: a metric, with a line per category (resource or agent state) or a single line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Chart {
    /// Inmanta's metric name, e.g. `resource.resource_count`.
    pub metric: String,
    pub title: String,
    /// What a value counts, after the number: "resources", "s", "compiles/h".
    pub unit: String,
    pub series: Vec<Series>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// The category (a state), or empty for a metric without categories.
    pub name: String,
    /// One value per window, oldest first; `None` where nothing was recorded.
    pub points: Vec<Option<f64>>,
}

impl Chart {
    /// Windows with a recorded value in any series (a compile rate of 0 counts as nothing:
    /// Inmanta answers 0.0 for windows without compiles).
    pub fn recorded(&self) -> usize {
        let len = self.series.iter().map(|s| s.points.len()).max().unwrap_or(0);
        (0..len)
            .filter(|i| {
                self.series.iter().any(|s| match s.points.get(*i).copied().flatten() {
                    Some(v) => self.metric != "orchestrator.compile_rate" || v > 0.0,
                    None => false,
                })
            })
            .count()
    }
}

/// The metrics panel under the dashboard's cards, with links to choose the span.
#[component]
pub fn MetricsPanel(env: Memo<String>) -> impl IntoView {
    let span = query("metrics");
    let data = live_resource(move || (env.get(), span.get()), |(e, s)| environment_metrics(e, s));
    let q = use_query_map();
    let choices = move || {
        let current = q.get();
        let chosen = span_of(&span.get()).0;
        SPANS
            .iter()
            .map(|(key, label, _, _)| {
                let href = link(crate::routes::DASHBOARD.href, &current, &[("metrics", Some(key.to_string()))]);
                let active = chosen == *key;
                view! {
                    <a class="chip" class:active=active aria-current=active.then_some("true") href=href data-span=*key>
                        {*label}
                    </a>
                }
            })
            .collect_view()
    };
    view! {
        <section class="card metrics" id="metrics" aria-labelledby="metrics-title">
            <div class="metrics-header">
                <h2 id="metrics-title">"Metrics"</h2>
                <div class="legend" role="group" aria-label="Time span">{choices}</div>
            </div>
            <Loaded
                resource=data
                loading="Loading metrics…"
                error_title="The metrics could not be loaded"
                view=|m| view! { <MetricsCharts data=m/> }
            />
        </section>
    }
}

#[component]
fn MetricsCharts(data: MetricsView) -> impl IntoView {
    let label = span_of(&data.span).1.to_lowercase();
    if data.charts.iter().all(|c| c.recorded() == 0) {
        return view! {
            <p class="muted" id="metrics-empty">
                {format!("Nothing recorded in the {label}: the server records the metrics of every environment once a minute.")}
            </p>
        }
        .into_any();
    }
    let (start, end) = (clock(&data.start, &data.span), clock(&data.end, &data.span));
    view! {
        <div class="metric-charts" data-span=data.span.clone()>
            {data
                .charts
                .into_iter()
                .map(|c| view! { <MetricChart chart=c start=start.clone() end=end.clone() label=label.clone()/> })
                .collect_view()}
        </div>
    }
    .into_any()
}

/// Width and height of a chart's drawing space; the SVG stretches to its box, lines keep their
/// stroke width (`vector-effect`), so the numbers only set the proportions.
const W: f64 = 300.0;
const H: f64 = 80.0;

#[component]
fn MetricChart(chart: Chart, start: String, end: String, label: String) -> impl IntoView {
    let recorded = chart.recorded();
    let max = chart.series.iter().flat_map(|s| s.points.iter().flatten()).fold(0.0f64, |a, b| a.max(*b));
    let top = if max <= 0.0 { 1.0 } else { max };
    let latest: Vec<(String, Option<f64>)> =
        chart.series.iter().map(|s| (s.name.clone(), s.points.iter().rev().flatten().next().copied())).collect();
    let summary = latest
        .iter()
        .filter_map(|(name, v)| {
            v.map(|v| format!("{}{}", if name.is_empty() { String::new() } else { format!("{name} ") }, number(v)))
        })
        .collect::<Vec<_>>()
        .join(", ");
    let aria = format!("{}, {label}: latest {}", chart.title, if summary.is_empty() { "none".into() } else { summary });
    let body = if recorded == 0 {
        view! { <p class="muted metric-empty">{format!("Nothing recorded in the {label}.")}</p> }.into_any()
    } else {
        let lines = chart
            .series
            .iter()
            .map(|s| {
                view! {
                    <path
                        class="series"
                        d=path(&s.points, top)
                        data-category=s.name.clone()
                        style=format!("stroke: {}", color(&s.name))
                        vector-effect="non-scaling-stroke"
                    />
                }
            })
            .collect_view();
        let legend = latest
            .into_iter()
            .filter(|(name, _)| !name.is_empty())
            .map(|(name, v)| {
                let swatch = format!("background: {}", color(&name));
                view! {
                    <span class="legend-item">
                        <span class="legend-swatch" style=swatch></span>
                        {format!("{} {}", name.replace('_', " "), v.map(number).unwrap_or_else(|| "–".into()))}
                    </span>
                }
            })
            .collect_view();
        view! {
            <div class="metric-plot">
                <span class="metric-max">{format!("{} {}", number(top), chart.unit)}</span>
                <svg viewBox=format!("0 0 {W} {H}") preserveAspectRatio="none" role="img" aria-label=aria>
                    <line class="axis" x1="0" y1=H.to_string() x2=W.to_string() y2=H.to_string() vector-effect="non-scaling-stroke"/>
                    {lines}
                </svg>
                <div class="metric-times"><span>{start}</span><span>{end}</span></div>
            </div>
            <div class="legend">{legend}</div>
        }
        .into_any()
    };
    view! {
        <figure class="metric-chart" data-metric=chart.metric.clone() data-recorded=recorded>
            <figcaption>{chart.title.clone()}</figcaption>
            {body}
        </figure>
    }
}

/// The SVG path of a series: a line through consecutive recorded windows, broken where nothing
/// was recorded; a lone point is a zero-length segment, drawn as a dot by the round line cap.
pub fn path(points: &[Option<f64>], top: f64) -> String {
    let n = points.len().max(2) as f64;
    let x = |i: usize| if points.len() == 1 { W / 2.0 } else { i as f64 * W / (n - 1.0) };
    let y = |v: f64| H - (v / top).clamp(0.0, 1.0) * H;
    let mut d = String::new();
    let mut previous = false;
    for (i, point) in points.iter().enumerate() {
        match point {
            Some(v) => {
                let next = points.get(i + 1).copied().flatten().is_some();
                if previous {
                    d.push_str(&format!(" L{:.1} {:.1}", x(i), y(*v)));
                } else {
                    d.push_str(&format!(" M{:.1} {:.1}", x(i), y(*v)));
                    if !next {
                        d.push_str(" l0 0");
                    }
                }
                previous = true;
            }
            None => previous = false,
        }
    }
    d.trim_start().to_string()
}

/// The colour of a category (a resource state or an agent status): that state's colour of the
/// console; the accent for a single line (no category).
fn color(category: &str) -> &'static str {
    use api::state::{AgentStatus, ResourceState};
    if category.is_empty() {
        return "var(--accent)";
    }
    if let Some(agent) = AgentStatus::parse(category) {
        return match agent {
            AgentStatus::Up => "var(--state-deployed)",
            AgentStatus::Down => "var(--state-failed)",
            AgentStatus::Paused => "var(--state-skipped)",
        };
    }
    match ResourceState::parse(category) {
        Some(ResourceState::Deployed) => "var(--state-deployed)",
        Some(ResourceState::Deploying) => "var(--state-deploying)",
        Some(ResourceState::Failed) => "var(--state-failed)",
        Some(ResourceState::Skipped) => "var(--state-skipped)",
        Some(ResourceState::Undefined | ResourceState::SkippedForUndefined) => "var(--state-undefined)",
        Some(ResourceState::Orphaned) => "var(--state-orphaned)",
        Some(ResourceState::Unavailable | ResourceState::NonCompliant) => "var(--state-unavailable)",
        _ => "var(--state-available)",
    }
}

/// A value for people: whole numbers without decimals, others with at most two.
fn number(v: f64) -> String {
    if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v:.2}").trim_end_matches('0').to_string() }
}

/// The span of a `metrics` query value (the first, an hour, when it is unknown or absent).
pub fn span_of(key: &str) -> (&'static str, &'static str, i64, u32) {
    SPANS.iter().copied().find(|s| s.0 == key).unwrap_or(SPANS[0])
}

/// A window boundary as a short time: `14:05` within a day, `11-28 14:00` over a week (UTC, as
/// the server writes times).
fn clock(time: &str, span: &str) -> String {
    let t = time.replace('T', " ");
    match span {
        "week" => t.get(5..16).unwrap_or(&t).to_string(),
        _ => t.get(11..16).unwrap_or(&t).to_string(),
    }
}

/// The charts of one environment over a span (`hour`, `day` or `week`; others mean an hour).
#[server(prefix = "/console/fn", endpoint = "environment_metrics", input = Json)]
pub async fn environment_metrics(env: String, span: String) -> Result<MetricsView, ConsoleError> {
    use api::environment_metrics::{MetricName, MetricPoint};
    let s = crate::fns::authorized_for("metrics.read", &env)?;
    let (key, _, minutes, datapoints) = span_of(&span);
    let end = chrono::Utc::now();
    let query = orchestrator::environment_metrics::MetricsQuery {
        metrics: vec![
            MetricName::ResourceCount,
            MetricName::AgentCount,
            MetricName::CompileTime,
            MetricName::CompileWaitingTime,
            MetricName::CompileRate,
        ],
        start: end - chrono::Duration::minutes(minutes),
        end,
        datapoints,
        round_timestamps: false,
    };
    let mut answer =
        s.orchestrator.environment_metrics(crate::fns::env_id(&env)?, &query).await.map_err(crate::fns::fail)?;
    let mut chart = |metric: MetricName, title: &str, unit: &str| {
        let points = answer.metrics.remove(metric.as_str()).unwrap_or_default();
        let mut categories: Vec<String> = points
            .iter()
            .filter_map(|p| match p {
                MetricPoint::ByCategory(values) => Some(values.keys().cloned().collect::<Vec<_>>()),
                _ => None,
            })
            .flatten()
            .collect();
        categories.sort();
        categories.dedup();
        let series = if categories.is_empty() {
            let values = points.iter().map(|p| if let MetricPoint::Value(v) = p { Some(*v) } else { None }).collect();
            vec![Series { name: String::new(), points: values }]
        } else {
            categories
                .into_iter()
                .map(|category| {
                    let values = points
                        .iter()
                        .map(|p| match p {
                            MetricPoint::ByCategory(values) => values.get(&category).copied(),
                            _ => None,
                        })
                        .collect();
                    Series { name: category, points: values }
                })
                .collect()
        };
        // A state no resource or agent was in during the span is left out (unless all are).
        let mut series: Vec<Series> = series;
        let counted = |s: &Series| s.points.iter().flatten().any(|v| *v > 0.0);
        if series.iter().any(counted) {
            series.retain(counted);
        }
        Chart { metric: metric.as_str().to_string(), title: title.to_string(), unit: unit.to_string(), series }
    };
    let charts = vec![
        chart(MetricName::ResourceCount, "Resources by state", "resources"),
        chart(MetricName::AgentCount, "Agents by state", "agents"),
        chart(MetricName::CompileTime, "Compile time", "s"),
        chart(MetricName::CompileWaitingTime, "Compile waiting time", "s"),
        chart(MetricName::CompileRate, "Compile rate", "compiles/h"),
    ];
    Ok(MetricsView { span: key.to_string(), start: answer.start.to_string(), end: answer.end.to_string(), charts })
}
