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
    #[error("database migration failed: {0}")]
    Migration(#[from] sqlx::migrate::MigrateError),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// A scheduler write was refused: this server no longer holds the environment's lease
    /// (another server took it over, or it could not renew in time).
    #[error("this server no longer runs the scheduler of environment {0}: its lease was lost")]
    LeaseLost(uuid::Uuid),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
