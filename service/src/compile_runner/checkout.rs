//! The environment's git checkout under `<state-dir>/compiles/<env>/`: cloned when missing or
//! when the repository changed, switched to the configured branch, brought to the remote head on
//! an update (a fast-forward, or a reset after a force-push).

use super::job::Job;
use super::process::Cmd;

impl Job<'_> {
    /// Clones the repository when there is no checkout (or it points elsewhere); true if it did.
    pub(super) async fn prepare_checkout(&self) -> Result<bool, String> {
        let q = self.q;
        if self.dir.join(".git").is_dir() {
            let origin = self.exec(&Cmd::git(&self.dir, &["config", "--get", "remote.origin.url"])).await;
            if origin.outstream.trim() == q.repo_url.trim() {
                return Ok(false);
            }
            tracing::info!(env = %q.environment, "the repository of the environment changed: cloning it again");
        }
        if self.dir.exists() {
            std::fs::remove_dir_all(&self.dir).map_err(|e| format!("cannot remove {}: {e}", self.dir.display()))?;
        }
        std::fs::create_dir_all(&self.dir).map_err(|e| format!("cannot create {}: {e}", self.dir.display()))?;
        // Inmanta's form, into the empty checkout directory: the report reads
        // `git clone URL . -b BRANCH` and `Cloning into '.'...` on both servers.
        let mut args = vec!["clone", q.repo_url.as_str(), "."];
        if !q.repo_branch.is_empty() {
            args.extend(["-b", q.repo_branch.as_str()]);
        }
        self.record_cmd("Cloning repository", Cmd::git(&self.dir, &args)).await?;
        Ok(true)
    }

    /// Switches to the configured branch and, with `update`, brings the checkout to the remote
    /// head: a fast-forward, or a reset when the history was rewritten. True if it switched.
    pub(super) async fn update_checkout(&self) -> Result<bool, String> {
        let q = self.q;
        let current = self.exec(&Cmd::git(&self.dir, &["rev-parse", "--abbrev-ref", "HEAD"])).await;
        let current = current.outstream.trim().to_string();
        let branch = if q.repo_branch.is_empty() { current.clone() } else { q.repo_branch.clone() };
        let remote = format!("origin/{branch}");
        let mut switched = false;
        if branch != current {
            self.record_cmd("Fetching new branch heads", Cmd::git(&self.dir, &["fetch", "--prune", "origin"])).await?;
            self.record_cmd(
                &format!("Switching branch from {current} to {branch}"),
                Cmd::git(&self.dir, &["checkout", "--force", "-B", &branch, &remote]),
            )
            .await?;
            switched = true;
        } else if q.force_update {
            self.record_cmd("Fetching changes", Cmd::git(&self.dir, &["fetch", "--prune", "origin"])).await?;
        }
        if q.force_update {
            let command =
                format!("git merge --ff-only {remote} (git reset --hard {remote} if the history was rewritten)");
            let dir = self.dir.clone();
            let pull = async {
                let mut result = self.exec(&Cmd::git(&dir, &["merge", "--ff-only", &remote])).await;
                if result.returncode != Some(0) {
                    let reset = self.exec(&Cmd::git(&dir, &["reset", "--hard", &remote])).await;
                    result.outstream.push_str(&format!(
                        "\n{remote} is not a fast-forward of the checkout (rewritten history): resetting to it\n{}",
                        reset.outstream
                    ));
                    result.errstream.push_str(&reset.errstream);
                    result.returncode = reset.returncode;
                }
                result
            };
            self.record("Pulling updates", &command, pull).await?;
        }
        Ok(switched)
    }
}
