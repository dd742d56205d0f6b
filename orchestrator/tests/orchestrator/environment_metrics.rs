//! Environment metrics (`GET /api/v2/metrics`, Inmanta 20.1's environment metrics service): what
//! a collected minute stores, how a read divides the interval and aggregates per window, and
//! retention. SQLite, and PostgreSQL when `INMANTA_TEST_POSTGRES` is set.

use api::environment_metrics::{MetricName, MetricPoint};
use chrono::{DateTime, Duration, Utc};
use orchestrator::Orchestrator;
use orchestrator::environment_metrics::MetricsQuery;
use orchestrator::store::format_time;
use uuid::Uuid;

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text).unwrap().with_timezone(&Utc)
}

async fn compile(o: &Orchestrator, env: Uuid, requested: &str, started: &str, completed: &str) {
    sqlx::query("INSERT INTO compile (id, environment, requested, started, completed) VALUES ($1, $2, $3, $4, $5)")
        .bind(Uuid::new_v4().to_string())
        .bind(env.to_string())
        .bind(format_time(at(requested)))
        .bind(format_time(at(started)))
        .bind(format_time(at(completed)))
        .execute(o.store().pool())
        .await
        .unwrap();
}

fn query(metrics: &[MetricName], start: &str, end: &str, datapoints: u32) -> MetricsQuery {
    MetricsQuery { metrics: metrics.to_vec(), start: at(start), end: at(end), datapoints, round_timestamps: false }
}

