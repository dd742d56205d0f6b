//! Remote agents: `inmanta agent` processes that connect over a WebSocket
//! (`GET /api/v2/agent/session?environment=E&name=A&name=B`) and run the handlers of the agent
//! names they declare. The scheduler is unchanged: [`RoutingDispatch`] sends the tasks of those
//! names to their session and everything else to the in-process agents. An agent name that a
//! remote process ever claimed stays remote: while its process is away its tasks wait (it is
//! listed `down`) and resume when it reconnects. A dropped connection is only reported `down`
//! after `[server] agent-timeout` without a reconnect, so a quick reconnect does not flap.
//!
//! A task for a resource type without a built-in handler carries the sha1 of the executable its
//! version ships (`handler`); the agent fetches it like file contents (`GET /api/v1/file/<sha1>`).
//!
//! Frames are JSON text: the server sends `{"type": "task", "id": N, "task": {...}}`, the agent
//! answers `{"type": "result", "id": N, "outcome": {...}}`.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use orchestrator::Orchestrator;
use orchestrator::scheduler::{Dispatch, Task, TaskKind, TaskOutcome};
use serde::{Deserialize, Serialize};
use tokio::sync::{Notify, mpsc, oneshot};
use uuid::Uuid;

use crate::rest::error::ApiError;

/// A task on the wire.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireTask {
    pub environment: Uuid,
    pub resource_id: String,
    pub version: i64,
    pub attributes: serde_json::Map<String, serde_json::Value>,
    pub dry_run: bool,
    /// Only report the resource's facts (`getfact`).
    #[serde(default)]
    pub facts: bool,
    pub dependency_changed: bool,
    /// The sha1 of the handler executable the version ships for the resource's type, when no
    /// handler is built in for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handler: Option<String>,
    /// The version's Python modules (`module_version_info`), when its handler is a Python
    /// `@provider`; the agent fetches their files by sha1 and checks them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<serde_json::Value>,
}

/// A handler's outcome on the wire.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireOutcome {
    pub status: api::HandlerStatus,
    pub change: api::Change,
    pub changes: serde_json::Map<String, serde_json::Value>,
    pub logs: Vec<api::resource::LogLine>,
    /// Facts the handler reported while it ran (stored as the resource's facts).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub facts: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Frame {
    Task { id: u64, task: WireTask },
    Result { id: u64, outcome: WireOutcome },
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<WireOutcome>>>>;

#[derive(Clone)]
struct Session {
    outbox: mpsc::UnboundedSender<String>,
    pending: Pending,
}

/// The connected remote agents of this server.
pub struct Sessions {
    orchestrator: Orchestrator,
    live: Mutex<HashMap<(Uuid, String), Session>>,
    /// Names a remote process has claimed: never run in-process.
    remote: Mutex<HashSet<(Uuid, String)>>,
    /// How many times each name connected: a grace period that ends after a newer connection
    /// came (and maybe went again) leaves the `down` decision to that connection's own timer.
    connections: Mutex<HashMap<(Uuid, String), u64>>,
    /// How long a name stays `up` after its connection dropped ([server] agent-timeout).
    agent_timeout: Duration,
    arrived: Notify,
    next_id: AtomicU64,
    /// Several servers on one database: tasks for agents whose session another server holds go
    /// through the `agent_task` table.
    clustered: bool,
}

impl Sessions {
    pub async fn new(orchestrator: Orchestrator, agent_timeout: Duration) -> anyhow::Result<Arc<Sessions>> {
        let remote = orchestrator.remote_agents().await?.into_iter().collect();
        let clustered = orchestrator.node().is_some();
        let sessions = Arc::new(Sessions {
            orchestrator,
            live: Mutex::default(),
            remote: Mutex::new(remote),
            connections: Mutex::default(),
            agent_timeout,
            arrived: Notify::new(),
            next_id: AtomicU64::new(1),
            clustered,
        });
        if clustered {
            tokio::spawn(relay_tasks(Arc::downgrade(&sessions)));
        }
        Ok(sessions)
    }

