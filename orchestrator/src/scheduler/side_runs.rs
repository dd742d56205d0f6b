//! Handler calls outside the per-environment loop: dry runs of a version and fact requests.
//! They change nothing, so they need no place in the deploy queue; they go to the agents
//! through the same [`Dispatch`](super::Dispatch).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use api::ResourceId;
use api::state::HandlerStatus;
use uuid::Uuid;

use super::registry::Schedulers;
use super::task::{Task, TaskKind};
use crate::Result;

/// How often a dry run stores the results it collected: one commit per resource made a dry run
/// of 100 000 resources take minutes.
const DRY_RUN_FLUSH_EVERY: Duration = Duration::from_millis(100);

impl Schedulers {
    /// Starts a dry run of `version`: every resource that needs its handler is read and diffed
    /// (one at a time per agent, agents in parallel); returns the report id at once.
    pub async fn dry_run(&self, env: Uuid, version: i64) -> Result<Uuid> {
        self.dry_run_of(env, version, &crate::dryrun::DryRunScope::default()).await
    }

    /// [`Schedulers::dry_run`] of the resources `scope` names (`POST /api/v2/dryrun_filtered`).
    pub async fn dry_run_of(&self, env: Uuid, version: i64, scope: &crate::dryrun::DryRunScope) -> Result<Uuid> {
        let (dryrun, targets) = self.orchestrator.create_dryrun_of(env, version, scope).await?;
        let mut per_agent: HashMap<String, Vec<crate::dryrun::DryRunTarget>> = HashMap::new();
        for target in targets {
            per_agent.entry(target.id.agent.clone()).or_default().push(target);
        }
        for (agent, targets) in per_agent {
            let orchestrator = self.orchestrator.clone();
            let dispatch = self.dispatch.clone();
            let id = dryrun.id;
            tokio::spawn(async move {
                let mut batch = Vec::new();
                let mut flushed = Instant::now();
                let total = targets.len();
                for (done, target) in targets.into_iter().enumerate() {
                    let resource_id = target.id.clone();
                    let task = Task {
                        environment: env,
                        resource_id: target.id,
                        version,
                        attributes: target.attributes,
                        kind: TaskKind::DryRun,
                        dependency_changed: false,
                        watch: false,
                        epoch: 0,
                    };
                    let outcome = dispatch.execute(&agent, task).await;
                    let mut changes = outcome.changes;
                    crate::dryrun::mark_handler_failure(outcome.status, &mut changes);
                    let status = crate::dryrun::status_of_outcome(outcome.status, &changes);
                    batch.push(crate::dryrun::DryRunResult { resource_id, status, changes });
                    if done + 1 == total || flushed.elapsed() >= DRY_RUN_FLUSH_EVERY {
                        if let Err(e) = orchestrator.dryrun_update_many(env, id, &batch).await {
                            tracing::error!(%env, dryrun = %id, error = %e, "could not store dry-run results");
                        }
                        batch.clear();
                        flushed = Instant::now();
                    }
                }
            });
        }
        Ok(dryrun.id)
    }

    /// Asks the agent of a released resource for its facts, as Inmanta does when a fact is
    /// asked for that the server does not know: records a `getfact` action and runs the
    /// handler's fact gathering in the background (the facts are stored when it reports them).
    pub async fn request_facts(&self, env: Uuid, rid: &ResourceId) -> Result<()> {
        let Some(intent) = self.orchestrator.released_intent(env, rid).await? else {
            return Ok(());
        };
        self.orchestrator.record_getfact_action(env, rid, intent.version).await?;
        let dispatch = self.dispatch.clone();
        let agent = rid.agent.clone();
        let task = Task {
            environment: env,
            resource_id: intent.id,
            version: intent.version,
            attributes: intent.attributes,
            kind: TaskKind::Facts,
            dependency_changed: false,
            watch: false,
            epoch: 0,
        };
        tokio::spawn(async move {
            let outcome = dispatch.execute(&agent, task).await;
            if outcome.status != HandlerStatus::Deployed {
                let error = outcome.logs.iter().rev().find(|l| l.level == "ERROR").map(|l| l.msg.clone());
                tracing::warn!(%env, resource = %agent, error = ?error, "fact gathering failed");
            }
        });
        Ok(())
    }
}
