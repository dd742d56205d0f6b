//! The orchestrator's core, free of HTTP and Leptos.
//!
//! [`Orchestrator`] is the one handle every entry point (REST API, console server functions,
//! CLI commands that work on the database) goes through. Its services take and return plain
//! `api` types; rows of the [`store`] never leave this crate.

pub mod agents;
pub mod auth;
pub mod compiles;
mod desired_state;
pub mod dryrun;
mod environments;
mod error;
mod files;
pub mod metrics;
pub mod notifications;
pub mod paging;
pub mod parameters;
mod projects;
pub mod resources;
pub mod scheduler;
mod settings;
pub mod status;
pub mod store;
pub mod testing;
pub mod validate;
mod versions;

pub use environments::EnvironmentQuery;
pub use error::{Error, Result};
pub use files::unified_diff;
pub use resources::{ActionOutcome, ActionQuery};
pub use store::{DbKind, Store};
pub use versions::{DESIRED_STATE_VIEW, StoredVersion};

/// Something that happened which other parts react to: the scheduler to a release, the console
/// to anything it shows.
#[derive(Debug, Clone, PartialEq)]
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
}

/// Entry point to the orchestrator's services. Cheap to clone: it shares one database pool.
#[derive(Clone)]
pub struct Orchestrator {
    store: Store,
    events: tokio::sync::broadcast::Sender<Event>,
    compile_wakeup: std::sync::Arc<tokio::sync::Notify>,
    /// When this handle was opened: the server's uptime.
    started: std::time::Instant,
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
        })
    }

    /// Events from now on. A slow receiver misses old events (it is told it lagged).
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    pub(crate) fn publish(&self, event: Event) {
        // Nobody listening is fine.
        let _ = self.events.send(event);
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// How long ago the orchestrator was opened (the server's uptime).
    pub fn uptime(&self) -> std::time::Duration {
        self.started.elapsed()
    }
}
