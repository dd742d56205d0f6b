use thiserror::Error;

/// What went wrong in a service call. Each variant maps to one HTTP status at the API edge.
#[derive(Debug, Error)]
pub enum Error {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// A scheduler write was refused: this server no longer holds the environment's lease
    /// (another server took it over, or it could not renew in time).
    #[error("this server no longer runs the scheduler of environment {0}: its lease was lost")]
    LeaseLost(uuid::Uuid),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The database failed in a way that a later attempt of the same transaction can get past:
    /// the connection was lost or the server ended it (a failover, an administrator, a restart),
    /// the pool had no connection in time, or the database gave up on a transaction because of
    /// a concurrent one (a deadlock, a serialization failure, SQLite's busy or locked). Nothing
    /// of the failed transaction was applied, unless the connection was lost during its commit.
    pub fn is_transient(&self) -> bool {
        let Error::Database(e) = self else { return false };
        match e {
            sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::Protocol(_) => true,
            sqlx::Error::Database(db) => db.code().is_some_and(|code| transient_code(&code)),
            _ => false,
        }
    }

    /// The database could not be reached: the connection to it failed or none could be had in
    /// time, or PostgreSQL ended it because it is shutting down or starting up (a stop, a
    /// restart, an administrator's `pg_terminate_backend`: class 57P, and class 08, connection
    /// exceptions). Callers are told so (503), not shown an incident.
    pub fn is_unreachable(&self) -> bool {
        match self {
            Error::Database(sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut) => true,
            Error::Database(sqlx::Error::Database(db)) => {
                db.code().is_some_and(|code| code.starts_with("57P") || code.starts_with("08"))
            }
            _ => false,
        }
    }

    /// A row with the same key exists already.
    pub fn is_unique_violation(&self) -> bool {
        matches!(self, Error::Database(sqlx::Error::Database(db)) if db.is_unique_violation())
    }

    /// A failure on the server's own side (the database, stored data) rather than in the request:
    /// its text may carry the database's own words, so it is for the server log only.
    pub fn is_internal(&self) -> bool {
        matches!(self, Error::Database(_) | Error::Corrupt(_))
    }

    /// What a client may read of this error: its own text, or for an internal failure an
    /// [`Incident`]'s fixed message (the detail logged under the incident's id).
    pub fn client_message(&self) -> String {
        if self.is_internal() { Incident::log(self).to_string() } else { self.to_string() }
    }
}

/// A failure on the server's side reported to a client by id only. Every entry point (REST API,
/// console server functions, console sign-in) reports such failures this way, so an operator
/// finds the detail in the server log by the id a user quotes, and no user reads the database's
/// own error text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Incident {
    pub id: uuid::Uuid,
}

impl Incident {
    /// Logs `detail` under a new id.
    pub fn log(detail: &dyn std::fmt::Display) -> Incident {
        let id = uuid::Uuid::new_v4();
        tracing::error!(error_id = %id, error = %detail, "request failed on the server side");
        Incident { id }
    }
}

impl std::fmt::Display for Incident {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "internal server error (error id {}); the server log has the details", self.id)
    }
}

/// PostgreSQL's SQLSTATE classes 08 (connection exception), 57P (operator intervention:
/// admin shutdown, crash shutdown, cannot connect now) and 53 (insufficient resources: disk
/// full, out of memory, too many connections), 58030 (I/O error), 40001 (serialization failure)
/// and 40P01 (deadlock); SQLite's SQLITE_BUSY (5), SQLITE_LOCKED (6), SQLITE_IOERR (10) and
/// SQLITE_FULL (13) with their extended codes. A full disk or a failing device is a fault that
/// passes once an operator frees space or replaces it: the write is worth doing again then.
/// PostgreSQL's codes have five characters, SQLite's (extended) codes are numbers below 10 000.
fn transient_code(code: &str) -> bool {
    if code.len() == 5 {
        return code.starts_with("08")
            || code.starts_with("57P")
            || code.starts_with("53")
            || code == "58030"
            || code == "40001"
            || code == "40P01";
    }
    code.parse::<i64>().is_ok_and(|n| matches!(n & 0xff, 5 | 6 | 10 | 13))
}

#[cfg(test)]
mod tests {
    use super::transient_code;

    #[test]
    fn connection_loss_deadlocks_and_busy_are_transient_constraint_errors_are_not() {
        for code in [
            "08006", "08003", "57P01", "57P03", "53100", "58030", "40001", "40P01", "5", "6", "517", "262", "13", "10",
            "3338",
        ] {
            assert!(transient_code(code), "{code}");
        }
        for code in ["23505", "23503", "42P01", "22P02", "00005", "19", "2067", "1"] {
            assert!(!transient_code(code), "{code}");
        }
    }
}
