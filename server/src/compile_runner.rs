//! The autonomous server's compiles (docs/autonomous.md): takes requests from the queue in the
//! database, keeps a git checkout of each environment's repository under
//! `<state-dir>/compiles/<env>/`, fetches the modules the project requires, and runs
//! `inmanta export` against this server in a child process with a time limit and an
//! address-space limit. Every step is recorded as a stage of the compile report.
//!
//! One compile at a time per environment, at most `parallel` at once over all environments.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use api::cron::next_fire;
use orchestrator::Orchestrator;
use orchestrator::compiles::{CompileOutcome, QueuedCompile, StageResult};
use tokio::io::AsyncReadExt;
use tokio::time::Instant;
use uuid::Uuid;

/// Modules the compiler has built in: never fetched.
const BUILTIN_MODULES: &[&str] = &["std", "fs", "exec", "mitogen"];

/// How the runner is set up.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    pub state_dir: PathBuf,
    /// The address and port this server listens on: the export child process pushes there.
    pub address: String,
    pub port: u16,
    /// With TLS: the CA file export children check this server's certificate against; they
    /// push over HTTPS.
    pub ca_file: Option<PathBuf>,
    /// Time limit of one compile, all stages together.
    pub timeout: Duration,
    /// Compiles running at once over all environments.
    pub parallel: usize,
    /// Bytes of address space the compile process may use ([server] compile-memory-limit).
    pub memory_limit: Option<u64>,
    /// Mints the short-lived compiler token each export child pushes with.
    pub security: Arc<crate::security::Security>,
    /// How long a compile's claim lasts unrenewed ([server] compile-claim).
    pub claim: Duration,
}

/// Starts the runner in the background: first the recovery of compiles a previous run left
/// unfinished, then the queue.
pub fn start(orchestrator: Orchestrator, config: RunnerConfig) {
    tokio::spawn(run_queue(orchestrator.clone(), Arc::new(config)));
    tokio::spawn(run_auto_full_compile(orchestrator));
}

/// `auto_full_compile`: requests a full compile (with update) of an environment at the times its
/// cron expression names (UTC). Settings are read again every few seconds.
async fn run_auto_full_compile(o: Orchestrator) {
    use std::collections::HashMap;
    let mut next: HashMap<Uuid, (String, Option<chrono::DateTime<chrono::Utc>>)> = HashMap::new();
    loop {
        let now = chrono::Utc::now();
        let mut wake_in = Duration::from_secs(5);
        match o.list_environments().await {
            Ok(envs) => {
                let mut seen = HashSet::new();
                for env in envs {
                    let names = api::settings::names::AUTO_FULL_COMPILE;
                    let expr = env.settings.get(names).and_then(api::SettingValue::as_str).unwrap_or("").trim();
                    let enabled = env
                        .settings
                        .get(api::settings::names::SERVER_COMPILE)
                        .and_then(api::SettingValue::as_bool)
                        .unwrap_or(true);
                    if expr.is_empty() || !enabled {
                        continue;
                    }
                    seen.insert(env.id);
                    let entry = next.entry(env.id).or_insert_with(|| (String::new(), None));
                    if entry.0 != expr {
                        *entry = (expr.to_string(), next_fire(expr, now));
                        if entry.1.is_none() {
                            tracing::warn!(env = %env.id, value = %expr, "auto_full_compile is not a valid cron expression");
                        }
                    }
                    let Some(at) = entry.1 else { continue };
                    if at <= now {
                        entry.1 = next_fire(expr, now);
                        // Every server sees the same firing: one of them requests it.
                        match o.claim_scheduled_compile(env.id, at).await {
                            Ok(true) => {}
                            Ok(false) => continue,
                            Err(e) => {
                                tracing::error!(env = %env.id, error = %e, "cannot claim the scheduled compile");
                                continue;
                            }
                        }
                        let request = orchestrator::compiles::CompileRequest {
                            metadata: serde_json::json!({
                                "type": "schedule",
                                "message": "Full recompile triggered by AUTO_FULL_COMPILE cron",
                            }),
                            ..Default::default()
                        };
                        if let Err(e) = o.request_compile(env.id, request).await {
                            tracing::error!(env = %env.id, error = %e, "cannot request the scheduled compile");
                        }
                    }
                    if let Some(at) = entry.1
                        && let Ok(wait) = (at - now).to_std()
                    {
                        wake_in = wake_in.min(wait);
                    }
                }
                next.retain(|id, _| seen.contains(id));
            }
            Err(e) => tracing::error!(error = %e, "cannot read the environments for auto_full_compile"),
        }
        tokio::time::sleep(wake_in.max(Duration::from_millis(100))).await;
    }
}

