//! `--logging-config` and `[logging] server`: Inmanta's dictConfig YAML files decide where the
//! server logs and in what form (server/src/logging_config.rs).

use crate::common::{BIN, TestServer};

/// Inmanta 20.1's `inmanta --log-file F output-default-logging-config --component server`, its
/// file handler pointed at `path` and its formatter given a marker.
fn inmanta_default_server_config(path: &std::path::Path) -> String {
    format!(
        "disable_existing_loggers: false
formatters:
  core_log_formatter:
    format: 'FILE %(asctime)s %(levelname)-8s %(name)-10s %(message)s'
handlers:
  core_tornado_debug_log_handler:
    class: inmanta.logging.TornadoDebugLogHandler
    level: DEBUG
  server_handler:
    class: logging.handlers.WatchedFileHandler
    filename: {}
    formatter: core_log_formatter
    level: INFO
    mode: a+
loggers:
  sqlalchemy.engine:
    level: WARNING
    propagate: true
  tornado.general:
    handlers:
    - core_tornado_debug_log_handler
    level: DEBUG
    propagate: true
root:
  handlers:
  - server_handler
  level: INFO
version: 1
",
        path.display()
    )
}

fn read_soon(path: &std::path::Path, want: &str) -> String {
    for _ in 0..100 {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(want) {
            return text;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("{want:?} not in {}: {:?}", path.display(), std::fs::read_to_string(path).unwrap_or_default());
}

#[tokio::test]
async fn the_server_logs_to_the_file_and_format_of_inmanta_s_own_config() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("logs/server.log");
    let config = dir.path().join("server.yml");
    std::fs::write(&config, inmanta_default_server_config(&log)).unwrap();
    let mut server = TestServer::start_with(&[("INMANTA_LOGGING_SERVER", config.to_str().unwrap())]).await;
    let text = read_soon(&log, "server listening");
    let line = text.lines().find(|l| l.contains("server listening")).unwrap();
    // `FILE 2026-12-02 05:40:01,123 INFO     service.serve server listening local=...`
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(fields[0], "FILE", "{line}");
    assert!(fields[1].len() == 10 && fields[2].len() == 12 && fields[2].as_bytes()[8] == b',', "{line}");
    assert_eq!(fields[3], "INFO", "{line}");
    assert!(fields[4].starts_with("service."), "a dotted logger name: {line}");
    assert!(!text.contains(" DEBUG "), "root is INFO: {text}");
    // RUST_LOG (warn in the tests) does not decide any more, nor does the state dir's stderr log.
    assert!(!server.log().contains("server listening"), "{}", server.log());
    assert!(server.terminate().success());
}

#[tokio::test]
async fn the_flag_comes_before_the_option_and_a_level_per_logger_applies() {
    let dir = tempfile::tempdir().unwrap();
    let (flag_log, option_log) = (dir.path().join("flag.log"), dir.path().join("option.log"));
    let flag = dir.path().join("flag.yml");
    std::fs::write(
        &flag,
        format!(
            "version: 1
formatters:
  short: {{format: '%(levelname)s|%(name)s|%(message)s'}}
handlers:
  file: {{class: logging.FileHandler, filename: {}, formatter: short}}
loggers:
  service.serve: {{level: DEBUG}}
root: {{level: ERROR, handlers: [file]}}
",
            flag_log.display()
        ),
    )
    .unwrap();
    let option = dir.path().join("option.yml");
    std::fs::write(&option, inmanta_default_server_config(&option_log)).unwrap();
    let state = tempfile::tempdir().unwrap();
    let database = crate::common::fresh_database(state.path()).await;
    let mut child = std::process::Command::new(BIN)
        .args(["--logging-config", flag.to_str().unwrap(), "server", "--no-auth", "--bind-port", "0"])
        .args(["--database-url", &database, "--state-dir", state.path().to_str().unwrap()])
        .env("INMANTA_LOGGING_SERVER", &option)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let text = read_soon(&flag_log, "server listening");
    let _ = child.kill();
    let _ = child.wait();
    assert!(text.lines().any(|l| l.starts_with("INFO|service.serve|server listening")), "{text}");
    assert!(text.lines().all(|l| l.contains("|service.serve|") || l.starts_with("ERROR")), "others at ERROR: {text}");
    assert!(!option_log.exists(), "the flag wins over [logging] server");
}

#[test]
fn a_handler_this_server_does_not_have_stops_the_start_with_what_it_has() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("syslog.yml");
    std::fs::write(
        &config,
        "version: 1\nhandlers:\n  s: {class: logging.handlers.SysLogHandler}\nroot: {handlers: [s]}\n",
    )
    .unwrap();
    let out = std::process::Command::new(BIN)
        .args(["server", "--no-auth", "--state-dir", dir.path().to_str().unwrap()])
        .env("INMANTA_CONFIG_LOGGING_CONFIG", &config)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("file {}", config.display())), "names the file: {stderr}");
    assert!(stderr.contains("logging.handlers.SysLogHandler") && stderr.contains("WatchedFileHandler"), "{stderr}");
}

#[tokio::test]
async fn the_config_may_come_in_an_environment_variable() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("content.log");
    let yaml = inmanta_default_server_config(&log);
    let server = TestServer::start_with(&[("INMANTA_LOGGING_SERVER_CONTENT", &yaml)]).await;
    read_soon(&log, "server listening");
    drop(server);
}
