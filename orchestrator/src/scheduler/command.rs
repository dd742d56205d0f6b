//! What the registry asks of one environment's scheduler, over its channel.

use tokio::sync::oneshot;

use super::task::{SchedulerStatus, Scope};

/// What the registry asks of one environment's scheduler.
pub(crate) enum Command {
    /// A version was released (its number when known): read it unless already read.
    Reload(Option<i64>),
    Settings,
    Halt(bool),
    Deploy {
        repair: bool,
        scope: Scope,
        reply: oneshot::Sender<Vec<String>>,
    },
    /// Every resource of this released version through its handler (read once it is loaded),
    /// but those that ran for their current intent since it was loaded.
    RepairVersion {
        version: i64,
        reply: oneshot::Sender<Vec<String>>,
    },
    Status(oneshot::Sender<SchedulerStatus>),
    WaitIdle(oneshot::Sender<()>),
    /// Dispatch nothing more, finish what runs, store it and stop (the lease is handed on).
    Drain(oneshot::Sender<()>),
    Stop,
}