async fn run_queue(o: Orchestrator, config: Arc<RunnerConfig>) {
    let running: Arc<Mutex<HashSet<Uuid>>> = Arc::default();
    let slots = Arc::new(tokio::sync::Semaphore::new(config.parallel.max(1)));
    loop {
        // Compiles of a server that stopped (this one before a restart, or another one).
        match o.recover_compiles().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(compiles = n, "compiles whose server stopped are queued again"),
            Err(e) => tracing::error!(error = %e, "cannot recover interrupted compiles"),
        }
        let mut wake_in = Duration::from_secs(2);
        match o.runnable_compiles().await {
            Ok(queued) => {
                for q in queued {
                    if running.lock().map(|r| r.contains(&q.environment)).unwrap_or(true) {
                        continue;
                    }
                    let wait = q.not_before() - chrono::Utc::now();
                    if let Ok(wait) = wait.to_std()
                        && !wait.is_zero()
                    {
                        wake_in = wake_in.min(wait);
                        continue;
                    }
                    let Ok(permit) = slots.clone().try_acquire_owned() else { break };
                    match o.start_compile(q.id, config.claim).await {
                        Ok(true) => {}
                        Ok(false) => continue,
                        Err(e) => {
                            tracing::error!(error = %e, "cannot start a compile");
                            continue;
                        }
                    }
                    if let Ok(mut r) = running.lock() {
                        r.insert(q.environment);
                    }
                    let (o, config, running) = (o.clone(), config.clone(), running.clone());
                    tokio::spawn(async move {
                        tokio::select! {
                            _ = run_compile(&o, &config, &q) => {}
                            // Dropping the compile kills its child processes.
                            _ = keep_claim(&o, q.id, config.claim) => {
                                tracing::warn!(env = %q.environment, compile = %q.id,
                                    "the compile's claim was lost (another server runs it now): stopped");
                            }
                        }
                        drop(permit);
                        if let Ok(mut r) = running.lock() {
                            r.remove(&q.environment);
                        }
                        o.compile_wakeup().notify_one();
                    });
                }
            }
            Err(e) => tracing::error!(error = %e, "cannot read the compile queue"),
        }
        tokio::select! {
            _ = o.compile_wakeup().notified() => {}
            _ = tokio::time::sleep(wake_in) => {}
        }
    }
}

/// Renews this server's claim on compile `id` while it runs; returns when the claim is lost
/// (taken back by another server after it expired, or not renewable for a whole claim length).
async fn keep_claim(o: &Orchestrator, id: Uuid, claim: Duration) {
    let mut renewed = Instant::now();
    loop {
        tokio::time::sleep(claim / 3).await;
        match o.renew_compile_claim(id, claim).await {
            Ok(true) => renewed = Instant::now(),
            Ok(false) => return,
            Err(e) => {
                tracing::warn!(compile = %id, error = %e, "cannot renew the compile's claim");
                if renewed.elapsed() >= claim {
                    return;
                }
            }
        }
    }
}

