//! Scheduler leases: who runs the scheduler of an environment. A lease is taken only when it is
//! free, expired by the database's clock, or held by a server whose liveness lock is gone; each
//! takeover increments the epoch. The holder renews all its leases in one statement.

use std::collections::HashSet;
use std::time::Duration;

use uuid::Uuid;

use super::{LIVE_SERVERS, Node};
use crate::store::{DbKind, db_now_ms, parse_uuid};
use crate::{Orchestrator, Result};

/// An environment and the lease of its scheduler, as read at one moment.
#[derive(Debug, Clone)]
pub struct EnvLease {
    pub env: Uuid,
    pub halted: bool,
    pub holder: Option<String>,
    pub epoch: i64,
    /// Milliseconds (database clock) when the lease ends.
    pub expires: i64,
}

/// Every environment with its lease, the live servers and the database's clock.
#[derive(Debug, Clone)]
pub struct LeaseView {
    pub environments: Vec<EnvLease>,
    pub live: HashSet<String>,
    pub db_now: i64,
}

impl LeaseView {
    /// Whether `lease` can be taken by server `me`, which runs no scheduler under it: nobody
    /// holds it, it expired, its holder is dead, or the row names `me` itself (a scheduler of
    /// it ended, or a release did not reach the database): taken again under a new epoch.
    pub fn takeable(&self, lease: &EnvLease, me: &str) -> bool {
        match &lease.holder {
            None => true,
            Some(holder) => lease.expires <= self.db_now || !self.live.contains(holder) || holder == me,
        }
    }

    /// How many environments each live server should hold at most, so the load spreads.
    pub fn share(&self) -> usize {
        let servers = self.live.len().max(1);
        self.environments.len().div_ceil(servers)
    }
}

/// environment, halted, holder, epoch, expires
type LeaseRow = (String, i64, Option<String>, Option<i64>, Option<i64>);

/// A lease just taken.
#[derive(Debug, Clone)]
pub struct Grant {
    pub env: Uuid,
    pub epoch: i64,
    /// How long the previous holder's lease still ran when it was taken over (its holder died):
    /// work it had in flight is redeployed only after that.
    pub previous_remaining: Duration,
}

impl Orchestrator {
    pub async fn lease_view(&self) -> Result<LeaseView> {
        let pool = self.store.pool();
        let db_now: i64 =
            sqlx::query_scalar(&format!("SELECT {}", db_now_ms(DbKind::Postgres))).fetch_one(pool).await?;
        let live: HashSet<String> = sqlx::query_scalar(LIVE_SERVERS).fetch_all(pool).await?.into_iter().collect();
        let rows: Vec<LeaseRow> = sqlx::query_as(
            "SELECT e.id, e.halted, l.holder, l.epoch, l.expires FROM environment e \
             LEFT JOIN scheduler_lease l ON l.environment = e.id ORDER BY e.id",
        )
        .fetch_all(pool)
        .await?;
        let environments = rows
            .into_iter()
            .map(|(env, halted, holder, epoch, expires)| {
                Ok(EnvLease {
                    env: parse_uuid(&env)?,
                    halted: halted != 0,
                    holder,
                    epoch: epoch.unwrap_or(0),
                    expires: expires.unwrap_or(0),
                })
            })
            .collect::<Result<_>>()?;
        Ok(LeaseView { environments, live, db_now })
    }

    /// Takes the lease of `env` if it is still takeable (checked again by the database, so two
    /// servers racing for it cannot both win); returns the grant.
    pub async fn take_lease(&self, node: &Node, seen: &EnvLease, view: &LeaseView) -> Result<Option<Grant>> {
        let now = db_now_ms(DbKind::Postgres);
        let epoch: Option<i64> = sqlx::query_scalar(&format!(
            "INSERT INTO scheduler_lease (environment, holder, epoch, acquired, expires) \
             VALUES ($1, $2, 1, {now}, {now} + $3) \
             ON CONFLICT (environment) DO UPDATE SET holder = excluded.holder, epoch = scheduler_lease.epoch + 1, \
             acquired = excluded.acquired, expires = excluded.expires \
             WHERE scheduler_lease.epoch = $4 AND (scheduler_lease.expires <= excluded.acquired \
             OR scheduler_lease.holder = excluded.holder OR scheduler_lease.holder NOT IN ({LIVE_SERVERS})) \
             RETURNING epoch"
        ))
        .bind(seen.env.to_string())
        .bind(node.id.clone())
        .bind(node.lease.as_millis() as i64)
        .bind(seen.epoch)
        .fetch_optional(self.store.pool())
        .await?;
        Ok(epoch.map(|epoch| Grant {
            env: seen.env,
            epoch,
            previous_remaining: Duration::from_millis((seen.expires - view.db_now).max(0) as u64),
        }))
    }

