//! The queue of compiles in the database: recovers the compiles of servers that stopped, claims
//! runnable ones (one per environment, at most `parallel` at once) and keeps each claim renewed
//! while its compile runs.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use orchestrator::Orchestrator;
use tokio::time::Instant;
use uuid::Uuid;

use super::RunnerConfig;

pub(super) async fn run(o: Orchestrator, config: Arc<RunnerConfig>) {
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
                            _ = super::job::run(&o, &config, &q) => {}
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