async fn run_compile(o: &Orchestrator, config: &RunnerConfig, q: &QueuedCompile) {
    let started = std::time::Instant::now();
    tracing::info!(env = %q.environment, compile = %q.id, "compile started");
    // The export's own token, registered like every token the server issues.
    let lifetime = config.timeout.as_secs() as i64 + 300;
    let token = match config.security.authenticator.compile_token(o, q.environment, lifetime).await {
        Ok(token) => token,
        Err(e) => {
            tracing::error!(error = %e, compile = %q.id, "cannot issue the compile's token");
            let outcome = CompileOutcome {
                success: false,
                message: format!("cannot issue the compile's token: {e}"),
                ..Default::default()
            };
            if let Err(e) = o.finish_compile(q.environment, q.id, &outcome).await {
                tracing::error!(error = %e, compile = %q.id, "cannot record the end of a compile");
            }
            return;
        }
    };
    let job = Job {
        o,
        q,
        deadline: Instant::now() + config.timeout,
        timeout: config.timeout,
        dir: config.state_dir.join("compiles").join(q.environment.to_string()),
        data_file: config.state_dir.join("compiles").join(format!("{}.compile-data.json", q.id)),
        address: config.address.clone(),
        port: config.port,
        ca_file: config.ca_file.clone(),
        memory_limit: config.memory_limit,
        token,
    };
    let outcome = match job.run().await {
        Ok(outcome) => outcome,
        Err(message) => CompileOutcome { success: false, message, ..Default::default() },
    };
    let _ = std::fs::remove_file(&job.data_file);
    tracing::info!(
        env = %q.environment, compile = %q.id, success = outcome.success, version = ?outcome.version,
        elapsed_ms = started.elapsed().as_millis() as u64, "compile finished"
    );
    orchestrator::metrics::compiled(q.environment, outcome.success, started.elapsed());
    if let Err(e) = o.finish_compile(q.environment, q.id, &outcome).await {
        tracing::error!(error = %e, compile = %q.id, "cannot record the end of a compile");
    }
}

/// One compile being run.
struct Job<'a> {
    o: &'a Orchestrator,
    q: &'a QueuedCompile,
    deadline: Instant,
    timeout: Duration,
    /// The environment's checkout: the project directory.
    dir: PathBuf,
    data_file: PathBuf,
    address: String,
    port: u16,
    ca_file: Option<PathBuf>,
    memory_limit: Option<u64>,
    /// A compiler token of this environment that lives as long as the compile may.
    token: String,
}

/// A command to run in a stage.
struct Cmd {
    program: PathBuf,
    args: Vec<String>,
    cwd: PathBuf,
    env: BTreeMap<String, String>,
    /// Environment variables kept out of the report (the export's token).
    secret_env: Vec<(&'static str, String)>,
    /// The address space the process may use, in bytes (the compile's memory limit).
    address_space: Option<u64>,
}

impl Cmd {
    fn git(cwd: &Path, args: &[&str]) -> Cmd {
        Cmd {
            program: "git".into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            cwd: cwd.to_path_buf(),
            env: BTreeMap::new(),
            secret_env: Vec::new(),
            address_space: None,
        }
    }

    fn display(&self) -> String {
        let mut parts = vec![self.program.display().to_string()];
        parts.extend(self.args.iter().map(|a| if a.contains(' ') { format!("'{a}'") } else { a.clone() }));
        parts.join(" ")
    }
}

impl Job<'_> {
    async fn run(&self) -> Result<CompileOutcome, String> {
        let q = self.q;
        let mut init = format!("Compile {} of environment {}\n", q.id, q.environment);
        init.push_str(&format!("repository: {} branch: {}\n", q.repo_url, q.repo_branch));
        if !q.environment_variables.is_empty() {
            init.push_str("Using extra environment variables during compile:\n");
            for (k, v) in &q.environment_variables {
                init.push_str(&format!("{k}='{v}'\n"));
            }
        }
        let (returncode, errstream) = if !q.server_compile {
            (1, "server compiles are disabled for this environment (setting server_compile)".to_string())
        } else if q.repo_url.trim().is_empty() {
            (1, "the environment has no repository: set its repo_url (and repo_branch) first".to_string())
        } else {
            (0, String::new())
        };
        let init_result = StageResult { outstream: init, errstream: errstream.clone(), returncode: Some(returncode) };
        self.record("Init", "", async { init_result }).await?;
        if returncode != 0 {
            return Err(errstream);
        }

        let fresh = self.prepare_checkout().await?;
        let switched = if fresh { false } else { self.update_checkout().await? };
        if fresh || switched || q.force_update {
            let name = if fresh || switched { "Installing modules" } else { "Updating modules" };
            let result = self.install_modules().await;
            self.record(name, "install the modules of project.yml requires from its repo entries", async { result })
                .await?;
        }
        if crate::python_install::plan(&self.dir).is_ok_and(|p| !p.requirements.is_empty()) {
            let result = self.install_python_modules().await;
            self.record("Installing Python modules", "inmanta project install", async { result }).await?;
        }
        self.compile_and_export().await
    }

