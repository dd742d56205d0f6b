//! Which environments' schedulers this server runs when several servers share one PostgreSQL
//! database (docs/ha.md). A loop, a few times per lease length:
//!
//! 1. keeps the server registered (heartbeat, liveness lock);
//! 2. renews every lease it holds; a lease it lost stops its scheduler, and one it could not
//!    renew in time stops handing out work (the scheduler checks [`Lease::valid`]) before the
//!    lease ends;
//! 3. takes free, expired or orphaned leases (their holder's liveness lock is gone) up to its
//!    share of the environments, and hands over (drains, then releases) what exceeds it;
//! 4. passes deploy requests stored by other servers and newly released versions to its
//!    schedulers, in case a notification was lost.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use uuid::Uuid;

use super::command::Command;
use super::lease::Lease;
use super::registry::Schedulers;
use crate::cluster::lease::Grant;
use crate::cluster::{Fence, Node};

pub(crate) fn start(schedulers: Weak<Schedulers>, node: Arc<Node>) {
    tokio::spawn(async move {
        let tick = (node.lease / 4).max(Duration::from_millis(50));
        // When the ticks started failing: one line when that starts, one when it ends.
        let mut failing_since: Option<Instant> = None;
        loop {
            let Some(s) = schedulers.upgrade() else { return };
            match s.ownership_tick(&node).await {
                Err(e) if failing_since.is_none() => {
                    tracing::warn!(server = %node.id, error = %e, "cannot renew or take scheduler leases; retrying every {tick:?}");
                    failing_since = Some(Instant::now());
                }
                Err(_) => {}
                Ok(()) => {
                    if let Some(since) = failing_since.take() {
                        tracing::info!(server = %node.id, lasted = ?since.elapsed(), "scheduler leases are renewed again");
                    }
                }
            }
            drop(s);
            tokio::time::sleep(tick).await;
        }
    });
}

impl Schedulers {
    async fn ownership_tick(self: &Arc<Self>, node: &Arc<Node>) -> crate::Result<()> {
        let o = self.orchestrator.clone();
        node.heartbeat(&o).await?;
        self.renew(node).await?;
        let view = o.lease_view().await?;
        let share = view.share();
        let mut held = self.owned_count();
        for lease in &view.environments {
            if held >= share {
                break;
            }
            let mine = self.lease(lease.env).is_some();
            if mine || !view.takeable(lease, &node.id) {
                continue;
            }
            if let Some(grant) = o.take_lease(node, lease, &view).await? {
                tracing::info!(env = %grant.env, epoch = grant.epoch, previous = ?lease.holder, "took the scheduler lease");
                self.adopt(node, grant, lease.halted);
                held += 1;
            }
        }
        // More than a fair share while others are alive: hand one environment over per tick.
        if held > share && view.live.len() > 1 {
            self.hand_over_one(node);
        }
        for lease in &view.environments {
            if self.owns(lease.env) {
                self.take_requests(lease.env).await;
            }
        }
        self.catch_up_releases().await;
        Ok(())
    }

    /// (leases held, of those the ones not renewed in time and not being handed over): the
    /// health check's view of the leases.
    pub(crate) fn lease_counts(&self) -> (usize, usize) {
        let Some(owned) = self.owned.as_ref().and_then(|o| o.lock().ok()) else { return (0, 0) };
        let lapsed = owned.values().filter(|l| !l.valid() && !l.is_releasing()).count();
        (owned.len(), lapsed)
    }

    fn owned_count(&self) -> usize {
        self.owned.as_ref().and_then(|o| o.lock().ok().map(|o| o.len())).unwrap_or(0)
    }

    /// Renews the leases; forgets (and stops the schedulers of) those another server took.
    async fn renew(&self, node: &Node) -> crate::Result<()> {
        let sent = Instant::now();
        let envs: Vec<Uuid> =
            self.owned.as_ref().and_then(|o| o.lock().ok().map(|o| o.keys().copied().collect())).unwrap_or_default();
        let renewed: std::collections::HashMap<Uuid, i64> =
            self.orchestrator.renew_leases(node, &envs).await?.into_iter().collect();
        // Stop handing out work a fifth of the lease before it would end unrenewed.
        let valid_until = sent + node.lease - node.lease / 5;
        let mut lost = Vec::new();
        if let Some(owned) = &self.owned
            && let Ok(mut owned) = owned.lock()
        {
            owned.retain(|env, lease| match renewed.get(env) {
                Some(epoch) if *epoch == lease.fence.epoch => {
                    lease.extend(valid_until);
                    true
                }
                _ => {
                    lost.push(*env);
                    false
                }
            });
        }
        for env in lost {
            tracing::warn!(%env, "the scheduler lease was taken by another server: stopping this scheduler");
            self.stop(env);
        }
        Ok(())
    }

    fn adopt(&self, node: &Node, grant: Grant, halted: bool) {
        let now = Instant::now();
        let fence = Fence::new(grant.env, node.id.clone(), grant.epoch, node.lease);
        let lease = Arc::new(Lease::new(fence, now + node.lease - node.lease / 5, now + grant.previous_remaining));
        if let Some(owned) = &self.owned
            && let Ok(mut owned) = owned.lock()
        {
            owned.insert(grant.env, lease);
        }
        // A scheduler of an older epoch of ours cannot write any more: replace it.
        self.stop(grant.env);
        self.start_unless_halted(grant.env, halted);
    }

    /// Drains the scheduler of one environment and releases its lease for another server.
    fn hand_over_one(self: &Arc<Self>, node: &Arc<Node>) {
        let Some(lease) = self
            .owned
            .as_ref()
            .and_then(|o| o.lock().ok().and_then(|o| o.values().find(|l| !l.is_releasing()).cloned()))
        else {
            return;
        };
        lease.set_releasing();
        let (me, node) = (self.clone(), node.clone());
        tokio::spawn(async move {
            let env = lease.fence.env;
            me.drain(env).await;
            if let Some(owned) = &me.owned
                && let Ok(mut owned) = owned.lock()
            {
                owned.remove(&env);
            }
            if let Err(e) = me.orchestrator.release_lease(&node, env, lease.fence.epoch).await {
                tracing::warn!(%env, error = %e, "cannot release a scheduler lease; it will expire");
            }
            tracing::info!(%env, "scheduler handed over to spread the load");
        });
    }

    /// Tells each running scheduler the newest released version: a release announced by another
    /// server whose notification was lost still reaches it.
    async fn catch_up_releases(&self) {
        let rows: Result<Vec<(String, i64)>, sqlx::Error> =
            sqlx::query_as("SELECT environment, MAX(version) FROM version WHERE released = 1 GROUP BY environment")
                .fetch_all(self.orchestrator.store().pool())
                .await;
        for (env, version) in rows.unwrap_or_default() {
            if let Ok(env) = env.parse::<Uuid>()
                && self.owns(env)
            {
                self.send(env, Command::Reload(Some(version)), false);
            }
        }
    }
}
