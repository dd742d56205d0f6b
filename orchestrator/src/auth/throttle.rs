//! Login throttling that an attacker cannot turn against the user (issue 18 point 4), kept in
//! the database so that every server on it counts the same failures (issue 14: guesses spread
//! over several servers behind a load balancer count once).
//!
//! Failed logins are counted with GCRA cells (the algorithm of the `governor` crate), keyed two
//! ways:
//! - per (user name, client address): a few free failures, then growing delays. Three tiers
//!   with longer replenish periods stack up, so the wait grows from seconds to an hour the longer
//!   someone keeps guessing. Only that pair waits: the same user from another address is not
//!   affected, so nobody can lock an account by failing on purpose.
//! - per client address, over all users: a cap on password spraying from one machine. When it is
//!   used up the address is paced to one failure per short period instead of being locked, so
//!   the other users behind a shared address (a NAT, a proxy) still get in after a moment.
//!
//! A cell is one row (`login_throttle`): its theoretical arrival time `tat` on the database's
//! clock. A failure moves it one period on (unless the cell is already full) in one atomic
//! upsert, so concurrent failures on several servers each count. A key must wait while its `tat`
//! lies more than `burst - 1` periods ahead of now: that is what a check reads.

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::Result;
use crate::store::{Store, db_now_ms};

/// Why a login must wait, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Throttled {
    /// This user failed too often from this address.
    User(Duration),
    /// This address failed too often over all users.
    Address(Duration),
}

impl Throttled {
    pub fn wait(self) -> Duration {
        match self {
            Throttled::User(wait) | Throttled::Address(wait) => wait,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThrottleSettings {
    /// Failures a user may make from one address before the first delay.
    pub free_failures: u32,
    /// The first delay; each next tier allows twice the failures and waits ten times longer.
    pub first_delay: Duration,
    /// Failures one address may make over all users before it is paced.
    pub address_failures: u32,
    /// The pace of an address past its cap: one failure per this period.
    pub address_pace: Duration,
}

impl ThrottleSettings {
    /// The defaults for `[server] login-max-failures = free_failures`.
    pub fn for_max_failures(free_failures: u32) -> ThrottleSettings {
        let free_failures = free_failures.max(1);
        ThrottleSettings {
            free_failures,
            first_delay: Duration::from_secs(30),
            address_failures: free_failures.saturating_mul(4),
            address_pace: Duration::from_secs(2),
        }
    }
}

/// One GCRA cell: `burst` failures at once, then one per `period` milliseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Cell {
    subject: String,
    period: i64,
    burst: i64,
}

impl Cell {
    /// How long the key must wait before its next failure is allowed, given its `tat`.
    fn wait(&self, tat: i64, now: i64) -> Option<Duration> {
        let ms = tat - now - (self.burst - 1) * self.period;
        (ms > 0).then(|| Duration::from_millis(ms as u64))
    }
}

pub struct LoginThrottle {
    store: Store,
    settings: ThrottleSettings,
    /// Failures counted by this process, to prune passed cells now and then.
    failures: AtomicU64,
}

impl std::fmt::Debug for LoginThrottle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoginThrottle").field("settings", &self.settings).finish_non_exhaustive()
    }
}

/// The address of callers whose address is unknown (they share one key).
const UNKNOWN: &str = "-";

/// Passed cells are deleted after every this many failures counted by one process.
const PRUNE_EVERY: u64 = 64;

impl LoginThrottle {
    pub fn new(store: Store, settings: &ThrottleSettings) -> LoginThrottle {
        LoginThrottle { store, settings: settings.clone(), failures: AtomicU64::new(0) }
    }

