//! The scheduler: one per environment, inside the server (ARCHITECTURE.md, `orchestrator`).
//!
//! Each environment's scheduler is a single task that owns the state of its resources (intent,
//! dirty, blocked, last run), so no locks are needed. Handler calls go through [`Dispatch`],
//! which the server implements with the agent crate (in-process) or a remote agent session: this
//! crate knows no handler. Results are written to the database in batches, so thousands of
//! deploys cost a few commits; everything that matters after a crash is in the database, and a
//! restarted scheduler rebuilds from it.
//!
//! The parts, each using only those listed before it:
//! - `task`: what goes to agents and comes back, priorities, scopes, the status;
//! - `model`: the resources one scheduler loaded; `queue`: queued and running deploys per agent;
//!   `timers`: interval and cron deploys and repairs;
//! - `writer` (the batches committed beside the loop) and `journal` (what was written down for it);
//! - `lease`: whether this server may hand out work (several servers); `command`: what a
//!   scheduler is asked over its channel;
//! - `env_loop` (the per-environment loop), `deploys` (one deploy and its result), `recovery`
//!   (getting over database faults): one type, `EnvScheduler`, whose methods these three files
//!   share (they call each other);
//! - `registry` (the schedulers of a server), `requests` (deploys forwarded between servers),
//!   `side_runs` (dry runs, fact requests), `ownership` (which server runs which scheduler).

use std::sync::Arc;

use crate::{Orchestrator, Result};

mod command;
mod deploys;
mod env_loop;
mod journal;
mod lease;
mod model;
mod ownership;
mod queue;
mod recovery;
mod registry;
mod requests;
mod side_runs;
mod task;
mod timers;
mod writer;

pub use lease::Lease;
pub use registry::Schedulers;
pub use task::{Dispatch, Priority, SchedulerStatus, Scope, Task, TaskKind, TaskOutcome};

impl Schedulers {
    /// Starts a scheduler for every environment that has released something and is not halted,
    /// and follows the orchestrator's events from then on. With several servers, schedulers
    /// start as this server wins their leases instead.
    pub async fn start(orchestrator: Orchestrator, dispatch: Arc<dyn Dispatch>) -> Result<Arc<Schedulers>> {
        let node = orchestrator.node().cloned();
        if node.is_none() {
            orchestrator.mark_all_agents_down().await?;
        }
        let schedulers = Arc::new(Schedulers::new(orchestrator.clone(), dispatch, node.is_some()));
        let weak: std::sync::Weak<Schedulers> = Arc::downgrade(&schedulers);
        let view: std::sync::Weak<dyn crate::health::SchedulerView> = weak;
        orchestrator.health_monitor().set_schedulers(view);
        schedulers.follow_events();
        match node {
            Some(node) => ownership::start(Arc::downgrade(&schedulers), node),
            None => {
                for env in orchestrator.list_environments().await? {
                    schedulers.start_unless_halted(env.id, env.halted);
                }
            }
        }
        Ok(schedulers)
    }
}
