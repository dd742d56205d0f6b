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
//! Two bounds keep this from turning into a backlog. A batch is stored in transactions of at
//! most [`ROWS_PER_TRANSACTION`] results, so another writer (a parameter, a new version) waits for
//! one such commit and not for a whole backlog: on SQLite there is one write connection. And the
//! scheduler starts no new handler run while its results not yet stored (handed over, see
//! [`Writer::unsaved`], or collected for the next batch) number [`MAX_UNSAVED`]: results never pile up
//! in memory faster than the database stores them, and what the status says is done is stored
//! soon after. Without them, a repair of 100 000 resources left tens of thousands of results in
//! memory and one transaction of them holding SQLite's write lock for many seconds.
//!
//! On PostgreSQL a batch is written in [`lanes`] transactions at once, each on its own connection:
//! a transaction of results spends most of its time inside PostgreSQL (index maintenance of the
//! state rows, the inserts of actions and log lines), on one of the database's cores, while the
//! others idle. Every write of one resource goes to the same lane, in order (a resource's
//! deploying mark before its result, an older result before a newer one), and a batch's lanes
//! are all stored before the next batch starts, so what a resource's row says last is what
//! happened to it last. SQLite has one write connection: one lane.
//!
//! Fencing is unchanged (docs/ha.md): every transaction still checks the lease's epoch before it
//! commits (`Store::commit_fenced`). When a commit is refused because another server took the
//! lease, the writer drops the rest of the batch and every later batch, and [`Writer::lost`]
//! tells the scheduler, which ends. A lease that merely expired while the database was away and
//! still names this server and epoch is not lost: the writer waits for the lease loop to renew
//! it and commits then.
//!
//! No result is dropped because the database failed. A commit that fails for a reason that
//! passes (a cut connection, a stopped database, a deadlock, a full disk, an I/O error) is tried
//! again, with a pause growing to two seconds, for as long as it takes; meanwhile the scheduler
//! keeps what it could not store and starts no new handler run once [`MAX_UNSAVED`] results
//! wait. The fault is logged once when it starts and once when it ends, and shown by the health
//! check (crate::health). A failure no retry can get past (the database refuses the rows
//! themselves) ends with the batch dropped and [`Writer::dropped`] set: the scheduler then
//! reloads its state from the database and deploys again whatever the database does not show
//! as done, so nothing is lost either way.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{Notify, mpsc, oneshot};
use uuid::Uuid;

use api::state::Blocked;

use crate::cluster::Fence;
use crate::health::fault_text;
use crate::resources::{FinishedAction, StartedAction};
use crate::{Error, Orchestrator};

/// What a scheduler wrote down since its last batch, in the order it must be stored: resources
/// marked deploying before the results that clear the mark.
#[derive(Default)]
pub(crate) struct Batch {
    /// Actions of deploys that start once this batch is stored.
    pub announced: Vec<StartedAction>,
    pub started: Vec<String>,
    pub finished: Vec<FinishedAction>,
    pub blocked: Vec<(String, Blocked)>,
}

/// Results stored in one transaction at most.
pub(crate) const ROWS_PER_TRANSACTION: usize = 1_000;

/// Results the scheduler may hold unsaved before it stops starting handler runs.
pub(crate) const MAX_UNSAVED: usize = 4 * ROWS_PER_TRANSACTION;

/// Transactions a writer has running at once on PostgreSQL. Two: on a two-core machine a third
/// adds nothing, and the other write connections (crate::store's pool of four) stay free for
/// parameters, versions and the lease.
const POSTGRES_LANES: usize = 2;

/// How many transactions of one batch are written at once on a database of this kind.
fn lanes(kind: crate::DbKind) -> usize {
    match kind {
        crate::DbKind::Postgres => POSTGRES_LANES,
        crate::DbKind::Sqlite => 1,
    }
}

impl Batch {
    fn is_empty(&self) -> bool {
        self.announced.is_empty() && self.started.is_empty() && self.finished.is_empty() && self.blocked.is_empty()
    }

