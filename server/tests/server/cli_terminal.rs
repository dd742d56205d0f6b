//! The CLI as a person at a terminal sees it, under a real pseudo-terminal (`expectrl`), and as
//! a script sees it, through pipes: hidden password prompts, progress bars only on a terminal,
//! tables that fit its width, NO_COLOR, shell completions.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{BIN, TestServer};
use expectrl::{Eof, Expect, Session};

type Pty = expectrl::session::OsSession;

/// `inmanta ARGS` under a pseudo-terminal of `cols` columns.
fn pty(args: &[&str], dir: &Path, env: &[(&str, &str)], cols: u16) -> Pty {
    let mut command = Command::new(BIN);
    // A colour terminal, as people have; CI may have no TERM at all.
    command
        .args(args)
        .current_dir(dir)
        .env_remove("NO_COLOR")
        .env_remove("INMANTA_PASSWORD")
        .env("TERM", "xterm-256color");
    for (k, v) in env {
        command.env(k, v);
    }
    let mut session = Session::spawn(command).expect("spawn under a pty");
    session.get_process_mut().set_window_size(cols, 40).expect("window size");
    session.set_expect_timeout(Some(Duration::from_secs(60)));
    session
}

/// Waits until the program turned the terminal's echo off (it is reading a password), then types.
fn type_hidden(session: &mut Pty, text: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while session.get_process().get_echo().expect("read the terminal mode") {
        assert!(std::time::Instant::now() < deadline, "the terminal still echoes while the password is asked");
        std::thread::sleep(Duration::from_millis(10));
    }
    session.send_line(text).unwrap();
}

/// Everything the terminal shows until the command exits.
fn rest(session: &mut Pty) -> String {
    String::from_utf8_lossy(session.expect(Eof).expect("the command ends").as_bytes()).into_owned()
}

fn port(s: &TestServer) -> String {
    s.url.rsplit(':').next().unwrap().to_string()
}

#[tokio::test]
async fn passwords_are_asked_without_echo_and_read_from_stdin_in_scripts() {
    let s = TestServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let port = port(&s);
    let mut session = pty(&["user", "login", common::ADMIN, "--port", &port], dir.path(), &[], 100);
    session.expect(format!("Password for {}: ", common::ADMIN)).expect("a prompt that says what is asked");
    type_hidden(&mut session, common::ADMIN_PASSWORD);
    let shown = rest(&mut session);
    assert!(!shown.contains(common::ADMIN_PASSWORD), "the password was echoed: {shown:?}");
    assert!(shown.contains("eyJ"), "a token is printed: {shown:?}");

    // A new password is asked twice; a mismatch changes nothing.
    let db = s.database_url.clone();
    let mut session = pty(&["user", "create", "carol", "--direct", "--database-url", &db], dir.path(), &[], 100);
    session.expect("New password for carol: ").unwrap();
    type_hidden(&mut session, "Carol-password-123");
    session.expect("Repeat the new password: ").unwrap();
    type_hidden(&mut session, "Carol-password-124");
    let shown = rest(&mut session);
    assert!(shown.contains("differ") && !shown.contains("Carol-password"), "{shown:?}");

    // Scripts: --password-stdin through a pipe, no prompt.
    let mut child = Command::new(BIN)
        .args(["user", "login", common::ADMIN, "--password-stdin", "--port", &port])
        .env_remove("INMANTA_PASSWORD")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    writeln!(child.stdin.take().unwrap(), "{}", common::ADMIN_PASSWORD).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stdout).trim().starts_with("eyJ"));
    // No terminal and no --password-stdin: it says what to do instead of waiting.
    let output = Command::new(BIN)
        .args(["user", "login", common::ADMIN, "--port", &port])
        .env_remove("INMANTA_PASSWORD")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--password-stdin"));
}

/// A project whose deploy takes a second or two (a chain of sleeps) and has one failure.
fn slow_project(dir: &Path) {
    std::fs::write(dir.join("project.yml"), "name: slowdemo\nmodulepath: libs\ndownloadpath: libs\n").unwrap();
    let main = r#"
import exec
import mitogen

host = std::Host(name="localhost", os=std::linux, via=mitogen::Local())
a = exec::Run(host=host, command="/bin/sleep 0.5")
b = exec::Run(host=host, command="/bin/sleep 0.51", requires=[a])
c = exec::Run(host=host, command="/bin/sleep 0.52", requires=[b])
exec::Run(host=host, command="/bin/false", requires=[c])
"#;
    std::fs::write(dir.join("main.cf"), main).unwrap();
}