    /// Several servers: runs a task through the `agent_task` table for the server that holds the
    /// agent's session (maybe this one, once the agent reconnects here), and waits for the outcome.
    async fn run_anywhere(&self, env: Uuid, agent: &str, epoch: i64, task: WireTask) -> WireOutcome {
        let text = serde_json::to_string(&task).unwrap_or_default();
        let id = loop {
            match self.orchestrator.queue_agent_task(env, agent, epoch, text.clone()).await {
                Ok(id) => break id,
                Err(e) => {
                    tracing::warn!(%env, %agent, error = %e, "cannot store a task for a remote agent; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        };
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            match self.orchestrator.take_agent_task_outcome(id).await {
                Ok(Some(outcome)) => match serde_json::from_str(&outcome) {
                    Ok(outcome) => return outcome,
                    Err(e) => {
                        let o = crate::agents::unavailable(format!("a remote agent's answer is unreadable: {e}"));
                        return WireOutcome {
                            status: o.status,
                            change: o.change,
                            changes: o.changes,
                            logs: o.logs,
                            facts: Default::default(),
                        };
                    }
                },
                Ok(None) => {}
                Err(e) => tracing::warn!(%env, %agent, error = %e, "cannot read a remote agent's answer"),
            }
        }
    }

    fn connection_count(&self, env: Uuid, agent: &str) -> u64 {
        self.connections.lock().map(|c| c.get(&(env, agent.to_string())).copied().unwrap_or(0)).unwrap_or(0)
    }

    /// Marks the name `down` once the grace period passed without it reconnecting.
    fn mark_down_unless_back(self: &Arc<Self>, env: Uuid, agent: String) {
        let sessions = self.clone();
        let seen = self.connection_count(env, &agent);
        tokio::spawn(async move {
            tokio::time::sleep(sessions.agent_timeout).await;
            let back = sessions.session(env, &agent).is_some() || sessions.connection_count(env, &agent) != seen;
            if back {
                return;
            }
            tracing::info!(%env, %agent, timeout_s = sessions.agent_timeout.as_secs_f64(), "remote agent did not return: down");
            if let Err(e) = sessions.orchestrator.mark_remote_agent(env, &agent, false).await {
                tracing::error!(%env, %agent, error = %e, "could not mark the remote agent down");
            }
        });
    }

    fn is_remote(&self, env: Uuid, agent: &str) -> bool {
        self.remote.lock().map(|r| r.contains(&(env, agent.to_string()))).unwrap_or(false)
    }

    fn session(&self, env: Uuid, agent: &str) -> Option<Session> {
        self.live.lock().ok().and_then(|l| l.get(&(env, agent.to_string())).cloned())
    }

    /// Runs a task on the remote agent; waits for it to (re)connect when it is away.
    async fn run(&self, env: Uuid, agent: &str, task: WireTask) -> WireOutcome {
        loop {
            let Some(session) = self.session(env, agent) else {
                // Wake up when any session arrives and check again.
                let arrived = self.arrived.notified();
                if self.session(env, agent).is_none() {
                    arrived.await;
                }
                continue;
            };
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            let (reply, answer) = oneshot::channel();
            if let Ok(mut pending) = session.pending.lock() {
                pending.insert(id, reply);
            }
            let frame = serde_json::to_string(&Frame::Task { id, task: task.clone() }).unwrap_or_default();
            if session.outbox.send(frame).is_err() {
                continue;
            }
            match answer.await {
                Ok(outcome) => return outcome,
                // The session dropped before answering: run it again once the agent is back.
                Err(_) => continue,
            }
        }
    }
}

/// Several servers: passes the tasks other servers stored for the agents whose session is here,
/// and keeps the set of remote agent names current (a name claimed on another server never runs
/// in-process here).
async fn relay_tasks(sessions: std::sync::Weak<Sessions>) {
    let mut events = match sessions.upgrade() {
        Some(s) => s.orchestrator.subscribe(),
        None => return,
    };
    loop {
        let wait = tokio::time::sleep(Duration::from_millis(500));
        tokio::select! {
            _ = wait => {}
            _ = events.recv() => {}
        }
        let Some(s) = sessions.upgrade() else { return };
        if let Ok(remote) = s.orchestrator.remote_agents().await
            && let Ok(mut known) = s.remote.lock()
        {
            known.extend(remote);
        }
        let here: Vec<(Uuid, String)> = s.live.lock().map(|l| l.keys().cloned().collect()).unwrap_or_default();
        for (env, agent) in here {
            let claimed = match s.orchestrator.claim_agent_tasks(env, &agent).await {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(%env, %agent, error = %e, "cannot claim tasks of other servers");
                    continue;
                }
            };
            for (id, text) in claimed {
                let Ok(task) = serde_json::from_str::<WireTask>(&text) else { continue };
                let (s, agent) = (s.clone(), agent.clone());
                tokio::spawn(async move {
                    let outcome = s.run(env, &agent, task).await;
                    let text = serde_json::to_string(&outcome).unwrap_or_default();
                    if let Err(e) = s.orchestrator.finish_agent_task(id, text).await {
                        tracing::warn!(%env, %agent, error = %e, "cannot store a remote agent's answer");
                    }
                });
            }
        }
    }
}

/// The scheduler's dispatch: remote agent names go to their session, the rest run in-process.
pub struct RoutingDispatch {
    pub local: Arc<crate::agents::InProcessAgents>,
    pub sessions: Arc<Sessions>,
}

impl Dispatch for RoutingDispatch {
    fn execute(&self, agent: &str, task: Task) -> Pin<Box<dyn Future<Output = TaskOutcome> + Send>> {
        if !self.sessions.is_remote(task.environment, agent) {
            return self.local.execute(agent, task);
        }
        let sessions = self.sessions.clone();
        let agent = agent.to_string();
        let code = self.local.version_code(&task);
        Box::pin(async move {
            let code = match code.await {
                Ok(code) => code,
                Err(message) => return crate::agents::unavailable(message),
            };
            let env = task.environment;
            let wire = WireTask {
                handler: code.shipped_handler,
                python: code.python.map(|p| p.to_module_version_info()),
                environment: env,
                resource_id: task.resource_id.to_string(),
                version: task.version,
                attributes: task.attributes,
                dry_run: task.kind == TaskKind::DryRun,
                facts: task.kind == TaskKind::Facts,
                dependency_changed: task.dependency_changed,
            };
            let rid = task.resource_id.to_string();
            let outcome = if sessions.clustered && sessions.session(env, &agent).is_none() {
                sessions.run_anywhere(env, &agent, task.epoch, wire).await
            } else {
                sessions.run(env, &agent, wire).await
            };
            crate::agents::store_facts(&sessions.orchestrator, env, &rid, outcome.facts).await;
            TaskOutcome { status: outcome.status, change: outcome.change, changes: outcome.changes, logs: outcome.logs }
        })
    }
}

#[derive(Deserialize)]
struct SessionQuery {
    environment: Uuid,
    #[serde(default)]
    name: Vec<String>,
}

/// `GET /api/v2/agent/session`: the WebSocket an `inmanta agent` process works through.
/// Needs an agent token of the environment (or any caller with `agent.write` there).
pub async fn session(
    State((sessions, security)): State<(Arc<Sessions>, Arc<crate::security::Security>)>,
    headers: axum::http::HeaderMap,
    raw_query: axum::extract::RawQuery,
    upgrade: WebSocketUpgrade,
) -> Response {
    let pairs: Vec<(String, String)> = raw_query
        .0
        .as_deref()
        .map(|q| {
            q.split('&')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), api::url::decode(v)))
                .collect()
        })
        .unwrap_or_default();
    let environment = pairs.iter().find(|(k, _)| k == "environment").and_then(|(_, v)| Uuid::parse_str(v).ok());
    let names: Vec<String> = pairs.iter().filter(|(k, _)| k == "name").map(|(_, v)| v.clone()).collect();
    let Some(environment) = environment else {
        return ApiError::bad_request("the agent session needs ?environment=<id>").into_response();
    };
    if names.is_empty() {
        return ApiError::bad_request("the agent session needs at least one ?name=<agent>").into_response();
    }
    let caller = match security.authenticate(&sessions.orchestrator, &headers).await {
        Ok(caller) => caller,
        Err(e) => return e.into_response(),
    };
    let access = orchestrator::auth::Access::Environment("agent.write", orchestrator::auth::Clients::AGENT);
    let call = orchestrator::auth::policy::Call::new(access, Some(environment));
    if let Err(denied) = sessions.orchestrator.authorize(&caller, &call) {
        return ApiError::new(axum::http::StatusCode::FORBIDDEN, denied.0).into_response();
    }
    if let Err(e) = sessions.orchestrator.get_environment(environment, Default::default()).await {
        return ApiError::from(e).into_response();
    }
    let query = SessionQuery { environment, name: names };
    // A registered token is checked again while the session lasts: revoking it ends the session.
    let jti = match &caller {
        orchestrator::auth::Principal::Token { jti, .. } => jti.clone(),
        _ => None,
    };
    upgrade.on_upgrade(move |socket| serve_session(sessions, query, jti, socket)).into_response()
}

