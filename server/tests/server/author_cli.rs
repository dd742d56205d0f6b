//! What a model author runs (issue 49): `inmanta export` with the token of `inmanta user login`,
//! `export -g` and `-X`, `project init`; compared with the reference install of Inmanta 20.1
//! (scripts/inmanta-reference.sh) where it can answer offline.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::{ADMIN, ADMIN_PASSWORD, BIN, TestServer};

const MODEL: &str = "import std::testing\n\
    a = std::testing::NullResource(name=\"a\")\n\
    b = std::testing::NullResource(name=\"b\", requires=a)\n\
    c = std::testing::NullResource(name=\"c\", requires=[a, b])\n";

/// A project with [`MODEL`] in `dir`.
fn project(dir: &Path) {
    std::fs::write(dir.join("project.yml"), "name: authored\nmodulepath: libs\ndownloadpath: libs\n").unwrap();
    std::fs::write(dir.join("main.cf"), MODEL).unwrap();
}

/// Runs our `inmanta` in `dir` with `env` and no INMANTA_ variable of the test's own process.
fn ours(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    run(Command::new(BIN).args(args), dir, env)
}

fn run(command: &mut Command, dir: &Path, env: &[(&str, &str)]) -> (i32, String, String) {
    for (name, _) in std::env::vars() {
        if name.starts_with("INMANTA_") {
            command.env_remove(name);
        }
    }
    let output = command.current_dir(dir).envs(env.iter().copied()).output().expect("run a command");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The reference install's bin directory (its `inmanta`, `cookiecutter`, `python`), or `None`
/// after reporting it missing.
fn reference_bin() -> Option<PathBuf> {
    let dir = std::env::var_os("INMANTA_REFERENCE_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/inmanta/reference")))
        .map(|d| d.join("venv/bin"));
    let found = dir.filter(|d| d.join("inmanta").exists());
    test_support::require("the reference Inmanta: scripts/inmanta-reference.sh install", found.ok_or("not installed"))
}

/// The lines of a dot file without its edges' order (Inmanta walks a Python set).
fn sorted_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.sort();
    lines
}