/// SGR escape sequences (colours, bold, reset).
fn has_colors(text: &str) -> bool {
    text.match_indices("\u{1b}[").any(|(i, _)| {
        let rest = &text[i + 2..];
        let end = rest.find(|c: char| !(c.is_ascii_digit() || c == ';')).unwrap_or(rest.len());
        rest[end..].starts_with('m')
    })
}

#[test]
fn deploy_draws_progress_on_a_terminal_only_and_fits_its_width() {
    let project = tempfile::tempdir().unwrap();
    slow_project(project.path());
    let mut session = pty(&["deploy", "-v"], project.path(), &[], 60);
    let shown = rest(&mut session);
    assert!(shown.matches("ETA").count() >= 2, "the bar redraws with an ETA: {shown:?}");
    assert!(shown.contains("resources") && shown.contains("/s"), "position and rate: {shown:?}");
    assert!(has_colors(&shown), "colours on a terminal: {shown:?}");
    // The summary: counts first, then every resource with -v, in a table no wider than 60 columns.
    assert!(shown.contains("4 resources: 3 deployed, 1 failed"), "{shown:?}");
    // The table runs from its header to the failure's log line or the closing line (stderr).
    let table: Vec<&str> = shown
        .lines()
        .skip_while(|l| !l.contains("Resource"))
        .take_while(|l| !l.contains("]: ") && !l.contains("resources deployed"))
        .collect();
    assert!(table.len() >= 5, "{shown:?}");
    for line in &table {
        let visible: String = strip_escapes(line);
        assert!(visible.trim_end().chars().count() <= 60, "wider than the terminal: {visible:?}");
    }

    // NO_COLOR: the same without a single colour.
    let mut session = pty(&["deploy"], project.path(), &[("NO_COLOR", "1")], 60);
    let shown = rest(&mut session);
    assert!(!has_colors(&shown), "NO_COLOR is respected: {shown:?}");
    assert!(shown.contains("failed"), "{shown:?}");

    // In a pipe: no bar, no control characters, the summary still there.
    let output = Command::new(BIN).args(["deploy"]).current_dir(project.path()).output().unwrap();
    let (out, err) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.status.code(), Some(1), "{out}{err}");
    assert!(!err.contains("ETA") && !err.contains('\r') && !err.contains('\u{1b}'), "{err:?}");
    assert!(!out.contains('\u{1b}'), "{out:?}");
    // Each run is a full repair: the commands without `creates` or `onlyif` run again (issue 47).
    assert!(out.contains("4 resources: 3 deployed, 1 failed; 3 changed"), "{out}");
    assert!(out.contains("/bin/false") && out.contains("sleep 0.5"), "the failed and changed rows: {out}");
}

fn strip_escapes(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for next in chars.by_ref() {
                if next.is_ascii_alphabetic() && next != '[' {
                    break;
                }
            }
        } else if c != '\r' {
            out.push(c);
        }
    }
    out
}

#[test]
fn completions_generate_for_bash_zsh_and_fish() {
    for (shell, marker) in [("bash", "complete -F"), ("zsh", "#compdef inmanta"), ("fish", "complete -c inmanta")] {
        let output = Command::new(BIN).args(["completions", shell]).output().unwrap();
        assert!(output.status.success(), "{shell}: {}", String::from_utf8_lossy(&output.stderr));
        let script = String::from_utf8_lossy(&output.stdout);
        assert!(script.contains(marker), "{shell}: {script}");
        for subcommand in ["deploy", "environment", "completions", "user"] {
            assert!(script.contains(subcommand), "{shell} completes {subcommand}");
        }
        // The shell itself parses the script, where it is installed (bash always is).
        let has_shell = Command::new(shell).arg("-c").arg("true").output().is_ok_and(|o| o.status.success());
        if has_shell && shell != "fish" {
            let file = tempfile::NamedTempFile::new().unwrap();
            std::fs::write(file.path(), script.as_bytes()).unwrap();
            let check = Command::new(shell).arg("-n").arg(file.path()).output().unwrap();
            assert!(check.status.success(), "{shell} -n: {}", String::from_utf8_lossy(&check.stderr));
        } else if has_shell {
            let check = Command::new("fish").arg("--no-execute").arg("-c").arg(script.as_ref()).output().unwrap();
            assert!(check.status.success(), "fish: {}", String::from_utf8_lossy(&check.stderr));
        }
    }
    let output = Command::new(BIN).args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "an unknown shell is a usage error");
}