    /// Splits the batch into `lanes` batches by resource: every write of a resource lands in the
    /// same lane, in the order it had here. An action is routed by its first resource (a deploy
    /// has exactly one).
    fn into_lanes(self, lanes: usize) -> Vec<Batch> {
        if lanes <= 1 {
            return vec![self];
        }
        let lane_of = |rid: &str| {
            use std::hash::{Hash, Hasher};
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            rid.hash(&mut hasher);
            (hasher.finish() % lanes as u64) as usize
        };
        let mut out: Vec<Batch> = (0..lanes).map(|_| Batch::default()).collect();
        for action in self.announced {
            out[lane_of(&action.resource_id.to_string())].announced.push(action);
        }
        for rid in self.started {
            out[lane_of(&rid)].started.push(rid);
        }
        for done in self.finished {
            let lane = done.resource_ids.first().map(|id| lane_of(&id.to_string())).unwrap_or(0);
            out[lane].finished.push(done);
        }
        for (rid, blocked) in self.blocked {
            out[lane_of(&rid)].blocked.push((rid, blocked));
        }
        out.retain(|lane| !lane.is_empty());
        out
    }

    /// Splits the batch into transactions of at most [`ROWS_PER_TRANSACTION`] results, in
    /// order: the deploying marks go with the first, the block changes with the last.
    fn into_transactions(self) -> Vec<Batch> {
        let Batch { announced, mut started, mut finished, blocked } = self;
        // A resource whose result is in this batch needs no deploying mark: the result clears
        // it anyway. While the database is the bottleneck most of a batch's starts have
        // finished by the time it is written, and marking them cost a third of the writes.
        if !started.is_empty() && !finished.is_empty() {
            let done: std::collections::HashSet<String> =
                finished.iter().flat_map(|f| f.resource_ids.iter().map(|id| id.to_string())).collect();
            started.retain(|rid| !done.contains(rid));
        }
        let mut parts = vec![];
        let mut started = Some(started);
        let mut announced = Some(announced);
        loop {
            let rest = finished.split_off(finished.len().min(ROWS_PER_TRANSACTION));
            let last = rest.is_empty();
            parts.push(Batch {
                announced: announced.take().unwrap_or_default(),
                started: started.take().unwrap_or_default(),
                finished,
                blocked: if last { blocked.clone() } else { vec![] },
            });
            if last {
                return parts;
            }
            finished = rest;
        }
    }
}

type Job = (Batch, Option<oneshot::Sender<()>>);

/// The writer task of one scheduler.
pub(crate) struct Writer {
    jobs: mpsc::UnboundedSender<Job>,
    /// Batches handed over so far.
    sent: AtomicU64,
    /// Batches done (stored, or given up) so far, in the order they were handed over.
    done: Arc<AtomicU64>,
    /// Batches handed over and not yet committed (or dropped).
    pending: Arc<AtomicUsize>,
    /// Results handed over and not yet committed (or dropped).
    unsaved: Arc<AtomicUsize>,
    /// Signalled each time a transaction of results is stored, and when a batch is done.
    stored: Arc<Notify>,
    lost: Arc<AtomicBool>,
    /// How the writes fare: a fault that lasts, batches given up.
    health: Arc<WriteHealth>,
}

/// The state of one writer's commits, shared by its lanes.
#[derive(Default)]
struct WriteHealth {
    /// A batch could not be stored and was dropped: the scheduler must reload from the database.
    dropped: AtomicBool,
    /// Set when the scheduler is gone: retries give up.
    abandoned: AtomicBool,
    /// Faults that ended (the writes were stored again) since the writer started.
    recoveries: AtomicU64,
    /// Lanes retrying now, and when the current fault began.
    failing: Mutex<(usize, Option<std::time::Instant>)>,
    /// When the last fault began (kept after it ended, for [`Writer::last_fault_began`]).
    last_fault: Mutex<Option<std::time::Instant>>,
}