    /// Records a stage around `body`; a failed stage stops the compile with its message.
    async fn record(
        &self,
        name: &str,
        command: &str,
        body: impl std::future::Future<Output = StageResult>,
    ) -> Result<StageResult, String> {
        let result = self.record_raw(name, command, body).await?;
        check(name, &result)?;
        Ok(result)
    }

    /// Records a stage around `body` and returns its result, failed or not.
    async fn record_raw(
        &self,
        name: &str,
        command: &str,
        body: impl std::future::Future<Output = StageResult>,
    ) -> Result<StageResult, String> {
        let stage = self
            .o
            .begin_compile_stage(self.q.environment, self.q.id, name, command)
            .await
            .map_err(|e| format!("cannot record stage {name}: {e}"))?;
        let result = body.await;
        self.o.finish_compile_stage(stage, &result).await.map_err(|e| format!("cannot record stage {name}: {e}"))?;
        Ok(result)
    }

    async fn record_cmd(&self, name: &str, cmd: Cmd) -> Result<StageResult, String> {
        self.record(name, &cmd.display(), self.exec(&cmd)).await
    }

    /// Clones the repository when there is no checkout (or it points elsewhere); true if it did.
    async fn prepare_checkout(&self) -> Result<bool, String> {
        let q = self.q;
        if self.dir.join(".git").is_dir() {
            let origin = self.exec(&Cmd::git(&self.dir, &["config", "--get", "remote.origin.url"])).await;
            if origin.outstream.trim() == q.repo_url.trim() {
                return Ok(false);
            }
            tracing::info!(env = %q.environment, "the repository of the environment changed: cloning it again");
        }
        if self.dir.exists() {
            std::fs::remove_dir_all(&self.dir).map_err(|e| format!("cannot remove {}: {e}", self.dir.display()))?;
        }
        let parent = self.dir.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        let target = self.dir.display().to_string();
        let mut args = vec!["clone", q.repo_url.as_str(), target.as_str()];
        if !q.repo_branch.is_empty() {
            args.extend(["--branch", q.repo_branch.as_str()]);
        }
        self.record_cmd("Cloning repository", Cmd::git(parent, &args)).await?;
        Ok(true)
    }

    /// Switches to the configured branch and, with `update`, brings the checkout to the remote
    /// head: a fast-forward, or a reset when the history was rewritten. True if it switched.
    async fn update_checkout(&self) -> Result<bool, String> {
        let q = self.q;
        let current = self.exec(&Cmd::git(&self.dir, &["rev-parse", "--abbrev-ref", "HEAD"])).await;
        let current = current.outstream.trim().to_string();
        let branch = if q.repo_branch.is_empty() { current.clone() } else { q.repo_branch.clone() };
        let remote = format!("origin/{branch}");
        let mut switched = false;
        if branch != current {
            self.record_cmd("Fetching new branch heads", Cmd::git(&self.dir, &["fetch", "--prune", "origin"])).await?;
            self.record_cmd(
                &format!("Switching branch from {current} to {branch}"),
                Cmd::git(&self.dir, &["checkout", "--force", "-B", &branch, &remote]),
            )
            .await?;
            switched = true;
        } else if q.force_update {
            self.record_cmd("Fetching changes", Cmd::git(&self.dir, &["fetch", "--prune", "origin"])).await?;
        }
        if q.force_update {
            let command =
                format!("git merge --ff-only {remote} (git reset --hard {remote} if the history was rewritten)");
            let dir = self.dir.clone();
            let pull = async {
                let mut result = self.exec(&Cmd::git(&dir, &["merge", "--ff-only", &remote])).await;
                if result.returncode != Some(0) {
                    let reset = self.exec(&Cmd::git(&dir, &["reset", "--hard", &remote])).await;
                    result.outstream.push_str(&format!(
                        "\n{remote} is not a fast-forward of the checkout (rewritten history): resetting to it\n{}",
                        reset.outstream
                    ));
                    result.errstream.push_str(&reset.errstream);
                    result.returncode = reset.returncode;
                }
                result
            };
            self.record("Pulling updates", &command, pull).await?;
        }
        Ok(switched)
    }

