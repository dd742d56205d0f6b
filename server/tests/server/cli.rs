//! The `inmanta` client commands against a real server.

use crate::common;

use common::TestServer;

#[tokio::test]
async fn projects_environments_and_settings_from_the_cli() {
    let s = TestServer::start().await;
    let (code, out, err) = s.cli(&["project", "create", "-n", "shop"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("shop"));

    let (code, out, err) = s.cli(&["environment", "create", "-n", "prod", "-p", "shop", "--save"]);
    assert_eq!(code, 0, "{out}{err}");
    let dotfile = std::fs::read_to_string(s.state_dir.path().join(".inmanta")).unwrap();
    assert!(dotfile.contains("[config]") && dotfile.contains("environment = "), "{dotfile}");

    let (code, out, _) = s.cli(&["environment", "list"]);
    assert_eq!(code, 0);
    assert!(out.lines().any(|l| l.trim_start().starts_with("shop") && l.contains("prod")), "{out}");

    let (code, out, _) = s.cli(&["environment", "list", "--json"]);
    assert_eq!(code, 0);
    let envs: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(envs[0]["name"], "prod");

    let (code, out, err) = s.cli(&["environment", "setting", "set", "-e", "prod", "-k", "auto_deploy", "-o", "false"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, _) = s.cli(&["environment", "setting", "get", "-e", "shop/prod", "-k", "auto_deploy"]);
    assert_eq!((code, out.trim()), (0, "false"));
    let (code, out, _) = s.cli(&["environment", "setting", "list", "-e", "prod"]);
    assert_eq!(code, 0);
    assert!(out.lines().any(|l| l.trim_start().starts_with("auto_deploy") && l.contains("false")), "{out}");
    let (code, _, _) = s.cli(&["environment", "setting", "delete", "-e", "prod", "-k", "auto_deploy"]);
    assert_eq!(code, 0);

    let (code, _, err) = s.cli(&["environment", "setting", "set", "-e", "prod", "-k", "auto_deploy", "-o", "maybe"]);
    assert_eq!(code, 1, "the server refused");
    assert!(err.contains("auto_deploy"), "{err}");

    let (code, _, err) = s.cli(&["project", "delete", "shop"]);
    assert_eq!(code, 1, "project still has an environment");
    assert!(err.contains("prod"), "{err}");

    let (code, out, _) = s.cli(&["environment", "modify", "-n", "production", "prod"]);
    assert_eq!(code, 0);
    assert!(out.contains("production"));
    let (code, _, err) = s.cli(&["environment", "show", "nope"]);
    assert_eq!(code, 2, "unknown name is a usage error");
    assert!(err.contains("nope"));
    let (code, _, _) = s.cli(&["environment", "delete", "production"]);
    assert_eq!(code, 0);
    let (code, _, _) = s.cli(&["project", "delete", "shop"]);
    assert_eq!(code, 0);
    let (code, out, _) = s.cli(&["project", "list"]);
    assert_eq!(code, 0);
    assert!(out.contains("(none)"), "{out}");
}

#[test]
fn unreachable_server_exits_3() {
    let output = std::process::Command::new(common::BIN)
        .args(["project", "list", "--host", "127.0.0.1", "--port", "1"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot talk to the server"));
}

#[test]
fn project_install_explains_built_in_modules_and_needs_no_server() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("project.yml"), "name: p\nrequires:\n  - std\n  - fs\n").unwrap();
    let output = std::process::Command::new(common::BIN)
        .args(["project", "install", "--project-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(err.contains("module std: the compiler's built-in std is used"), "{err}");
    assert!(err.contains("no Python packages to install"), "{err}");
    assert!(!dir.path().join(".env").exists(), "nothing to install: no environment made");
}

#[test]
fn a_module_with_python_code_and_no_environment_is_a_clear_compile_error() {
    let dir = tempfile::tempdir().unwrap();
    let module = dir.path().join("libs/withpy");
    std::fs::create_dir_all(module.join("model")).unwrap();
    std::fs::create_dir_all(module.join("plugins")).unwrap();
    std::fs::write(dir.path().join("project.yml"), "name: p\nmodulepath: libs\n").unwrap();
    std::fs::write(module.join("module.yml"), "name: withpy\nversion: 0.1.0\n").unwrap();
    std::fs::write(module.join("model/_init.cf"), "entity A:\nend\n").unwrap();
    std::fs::write(module.join("plugins/__init__.py"), "").unwrap();
    std::fs::write(dir.path().join("main.cf"), "import withpy\n").unwrap();
    let output = std::process::Command::new(common::BIN)
        .args(["compile", "--project"])
        .arg(dir.path())
        .env_remove("INMANTA_COMPILER_PYTHON")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(err.contains("module withpy") && err.contains("has Python code"), "{err}");
    assert!(err.contains("inmanta project install") && err.contains("[compiler] python"), "{err}");
}