impl WriteHealth {
    /// A lane starts retrying: the first one logs the fault and tells the health check (what to
    /// look at, not the database's own text).
    fn began(&self, orchestrator: &Orchestrator, env: Uuid, error: &str, fault: String) {
        let mut failing = self.failing.lock().unwrap_or_else(|e| e.into_inner());
        failing.0 += 1;
        if failing.0 == 1 {
            let now = std::time::Instant::now();
            failing.1 = Some(now);
            *self.last_fault.lock().unwrap_or_else(|e| e.into_inner()) = Some(now);
            tracing::error!(
                %env, error, "cannot store the scheduler's writes; keeping them and retrying until the database takes them"
            );
        }
        orchestrator.health_monitor().write_fault(env, Some(fault));
    }

    /// A lane that was retrying is done (stored, or gave up).
    fn ended(&self, orchestrator: &Orchestrator, env: Uuid, stored: bool) {
        let mut failing = self.failing.lock().unwrap_or_else(|e| e.into_inner());
        failing.0 = failing.0.saturating_sub(1);
        if failing.0 == 0 {
            let lasted = failing.1.take().map(|at| at.elapsed()).unwrap_or_default();
            if stored {
                self.recoveries.fetch_add(1, Ordering::SeqCst);
                tracing::info!(%env, lasted = ?lasted, "the scheduler's writes are stored again");
            }
            orchestrator.health_monitor().write_fault(env, None);
        }
    }
}

/// How a batch's write ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WriteEnd {
    Stored,
    /// Another server holds the lease now: nothing of this epoch may land.
    LeaseLost,
    /// Given up: the scheduler reloads from the database.
    Dropped,
}

impl Writer {
    /// Starts the writer of `env`'s scheduler; `fence` is the scheduler's lease, if any.
    pub(crate) fn start(orchestrator: Orchestrator, env: Uuid, fence: Option<Fence>) -> Writer {
        let (jobs, mut queue) = mpsc::unbounded_channel::<Job>();
        let pending = Arc::new(AtomicUsize::new(0));
        let unsaved = Arc::new(AtomicUsize::new(0));
        let stored = Arc::new(Notify::new());
        let lost = Arc::new(AtomicBool::new(false));
        let health = Arc::new(WriteHealth::default());
        let done_batches = Arc::new(AtomicU64::new(0));
        let task_done = done_batches.clone();
        let (task_pending, task_unsaved, task_stored, task_lost, task_health) =
            (pending.clone(), unsaved.clone(), stored.clone(), lost.clone(), health.clone());
        let lanes = lanes(orchestrator.store().kind());
        tokio::spawn(async move {
            while let Some((batch, done)) = queue.recv().await {
                // The lanes of a batch run side by side, the transactions of a lane one after
                // the other; the next batch waits for all of them.
                let mut lane_writes = tokio::task::JoinSet::new();
                for lane in batch.into_lanes(lanes) {
                    let (orchestrator, fence) = (orchestrator.clone(), fence.clone());
                    let (unsaved, stored, lost) = (task_unsaved.clone(), task_stored.clone(), task_lost.clone());
                    let health = task_health.clone();
                    lane_writes.spawn(async move {
                        for part in lane.into_transactions() {
                            let results = part.finished.len();
                            // After a drop the scheduler reloads from the database: what it wrote
                            // down meanwhile is re-derived there, not stored out of order here.
                            let skip = lost.load(Ordering::SeqCst) || health.dropped.load(Ordering::SeqCst);
                            if !skip && !part.is_empty() {
                                match write(&orchestrator, env, part, fence.as_ref(), &health).await {
                                    WriteEnd::Stored => {}
                                    // Nothing of this epoch may land any more; the new owner
                                    // redeploys what is unknown.
                                    WriteEnd::LeaseLost => lost.store(true, Ordering::SeqCst),
                                    WriteEnd::Dropped => health.dropped.store(true, Ordering::SeqCst),
                                }
                            }
                            unsaved.fetch_sub(results, Ordering::SeqCst);
                            stored.notify_one();
                        }
                    });
                }
                while lane_writes.join_next().await.is_some() {}
                task_done.fetch_add(1, Ordering::SeqCst);
                task_pending.fetch_sub(1, Ordering::SeqCst);
                task_stored.notify_one();
                if let Some(done) = done {
                    let _ = done.send(());
                }
            }
        });
        Writer { jobs, sent: AtomicU64::new(0), done: done_batches, pending, unsaved, stored, lost, health }
    }

