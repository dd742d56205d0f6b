//! Several `inmanta server` processes on one PostgreSQL database (docs/ha.md). PostgreSQL is the
//! only coordinator:
//!
//! - every server registers a [`Node`] row and holds a session-level advisory lock for as long as
//!   it lives, on a connection of its own; the others read `pg_locks` to notice its death at once
//!   (a killed process's connection closes and its lock goes with it);
//! - one scheduler per environment, held through a lease row with an epoch ([`lease`]); every
//!   write a scheduler makes is fenced by that epoch ([`Fence`], `Store::commit_fenced`);
//! - events are announced with `NOTIFY` and fed to every server's local bus ([`bus`]).
//!
//! On SQLite there is one server per database file and none of this runs.

pub mod agent_tasks;
pub mod bus;
pub mod lease;

use std::time::Duration;

use sqlx::Connection;
use uuid::Uuid;

use crate::store::{DbKind, db_now_ms, now};
use crate::{Error, Orchestrator, Result};

/// The advisory lock class of server liveness locks (`pg_advisory_lock(LOCK_CLASS, key)`).
pub const LOCK_CLASS: i32 = 1768;

/// The ids of servers that are alive: their advisory lock is held in this database.
pub(crate) const LIVE_SERVERS: &str = "SELECT s.id FROM server_node s WHERE EXISTS (SELECT 1 FROM pg_locks l \
     WHERE l.locktype = 'advisory' AND l.classid = 1768 AND l.objid = CAST(s.lock_key AS oid) \
     AND l.objsubid = 2 AND l.granted \
     AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()))";

/// A scheduler's right to write: the environment, the holder and the epoch it was granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    pub env: Uuid,
    pub holder: String,
    pub epoch: i64,
    /// How long a fenced transaction may sit idle before PostgreSQL ends it (a stalled server
    /// must not block a takeover for long).
    idle_timeout: Duration,
}

impl Fence {
    pub fn new(env: Uuid, holder: String, epoch: i64, lease: Duration) -> Fence {
        Fence { env, holder, epoch, idle_timeout: (lease / 2).max(Duration::from_millis(200)) }
    }

    pub(crate) fn idle_timeout_ms(&self) -> u128 {
        self.idle_timeout.as_millis()
    }
}

/// This server among the others on the database.
pub struct Node {
    pub id: String,
    pub hostname: String,
    lock_key: i64,
    /// How long a scheduler lease lasts without renewal.
    pub lease: Duration,
    /// The connection that holds this server's liveness lock.
    lock: tokio::sync::Mutex<Option<sqlx::PgConnection>>,
    outbox: tokio::sync::mpsc::UnboundedSender<crate::Event>,
}

impl Orchestrator {
    /// Joins the servers sharing this PostgreSQL database: registers this server, takes its
    /// liveness lock and starts relaying events. On SQLite nothing happens (`None`).
    pub async fn join_cluster(&self, lease: Duration) -> Result<Option<std::sync::Arc<Node>>> {
        if self.store.kind() != DbKind::Postgres {
            return Ok(None);
        }
        if let Some(node) = self.node() {
            return Ok(Some(node.clone()));
        }
        let url = self.store.url().to_string();
        let mut conn = sqlx::PgConnection::connect(&url).await?;
        let lock_key = take_liveness_lock(&mut conn).await?;
        let (outbox, inbox) = tokio::sync::mpsc::unbounded_channel();
        let node = std::sync::Arc::new(Node {
            id: self.instance().to_string(),
            hostname: hostname(),
            lock_key,
            lease,
            lock: tokio::sync::Mutex::new(Some(conn)),
            outbox,
        });
        let mut tx = self.store.begin_write().await?;
        // Whoever had this key before is dead: we hold its lock now.
        sqlx::query("DELETE FROM server_node WHERE lock_key = $1").bind(lock_key).execute(&mut *tx).await?;
        sqlx::query(&format!(
            "INSERT INTO server_node (id, hostname, lock_key, started, heartbeat) VALUES ($1, $2, $3, $4, {})",
            db_now_ms(DbKind::Postgres)
        ))
        .bind(node.id.clone())
        .bind(node.hostname.clone())
        .bind(lock_key)
        .bind(now())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        if self.node.set(node.clone()).is_err() {
            return Err(Error::Conflict("this server joined the cluster twice".into()));
        }
        bus::start(self.clone(), node.clone(), inbox, url);
        tracing::info!(server = %node.id, lock_key, "joined the servers on this database");
        Ok(Some(node))
    }

