//! Planner statistics after bulk writes (PostgreSQL).
//!
//! PostgreSQL plans from statistics that autovacuum refreshes about once a minute. Right after
//! a bulk insert into a new or small table they still say "almost no rows", and the planner
//! picks nested loops that walk the whole table once per row: the diff of two fresh
//! 10 000-resource versions took 19 s instead of 30 ms, and each batch of deploy results scanned
//! every resource of the environment. So after a statement that wrote many rows the table is
//! analyzed at once, in the background (an `ANALYZE` samples at most 30 000 rows, a few hundred
//! milliseconds at any size, and blocks neither readers nor writers). SQLite needs nothing: its
//! planner goes by the indexes.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use crate::store::{DbKind, Store};

/// Fewer new rows than this leave the statistics to autovacuum.
const MANY_ROWS: u64 = 1000;

/// Per (database, table): whether an `ANALYZE` runs, and whether another one is owed after it
/// (rows written while it sampled). Bursts of bulk writes cost one `ANALYZE` at a time.
static RUNNING: LazyLock<Mutex<HashMap<(String, &'static str), bool>>> = LazyLock::new(Default::default);

impl Store {
    /// Called after a statement wrote `rows` rows into `table` (a constant table name).
    pub(crate) fn wrote_rows(&self, table: &'static str, rows: u64) {
        if self.kind() != DbKind::Postgres || rows < MANY_ROWS {
            return;
        }
        let key = (self.url().to_string(), table);
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
