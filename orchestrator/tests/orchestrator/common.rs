//! Set-up shared by the modules of this binary.

use orchestrator::Orchestrator;
use uuid::Uuid;

/// [`orchestrator::testing::setup`] in a temporary directory, which the caller keeps for as long
/// as it uses the orchestrator (a SQLite database lives in it).
pub async fn setup() -> (Orchestrator, Uuid, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let (o, env) = orchestrator::testing::setup(dir.path()).await.unwrap();
    (o, env, dir)
}
