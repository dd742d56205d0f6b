//! The scheduler's writes, committed beside its loop instead of inside it.
//!
//! A scheduler collects what happened since its last write (resources started, deploys
//! finished, temporary blocks set or cleared) and stores it as one batch. Awaiting that write in
//! its loop left every agent without a new task for as long as the commits took (two fenced
//! transactions, a dozen round trips on PostgreSQL, an fsync each on SQLite): with a batch every
//! 100 ms, a first deploy of 100 000 resources spent much of its time waiting for the database.
//! Now one writer task per scheduler commits the batches in the order they were handed over, one
//! at a time, while the loop keeps dispatching; a batch is handed over only when the writer is
//! idle, so the writes that pile up meanwhile go out as one bigger batch.
//!
//! Fencing is unchanged (docs/ha.md): every transaction still checks the lease's epoch before it
//! commits (`Store::commit_fenced`), and a batch is one transaction, so it lands whole or not at
//! all. When a commit is refused, the writer drops every later batch
//! and [`Writer::lost`] tells the scheduler, which ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use crate::cluster::Fence;
use crate::resources::FinishedAction;
use crate::{Error, Orchestrator};

/// What a scheduler wrote down since its last batch, in the order it must be stored: resources
/// marked deploying before the results that clear the mark.
#[derive(Default)]
pub(crate) struct Batch {
    pub started: Vec<String>,
    pub finished: Vec<FinishedAction>,
    /// (resource id, blocked state as stored).
    pub blocked: Vec<(String, &'static str)>,
}

impl Batch {
    fn is_empty(&self) -> bool {
        self.started.is_empty() && self.finished.is_empty() && self.blocked.is_empty()
    }
}

type Job = (Batch, Option<oneshot::Sender<()>>);

/// The writer task of one scheduler.
pub(crate) struct Writer {
    jobs: mpsc::UnboundedSender<Job>,
    /// Batches handed over and not yet committed (or dropped).
    pending: Arc<AtomicUsize>,
    lost: Arc<AtomicBool>,
}

impl Writer {
    /// Starts the writer of `env`'s scheduler; `fence` is the scheduler's lease, if any.
    pub(crate) fn start(orchestrator: Orchestrator, env: Uuid, fence: Option<Fence>) -> Writer {
        let (jobs, mut queue) = mpsc::unbounded_channel::<Job>();
        let pending = Arc::new(AtomicUsize::new(0));
        let lost = Arc::new(AtomicBool::new(false));
        let (task_pending, task_lost) = (pending.clone(), lost.clone());
        tokio::spawn(async move {
            while let Some((batch, done)) = queue.recv().await {
                if !task_lost.load(Ordering::SeqCst) && !batch.is_empty() {
                    let lease_lost = write(&orchestrator, env, batch, fence.as_ref()).await;
                    if lease_lost {
                        // Nothing of this epoch may land any more; the new owner redeploys what
                        // is unknown.
                        task_lost.store(true, Ordering::SeqCst);
                    }
                }
                task_pending.fetch_sub(1, Ordering::SeqCst);
                if let Some(done) = done {
                    let _ = done.send(());
                }
            }
        });
        Writer { jobs, pending, lost }
    }

    /// No batch is waiting to be stored: the next one can be handed over. While one is being
    /// written the scheduler keeps collecting, so what piles up goes out as one batch.
    pub(crate) fn idle(&self) -> bool {
        self.pending.load(Ordering::SeqCst) == 0
    }

    /// Hands `batch` over without waiting for it to be stored.
    pub(crate) fn hand_over(&self, batch: Batch) {
        if !batch.is_empty() {
            self.send(batch, None);
        }
    }

    /// Hands `batch` over and waits until it and every earlier batch are stored.
    pub(crate) async fn write_and_wait(&self, batch: Batch) {
        if batch.is_empty() && self.pending.load(Ordering::SeqCst) == 0 {
            return;
        }
        let (done, stored) = oneshot::channel();
        self.send(batch, Some(done));
        let _ = stored.await;
    }

    /// A commit was refused because the lease is gone.
    pub(crate) fn lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }

    fn send(&self, batch: Batch, done: Option<oneshot::Sender<()>>) {
        self.pending.fetch_add(1, Ordering::SeqCst);
        if self.jobs.send((batch, done)).is_err() {
            // The writer task is gone (the runtime is shutting down): nothing is pending.
            self.pending.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Stores one batch in one fenced transaction; true when the lease was lost.
async fn write(orchestrator: &Orchestrator, env: Uuid, batch: Batch, fence: Option<&Fence>) -> bool {
    let Batch { started, finished, blocked } = batch;
    match orchestrator.record_scheduler_batch(env, &started, &finished, &blocked, fence).await {
        Ok(()) => false,
        Err(Error::LeaseLost(_)) => true,
        Err(e) => {
            tracing::error!(
                %env, error = %e, started = started.len(), finished = finished.len(), blocked = blocked.len(),
                "could not store the scheduler's writes"
            );
            false
        }
    }
}