    /// How many batches were handed over.
    pub(crate) fn batches_sent(&self) -> u64 {
        self.sent.load(Ordering::SeqCst)
    }

    /// How many of them are done: stored, unless [`Writer::dropped`] or [`Writer::lost`] says
    /// otherwise.
    pub(crate) fn batches_done(&self) -> u64 {
        self.done.load(Ordering::SeqCst)
    }

    /// A batch was given up: the scheduler must reload its state from the database.
    pub(crate) fn dropped(&self) -> bool {
        self.health.dropped.load(Ordering::SeqCst)
    }

    /// How many write faults ended with the writes stored again; the scheduler compares it with
    /// the count it saw last to retry what failed during the fault.
    pub(crate) fn recoveries(&self) -> u64 {
        self.health.recoveries.load(Ordering::SeqCst)
    }

    /// When the latest write fault began.
    pub(crate) fn last_fault_began(&self) -> Option<std::time::Instant> {
        *self.health.last_fault.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The scheduler is gone: batches still being retried are given up (the next scheduler reads
    /// the database and redeploys what is not stored).
    pub(crate) fn abandon(&self) {
        self.health.abandoned.store(true, Ordering::SeqCst);
    }

    /// Results handed over and not yet stored.
    pub(crate) fn unsaved(&self) -> usize {
        self.unsaved.load(Ordering::SeqCst)
    }

    /// Signalled each time a transaction of results is stored and when a batch is done (a
    /// permit waits when nobody is waiting).
    pub(crate) fn stored_signal(&self) -> Arc<Notify> {
        self.stored.clone()
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
        let results = batch.finished.len();
        self.pending.fetch_add(1, Ordering::SeqCst);
        self.unsaved.fetch_add(results, Ordering::SeqCst);
        self.sent.fetch_add(1, Ordering::SeqCst);
        if self.jobs.send((batch, done)).is_err() {
            // The writer task is gone (the runtime is shutting down): nothing is pending.
            self.pending.fetch_sub(1, Ordering::SeqCst);
            self.unsaved.fetch_sub(results, Ordering::SeqCst);
        }
    }
}

/// Failures that no retry is known to get past (the database refused the rows themselves) are
/// tried this many times before the batch is dropped and the scheduler reloads.
const ATTEMPTS_ON_UNKNOWN_ERRORS: u32 = 3;

/// The longest pause between two attempts while the database fails.
const MAX_PAUSE: Duration = Duration::from_secs(2);

/// Stores one batch in one fenced transaction, trying again until it is stored (see the module
/// comment), the lease is lost, or the failure is one no retry gets past.
///
/// The scheduler already counts these results as done and would not run the resources again,
/// so a batch dropped here would leave them unknown to the database. When the connection was
/// lost during the commit, the commit may have landed: the retry then finds its actions stored
/// (a unique violation on their ids) and stops there.
async fn write(
    orchestrator: &Orchestrator,
    env: Uuid,
    batch: Batch,
    fence: Option<&Fence>,
    health: &WriteHealth,
) -> WriteEnd {
    let Batch { announced, started, finished, blocked } = batch;
    let mut pause = Duration::from_millis(50);
    let mut retried = false;
    let mut failing = false;
    let mut unknown_errors = 0;
    let end = |failing: bool, end: WriteEnd| {
        if failing {
            health.ended(orchestrator, env, end == WriteEnd::Stored);
        }
        end
    };
    loop {
        let (error, fault) = match orchestrator
            .record_scheduler_writes(env, &announced, &started, &finished, &blocked, fence)
            .await
        {
            Ok(()) => return end(failing, WriteEnd::Stored),
            Err(Error::LeaseLost(_)) => {
                let Some(fence) = fence else { return end(failing, WriteEnd::LeaseLost) };
                match orchestrator.lease_is_ours(fence).await {
                    Ok(false) => return end(failing, WriteEnd::LeaseLost),
                    // Expired while the database was away, and nobody took it: the lease loop
                    // renews it, then this commits.
                    Ok(true) => {
                        let text = "the scheduler lease expired; waiting for this server to renew it".to_string();
                        (text.clone(), text)
                    }
                    Err(e) => (e.to_string(), fault_text(&e)),
                }
            }
            Err(e) if retried && e.is_unique_violation() => {
                tracing::info!(%env, "the scheduler's writes were stored by an attempt whose connection was lost");
                return end(failing, WriteEnd::Stored);
            }
            Err(e) if e.is_transient() => (e.to_string(), fault_text(&e)),
            Err(e) => {
                unknown_errors += 1;
                if unknown_errors >= ATTEMPTS_ON_UNKNOWN_ERRORS {
                    tracing::error!(
                        %env, error = %e, started = started.len(), finished = finished.len(), blocked = blocked.len(),
                        "the database refuses the scheduler's writes: the scheduler reloads its state from the database"
                    );
                    return end(failing, WriteEnd::Dropped);
                }
                (e.to_string(), fault_text(&e))
            }
        };
        if health.abandoned.load(Ordering::SeqCst) {
            tracing::warn!(%env, error, "the scheduler stopped while its writes failed; the next one redeploys them");
            return end(failing, WriteEnd::Dropped);
        }
        if !failing {
            failing = true;
            health.began(orchestrator, env, &error, fault);
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(MAX_PAUSE);
        retried = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::ActionOutcome;
    use tokio::time::Instant;

    fn finished(n: usize) -> Vec<FinishedAction> {
        (0..n)
            .map(|i| FinishedAction {
                action_id: Uuid::new_v4(),
                version: i as i64,
                action: api::ActionKind::Deploy,
                started: api::Timestamp::now(),
                resource_ids: vec![],
                outcome: ActionOutcome {
                    status: api::HandlerStatus::Deployed,
                    messages: vec![],
                    changes: None,
                    change: None,
                    send_event: None,
                },
            })
            .collect()
    }

    #[test]
    fn a_batch_is_stored_in_transactions_of_bounded_size_in_order() {
        let batch = Batch {
            announced: vec![],
            started: vec!["a".into(), "b".into()],
            finished: finished(2 * ROWS_PER_TRANSACTION + 500),
            blocked: vec![("c".into(), Blocked::TemporarilyBlocked)],
        };
        let parts = batch.into_transactions();
        let sizes: Vec<usize> = parts.iter().map(|p| p.finished.len()).collect();
        assert_eq!(sizes, [ROWS_PER_TRANSACTION, ROWS_PER_TRANSACTION, 500]);
        let versions: Vec<i64> = parts.iter().flat_map(|p| p.finished.iter().map(|f| f.version)).collect();
        assert_eq!(versions, (0..(2 * ROWS_PER_TRANSACTION + 500) as i64).collect::<Vec<_>>());
        assert_eq!(parts[0].started, ["a", "b"]);
        assert!(parts[1..].iter().all(|p| p.started.is_empty()));
        assert!(parts[..2].iter().all(|p| p.blocked.is_empty()));
        assert_eq!(parts[2].blocked, [("c".to_string(), Blocked::TemporarilyBlocked)]);
    }

    #[test]
    fn a_resource_that_finished_in_the_same_batch_is_not_marked_deploying() {
        let id = |name: &str| api::ResourceId::parse(&format!("std::testing::NullResource[a,name={name}]")).unwrap();
        let mut done = finished(1);
        done[0].resource_ids = vec![id("x")];
        let batch = Batch {
            announced: vec![],
            started: vec![id("x").to_string(), id("y").to_string()],
            finished: done,
            blocked: vec![],
        };
        let parts = batch.into_transactions();
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].started, [id("y").to_string()], "x's result clears the mark: only y is still deploying");
        assert_eq!(parts[0].finished.len(), 1);
    }

    /// Lanes split a batch by resource: nothing is lost, each resource's writes stay in one lane
    /// in their order, and the resources spread over the lanes.
    #[test]
    fn a_resource_keeps_its_writes_in_one_lane_in_order() {
        let id = |i: usize| api::ResourceId::parse(&format!("std::testing::NullResource[a,name=n{i}]")).unwrap();
        let mut done = finished(400);
        for (i, action) in done.iter_mut().enumerate() {
            // Each resource finishes twice: an older result (version < 200), then a newer one.
            action.resource_ids = vec![id(i % 200)];
        }
        let batch = Batch {
            announced: vec![],
            started: (0..200).map(|i| id(i).to_string()).collect(),
            finished: done,
            blocked: (0..200).map(|i| (id(i).to_string(), Blocked::TemporarilyBlocked)).collect(),
        };
        let lanes = batch.into_lanes(2);
        assert_eq!(lanes.len(), 2, "200 resources over two lanes leave neither empty");
        let total: usize = lanes.iter().map(|l| l.finished.len()).sum();
        assert_eq!(total, 400);
        assert_eq!(lanes.iter().map(|l| l.started.len() + l.blocked.len()).sum::<usize>(), 400);
        for (n, lane) in lanes.iter().enumerate() {
            let other = &lanes[1 - n];
            for action in &lane.finished {
                let rid = action.resource_ids[0].to_string();
                assert!(other.finished.iter().all(|a| a.resource_ids[0].to_string() != rid), "{rid} in both lanes");
                assert!(lane.started.contains(&rid) && !other.started.contains(&rid));
                assert!(lane.blocked.iter().any(|(r, _)| *r == rid));
            }
            let mut seen: std::collections::HashMap<String, i64> = Default::default();
            for action in &lane.finished {
                let previous = seen.insert(action.resource_ids[0].to_string(), action.version);
                assert!(previous.is_none_or(|v| v < action.version), "a resource's results out of order");
            }
        }
    }

    #[test]
    fn one_lane_is_the_batch_itself() {
        let batch = Batch { announced: vec![], started: vec!["a".into()], finished: finished(3), blocked: vec![] };
        let lanes = batch.into_lanes(1);
        assert_eq!(lanes.len(), 1);
        assert_eq!(lanes[0].finished.iter().map(|f| f.version).collect::<Vec<_>>(), [0, 1, 2]);
    }

    /// The connection of a scheduler's write is cut in the middle of its transaction (what a
    /// database failover or `pg_terminate_backend` does): the batch is stored anyway.
    #[tokio::test]
    async fn a_batch_whose_connection_is_cut_on_postgres_is_stored_by_a_retry() {
        use sqlx::Connection;
        if test_support::postgres_admin_url().is_none() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let url = crate::testing::fresh_database_url(dir.path()).await.unwrap();
        let o = Orchestrator::open(&url).await.unwrap();
        let env = crate::testing::new_environment(&o).await.unwrap();
        let (rid, _) = crate::testing::store_one_null_resource(&o, env).await.unwrap();
        // auto_deploy is on by default: the version is released.

        // Another session holds the table, so the write waits inside its transaction...
        let mut locker = sqlx::AnyConnection::connect(&url).await.unwrap();
        sqlx::query("BEGIN").execute(&mut locker).await.unwrap();
        sqlx::query("LOCK TABLE resource_persistent_state IN ACCESS EXCLUSIVE MODE")
            .execute(&mut locker)
            .await
            .unwrap();
        let batch = Batch { announced: vec![], started: vec![rid.to_string()], finished: vec![], blocked: vec![] };
        let writing = tokio::spawn({
            let o = o.clone();
            async move { write(&o, env, batch, None, &WriteHealth::default()).await }
        });
        // ...where its connection is cut.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let cut: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()) t",
            )
            .fetch_one(&mut locker)
            .await
            .unwrap();
            if cut > 0 {
                break;
            }
            assert!(Instant::now() < deadline, "the write never waited for the lock");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        sqlx::query("COMMIT").execute(&mut locker).await.unwrap();

        let end = tokio::time::timeout(Duration::from_secs(30), writing).await.unwrap().unwrap();
        assert_eq!(end, WriteEnd::Stored);
        let deploying: i64 = sqlx::query_scalar(
            "SELECT is_deploying FROM resource_persistent_state WHERE environment = $1 AND resource_id = $2",
        )
        .bind(env.to_string())
        .bind(rid)
        .fetch_one(o.store().pool())
        .await
        .unwrap();
        assert_eq!(deploying, 1, "the write lost with its connection was not made again");
    }

    /// The database is full (SQLite capped at its current size: "database or disk is full"):
    /// the batch is neither stored nor dropped, the health check says why, and once there is
    /// room it is stored, all of it, without anyone asking.
    #[tokio::test]
    async fn a_batch_is_kept_while_the_database_is_full_and_stored_once_there_is_room() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("full.db").display());
        let o = Orchestrator::open(&url).await.unwrap();
        let env = crate::testing::new_environment(&o).await.unwrap();
        let (rid, version) = crate::testing::store_one_null_resource(&o, env).await.unwrap();
        let writer = o.store().writer_pool();
        let pages: i64 = sqlx::query_scalar("PRAGMA page_count").fetch_one(writer).await.unwrap();
        sqlx::query(&format!("PRAGMA max_page_count = {}", pages + 2)).execute(writer).await.unwrap();

