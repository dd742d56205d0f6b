//! The modules of `project.yml`: v1 modules cloned from the git `repo` entries at the newest tag
//! their requirement allows, and v2 modules installed from the package index
//! (`crate::python_install`). Built-in modules are never fetched.

use std::path::Path;

use compiler::project_yml::{Requirement, Version};
use orchestrator::compiles::StageResult;

use super::job::Job;
use super::process::Cmd;

impl Job<'_> {
    /// Fetches every module of `requires` that is not built in into the download path, at the
    /// newest git tag the requirement allows.
    pub(super) async fn install_modules(&self) -> StageResult {
        let mut out = StageResult { returncode: Some(0), ..Default::default() };
        let project = match compiler::project_yml::read(&self.dir, &mut Vec::new()) {
            Ok(p) => p,
            Err(e) => {
                out.errstream = e.message;
                out.returncode = Some(1);
                return out;
            }
        };
        let libs = self.dir.join(project.download_path());
        let wanted: Vec<Requirement> = project
            .requirements()
            .into_iter()
            .filter(|r| !compiler::BUILTIN_MODULES.contains(&r.name.as_str()))
            .collect();
        if wanted.is_empty() {
            out.outstream.push_str("no modules to install: every required module is built in\n");
            return out;
        }
        if let Err(e) = std::fs::create_dir_all(&libs) {
            out.errstream = format!("cannot create {}: {e}", libs.display());
            out.returncode = Some(1);
            return out;
        }
        let repos = project.git_repos();
        for req in wanted {
            if let Err(e) = self.install_module(&repos, &libs, &req, &mut out).await {
                out.errstream.push_str(&format!("{e}\n"));
                out.returncode = Some(1);
                return out;
            }
        }
        out
    }

    /// Clones (or fetches) module `req` into `libs` and checks out the newest tag it allows.
    async fn install_module(
        &self,
        repos: &[&str],
        libs: &Path,
        req: &Requirement,
        out: &mut StageResult,
    ) -> Result<(), String> {
        let target = libs.join(&req.name);
        let target_text = target.display().to_string();
        let mut run = async |cmd: Cmd| -> StageResult {
            out.outstream.push_str(&format!("$ {}\n", cmd.display()));
            let r = self.exec(&cmd).await;
            out.outstream.push_str(&r.outstream);
            out.errstream.push_str(&r.errstream);
            r
        };
        if target.join(".git").is_dir() {
            let fetched = run(Cmd::git(&target, &["fetch", "--tags", "--force", "--prune", "origin"])).await;
            if fetched.returncode != Some(0) {
                return Err(format!("cannot fetch module {}", req.name));
            }
        } else {
            if target.exists() {
                std::fs::remove_dir_all(&target).map_err(|e| format!("cannot remove {target_text}: {e}"))?;
            }
            let mut cloned = false;
            for repo in repos {
                let url =
                    if repo.contains("{}") { repo.replace("{}", &req.name) } else { format!("{repo}{}", req.name) };
                let r = run(Cmd::git(libs, &["clone", &url, &target_text])).await;
                if r.returncode == Some(0) {
                    cloned = true;
                    break;
                }
            }
            if !cloned {
                return Err(format!(
                    "module {} not found in any repo of project.yml ({})",
                    req.name,
                    if repos.is_empty() { "there are none".to_string() } else { repos.join(", ") }
                ));
            }
        }
        let tags = run(Cmd::git(&target, &["tag", "--list"])).await;
        let mut versions: Vec<(Version, String)> = tags
            .outstream
            .lines()
            .filter_map(|t| Version::parse(t.trim()).map(|v| (v, t.trim().to_string())))
            .collect();
        versions.sort();
        let mut best = None;
        for (version, tag) in versions.iter().rev() {
            if req.allows(version) {
                best = Some(tag);
                break;
            }
        }
        let checkout = match best {
            Some(tag) => tag.clone(),
            None if req.constraint.is_empty() => "origin/HEAD".to_string(),
            None => {
                return Err(format!(
                    "no version of module {} matches {}: its tags are {}",
                    req.name,
                    req.text,
                    if versions.is_empty() {
                        "none".to_string()
                    } else {
                        versions.iter().map(|(_, t)| t.as_str()).collect::<Vec<_>>().join(", ")
                    }
                ));
            }
        };
        let r = run(Cmd::git(&target, &["checkout", "--quiet", "--force", "--detach", &checkout])).await;
        if r.returncode != Some(0) {
            return Err(format!("cannot check out {checkout} of module {}", req.name));
        }
        out.outstream.push_str(&format!("module {} at {checkout}\n", req.name));
        Ok(())
    }

    /// interpreter of `INMANTA_COMPILER_PYTHON`, else the checkout's `.env`): pip is quick when
    /// everything is installed already, so this runs before every compile.
    pub(super) async fn install_python_modules(&self) -> StageResult {
        let dir = self.dir.clone();
        let joined = tokio::task::spawn_blocking(move || {
            let mut log = String::new();
            let outcome = crate::python_install::install(&dir, None, &mut |line| {
                log.push_str(&line);
                log.push('\n');
            });
            (log, outcome)
        })
        .await;
        match joined {
            Ok((log, Ok(()))) => StageResult { outstream: log, returncode: Some(0), ..Default::default() },
            Ok((log, Err(e))) => StageResult { outstream: log, errstream: e, returncode: Some(1) },
            Err(e) => StageResult {
                errstream: format!("the install crashed: {e}"),
                returncode: Some(1),
                ..Default::default()
            },
        }
    }
}
