//! A server killed with SIGKILL at random points of an export and of the deploy that follows
//! must, once restarted and given the next export, deploy every resource within a bound: nothing
//! stays "skipped" or "available" because a wake-up was lost with the process (issue 18, point 2).
//!
//! Each iteration stores a version of a dependency graph of `NullResource`s (some of them failing,
//! so their dependents are skipped and must later recover), kills the server after a random delay
//! (during the upload, the release or the deploy), restarts it, exports the fixed graph and waits.
//! The seed is printed; `CRASH_SEED` replays a run, `CRASH_ITERATIONS` sets its length.

use crate::common;

use std::time::{Duration, Instant};

use api::client::ListQuery;
use common::TestServer;
use common::rng::Rng;
use serde_json::{Value, json};

const RESOURCES: usize = 90;
const AGENTS: usize = 3;
/// After the restart and the next export, every resource is deployed within this time.
const BOUND: Duration = Duration::from_secs(30);

fn rid(i: usize) -> String {
    format!("std::testing::NullResource[agent-{},name=r{i}]", i % AGENTS)
}

/// The graph: resource i requires up to three earlier ones (fixed per seed); `values` changes
/// attributes between exports, `failing` makes those handlers fail.
fn resources(requires: &[Vec<usize>], values: &[u64], failing: &[usize]) -> Vec<Value> {
    (0..RESOURCES)
        .map(|i| {
            json!({
                "id": format!("{},v=0", rid(i)), "name": format!("r{i}"), "agentname": format!("agent-{}", i % AGENTS),
                "value": values[i].to_string(), "fail": failing.contains(&i), "send_event": true,
                "receive_events": true, "purged": false,
                "requires": requires[i].iter().map(|r| rid(*r)).collect::<Vec<_>>(),
            })
        })
        .collect()
}

async fn export(s: &TestServer, env: &str, resources: Vec<Value>) -> Result<(), String> {
    let (status, body) = s.call("POST", "/api/v2/reserve_version", Some(env), None).await;
    if status != 200 {
        return Err(format!("reserve_version: {status} {body}"));
    }
    let version = body["data"].as_i64().ok_or("no version")?;
    let body = json!({
        "version": version, "resources": resources, "resource_state": {}, "unknowns": [],
        "version_info": {}, "module_version_info": {}, "compiler_version": "test",
    });
    let (status, body) = s.call("PUT", "/api/v1/version", Some(env), Some(body)).await;
    if status != 200 {
        return Err(format!("put_version: {status} {body}"));
    }
    Ok(())
}

/// Every released resource's status, once they are all deployed or the bound has passed.
async fn wait_all_deployed(s: &TestServer, env: &str) -> Result<Duration, Vec<(String, String)>> {
    let start = Instant::now();
    loop {
        let query = ListQuery::new().limit(1000).filter("status", "!orphaned");
        // An error answer (the server is still starting) counts as nothing deployed yet.
        let list = s.client().resources(env.parse().unwrap(), &query).await.map(|page| page.data).unwrap_or_default();
        let items: Vec<(String, String)> =
            list.iter().map(|r| (r.resource_id.to_string(), r.status.as_str().to_string())).collect();
        if items.len() == RESOURCES && items.iter().all(|(_, st)| st == "deployed") {
            return Ok(start.elapsed());
        }
        if start.elapsed() > BOUND {
            return Err(items.into_iter().filter(|(_, st)| st != "deployed").collect());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn every_resource_deploys_after_crashes_during_export_and_deploy() {
    let seed = Rng::seed_from("CRASH_SEED");
    let iterations: usize = std::env::var("CRASH_ITERATIONS").ok().and_then(|s| s.parse().ok()).unwrap_or(25);
    eprintln!("crash-restart loop: CRASH_SEED={seed} CRASH_ITERATIONS={iterations}");
    let mut rng = Rng(seed);

    let mut s = TestServer::start().await;
    let env = s.new_environment("p", "e").await.to_string();

    let requires: Vec<Vec<usize>> = (0..RESOURCES)
        .map(|i| {
            let mut reqs: Vec<usize> =
                (0..rng.below(4)).filter(|_| i > 0).map(|_| rng.below(i as u64) as usize).collect();
            reqs.sort();
            reqs.dedup();
            reqs
        })
        .collect();
    let mut values: Vec<u64> = vec![0; RESOURCES];

    for iteration in 0..iterations {
        // The export that the crash interrupts: a third of the values change, and a few resources
        // (with everything depending on them) fail.
        for value in values.iter_mut() {
            if rng.below(3) == 0 {
                *value += 1;
            }
        }
        let failing: Vec<usize> = (0..rng.below(3)).map(|_| rng.below(RESOURCES as u64 / 3) as usize).collect();
        let doomed = resources(&requires, &values, &failing);
        let kill_after = Duration::from_millis(rng.below(400));
        let interrupted = tokio::time::timeout(kill_after, export(&s, &env, doomed)).await;
        if rng.below(2) == 0 {
            // Sometimes the export completes and the deploy is what gets interrupted.
            tokio::time::sleep(Duration::from_millis(rng.below(300))).await;
        }
        s.kill_and_restart();

        // The next export, with nothing failing.
        for value in values.iter_mut() {
            if rng.below(4) == 0 {
                *value += 1;
            }
        }
        export(&s, &env, resources(&requires, &values, &[]))
            .await
            .unwrap_or_else(|e| panic!("{e}\nserver log:\n{}", s.log()));
        match wait_all_deployed(&s, &env).await {
            Ok(took) => eprintln!(
                "iteration {iteration}: killed after {kill_after:?} ({}), all deployed {took:?} after the restart",
                if interrupted.is_ok() { "export done" } else { "during the export" }
            ),
            Err(stuck) => {
                let mut why = String::new();
                for (rid, _) in &stuck {
                    let path = format!("/api/v2/resource/{}/logs?limit=5", api::url::encode(rid));
                    let (_, logs) = s.call("GET", &path, Some(&env), None).await;
                    why.push_str(&format!("{rid}: {}\n", logs["data"]));
                }
                panic!(
                    "iteration {iteration} (CRASH_SEED={seed}): {} resources not deployed {BOUND:?} after the restart: \
                 {stuck:?}\n{why}server log:\n{}",
                    stuck.len(),
                    s.log()
                )
            }
        }
    }
}