    /// Fetches every module of `requires` that is not built in into the module path, at the
    /// newest git tag the requirement allows.
    /// The project's v2 modules from the package index into its virtual environment (the
    /// interpreter of `INMANTA_COMPILER_PYTHON`, else the checkout's `.env`): pip is quick when
    /// everything is installed already, so this runs before every compile.
    async fn install_python_modules(&self) -> StageResult {
        let dir = self.dir.clone();
        let joined = tokio::task::spawn_blocking(move || {
            let mut log = String::new();
            let outcome = crate::python_install::install(&dir, None, &mut |line| {
                log.push_str(&line);
                log.push('\n');
            });
            (log, outcome)
        })
        .await;
        match joined {
            Ok((log, Ok(()))) => StageResult { outstream: log, returncode: Some(0), ..Default::default() },
            Ok((log, Err(e))) => StageResult { outstream: log, errstream: e, returncode: Some(1) },
            Err(e) => StageResult {
                errstream: format!("the install crashed: {e}"),
                returncode: Some(1),
                ..Default::default()
            },
        }
    }

    async fn install_modules(&self) -> StageResult {
        let mut out = StageResult { returncode: Some(0), ..Default::default() };
        let project = match read_project(&self.dir) {
            Ok(p) => p,
            Err(e) => {
                out.errstream = e;
                out.returncode = Some(1);
                return out;
            }
        };
        let libs = self.dir.join(&project.download_path);
        let wanted: Vec<Requirement> = project
            .requires
            .iter()
            .filter_map(|r| Requirement::parse(r))
            .filter(|r| !BUILTIN_MODULES.contains(&r.name.as_str()))
            .collect();
        if wanted.is_empty() {
            out.outstream.push_str("no modules to install: every required module is built in\n");
            return out;
        }
        if let Err(e) = std::fs::create_dir_all(&libs) {
            out.errstream = format!("cannot create {}: {e}", libs.display());
            out.returncode = Some(1);
            return out;
        }
        for req in wanted {
            if let Err(e) = self.install_module(&project.repos, &libs, &req, &mut out).await {
                out.errstream.push_str(&format!("{e}\n"));
                out.returncode = Some(1);
                return out;
            }
        }
        out
    }

    async fn install_module(
        &self,
        repos: &[String],
        libs: &Path,
        req: &Requirement,
        out: &mut StageResult,
    ) -> Result<(), String> {
        let target = libs.join(&req.name);
        let target_text = target.display().to_string();
        let mut run = async |cmd: Cmd| -> StageResult {
            out.outstream.push_str(&format!("$ {}\n", cmd.display()));
            let r = self.exec(&cmd).await;
            out.outstream.push_str(&r.outstream);
            out.errstream.push_str(&r.errstream);
            r
        };
        if target.join(".git").is_dir() {
            let fetched = run(Cmd::git(&target, &["fetch", "--tags", "--force", "--prune", "origin"])).await;
            if fetched.returncode != Some(0) {
                return Err(format!("cannot fetch module {}", req.name));
            }
        } else {
            if target.exists() {
                std::fs::remove_dir_all(&target).map_err(|e| format!("cannot remove {target_text}: {e}"))?;
            }
            let mut cloned = false;
            for repo in repos {
                let url =
                    if repo.contains("{}") { repo.replace("{}", &req.name) } else { format!("{repo}{}", req.name) };
                let r = run(Cmd::git(libs, &["clone", &url, &target_text])).await;
                if r.returncode == Some(0) {
                    cloned = true;
                    break;
                }
            }
            if !cloned {
                return Err(format!(
                    "module {} not found in any repo of project.yml ({})",
                    req.name,
                    if repos.is_empty() { "there are none".to_string() } else { repos.join(", ") }
                ));
            }
        }
        let tags = run(Cmd::git(&target, &["tag", "--list"])).await;
        let mut versions: Vec<(Vec<u64>, String)> =
            tags.outstream.lines().filter_map(|t| parse_version(t.trim()).map(|v| (v, t.trim().to_string()))).collect();
        versions.sort();
        let best = versions.iter().rev().find(|(v, _)| req.allows(v));
        let checkout = match best {
            Some((_, tag)) => tag.clone(),
            None if req.constraints.is_empty() => "origin/HEAD".to_string(),
            None => {
                return Err(format!(
                    "no version of module {} matches {}: its tags are {}",
                    req.name,
                    req.text,
                    if versions.is_empty() {
                        "none".to_string()
                    } else {
                        versions.iter().map(|(_, t)| t.as_str()).collect::<Vec<_>>().join(", ")
                    }
                ));
            }
        };
        let r = run(Cmd::git(&target, &["checkout", "--quiet", "--force", "--detach", &checkout])).await;
        if r.returncode != Some(0) {
            return Err(format!("cannot check out {checkout} of module {}", req.name));
        }
        out.outstream.push_str(&format!("module {} at {checkout}\n", req.name));
        Ok(())
    }

