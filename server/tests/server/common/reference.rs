//! The real Inmanta server (inmanta-core 20.1 of a reference install, started by
//! scripts/inmanta-reference.sh or a script wrapping it), stopped with its PostgreSQL when dropped.

use std::path::PathBuf;
use std::process::Command;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

pub struct Reference {
    pub url: String,
    pub state: PathBuf,
    script: String,
}

impl Reference {
    /// The plain reference install (scripts/inmanta-reference.sh).
    pub fn start() -> Result<Reference, String> {
        Reference::start_with("inmanta-reference.sh", &[])
    }

    /// The reference install of `script` (a script of scripts/ with inmanta-reference.sh's
    /// commands); the server and the agents it forks get `env` in their process environment.
    pub fn start_with(script: &str, env: &[(&str, &str)]) -> Result<Reference, String> {
        let script = format!("{ROOT}/scripts/{script}");
        let output = Command::new(&script)
            .args(["server", "start"])
            .envs(env.iter().copied())
            .output()
            .map_err(|e| format!("cannot run {script}: {e}"))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let export =
            |name: &str| stdout.lines().find_map(|l| l.strip_prefix(&format!("export {name}=")).map(str::to_string));
        match (output.status.success(), export("INMANTA_REFERENCE_URL"), export("INMANTA_REFERENCE_STATE")) {
            (true, Some(url), Some(state)) => Ok(Reference { url, state: state.into(), script }),
            _ => Err(format!(
                "the reference Inmanta server did not start: {}",
                String::from_utf8_lossy(&output.stderr).lines().rev().take(15).collect::<Vec<_>>().join("\n")
            )),
        }
    }

    /// The reference venv's Python (with `inmanta` beside it).
    pub fn python(&self) -> PathBuf {
        let dir = Command::new(&self.script).arg("path").output().expect("the reference venv's path");
        PathBuf::from(String::from_utf8_lossy(&dir.stdout).trim()).join("python")
    }
}

impl Drop for Reference {
    fn drop(&mut self) {
        let _ = Command::new(&self.script).args(["server", "stop"]).arg(&self.state).status();
    }
}
