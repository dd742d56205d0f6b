//! The autonomous server's compiles (docs/autonomous.md): takes requests from the queue in the
//! database, keeps a git checkout of each environment's repository under
//! `<state-dir>/compiles/<env>/`, fetches the modules the project requires, and runs
//! `inmanta export` against this server in a child process with a time limit and an
//! address-space limit. Every step is recorded as a stage of the compile report.
//!
//! One compile at a time per environment, at most `parallel` at once over all environments.
//!
//! Parts: [`queue`] claims queued compiles and keeps their claims, [`schedule`] requests the
//! `auto_full_compile` ones, [`job`] runs one compile's stages and records them, [`checkout`] the
//! git checkout, [`modules`] the modules of `project.yml`, [`process`] the child processes.

mod checkout;
mod job;
mod modules;
mod process;
mod queue;
mod schedule;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use orchestrator::Orchestrator;

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
    /// How long finished compiles are kept, and how often older ones are removed
    /// ([server] compiler-report-retention, cleanup-compiler-reports-interval).
    pub report_retention: Duration,
    pub report_cleanup_interval: Duration,
}

/// Starts the runner in the background: first the recovery of compiles a previous run left
/// unfinished, then the queue.
pub fn start(orchestrator: Orchestrator, config: RunnerConfig) {
    tokio::spawn(clean_up_reports(orchestrator.clone(), config.report_retention, config.report_cleanup_interval));
    tokio::spawn(queue::run(orchestrator.clone(), Arc::new(config)));
    tokio::spawn(schedule::run(orchestrator));
}

/// Removes, at start and every `interval`, the compiles (and their reports) that finished more
/// than `retention` ago, as Inmanta's compiler service does: those of halted environments stay.
async fn clean_up_reports(orchestrator: Orchestrator, retention: Duration, interval: Duration) {
    let mut ticks = tokio::time::interval(interval);
    loop {
        ticks.tick().await;
        // A retention longer than the calendar reaches back keeps everything.
        let Some(cutoff) =
            chrono::Duration::from_std(retention).ok().and_then(|keep| chrono::Utc::now().checked_sub_signed(keep))
        else {
            continue;
        };
        match orchestrator.delete_compiles_finished_before(cutoff).await {
            Ok(0) => {}
            Ok(n) => {
                tracing::info!(removed = n, %cutoff, "removed compile reports past [server] compiler-report-retention")
            }
            Err(e) => tracing::error!(error = %e, "cannot remove old compile reports"),
        }
    }
}
