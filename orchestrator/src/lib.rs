//! The orchestrator's core, free of HTTP and Leptos.
//!
//! [`Orchestrator`] is the one handle every entry point (REST API, console server functions,
//! CLI commands that work on the database) goes through. Its services take and return plain
//! `api` types; rows of the [`store`] never leave this crate.

mod desired_state;
mod environments;
mod error;
mod files;
pub mod notifications;
pub mod paging;
pub mod parameters;
mod projects;
pub mod resources;
mod settings;
pub mod store;
pub mod testing;
mod versions;

pub use environments::EnvironmentQuery;
pub use error::{Error, Result};
pub use resources::{ActionOutcome, ActionQuery};
pub use store::{DbKind, Store};
pub use versions::{DESIRED_STATE_VIEW, StoredVersion};

/// Entry point to the orchestrator's services. Cheap to clone: it shares one database pool.
#[derive(Clone)]
pub struct Orchestrator {
    store: Store,
}

impl Orchestrator {
    /// Connects to the database at `url` (`sqlite://...` or `postgres://...`) and brings its
    /// schema up to date.
    pub async fn open(url: &str) -> Result<Orchestrator> {
        Ok(Orchestrator { store: Store::connect(url).await? })
    }

    pub fn store(&self) -> &Store {
        &self.store
    }
}
