//! Planner statistics after bulk writes (PostgreSQL).
//!
//! PostgreSQL plans from statistics that autovacuum refreshes about once a minute. Right after
//! a bulk insert into a new or small table they still say "almost no rows", and the planner
//! picks nested loops that walk the whole table once per row: the diff of two fresh
//! 10 000-resource versions took 19 s instead of 30 ms, and each batch of deploy results scanned
//! every resource of the environment. Worse, a session keeps the plans of its foreign-key checks
//! from its first insert: made while `resource_action` was nearly empty, the check of an action
//! id walked the `(environment, started)` index over every action of the environment, so each
//! deploy result read every earlier action (a first deploy of 100 000 resources slowed to ten
//! results a second) until the table's statistics changed. So a statement that wrote 1 000 rows
//! or more of new values (a version), and writes whose sum passes 1 000, then 10 000, 100 000
//! and so on, have the table analyzed at once, in the background (an `ANALYZE` samples at most
//! 30 000 rows, a few hundred milliseconds at any size, blocks neither readers nor writers, and
//! makes every session plan its statements on the table again). SQLite needs nothing: its
//! planner goes by the indexes.
//!
//! Deploy results and their log lines are appended in batches of up to 1 000 of the same kind
//! of row: only the sums count there. Counting each batch as a bulk write had the three tables
//! analyzed after every batch, which took 72 s of PostgreSQL's time during a first deploy of
//! 100 000 resources, more than all of the deploy's own statements.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use crate::store::{DbKind, Store};

/// A statement writing this many rows has its table analyzed; smaller writes once their sum
/// passes it, then ten times as many, and so on (autovacuum keeps up from there).
const FIRST_ANALYZE: u64 = 1000;

/// A table of a database: (database URL, table name).
type TableKey = (String, &'static str);

/// Per table: whether an `ANALYZE` runs, and whether another one is owed after it (rows
/// written while it sampled). Bursts of bulk writes cost one `ANALYZE` at a time.
static RUNNING: LazyLock<Mutex<HashMap<TableKey, bool>>> = LazyLock::new(Default::default);

/// Per table: rows written by this process, and the sum at which to analyze next.
static WRITTEN: LazyLock<Mutex<HashMap<TableKey, (u64, u64)>>> = LazyLock::new(Default::default);

/// How rows reached a table.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Written {
    /// New values at once (a version's resources or states): a large write is analyzed
    /// whatever the table held before.
    Bulk,
    /// More rows like those already there (deploy results, log lines): only the sums count.
    Appended,
}

impl Store {
    /// Called after statements wrote `rows` rows into `table` (a constant table name).
    pub(crate) fn wrote_rows(&self, table: &'static str, rows: u64, how: Written) {
        if self.kind() != DbKind::Postgres || rows == 0 {
            return;
        }
        let key = (self.url().to_string(), table);
        {
            let mut written = WRITTEN.lock().unwrap_or_else(|e| e.into_inner());
            let (sum, next) = written.entry(key.clone()).or_insert((0, FIRST_ANALYZE));
            *sum += rows;
            // A bulk write (a new version: values the statistics have never seen) is analyzed
            // whatever the sum.
            let bulk = how == Written::Bulk && rows >= FIRST_ANALYZE;
            if !bulk && *sum < *next {
                return;
            }
            while *next <= *sum {
                *next = next.saturating_mul(10);
            }
        }
        {
            let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(owed) = running.get_mut(&key) {
                *owed = true;
                return;
            }
            running.insert(key.clone(), false);
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            RUNNING.lock().unwrap_or_else(|e| e.into_inner()).remove(&key);
            return;
        };
        let pool = self.pool().clone();
        runtime.spawn(async move {
            loop {
                let started = std::time::Instant::now();
                match sqlx::query(&format!("ANALYZE {table}")).execute(&pool).await {
                    Ok(_) => tracing::debug!(table, elapsed_ms = started.elapsed().as_millis() as u64, "analyzed"),
                    // Only the plans suffer; autovacuum will catch up.
                    Err(e) => tracing::warn!(table, error = %e, "refreshing planner statistics failed"),
                }
                let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
                match running.get_mut(&key) {
                    Some(owed) if *owed => *owed = false,
                    _ => {
                        running.remove(&key);
                        return;
                    }
                }
            }
        });
    }
}
