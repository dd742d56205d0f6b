//! Writes of resources: release (the intent columns), the scheduler's batches (deploying
//! marks, finished actions with their logs and state-vector updates, temporary blocks) and the
//! actions the server records itself.

use std::collections::BTreeMap;

use api::ResourceId;
use api::operations::NotificationSeverity;
use api::state::{ActionKind, Blocked, Change, HandlerRun, HandlerStatus, ResourceState};
use uuid::Uuid;

use super::validate::{deploy_columns, non_compliant_diff};
use super::{FinishedAction, StartedAction, new_action_id};
use crate::cluster::Fence;
use crate::notifications::{NewNotification, insert_notification};
use crate::statistics::Written;
use crate::store::{Transaction, now};
use crate::{Error, Orchestrator, Result};

/// An action the server records itself (`store`, `getfact`): started and finished at `at`, with
/// no status, change or changes.
pub(crate) async fn insert_bare_action(
    tx: &mut Transaction,
    env: Uuid,
    action_id: &str,
    version: i64,
    action: &str,
    at: &str,
    rvids: &[String],
) -> Result<()> {
    sqlx::query(
        "INSERT INTO resource_action (environment, action_id, version, action, started, finished, \
         resource_version_ids, status, changes, change, send_event) \
         VALUES ($1, $2, $3, $4, $5, $5, $6, NULL, NULL, NULL, NULL)",
    )
    .bind(env.to_string())
    .bind(action_id.to_string())
    .bind(version)
    .bind(action.to_string())
    .bind(at.to_string())
    .bind(serde_json::json!(rvids).to_string())
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Release writes the intent of every resource of `version` and marks the others orphans;
/// returns how many state rows it wrote.
pub(crate) async fn record_release(tx: &mut Transaction, env: Uuid, version: i64) -> Result<u64> {
    let written = sqlx::query(
        "INSERT INTO resource_persistent_state (environment, resource_id, resource_type, agent, id_attribute, \
         id_value, first_generated_time, first_generated_version, current_intent_version, \
         current_intent_attribute_hash, current_intent_requires, is_undefined, is_orphan, blocked) \
         SELECT r.environment, r.resource_id, r.resource_type, r.agent, r.id_attribute, r.id_value, $3, r.version, \
         r.version, r.attribute_hash, r.requires, CASE WHEN r.state = 'undefined' THEN 1 ELSE 0 END, 0, \
         CASE WHEN r.state = 'available' THEN 'not_blocked' ELSE 'blocked' END \
         FROM resource r WHERE r.environment = $1 AND r.version = $2 \
         ON CONFLICT (environment, resource_id) DO UPDATE SET \
         current_intent_version = excluded.current_intent_version, \
         current_intent_attribute_hash = excluded.current_intent_attribute_hash, \
         current_intent_requires = excluded.current_intent_requires, \
         is_undefined = excluded.is_undefined, is_orphan = 0, \
         last_deployed_attribute_hash = CASE WHEN resource_persistent_state.is_orphan = 1 THEN NULL \
           ELSE resource_persistent_state.last_deployed_attribute_hash END, \
         blocked = CASE WHEN excluded.blocked = 'blocked' THEN 'blocked' \
           WHEN resource_persistent_state.blocked = 'temporarily_blocked' THEN 'temporarily_blocked' \
           ELSE 'not_blocked' END",
    )
    .bind(env.to_string())
    .bind(version)
    .bind(now())
    .execute(&mut **tx)
    .await?
    .rows_affected();
    sqlx::query(
        "UPDATE resource_persistent_state SET is_orphan = 1, is_deploying = 0 \
         WHERE environment = $1 AND current_intent_version <> $2 AND is_orphan = 0",
    )
    .bind(env.to_string())
    .bind(version)
    .execute(&mut **tx)
    .await?;
    Ok(written)
}

impl Orchestrator {
    /// What follows a commit of finished actions: statistics and the change event.
    fn actions_recorded(&self, env: Uuid, actions: &[FinishedAction]) {
        // These tables grow by a batch at a time; their foreign-key checks need statistics.
        let links: usize = actions.iter().map(|a| a.resource_ids.len()).sum();
        let lines: usize = actions.iter().map(|a| a.outcome.messages.len()).sum();
        self.store.wrote_rows("resource_action", actions.len() as u64, Written::Appended);
        self.store.wrote_rows("resource_action_resource", links as u64, Written::Appended);
        self.store.wrote_rows("resource_log", lines as u64, Written::Appended);
        self.publish(crate::Event::ResourcesChanged { env });
    }

    /// One batch of a scheduler's writes in one transaction, committed only while `fence`
    /// holds: resources that started deploying, finished actions (with the fence's epoch) and
    /// changes of the temporary block. One commit (one fsync on SQLite, one fence check) per
    /// batch instead of one per kind of write.
    pub async fn record_scheduler_batch(
        &self,
        env: Uuid,
        started: &[String],
        finished: &[FinishedAction],
        blocked: &[(String, Blocked)],
        fence: Option<&Fence>,
    ) -> Result<()> {
        self.record_scheduler_writes(env, &[], started, finished, blocked, fence).await
    }

    /// [`Orchestrator::record_scheduler_batch`] with the actions of deploys about to start
    /// (`announced`, stored as `deploying` first; their results, in a later batch, complete them).
    pub async fn record_scheduler_writes(
        &self,
        env: Uuid,
        announced: &[StartedAction],
        started: &[String],
        finished: &[FinishedAction],
        blocked: &[(String, Blocked)],
        fence: Option<&Fence>,
    ) -> Result<()> {
        if announced.is_empty() && started.is_empty() && finished.is_empty() && blocked.is_empty() {
            return Ok(());
        }
        let kind = self.store.kind();
        let mut tx = self.store.begin_write().await?;
        mark_deploying_in(&mut tx, kind, env, started, true).await?;
        announce_actions_in(&mut tx, kind, env, announced, fence.map(|f| f.epoch)).await?;
        record_actions_in(&mut tx, kind, env, finished, fence.map(|f| f.epoch)).await?;
        set_blocked_in(&mut tx, kind, env, blocked).await?;
        self.store.commit_fenced(tx, fence).await?;
        if !finished.is_empty() {
            self.actions_recorded(env, finished);
        } else {
            self.publish(crate::Event::ResourcesChanged { env });
        }
        Ok(())
    }

    /// After a crash nothing is deploying any more: clears the flag for the whole environment,
    /// and closes the actions of deploys whose result never came (their server stopped): they
    /// keep no status, get an end time and a warning that says so.
    pub async fn reset_deploying(&self, env: Uuid, fence: Option<&Fence>) -> Result<()> {
        let mut tx = self.store.begin_write().await?;
        sqlx::query(
            "UPDATE resource_persistent_state SET is_deploying = 0 WHERE environment = $1 AND is_deploying = 1",
        )
        .bind(env.to_string())
        .execute(&mut *tx)
        .await?;
        let at = now();
        let open = "FROM resource_action WHERE environment = $1 AND action = 'deploy' AND finished IS NULL";
        let warning = "the server that ran this deploy stopped before it reported a result: the handler may have \
                       changed the resource; it is deployed again";
        sqlx::query(&format!(
            "INSERT INTO resource_log (environment, action_id, seq, level_no, level, msg, args, kwargs, timestamp) \
             SELECT environment, action_id, 0, 30, 'WARNING', $2, '[]', '{{}}', $3 {open}"
        ))
        .bind(env.to_string())
        .bind(warning)
        .bind(at.clone())
        .execute(&mut *tx)
        .await?;
        sqlx::query(&format!("UPDATE resource_action SET finished = $2 {}", &open["FROM resource_action ".len()..]))
            .bind(env.to_string())
            .bind(at)
            .execute(&mut *tx)
            .await?;
        self.store.commit_fenced(tx, fence).await
    }

    /// Records the `getfact` action Inmanta records when the server asks an agent for facts:
    /// no status, no change, no log lines.
    pub async fn record_getfact_action(&self, env: Uuid, rid: &ResourceId, version: i64) -> Result<()> {
        let action_id = new_action_id().to_string();
        let at = now();
        let mut tx = self.store.begin_write().await?;
        insert_bare_action(
            &mut tx,
            env,
            &action_id,
            version,
            ActionKind::Getfact.as_str(),
            &at,
            &[rid.versioned_text(version as u64)],
        )
        .await?;
        sqlx::query("INSERT INTO resource_action_resource (environment, action_id, resource_id) VALUES ($1, $2, $3)")
            .bind(env.to_string())
            .bind(action_id)
            .bind(rid.to_string())
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }
}

/// Stores finished actions in `tx`, a few statements per 2 000 of them.
async fn record_actions_in(
    tx: &mut Transaction,
    kind: crate::DbKind,
    env: Uuid,
    actions: &[FinishedAction],
    epoch: Option<i64>,
) -> Result<()> {
    for chunk in actions.chunks(2000) {
        record_actions_chunk(tx, kind, env, chunk, epoch).await?;
    }
    Ok(())
}

/// Stores the actions of deploys about to start, with no status or end yet, and their resources; an action
/// stored already (a retry after a commit whose answer was lost) is left as it is.
async fn announce_actions_in(
    tx: &mut Transaction,
    kind: crate::DbKind,
    env: Uuid,
    announced: &[StartedAction],
    epoch: Option<i64>,
) -> Result<()> {
    use crate::store::json_rows;
    if announced.is_empty() {
        return Ok(());
    }
    let mut action_rows = Vec::with_capacity(announced.len());
    let mut link_rows = Vec::with_capacity(announced.len());
    for start in announced {
        let rvid = start.resource_id.versioned_text(start.version as u64);
        action_rows.push(serde_json::json!({
            "action_id": start.action_id.to_string(), "version": start.version.to_string(), "started": start.started,
            "resource_version_ids": serde_json::json!([rvid]).to_string(),
        }));
        link_rows.push(
            serde_json::json!({"action_id": start.action_id.to_string(), "resource_id": start.resource_id.to_string()}),
        );
    }
    let rows = json_rows(kind, 2, &["action_id", "version", "started", "resource_version_ids"]);
    // `WHERE true`: SQLite reads an ON CONFLICT right after a FROM as a join's ON otherwise.
    sqlx::query(&format!(
        "INSERT INTO resource_action (environment, action_id, version, action, started, resource_version_ids, \
         epoch) SELECT $1, x.action_id, CAST(x.version AS BIGINT), 'deploy', x.started, \
         x.resource_version_ids, CAST($3 AS BIGINT) FROM {rows} WHERE true \
         ON CONFLICT (environment, action_id) DO NOTHING"
    ))
    .bind(env.to_string())
    .bind(serde_json::Value::Array(action_rows).to_string())
    .bind(epoch)
    .execute(&mut **tx)
    .await?;
    let rows = json_rows(kind, 2, &["action_id", "resource_id"]);
    sqlx::query(&format!(
        "INSERT INTO resource_action_resource (environment, action_id, resource_id) \
         SELECT $1, x.action_id, x.resource_id FROM {rows} WHERE true ON CONFLICT DO NOTHING"
    ))
    .bind(env.to_string())
    .bind(serde_json::Value::Array(link_rows).to_string())
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Sets or clears `deploying` for resources.
async fn mark_deploying_in(
    tx: &mut Transaction,
    kind: crate::DbKind,
    env: Uuid,
    resource_ids: &[String],
    deploying: bool,
) -> Result<()> {
    if resource_ids.is_empty() {
        return Ok(());
    }
    set_where_listed(
        tx,
        kind,
        env,
        "resource_persistent_state SET is_deploying",
        "resource_id",
        i64::from(deploying),
        resource_ids,
    )
    .await
}

/// `UPDATE {table_set} = value WHERE environment = env AND {key} IN (ids)`, the ids travelling as
/// one JSON parameter (binding them one by one costs tens of µs each).
async fn set_where_listed<V, I>(
    tx: &mut Transaction,
    kind: crate::DbKind,
    env: Uuid,
    table_set: &str,
    key: &str,
    value: V,
    ids: &[I],
) -> Result<()>
where
    V: for<'q> sqlx::Encode<'q, sqlx::Any> + sqlx::Type<sqlx::Any> + Send + 'static,
    I: serde::Serialize,
{
    let sql =
        format!("UPDATE {table_set} = $1 WHERE environment = $2 AND {key} IN {}", crate::store::json_list(kind, 3));
    sqlx::query(&sql)
        .bind(value)
        .bind(env.to_string())
        .bind(serde_json::json!(ids).to_string())
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Sets the `blocked` dimension of resources, one statement per value; the last change of a
/// resource wins.
async fn set_blocked_in(
    tx: &mut Transaction,
    kind: crate::DbKind,
    env: Uuid,
    changes: &[(String, Blocked)],
) -> Result<()> {
    if changes.is_empty() {
        return Ok(());
    }
    let last: std::collections::HashMap<&str, Blocked> = changes.iter().map(|(r, b)| (r.as_str(), *b)).collect();
    let mut groups: BTreeMap<Blocked, Vec<&str>> = BTreeMap::new();
    for (rid, blocked) in last {
        groups.entry(blocked).or_default().push(rid);
    }
    for (blocked, rids) in groups {
        set_where_listed(
            tx,
            kind,
            env,
            "resource_persistent_state SET blocked",
            "resource_id",
            blocked.as_str().to_string(),
            &rids,
        )
        .await?;
    }
    Ok(())
}

/// Notifies resources that start failing (those whose last run did not fail already).
async fn notify_new_failures(tx: &mut Transaction, env: Uuid, failed: &[(String, Option<&str>)]) -> Result<()> {
    for (rid, reason) in failed {
        let already: Option<String> = sqlx::query_scalar(
            "SELECT resource_id FROM resource_persistent_state WHERE environment = $1 AND resource_id = $2 \
             AND last_non_deploying_status = 'failed'",
        )
        .bind(env.to_string())
        .bind(rid.clone())
        .fetch_optional(&mut **tx)
        .await?;
        if already.is_some() {
            continue;
        }
        let new = NewNotification {
            title: "Resource deploy failed".into(),
            message: format!("{rid} failed to deploy{}", reason.map(|r| format!(": {r}")).unwrap_or_default()),
            severity: NotificationSeverity::Error,
            uri: Some(format!("/console/resources/{}", api::url::encode(rid))),
            compile_id: None,
        };
        insert_notification(tx, env, &new).await?;
    }
    Ok(())
}

/// Writes finished actions in a few statements: actions (with the scheduler `epoch` they were
/// written under), their resources, their log lines and, for deploys, the state vector
/// ([`record_deploy_results`]), each as one JSON parameter. The epoch goes in with the rows: a separate UPDATE by action id was planned on
/// PostgreSQL, while the table's statistics still said it was empty, as a scan of every action
/// of the environment per batch, which made a first deploy quadratic.
async fn record_actions_chunk(
    tx: &mut Transaction,
    kind: crate::DbKind,
    env: Uuid,
    actions: &[FinishedAction],
    epoch: Option<i64>,
) -> Result<()> {
    use crate::store::json_rows;
    let finished = now();
    let flag = |b: bool| if b { "1" } else { "0" };
    let mut action_rows = Vec::with_capacity(actions.len());
    let mut link_rows = Vec::with_capacity(actions.len());
    let mut log_rows = Vec::new();
    let mut results = Vec::with_capacity(actions.len());
    for done in actions {
        let outcome = &done.outcome;
        let rvids: Vec<String> = done.resource_ids.iter().map(|id| id.versioned_text(done.version as u64)).collect();
        action_rows.push(serde_json::json!({
            "action_id": done.action_id.to_string(), "action": done.action, "version": done.version.to_string(),
            "started": done.started, "resource_version_ids": serde_json::json!(rvids).to_string(),
            "status": outcome.status, "changes": outcome.changes.as_ref().map(|c| c.to_string()),
            "change": outcome.change, "send_event": outcome.send_event.map(flag),
        }));
        let reason = outcome.messages.iter().rev().find(|m| m.level == "ERROR").map(|m| m.msg.as_str());
        for id in &done.resource_ids {
            link_rows.push(serde_json::json!({"action_id": done.action_id.to_string(), "resource_id": id.to_string()}));
            if done.action == ActionKind::Deploy {
                results.push(DeployResult {
                    resource_id: id.to_string(),
                    version: done.version,
                    outcome: outcome.status,
                    events: outcome.change.is_some_and(|c| c != Change::NoChange),
                    reason,
                    diff: non_compliant_diff(outcome, &id.versioned_text(done.version as u64)),
                });
            }
        }
        for (seq, line) in outcome.messages.iter().enumerate() {
            let level_no = api::resource::log_level_number(&line.level)
                .ok_or_else(|| Error::BadRequest(format!("log level {:?} is not a log level", line.level)))?;
            let timestamp = line.timestamp.to_string();
            log_rows.push(serde_json::json!({
                "action_id": done.action_id.to_string(), "seq": seq.to_string(), "level_no": level_no.to_string(),
                "level": line.level.to_ascii_uppercase(), "msg": line.msg,
                "args": serde_json::json!(line.args).to_string(),
                "kwargs": serde_json::Value::Object(line.kwargs.clone()).to_string(), "timestamp": timestamp,
            }));
        }
    }
    let rows = json_rows(
        kind,
        3,
        &[
            "action_id",
            "action",
            "version",
            "started",
            "resource_version_ids",
            "status",
            "changes",
            "change",
            "send_event",
        ],
    );
    sqlx::query(&format!(
        "INSERT INTO resource_action (environment, action_id, version, action, started, finished, \
         resource_version_ids, status, changes, change, send_event, epoch) SELECT $1, x.action_id, \
         CAST(x.version AS BIGINT), x.action, x.started, $2, x.resource_version_ids, x.status, x.changes, x.change, \
         CAST(x.send_event AS BIGINT), CAST($4 AS BIGINT) FROM {rows} WHERE true \
         ON CONFLICT (environment, action_id) DO UPDATE SET finished = excluded.finished, \
         status = excluded.status, changes = excluded.changes, change = excluded.change, \
         send_event = excluded.send_event, epoch = excluded.epoch WHERE resource_action.finished IS NULL"
    ))
    .bind(env.to_string())
    .bind(finished.clone())
    .bind(serde_json::Value::Array(action_rows).to_string())
    .bind(epoch)
    .execute(&mut **tx)
    .await?;
    let rows = json_rows(kind, 2, &["action_id", "resource_id"]);
    sqlx::query(&format!(
        "INSERT INTO resource_action_resource (environment, action_id, resource_id) \
         SELECT $1, x.action_id, x.resource_id FROM {rows} WHERE true ON CONFLICT DO NOTHING"
    ))
    .bind(env.to_string())
    .bind(serde_json::Value::Array(link_rows).to_string())
    .execute(&mut **tx)
    .await?;
    if !log_rows.is_empty() {
        let rows = json_rows(kind, 2, &["action_id", "seq", "level_no", "level", "msg", "args", "kwargs", "timestamp"]);
        sqlx::query(&format!(
            "INSERT INTO resource_log (environment, action_id, seq, level_no, level, msg, args, kwargs, timestamp) \
             SELECT $1, x.action_id, CAST(x.seq AS BIGINT), CAST(x.level_no AS BIGINT), x.level, x.msg, x.args, \
             x.kwargs, x.timestamp FROM {rows}"
        ))
        .bind(env.to_string())
        .bind(serde_json::Value::Array(log_rows).to_string())
        .execute(&mut **tx)
        .await?;
    }
    record_deploy_results(tx, kind, env, &finished, &results).await
}

/// One resource's result of a finished deploy.
struct DeployResult<'a> {
    resource_id: String,
    /// The version the deploy ran for: its hash is the one deployed.
    version: i64,
    outcome: HandlerStatus,
    /// The run changed something (its change is not `nochange`).
    events: bool,
    /// The last error the run logged, for the notification of a new failure.
    reason: Option<&'a str>,
    /// What a `non_compliant` run found different ({attribute: {current, desired}}), kept for
    /// the compliance report.
    diff: Option<serde_json::Value>,
}

/// Records deploy results in the state vector of their resources (`api::state::StateVector`):
/// the one place a deploy's outcome reaches `resource_persistent_state`.
async fn record_deploy_results(
    tx: &mut Transaction,
    kind: crate::DbKind,
    env: Uuid,
    finished: &str,
    results: &[DeployResult<'_>],
) -> Result<()> {
    let failed: Vec<(String, Option<&str>)> = results
        .iter()
        .filter(|r| ResourceState::from(r.outcome) == ResourceState::Failed)
        .map(|r| (r.resource_id.clone(), r.reason))
        .collect();
    notify_new_failures(tx, env, &failed).await?;
    // One UPDATE per kind of outcome (usually one or two per batch), on the ids as an IN list:
    // an UPDATE joined with the unpacked rows would scan the whole table for each of them.
    let mut groups: BTreeMap<(HandlerRun, ResourceState, i64, bool), Vec<&str>> = BTreeMap::new();
    for result in results {
        let (handler_run, status) = deploy_columns(result.outcome)?;
        groups.entry((handler_run, status, result.version, result.events)).or_default().push(&result.resource_id);
    }
    let ids = crate::store::json_list(kind, 8);
    // The hash deployed is the one of the version the action ran for: almost always the current
    // intent's, which the row holds; only an older version's is looked up (the lookup for every
    // row was a fifth of the statement's time on PostgreSQL).
    // Compliance is about the current intent only (Inmanta's scheduler): a run for an older
    // intent (another hash) leaves `last_handler_run_compliant` as it was. The diff is cleared
    // here and set below for the runs that found one, as Inmanta persists it.
    let older_hash = "(SELECT r.attribute_hash FROM resource r WHERE r.environment = $1 AND r.version = $5 \
                      AND r.resource_id = resource_persistent_state.resource_id)";
    let sql = format!(
        "UPDATE resource_persistent_state SET is_deploying = 0, last_handler_run = $2, \
         last_handler_run_at = $3, last_deploy = $3, last_non_deploying_status = $4, \
         last_deployed_version = $5, last_deployed_attribute_hash = CASE \
         WHEN current_intent_version = $5 THEN current_intent_attribute_hash ELSE {older_hash} END, \
         last_success = CASE WHEN $6 = 1 THEN $3 ELSE last_success END, \
         last_produced_events = CASE WHEN $7 = 1 THEN $3 ELSE last_produced_events END, \
         last_handler_run_compliant = CASE WHEN current_intent_version = $5 \
         OR {older_hash} = current_intent_attribute_hash THEN $9 ELSE last_handler_run_compliant END, \
         non_compliant_diff = NULL \
         WHERE environment = $1 AND resource_id IN {ids}"
    );
    for ((handler_run, status, version, events), rids) in groups {
        sqlx::query(&sql)
            .bind(env.to_string())
            .bind(handler_run.as_str())
            .bind(finished.to_string())
            .bind(status.as_str())
            .bind(version)
            .bind(i64::from(status == ResourceState::Deployed))
            .bind(i64::from(events))
            .bind(serde_json::json!(rids).to_string())
            .bind(i64::from(status == ResourceState::Deployed))
            .execute(&mut **tx)
            .await?;
    }
    for result in results {
        if let Some(diff) = &result.diff {
            sqlx::query(
                "UPDATE resource_persistent_state SET non_compliant_diff = $3 WHERE environment = $1 AND resource_id = $2",
            )
            .bind(env.to_string())
            .bind(&result.resource_id)
            .bind(diff.to_string())
            .execute(&mut **tx)
            .await?;
        }
    }
    Ok(())
}
