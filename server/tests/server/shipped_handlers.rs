//! Handlers shipped inside modules, end to end: `inmanta export` uploads the example module's
//! `handlers/keyvalue__Line` with the version, the server's agents fetch it from the file store,
//! cache it in the state directory and deploy `keyvalue::Line` resources through it; a dry run
//! uses it too; a new export with a changed value updates the file; a version whose module ships
//! no handler reports the resources unavailable with a message that says how to ship one.
//! Everything is written in temp dirs: the server's state, the project, the managed file, HOME.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use api::client::ListQuery;
use api::state::ResourceDiffStatus;
use common::{BIN, TestServer};
use serde_json::json;

/// A project whose `libs/` holds a copy of examples/handlers/keyvalue.
struct Project {
    dir: tempfile::TempDir,
    conf: PathBuf,
}

impl Project {
    fn new(conf_dir: &Path) -> Project {
        let dir = tempfile::tempdir().unwrap();
        let module = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/handlers/keyvalue");
        copy_dir(&module, &dir.path().join("libs/keyvalue"));
        std::fs::write(dir.path().join("project.yml"), "name: shipped\nmodulepath: libs\n").unwrap();
        Project { dir, conf: conf_dir.join("app.conf") }
    }

    fn model(&self, port: &str) {
        let main = format!(
            "import keyvalue\n\
             host = std::Host(name=\"internal\", os=std::linux)\n\
             keyvalue::Line(host=host, path=\"{conf}\", key=\"port\", value=\"{port}\")\n\
             keyvalue::Line(host=host, path=\"{conf}\", key=\"name\", value=\"web\")\n",
            conf = self.conf.display()
        );
        std::fs::write(self.dir.path().join("main.cf"), main).unwrap();
    }

    fn handler(&self) -> PathBuf {
        self.dir.path().join("libs/keyvalue/handlers/keyvalue__Line")
    }

    /// `inmanta export` in the project directory; returns the version it printed.
    fn export(&self, s: &TestServer, env: &str, release: bool) -> i64 {
        let port = s.url.rsplit(':').next().unwrap().to_string();
        let mut args = vec!["export", "-e", env, "--server_address", "127.0.0.1", "--server_port", &port];
        if release {
            args.push("-d");
        }
        let home = self.dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let output = Command::new(BIN)
            .args(&args)
            .current_dir(self.dir.path())
            .env("HOME", &home)
            .env("XDG_CACHE_HOME", home.join(".cache"))
            .envs(s.token_env())
            .output()
            .expect("run inmanta export");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "export failed: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
        stdout.trim().lines().last().and_then(|l| l.parse().ok()).unwrap_or_else(|| panic!("no version in {stdout}"))
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            // fs::copy keeps the mode: the handler stays executable.
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

async fn wait_for(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The resource's status; empty while the server does not know it (yet).
async fn status_of(s: &TestServer, env: &str, rid: &str) -> String {
    let details = s.client().resource(env.parse().unwrap(), rid).await;
    details.map(|d| d.status.as_str().to_string()).unwrap_or_default()
}

fn lines(conf: &Path) -> Vec<String> {
    let mut lines: Vec<String> =
        std::fs::read_to_string(conf).unwrap_or_default().lines().map(str::to_string).collect();
    lines.sort();
    lines
}

const PORT: &str = "keyvalue::Line[internal,key=port]";
const NAME: &str = "keyvalue::Line[internal,key=name]";

#[tokio::test]
async fn modules_ship_handlers_that_the_agents_run() {
    let s = TestServer::start().await;
    let env_id = s.new_environment("p", "e").await;
    let env = env_id.to_string();
    let client = s.client();
    let managed = tempfile::tempdir().unwrap();
    let project = Project::new(managed.path());

    // Export and release: the agents fetch the shipped handler and deploy through it.
    project.model("8080");
    project.export(&s, &env, true);
    wait_for("both lines deployed", async || {
        status_of(&s, &env, PORT).await == "deployed" && status_of(&s, &env, NAME).await == "deployed"
    })
    .await;
    assert_eq!(lines(&project.conf), ["name=web", "port=8080"]);
    let content = std::fs::read(project.handler()).unwrap();
    let hash = sha1_smol::Sha1::from(&content).digest().to_string();
    let cached = s.state_dir.path().join("handlers").join(&hash);
    assert_eq!(std::fs::read(&cached).unwrap(), content, "cached in the state directory under its sha1");
    assert_eq!(std::fs::metadata(&cached).unwrap().permissions().mode() & 0o777, 0o755);

    // A candidate version with a new value: its dry run goes through the shipped handler too.
    client.set_environment_setting(env_id, "auto_deploy", false).await.unwrap();
    project.model("9090");
    let version = project.export(&s, &env, false);
    let dry_run = client.dry_run(env_id, version).await.unwrap();
    let mut report = None;
    wait_for("the dry run report", async || {
        let current = client.dry_run_report(env_id, version, dry_run).await.unwrap();
        let done = current.summary.todo == 0;
        report = Some(current);
        done
    })
    .await;
    let report = report.unwrap();
    let port_diff =
        report.diff.iter().find(|d| d.resource_id.to_string() == PORT).unwrap_or_else(|| panic!("{report:?}"));
    assert_eq!(port_diff.status, ResourceDiffStatus::Modified, "{report:?}");
    assert_eq!(port_diff.attributes["value"].from_value, Some(json!("8080")), "{report:?}");
    assert_eq!(port_diff.attributes["value"].to_value, Some(json!("9090")), "{report:?}");
    assert_eq!(lines(&project.conf), ["name=web", "port=8080"], "a dry run changes nothing");

    // Released: the update reaches the file.
    client.release_version(env_id, version, true).await.unwrap();
    wait_for("the new value", async || lines(&project.conf) == ["name=web", "port=9090"]).await;
    wait_for("the update deployed", async || status_of(&s, &env, PORT).await == "deployed").await;

    // A module without the handler: the changed line cannot run, and the log says why.
    std::fs::remove_file(project.handler()).unwrap();
    project.model("7070");
    project.export(&s, &env, true);
    wait_for("the line without a handler", async || status_of(&s, &env, PORT).await == "unavailable").await;
    let logs = client.resource_logs(env_id, PORT, &ListQuery::new()).await.unwrap().data;
    let messages: Vec<&str> = logs.iter().map(|l| l.msg.as_str()).collect();
    assert!(
        messages.iter().any(|m| m.contains("keyvalue::Line") && m.contains("handlers/keyvalue__Line")),
        "{messages:?}"
    );
    assert_eq!(lines(&project.conf), ["name=web", "port=9090"]);
}