#[tokio::test]
async fn minutes_are_recorded_and_read_back_per_window() {
    let dir = tempfile::tempdir().unwrap();
    let o = Orchestrator::open(&orchestrator::testing::fresh_database_url(dir.path()).await.unwrap()).await.unwrap();
    let env = orchestrator::testing::new_environment(&o).await.unwrap();
    orchestrator::testing::store_one_null_resource(&o, env).await.unwrap();

    // Two compiles finish in the minute 10:00-10:01: 30 s and 90 s of run time, 10 s and 20 s in
    // the queue (both started in that minute too); one more starts and ends the next minute.
    compile(&o, env, "2026-01-01T09:59:50Z", "2026-01-01T10:00:00Z", "2026-01-01T10:00:30Z").await;
    compile(&o, env, "2026-01-01T09:58:40Z", "2026-01-01T09:59:00Z", "2026-01-01T10:00:30Z").await;
    compile(&o, env, "2026-01-01T10:01:00Z", "2026-01-01T10:01:04Z", "2026-01-01T10:01:10Z").await;
    // Collected at any instant of the next minute: the window is the whole minute before it.
    o.collect_environment_metrics(at("2026-01-01T10:01:00.5Z")).await.unwrap();
    o.collect_environment_metrics(at("2026-01-01T10:02:07Z")).await.unwrap();
    // A second server collecting the same minute adds nothing.
    o.collect_environment_metrics(at("2026-01-01T10:02:30Z")).await.unwrap();

    let all = [
        MetricName::ResourceCount,
        MetricName::AgentCount,
        MetricName::CompileTime,
        MetricName::CompileWaitingTime,
        MetricName::CompileRate,
    ];
    // Two windows of 60 minutes: everything lands in the second (10:00 to 11:00).
    let got =
        o.environment_metrics(env, &query(&all, "2026-01-01T09:00:00Z", "2026-01-01T11:00:00Z", 2)).await.unwrap();
    assert_eq!(got.timestamps, vec![at("2026-01-01T10:00:00Z").into(), at("2026-01-01T11:00:00Z").into()]);
    let window = |name: MetricName, i: usize| got.metrics[name.as_str()][i].clone();
    assert_eq!(window(MetricName::CompileTime, 0), MetricPoint::None);
    // Run time: (30 + 90 + 6) / 3 compiles; queue: the first minute's (10 s; the second compile
    // started at 09:59, before the window) and the next minute's 4 s.
    assert_eq!(window(MetricName::CompileTime, 1), MetricPoint::Value(42.0));
    assert_eq!(window(MetricName::CompileWaitingTime, 1), MetricPoint::Value(7.0));
    // Three compiles in a window of one hour; an empty window is 0, not nothing.
    assert_eq!(window(MetricName::CompileRate, 0), MetricPoint::Value(0.0));
    assert_eq!(window(MetricName::CompileRate, 1), MetricPoint::Value(3.0));
    let MetricPoint::ByCategory(resources) = window(MetricName::ResourceCount, 1) else {
        panic!("resource counts are per state: {:?}", window(MetricName::ResourceCount, 1))
    };
    assert_eq!(resources.values().sum::<f64>(), 1.0, "one resource in all: {resources:?}");
    assert_eq!(resources.len(), api::ResourceState::RESOURCE_STATES.len(), "every state, dry included: {resources:?}");
    let MetricPoint::ByCategory(agents) = window(MetricName::AgentCount, 1) else { panic!("agents per state") };
    assert_eq!(agents.keys().map(String::as_str).collect::<Vec<_>>(), ["down", "paused", "up"]);
    assert_eq!(agents.values().sum::<f64>(), 1.0, "agent a: {agents:?}");

    // Windows of one minute: each collected minute is its own point.
    let got = o
        .environment_metrics(env, &query(&[MetricName::CompileTime], "2026-01-01T10:00:00Z", "2026-01-01T10:04:00Z", 3))
        .await
        .unwrap();
    // 240 s in 3 windows of 80 s, ending at 10:01:20, 10:02:40, 10:04:00; rows stamped 10:01 and 10:02.
    assert_eq!(
        got.metrics["orchestrator.compile_time"],
        vec![MetricPoint::Value(60.0), MetricPoint::Value(6.0), MetricPoint::None]
    );

    // Another environment sees nothing of these; an unknown one is 404.
    let other = o.create_project("q", None).await.unwrap().id;
    let other = o
        .create_environment(api::environment::EnvironmentCreate {
            project_id: other,
            name: "f".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .id;
    let got = o
        .environment_metrics(
            other,
            &query(&[MetricName::CompileTime], "2026-01-01T09:00:00Z", "2026-01-01T11:00:00Z", 2),
        )
        .await
        .unwrap();
    assert_eq!(got.metrics["orchestrator.compile_time"], vec![MetricPoint::None, MetricPoint::None]);
    let unknown =
        o.environment_metrics(Uuid::new_v4(), &query(&all, "2026-01-01T09:00:00Z", "2026-01-01T11:00:00Z", 2)).await;
    assert!(matches!(unknown, Err(orchestrator::Error::NotFound(_))), "{unknown:?}");
}

#[tokio::test]
async fn rows_older_than_the_retention_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    let o = Orchestrator::open(&orchestrator::testing::fresh_database_url(dir.path()).await.unwrap()).await.unwrap();
    let env = orchestrator::testing::new_environment(&o).await.unwrap();
    let now = Utc::now();
    // Three hours ago the environment had no agent; now it has one.
    o.collect_environment_metrics(now - Duration::hours(3)).await.unwrap();
    orchestrator::testing::store_one_null_resource(&o, env).await.unwrap();
    o.collect_environment_metrics(now).await.unwrap();
    let agents_since = |from: DateTime<Utc>| {
        let o = o.clone();
        async move {
            let q = MetricsQuery {
                metrics: vec![MetricName::AgentCount],
                start: from,
                end: now + Duration::minutes(5),
                datapoints: 1,
                round_timestamps: false,
            };
            match o.environment_metrics(env, &q).await.unwrap().metrics["resource.agent_count"][0].clone() {
                MetricPoint::ByCategory(by_state) => by_state.values().sum::<f64>(),
                other => panic!("agents per state, got {other:?}"),
            }
        }
    };
    // The average over both minutes: 0 agents, then 1.
    assert_eq!(agents_since(now - Duration::hours(4)).await, 0.5);
    o.set_environment_setting(env, "environment_metrics_retention", &serde_json::json!(2)).await.unwrap();
    assert!(o.clean_old_environment_metrics(now).await.unwrap() > 0, "the 3-hour-old minute goes");
    assert_eq!(agents_since(now - Duration::hours(4)).await, 1.0, "only the recent minute is left");
    // 0 keeps everything.
    o.collect_environment_metrics(now - Duration::hours(5)).await.unwrap();
    o.set_environment_setting(env, "environment_metrics_retention", &serde_json::json!(0)).await.unwrap();
    assert_eq!(o.clean_old_environment_metrics(now).await.unwrap(), 0);
}
