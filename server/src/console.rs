//! Placeholder: the console router lands from the console work.

use std::path::PathBuf;

pub fn router(_orchestrator: orchestrator::Orchestrator, _site_root: Option<PathBuf>) -> axum::Router {
    axum::Router::new()
}
