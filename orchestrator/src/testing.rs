//! Support for tests that need a real database: SQLite in a directory, or a fresh PostgreSQL
//! database when `INMANTA_TEST_POSTGRES` holds an admin URL such as
//! `postgres://postgres@127.0.0.1:5432/postgres`.

use std::path::Path;

use crate::Result;

/// The URL of an empty database for one test.
pub async fn fresh_database_url(dir: &Path) -> Result<String> {
    match std::env::var("INMANTA_TEST_POSTGRES") {
        Ok(admin) if !admin.is_empty() => {
            sqlx::any::install_default_drivers();
            let name = format!("inmanta_test_{}", uuid::Uuid::new_v4().simple());
            let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&admin).await?;
            sqlx::query(&format!("CREATE DATABASE {name}")).execute(&mut conn).await?;
            let base = admin.rsplit_once('/').map(|(base, _)| base).unwrap_or(&admin);
            Ok(format!("{base}/{name}"))
        }
        _ => Ok(format!("sqlite://{}", dir.join("inmanta.db").display())),
    }
}