/// How often a session's token is checked against the registry, so a revoked agent token ends
/// its session within about this long (as a revoked token's requests are refused at once).
const TOKEN_RECHECK: Duration = Duration::from_secs(1);

/// Whether the session may go on with this token; a failed check keeps it (the database may be
/// away a moment) and is logged.
async fn token_still_valid(sessions: &Sessions, env: Uuid, jti: &str) -> bool {
    match sessions.orchestrator.check_registration(jti).await {
        Ok(orchestrator::auth::registry::Registration::Active) => true,
        Ok(refused) => {
            tracing::warn!(%env, %jti, ?refused, "the remote agent's token is no longer valid; closing its session");
            false
        }
        Err(e) => {
            tracing::warn!(%env, %jti, error = %e, "cannot check the remote agent's token; keeping its session");
            true
        }
    }
}

async fn serve_session(sessions: Arc<Sessions>, query: SessionQuery, jti: Option<String>, socket: WebSocket) {
    let env = query.environment;
    let (mut sink, mut stream) = socket.split();
    let (outbox, mut outgoing) = mpsc::unbounded_channel::<String>();
    let pending: Pending = Arc::default();
    let session = Session { outbox, pending: pending.clone() };
    for name in &query.name {
        if let Ok(mut live) = sessions.live.lock() {
            live.insert((env, name.clone()), session.clone());
        }
        if let Ok(mut connections) = sessions.connections.lock() {
            *connections.entry((env, name.clone())).or_default() += 1;
        }
        if let Ok(mut remote) = sessions.remote.lock() {
            remote.insert((env, name.clone()));
        }
        if let Err(e) = sessions.orchestrator.mark_remote_agent(env, name, true).await {
            tracing::error!(%env, agent = %name, error = %e, "could not mark the remote agent up");
        }
    }
    tracing::info!(%env, agents = ?query.name, "remote agent connected");
    sessions.arrived.notify_waiters();
    let writer = tokio::spawn(async move {
        while let Some(text) = outgoing.recv().await {
            if sink.send(Message::Text(text.into())).await.is_err() {
                break;
            }
        }
    });
    let mut recheck = tokio::time::interval(TOKEN_RECHECK);
    loop {
        let message = tokio::select! {
            message = stream.next() => message,
            _ = recheck.tick(), if jti.is_some() => {
                match &jti {
                    Some(jti) if !token_still_valid(&sessions, env, jti).await => break,
                    _ => continue,
                }
            }
        };
        let Some(Ok(message)) = message else { break };
        let Message::Text(text) = message else { continue };
        match serde_json::from_str::<Frame>(&text) {
            Ok(Frame::Result { id, outcome }) => {
                if let Some(reply) = pending.lock().ok().and_then(|mut p| p.remove(&id)) {
                    let _ = reply.send(outcome);
                }
            }
            Ok(Frame::Task { .. }) => tracing::warn!(%env, "a remote agent sent a task; ignored"),
            Err(e) => tracing::warn!(%env, error = %e, "a remote agent sent a frame that is not ours"),
        }
    }
    writer.abort();
    for name in &query.name {
        let mine = sessions
            .live
            .lock()
            .map(|mut live| {
                let current = live.get(&(env, name.clone())).is_some_and(|s| Arc::ptr_eq(&s.pending, &pending));
                if current {
                    live.remove(&(env, name.clone()));
                }
                current
            })
            .unwrap_or(false);
        if mine {
            sessions.mark_down_unless_back(env, name.clone());
        }
    }
    // Unanswered tasks are sent again when the agent returns (their senders drop here).
    if let Ok(mut p) = pending.lock() {
        p.clear();
    }
    tracing::info!(%env, agents = ?query.name, "remote agent disconnected");
}
