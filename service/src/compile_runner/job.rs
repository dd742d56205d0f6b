//! One compile: its stages in order (init, checkout, modules, the export in a child process),
//! each recorded in the compile's report as it runs.

use std::path::PathBuf;

use orchestrator::Orchestrator;
use orchestrator::compiles::{CompileOutcome, QueuedCompile, StageResult};

use super::RunnerConfig;
use super::process::{self, Cmd, Deadline};

/// Runs compile `q` (claimed by this server) and records its end.
pub(super) async fn run(o: &Orchestrator, config: &RunnerConfig, q: &QueuedCompile) {
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
        config,
        deadline: Deadline::after(config.timeout),
        dir: config.state_dir.join("compiles").join(q.environment.to_string()),
        data_file: config.state_dir.join("compiles").join(format!("{}.compile-data.json", q.id)),
        token,
    };
    let outcome = match job.stages().await {
        Ok(outcome) => outcome,
        Err(message) => CompileOutcome { success: false, message, ..Default::default() },
    };
    let _ = std::fs::remove_file(&job.data_file);
    tracing::info!(
        env = %q.environment, compile = %q.id, success = outcome.success, version = ?outcome.version,
        elapsed_ms = started.elapsed().as_millis() as u64, reason = %outcome.message, "compile finished"
    );
    orchestrator::metrics::compiled(q.environment, outcome.success, started.elapsed());
    if let Err(e) = o.finish_compile(q.environment, q.id, &outcome).await {
        tracing::error!(error = %e, compile = %q.id, "cannot record the end of a compile");
    }
}

/// One compile being run.
pub(super) struct Job<'a> {
    o: &'a Orchestrator,
    pub(super) q: &'a QueuedCompile,
    config: &'a RunnerConfig,
    deadline: Deadline,
    /// The environment's checkout: the project directory.
    pub(super) dir: PathBuf,
    /// Where the export child writes its compile data (the errors of a failed compile).
    data_file: PathBuf,
    /// A compiler token of this environment that lives as long as the compile may.
    token: String,
}

impl Job<'_> {
    /// Every stage in order; an `Err` is a stage that stopped the compile, with its message.
    async fn stages(&self) -> Result<CompileOutcome, String> {
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
        } else if q.reinstall && self.dir.exists() {
            // A clean slate, as Inmanta's `reinstall_project_and_venv`: the checkout goes, and
            // with it the project's virtual environment (`<checkout>/.env`).
            init.push_str(&format!(
                "Removing project and venv directory for environment {} at {}\n",
                q.environment,
                self.dir.display()
            ));
            match std::fs::remove_dir_all(&self.dir) {
                Ok(()) => (0, String::new()),
                Err(e) => (1, format!("cannot remove the project directory {}: {e}", self.dir.display())),
            }
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
    pub(super) async fn record(
        &self,
        name: &str,
        command: &str,
        body: impl std::future::Future<Output = StageResult>,
    ) -> Result<StageResult, String> {
        let result = self.record_raw(name, command, body).await?;
        process::check(name, &result)?;
        Ok(result)
    }

    /// Records a stage around `body` and returns its result, failed or not.
    pub(super) async fn record_raw(
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

    pub(super) async fn record_cmd(&self, name: &str, cmd: Cmd) -> Result<StageResult, String> {
        self.record(name, &cmd.display(), self.exec(&cmd)).await
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
            args.extend(["--server_address".to_string(), self.config.address.clone(), "--server_port".to_string()]);
            args.push(self.config.port.to_string());
            if self.config.ca_file.is_some() {
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
        if let Some(ca_file) = &self.config.ca_file {
            env.insert("INMANTA_COMPILER_REST_TRANSPORT_SSL_CA_CERT_FILE".into(), ca_file.display().to_string());
        }
        let cmd = Cmd {
            program: exe,
            args,
            cwd: self.dir.clone(),
            env,
            secret_env: vec![("INMANTA_COMPILER_REST_TRANSPORT_TOKEN", self.token.clone())],
            address_space: self.config.memory_limit,
        };
        let result = self.record_raw("Recompiling configuration model", &cmd.display(), self.exec(&cmd)).await?;
        let compile_data = std::fs::read_to_string(&self.data_file)
            .ok()
            .and_then(|text| serde_json::from_str::<api::CompileData>(&text).ok());
        let version = result.outstream.lines().rev().find_map(|line| {
            let line = line.trim();
            line.parse::<i64>().ok().or_else(|| line.strip_prefix("Committed resources with version ")?.parse().ok())
        });
        match process::check("Recompiling configuration model", &result) {
            Ok(_) if q.do_export && version.is_none() => Err("the export did not report a version".into()),
            Ok(_) => Ok(CompileOutcome { success: true, version, compile_data, message: String::new() }),
            Err(message) => {
                let first_error = compile_data.as_ref().and_then(|d| d.errors.first()).map(|e| e.message.clone());
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
    pub(super) async fn exec(&self, cmd: &Cmd) -> StageResult {
        process::run(cmd, &self.deadline).await
    }
}
