//! Python handlers: N `kvfile::Line` resources (examples/python-handler-module, a `CRUDHandler`
//! run by inmanta-core in the agents' Python executors) deployed by a real server, from
//! `put_version` to all deployed. Twice: a first version (the executors start, importing
//! inmanta-core and the module, and every line is created) and a second version with every value
//! changed (warm executors, every line updated); then a third with new module code (new executors,
//! started from the warm spare unless INMANTA_AGENT_PYTHON_WARM_SPARE=false).
//!
//! `cargo bench -p server --bench python_handlers` (`LINES=1000`, `AGENTS=1`); the Python is the
//! cached test venv of scripts/python-test-venv.sh.

#[allow(dead_code)] // shared with the other benches
mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use base64::Engine;
use common::Server;
use serde_json::{Value, json};

/// Uploads the example module's code; `edition` > 0 appends a comment, which makes it another code
/// version (another executor).
async fn ship_kvfile(server: &Server, edition: usize) -> Value {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/python-handler-module");
    let path = "inmanta_plugins/kvfile/__init__.py";
    let mut content = std::fs::read(dir.join(path)).expect("the example module");
    if edition > 0 {
        content.extend_from_slice(format!("\n# edition {edition}\n").as_bytes());
    }
    let hash = sha1_smol::Sha1::from(&content).digest().to_string();
    let body = json!({"content": base64::engine::general_purpose::STANDARD.encode(&content)});
    server.call(reqwest::Method::PUT, &format!("/api/v1/file/{hash}"), None, Some(body)).await;
    json!({"kvfile": {"name": "kvfile", "version": "1.0.0", "files_in_module": [{"path": path, "hash_value": hash}]}})
}

async fn deploy(server: &Server, env: &str, modules: &Value, lines: usize, agents: usize, dir: &Path, round: usize) {
    let version = server.call(reqwest::Method::POST, "/api/v2/reserve_version", Some(env), None).await["data"]
        .as_i64()
        .expect("version");
    let resources: Vec<Value> = (0..lines)
        .map(|i| {
            let agent = format!("agent{}", i % agents);
            let path = dir.join(format!("{agent}-{}.conf", i % 10));
            json!({
                "id": format!("kvfile::Line[{agent},key=k{i}],v={version}"),
                "path": path.display().to_string(), "key": format!("k{i}"), "value": format!("v{round}"),
                "purged": false, "purge_on_delete": false, "send_event": false, "receive_events": false,
                "report_only": false, "references": [], "mutators": [], "requires": [],
            })
        })
        .collect();
    let started = Instant::now();
    let body = json!({"version": version, "resources": resources, "module_version_info": modules});
    server.call(reqwest::Method::PUT, "/api/v1/version", Some(env), Some(body)).await;
    let done = wait_round(server, env, lines as u64, dir, round).await;
    println!(
        "{lines} kvfile::Line over {agents} agent(s), {}: put_version to all deployed {:.2} s",
        match round {
            0 => "first version (executors start, lines created)",
            1 => "next version (lines updated)",
            _ => "version with new module code (new executors, lines updated)",
        },
        (done - started).as_secs_f64(),
    );
}

/// Waits until every line holds this round's value and every resource is deployed.
async fn wait_round(server: &Server, env: &str, total: u64, dir: &Path, round: usize) -> Instant {
    let deadline = Instant::now() + Duration::from_secs(600);
    let suffix = format!("=v{round}");
    loop {
        let written: usize = std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
                    .map(|text| text.lines().filter(|l| l.ends_with(&suffix)).count())
                    .sum()
            })
            .unwrap_or(0);
        if written as u64 == total {
            let list = server
                .call(reqwest::Method::GET, "/api/v2/resource?limit=1&deploy_summary=true", Some(env), None)
                .await;
            let summary = &list["metadata"]["deploy_summary"];
            assert!(summary["by_state"]["failed"].as_u64().unwrap_or(0) == 0, "resources failed: {summary}");
            if summary["by_state"]["deployed"].as_u64() == Some(total) {
                return Instant::now();
            }
        }
        assert!(Instant::now() < deadline, "not deployed in time: {written} of {total} lines written");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn main() {
    if std::env::var_os("INMANTA_AGENT_PYTHON").is_none() {
        // The server this bench starts inherits the environment: run again with the venv's Python.
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/python-test-venv.sh");
        let out = std::process::Command::new(script).output().expect("python-test-venv.sh");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let python = String::from_utf8(out.stdout).expect("path").trim().to_string();
        let status = std::process::Command::new(std::env::current_exe().expect("this bench"))
            .args(std::env::args_os().skip(1))
            .env("INMANTA_AGENT_PYTHON", python)
            .status()
            .expect("run the bench again");
        std::process::exit(status.code().unwrap_or(1));
    }
    let size = |name: &str, default: usize| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    let (lines, agents) = (size("LINES", 1000), size("AGENTS", 1));
    tokio::runtime::Runtime::new().expect("runtime").block_on(async {
        let dir = tempfile::tempdir().expect("temp dir");
        let server = Server::start(&dir.path().join("state"), None).await;
        let env = server.environment("python").await;
        let modules = ship_kvfile(&server, 0).await;
        let managed = dir.path().join("managed");
        std::fs::create_dir_all(&managed).expect("dir");
        for round in 0..2 {
            deploy(&server, &env, &modules, lines, agents, &managed, round).await;
        }
        // New module code: new executors, which find the warm spare (`[agent] python-warm-spare`).
        let modules = ship_kvfile(&server, 1).await;
        deploy(&server, &env, &modules, lines, agents, &managed, 2).await;
        let sample = std::fs::read_to_string(managed.join("agent0-0.conf")).unwrap_or_default();
        assert!(sample.lines().all(|l| l.ends_with("=v2")), "every line updated: {sample}");
    });
}