    /// `inmanta export` (or `compile` without export) against this server, as a child process.
    async fn compile_and_export(&self) -> Result<CompileOutcome, String> {
        let q = self.q;
        let exe = std::env::current_exe().map_err(|e| format!("cannot find the inmanta binary: {e}"))?;
        let _ = std::fs::remove_file(&self.data_file);
        let data_file = self.data_file.display().to_string();
        let mut args: Vec<String> = Vec::new();
        if q.do_export {
            let message = q
                .metadata
                .get("message")
                .and_then(|m| m.as_str())
                .map(str::to_string)
                .unwrap_or_else(|| "Recompile trigger through API call".into());
            args.extend(["export", "-e"].map(str::to_string));
            args.push(q.environment.to_string());
            args.extend(["--server_address".to_string(), self.address.clone(), "--server_port".to_string()]);
            args.push(self.port.to_string());
            if self.ca_file.is_some() {
                args.push("--ssl".into());
            }
            args.extend(["--compile-id".to_string(), q.id.to_string()]);
            args.extend(["-m".to_string(), message]);
            if q.partial {
                args.push("--partial".into());
                for set in &q.removed_resource_sets {
                    args.extend(["--delete-resource-set".to_string(), set.clone()]);
                }
            }
        } else {
            args.push("compile".into());
        }
        args.extend(["--export-compile-data", "--export-compile-data-file"].map(str::to_string));
        args.push(data_file);
        let mut env = q.environment_variables.clone();
        if let Some(ca_file) = &self.ca_file {
            env.insert("INMANTA_COMPILER_REST_TRANSPORT_SSL_CA_CERT_FILE".into(), ca_file.display().to_string());
        }
        let cmd = Cmd {
            program: exe,
            args,
            cwd: self.dir.clone(),
            env,
            secret_env: vec![("INMANTA_COMPILER_REST_TRANSPORT_TOKEN", self.token.clone())],
            address_space: self.memory_limit,
        };
        let result = self.record_raw("Recompiling configuration model", &cmd.display(), self.exec(&cmd)).await?;
        let compile_data = std::fs::read_to_string(&self.data_file)
            .ok()
            .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok());
        let version = result.outstream.lines().rev().find_map(|line| {
            let line = line.trim();
            line.parse::<i64>().ok().or_else(|| line.strip_prefix("Committed resources with version ")?.parse().ok())
        });
        match check("Recompiling configuration model", &result) {
            Ok(_) if q.do_export && version.is_none() => Err("the export did not report a version".into()),
            Ok(_) => Ok(CompileOutcome { success: true, version, compile_data, message: String::new() }),
            Err(message) => {
                let first_error = compile_data
                    .as_ref()
                    .and_then(|d| d["errors"].get(0))
                    .and_then(|e| e["message"].as_str())
                    .map(str::to_string);
                Ok(CompileOutcome {
                    success: false,
                    version: None,
                    compile_data,
                    message: first_error.unwrap_or(message),
                })
            }
        }
    }

    /// Runs a command until it exits or the compile's deadline passes (then it is killed).
    async fn exec(&self, cmd: &Cmd) -> StageResult {
        let mut command = tokio::process::Command::new(&cmd.program);
        command
            .args(&cmd.args)
            .current_dir(&cmd.cwd)
            .envs(&cmd.env)
            .envs(cmd.secret_env.iter().map(|(k, v)| (*k, v)))
            .env("GIT_TERMINAL_PROMPT", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(e) => {
                return StageResult {
                    errstream: format!("cannot run {}: {e}", cmd.display()),
                    returncode: Some(127),
                    ..Default::default()
                };
            }
        };
        if let Some(limit) = cmd.address_space
            && let Err(e) = limit_address_space(child.id(), limit)
        {
            let _ = child.kill().await;
            return StageResult {
                errstream: format!("cannot limit the memory of {}: {e}", cmd.display()),
                returncode: Some(126),
                ..Default::default()
            };
        }
        let mut stdout = child.stdout.take();
        let mut stderr = child.stderr.take();
        let read_out = tokio::spawn(async move {
            let mut buf = Vec::new();
            if let Some(s) = stdout.as_mut() {
                let _ = s.read_to_end(&mut buf).await;
            }
            buf
        });
        let read_err = tokio::spawn(async move {
            let mut buf = Vec::new();
            if let Some(s) = stderr.as_mut() {
                let _ = s.read_to_end(&mut buf).await;
            }
            buf
        });
        let (returncode, note) = match tokio::time::timeout_at(self.deadline, child.wait()).await {
            Ok(Ok(status)) => match status.code() {
                Some(code) => (Some(i64::from(code)), String::new()),
                None => (None, format!("\nthe process was killed by a signal ({status})\n")),
            },
            Ok(Err(e)) => (None, format!("\ncannot wait for the process: {e}\n")),
            Err(_) => {
                let _ = child.kill().await;
                (
                    None,
                    format!(
                        "\nkilled: the compile exceeded its time limit of {} s ([server] compile-timeout)\n",
                        self.timeout.as_secs()
                    ),
                )
            }
        };
        let collect = |task: tokio::task::JoinHandle<Vec<u8>>| async move {
            match tokio::time::timeout(Duration::from_secs(5), task).await {
                Ok(Ok(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
                _ => String::new(),
            }
        };
        let outstream = collect(read_out).await;
        let mut errstream = collect(read_err).await;
        errstream.push_str(&note);
        if let Some(limit) = cmd.address_space
            && returncode.is_none()
            && errstream.contains(ALLOCATION_FAILED)
        {
            errstream.push_str(&out_of_memory(limit));
        }
        StageResult { outstream, errstream, returncode }
    }
}

/// What a Rust process prints on stderr before it aborts when an allocation fails.
const ALLOCATION_FAILED: &str = "memory allocation of ";

/// The last line of a compile stopped by its address-space limit: it becomes the compile's message.
fn out_of_memory(limit: u64) -> String {
    format!(
        "\nstopped: the compile ran out of memory at its limit of {} MiB of address space ([server] \
         compile-memory-limit); the compiler's own budget ([compiler] max-memory) did not stop it first\n",
        limit >> 20
    )
}

/// Caps the address space of the started process `pid` (and of what it starts: they inherit it),
/// so a compile that runs away fails alone instead of exhausting the server's machine.
fn limit_address_space(pid: Option<u32>, bytes: u64) -> std::io::Result<()> {
    use rustix::process::{Pid, Resource, Rlimit, prlimit};
    let pid =
        pid.and_then(|p| Pid::from_raw(p as i32)).ok_or_else(|| std::io::Error::other("the process has exited"))?;
    prlimit(Some(pid), Resource::As, Rlimit { current: Some(bytes), maximum: Some(bytes) })?;
    Ok(())
}

/// A stage that did not end with return code 0 stops the compile with this message.
fn check(name: &str, result: &StageResult) -> Result<(), String> {
    if result.returncode == Some(0) {
        return Ok(());
    }
    let last = result.errstream.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim().to_string();
    Err(match result.returncode {
        Some(code) => format!("stage {name} failed with return code {code}: {last}"),
        None => format!("stage {name} did not finish: {last}"),
    })
}

/// What the runner needs from project.yml.
struct Project {
    requires: Vec<String>,
    repos: Vec<String>,
    download_path: String,
}

fn read_project(dir: &Path) -> Result<Project, String> {
    let raw = crate::python_install::read_project_yml(dir)?;
    let strings = |v: &serde_json::Value| -> Vec<String> {
        match v {
            serde_json::Value::String(s) => vec![s.clone()],
            serde_json::Value::Array(a) => a
                .iter()
                .filter_map(|x| match x {
                    serde_json::Value::String(s) => Some(s.clone()),
                    serde_json::Value::Object(o) if o.get("type").and_then(|t| t.as_str()) != Some("package") => {
                        o.get("url").and_then(|u| u.as_str()).map(str::to_string)
                    }
                    _ => None,
                })
                .collect(),
            _ => vec![],
        }
    };
    let modulepath = strings(&raw["modulepath"]);
    let download_path = raw["downloadpath"]
        .as_str()
        .map(str::to_string)
        .or_else(|| modulepath.first().cloned())
        .unwrap_or_else(|| "libs".into());
    Ok(Project { requires: strings(&raw["requires"]), repos: strings(&raw["repo"]), download_path })
}

/// A `requires` entry: `name`, `name ~= 1.2`, `name >= 1.0, < 2`.
#[derive(Debug, Clone, PartialEq)]
struct Requirement {
    name: String,
    text: String,
    constraints: Vec<(String, Vec<u64>)>,
}

impl Requirement {
    fn parse(text: &str) -> Option<Requirement> {
        let text = text.trim();
        let end = text.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-')).unwrap_or(text.len());
        let name = text[..end].replace('-', "_");
        let name = name.strip_prefix("inmanta_module_").map(str::to_string).unwrap_or(name);
        if name.is_empty() {
            return None;
        }
        let mut constraints = Vec::new();
        for part in text[end..].split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let op_end = part.find(|c: char| c.is_ascii_digit() || c == 'v').unwrap_or(part.len());
            let op = part[..op_end].trim();
            let op = if op.is_empty() { "==" } else { op };
            constraints.push((op.to_string(), parse_version(part[op_end..].trim())?));
        }
        Some(Requirement { name, text: text.to_string(), constraints })
    }

    fn allows(&self, version: &[u64]) -> bool {
        self.constraints.iter().all(|(op, bound)| {
            let ord = compare(version, bound);
            match op.as_str() {
                "==" | "=" => ord.is_eq(),
                "!=" => !ord.is_eq(),
                ">=" => ord.is_ge(),
                "<=" => ord.is_le(),
                ">" => ord.is_gt(),
                "<" => ord.is_lt(),
                "~=" => {
                    // Compatible release: >= bound and the same prefix without the last part.
                    let prefix = &bound[..bound.len().saturating_sub(1).max(1)];
                    ord.is_ge() && version.len() >= prefix.len() && &version[..prefix.len()] == prefix
                }
                _ => false,
            }
        })
    }
}