    /// The cells of this user at this address, shortest delay first, and of the address.
    fn cells(&self, username: &str, address: Option<IpAddr>) -> (Vec<Cell>, Cell) {
        let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX).max(1);
        let address = address.map_or_else(|| UNKNOWN.to_string(), |a| a.to_string());
        let user = username.trim().to_lowercase();
        let s = &self.settings;
        let pair = (0..3u32)
            .map(|tier| Cell {
                subject: format!("u{tier}:{address}|{user}"),
                period: ms(s.first_delay.saturating_mul(10u32.pow(tier))),
                burst: i64::from(s.free_failures.max(1).saturating_mul(2u32.pow(tier))),
            })
            .collect();
        let address = Cell {
            subject: format!("a:{address}"),
            period: ms(s.address_pace),
            burst: i64::from(s.address_failures.max(1)),
        };
        (pair, address)
    }

    /// `Err` while this user at this address, or this address, must wait.
    pub async fn check(&self, username: &str, address: Option<IpAddr>) -> Result<std::result::Result<(), Throttled>> {
        // The name becomes part of a key: a valid name keeps it short and free of NUL.
        crate::validate::name("a user name", username)?;
        let (pair, address) = self.cells(username, address);
        let rows: Vec<(String, i64, i64)> = sqlx::query_as(&format!(
            "SELECT subject, tat, {} FROM login_throttle WHERE subject IN ($1, $2, $3, $4)",
            db_now_ms(self.store.kind())
        ))
        .bind(&pair[0].subject)
        .bind(&pair[1].subject)
        .bind(&pair[2].subject)
        .bind(&address.subject)
        .fetch_all(self.store.pool())
        .await?;
        let wait = |cell: &Cell| {
            rows.iter().find(|(subject, ..)| *subject == cell.subject).and_then(|(_, tat, now)| cell.wait(*tat, *now))
        };
        if let Some(wait) = pair.iter().filter_map(wait).max() {
            return Ok(Err(Throttled::User(wait)));
        }
        if let Some(wait) = wait(&address) {
            return Ok(Err(Throttled::Address(wait)));
        }
        Ok(Ok(()))
    }

    /// Counts a failed login; returns how long this user at this address must now wait, if at all.
    pub async fn failed(&self, username: &str, address: Option<IpAddr>) -> Result<Option<Duration>> {
        crate::validate::name("a user name", username)?;
        let (pair, address) = self.cells(username, address);
        let cells: Vec<&Cell> = pair.iter().chain(std::iter::once(&address)).collect();
        let mut tx = self.store.begin_write().await?;
        let now: i64 =
            sqlx::query_scalar(&format!("SELECT {}", db_now_ms(self.store.kind()))).fetch_one(&mut *tx).await?;
        // Every cell in one statement: `tat` moves one period on from max(tat, now) unless that
        // goes past the burst, which a full cell (a failure that got through anyway, e.g. two
        // servers checking at once) leaves as it is.
        let values: Vec<String> = (0..cells.len())
            .map(|i| format!("(${}, $1 + ${}, ${}, ${})", 4 * i + 2, 4 * i + 3, 4 * i + 4, 4 * i + 5))
            .collect();
        let sql = format!(
            "INSERT INTO login_throttle (subject, tat, period, burst) VALUES {} \
             ON CONFLICT (subject) DO UPDATE SET \
             tat = CASE WHEN (CASE WHEN login_throttle.tat > $1 THEN login_throttle.tat ELSE $1 END) \
                    + excluded.period - $1 <= excluded.burst * excluded.period \
               THEN (CASE WHEN login_throttle.tat > $1 THEN login_throttle.tat ELSE $1 END) + excluded.period \
               ELSE login_throttle.tat END, \
             period = excluded.period, burst = excluded.burst \
             RETURNING subject, tat",
            values.join(", ")
        );
        let mut query = sqlx::query_as::<_, (String, i64)>(&sql).bind(now);
        for cell in &cells {
            query = query.bind(&cell.subject).bind(cell.period).bind(cell.period).bind(cell.burst);
        }
        let rows = query.fetch_all(&mut *tx).await?;
        tx.commit().await?;
        if self.failures.fetch_add(1, Ordering::Relaxed) % PRUNE_EVERY == PRUNE_EVERY - 1 {
            self.prune().await?;
        }
        let tat_of = |cell: &Cell| rows.iter().find(|(subject, _)| *subject == cell.subject).map(|(_, tat)| *tat);
        Ok(pair.iter().filter_map(|cell| cell.wait(tat_of(cell)?, now)).max())
    }

    /// Deletes the cells whose arrival time has passed: they count as no failure at all.
    async fn prune(&self) -> Result<()> {
        let mut tx = self.store.begin_write().await?;
        sqlx::query(&format!("DELETE FROM login_throttle WHERE tat < {}", db_now_ms(self.store.kind())))
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> Option<IpAddr> {
        Some(text.parse().unwrap())
    }

    async fn store(dir: &std::path::Path) -> Store {
        Store::connect(&crate::testing::fresh_database_url(dir).await.unwrap()).await.unwrap()
    }

    fn throttle(store: Store) -> LoginThrottle {
        LoginThrottle::new(store, &ThrottleSettings::for_max_failures(3))
    }

    #[tokio::test]
    async fn failures_lock_the_pair_only() {
        let dir = tempfile::tempdir().unwrap();
        let t = throttle(store(dir.path()).await);
        for _ in 0..2 {
            assert_eq!(t.failed("admin", ip("10.0.0.1")).await.unwrap(), None);
        }
        assert!(t.failed("Admin ", ip("10.0.0.1")).await.unwrap().is_some(), "the third failure uses up the free ones");
        assert!(matches!(t.check("admin", ip("10.0.0.1")).await.unwrap(), Err(Throttled::User(_))));
        assert_eq!(t.check("admin", ip("10.0.0.2")).await.unwrap(), Ok(()), "the same user from another address");
        assert_eq!(t.check("bob", ip("10.0.0.1")).await.unwrap(), Ok(()), "another user from the same address");
    }

    #[tokio::test]
    async fn delays_grow_with_the_failures() {
        let dir = tempfile::tempdir().unwrap();
        let t = throttle(store(dir.path()).await);
        let mut waits = Vec::new();
        for _ in 0..12 {
            waits.extend(t.failed("admin", ip("10.0.0.1")).await.unwrap());
        }
        let first = waits[0];
        assert!(first <= Duration::from_secs(30) && first > Duration::from_secs(20), "{first:?}");
        let last = *waits.last().unwrap();
        assert!(last > Duration::from_secs(1800), "after four times the free failures: {last:?}");
        assert!(waits.windows(2).all(|w| w[1] + Duration::from_secs(1) >= w[0]), "never shorter: {waits:?}");
    }

    #[tokio::test]
    async fn an_address_is_paced_not_locked() {
        let dir = tempfile::tempdir().unwrap();
        let t = throttle(store(dir.path()).await);
        // Spraying: one failure for each of many users from one address.
        let mut paced = None;
        for n in 0..12 {
            t.failed(&format!("user{n}"), ip("192.0.2.7")).await.unwrap();
            if let Err(Throttled::Address(wait)) = t.check("carol", ip("192.0.2.7")).await.unwrap() {
                paced = Some(wait);
            }
        }
        let wait = paced.expect("the address cap was reached");
        assert!(wait <= Duration::from_secs(2), "a shared address waits a moment, not minutes: {wait:?}");
        assert_eq!(t.check("carol", ip("192.0.2.8")).await.unwrap(), Ok(()));
    }

    #[tokio::test]
    async fn failures_counted_by_one_process_hold_for_another() {
        // Two throttles on one database stand for two servers behind a load balancer.
        let dir = tempfile::tempdir().unwrap();
        let url = crate::testing::fresh_database_url(dir.path()).await.unwrap();
        let (a, b) = (throttle(Store::connect(&url).await.unwrap()), throttle(Store::connect(&url).await.unwrap()));
        assert_eq!(a.failed("admin", ip("10.0.0.9")).await.unwrap(), None);
        assert_eq!(b.failed("admin", ip("10.0.0.9")).await.unwrap(), None);
        assert!(a.failed("admin", ip("10.0.0.9")).await.unwrap().is_some(), "the third failure over both");
        assert!(matches!(b.check("admin", ip("10.0.0.9")).await.unwrap(), Err(Throttled::User(_))));
    }

    #[tokio::test]
    async fn names_that_are_no_names_are_refused_before_they_become_keys() {
        let dir = tempfile::tempdir().unwrap();
        let t = throttle(store(dir.path()).await);
        for name in ["ad\u{0}min", &"a".repeat(5000)] {
            assert!(matches!(t.check(name, ip("10.0.0.1")).await, Err(crate::Error::BadRequest(_))));
            assert!(matches!(t.failed(name, ip("10.0.0.1")).await, Err(crate::Error::BadRequest(_))));
        }
    }

    #[tokio::test]
    async fn passed_cells_are_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path()).await;
        let t = LoginThrottle::new(
            store.clone(),
            &ThrottleSettings {
                free_failures: 100,
                first_delay: Duration::from_millis(1),
                address_failures: 100,
                address_pace: Duration::from_millis(1),
            },
        );
        for n in 0..PRUNE_EVERY - 1 {
            t.failed(&format!("user{n}"), ip("192.0.2.1")).await.unwrap();
        }
        // Every cell so far has passed (the longest period is 100 ms) when the next failure prunes.
        tokio::time::sleep(Duration::from_millis(300)).await;
        t.failed("last", ip("192.0.2.1")).await.unwrap();
        let left: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM login_throttle").fetch_one(store.pool()).await.unwrap();
        assert!(left <= 4, "passed cells stay: {left}");
    }
}
