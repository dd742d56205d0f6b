//! The orchestrator's core, free of HTTP and Leptos.
//!
//! [`Orchestrator`] is the one handle every entry point (REST API, console server functions,
//! CLI commands that work on the database) goes through. Its services take and return plain
//! `api` types; rows of the [`store`] never leave this crate.

pub mod agents;
pub mod auth;
pub mod backup;
pub mod cluster;
pub mod compiles;
mod compliance;
mod desired_state;
pub mod discovered;
pub mod dryrun;
pub mod environment_metrics;
mod environments;
mod error;
mod files;
pub mod health;
mod list_sql;
pub mod metrics;
pub mod migrations;
pub mod notifications;
pub mod paging;
pub mod parameters;
mod projects;
mod reasons;
pub mod resource_pages;
pub mod resources;
pub mod scheduler;
mod settings;
pub mod shared_runs;
mod statistics;
pub mod status;
pub mod store;
pub mod testing;
pub mod validate;
mod versions;

pub use environments::EnvironmentQuery;
pub use error::{Error, Incident, Result};
pub use files::unified_diff;
pub use resources::{ActionOutcome, ActionQuery, StartedAction};
pub use store::{DbKind, Store};
pub use versions::{DESIRED_STATE_VIEW, StoredVersion};

/// Something that happened which other parts react to: the scheduler to a release, the console
/// to anything it shows.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    VersionReleased {
        env: uuid::Uuid,
        version: i64,
    },
    Halted {
        env: uuid::Uuid,
        halted: bool,
    },
    SettingsChanged {
        env: uuid::Uuid,
    },
    /// Resource states changed (a deploy started or finished).
    ResourcesChanged {
        env: uuid::Uuid,
    },
    EnvironmentDeleted {
        env: uuid::Uuid,
    },
    /// A compile was queued, started, went through a stage or finished.
    CompileChanged {
        env: uuid::Uuid,
    },
    /// A dry run was created or a resource of it was reported.
    DryRunChanged {
        env: uuid::Uuid,
    },
    /// A deploy or repair was stored for the server that runs the environment's scheduler.
    SchedulerRequest {
        env: uuid::Uuid,
    },
    /// A task for a remote agent was stored for the server that holds its session.
    AgentTask {
        env: uuid::Uuid,
    },
    /// Events from other servers may have been lost (the listener reconnected): whoever keeps
    /// state from events reads it again.
    Resync,
}

/// Entry point to the orchestrator's operations. Cheap to clone: it shares one database pool.
#[derive(Clone)]
pub struct Orchestrator {
    store: Store,
    events: tokio::sync::broadcast::Sender<Event>,
    compile_wakeup: std::sync::Arc<tokio::sync::Notify>,
    /// When this handle was opened: the server's uptime.
    started: std::time::Instant,
    /// This server's place among several on one PostgreSQL database, once it joined.
    node: std::sync::Arc<std::sync::OnceLock<std::sync::Arc<cluster::Node>>>,
    /// This process among the servers: who holds a lease or a compile claim.
    instance: std::sync::Arc<str>,
    /// What the health checks saw last (`GET /api/v2/health`).
    health: std::sync::Arc<health::Monitor>,
    /// The authorization provider, set once at start ([`Orchestrator::set_authorization`]);
    /// the legacy rules until then.
    authorization: std::sync::Arc<std::sync::OnceLock<auth::policy::Authorization>>,
}

impl Orchestrator {
    /// Connects to the database at `url` (`sqlite://...` or `postgres://...`) and brings its
    /// schema up to date.
    pub async fn open(url: &str) -> Result<Orchestrator> {
        let (events, _) = tokio::sync::broadcast::channel(1024);
        Ok(Orchestrator {
            store: Store::connect(url).await?,
            events,
            compile_wakeup: Default::default(),
            started: std::time::Instant::now(),
            node: Default::default(),
            instance: uuid::Uuid::new_v4().to_string().into(),
            health: Default::default(),
            authorization: Default::default(),
        })
    }

    /// Chooses the authorization provider (`[server] authorization-provider`). Once: a second
    /// call is refused, so no check ever sees two providers.
    pub fn set_authorization(&self, authorization: auth::policy::Authorization) -> Result<()> {
        self.authorization
            .set(authorization)
            .map_err(|_| Error::Conflict("the authorization provider is already chosen".into()))
    }

    /// The authorization provider in use.
    pub fn authorization(&self) -> &auth::policy::Authorization {
        static LEGACY: auth::policy::Authorization = auth::policy::Authorization::Legacy;
        self.authorization.get().unwrap_or(&LEGACY)
    }

    /// The one authorization decision of every entry point (REST routes, GraphQL, the console,
    /// remote agents, metrics): the provider decides whether `principal` may make `call`.
    pub fn authorize(
        &self,
        principal: &auth::Principal,
        call: &auth::policy::Call<'_>,
    ) -> std::result::Result<(), auth::Denied> {
        self.authorization().authorize(principal, call)
    }

    /// Events from now on. A slow receiver misses old events (it is told it lagged).
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    pub(crate) fn publish(&self, event: Event) {
        if let Some(node) = self.node() {
            node.announce(&event);
        }
        self.publish_local(event);
    }

    /// Tells this server's subscribers only (an event another server announced).
    pub(crate) fn publish_local(&self, event: Event) {
        // Nobody listening is fine.
        let _ = self.events.send(event);
    }

    /// The id of this server process: the holder of its leases and compile claims.
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// This server's node when it runs beside others on PostgreSQL; `None` on SQLite and before
    /// [`Orchestrator::join_cluster`].
    pub fn node(&self) -> Option<&std::sync::Arc<cluster::Node>> {
        self.node.get()
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// How long ago the orchestrator was opened (the server's uptime).
    pub fn uptime(&self) -> std::time::Duration {
        self.started.elapsed()
    }
}

/// A resource id read back from the database, where only checked ids are written: one that does
/// not parse is corrupt data, not a bad request.
pub(crate) fn stored_id(text: &str) -> Result<api::ResourceId> {
    api::ResourceId::parse(text).map_err(|e| Error::Corrupt(e.to_string()))
}

/// [`stored_id`] with the version of the row it was read from.
pub(crate) fn stored_version_id(text: &str, version: i64) -> Result<api::ResourceVersionId> {
    Ok(stored_id(text)?.versioned(version as u64))
}