/// `1.2.3` or `v1.2.3`; anything else is not a version tag.
fn parse_version(text: &str) -> Option<Vec<u64>> {
    let text = text.strip_prefix('v').unwrap_or(text);
    let parts: Option<Vec<u64>> = text.split('.').map(|p| p.parse().ok()).collect();
    parts.filter(|p| !p.is_empty())
}

fn compare(a: &[u64], b: &[u64]) -> std::cmp::Ordering {
    let n = a.len().max(b.len());
    (0..n)
        .map(|i| a.get(i).unwrap_or(&0).cmp(b.get(i).unwrap_or(&0)))
        .find(|o| o.is_ne())
        .unwrap_or(std::cmp::Ordering::Equal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_pick_the_allowed_tags() {
        let r = Requirement::parse("mymod ~= 1.2").unwrap();
        assert_eq!(r.name, "mymod");
        assert!(r.allows(&[1, 2]));
        assert!(r.allows(&[1, 9, 1]));
        assert!(!r.allows(&[2, 0]));
        assert!(!r.allows(&[1, 1, 9]));
        let r = Requirement::parse("other>=1.0,<2").unwrap();
        assert!(r.allows(&[1, 5]));
        assert!(!r.allows(&[2, 0, 0]));
        let r = Requirement::parse("plain").unwrap();
        assert!(r.constraints.is_empty());
        assert!(r.allows(&[0, 1]));
        assert_eq!(Requirement::parse("x == 1.2.3").unwrap().constraints, vec![("==".to_string(), vec![1, 2, 3])]);
        assert_eq!(parse_version("v1.2.3"), Some(vec![1, 2, 3]));
        assert_eq!(parse_version("release"), None);
    }
}
