//! A server that speaks only HTTPS (`[server] ssl-cert-file` / `ssl-key-file`) with its own
//! clients: the server-side compile's `inmanta export` pushes to it over HTTPS, checking its
//! certificate against the CA file the server hands it, and a remote `inmanta agent` connects
//! with `[agent_rest_transport] ssl` and `ssl_ca_cert_file` (Inmanta's option names) and deploys.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use api::AgentStatus;
use api::client::ListQuery;
use api::compile::NotifyChange;
use common::{BIN, TestServer};

fn git(dir: &Path, args: &[&str]) {
    let output = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run git");
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
}

struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn compiles_and_remote_agents_work_over_https() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = common::certificate(dir.path());
    let s = TestServer::start_with(&[
        ("INMANTA_SERVER_SSL_CERT_FILE", cert.as_str()),
        ("INMANTA_SERVER_SSL_KEY_FILE", key.as_str()),
    ])
    .await;
    assert!(s.url.starts_with("https://"), "{}", s.url);

    // The model: one file on host `remote1`, whose agent is the remote agent below.
    let bare = dir.path().join("project.git");
    std::fs::create_dir_all(&bare).unwrap();
    git(&bare, &["init", "--bare", "--quiet"]);
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "--quiet"]);
    git(&work, &["checkout", "--quiet", "-B", "main"]);
    let target = dir.path().join("motd");
    std::fs::write(work.join("project.yml"), "name: tls\nmodulepath: libs\ndownloadpath: libs\n").unwrap();
    std::fs::write(
        work.join("main.cf"),
        format!(
            "import fs\nimport mitogen\n\nhost = std::Host(name=\"remote1\", os=std::linux, via=mitogen::Local())\n\
             fs::File(host=host, path=\"{}\", content=\"over https\", mode=644)\n",
            target.display()
        ),
    )
    .unwrap();
    git(&work, &["add", "--all"]);
    git(&work, &["commit", "--quiet", "-m", "model"]);
    git(&work, &["push", "--quiet", &format!("file://{}", bare.display()), "main"]);

    let repo = format!("file://{}", bare.display());
    let client = s.client();
    let project = client.create_project("p").await.unwrap();
    let body = api::environment::EnvironmentCreate {
        project_id: project.id,
        name: "tls".into(),
        repository: Some(repo),
        branch: Some("main".into()),
        ..Default::default()
    };
    let env = client.create_environment(&body).await.unwrap().id.to_string();

    // The remote agent, over wss:// and https:// with the certificate as its CA file.
    let port = s.url.rsplit(':').next().unwrap().to_string();
    let token = s.environment_token(&env, &["agent"]).await;
    let agent_log = dir.path().join("agent.log");
    let _agent = Killed(
        Command::new(BIN)
            .args(["agent", "--name", "remote1", "-e", &env, "--port", &port, "--token", &token, "--cache-dir"])
            .arg(dir.path().join("cache"))
            .env("INMANTA_AGENT_REST_TRANSPORT_SSL", "true")
            .env("INMANTA_AGENT_REST_TRANSPORT_SSL_CA_CERT_FILE", &cert)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&agent_log).unwrap())
            .spawn()
            .expect("start inmanta agent"),
    );
    let env_id = env.parse().unwrap();
    let remote1 = ListQuery::new().filter("name", "remote1");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let agents = client.agents(env_id, &remote1).await.unwrap();
        if agents.data.first().is_some_and(|a| a.status == AgentStatus::Up) {
            break;
        }
        let log = std::fs::read_to_string(&agent_log).unwrap_or_default();
        assert!(Instant::now() < deadline, "the agent did not connect over HTTPS: {log}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // A server-side compile: its export pushes to this HTTPS server.
    let answer = client.notify(env_id, &NotifyChange { update: true, ..Default::default() }).await.unwrap();
    let id = answer.compile_id.expect("a queued compile");
    let deadline = Instant::now() + Duration::from_secs(120);
    let report = loop {
        let details = client.compile_report(env_id, id).await.unwrap();
        if details.report.times.completed.is_some() {
            break details;
        }
        assert!(Instant::now() < deadline, "the compile did not finish: {details:#?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(report.report.success, Some(true), "the export over HTTPS failed: {report:#?}");
    let command = report.reports.as_ref().unwrap().iter().map(|r| r.command.clone()).collect::<String>();
    assert!(command.contains("--ssl"), "the export was told to use HTTPS: {command}");

    // The remote agent deploys the compiled version.
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::read_to_string(&target).ok().as_deref() != Some("over https") {
        let log = std::fs::read_to_string(&agent_log).unwrap_or_default();
        assert!(Instant::now() < deadline, "the remote agent did not deploy over HTTPS; its log: {log}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let agents = client.agents(env_id, &remote1).await.unwrap();
    assert_eq!(agents.data[0].status, AgentStatus::Up, "{agents:?}");
}

#[tokio::test]
async fn a_client_without_the_ca_refuses_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = common::certificate(dir.path());
    let s = TestServer::start_with(&[
        ("INMANTA_SERVER_SSL_CERT_FILE", cert.as_str()),
        ("INMANTA_SERVER_SSL_KEY_FILE", key.as_str()),
    ])
    .await;
    let port = s.url.rsplit(':').next().unwrap().to_string();
    // The CLI over HTTPS: with the CA file it lists projects; without, the unknown issuer is named.
    let cli = |ca: Option<&str>| {
        let mut command = Command::new(BIN);
        command
            .args(["project", "list", "--host", "127.0.0.1", "--port", &port])
            .env("INMANTA_CMDLINE_REST_TRANSPORT_SSL", "true")
            .env("INMANTA_CMDLINE_REST_TRANSPORT_TOKEN", s.token.clone().unwrap())
            .env("SSL_CERT_FILE", dir.path().join("no-such-bundle"));
        if let Some(ca) = ca {
            command.env("INMANTA_CMDLINE_REST_TRANSPORT_SSL_CA_CERT_FILE", ca);
        }
        command.output().expect("run inmanta")
    };
    let trusted = cli(Some(&cert));
    assert!(trusted.status.success(), "{}", String::from_utf8_lossy(&trusted.stderr));
    let untrusted = cli(None);
    assert!(!untrusted.status.success());
    let missing = cli(Some(&dir.path().join("missing.pem").display().to_string()));
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(!missing.status.success() && stderr.contains("ssl_ca_cert_file"), "{stderr}");
}