        // 200 results with 8 KiB of log each: far more than two pages.
        let mut results = finished(200);
        for action in &mut results {
            action.version = version;
            action.resource_ids = vec![api::ResourceId::parse(rid).unwrap()];
            action.outcome.messages = vec![api::resource::LogLine {
                level: "INFO".into(),
                msg: "x".repeat(8 * 1024),
                args: vec![],
                kwargs: Default::default(),
                timestamp: api::Timestamp::now(),
            }];
        }
        let health = Arc::new(WriteHealth::default());
        let batch = Batch { announced: vec![], started: vec![], finished: results, blocked: vec![] };
        let writing = tokio::spawn({
            let (o, health) = (o.clone(), health.clone());
            async move { write(&o, env, batch, None, &health).await }
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        while o.health_monitor().write_faults().is_empty() {
            assert!(!writing.is_finished(), "the write ended although the database is full");
            assert!(Instant::now() < deadline, "the full database was never reported");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let fault = o.health_monitor().write_faults().remove(&env).expect("this environment's fault");
        assert!(fault.contains("disk is full"), "{fault}");
        assert!(!fault.contains("code: 13"), "the database's own text reaches the health check: {fault}");
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert!(!writing.is_finished(), "the batch was given up while the database is full");

        sqlx::query("PRAGMA max_page_count = 1073741823").execute(writer).await.unwrap();
        let end = tokio::time::timeout(Duration::from_secs(30), writing).await.unwrap().unwrap();
        assert_eq!(end, WriteEnd::Stored);
        let stored: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM resource_action WHERE environment = $1 AND action = $2")
                .bind(env.to_string())
                .bind(api::ActionKind::Deploy.as_str())
                .fetch_one(o.store().pool())
                .await
                .unwrap();
        assert_eq!(stored, 200, "every result of the batch is stored");
        assert!(o.health_monitor().write_faults().is_empty(), "the fault ended");
        assert_eq!(health.recoveries.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_batch_without_results_is_one_transaction() {
        let batch = Batch {
            announced: vec![],
            started: vec!["a".into()],
            finished: vec![],
            blocked: vec![("b".into(), Blocked::NotBlocked)],
        };
        let parts = batch.into_transactions();
        assert_eq!(parts.len(), 1);
        assert_eq!((parts[0].started.len(), parts[0].blocked.len()), (1, 1));
    }
}
