//! Times storing a 10 000-resource version (`put_version`, release included) and reading a
//! filtered, sorted page of 100 of the resource list, on SQLite, and on PostgreSQL when
//! `INMANTA_TEST_POSTGRES` holds an admin URL. Run: `cargo bench -p orchestrator --bench put_version`.

use std::time::Instant;

use api::environment::EnvironmentCreate;
use api::version::PutVersion;
use orchestrator::Orchestrator;
use serde_json::json;

fn resources(n: usize) -> Vec<serde_json::Map<String, serde_json::Value>> {
    (0..n)
        .map(|i| {
            let agent = format!("agent-{}", i % 4);
            let dir = format!("fs::Directory[{agent},path=/srv/{agent}]");
            let requires = if i % 4 == i { vec![] } else { vec![dir.clone()] };
            let id = if i < 4 { dir } else { format!("fs::File[{agent},path=/srv/{agent}/svc-{i:06}.conf]") };
            let value = json!({
                "id": format!("{id},v=0"), "path": format!("/srv/{agent}/svc-{i:06}.conf"),
                "hash": "f572d396fae9206628714fb2ce00f72e94f2258f", "owner": null, "group": null,
                "permissions": 644, "purged": false, "send_event": true, "receive_events": true,
                "report_only": false, "references": [], "mutators": [],
                "via": {"method_name": "local", "name": ""}, "requires": requires,
            });
            value.as_object().cloned().unwrap_or_default()
        })
        .collect()
}

async fn run(label: &str, url: &str, n: usize) {
    let o = Orchestrator::open(url).await.expect("open database");
    let project = o.create_project("bench", None).await.expect("project").id;
    let env = o
        .create_environment(EnvironmentCreate { project_id: project, name: "bench".into(), ..Default::default() })
        .await
        .expect("environment")
        .id;
    let mut timings = Vec::new();
    for _ in 0..5 {
        let version = o.reserve_version(env).await.expect("reserve");
        let req = PutVersion { version, resources: resources(n), ..Default::default() };
        let started = Instant::now();
        o.put_version(env, req).await.expect("put_version");
        timings.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    timings.sort_by(f64::total_cmp);
    let put_median = timings[2];
    let pairs: Vec<(String, String)> = [
        ("limit", "100"),
        ("sort", "agent.asc"),
        ("filter.resource_id_value", "svc-00"),
        ("filter.status", "available"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let page = orchestrator::paging::page_request(&pairs).expect("page request");
    let mut list = Vec::new();
    for _ in 0..21 {
        let started = Instant::now();
        let (found, _) = o.released_resources(env, &page, false).await.expect("resource list");
        list.push(started.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(found.items.len(), 100);
    }
    list.sort_by(f64::total_cmp);
    println!("resource list {n} resources on {label}, filtered, sorted, page of 100: median {:.1} ms", list[10]);
    let _ = put_median;
    println!(
        "put_version {n} resources on {label}: median {:.0} ms (min {:.0}, max {:.0}) over 5 runs",
        timings[2], timings[0], timings[4]
    );
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let n = 10_000;
    run("SQLite", &format!("sqlite://{}", dir.path().join("bench.db").display()), n).await;
    if std::env::var("INMANTA_TEST_POSTGRES").is_ok_and(|v| !v.is_empty()) {
        let url = orchestrator::testing::fresh_database_url(dir.path()).await.expect("postgres");
        run("PostgreSQL", &url, n).await;
    }
}