#[tokio::test]
async fn export_takes_the_login_token_of_the_cli_variable_and_a_refusal_names_the_settings() {
    let s = TestServer::start().await;
    let env = s.new_environment("authors", "dev").await.to_string();
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    let port = s.url.rsplit(':').next().unwrap().to_string();
    // What a new user has: the server and environment in .inmanta, no token there.
    std::fs::write(
        dir.path().join(".inmanta"),
        format!("[config]\nenvironment = {env}\n\n[compiler_rest_transport]\nhost = 127.0.0.1\nport = {port}\n"),
    )
    .unwrap();
    let mut login = Command::new(BIN);
    login.args(["user", "login", ADMIN, "--password-stdin", "--host", "127.0.0.1", "--port", &port]);
    let child = login.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    use std::io::Write as _;
    child.stdin.as_ref().unwrap().write_all(format!("{ADMIN_PASSWORD}\n").as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let token = String::from_utf8_lossy(&output.stdout).trim().to_string();

    let (code, out, err) = ours(dir.path(), &["export", "-d"], &[("INMANTA_CMDLINE_REST_TRANSPORT_TOKEN", &token)]);
    assert_eq!(code, 0, "{out}{err}");
    let version: i64 = out.trim().parse().unwrap_or_else(|_| panic!("the version number, got {out:?}"));
    let (status, body) = s.call("GET", &format!("/api/v1/version/{version}"), Some(&env), None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["model"]["released"], true, "{body}");

    let (code, _, err) = ours(dir.path(), &["export"], &[]);
    assert_eq!(code, 1, "{err}");
    for setting in [
        "--token",
        "[compiler_rest_transport] token",
        "INMANTA_COMPILER_REST_TRANSPORT_TOKEN",
        "INMANTA_CMDLINE_REST_TRANSPORT_TOKEN",
        "none holds a token",
    ] {
        assert!(err.contains(setting), "{setting} missing from: {err}");
    }
    let (code, _, err) = ours(dir.path(), &["export"], &[("INMANTA_CMDLINE_REST_TRANSPORT_TOKEN", "not-a-token")]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("the token of [cmdline_rest_transport] token was refused"), "{err}");
}

#[tokio::test]
async fn export_g_writes_the_dependency_graph_inmanta_writes() {
    let Some(reference) = reference_bin() else { return };
    let theirs = tempfile::tempdir().unwrap();
    project(theirs.path());
    let (code, out, err) =
        run(Command::new(reference.join("inmanta")).args(["export", "-g", "-j", "r.json"]), theirs.path(), &[]);
    assert_eq!(code, 0, "{out}{err}");
    let expected = std::fs::read_to_string(theirs.path().join("dependencies.dot")).unwrap();

    let mine = tempfile::tempdir().unwrap();
    project(mine.path());
    let (code, out, err) = ours(mine.path(), &["export", "-g", "-j", "r.json"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let dot = std::fs::read_to_string(mine.path().join("dependencies.dot")).unwrap();
    assert_eq!(sorted_lines(&dot), sorted_lines(&expected), "ours:\n{dot}\nInmanta's:\n{expected}");
    assert!(dot.starts_with("digraph G {\n") && dot.ends_with("}\n"), "{dot}");
    // With Graphviz installed, an SVG beside it.
    let graphviz = Command::new("dot").arg("-V").output().is_ok_and(|o| o.status.success());
    assert_eq!(mine.path().join("dependencies.svg").exists(), graphviz, "{err}");
    if graphviz {
        let svg = std::fs::read_to_string(mine.path().join("dependencies.svg")).unwrap();
        assert!(svg.contains("<svg") && svg.contains("name=a"), "{svg}");
    }

    // To a server: the nodes carry the version the server gave.
    let s = TestServer::start().await;
    let env = s.new_environment("graphs", "dev").await.to_string();
    std::fs::write(mine.path().join(".inmanta"), s.dot_inmanta(&env)).unwrap();
    std::fs::remove_file(mine.path().join("dependencies.dot")).unwrap();
    let (code, out, err) = ours(mine.path(), &["export", "-g"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let version = out.trim();
    let dot = std::fs::read_to_string(mine.path().join("dependencies.dot")).unwrap();
    let at_version = expected.replace(",v=0\"", &format!(",v={version}\""));
    assert_eq!(sorted_lines(&dot), sorted_lines(&at_version), "{dot}");
}

#[test]
fn extended_errors_show_each_error_under_inmanta_banner_before_the_errors() {
    let Some(reference) = reference_bin() else { return };
    let model = "entity A:\n  string x\nend\nimplement A using std::none\na = A(x=1)\n";
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    for dir in &dirs {
        project(dir.path());
        std::fs::write(dir.path().join("main.cf"), model).unwrap();
    }
    let inmanta = reference.join("inmanta");
    let (code, _, plain) = run(Command::new(&inmanta).args(["export", "-j", "r.json"]), dirs[0].path(), &[]);
    assert_eq!(code, 1, "{plain}");
    let (code, _, extended) = run(Command::new(&inmanta).args(["export", "-X", "-j", "r.json"]), dirs[0].path(), &[]);
    assert_eq!(code, 1, "{extended}");
    let banner = extended.lines().find(|l| l.contains("EXCEPTION TRACE")).expect("Inmanta's -X banner").to_string();
    assert!(!plain.contains(&banner), "{plain}");
    // Inmanta's trace ends with the exception's qualified type and message.
    assert!(extended.contains("inmanta.ast.AttributeException: Could not set attribute `x`"), "{extended}");

    for args in
        [&["export", "-X", "-j", "r.json"][..], &["compile", "-X"], &["export", "--extended-errors", "-j", "r.json"]]
    {
        let (code, _, err) = ours(dirs[1].path(), args, &[]);
        assert_eq!(code, 1, "{err}");
        let trace = err.find(&banner).unwrap_or_else(|| panic!("{banner:?} missing from:\n{err}"));
        let error = err.find("error[AttributeException]").expect("the error itself");
        assert!(trace < error, "the trace comes before the errors, as in Inmanta:\n{err}");
        assert!(err.contains("inmanta.ast.AttributeException: Could not set attribute `x`"), "{err}");
        assert!(err.contains("main.cf:5:"), "{err}");
    }
    let (code, _, err) = ours(dirs[1].path(), &["export", "-j", "r.json"], &[]);
    assert_eq!(code, 1);
    assert!(!err.contains(&banner), "no trace without -X:\n{err}");
}

/// Every file under `dir` (without .git) with its content.
fn tree(dir: &Path) -> Vec<(String, String)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                let name = path.strip_prefix(dir).unwrap().display().to_string();
                files.push((name, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git").args(args).current_dir(dir).output().expect("git");
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn project_init_makes_the_files_inmanta_makes() {
    let Some(reference) = reference_bin() else { return };
    // Inmanta clones its template from GitHub; here git fetches it from a repository of the
    // copy our binary embeds (service/templates), so Inmanta's own cookiecutter renders it.
    let work = tempfile::tempdir().unwrap();
    let template = work.path().join("template");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../service/templates/inmanta-project-template");
    let copied = Command::new("cp").arg("-r").arg(&source).arg(&template).status().unwrap();
    assert!(copied.success());
    git(&template, &["init", "-q"]);
    git(&template, &["add", "."]);
    git(&template, &["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "template"]);
    let gitconfig = work.path().join("gitconfig");
    std::fs::write(
        &gitconfig,
        format!(
            "[url \"{}\"]\n\tinsteadOf = https://github.com/inmanta/inmanta-project-template.git\n",
            template.display()
        ),
    )
    .unwrap();
    let home = work.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let config = gitconfig.display().to_string();
    let home_text = home.display().to_string();
    let env = [("GIT_CONFIG_GLOBAL", config.as_str()), ("HOME", home_text.as_str())];

    let (theirs, mine) = (work.path().join("theirs"), work.path().join("mine"));
    for dir in [&theirs, &mine] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let (code, out, err) = run(
        Command::new(reference.join("inmanta")).args(["project", "init", "-n", "shop", "--default"]),
        &theirs,
        &env,
    );
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = ours(&mine, &["project", "init", "-n", "shop", "--default", "-o", "."], &env);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(tree(&mine.join("shop")), tree(&theirs.join("shop")));
    let log = |dir: &Path| git(dir, &["log", "--format=%an <%ae> %s", "--name-only"]);
    assert_eq!(log(&mine.join("shop")), log(&theirs.join("shop")));

    // Our project compiles; a second init into the same directory is refused, as in Inmanta.
    let (code, out, err) = ours(&mine.join("shop"), &["compile"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("Hello world!"), "{out}");
    let (code, _, err) = ours(&mine, &["project", "init", "-n", "shop", "--default"], &env);
    assert_ne!(code, 0);
    assert!(err.contains("already exists"), "{err}");
}

#[test]
fn project_freeze_as_inmanta_and_every_module_and_project_command_of_inmanta_is_ours() {
    let Some(reference) = reference_bin() else { return };
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    let python = reference.join("python").display().to_string();
    let with_inmanta = [("INMANTA_COMPILER_PYTHON", python.as_str())];
    let theirs = run(Command::new(reference.join("inmanta")).args(["project", "freeze", "-o", "-"]), dir.path(), &[]);
    assert_eq!(theirs.0, 0, "{theirs:?}");
    assert!(theirs.1.contains("- std ~= "), "{}", theirs.1);
    let mine = ours(dir.path(), &["project", "freeze", "-o", "-"], &with_inmanta);
    assert_eq!((mine.0, &mine.1), (0, &theirs.1), "{}", mine.2);

    // Every subcommand Inmanta's help lists (`{add,list,...}`) is one of ours, with its options.
    for group in ["module", "project"] {
        let theirs = run(Command::new(reference.join("inmanta")).args([group, "--help"]), dir.path(), &[]);
        assert_eq!(theirs.0, 0, "{theirs:?}");
        let list = theirs.1.split('{').nth(1).and_then(|r| r.split('}').next()).expect("the subcommands");
        for subcommand in list.split(',') {
            let help =
                run(Command::new(reference.join("inmanta")).args([group, subcommand, "--help"]), dir.path(), &[]);
            let mine = ours(dir.path(), &[group, subcommand, "--help"], &[]);
            assert_eq!(mine.0, 0, "`{group} {subcommand} --help`: {}{}", mine.1, mine.2);
            // Each long option of Inmanta's usage line is in ours.
            for option in help.1.split_whitespace().filter(|w| w.starts_with("--") && *w != "--help") {
                let option = option.trim_matches(|c: char| !(c.is_alphanumeric() || c == '-'));
                assert!(mine.1.contains(option), "`{group} {subcommand}`: {option} missing in\n{}", mine.1);
            }
        }
    }
}
