//! `inmanta deploy`: the all-in-one mode. In a project directory it starts an embedded server
//! (SQLite in `data/deploy/`, its scheduler and in-process agents; no console), compiles, exports
//! to it with the same steps as `inmanta export` but in process (no HTTP hop: the embedded server
//! is this process), lets the agents deploy every resource (a full repair: what drifted since the
//! last run is restored too), shows progress and ends with a summary. Exit code 0 only when every
//! resource is deployed.
//!
//! The compile is for the embedded environment (named after the project), so it runs once the
//! store is open and that environment is known.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use api::ResourceState;
use api::environment::EnvironmentCreate;
use clap::Args;
use orchestrator::Orchestrator;
use orchestrator::paging::PageRequest;
use orchestrator::scheduler::Schedulers;
use uuid::Uuid;

use super::CliError;
use super::compile::{CompileArgs, compile};
use super::export::{Destination, Push, push_export};

#[derive(Args, Clone)]
pub struct DeployArgs {
    #[command(flatten)]
    compile: CompileArgs,
    /// Show what would change without changing anything.
    #[arg(long)]
    dry_run: bool,
    /// Give up waiting for the deploy after this many seconds.
    #[arg(long, default_value_t = 600)]
    timeout: u64,
    /// Print the summary (or the dry run) as JSON instead of tables.
    #[arg(long)]
    json: bool,
}

/// The embedded server of one project: its store and its scheduler.
struct Embedded {
    orchestrator: Orchestrator,
    schedulers: Arc<Schedulers>,
    environment: Uuid,
    /// Where the agents keep the handler executables that modules ship.
    handler_dir: std::path::PathBuf,
    /// How the agents run the Python handlers of modules.
    python: agent::PythonSettings,
}

impl Embedded {
    /// Opens (or creates) the project's store in `data/deploy/`.
    async fn open_store(project_dir: &std::path::Path) -> Result<(Orchestrator, String), CliError> {
        let data = project_dir.join("data").join("deploy");
        std::fs::create_dir_all(&data)
            .map_err(|e| CliError::Usage(format!("cannot create {}: {e}", data.display())))?;
        let url = format!("sqlite://{}", data.join("inmanta.db").display());
        let orchestrator = Orchestrator::open(&url).await.map_err(|e| CliError::Usage(format!("{url}: {e}")))?;
        Ok((orchestrator, url))
    }

    async fn start(
        project_dir: &std::path::Path,
        (orchestrator, url): (Orchestrator, String),
        name: &str,
    ) -> Result<Embedded, CliError> {
        let data = project_dir.join("data").join("deploy");
        let environment = embedded_environment(&orchestrator, name).await?;
        let handler_dir = std::path::absolute(data.join("handlers"))?;
        let options = crate::config::Options::load(None).map_err(|e| CliError::Usage(e.to_string()))?;
        let python = crate::config::python_settings(&options, std::path::absolute(data.join("python"))?)
            .map_err(|e| CliError::Usage(e.to_string()))?;
        let agents =
            Arc::new(crate::agents::InProcessAgents::new(orchestrator.clone(), handler_dir.clone(), python.clone()));
        let schedulers = Schedulers::start(orchestrator.clone(), agents.clone()).await.map_err(server_error)?;
        // The API calls of Python handlers go through a router that listens nowhere.
        let security = crate::security::Security::new(&orchestrator, true, 3600, 10).await.map_err(server_error)?;
        let state = crate::rest::AppState {
            orchestrator: orchestrator.clone(),
            schedulers: schedulers.clone(),
            security: Arc::new(security),
            reads: Default::default(),
        };
        agents.serve_api_with(crate::rest::router_with(
            state,
            crate::rest::limits::Limits::new(100 * 1024 * 1024, crate::rest::limits::DEFAULT_REQUEST_TIMEOUT),
            crate::rest::files::FileStoreQuota(crate::rest::files::DEFAULT_FILE_STORE_QUOTA),
        ));
        tracing::info!(database = %url, "embedded server started");
        Ok(Embedded { orchestrator, schedulers, environment, handler_dir, python })
    }
}

fn server_error(e: orchestrator::Error) -> CliError {
    CliError::Usage(format!("embedded server: {e}"))
}

/// The project and environment the embedded store keeps for this project, created once.
async fn embedded_environment(o: &Orchestrator, name: &str) -> Result<Uuid, CliError> {
    if let Some(env) = o.list_environments().await.map_err(server_error)?.into_iter().find(|e| e.name == name) {
        return Ok(env.id);
    }
    let project = match o.list_projects().await.map_err(server_error)?.into_iter().find(|p| p.name == "deploy") {
        Some(p) => p.id,
        None => o.create_project("deploy", None).await.map_err(server_error)?.id,
    };
    let env = o
        .create_environment(EnvironmentCreate { project_id: project, name: name.to_string(), ..Default::default() })
        .await
        .map_err(server_error)?;
    Ok(env.id)
}

