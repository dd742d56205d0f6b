//! Console login sessions, stored in the database so they survive restarts and are shared by
//! replicas. The server's tower-sessions store is a thin adapter over these calls.

use crate::{Orchestrator, Result};

impl Orchestrator {
    /// The session's serialized data and expiry (unix seconds) if it has not expired at `now`.
    pub async fn session_load(&self, id: &str, now: i64) -> Result<Option<(String, i64)>> {
        Ok(sqlx::query_as("SELECT data, expires_at FROM auth_session WHERE id = $1 AND expires_at > $2")
            .bind(id)
            .bind(now)
            .fetch_optional(self.store.pool())
            .await?)
    }

    /// Inserts or replaces a session. Returns false (and writes nothing) when `only_new` is set
    /// and the id is taken, so a colliding new id can be regenerated.
    pub async fn session_save(&self, id: &str, data: &str, expires_at: i64, only_new: bool) -> Result<bool> {
        let sql = if only_new {
            "INSERT INTO auth_session (id, data, expires_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING"
        } else {
            "INSERT INTO auth_session (id, data, expires_at) VALUES ($1, $2, $3) \
             ON CONFLICT (id) DO UPDATE SET data = excluded.data, expires_at = excluded.expires_at"
        };
        let done = sqlx::query(sql).bind(id).bind(data).bind(expires_at).execute(self.store.pool()).await?;
        Ok(done.rows_affected() > 0)
    }

    pub async fn session_delete(&self, id: &str) -> Result<()> {
        sqlx::query("DELETE FROM auth_session WHERE id = $1").bind(id).execute(self.store.pool()).await?;
        Ok(())
    }

    /// Removes sessions that expired before `now`; returns how many.
    pub async fn sessions_delete_expired(&self, now: i64) -> Result<u64> {
        let done =
            sqlx::query("DELETE FROM auth_session WHERE expires_at <= $1").bind(now).execute(self.store.pool()).await?;
        Ok(done.rows_affected())
    }
}