    /// Renews the leases of `envs` this server holds; returns those it still holds (environment,
    /// epoch). Only leases a scheduler here runs under are renewed: a row that names this server
    /// but has no scheduler here (it ended) would otherwise be kept alive with nobody deploying.
    pub async fn renew_leases(&self, node: &Node, envs: &[Uuid]) -> Result<Vec<(Uuid, i64)>> {
        if envs.is_empty() {
            return Ok(vec![]);
        }
        let envs = serde_json::to_string(&envs.iter().map(Uuid::to_string).collect::<Vec<_>>())
            .map_err(|e| crate::Error::Corrupt(e.to_string()))?;
        let rows: Vec<(String, i64)> = sqlx::query_as(&format!(
            "UPDATE scheduler_lease SET expires = {} + $1 WHERE holder = $2 AND environment IN {} \
             RETURNING environment, epoch",
            db_now_ms(DbKind::Postgres),
            crate::store::json_list(DbKind::Postgres, 3)
        ))
        .bind(node.lease.as_millis() as i64)
        .bind(node.id.clone())
        .bind(envs)
        .fetch_all(self.store.pool())
        .await?;
        rows.into_iter().map(|(env, epoch)| Ok((parse_uuid(&env)?, epoch))).collect()
    }

    /// Whether the lease row of `fence` still names its holder and epoch (expired or not):
    /// nobody else took it, so renewing it is enough to write under it again.
    pub async fn lease_is_ours(&self, fence: &super::Fence) -> Result<bool> {
        let held: Option<i64> = sqlx::query_scalar(
            "SELECT epoch FROM scheduler_lease WHERE environment = $1 AND holder = $2 AND epoch = $3",
        )
        .bind(fence.env.to_string())
        .bind(fence.holder.clone())
        .bind(fence.epoch)
        .fetch_optional(self.store.pool())
        .await?;
        Ok(held.is_some())
    }

    /// Gives a lease up at once (a graceful stop or handing load to another server).
    pub async fn release_lease(&self, node: &Node, env: Uuid, epoch: i64) -> Result<()> {
        sqlx::query("UPDATE scheduler_lease SET expires = 0 WHERE environment = $1 AND holder = $2 AND epoch = $3")
            .bind(env.to_string())
            .bind(node.id.clone())
            .bind(epoch)
            .execute(self.store.pool())
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::Orchestrator;
    use crate::cluster::Fence;

    /// A lease row that names this server while no scheduler of it runs here (the scheduler
    /// ended, or a release never reached the database) is taken again under a new epoch, and
    /// is not kept alive by renewals: a lease is never held by nobody.
    #[tokio::test]
    async fn a_lease_of_this_server_on_postgres_without_a_scheduler_is_taken_again_under_a_new_epoch() {
        if test_support::postgres_admin_url().is_none() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let url = crate::testing::fresh_database_url(dir.path()).await.unwrap();
        let o = Orchestrator::open(&url).await.unwrap();
        let node = o.join_cluster(Duration::from_secs(30)).await.unwrap().expect("a node on PostgreSQL");
        let env = crate::testing::new_environment(&o).await.unwrap();
        let lease_of = |view: &super::LeaseView| view.environments.iter().find(|l| l.env == env).unwrap().clone();

        let view = o.lease_view().await.unwrap();
        assert!(view.takeable(&lease_of(&view), &node.id), "nobody holds it");
        let first = o.take_lease(&node, &lease_of(&view), &view).await.unwrap().expect("taken");
        assert_eq!(first.epoch, 1);

        let view = o.lease_view().await.unwrap();
        let held = lease_of(&view);
        assert!(!view.takeable(&held, "another-server"), "held by a live server, not expired");
        assert!(view.takeable(&held, &node.id), "the row names this server: taken again if no scheduler runs here");
        let again = o.take_lease(&node, &held, &view).await.unwrap().expect("taken again");
        assert_eq!(again.epoch, 2, "a new epoch fences off whatever ran under the old one");

        assert!(o.renew_leases(&node, &[]).await.unwrap().is_empty(), "a lease without a scheduler is not renewed");
        assert_eq!(o.renew_leases(&node, &[env]).await.unwrap(), vec![(env, 2)]);
        assert!(o.lease_is_ours(&Fence::new(env, node.id.clone(), 2, node.lease)).await.unwrap());
        assert!(!o.lease_is_ours(&Fence::new(env, node.id.clone(), 1, node.lease)).await.unwrap());
    }
}