/// `verbose` (the global `-v`) lists every resource in the summary, not only the failed and
/// changed ones.
pub async fn run(mut args: DeployArgs, verbose: bool) -> Result<(), CliError> {
    let started = Instant::now();
    // `[compiler] python` and the compiler's limits, as `inmanta export` takes them.
    let options = crate::config::Options::load(None).map_err(|e| CliError::Usage(e.to_string()))?;
    args.compile.configure(&options);
    // The embedded environment is known before the compile, which is for it (as `inmanta export`
    // compiles for the environment it exports to): `std::environment()` and the environment a
    // fact reference reads its fact in are its id. Opening the store and reading project.yml
    // overlap; a project.yml that cannot be read is the compile's error.
    let project = args.compile.project.clone();
    let metadata = tokio::task::spawn_blocking(move || compiler::read_project_metadata(&project));
    let (metadata, store) = tokio::join!(metadata, Embedded::open_store(&args.compile.project));
    let metadata =
        metadata.map_err(|e| CliError::Usage(format!("cannot read project.yml: {e}")))?.map_err(CliError::Compile)?;
    let name = if metadata.name.is_empty() { "main".to_string() } else { metadata.name };
    let embedded = Embedded::start(&args.compile.project, store?, &name).await?;
    args.compile.environment = Some(embedded.environment);
    let output = compile(&args.compile, false).await?;
    tracing::info!(elapsed_ms = started.elapsed().as_millis() as u64, "compiled, embedded server ready");
    if args.dry_run {
        return dry_run(&embedded, output, args.json).await;
    }
    let total = output.resources.len();
    let push = Push { release: true, message: "inmanta deploy".into(), ..Default::default() };
    let version =
        push_export(Destination::InProcess(&embedded.orchestrator), embedded.environment, output, &push).await?;
    tracing::info!(elapsed_ms = started.elapsed().as_millis() as u64, "exported");
    // Every resource through its handler, not only those the new version changed: a file
    // deleted or edited by hand since the last run is restored, and a reference is resolved
    // again (as when every run started from nothing).
    embedded.schedulers.repair_version(embedded.environment, version).await.map_err(server_error)?;
    eprintln!("Version {version}: {total} resources, deploying");
    wait_for_deploy(&embedded, total, Duration::from_secs(args.timeout)).await?;
    summary(&embedded, version, started, verbose || args.json, args.json).await
}

/// Waits until no resource is waiting or deploying, with a progress bar on stderr (only on a
/// terminal).
async fn wait_for_deploy(e: &Embedded, total: usize, timeout: Duration) -> Result<(), CliError> {
    let deadline = Instant::now() + timeout;
    let bar = super::output::progress(total as u64, "resources");
    let pending_of = |summary: &api::resource::ResourceDeploySummary| {
        summary.by_state.get(&ResourceState::Available).copied().unwrap_or(0)
            + summary.by_state.get(&ResourceState::Deploying).copied().unwrap_or(0)
    };
    // Woken by the scheduler's writes rather than a fixed sleep, so the command ends as soon as
    // the last result is stored.
    let mut changes = e.orchestrator.subscribe();
    loop {
        let summary = e.orchestrator.deploy_summary(e.environment).await.map_err(server_error)?;
        let pending = pending_of(&summary);
        bar.set_position(summary.total.saturating_sub(pending));
        let failed = summary.by_state.get(&ResourceState::Failed).copied().unwrap_or(0);
        if failed > 0 {
            bar.set_message(format!("{failed} failed"));
        }
        if pending == 0 && summary.total as usize >= total {
            // The scheduler may still hold events or retries; wait until it is idle too.
            e.schedulers.wait_idle(e.environment).await.map_err(server_error)?;
            let again = e.orchestrator.deploy_summary(e.environment).await.map_err(server_error)?;
            if pending_of(&again) == 0 {
                bar.finish_and_clear();
                return Ok(());
            }
        }
        if Instant::now() > deadline {
            bar.abandon();
            return Err(CliError::Usage(format!("the deploy did not finish within {} s", timeout.as_secs())));
        }
        let _ = tokio::time::timeout(Duration::from_millis(100), changes.recv()).await;
    }
}