    /// The ids of the servers alive now (this one included when its lock is held).
    pub async fn live_servers(&self) -> Result<Vec<String>> {
        if self.store.kind() != DbKind::Postgres {
            return Ok(self.node().map(|n| vec![n.id.clone()]).unwrap_or_default());
        }
        Ok(sqlx::query_scalar(LIVE_SERVERS).fetch_all(self.store.pool()).await?)
    }

    /// Every registered server with the environments whose scheduler it holds, for the server
    /// status: `(id, hostname, started, alive, environments)`.
    pub async fn cluster_members(&self) -> Result<Vec<Member>> {
        if self.store.kind() != DbKind::Postgres {
            return Ok(Vec::new());
        }
        let pool = self.store.pool();
        let live: std::collections::HashSet<String> = self.live_servers().await?.into_iter().collect();
        let rows: Vec<(String, String, String)> =
            sqlx::query_as("SELECT id, hostname, started FROM server_node ORDER BY started, id")
                .fetch_all(pool)
                .await?;
        let leases: Vec<(String, String)> = sqlx::query_as(&format!(
            "SELECT holder, environment FROM scheduler_lease WHERE expires > {} ORDER BY environment",
            db_now_ms(DbKind::Postgres)
        ))
        .fetch_all(pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(id, hostname, started)| Member {
                alive: live.contains(&id),
                environments: leases.iter().filter(|(h, _)| *h == id).map(|(_, e)| e.clone()).collect(),
                id,
                hostname,
                started,
            })
            .collect())
    }
}

/// A server as the status lists it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Member {
    pub id: String,
    pub hostname: String,
    pub started: String,
    pub alive: bool,
    /// The environments whose scheduler it runs.
    pub environments: Vec<String>,
}

impl Node {
    /// Keeps this server registered: renews its heartbeat, takes its liveness lock again on a
    /// new connection when the old one died, and forgets servers long dead.
    pub async fn heartbeat(&self, o: &Orchestrator) -> Result<()> {
        {
            let mut lock = self.lock.lock().await;
            let alive = match lock.as_mut() {
                Some(conn) => sqlx::query_scalar::<_, i32>("SELECT 1").fetch_one(&mut *conn).await.is_ok(),
                None => false,
            };
            if !alive {
                // Said once when the connection is lost, not at every failed attempt after.
                if lock.take().is_some() {
                    tracing::warn!(server = %self.id, "the liveness lock's connection was lost: taking the lock again");
                }
                let mut conn = sqlx::PgConnection::connect(o.store.url()).await?;
                let taken: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1, $2)")
                    .bind(LOCK_CLASS)
                    .bind(self.lock_key as i32)
                    .fetch_one(&mut conn)
                    .await?;
                if !taken {
                    return Err(Error::Conflict(format!("liveness lock {} is held by another session", self.lock_key)));
                }
                *lock = Some(conn);
                tracing::info!(server = %self.id, "took the liveness lock again");
            }
        }
        let now = db_now_ms(DbKind::Postgres);
        let pool = o.store.pool();
        let updated = sqlx::query(&format!("UPDATE server_node SET heartbeat = {now} WHERE id = $1"))
            .bind(self.id.clone())
            .execute(pool)
            .await?;
        if updated.rows_affected() == 0 {
            sqlx::query(&format!(
                "INSERT INTO server_node (id, hostname, lock_key, started, heartbeat) VALUES ($1, $2, $3, $4, {now})"
            ))
            .bind(self.id.clone())
            .bind(self.hostname.clone())
            .bind(self.lock_key)
            .bind(crate::store::now())
            .execute(pool)
            .await?;
        }
        sqlx::query(&format!(
            "DELETE FROM server_node WHERE heartbeat < {now} - 600000 AND id NOT IN ({LIVE_SERVERS})"
        ))
        .execute(pool)
        .await?;
        Ok(())
    }

    /// Sends `event` to the other servers (after the commit that caused it).
    pub(crate) fn announce(&self, event: &crate::Event) {
        let _ = self.outbox.send(event.clone());
    }
}

/// Takes a free liveness lock key on `conn` and returns it.
async fn take_liveness_lock(conn: &mut sqlx::PgConnection) -> Result<i64> {
    for _ in 0..100 {
        let mut bytes = [0u8; 4];
        getrandom::fill(&mut bytes).map_err(|e| Error::Conflict(format!("no randomness for a lock key: {e}")))?;
        let key = (u32::from_le_bytes(bytes) & 0x7fff_ffff).max(1) as i32;
        let taken: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1, $2)")
            .bind(LOCK_CLASS)
            .bind(key)
            .fetch_one(&mut *conn)
            .await?;
        if taken {
            return Ok(i64::from(key));
        }
    }
    Err(Error::Conflict("no free liveness lock key after 100 tries".into()))
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".into())
}
