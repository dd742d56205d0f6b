//! Agents: the handler trait, the built-in handlers, the hosts they act on and the drift watcher.
//!
//! The entry point is [`Executor`]: it takes one exported resource ([`ResourceRequest`]), finds the
//! handler for its type, picks the [`Host`] its `via` names (local, ssh, sudo) and returns an
//! [`Outcome`] (status, change kind, attribute changes and log lines).
//! It is synchronous: the scheduler calls it from a blocking thread.
//! It never panics on bad input: handler errors become `failed` with an error log line.
//!
//! What is *not* here: scheduling (ordering along `requires`, events, timers) and the wire to the
//! server.
//! Those live in `orchestrator` and `server`, which call [`Executor::execute`].
//!
//! Modules:
//! - `handler`: the [`Handler`] and [`CrudHandler`] traits and the [`HandlerContext`] they report to;
//! - `handlers/`: `fs::File`, `fs::Directory`, `fs::Symlink`, `exec::Run`, `std::testing::NullResource`;
//! - `host`: the [`Host`] operations handlers need, implemented locally, over ssh and through sudo;
//! - `external`: resource types handled by an executable speaking JSON (docs/handlers.md);
//! - `shipped`: the on-disk cache of the handler executables that versions ship;
//! - `python`: `@provider` handlers of Inmanta modules, run in Python executor processes;
//! - `references`: resolving a resource's references and applying its mutators before its handler
//!   runs, and the [`Secrets`] that redact the resolved values from everything a run reports;
//! - `drift`: the inotify-based [`DriftWatcher`].
//!
//! ```
//! use std::sync::Arc;
//! use agent::{Events, Executor, HandlerStatus, Mode, ResourceRequest};
//!
//! let executor = Executor::new(Arc::new(agent::NoFiles));
//! let req = ResourceRequest::from_json(&serde_json::json!({
//!     "id": "std::testing::NullResource[internal,name=a],v=1",
//!     "name": "a", "agentname": "internal", "fail": false, "purged": false,
//! }))
//! .unwrap();
//! let outcome = executor.execute(&req, Mode::Deploy, &Events::default());
//! assert_eq!(outcome.status, HandlerStatus::Deployed);
//! ```

mod drift;
mod executor;
mod external;
mod handler;
mod handlers;
mod host;
mod python;
mod references;
mod resource;
mod shipped;

pub use api::resource::LogLine;
pub use drift::{DriftWatcher, SuspendGuard, watch_paths};
pub use executor::{Events, Executor, Mode, Outcome, VersionCode};
pub use handler::{
    AttributeChange, Change, CrudHandler, Handler, HandlerContext, HandlerError, HandlerStatus, diff_attributes,
};
pub use host::{
    CommandOutput, CommandSpec, FileKind, FileStat, Host, HostKeyCheck, LocalHost, SshHost, SshOptions, SudoHost,
};
pub use python::{
    ApiRequest, ModuleFile, NoServerApi, PythonCode, PythonExecutors, PythonModule, PythonSettings, ServerApi,
};
pub use references::{
    FactSource, NoFacts, REDACTED, REDACTED_CURRENT, REDACTED_DESIRED, ReferenceError, Secrets, references_need_python,
};
pub use resource::{FileSource, NoFiles, ResourceRequest};
pub use shipped::ShippedHandlers;