/// Counts per state first, then the resources that failed or changed (every resource with
/// `-v`); fails the command unless everything is deployed.
async fn summary(e: &Embedded, version: i64, started: Instant, verbose: bool, json: bool) -> Result<(), CliError> {
    let env = e.environment;
    // limit 0: every resource (the default page of 1 000 made a 1 004-resource model "1000 of 1000")
    let page = PageRequest { sort: Some("resource_id.asc".into()), limit: Some(0), ..Default::default() };
    let (resources, _) = e.orchestrator.released_resources(env, &page, false).await.map_err(server_error)?;
    // Only this version's deploys: the environment's whole history grows with every deploy.
    let changed = e.orchestrator.deploy_changes(env, version).await.map_err(server_error)?;
    let current: Vec<_> = resources.items.iter().filter(|r| r.status != ResourceState::Orphaned).collect();
    let mut by_state: BTreeMap<ResourceState, usize> = BTreeMap::new();
    for r in &current {
        *by_state.entry(r.status).or_default() += 1;
    }
    let total = current.len();
    let failures = total - by_state.get(&ResourceState::Deployed).copied().unwrap_or(0);
    if json {
        let resources: Vec<_> = current
            .iter()
            .map(|r| serde_json::json!({"resource_id": r.resource_id, "status": r.status, "change": changed.get(&r.resource_id.to_string())}))
            .collect();
        super::output::json(
            &serde_json::json!({"version": version, "total": total, "by_state": by_state, "changed": changed.len(), "resources": resources}),
        );
    }
    let counts: Vec<String> = by_state.iter().map(|(state, n)| format!("{n} {state}")).collect();
    if !json {
        println!("{total} resources: {}; {} changed", counts.join(", "), changed.len());
    }
    let rows: Vec<Vec<comfy_table::Cell>> = current
        .iter()
        .map(|r| (r, changed.get(&r.resource_id.to_string()).cloned().unwrap_or_default()))
        .filter(|(r, change)| verbose || r.status != ResourceState::Deployed || !change.is_empty())
        .map(|(r, change)| {
            vec![comfy_table::Cell::new(&r.resource_id), super::output::state_cell(r.status), change.into()]
        })
        .collect();
    if !rows.is_empty() && !json {
        super::output::styled_table(&["Resource", "Status", "Change"], rows);
    }
    for r in current.iter().filter(|r| r.status == ResourceState::Failed) {
        let logs = e
            .orchestrator
            .resource_logs(env, &r.resource_id.to_string(), &PageRequest::default())
            .await
            .map_err(server_error)?;
        if let Some(error) = logs.items.iter().find(|l| l.level == "ERROR") {
            eprintln!("{}: {}", r.resource_id, error.msg);
        }
    }
    eprintln!(
        "{} of {total} resources deployed, {} changed, {failures} not deployed, in {:.1} s",
        total - failures,
        changed.len(),
        started.elapsed().as_secs_f64()
    );
    if failures > 0 {
        return Err(CliError::Deploy(format!("{failures} resources are not deployed")));
    }
    Ok(())
}

/// `--dry-run`: every resource through its handler in dry-run mode; prints the changes.
async fn dry_run(e: &Embedded, mut output: compiler::CompileOutput, json: bool) -> Result<(), CliError> {
    let python = if output.python_modules.is_empty() {
        None
    } else {
        let info = compiler::module_version_info(&output.python_modules);
        Some(Arc::new(agent::PythonCode::from_module_version_info(&info).map_err(CliError::Usage)?))
    };
    let files: Vec<(String, Vec<u8>)> = std::mem::take(&mut output.files)
        .into_iter()
        .chain(output.handlers.values().map(|shipped| (shipped.hash.clone(), shipped.content.clone())))
        .chain(output.python_modules.values().flat_map(|m| m.files.iter()).map(|f| (f.hash.clone(), f.content.clone())))
        .collect();
    e.orchestrator.upload_files(&files).await.map_err(server_error)?;
    let executor =
        Arc::new(crate::agents::in_process_executor(&e.orchestrator, e.handler_dir.clone(), e.python.clone()));
    let mut rows = Vec::new();
    for resource in &output.resources {
        // the resource dict an agent gets, of no version yet
        let resource = serde_json::Value::Object(resource.to_wire(0));
        let request = agent::ResourceRequest::from_json(&resource).map_err(CliError::Usage)?;
        let rid = request.id.to_string();
        let undefined = output.resource_state.get(&rid).is_some_and(|s| s == ResourceState::Undefined.as_str());
        if undefined {
            rows.push(vec![rid, ResourceState::Undefined.to_string(), String::new()]);
            continue;
        }
        let executor = executor.clone();
        let code = agent::VersionCode {
            environment: e.environment.to_string(),
            shipped_handler: output.handlers.get(&request.id.entity_type).map(|h| h.hash.clone()),
            python: python.clone(),
        };
        let outcome = tokio::task::spawn_blocking(move || {
            executor.execute_code(&request, &code, agent::Mode::DryRun, &agent::Events::default())
        })
        .await
        .map_err(|e| CliError::Usage(format!("dry run failed: {e}")))?;
        let changes: Vec<String> =
            outcome.changes.iter().map(|(name, c)| format!("{name}: {} -> {}", c.current, c.desired)).collect();
        let status = if outcome.status == api::HandlerStatus::Failed {
            api::HandlerStatus::Failed.as_str()
        } else if changes.is_empty() {
            "unchanged"
        } else {
            "changes"
        };
        rows.push(vec![rid, status.to_string(), changes.join("; ")]);
    }
    if json {
        let rows: Vec<_> =
            rows.iter().map(|r| serde_json::json!({"resource_id": r[0], "dry_run": r[1], "changes": r[2]})).collect();
        super::output::json(&rows);
    } else {
        super::output::table(&["Resource", "Dry run", "Changes"], &rows);
    }
    Ok(())
}
